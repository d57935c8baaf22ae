"""Text helpers shared by providers, the pipeline and the tools: script and language, splitting."""
