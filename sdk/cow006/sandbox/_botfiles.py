"""The bot's own files at /bot: checked, and copied when the slot uid cannot read them.

A bot may hold only regular files and folders.  Before it is bound or copied, the host walks
it without following links (``lstat``; hidden entries too, since the bot sees them where the
folder is bound as it is), and a symbolic link, a device node, a named pipe or a socket
anywhere in it is refused with one sentence.  A bot the slot uid cannot read is copied for
the lease into the state directory, walking by directory descriptors opened with
``O_NOFOLLOW`` and opening files with ``O_NOFOLLOW | O_NONBLOCK``, so an entry swapped for a
link or a special file after the walk is refused too, never followed, read or changed.  A
single-file bot is bound alone at ``/bot/NAME`` (never its neighbours), a folder at ``/bot``.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ._errors import SandboxError
from ._host import is_root
from ._staging import reachable_by_others

if TYPE_CHECKING:
    from ._config import Sandbox
    from ._slots import Lease

BOT_DEST = "/bot"  # the bot's file or folder inside


def bot_source(sb: Sandbox, bot: Path, lease: Lease) -> Path:
    """The bot's file or folder to bind at /bot: itself when the slot uid can read all of
    it, else a fresh copy for this lease (made world-readable).  Either way it may hold only
    regular files and folders (``_scan_bot``): a symbolic link, a device node, a named pipe
    or a socket is refused with one sentence, and the host never follows a link in it, nor
    opens anything in it but regular files."""
    bot = bot.resolve()  # the path the user named (itself perhaps a link): taken as meant
    readable = _scan_bot(bot)
    if not is_root() or (readable and reachable_by_others(str(bot))):
        return bot
    stage = sb.state_path() / f"bot-{lease.uid}"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(mode=0o755)
    os.chmod(stage, 0o755)
    lease.stage = stage
    target = stage / ("bot" if bot.is_dir() else bot.name)
    try:
        if bot.is_dir():
            _copy_bot_tree(bot, target)
        else:
            _copy_regular(str(bot), None, target, bot, "")
    except OSError as exc:  # something in it changed under us (a folder swapped for a link)
        raise SandboxError(f"cannot copy the bot {bot}: {exc.strerror or exc}") from None
    return target


_KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a device node",
    stat.S_IFBLK: "a device node",
}


def _refused(bot: Path, rel: str, mode: int) -> SandboxError:
    what = _KINDS.get(stat.S_IFMT(mode), "a special file")
    where = f"the bot folder {bot} holds {what} ({rel})" if rel else f"the bot {bot} is {what}"
    return SandboxError(f"{where}: a bot may hold only regular files and folders")


def _scan_bot(bot: Path) -> bool:
    """Walk the bot's file or folder without following links (hidden entries too: the bot
    sees them) and raise SandboxError at the first entry that is neither a regular file nor
    a folder.  Returns whether every file is readable and every folder searchable by others
    (then the slot uid can read the bot where it is)."""
    try:
        mode = os.lstat(bot).st_mode
        if not stat.S_ISDIR(mode):
            if not stat.S_ISREG(mode):
                raise _refused(bot, "", mode)
            return bool(mode & stat.S_IROTH)
        readable = mode & 0o005 == 0o005
        todo = [(bot, "")]
        while todo:
            folder, rel = todo.pop()
            with os.scandir(folder) as entries:
                for entry in entries:
                    mode = entry.stat(follow_symlinks=False).st_mode
                    sub = rel + entry.name
                    if stat.S_ISDIR(mode):
                        readable = readable and mode & 0o005 == 0o005
                        todo.append((Path(entry.path), sub + "/"))
                    elif stat.S_ISREG(mode):
                        readable = readable and bool(mode & stat.S_IROTH)
                    else:
                        raise _refused(bot, sub, mode)
    except OSError as exc:
        raise SandboxError(f"cannot read the bot {bot}: {exc.strerror or exc}") from None
    return readable


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _copy_bot_tree(bot: Path, dest: Path) -> None:
    """Copy a bot folder's regular files and folders (hidden ones left out) to ``dest``,
    walking by directory descriptors opened with O_NOFOLLOW: an entry swapped for a link or
    a special file since ``_scan_bot`` is refused, never followed or read."""
    stack: list[tuple[int, Path, str, Iterator[str]]] = []
    try:
        fd = os.open(bot, _DIR_FLAGS)
        stack.append((fd, dest, "", iter(sorted(os.listdir(fd)))))
        os.mkdir(dest, 0o755)
        os.chmod(dest, 0o755)  # not left to the umask: the slot uid reads it
        while stack:
            fd, out, rel, names = stack[-1]
            name = next(names, None)
            if name is None:
                stack.pop()
                os.close(fd)
                continue
            if name.startswith("."):
                continue
            mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                stack.append((child, out / name, f"{rel}{name}/", iter(sorted(os.listdir(child)))))
                os.mkdir(out / name, 0o755)
                os.chmod(out / name, 0o755)
            elif stat.S_ISREG(mode):
                _copy_regular(name, fd, out / name, bot, rel + name)
            else:
                raise _refused(bot, rel + name, mode)
    finally:
        for fd, *_ in stack:
            os.close(fd)


def _copy_regular(name: str, dir_fd: int | None, dest: Path, bot: Path, rel: str) -> None:
    """Copy one regular file (opened with O_NOFOLLOW and O_NONBLOCK, checked to be a regular
    file once open) to a new file ``dest`` of mode 0644, or 0755 if its owner could run it
    (a binary bot's executable)."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _refused(bot, rel, mode)
        with open(dest, "xb") as out, os.fdopen(fd, "rb", closefd=False) as src:
            shutil.copyfileobj(src, out)
        os.chmod(dest, 0o755 if mode & stat.S_IXUSR else 0o644)
    finally:
        os.close(fd)
