"""One session per device connection: the handshake and the dispatch of its messages."""
