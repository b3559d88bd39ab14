"""The journal's numbering in the database: `meta.journal_seq` (the last number taken) and
`journal_entries` (the database's own copy of every numbered line). The journal file itself,
its reads, appends and the restore hold, stays in autoretto/journal.py.

None of these opens a transaction: a number is taken inside the transaction that records its
event, so that the event, its number and its line commit together or not at all.
"""

from __future__ import annotations

import json
from typing import Any

from .store import execute, row, rows


def number_entry(db: Any, entry: dict[str, Any]) -> int:
    """Take the next journal number for `entry` and keep the database's copy of its line
    (`entry` with its `seq`, as the journal writes it). Returns the number. Call inside the
    transaction that records the event.

    The number is taken by one statement, not read and then written: on SQLite the
    transaction's BEGIN IMMEDIATE would keep two runs from taking one number anyway, but a
    store without a write lock up front (PostgreSQL) would not."""
    # Every database has had the row since migration 2; a missing one is numbered from 0.
    execute(
        db,
        "INSERT INTO meta (key, value) VALUES ('journal_seq', 0) ON CONFLICT (key) DO NOTHING",
    )
    taken = row(db, "UPDATE meta SET value = value + 1 WHERE key = 'journal_seq' RETURNING value")
    assert taken is not None
    seq = int(taken["value"])
    line = json.dumps({**entry, "seq": seq}, ensure_ascii=False, sort_keys=True)
    execute(
        db,
        "INSERT INTO journal_entries (seq, entry) VALUES (:seq, :entry)",
        {"seq": seq, "entry": line},
    )
    return seq


def lines_after(db: Any, seq: int) -> list[str]:
    """The database's copies of the lines numbered after `seq`, in order."""
    return [
        found["entry"]
        for found in rows(
            db, "SELECT entry FROM journal_entries WHERE seq > ? ORDER BY seq", (seq,)
        )
    ]


def count_lines_after(db: Any, seq: int) -> int:
    """How many lines numbered after `seq` the database has a copy of."""
    found = row(db, "SELECT COUNT(*) AS n FROM journal_entries WHERE seq > ?", (seq,))
    return int(found["n"]) if found else 0
