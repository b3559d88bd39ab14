"""The publish journal: an append-only record of every publish and stamp move, kept outside
the database, to notice a database restored from an older backup (ARCHITECTURE.md §3).

Every publish and stamp move takes the next sequence number inside the same transaction that
records it in the database (`meta.journal_seq`), then appends one fsynced JSON line with that
number to the journal. A database whose sequence is behind the journal's has forgotten
publishes: it was restored, and posting holds until a person has checked the platforms and
run `autoretto resume --checked`, which first writes what the journal knows back into it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .store import execute, row

if TYPE_CHECKING:
    from sqlite_utils import Database

_TAIL_BYTES = 64 * 1024


def next_seq(db: Database) -> int:
    """Take the next sequence number. Call inside the transaction that records the event."""
    execute(db, "UPDATE meta SET value = value + 1 WHERE key = 'journal_seq'")
    return database_seq(db)


def database_seq(db: Database) -> int:
    found = row(db, "SELECT value FROM meta WHERE key = 'journal_seq'")
    return int(found["value"]) if found else 0


def append(path: Path, entry: dict[str, Any]) -> None:
    """Append one line and fsync it (and the folder when the file is new)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    data = (json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(descriptor, data)
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    if new:
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def entries(path: Path) -> list[dict[str, Any]]:
    """Every complete line of the journal (a torn last line from a crash is skipped)."""
    if not path.exists():
        return []
    found = []
    with open(path, encoding="utf-8") as reader:
        for line in reader:
            if line.endswith("\n"):
                try:
                    found.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
    return found


def journal_seq(path: Path) -> int:
    """The highest sequence number in the journal, reading only its tail."""
    if not path.exists():
        return 0
    with open(path, "rb") as reader:
        reader.seek(0, os.SEEK_END)
        size = reader.tell()
        reader.seek(max(0, size - _TAIL_BYTES))
        tail = reader.read().decode("utf-8", errors="replace")
    highest = 0
    for line in tail.splitlines()[1 if size > _TAIL_BYTES else 0 :]:
        try:
            highest = max(highest, int(json.loads(line)["seq"]))
        except (ValueError, KeyError, TypeError):
            continue
    return highest


@dataclass(frozen=True)
class Hold:
    """Posting is held: the database is behind the journal."""

    database_seq: int
    journal_seq: int

    @property
    def reason(self) -> str:
        return (
            f"the database knows publishes up to #{self.database_seq} but the journal has "
            f"#{self.journal_seq}: it was restored from an older copy. Posting is held. Check "
            "what the platforms already have (`autoretto journal` lists what the database "
            "forgot), then run `autoretto resume --checked`"
        )


def restore_hold(db: Database, path: Path) -> Hold | None:
    # The journal first: a publish always reaches the database before the journal, so a
    # publish committed by another run between these two reads can never look like a restore.
    written = journal_seq(path)
    known = database_seq(db)
    return Hold(known, written) if written > known else None


def missing_entries(db: Database, path: Path) -> list[dict[str, Any]]:
    known = database_seq(db)
    return [entry for entry in entries(path) if int(entry.get("seq", 0)) > known]
