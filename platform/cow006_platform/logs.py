"""Logging for the arena's processes: plain text for people, or one JSON object per line.

``COW006_LOG_FORMAT=json`` makes every line a JSON object a log collector can index without
parsing prose: ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, the traceback
as ``exc_info`` when there is one, and whatever the call passed in ``extra=`` (``match_id``,
``version_id``, ``status``, ``duration``, ``faults``, ...)::

    logger.info("match finished", extra={"match_id": 42, "status": "finished"})
    {"time": "2025-01-01T12:00:00.123456+00:00", "level": "INFO", "logger": "cow006.matches",
     "message": "match finished", "match_id": 42, "status": "finished"}

``configure`` sets up the root logger of an API process (``cow006 serve``'s API child, a
uvicorn factory); ``apply_formatter`` is for processes whose logging is set up by someone
else (the Celery worker: its ``--logfile`` handlers keep their destination, only their format
changes).  Neither touches handlers it did not install itself, so pytest's capture and
Celery's own handlers keep working.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from .settings import Settings

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Loggers that uvicorn configures with handlers of their own (and propagate=False): in JSON
# mode they get ours instead, so that the API's every line is JSON.
UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")
_OURS = "_cow006_handler"  # marks the handlers ``configure`` installed (replaced, never stacked)

# Every attribute a LogRecord has of its own: anything else on a record came from ``extra=``.
_RESERVED = frozenset(vars(logging.LogRecord("", logging.INFO, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line (see the module)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _RESERVED and not key.startswith("_") and key not in entry:
                entry[key] = value
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exc_info"] = record.exc_text
        if record.stack_info:
            entry["stack_info"] = self.formatStack(record.stack_info)
        # default=str: an extra that JSON cannot hold (a datetime, a Path) is still logged.
        return json.dumps(entry, default=str, ensure_ascii=False)


def make_formatter(log_format: str) -> logging.Formatter:
    """The formatter of a ``COW006_LOG_FORMAT`` value (``text`` or ``json``)."""
    if log_format == "json":
        return JsonFormatter()
    if log_format == "text":
        return logging.Formatter(TEXT_FORMAT)
    raise ValueError(f"the log format is text or json, not {log_format!r}")


def level_of(name: str) -> int:
    """A ``COW006_LOG_LEVEL`` value (``info``, ``WARNING``, ``10``) as a logging level."""
    text = str(name).strip().upper()
    if text.isdigit():
        return int(text)
    level = logging.getLevelName(text)
    if not isinstance(level, int):
        raise ValueError(f"unknown log level {name!r} (debug, info, warning, error, critical)")
    return level


def configure(settings: Settings, stream: Any = None) -> logging.Handler:
    """Log to ``stream`` (stderr) in the settings' format and level; the handler installed.

    Idempotent: a second call replaces the handler of the first.  In JSON mode uvicorn's
    loggers are pointed at the same handler (their own would print text).
    """
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(make_formatter(settings.log_format))
    setattr(handler, _OURS, True)
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _OURS, False)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level_of(settings.log_level))
    if settings.log_format == "json":
        for name in UVICORN_LOGGERS:
            logger = logging.getLogger(name)
            logger.handlers = [handler]
            logger.propagate = False
            # The level is ours too: a uvicorn started before (its own log config) may have
            # set one, and then the setting above would not be what decides.
            logger.setLevel(logging.NOTSET)
    return handler


def apply_formatter(logger: logging.Logger, settings: Settings) -> None:
    """Give ``logger``'s handlers the settings' format (JSON mode only: in text mode the
    owner's own format, Celery's, is kept)."""
    if settings.log_format != "json":
        return
    formatter = make_formatter("json")
    for handler in logger.handlers:
        handler.setFormatter(formatter)
