# The device app: state machine, protocol client, device MCP server, SD
# MP3 repeat player, power-off standby. See docs/firmware.md for the map.
