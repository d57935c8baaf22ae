"""The translate MCP server: zh→en, en→zh, any other language→zh, through the configured LLM."""
