# Talking with the server: the xiaozhi WebSocket channel, the device state
# machine, the device MCP server and its tools.
