"""The publish journal: an append-only record, outside the database and outside the home, of
every attempt, publish and stamp move, to notice a database restored from an older backup
(ARCHITECTURE.md §3).

Each event takes the next number inside the same transaction that records it in the database
(`meta.journal_seq`), with the database's own copy of its line (`journal_entries`). Right after
that commit the line is appended to the journal, fsynced, before anything else happens: an
attempt's line is written before its request goes out, so no restore can hide a send. A crash
between the commit and the append leaves the journal behind the database; the next write (or
run) finds that gap and appends the missing lines from the database's copies.

A database whose number is behind the journal's has forgotten events: it was restored, and
posting holds until a person has checked the platforms and run `autoretto resume --checked`,
which first writes what the journal knows back into it. A journal that lacks lines the database
cannot give back (it was lost, moved or restored itself) holds posting the same way. No number
is ever taken while the journal is ahead of the database, so a hand-made publish on a restored
copy cannot reuse a number the journal already has.

The journal's default place is the XDG state folder (`~/.local/state/autoretto/<home>/`), named
after the home, so restoring the home from a backup does not roll the journal back with it.

A journal that cannot be read (a line that is not UTF-8 or JSON, or lacks the fields of its
kind; a folder where the file should be) proves nothing about what went out: every read here
raises JournalDamaged, naming the file and the line, and posting holds like after a restore.
Only a last line without its line break (a crash in the middle of an append) is passed over,
and cut off before the next append.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from . import faults
from .clock import from_iso
from .errors import JournalDamaged, shown
from .ledger import journal as numbering
from .ledger import meta

if TYPE_CHECKING:
    from .ledger.store import Store as Database

_TAIL_BYTES = 64 * 1024
JOURNAL_NAME = "publish.journal"
#: where the journal lived before it moved out of the home; adopted once on upgrade
LEGACY_PATH = Path("journal") / JOURNAL_NAME


def default_path(home: Path) -> Path:
    """`$XDG_STATE_HOME/autoretto/<home>/publish.journal` (XDG_STATE_HOME defaults to
    ~/.local/state), the folder named after the home's path so two homes never share one."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "autoretto" / home_folder_name(home) / JOURNAL_NAME


def home_folder_name(home: Path) -> str:
    where = str(home.expanduser().absolute())
    readable = re.sub(r"[^A-Za-z0-9._]+", "-", where).strip("-")[-80:] or "home"
    return f"{readable}-{hashlib.sha256(where.encode()).hexdigest()[:8]}"


def default_journal(home: Path) -> Path:
    """The default journal's path for `home`. An installation from before the journal moved
    out of the home has its journal copied there first, once (the old file stays)."""
    path = default_path(home)
    old = home / LEGACY_PATH
    if not path.exists() and old.is_file():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        shutil.copyfile(old, partial)
        with open(partial, "rb+") as copied:
            os.fsync(copied.fileno())
        os.replace(partial, path)
        _fsync_folder(path.parent)
    return path


def placement_warnings(path: Path, home: Path, database: Path) -> list[str]:
    """What `doctor` says about where the journal is kept: inside the home (a restore of the
    home rolls it back too), or on the same file system as the database."""
    found = []
    if path.absolute().is_relative_to(home.absolute()):
        found.append(
            f"the publish journal {path} is inside the home: restoring the home from a backup "
            "rolls it back with the database, and the restore goes unnoticed; remove "
            "`journal = ...` to keep it in the XDG state folder, or point it at another disk"
        )
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if database.exists() and existing.stat().st_dev == database.stat().st_dev:
        found.append(
            f"the publish journal {path} is on the same file system as the database: a disk "
            "that fails or is restored takes both; set `journal = ...` to a file on another disk"
        )
    return found


def database_seq(db: Database) -> int:
    found = meta.get(db, "journal_seq")
    return 0 if found is None else int(found)


def take(db: Database, path: Path, entry: dict[str, Any]) -> int | None:
    """Give `entry` the next number and keep the database's copy of its line. Call inside the
    transaction that records the event; append with `catch_up` right after its commit.

    Returns None, and records nothing, when the journal is ahead of the database (a restored
    copy): the number would be one the journal already used.
    """
    known = database_seq(db)
    if journal_seq(path) > known:
        return None
    # The file exists before its first number is committed: between another run's commit and
    # its append, the journal is then behind (the database's copy fills the gap), never
    # missing, which only a lost or moved journal is.
    _create(path)
    return numbering.number_entry(db, entry)


def _create(path: Path) -> None:
    """The journal file, made (empty, its folder fsynced) when it is not there yet."""
    if path.exists():
        return
    # The folder is its owner's alone: whoever could write in it could replace the journal.
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    _fsync_folder(path.parent)


def catch_up(db: Database, path: Path) -> int:
    """Append, in order and fsynced, every line the database holds that the journal lacks (the
    one just taken, and any a crash left out). Returns how many were appended. Raises OSError
    when the journal cannot be written."""
    faults.checkpoint("journal_append")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    new = not path.exists()
    with _locked(path) as descriptor:
        written = journal_seq(path)
        pending = numbering.lines_after(db, written)
        if pending:
            os.write(descriptor, "".join(f"{line}\n" for line in pending).encode("utf-8"))
            os.fsync(descriptor)
    if new:
        _fsync_folder(path.parent)
    return len(pending)


def append(path: Path, entry: dict[str, Any]) -> None:
    """Append one line that no database holds (the mark `resume` leaves), fsynced."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = (json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    with _locked(path) as descriptor:
        os.write(descriptor, data)
        os.fsync(descriptor)


@contextmanager
def _locked(path: Path) -> Iterator[int]:
    """The journal open for appending, under an exclusive lock: two runs that catch up at once
    never write one line twice."""
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        _drop_torn_line(descriptor)
        yield descriptor
    finally:
        os.close(descriptor)


def _drop_torn_line(descriptor: int) -> None:
    """Cut off a last line without its line break: an append a crash cut short (its line comes
    again from the database's copy, as the reader never counted it). Left there, the next line
    would be glued to it, and the two read as one damaged line that holds posting."""
    size = os.fstat(descriptor).st_size
    start = max(0, size - _TAIL_BYTES)
    tail = os.pread(descriptor, size - start, start)
    if not tail or tail.endswith(b"\n"):
        return
    cut = tail.rfind(b"\n")
    if cut < 0 and start:
        return  # no line is this long: not a torn append, and not ours to cut
    os.ftruncate(descriptor, start + cut + 1)


def _fsync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


#: the fields every line has, then the ones each kind adds, with their types: what the hold,
#: `autoretto journal` and `resume` read from a line (a line without them proves nothing)
_COMMON_FIELDS: dict[str, type] = {"seq": int, "kind": str, "at": str}
_POST_FIELDS: dict[str, type] = {"post_id": int, "episode_id": int, "channel": str, "platform": str}
KIND_FIELDS: dict[str, dict[str, type]] = {
    "attempt": _POST_FIELDS,
    "publish": _POST_FIELDS,
    "stamp": {"channel": str, "slot": str, "slot_at": str},
    "resumed": {},  # the mark `resume` leaves where the journal goes on from the database
}


def _open(path: Path) -> BinaryIO | None:
    """The journal open for reading; None when there is none (nothing was numbered yet, or it
    was lost: `restore_hold` tells those apart). JournalDamaged when something else is there."""
    try:
        return open(path, "rb")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except IsADirectoryError:
        raise JournalDamaged(path, "is a folder, not the journal file") from None
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise JournalDamaged(path, f"cannot be read ({reason})") from None


def _entry(path: Path, number: int, raw: bytes) -> dict[str, Any]:
    """Line `number` of the journal (`raw`, without its line break), checked."""

    def damaged(problem: str) -> JournalDamaged:
        return JournalDamaged(path, problem, line=number)

    try:
        entry = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise damaged("is not UTF-8 text") from None
    except ValueError:
        raise damaged("is not a JSON line") from None
    if not isinstance(entry, dict):
        raise damaged("is not a JSON object")
    kind = entry.get("kind")
    fields = KIND_FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        raise damaged(f"has no kind this version knows (kind {shown(kind)})")
    lacking = [
        name
        for name, wanted in {**_COMMON_FIELDS, **fields}.items()
        # bool is an int to Python; a seq of `true` is no number
        if not isinstance(entry.get(name), wanted) or isinstance(entry.get(name), bool)
    ]
    if not lacking and entry["seq"] < 1:
        lacking.append("seq")
    if not lacking and kind == "stamp":
        try:
            from_iso(entry["slot_at"])
        except ValueError:
            lacking.append("slot_at")
    if lacking:
        raise damaged(f"is a {kind} line without a usable {', '.join(lacking)}")
    return entry


def entries(path: Path) -> list[dict[str, Any]]:
    """Every complete line of the journal, checked (a torn last line from a crash is skipped).
    JournalDamaged names the first line that cannot be read."""
    reader = _open(path)
    if reader is None:
        return []
    with reader:
        data = reader.read()
    # The last piece is empty, or a line a crash left without its line break.
    return [_entry(path, number, raw) for number, raw in enumerate(data.split(b"\n")[:-1], 1)]


def journal_seq(path: Path) -> int:
    """The highest sequence number in the journal, reading (and checking) only its tail: the
    journal grows with every post, and status and every idle run-due ask for its number."""
    reader = _open(path)
    if reader is None:
        return 0
    with reader:
        size = reader.seek(0, os.SEEK_END)
        start = max(0, size - _TAIL_BYTES)
        reader.seek(start)
        pieces = reader.read().split(b"\n")
    # The first piece of a tail cut from a longer journal is the end of a line that starts
    # before it; the last one is empty, or torn by a crash.
    first = 1 if start else 0
    highest = 0
    for index in range(first, len(pieces) - 1):
        try:
            entry = _entry(path, index + 1, pieces[index])
        except JournalDamaged as error:
            if not start:
                raise
            number = _lines_before(path, start) + index + 1
            raise JournalDamaged(path, error.problem, line=number) from None
        highest = max(highest, entry["seq"])
    return highest


def _lines_before(path: Path, offset: int) -> int:
    """How many line breaks the journal has before byte `offset` (to name a damaged line found
    in the tail by its number; read only then)."""
    count = 0
    with open(path, "rb") as reader:
        while offset > 0:
            chunk = reader.read(min(offset, 1 << 20))
            if not chunk:
                break
            count += chunk.count(b"\n")
            offset -= len(chunk)
    return count


@dataclass(frozen=True)
class Hold:
    """Posting is held: the database and the journal disagree in a way only a person can
    settle."""

    database_seq: int
    journal_seq: int
    path: Path

    @property
    def restored(self) -> bool:
        return self.journal_seq > self.database_seq

    @property
    def reason(self) -> str:
        check = (
            "Posting is held. Check what the platforms already have (`autoretto journal` lists "
            "what the database forgot), then run `autoretto resume --checked`"
        )
        if self.restored:
            return (
                f"the database knows publishes up to #{self.database_seq} but the journal has "
                f"#{self.journal_seq}: it was restored from an older copy. {check}"
            )
        if not self.path.exists():
            where = "is missing"
        elif self.journal_seq == 0:
            where = "is empty and the lines the database numbered are lost"
        else:
            where = f"ends at #{self.journal_seq} and the lines after it are lost"
        return (
            f"the publish journal {self.path} {where}, but the database is at "
            f"#{self.database_seq} (the journal was moved, deleted or restored itself): a "
            f"restore of the database cannot be ruled out. {check}"
        )


def restore_hold(db: Database, path: Path) -> Hold | None:
    # The journal first: a line always reaches the database before the journal, so an event
    # committed by another run between these two reads can never look like a restore.
    written = journal_seq(path)
    known = database_seq(db)
    if written > known:
        return Hold(known, written, path)
    # Looked at after the database: the run that committed `known` made the file before its
    # commit, so a file absent now was removed, not yet to come.
    if known > 0 and not path.exists():
        # No journal at all where the database has numbers (it is made before the first
        # number is committed): it was lost or moved, and with it whatever would tell a
        # restored database from this one.
        return Hold(known, written, path)
    # A crash between a commit and its line leaves the last lines out; the database's copies
    # fill the gap. Lines it has no copy of cannot be told apart from a restore.
    if written < known and numbering.count_lines_after(db, written) < known - written:
        return Hold(known, written, path)
    return None


def missing_entries(db: Database, path: Path) -> list[dict[str, Any]]:
    """The journal's lines that a restored database does not know."""
    known = database_seq(db)
    return [entry for entry in entries(path) if entry["seq"] > known]
