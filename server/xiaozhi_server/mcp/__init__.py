"""MCP: the client of the device's tools, server-side MCP processes, and the tool table the LLM sees."""
