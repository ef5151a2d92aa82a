"""Host files the slot uids cannot reach, staged where they can.

``bwrap`` runs as the slot uid, so it can bind only what that uid can read.  A file or tree
it cannot reach (an interpreter under root's private home, say) is staged once under the
sandbox's cache directory (hard links where the file system allows, else copies), keyed by
the source's identity, written by the host alone and never changed afterwards.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ._host import is_root, safe_dir

if TYPE_CHECKING:
    from ._config import Sandbox


def reachable_by_others(path: str) -> bool:
    """Whether a user other than the owner can reach and read ``path`` (every ancestor
    searchable by others, the path itself readable by others)."""
    p = Path(path)
    for parent in reversed(p.parents):
        try:
            mode = parent.stat().st_mode
        except OSError:
            return False
        if not mode & stat.S_IXOTH:
            return False
    try:
        mode = p.stat().st_mode
    except OSError:
        return False
    need = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
    return mode & need == need


def reachable(sb: Sandbox, path: str, skip: frozenset[str] = frozenset()) -> str:
    """``path`` itself if the slot uid can reach it, else a staged copy (hard links where the
    file system allows) under ``cache_dir``, keyed by the source's identity."""
    if not is_root() or reachable_by_others(path):
        return path
    st = os.stat(path)
    ident = f"{path}|{st.st_dev}|{st.st_ino}|{st.st_mtime_ns}|{st.st_size}|{sorted(skip)}"
    if stat.S_ISDIR(st.st_mode):
        ident += "|" + _tree_ident(path, skip)
    key = hashlib.sha256(ident.encode()).hexdigest()[:20]
    root = sb.cache_path()
    safe_dir(root)
    dest = root / key
    target = dest / os.path.basename(path)
    if target.exists():
        return str(target)
    tmp = root / f".{key}.{os.getpid()}.{threading.get_ident()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(mode=0o755)
    os.chmod(tmp, 0o755)
    if stat.S_ISDIR(st.st_mode):
        _copy_tree(path, str(tmp / os.path.basename(path)), skip)
    else:
        link_or_copy(path, str(tmp / os.path.basename(path)))
    try:
        os.rename(tmp, dest)
    except OSError:  # another process staged it first
        shutil.rmtree(tmp, ignore_errors=True)
    return str(target)


def _tree_ident(path: str, skip: frozenset[str]) -> str:
    """A cheap fingerprint of a tree: the mtimes of its directories."""
    h = hashlib.sha256()
    for root, dirs, _ in os.walk(path):
        if root == path:
            dirs[:] = [d for d in dirs if d not in skip]
        dirs.sort()
        with contextlib.suppress(OSError):
            h.update(f"{root}|{os.stat(root).st_mtime_ns}".encode())
    return h.hexdigest()


def link_or_copy(src: str, dest: str) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)
    mode = os.stat(dest).st_mode
    if not mode & stat.S_IROTH:  # a private copy (never a shared inode) may be opened up
        with contextlib.suppress(OSError):
            if os.stat(src).st_ino != os.stat(dest).st_ino:
                os.chmod(dest, mode | stat.S_IROTH | (stat.S_IXOTH if mode & stat.S_IXUSR else 0))


def _copy_tree(src: str, dest: str, skip: frozenset[str]) -> None:
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        out = dest if rel == "." else os.path.join(dest, rel)
        if rel == ".":
            dirs[:] = [d for d in dirs if d not in skip]
        os.makedirs(out, mode=0o755, exist_ok=True)
        os.chmod(out, 0o755)
        for name in dirs:
            full = os.path.join(root, name)
            if os.path.islink(full):
                os.symlink(os.readlink(full), os.path.join(out, name))
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
        for name in files:
            full = os.path.join(root, name)
            if os.path.islink(full):
                os.symlink(os.readlink(full), os.path.join(out, name))
            elif os.path.isfile(full):
                link_or_copy(full, os.path.join(out, name))
