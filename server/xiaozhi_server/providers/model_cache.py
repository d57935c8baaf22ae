"""Where models rebuilt from their PyPI parts are written (Whisper's, the
offline chat model's): `<venv>/var/xiaozhi/models/`, or XIAOZHI_MODEL_CACHE."""
import os
import pathlib
import sys


def cache_root() -> pathlib.Path:
    env = os.environ.get("XIAOZHI_MODEL_CACHE")
    return pathlib.Path(env) if env else pathlib.Path(sys.prefix) / "var" / "xiaozhi" / "models"
