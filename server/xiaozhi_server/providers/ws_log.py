"""The logger remote providers hand to their `websockets` connections.

websockets logs every handshake header at DEBUG, Authorization and access
keys with them. A provider's connection logs through a logger of its own,
held at INFO whatever the root level, so no debug setting shows a secret;
the connection's INFO and warning lines still come through.
"""
import logging


def connection_logger(provider: str) -> logging.Logger:
    """`xiaozhi_server.providers.<provider>.websocket`, never below INFO."""
    logger = logging.getLogger("xiaozhi_server.providers.%s.websocket" % provider)
    logger.setLevel(logging.INFO)
    return logger
