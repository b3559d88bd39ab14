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

from . import claims, meta, posts, replies
from .store import execute, row, rows, transaction


def hold_numbering(db: Any) -> int:
    """The last number taken, its counter row locked until this transaction ends: no other
    transaction takes a number meanwhile (on SQLite the write lock already keeps them out; on
    PostgreSQL a change of `transaction(db, rows_only=True)` holds no lock of the whole ledger,
    and what it compares with the journal must not move under it). Call inside the
    transaction that records the event, as the last thing before `number_entry`."""
    return _counter(db, "value")


def number_entry(db: Any, entry: dict[str, Any]) -> int:
    """Take the next journal number for `entry` and keep the database's copy of its line
    (`entry` with its `seq`, as the journal writes it). Returns the number. Call inside the
    transaction that records the event.

    The number is taken by one statement, not read and then written: on SQLite the
    transaction's BEGIN IMMEDIATE would keep two runs from taking one number anyway, but a
    store without a write lock up front (PostgreSQL) would not."""
    seq = _counter(db, "value + 1")
    line = json.dumps({**entry, "seq": seq}, ensure_ascii=False, sort_keys=True)
    execute(
        db,
        "INSERT INTO journal_entries (seq, entry) VALUES (:seq, :entry)",
        {"seq": seq, "entry": line},
    )
    return seq


def _counter(db: Any, value: str) -> int:
    """Set the journal counter to `value` (of itself) and return it: one statement, which
    locks its row until the transaction ends."""
    sql = f"UPDATE meta SET value = {value} WHERE key = 'journal_seq' RETURNING value"
    found = row(db, sql)
    if found is None:
        # A SQLite file has had the row since migration 2; a PostgreSQL schema is made whole
        # without it. A missing one is numbered from 0.
        execute(
            db,
            "INSERT INTO meta (key, value) VALUES ('journal_seq', 0) ON CONFLICT (key) DO NOTHING",
        )
        found = row(db, sql)
    assert found is not None
    return int(found["value"])


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
            elif entry["kind"] in ("reply", "reply_attempt"):
                replies.write_back(db, entry, now)
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
        meta.put(db, "replies_in_doubt_through", replies.newest_reply_id(db))
        if journal_seq is not None:
            meta.put(db, "journal_seq", journal_seq)
