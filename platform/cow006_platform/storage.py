"""Uploads: a bot's bytes validated, stored on disk once, and numbered as a pending version.

``store_version`` is the one step from an upload to its version: ``store_upload`` checks the
bytes and writes the folder, ``add_version`` numbers the version row (the caller commits).

An upload is one ``.py`` file (stored as ``bot.py``) or a ``.zip`` holding ``bot.py`` at its
root, or ``bot.js``, or a ``cow006.toml`` naming its runtime and entry (``cow006.manifest``:
``python``, ``node`` or ``binary``, a static x86-64 executable checked here, stored
executable).  Everything about an upload is hostile until proven otherwise, so a zip is checked in
full *before anything is written*: entry names (a simple pattern per path component, no
absolute paths, no ``..``), entry types (regular files and directories only: no symlinks,
devices or fifos), encryption, duplicates, the number of files, the declared sizes, and then
the real sizes while decompressing (the running total stops the inflation as soon as it passes
the cap, whatever the headers claim).  Source files must be UTF-8 and ``bot.py`` not empty.

Only then are the files written, into a fresh temporary directory under ``data_dir/tmp``,
each file and directory fsynced, and the directory renamed atomically to
``data_dir/bots/<sha256>/`` (sha256 of the uploaded bytes), the rename fsynced too: after a
power loss a folder is either absent or whole, and the version row is committed only after
that.  A folder that already exists is reused only if its files are exactly the upload's
(one half-written before a crash is replaced); bad input can never overwrite or lose what is
stored.  Reusing a folder touches its mtime: ``cow006 admin gc`` (``debris``) leaves folders
used recently alone.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import re
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from cow006 import manifest

from .models import AgentVersion, VersionStatus
from .settings import Settings

BOT_FILE = "bot.py"
JS_FILE = "bot.js"
# One path component: letters, digits, '_', '.', '-'; no leading dot (no hidden files, and
# '.' and '..' can never match).  64 characters at most.
_COMPONENT = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_MAX_DEPTH = 8  # directory levels inside an archive
_CHUNK = 64 * 1024
_ENCRYPTED = 0x1  # general purpose flag bit 0


class UploadError(ValueError):
    """An upload that is refused; the message is one sentence, safe to show its author."""


@dataclass
class StoredBot:
    """A stored upload: its digest, what was uploaded, and the folder holding ``bot.py``."""

    sha256: str
    filename: str
    size: int
    unpacked_size: int
    files: int
    path: Path


def bots_dir(settings: Settings) -> Path:
    return Path(settings.data_dir) / "bots"


def bot_path(settings: Settings, sha256: str) -> Path:
    """The folder holding ``bot.py`` of the upload with this digest (it may not exist)."""
    # The digest comes from the database, but a path is built from it: never trust it blindly.
    if not _SHA256.fullmatch(sha256):
        raise ValueError(f"not a sha256 digest: {sha256!r}")
    return bots_dir(settings) / sha256


def _upload_name(filename: str) -> str:
    """The base name of the uploaded file (browsers may send a full client-side path)."""
    name = re.split(r"[/\\]", filename or "")[-1]
    if not name:
        raise UploadError("The upload has no file name; send bot.py or a .zip archive.")
    if not _COMPONENT.fullmatch(name):
        raise UploadError(
            "The file name may use only letters, digits, '_', '.' and '-' "
            "(64 characters at most, not starting with a dot)."
        )
    return name


def _check_source(name: str, data: bytes) -> None:
    if name == BOT_FILE and not data.strip():
        raise UploadError(f"{name} is empty.")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UploadError(f"{name} is not UTF-8 text (byte {exc.start}).") from None


def _entry_parts(raw: str) -> tuple[tuple[str, ...], bool]:
    """The path components of a zip entry and whether it is a directory; UploadError if the
    name is unsafe or outside the pattern."""
    is_dir = raw.endswith("/")
    if raw.startswith("/") or re.match(r"[A-Za-z]:", raw):
        raise UploadError(f"The archive entry {raw[:80]!r} has an absolute path.")
    parts = tuple(raw.rstrip("/").split("/")) if raw.rstrip("/") else ()
    if not parts:
        raise UploadError("The archive has an entry without a name.")
    if ".." in re.split(r"[/\\]", raw):
        raise UploadError(f"The archive entry {raw[:80]!r} points outside the archive (..).")
    for part in parts:
        if not _COMPONENT.fullmatch(part):
            raise UploadError(
                f"The archive entry {raw[:80]!r} has a bad name: each part may use only "
                "letters, digits, '_', '.' and '-' (64 characters at most, no leading dot)."
            )
    if len(parts) > _MAX_DEPTH + (0 if is_dir else 1):
        raise UploadError(f"The archive entry {raw[:80]!r} is nested too deep.")
    return parts, is_dir


def _entry_kind(info: zipfile.ZipInfo, is_dir: bool) -> None:
    """Refuse anything but regular files and directories (by the Unix mode, when present)."""
    mode = info.external_attr >> 16
    if stat.S_IFMT(mode) == 0:  # no file type recorded (Windows, or permissions only)
        return
    if stat.S_ISLNK(mode):
        raise UploadError(f"The archive entry {info.filename[:80]!r} is a symbolic link.")
    if stat.S_ISDIR(mode):
        if not is_dir:
            raise UploadError(f"The archive entry {info.filename[:80]!r} is not a regular file.")
        return
    if not stat.S_ISREG(mode) or is_dir:
        raise UploadError(f"The archive entry {info.filename[:80]!r} is not a regular file.")


def _unzip(settings: Settings, data: bytes) -> tuple[dict[str, bytes], set[str]]:
    """Check and decompress an archive in memory: (files by path, directories).

    Nothing is written here; every limit is enforced before the caller writes a byte.
    """
    cap = settings.max_unpacked_bytes
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except Exception:  # BadZipFile, NotImplementedError (odd versions), struct errors, ...
        raise UploadError("The upload is not a valid zip archive.") from None
    with zf:
        infos = zf.infolist()
        # A cheap bound first: a directory of a million entries is refused unread.
        if len(infos) > 2 * settings.max_files:
            raise UploadError(
                f"The archive has {len(infos)} entries; at most {settings.max_files} files."
            )
        files: list[tuple[str, zipfile.ZipInfo]] = []
        dirs: set[str] = set()
        seen: set[str] = set()
        declared = 0
        for info in infos:
            parts, is_dir = _entry_parts(info.filename)
            _entry_kind(info, is_dir)
            if info.flag_bits & _ENCRYPTED:
                raise UploadError(f"The archive entry {info.filename[:80]!r} is encrypted.")
            path = "/".join(parts)
            if path in seen:
                raise UploadError(f"The archive holds {path[:80]!r} twice.")
            seen.add(path)
            # Every parent of an entry is a directory: a file cannot also be one.
            for i in range(1, len(parts)):
                dirs.add("/".join(parts[:i]))
            if is_dir:
                dirs.add(path)
                continue
            files.append((path, info))
            if len(files) > settings.max_files:
                raise UploadError(f"The archive has more than {settings.max_files} files.")
            declared += info.file_size
            if declared > cap:
                raise UploadError(
                    f"The archive unpacks to more than {cap} bytes (the limit for a bot)."
                )
        clash = dirs.intersection(p for p, _ in files)
        if clash:
            name = sorted(clash)[0]
            raise UploadError(f"The archive holds {name[:80]!r} both as a file and a folder.")
        names = {p for p, _ in files}
        if BOT_FILE not in names and manifest.MANIFEST not in names and JS_FILE not in names:
            raise UploadError(
                f"The archive has no {BOT_FILE} (or {JS_FILE}, or a {manifest.MANIFEST} naming "
                "its runtime) at its root."
            )
        # Decompress with a running total: headers can lie, so the real bytes are counted
        # and inflation stops as soon as the total passes the cap.
        out: dict[str, bytes] = {}
        total = 0
        for path, info in files:
            buf = bytearray()
            try:
                with zf.open(info) as src:
                    while chunk := src.read(_CHUNK):
                        total += len(chunk)
                        if total > cap:
                            raise UploadError(
                                f"The archive unpacks to more than {cap} bytes "
                                "(the limit for a bot)."
                            )
                        buf += chunk
            except UploadError:
                raise
            except NotImplementedError:
                raise UploadError(
                    f"The archive entry {path[:80]!r} uses an unsupported compression method."
                ) from None
            except RuntimeError:  # zipfile's "encrypted, password required" for some headers
                raise UploadError(f"The archive entry {path[:80]!r} is encrypted.") from None
            except Exception:
                # zlib.error, bad CRC, truncated data, header mismatches: all mean corrupt.
                raise UploadError(
                    f"The archive is corrupt (entry {path[:80]!r} cannot be read)."
                ) from None
            out[path] = bytes(buf)
        return out, dirs


def fsync_dir(path: Path) -> None:
    """Make a directory's entries (files created, renamed in or out) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_tree(
    root: Path,
    files: dict[str, bytes],
    dirs: set[str],
    executable: frozenset[str] | set[str] = frozenset(),
) -> None:
    # Modes are set explicitly (not left to the umask): the sandbox's slot uid reads them
    # (and runs a binary bot's entry).
    for d in sorted(dirs, key=lambda p: p.count("/")):
        (root / d).mkdir()
        os.chmod(root / d, 0o755)
    for path, content in files.items():
        # O_EXCL | O_NOFOLLOW: never write through anything that is already there.
        fd = os.open(
            root / path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
        os.fchmod(fd, 0o755 if path in executable else 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())  # before the rename: never a whole-looking empty bot.py
    for d in sorted(dirs, key=lambda p: -p.count("/")):
        fsync_dir(root / d)
    fsync_dir(root)


def _holds_exactly(root: Path, files: dict[str, bytes]) -> bool:
    """Whether the folder holds exactly ``files`` (same paths, same bytes, nothing else)."""
    try:
        found = {
            p.relative_to(root).as_posix()
            for p in root.rglob("*")
            if p.is_symlink() or not p.is_dir()
        }
        if found != set(files):
            return False
        return all(
            not (root / path).is_symlink() and (root / path).read_bytes() == content
            for path, content in files.items()
        )
    except OSError:
        return False


def _reuse(path: Path, files: dict[str, bytes]) -> bool:
    """Whether a stored folder can be used as it is; its mtime is touched if so (it is in
    use: the garbage collector leaves it alone for a grace period)."""
    if not path.is_dir() or not _holds_exactly(path, files):
        return False
    try:
        os.utime(path)
    except FileNotFoundError:  # collected meanwhile: write it again
        return False
    # Collected between the check and the touch (``debris`` renames before it removes)?
    return has_bot(path)


def has_bot(path: Path) -> bool:
    """Whether a stored folder holds a bot: its ``bot.py``, ``bot.js`` or manifest."""
    return any((path / name).is_file() for name in (BOT_FILE, JS_FILE, manifest.MANIFEST))


def runtime_of(files: dict[str, bytes]) -> manifest.Manifest:
    """The runtime and entry of an upload's files (its ``cow006.toml``, else bot.py or bot.js),
    checked: the entry is there, and a binary one is a static x86-64 executable."""
    if manifest.MANIFEST in files:
        try:
            found = manifest.parse(files[manifest.MANIFEST])
        except manifest.ManifestError as exc:
            raise UploadError(f"{exc}.") from None
    elif BOT_FILE in files:
        found = manifest.Manifest("python", BOT_FILE)
    else:
        found = manifest.Manifest("node", JS_FILE)
    if found.entry not in files:
        raise UploadError(
            f"The archive has no {found.entry[:80]}, the entry of its {found.runtime} runtime."
        )
    if found.runtime == "binary":
        try:
            manifest.check_binary(files[found.entry], found.entry)
        except manifest.ManifestError as exc:
            raise UploadError(f"{exc}.") from None
    return found


def store_upload(settings: Settings, filename: str, data: bytes) -> StoredBot:
    """Validate an upload and store it under ``data_dir/bots/<sha256>/``.

    Raises UploadError (one sentence for the user) for anything refused; nothing is written
    then.  Storing the same bytes again reuses the existing folder untouched.
    """
    if len(data) > settings.max_upload_bytes:
        raise UploadError(
            f"The upload is {len(data)} bytes; the limit is {settings.max_upload_bytes} bytes."
        )
    name = _upload_name(filename)
    suffix = PurePosixPath(name).suffix.lower()
    if suffix == ".py":
        _check_source(BOT_FILE, data)
        if len(data) > settings.max_unpacked_bytes:
            raise UploadError(f"{BOT_FILE} is larger than {settings.max_unpacked_bytes} bytes.")
        files: dict[str, bytes] = {BOT_FILE: data}
        dirs: set[str] = set()
        found = manifest.Manifest("python", BOT_FILE)
    elif suffix == ".zip":
        files, dirs = _unzip(settings, data)
        found = runtime_of(files)
        for path, content in files.items():
            if path.endswith(".py") and found.runtime == "python":
                _check_source(path, content)
    else:
        raise UploadError("Upload one .py file or a .zip archive with bot.py at its root.")
    sha = hashlib.sha256(data).hexdigest()
    stored = StoredBot(
        sha256=sha,
        filename=name,
        size=len(data),
        unpacked_size=sum(len(c) for c in files.values()),
        files=len(files),
        path=bot_path(settings, sha),
    )
    executable = {found.entry} if found.runtime == "binary" else set()
    if _reuse(stored.path, files):
        return stored  # the same bytes were stored before, whole: reuse, never overwrite
    bots = bots_dir(settings)
    tmp_root = Path(settings.data_dir) / "tmp"
    bots.mkdir(parents=True, exist_ok=True)
    tmp_root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="upload-", dir=tmp_root))
    broken: Path | None = None
    try:
        tmp.chmod(0o755)
        _write_tree(tmp, files, dirs, executable)
        if stored.path.is_dir() and not _holds_exactly(stored.path, files):
            # A folder half-written before a crash (or damaged): moved aside, then replaced.
            broken = Path(tempfile.mkdtemp(prefix="broken-", dir=tmp_root))
            os.rename(stored.path, broken / "bot")
        try:
            os.rename(tmp, stored.path)
        except OSError as exc:
            # Another upload of the same bytes won the race: its folder is as good as ours.
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY) or not stored.path.is_dir():
                raise
        fsync_dir(bots)  # the rename is durable before the caller commits the version
    finally:
        for leftover in (tmp, broken):
            if leftover is not None and leftover.exists():
                shutil.rmtree(leftover, ignore_errors=True)
    return stored


def add_version(session: Session, agent_id: int, stored: StoredBot) -> AgentVersion:
    """A new pending version of the agent, numbered after its last one (added, not flushed).

    Two concurrent callers may pick the same number: the (agent_id, number) constraint makes
    the later commit fail, which the caller reports.
    """
    last = session.scalar(
        select(func.max(AgentVersion.number)).where(AgentVersion.agent_id == agent_id)
    )
    version = AgentVersion(
        agent_id=agent_id,
        number=(last or 0) + 1,
        sha256=stored.sha256,
        filename=stored.filename,
        size=stored.size,
        unpacked_size=stored.unpacked_size,
        files=stored.files,
        status=VersionStatus.pending,
    )
    session.add(version)
    return version


def store_version(
    session: Session, settings: Settings, agent_id: int, filename: str, data: bytes
) -> AgentVersion:
    """Validate and store an upload (``store_upload``) and add it as the agent's next pending
    version (``add_version``), in the caller's transaction: the folder is whole on disk
    before the caller commits the row.  Raises UploadError, writing nothing, for a refusal."""
    return add_version(session, agent_id, store_upload(settings, filename, data))
