"""The generated MicroPython headers (genhdr/) the binding needs, made the
way MicroPython's own build makes them: preprocess the sources with
NO_QSTR, collect MP_QSTR_*, MP_REGISTER_MODULE and MP_REGISTER_ROOT_POINTER
from the output, and run MicroPython's generators (py/makeqstrdata.py,
py/makemoduledefs.py, py/make_root_pointers.py, py/makeversionhdr.py).
Only our binding's sources are scanned, so the tables hold what it uses,
not the whole port's."""
import re
import subprocess
import sys


def _run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def generate(mp, out, preprocess, sources):
    """preprocess(extra_args, source_or_None, stdin_text) -> preprocessed text."""
    genhdr = out / "genhdr"
    genhdr.mkdir(parents=True, exist_ok=True)
    # Empty tables first: the NO_QSTR pass below still includes the headers.
    for name in ("qstrdefs.generated.h", "root_pointers.h", "moduledefs.h", "compressed.data.h"):
        if not (genhdr / name).exists():
            (genhdr / name).write_text("")
    qstrs, modules, roots, texts = set(), [], [], []
    for src in sources:
        text = preprocess(["-DNO_QSTR"], src, None)
        qstrs |= set(re.findall(r"\bMP_QSTR_(\w+)", text))
        modules += re.findall(r"(?:MP_REGISTER_MODULE|MP_REGISTER_EXTENSIBLE_MODULE|"
                              r"MP_REGISTER_MODULE_DELEGATION)\(.*?,\s*.*?\);", text)
        roots += re.findall(r"MP_REGISTER_ROOT_POINTER\(.*?\);", text)
        # Error messages, for ports that build with MICROPY_ROM_TEXT_COMPRESSION.
        texts += re.findall(r'MP_COMPRESSED_ROM_TEXT\("([^"]*)"\)', text)
    defs = (mp / "py" / "qstrdefs.h").read_text()
    port = mp / "ports" / "esp32" / "qstrdefsport.h"
    if port.exists():
        defs += port.read_text()
    defs += "".join("Q(%s)\n" % q for q in sorted(qstrs))
    # Q(...) lines are quoted through the preprocessor, as MicroPython's build does.
    quoted = re.sub(r"^(Q\(.*\))$", r'"\1"', defs, flags=re.M)
    pre = re.sub(r'^"(Q\(.*\))"$', r"\1", preprocess([], None, quoted), flags=re.M)
    (genhdr / "qstrdefs.preprocessed.h").write_text(pre)
    py = mp / "py"
    (genhdr / "qstrdefs.generated.h").write_text(
        _run([sys.executable, str(py / "makeqstrdata.py"), str(genhdr / "qstrdefs.preprocessed.h")]))
    (genhdr / "moduledefs.collected").write_text("\n".join(modules) + "\n")
    (genhdr / "moduledefs.h").write_text(
        _run([sys.executable, str(py / "makemoduledefs.py"), str(genhdr / "moduledefs.collected")]))
    (genhdr / "root_pointers.collected").write_text("\n".join(roots) + "\n")
    (genhdr / "root_pointers.h").write_text(
        _run([sys.executable, str(py / "make_root_pointers.py"), str(genhdr / "root_pointers.collected")]))
    (genhdr / "compressed.collected").write_text("\n".join(texts) + "\n")
    (genhdr / "compressed.data.h").write_text(
        _run([sys.executable, str(py / "makecompresseddata.py"), str(genhdr / "compressed.collected")]))
    _run([sys.executable, str(py / "makeversionhdr.py"), str(genhdr / "mpversion.h")], cwd=str(mp))
    return {"qstrs": len(qstrs), "modules": len(modules), "texts": len(texts)}
