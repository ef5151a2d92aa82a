"""Uploads: good bots are stored content-addressed; hostile ones are refused before any write.

Every refusal is an ``UploadError`` with one sentence, and leaves ``data_dir`` without a new
bot folder; a fuzzing test mutates a good archive at random and checks exactly that.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import struct
import warnings
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from cow006_platform import storage
from cow006_platform.settings import Settings
from cow006_platform.storage import StoredBot, UploadError, bot_path, store_upload

BOT = b"def play(view):\n    return min(view.hand)\n"


@pytest.fixture
def cfg(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data")


def make_zip(
    entries: list[tuple[str | zipfile.ZipInfo, bytes]], method: int = zipfile.ZIP_DEFLATED
) -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Duplicate name" is the point of one test
        with zipfile.ZipFile(buf, "w", method) as zf:
            for name, data in entries:
                zf.writestr(name, data)
    return buf.getvalue()


def info(name: str, mode: int) -> zipfile.ZipInfo:
    zi = zipfile.ZipInfo(name)
    zi.external_attr = mode << 16
    zi.create_system = 3
    return zi


def stored_dirs(cfg: Settings) -> list[str]:
    d = storage.bots_dir(cfg)
    return sorted(os.listdir(d)) if d.exists() else []


def refused(cfg: Settings, filename: str, data: bytes, match: str) -> str:
    before = stored_dirs(cfg)
    with pytest.raises(UploadError, match=match) as err:
        store_upload(cfg, filename, data)
    message = str(err.value)
    assert "\n" not in message and message.endswith(".")
    assert stored_dirs(cfg) == before
    tmp = Path(cfg.data_dir) / "tmp"
    assert not tmp.exists() or os.listdir(tmp) == []
    return message


# -- good uploads ----------------------------------------------------------------------------
def test_single_file_is_stored_as_bot_py(cfg: Settings) -> None:
    bot = store_upload(cfg, "my_bot.py", BOT)
    assert bot == StoredBot(
        sha256=hashlib.sha256(BOT).hexdigest(),
        filename="my_bot.py",
        size=len(BOT),
        unpacked_size=len(BOT),
        files=1,
        path=bot_path(cfg, hashlib.sha256(BOT).hexdigest()),
    )
    assert (bot.path / "bot.py").read_bytes() == BOT
    assert os.listdir(bot.path) == ["bot.py"]


def test_client_side_paths_are_reduced_to_the_base_name(cfg: Settings) -> None:
    assert store_upload(cfg, "C:\\Users\\me\\bot.py", BOT).filename == "bot.py"
    assert store_upload(cfg, "/home/me/x.py", BOT + b"\n").filename == "x.py"


def test_zip_with_a_package_and_nested_zip(cfg: Settings) -> None:
    inner = make_zip([("bot.py", b"x = 1\n")])
    data = make_zip(
        [
            ("bot.py", b"from helpers.util import play\n"),
            ("helpers/", b""),
            ("helpers/__init__.py", b""),  # empty modules are fine, only bot.py must have code
            ("helpers/util.py", BOT),
            ("weights/table.json", b"[1, 2, 3]"),
            ("inner.zip", inner),  # kept as a file, never unpacked
        ]
    )
    bot = store_upload(cfg, "bot.zip", data)
    assert bot.files == 5 and bot.filename == "bot.zip" and bot.size == len(data)
    code = len(b"from helpers.util import play\n") + len(BOT)
    assert bot.unpacked_size == code + len(b"[1, 2, 3]") + len(inner)
    assert (bot.path / "helpers" / "util.py").read_bytes() == BOT
    assert (bot.path / "inner.zip").read_bytes() == inner
    assert stat.S_IMODE((bot.path / "bot.py").stat().st_mode) == 0o644
    assert stat.S_IMODE(bot.path.stat().st_mode) == 0o755


def test_same_bytes_reuse_the_folder_untouched(cfg: Settings) -> None:
    first = store_upload(cfg, "bot.py", BOT)
    marker = first.path / "bot.py"
    st1 = marker.stat()
    again = store_upload(cfg, "other_name.py", BOT)
    assert again.sha256 == first.sha256 and again.path == first.path
    st2 = marker.stat()
    assert (st1.st_ino, st1.st_mtime_ns) == (st2.st_ino, st2.st_mtime_ns)
    assert stored_dirs(cfg) == [first.sha256]


def test_a_stored_folder_is_reused_only_when_whole(cfg: Settings) -> None:
    """The same bytes again reuse a whole folder untouched; a folder whose files are not the
    upload's (half-written before a power loss, damaged) is replaced (issue 14)."""
    bot = store_upload(cfg, "bot.py", BOT)
    inode = (bot.path / "bot.py").stat().st_ino
    store_upload(cfg, "bot.py", BOT)
    assert (bot.path / "bot.py").stat().st_ino == inode
    (bot.path / "bot.py").write_bytes(b"")
    store_upload(cfg, "bot.py", BOT)
    assert (bot.path / "bot.py").read_bytes() == BOT


def test_bot_path_refuses_anything_but_a_digest(cfg: Settings) -> None:
    with pytest.raises(ValueError):
        bot_path(cfg, "../../etc")
    with pytest.raises(ValueError):
        bot_path(cfg, "A" * 64)
    assert bot_path(cfg, "a" * 64) == Path(cfg.data_dir) / "bots" / ("a" * 64)


# -- refused uploads -------------------------------------------------------------------------
def test_too_large_upload(cfg: Settings) -> None:
    refused(cfg, "bot.py", b"#" * (cfg.max_upload_bytes + 1), "limit is")


def test_unknown_kind_and_bad_upload_names(cfg: Settings) -> None:
    refused(cfg, "bot.txt", BOT, "one .py file or a .zip")
    refused(cfg, "bot.tar.gz", BOT, "one .py file or a .zip")
    refused(cfg, "", BOT, "no file name")
    refused(cfg, ".bot.py", BOT, "file name may use only")
    refused(cfg, "my bot.py", BOT, "file name may use only")


def test_empty_or_not_utf8_sources(cfg: Settings) -> None:
    refused(cfg, "bot.py", b"", "bot.py is empty")
    refused(cfg, "bot.py", b" \n\t\n", "bot.py is empty")
    refused(cfg, "bot.py", b"x = '\xff\xfe'\n", "not UTF-8")
    refused(cfg, "bot.zip", make_zip([("bot.py", b"")]), "bot.py is empty")
    refused(
        cfg, "bot.zip", make_zip([("bot.py", BOT), ("lib/x.py", b"\xc3\x28")]), "lib/x.py is not"
    )


def test_zip_slip_and_absolute_paths(cfg: Settings) -> None:
    base = [("bot.py", BOT)]
    refused(cfg, "b.zip", make_zip([*base, ("../evil.py", BOT)]), "outside the archive")
    refused(cfg, "b.zip", make_zip([*base, ("a/../../evil.py", BOT)]), "outside the archive")
    refused(cfg, "b.zip", make_zip([*base, ("..\\evil.py", BOT)]), "outside the archive")
    refused(cfg, "b.zip", make_zip([*base, ("/etc/cron.d/x", BOT)]), "absolute path")
    refused(cfg, "b.zip", make_zip([*base, ("C:/win.py", BOT)]), "absolute path")


def test_symlinks_devices_and_other_special_files(cfg: Settings) -> None:
    base = [("bot.py", BOT)]
    link = info("link", stat.S_IFLNK | 0o777)
    refused(cfg, "b.zip", make_zip([*base, (link, b"/etc/passwd")]), "symbolic link")
    link_as_bot = info("bot.py", stat.S_IFLNK | 0o777)
    refused(cfg, "b.zip", make_zip([(link_as_bot, b"/etc/passwd")]), "symbolic link")
    for kind in (stat.S_IFCHR, stat.S_IFBLK, stat.S_IFIFO, stat.S_IFSOCK):
        dev = info("dev", kind | 0o644)
        refused(cfg, "b.zip", make_zip([*base, (dev, b"")]), "not a regular file")
    # A directory mode on a name without the trailing slash is not trusted either.
    refused(cfg, "b.zip", make_zip([*base, (info("d", stat.S_IFDIR | 0o755), b"")]), "not a")


def test_bad_entry_names(cfg: Settings) -> None:
    base = [("bot.py", BOT)]
    for name in (".hidden.py", "pkg/.git/config", "a b.py", "x:y.py", "a\\b.py", "n" * 65, "é.py"):
        refused(cfg, "b.zip", make_zip([*base, (name, b"x")]), "bad name|outside|absolute")
    refused(cfg, "b.zip", make_zip([*base, ("a//b.py", b"x")]), "bad name")
    deep = "/".join(["d"] * 12) + "/x.py"
    refused(cfg, "b.zip", make_zip([*base, (deep, b"x")]), "nested too deep")


def test_duplicates_and_file_folder_clashes(cfg: Settings) -> None:
    refused(cfg, "b.zip", make_zip([("bot.py", BOT), ("bot.py", BOT)]), "twice")
    refused(cfg, "b.zip", make_zip([("bot.py", BOT), ("a", b"x"), ("a/b.py", b"x")]), "both")


def test_encrypted_entries(cfg: Settings) -> None:
    # zipfile clears the flags it writes: set the "encrypted" bit in both headers by hand.
    data = bytearray(make_zip([("bot.py", BOT)], method=zipfile.ZIP_STORED))
    local, central = data.find(b"PK\x03\x04"), data.find(b"PK\x01\x02")
    data[local + 6] |= 0x1
    data[central + 8] |= 0x1
    refused(cfg, "b.zip", bytes(data), "encrypted")


def test_corrupt_and_truncated_zips(cfg: Settings) -> None:
    good = make_zip([("bot.py", BOT)])
    refused(cfg, "b.zip", b"PK\x03\x04 not really a zip", "not a valid zip")
    refused(cfg, "b.zip", good[: len(good) // 2], "not a valid zip")
    refused(cfg, "b.zip", b"", "not a valid zip")
    # Flip the compressed data: the CRC check (or inflate) fails.
    i = good.index(b"bot.py") + len(b"bot.py")
    bad = good[:i] + bytes(b ^ 0xFF for b in good[i : i + 8]) + good[i + 8 :]
    refused(cfg, "b.zip", bad, "corrupt")


def test_no_bot_py_at_the_root(cfg: Settings) -> None:
    refused(cfg, "b.zip", make_zip([("src/bot.py", BOT)]), "no bot.py")
    refused(cfg, "b.zip", make_zip([("bot.py/", b"")]), "no bot.py")
    refused(cfg, "b.zip", make_zip([]), "no bot.py")


def test_too_many_files(cfg: Settings) -> None:
    entries = [("bot.py", BOT)] + [(f"f{i}.txt", b"") for i in range(cfg.max_files)]
    refused(cfg, "b.zip", make_zip(entries), "more than 200 files")
    many = [("bot.py", BOT)] + [(f"d{i}/", b"") for i in range(2 * cfg.max_files)]
    refused(cfg, "b.zip", make_zip(many), "entries")
    ok = [("bot.py", BOT)] + [(f"f{i}.txt", b"") for i in range(cfg.max_files - 1)]
    assert store_upload(cfg, "b.zip", make_zip(ok)).files == cfg.max_files


def test_bomb_by_declared_size(cfg: Settings) -> None:
    big = b"\0" * (cfg.max_unpacked_bytes + 1)
    data = make_zip([("bot.py", BOT), ("big.bin", big)])
    assert len(data) < cfg.max_upload_bytes
    refused(cfg, "b.zip", data, "unpacks to more than")
    # Spread over many entries, each small: the total counts.
    chunk = b"\0" * (cfg.max_unpacked_bytes // 4 + 1)
    spread = make_zip([("bot.py", BOT)] + [(f"p{i}", chunk) for i in range(4)])
    refused(cfg, "b.zip", spread, "unpacks to more than")


def _patch_sizes(data: bytes, name: bytes, size: int) -> bytes:
    """Rewrite the uncompressed size of entry ``name`` in both headers (a lying archive)."""
    out = bytearray(data)
    # Local file header: signature, then the uncompressed size at offset 22.
    for sig, off_size, off_name_len, off_name in (
        (b"PK\x03\x04", 22, 26, 30),
        (b"PK\x01\x02", 24, 28, 46),
    ):
        pos = 0
        while (pos := out.find(sig, pos)) >= 0:
            (n,) = struct.unpack_from("<H", out, pos + off_name_len)
            if bytes(out[pos + off_name : pos + off_name + n]) == name:
                struct.pack_into("<I", out, pos + off_size, size)
            pos += 4
    return bytes(out)


def test_bomb_with_lying_headers(cfg: Settings) -> None:
    big = b"\0" * (cfg.max_unpacked_bytes * 2)
    honest = make_zip([("bot.py", BOT), ("big.bin", big)])
    lying = _patch_sizes(honest, b"big.bin", 100)
    with zipfile.ZipFile(io.BytesIO(lying)) as zf:
        assert zf.getinfo("big.bin").file_size == 100  # the lie is what zipfile believes
    # zipfile inflates no more than the declared size, so the lie ends as a failed CRC check.
    refused(cfg, "b.zip", lying, "corrupt")


def test_inflation_stops_at_the_cap_whatever_the_stream_yields(
    cfg: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Defence in depth: even a decompressor that ignored the headers is cut off at the cap."""
    produced = []

    class Endless(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def read(self, n: int = -1) -> bytes:
            chunk = b"\0" * (n if n and n > 0 else 65536)
            produced.append(len(chunk))
            return chunk

    real_open = zipfile.ZipFile.open

    def fake_open(self: zipfile.ZipFile, name: object, *args: object, **kwargs: object):
        target = name.filename if isinstance(name, zipfile.ZipInfo) else name
        if target == "small.bin":
            return Endless()
        return real_open(self, name, *args, **kwargs)  # type: ignore[arg-type]

    data = make_zip([("bot.py", BOT), ("small.bin", b"tiny")])
    monkeypatch.setattr(zipfile.ZipFile, "open", fake_open)
    refused(cfg, "b.zip", data, "unpacks to")
    assert sum(produced) <= cfg.max_unpacked_bytes + 2 * 65536


# -- fuzzing ---------------------------------------------------------------------------------
GOOD_ZIP = make_zip([("bot.py", BOT), ("lib/util.py", b"X = 1\n"), ("data.txt", b"hello")])


@hsettings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    flips=st.lists(
        st.tuples(st.integers(0, len(GOOD_ZIP) - 1), st.integers(1, 255)), min_size=1, max_size=6
    ),
    cut=st.one_of(st.none(), st.integers(0, len(GOOD_ZIP))),
)
def test_fuzzed_archives_are_stored_or_refused_cleanly(
    cfg: Settings, flips: list[tuple[int, int]], cut: int | None
) -> None:
    data = bytearray(GOOD_ZIP)
    for pos, mask in flips:
        data[pos] ^= mask
    blob = bytes(data[:cut] if cut is not None else data)
    try:
        bot = store_upload(cfg, "fuzz.zip", blob)
    except UploadError as exc:
        assert "\n" not in str(exc)
        return
    # Accepted: everything stored is inside its own folder, regular files only.
    root = bot.path.resolve()
    assert root.parent == storage.bots_dir(cfg).resolve()
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            assert not p.is_symlink() and root in p.resolve().parents
    assert (root / "bot.py").is_file()


@hsettings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(blob=st.binary(max_size=2048))
def test_random_bytes_never_raise_anything_else(cfg: Settings, blob: bytes) -> None:
    for name in ("bot.zip", "bot.py"):
        try:
            store_upload(cfg, name, blob)
        except UploadError:
            pass


# --- runtimes: cow006.toml, node and static binaries ------------------------------------------


def elf(machine: int = 62, interp: bool = False, klass: int = 2, e_type: int = 2) -> bytes:
    """A minimal ELF image: the header and one or two program headers (PT_LOAD, PT_INTERP)."""
    phnum = 2 if interp else 1
    header = b"\x7fELF" + bytes([klass, 1, 1]) + bytes(9)
    header += struct.pack("<HHIQQQIHHHHHH", e_type, machine, 1, 0x400000, 64, 0, 0, 64, 56,
                          phnum, 0, 0, 0)  # fmt: skip
    load = struct.pack("<IIQQQQQQ", 1, 5, 0, 0x400000, 0x400000, 0, 0, 0x1000)
    phdrs = load + (struct.pack("<IIQQQQQQ", 3, 4, 0, 0, 0, 0, 0, 1) if interp else b"")
    return header + phdrs + b"\x90" * 64


def test_a_static_x86_64_binary_is_stored_executable(cfg: Settings) -> None:
    data = make_zip([("cow006.toml", b'runtime = "binary"\n'), ("bot", elf())])
    stored = store_upload(cfg, "b.zip", data)
    mode = os.stat(stored.path / "bot").st_mode
    assert mode & 0o777 == 0o755
    assert os.stat(stored.path / "cow006.toml").st_mode & 0o777 == 0o644
    assert storage.has_bot(stored.path)
    # A static PIE (ET_DYN without a loader) is fine too; an entry elsewhere as named.
    pie = make_zip([("cow006.toml", b'runtime = "binary"\nentry = "out/run"\n'),
                    ("out/run", elf(e_type=3))])  # fmt: skip
    assert os.stat(store_upload(cfg, "p.zip", pie).path / "out" / "run").st_mode & 0o111


@pytest.mark.parametrize(
    ("image", "match"),
    [
        (elf(interp=True), "dynamically linked"),
        (elf(machine=183), "another machine"),  # aarch64
        (elf(klass=1), "64-bit"),
        (elf(e_type=1), "not an executable"),  # a relocatable object
        (b"#!/bin/sh\necho hi\n", "not a Linux executable"),
        (elf()[:70], "truncated"),
    ],
)
def test_what_cannot_run_as_a_binary_is_refused_in_one_sentence(
    cfg: Settings, image: bytes, match: str
) -> None:
    data = make_zip([("cow006.toml", b'runtime = "binary"\n'), ("bot", image)])
    message = refused(cfg, "b.zip", data, match)
    assert message.endswith(".") and "\n" not in message


@pytest.mark.parametrize(
    ("manifest", "match"),
    [
        (b'runtime = "cobol"\n', "runtime 'cobol' is not one of binary, node, python"),
        (b"runtime = [\n", "not valid TOML"),
        (b'entry = "../../etc/passwd"\n', "relative path inside the folder"),
        (b'entry = "/bin/sh"\n', "relative path inside the folder"),
        (b'runtime = "node"\nentry = "main.js"\n', "no main.js"),
        (b"evil = 1\n", "unknown key 'evil'"),
        (b"\xff\xfe", "not valid TOML"),
        (b"x" * 5000, "larger than 4096 bytes"),
    ],
)
def test_a_bad_manifest_is_refused_in_one_sentence(
    cfg: Settings, manifest: bytes, match: str
) -> None:
    data = make_zip([("cow006.toml", manifest), ("bot.py", BOT)])
    refused(cfg, "b.zip", data, match)


def test_a_node_bot_needs_no_manifest(cfg: Settings) -> None:
    js = b"process.stdin.on('data', () => {});\n"
    stored = store_upload(cfg, "b.zip", make_zip([("bot.js", js)]))
    assert (stored.path / "bot.js").read_bytes() == js
