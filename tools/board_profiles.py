"""The board profiles of this tree (firmware/boards/<name>.json) for the
tools: list them, and turn a name given on a command line into a checked
profile, or an error that lists the boards there are."""
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
BOARDS = ROOT / "firmware" / "boards"
DEFAULT = "sening"

# firmware/hal/profile.py is plain Python: load it by path, so the tools'
# import path never sees the firmware's packages.
_spec = importlib.util.spec_from_file_location("board_profile_check",
                                               ROOT / "firmware" / "hal" / "profile.py")
_profile = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_profile)

ProfileError = _profile.ProfileError


def known():
    return sorted(p.stem for p in BOARDS.glob("*.json"))


def path(name):
    return BOARDS / ("%s.json" % name)


def load(name):
    """The checked profile named `name`; ProfileError naming the known
    boards when there is no such file, or the field when it is wrong."""
    if name not in known():
        raise ProfileError("unknown board %r; known boards: %s" % (name, ", ".join(known())))
    return _profile.load(str(path(name)))
