"""Text that comes from a bot is untrusted data: clean it where it enters, escape it where it
is printed.

A bot controls the bytes of its stderr, the strings in its replies (``{"id": N, "error":
"..."}``, the ``message`` of a start-up ``error``) and so the details of its faults and the
reasons its uploads are rejected.  Such text is hostile until cleaned:

* ``clean`` makes it text that any database and any encoder can hold: invalid UTF-8 and lone
  surrogates (``"\\ud800"``, which ``json.loads`` accepts but no UTF-8 encoder writes) become
  U+FFFD, NUL (which a PostgreSQL ``text`` cannot hold) becomes U+FFFD, and the length is
  bounded with a marker saying how much was cut.  It is applied once where bot text enters
  (``cow006._faults``, ``cow006.host``, the runner), and again by the platform before it
  stores anything (the last line of defence).
* ``for_terminal`` makes it safe to print: control characters (C0 but newline and tab, DEL,
  C1), escape sequences (OSC 52 writes the viewer's clipboard, others set the window title or
  clear the screen) and bidi overrides (which reorder what the reader sees) are shown as
  visible escapes such as ``\\x1b``.  The CLI applies it to whatever a bot wrote before it
  prints it.

Standard library only, like the rest of the SDK.
"""

from __future__ import annotations

import json
import re
from typing import Any

REPLACEMENT = "\ufffd"

# What a database or an encoder cannot hold: NUL and the surrogate code points (a str holds
# them only when something decoded them leniently: json.loads of "\ud800", surrogateescape).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

# What must not reach a terminal raw: C0 controls except tab and newline, DEL, C1 controls,
# the bidi embeddings, overrides and isolates, and the surrogates (an encoder chokes on them).
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _marker(cut: int) -> str:
    return f" [... {cut} more characters cut]"


def clean(text: str | bytes | bytearray | None, limit: int | None = None) -> str:
    """``text`` as a str that every database can store and every UTF-8 encoder can write.

    Bytes are decoded as UTF-8 with invalid sequences replaced; NUL and lone surrogates are
    replaced with U+FFFD.  With ``limit``, the result is at most ``limit`` characters: a
    longer text keeps its head and ends with a marker saying how many characters were cut.
    ``None`` gives ``""``.
    """
    if text is None:
        return ""
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", errors="replace")
    elif not isinstance(text, str):
        text = str(text)
    text = _UNSTORABLE.sub(REPLACEMENT, text)
    if limit is not None and len(text) > limit:
        limit = max(0, limit)
        # The marker's own length depends on the count it names: size it for the worst case.
        room = max(0, limit - len(_marker(len(text))))
        text = text[:room] + _marker(len(text) - room)
        text = text[:limit]
    return text


def clean_data(data: Any, limit: int | None = None) -> Any:
    """A copy of JSON-like ``data`` with every string (keys too) passed through ``clean``.

    Numbers, booleans and None are kept as they are; so is every string that was clean
    already, so a match log stays the log it was (it still replays).
    """
    if isinstance(data, str):
        return clean(data, limit)
    if isinstance(data, dict):
        return {clean(k): clean_data(v, limit) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [clean_data(v, limit) for v in data]
    return data


def is_clean(data: Any) -> bool:
    """Whether ``clean_data(data)`` would keep every string of JSON-like ``data`` as it is:
    no string holds NUL or a surrogate.  One pass of the C JSON encoder instead of a walk in
    Python (a match log holds thousands of numbers): what the platform asks of every result
    before it stores it.  False when unsure (``data`` that is not JSON).
    """
    try:
        # ensure_ascii=False: a surrogate is written as itself, NUL as the six characters
        # "\\u0000" (a string holding those six characters is a false alarm: cleaned anyway).
        text = json.dumps(data, ensure_ascii=False, check_circular=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return "\\u0000" not in text and _UNSTORABLE.search(text) is None


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def for_terminal(text: str | bytes | None) -> str:
    """``text`` safe to print on a terminal: control characters, ESC (so every escape
    sequence), DEL, C1 controls, bidi overrides and surrogates become visible escapes
    (``\\x1b``, ``\\x9b``, ``\\u202e``); newlines and tabs are kept."""
    if text is None:
        return ""
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", errors="replace")
    return _UNPRINTABLE.sub(_escape, str(text))


def terminal_data(data: Any) -> Any:
    """A copy of JSON-like ``data`` with every string passed through ``for_terminal``: for
    printing an answer of the arena (match, faults, reasons) that holds bot text."""
    if isinstance(data, str):
        return for_terminal(data)
    if isinstance(data, dict):
        return {for_terminal(k): terminal_data(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [terminal_data(v) for v in data]
    return data


__all__ = [
    "REPLACEMENT",
    "clean",
    "clean_data",
    "for_terminal",
    "is_clean",
    "terminal_data",
]
