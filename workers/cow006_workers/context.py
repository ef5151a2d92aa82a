"""What a worker process works with: its settings and its own database engine.

A prefork worker forks its pool processes after importing the tasks, and a database
connection must never cross a fork: the engine is made lazily, once per process (the
process id is checked), never at import time.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from cow006_platform import db
from cow006_platform.settings import Settings


@dataclass
class Context:
    """A worker's settings and database (one per process)."""

    settings: Settings
    engine: Engine
    session_factory: sessionmaker[Session]

    @classmethod
    def create(cls, settings: Settings) -> Context:
        engine = db.make_engine(settings.database_url)
        return cls(settings, engine, db.make_sessionmaker(engine))

    def close(self) -> None:
        self.engine.dispose()


_lock = threading.Lock()
_current: tuple[int, Context] | None = None


def get_context() -> Context:
    """This process's context, made on first use from the environment's settings."""
    global _current
    with _lock:
        if _current is None or _current[0] != os.getpid():
            # A context inherited through fork is dropped without closing it: its pooled
            # connections belong to the parent.
            _current = (os.getpid(), Context.create(Settings()))
        return _current[1]


def set_context(ctx: Context | None) -> None:
    """Use ``ctx`` in this process (tests and the ``serve`` command); None forgets it."""
    global _current
    with _lock:
        _current = (os.getpid(), ctx) if ctx is not None else None
