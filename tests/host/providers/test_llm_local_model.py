"""The offline model is rebuilt from its byte-split packages: joined in
order, checked against the pinned sha256, and refused with the missing
package's name when one is not installed. Real packages on the import path
(small ones made here), the real joiner; no model is loaded."""
import hashlib
import sys

import pytest

from xiaozhi_server.providers.llm import local_model
from xiaozhi_server.providers.llm.none import choose_llm


@pytest.fixture
def parts(tmp_path, monkeypatch):
    """Three part packages `tinyparts-part1..3` on sys.path, and a model spec for them."""
    chunks = [b"GGUF" + bytes(range(256)) * 40, b"\x01" * 5000, b"tail"]
    root = tmp_path / "site"
    for i, chunk in enumerate(chunks, 1):
        pkg = root / ("tinyparts_part%d" % i)
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / ("part%02d.bin" % i)).write_bytes(chunk)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("XIAOZHI_MODEL_CACHE", str(tmp_path / "cache"))
    whole = b"".join(chunks)
    spec = {"package": "tinyparts-part", "parts": 3, "version": "1.0", "size": len(whole),
            "sha256": hashlib.sha256(whole).hexdigest()}
    monkeypatch.setitem(local_model.MODELS, "tiny", spec)
    yield root, whole, spec
    for i in (1, 2, 3):
        sys.modules.pop("tinyparts_part%d" % i, None)


def test_the_parts_join_into_the_pinned_file(parts):
    _root, whole, _spec = parts
    path = local_model.model_path("tiny")
    assert path.read_bytes() == whole
    # Joined once: the second call finds it.
    assert local_model.model_path("tiny") == path


def test_a_missing_part_is_named(parts):
    root, _whole, _spec = parts
    (root / "tinyparts_part2" / "__init__.py").unlink()
    (root / "tinyparts_part2").rename(root / "elsewhere")
    with pytest.raises(local_model.ModelMissing, match=r"tinyparts-part2==1\.0"):
        local_model.model_path("tiny")


def test_bytes_that_are_not_the_pinned_model_are_refused(parts, monkeypatch):
    _root, _whole, spec = parts
    monkeypatch.setitem(local_model.MODELS, "tiny", dict(spec, sha256="0" * 64))
    with pytest.raises(local_model.ModelMissing, match="refusing to load it"):
        local_model.model_path("tiny")
    assert not any(p.suffix == ".gguf" for p in (local_model.cache_root()).iterdir())


def test_an_unprepared_model_is_not_the_default(parts, monkeypatch):
    """With no endpoint configured and set-up not having seen the model run,
    the child hears the "no model" line rather than a model that is not there."""
    monkeypatch.delenv("XIAOZHI_LOCAL_LLM", raising=False)
    for k in ("OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_API_KEY"):
        monkeypatch.delenv(k, raising=False)
    assert choose_llm({}).type_name == "none"
    assert choose_llm({"type": "local"}).type_name == "local"
