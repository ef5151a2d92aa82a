"""What the platform's migrations repeat: columns added and dropped in place.

Every later migration adds columns to tables that others reference with ON DELETE CASCADE
and drops them again on downgrade.  SQLite's batch mode (which ``env.py`` turns on for
autogenerate) would rebuild such a table, and dropping its old copy cascade-deletes every row
that refers to it (foreign keys are on); so columns are added with a plain ADD COLUMN and
dropped with a plain ALTER TABLE DROP COLUMN (PostgreSQL, SQLite 3.35+), on both databases.

The helpers emit exactly the SQL the migrations wrote out before they were shared: a
migration must not change with the code, so what is here only ever gains new helpers.
Alembic loads every ``*.py`` in ``versions/`` as a revision, which is why this module lives
beside that folder, not in it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from alembic import op


def add_columns(table: str, *columns: sa.Column[Any]) -> None:
    """ADD COLUMN each of ``columns`` to ``table``, in order (never a table rebuild)."""
    for column in columns:
        op.add_column(table, column)


def drop_columns(table: str, *names: str) -> None:
    """DROP COLUMN each of ``names`` from ``table``, in order."""
    # Plain ALTER TABLE DROP COLUMN (PostgreSQL, SQLite 3.35+): SQLite's batch mode would
    # rebuild the table, and dropping the old copy cascade-deletes rows that refer to it.
    for name in names:
        op.execute(f"ALTER TABLE {table} DROP COLUMN {name}")


def one_column(
    table: str, name: str, type_: sa.types.TypeEngine[Any], **options: Any
) -> tuple[Callable[[], None], Callable[[], None]]:
    """The ``upgrade`` and ``downgrade`` of a migration that adds one column to one table.

    The column is built when ``upgrade`` runs, not here: Alembic attaches the column it adds
    to a table of its own, and one Column object cannot be attached twice (an upgrade after a
    downgrade in one process).
    """

    def upgrade() -> None:
        add_columns(table, sa.Column(name, type_, **options))

    def downgrade() -> None:
        drop_columns(table, name)

    return upgrade, downgrade


def add_reference(table: str, name: str, target: str) -> None:
    """ADD COLUMN ``name`` INTEGER NULL to ``table``, a foreign key to ``target`` (``table.id``
    form).  Alembic adds the constraint with an ALTER TABLE that SQLite lacks; SQLite takes
    the reference in the ADD COLUMN itself (the column is NULL).  No ON DELETE: SQLite's
    reflection does not read it back from a column added so."""
    if op.get_bind().dialect.name == "sqlite":
        ref_table, ref_column = target.split(".")
        op.execute(
            f"ALTER TABLE {table} ADD COLUMN {name} INTEGER REFERENCES {ref_table} ({ref_column})"
        )
        return
    op.add_column(table, sa.Column(name, sa.Integer(), sa.ForeignKey(target), nullable=True))
