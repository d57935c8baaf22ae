"""Audio helpers below the providers and the pipeline: resampling."""
