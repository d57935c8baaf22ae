# Figures for the server-side MCP processes (docs/mcp.md).
.PHONY: bench-mcp

bench-mcp: setup
	$(PY) bench/mcp_bench.py
