"""The `meta` table: the installation's small facts, one integer or text per key (the pace
seed, the journal's numbering, what a person was already told). One place for its statements,
written in a form every store accepts (ON CONFLICT, not INSERT OR IGNORE/REPLACE)."""

from __future__ import annotations

from typing import Any

from .store import execute, row, rows


def get(db: Any, key: str) -> Any | None:
    """The value kept under `key`, or None."""
    found = row(db, "SELECT value FROM meta WHERE key = ?", (key,))
    return None if found is None else found["value"]


def put(db: Any, key: str, value: Any) -> None:
    """Keep `value` under `key`, replacing what was there."""
    execute(
        db,
        "INSERT INTO meta (key, value) VALUES (:key, :value)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        {"key": key, "value": value},
    )


def put_if_absent(db: Any, key: str, value: Any) -> bool:
    """Keep `value` under `key` unless a value is there already; True when it was kept."""
    return (
        execute(
            db,
            "INSERT INTO meta (key, value) VALUES (:key, :value) ON CONFLICT (key) DO NOTHING",
            {"key": key, "value": value},
        )
        == 1
    )


def starting_with(db: Any, prefix: str) -> dict[str, Any]:
    """Every key that starts with `prefix`, with its value."""
    found = rows(
        db,
        # The pattern is a parameter (a literal % in the statement is a placeholder to
        # psycopg); a _ or % in `prefix` matches more, which the `startswith` below leaves out.
        "SELECT key, value FROM meta WHERE key LIKE :pattern",
        {"pattern": prefix + "%"},
    )
    return {r["key"]: r["value"] for r in found if r["key"].startswith(prefix)}


def forget(db: Any, key: str) -> None:
    """Drop `key` and its value (nothing when it is not there)."""
    execute(db, "DELETE FROM meta WHERE key = ?", (key,))
