"""Row locks that hold on both databases: the one primitive behind every exactly-once rule.

On PostgreSQL ``SELECT ... FOR UPDATE`` locks the row until the transaction ends, and a
second transaction waiting for it then reads the row as the first one committed it.

SQLite has no row locks (``with_for_update`` compiles to a plain SELECT), and Python's
``sqlite3`` runs a SELECT outside any transaction, only opening one before the first write:
two workers could both read "queued" and both go on to write.  So on SQLite a no-op UPDATE of
the row comes first: it opens the transaction *and* takes the database's write lock (waiting
out the busy timeout for another writer), and everything read after it is current.  Call
``lock`` first in a transaction, before reading anything the decision depends on.
"""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import select, update
from sqlalchemy.orm import Session

T = TypeVar("T")


def lock(session: Session, model: type[T], ident: int) -> T | None:
    """The row of ``model`` with primary key ``ident``, locked for this transaction (None if
    there is no such row), freshly loaded from the database."""
    table: Any = model
    if session.get_bind().dialect.name == "sqlite":
        session.execute(
            update(table)
            .where(table.id == ident)
            .values(id=table.id)
            .execution_options(synchronize_session=False)
        )
    return session.scalars(
        select(table)
        .where(table.id == ident)
        .with_for_update()
        .execution_options(populate_existing=True)
    ).one_or_none()
