# The SD card seen by the app: names relative to the card root only.
#
# Shared by both boards (on the ESP32 the card is mounted at /sd, on the host
# it is a directory). A name is "file.mp3" or "dir/file.mp3"; anything that
# could leave the root (absolute paths, "..", ".", empty parts, backslashes,
# NUL) is refused with ValueError, so a name that came over the network can
# be used only after it passed through here.
import os

_S_IFDIR = 0x4000


class CardFS:
    def __init__(self, root):
        self.root = root.rstrip("/") or "/"

    def path(self, name):
        """Absolute path of `name` under the root; ValueError if it escapes."""
        if not isinstance(name, str) or not name or "\\" in name or "\x00" in name:
            raise ValueError("bad SD file name %r" % (name,))
        if name[0] == "/":
            raise ValueError("SD file names are relative to the card: %r" % name)
        for part in name.split("/"):
            if part in ("", ".", ".."):
                raise ValueError("SD file name leaves the card root: %r" % name)
        return self.root + "/" + name

    def list(self, sub="", suffix=None):
        """Sorted file names (relative to the root) under `sub`, recursively."""
        out = []
        self._walk(self.path(sub) if sub else self.root, sub, suffix, out)
        out.sort()
        return out

    def _walk(self, abspath, rel, suffix, out):
        try:
            names = os.listdir(abspath)
        except OSError:
            return
        for n in names:
            if n.startswith("."):
                continue
            p = abspath + "/" + n
            r = rel + "/" + n if rel else n
            if os.stat(p)[0] & _S_IFDIR:
                self._walk(p, r, suffix, out)
            elif suffix is None or n.lower().endswith(suffix):
                out.append(r)

    def exists(self, name):
        try:
            os.stat(self.path(name))
            return True
        except OSError:
            return False

    def size(self, name):
        return os.stat(self.path(name))[6]

    def open(self, name, mode="rb"):
        return open(self.path(name), mode)
