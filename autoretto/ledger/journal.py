"""The journal's numbering in the database: `meta.journal_seq` (the last number taken) and
`journal_entries` (the database's own copy of every numbered line). The journal file itself,
its reads, appends and the restore hold, stays in autoretto/journal.py.

A number is taken inside the transaction that records its event (ledger.posts.open_attempt,
ledger.posts.record_published, ledger.claims.release_slot), so that the event, its number and its
line commit together or not at all; only `write_back`, `resume`'s whole write-back, opens a
transaction here.
"""

from __future__ import annotations

import json
from typing import Any

from . import claims, meta, posts
from .store import execute, row, rows, transaction


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


def line_of(db: Any, seq: int) -> str | None:
    """The database's copy of line `seq`, or None when it has none."""
    found = row(db, "SELECT entry FROM journal_entries WHERE seq = ?", (seq,))
    return found["entry"] if found else None


def count_lines_after(db: Any, seq: int) -> int:
    """How many lines numbered after `seq` the database has a copy of."""
    found = row(db, "SELECT COUNT(*) AS n FROM journal_entries WHERE seq > ?", (seq,))
    return int(found["n"]) if found else 0


def write_back(
    db: Any, entries: list[dict[str, Any]], *, now: str, journal_seq: int | None
) -> None:
    """`resume`: the journal's lines a restored database forgot (`entries`, in order) written
    back, in one transaction that this opens. A publish or an attempt becomes its post again
    (ledger.posts.write_back), a stamp move moves the stamp again and fills its slot; every post
    of an episode the database knows is then in doubt (`in_doubt_through`, looked for before its
    first send). With `journal_seq` (the journal is ahead), the database's numbering catches up
    to it."""
    with transaction(db):
        for entry in entries:
            if entry["kind"] in ("publish", "attempt"):
                posts.write_back(db, entry, now)
            elif entry["kind"] == "stamp":
                claims.write_back_release(db, entry["channel"], entry["slot_at"])
                claims.set_slot_state(
                    db,
                    "resume",
                    entry["channel"],
                    entry["slot"],
                    entry["slot_at"],
                    claims.SlotState.POSTED,
                    now,
                )
        meta.put(db, "in_doubt_through", posts.newest_episode_id(db))
        if journal_seq is not None:
            meta.put(db, "journal_seq", journal_seq)
