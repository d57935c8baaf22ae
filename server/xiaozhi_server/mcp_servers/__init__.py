"""MCP servers the xiaozhi server runs as its own stdio subprocesses."""
