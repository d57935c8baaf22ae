"""How devices reach the server: the xiaozhi WebSocket and the OTA/HTTP endpoint."""
