"""`autoretto store copy --to postgresql://…`: a home's SQLite store moved into PostgreSQL.

The copy reads the SQLite file inside one write transaction (BEGIN IMMEDIATE): no run can post
while it copies, and what it copies is one consistent moment. Every table goes across row by
row, ids included, so the journal's numbering, the posts' identities and the decisions carry
over as they are. Only once PostgreSQL has committed the whole copy is the SQLite file marked
as moved (`store_moved_to` in its meta), in the same transaction that held posting: from then
on a run that still points at the file refuses to start, so the two copies can never both post.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import StoreError
from .postgres import open_postgres, shown_url
from .store import open_sqlite, transaction

#: Tables that are the store's own bookkeeping, not the home's data.
NOT_COPIED = frozenset({"_migrations"})


def copy_store(path: Path, url: str) -> dict[str, Any]:
    """Copy the SQLite store at `path` into the empty PostgreSQL database at `url`. Returns
    {"from", "to", "tables": {name: rows}}. Raises StoreError, changing nothing, when the target
    cannot be reached or already holds a home."""
    if not path.is_file():
        raise StoreError(f"{path}: no SQLite store here to copy; run `autoretto init` first")
    source = open_sqlite(path, create=False)
    target = open_postgres(url)
    shown = shown_url(url)
    try:
        tables = [
            name
            for (name,) in source.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
                " AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
            ).fetchall()
            if name not in NOT_COPIED
        ]
        copied: dict[str, int] = {}
        with transaction(source):  # posting holds while the copy runs
            moved = source.execute("SELECT value FROM meta WHERE key = 'store_moved_to'")
            if moved.fetchone() is not None:
                raise StoreError(f"{path}: this store was copied already; nothing to do")
            with transaction(target):
                for table in tables:
                    if target.execute(f'SELECT 1 FROM "{table}" LIMIT 1').fetchone():
                        raise StoreError(
                            f"{shown} already holds an Autoretto home (its {table} has rows); "
                            "give the URL of an empty database"
                        )
                for table in tables:
                    copied[table] = _copy_table(source, target, table)
            source.execute(
                "INSERT INTO meta (key, value) VALUES ('store_moved_to', ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (shown,),
            )
    finally:
        source.conn.close()
        target.close()
    return {"from": str(path), "to": shown, "tables": copied}


#: Rows read from the SQLite file at a time: a home's history (post_stats) can hold millions.
BATCH = 10_000


def _copy_table(source: Any, target: Any, table: str) -> int:
    """Stream one table across with PostgreSQL's COPY, in batches: the memory a copy takes
    does not grow with the history."""
    cursor = source.execute(f'SELECT * FROM "{table}"')
    columns = [column[0] for column in cursor.description]
    names = ", ".join(f'"{name}"' for name in columns)
    copied = 0
    with (
        target.connection.cursor() as writer,
        writer.copy(f'COPY "{table}" ({names}) FROM STDIN') as loading,
    ):
        while batch := cursor.fetchmany(BATCH):
            for values in batch:
                loading.write_row(values)
            copied += len(batch)
    if "id" in columns:  # the identity goes on after the copied ids, as SQLite's rowid would
        target.move_ids(table)
    return copied
