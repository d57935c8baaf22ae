"""Getting the third-party trees the ESP32 glue check compiles against.

A source is given as one of:
  DIR                   a checkout (used in place, never written to)
  GITDIR@REF[:SUBDIR]   a git repository (bare or not) and a tag or commit;
                        the tree at REF (or its SUBDIR) is written under the
                        build folder, once per commit
  FILE.tar.xz|.tar.gz   a source tarball, unpacked under the build folder

Blobs a partial mirror lacks are skipped and counted: a header the
compile needs and did not get shows up as a compile error, never as a
silent pass. Submodules (gitlinks) come out as empty folders.
"""
import os
import subprocess
import tarfile
import threading
from pathlib import Path


class SourceError(Exception):
    pass


class Tree:
    def __init__(self, root, describe, missing=0, gitlinks=(), extracted=False):
        self.root = Path(root)
        self.describe = describe  # what was used: path, commit, or tarball
        self.missing = missing  # blobs the mirror did not have
        self.gitlinks = list(gitlinks)  # submodule paths, relative to root
        self.extracted = extracted  # True: a copy this tool may write into


def _git(gitdir, *args, **kw):
    return subprocess.run(["git", "--git-dir", str(gitdir), *args], check=True,
                          capture_output=True, **kw).stdout


def _gitdir(path):
    p = Path(path)
    if (p / ".git").exists():
        return p / ".git"
    if (p / "HEAD").is_file() and (p / "objects").is_dir():
        return p
    return None


def _extract_git(gitdir, ref, subdir, dest, paths):
    try:
        commit = _git(gitdir, "rev-parse", "--verify", ref + "^{commit}").decode().strip()
    except subprocess.CalledProcessError:
        raise SourceError("%s has no commit %r" % (gitdir, ref))
    out = Path(dest) / commit[:12]
    stamp = out / ".xz-extracted"
    spec = [subdir] if subdir else list(paths or [])
    listing = _git(gitdir, "ls-tree", "-r", "-z", commit, "--", *spec).split(b"\0")
    entries, gitlinks = [], []
    for line in filter(None, listing):
        meta, path = line.split(b"\t", 1)
        mode, kind, sha = meta.decode().split()
        rel = path.decode()
        if subdir:
            rel = os.path.relpath(rel, subdir)
        if kind == "commit":
            gitlinks.append(rel)
        else:
            entries.append((mode, sha, rel))
    if stamp.exists():
        missing = int(stamp.read_text().split()[0])
    else:
        missing = _write_blobs(gitdir, entries, out)
        stamp.write_text("%d missing blobs\n" % missing)
    for rel in gitlinks:
        (out / rel).mkdir(parents=True, exist_ok=True)
    describe = "%s@%s (%s%s)" % (gitdir, ref, commit, ":" + subdir if subdir else "")
    return Tree(out, describe, missing, gitlinks, extracted=True)


def _write_blobs(gitdir, entries, out):
    """Writes every blob through one `git cat-file --batch`; returns how
    many the repository did not have."""
    proc = subprocess.Popen(["git", "--git-dir", str(gitdir), "cat-file", "--batch"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def feed():
        # From a thread: git stops reading names while its output pipe is full.
        proc.stdin.write(b"".join(sha.encode() + b"\n" for _, sha, _ in entries))
        proc.stdin.close()

    writer = threading.Thread(target=feed)
    writer.start()
    missing = 0
    for mode, sha, rel in entries:
        header = proc.stdout.readline().split()
        if header[1] == b"missing":
            missing += 1
            continue
        data = proc.stdout.read(int(header[2]))
        proc.stdout.read(1)
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if mode == "120000":
            if target.is_symlink() or target.exists():
                target.unlink()
            target.symlink_to(data.decode())
        else:
            target.write_bytes(data)
            if mode == "100755":
                target.chmod(0o755)
    writer.join()
    proc.wait()
    return missing


def _extract_tar(path, dest):
    out = Path(dest) / Path(path).name.split(".tar")[0]
    stamp = out / ".xz-extracted"
    if not stamp.exists():
        out.mkdir(parents=True, exist_ok=True)
        with tarfile.open(path) as tf:
            tf.extractall(out, filter="tar")
        stamp.write_text("ok\n")
    tops = [p for p in out.iterdir() if p.is_dir()]
    root = tops[0] if len(tops) == 1 else out
    return Tree(root, "%s (sha256 %s)" % (path, _sha256(path)), extracted=True)


def _sha256(path):
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _describe_dir(path):
    gd = _gitdir(path)
    if gd is None:
        return str(path)
    try:
        head = _git(gd, "rev-parse", "HEAD").decode().strip()
        tag = subprocess.run(["git", "--git-dir", str(gd), "describe", "--tags", "--always"],
                             capture_output=True, text=True).stdout.strip()
        return "%s (%s, %s)" % (path, tag, head)
    except subprocess.CalledProcessError:
        return str(path)


def get(spec, dest, paths=None):
    """Resolves SPEC (see the module doc) to a Tree. PATHS limits what a git
    extraction writes (for ESP-IDF: the build system and the components)."""
    if "@" in spec and not os.path.exists(spec):
        where, _, ref = spec.rpartition("@")
        ref, _, subdir = ref.partition(":")
        gd = _gitdir(where)
        if gd is None:
            raise SourceError("%s is not a git repository" % where)
        return _extract_git(gd, ref, subdir, dest, paths)
    if os.path.isfile(spec) and ".tar" in os.path.basename(spec):
        return _extract_tar(spec, dest)
    if os.path.isdir(spec):
        return Tree(os.path.abspath(spec), _describe_dir(spec))
    raise SourceError("%s: not a folder, a tarball or GITDIR@REF" % spec)
