"""One session per device connection: handshake, listening, dialogue, speaking."""
