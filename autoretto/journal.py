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
That place is worked out once, by `init` (or, in a home made before the record, by the first
command that finds the journal there), and recorded in the home (`journal.place`): cron, a
systemd unit and a login shell then find the same journal whatever their HOME and
XDG_STATE_HOME say.

A journal that cannot be read (a line that is not UTF-8 or JSON, or lacks the fields of its
kind; a folder where the file should be) proves nothing about what went out: every read here
raises JournalDamaged, naming the file and the line, and posting holds like after a restore.
Only a last line without its line break (a crash in the middle of an append) is passed over,
and cut off before the next append.

Two kinds of journal sit behind these functions: a file (a `Path`, above) and, when several hosts
share one PostgreSQL store, write-once objects in a bucket (`BucketJournal`, below), where a
restore of the database cannot roll it back and where every host sees the same one.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Union

from . import faults
from .bucket import Bucket, BucketError
from .clock import from_iso, iso, now
from .errors import AutorettoError, Exit, JournalDamaged, PostingHeld, shown
from .ledger import journal as numbering
from .ledger import meta

if TYPE_CHECKING:
    from .ledger.store import Store as Database

_TAIL_BYTES = 64 * 1024
JOURNAL_NAME = "publish.journal"
#: where the journal lived before it moved out of the home; adopted once on upgrade
LEGACY_PATH = Path("journal") / JOURNAL_NAME

#: the file in the home naming the default journal's place, as `init` decided it
PLACE_NAME = "journal.place"

#: the journal: a file, or objects in a bucket (`bucket_journal`)
Journal = Union[Path, "BucketJournal"]


class JournalUnreachable(BucketError):
    """The journal's bucket does not answer for now: nothing is sent until it does (the next
    run tries again)."""

    exit_code = Exit.RETRY


class JournalConflict(PostingHeld):
    """The journal holds a number this database gave to another line: another copy of the
    database numbered it first, so this one was restored from an older copy."""


#: what writing the journal raises when it cannot be written for now: nothing is sent
WRITE_ERRORS = (OSError, BucketError)


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
    """The default journal's path for `home`: the place recorded in the home, else the XDG
    state folder's (`default_path`), recorded once the journal is there. An installation from
    before the journal moved out of the home has its journal copied there first, once (the old
    file stays)."""
    recorded = recorded_place(home)
    path = recorded or default_path(home)
    old = home / LEGACY_PATH
    if not path.exists() and old.is_file():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.partial")
        shutil.copyfile(old, partial)
        with open(partial, "rb+") as copied:
            os.fsync(copied.fileno())
        os.replace(partial, path)
        _fsync_folder(path.parent)
    if recorded is None and path.exists():
        # A home from before the record, or whose journal was made after `init`: the journal
        # is here, so this is its place from now on, whatever the next environment says.
        record_place(home, path, missing_ok=True)
    return path


def recorded_place(home: Path) -> Path | None:
    """The journal's place recorded in `home` (`journal.place`), or None when none is.

    Raises AutorettoError, naming the file, when it cannot be read or names no absolute path.
    """
    record = home / PLACE_NAME
    try:
        text = record.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or "not UTF-8 text"
        raise AutorettoError(
            f"{record}: cannot read where the publish journal is ({reason}); make it readable "
            "by you, or put the journal's absolute path in it (`autoretto doctor` shows it)"
        ) from None
    place = text.strip()
    if not place.startswith("/") or not place.isprintable():
        raise AutorettoError(
            f"{record}: does not name the publish journal's file; write its absolute path on "
            f"one line (by default {default_path(home)})"
        )
    return Path(place)


def record_place(home: Path, path: Path, *, missing_ok: bool = False) -> None:
    """Record `path` as the journal's place in `home` (mode 0600, replaced atomically).

    With `missing_ok` (a command that only happens to see the journal), a home that is not the
    caller's own, or that cannot be written, is left as it is: the next command records it.
    """
    record = home / PLACE_NAME
    if missing_ok:
        try:
            if home.stat().st_uid != os.getuid():
                return  # another user looking at this home: the file would not be theirs
        except OSError:
            return
    partial = record.with_name(f".{record.name}.{os.getpid()}")
    try:
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as writer:
            writer.write(f"{path.absolute()}\n")
            writer.flush()
            os.fsync(writer.fileno())
        os.replace(partial, record)
    except OSError:
        partial.unlink(missing_ok=True)
        if not missing_ok:
            raise


def placement_warnings(
    path: Journal, home: Path, database: Path, *, shared_store: bool = False
) -> list[str]:
    """What `doctor` says about where the journal is kept: inside the home (a restore of the
    home rolls it back too); a file on this host while the store is shared by several (each
    host would keep a journal of its own). (The same file system as the database:
    `same_disk_warning`, said once.)"""
    if isinstance(path, BucketJournal):
        return []
    found = []
    if shared_store:
        found.append(
            f"the store is PostgreSQL but the publish journal {path} is a file on this host: "
            "every host keeps a journal of its own, and a database restored from an older dump "
            "goes unnoticed by a host whose journal never saw what it forgot; set `journal = "
            '"s3://BUCKET/PREFIX"` (or `[media] url`) on every host, so they share one'
        )
    if path.absolute().is_relative_to(home.absolute()):
        found.append(
            f"the publish journal {path} is inside the home: restoring the home from a backup "
            "rolls it back with the database, and the restore goes unnoticed; remove "
            "`journal = ...` to keep it in the XDG state folder, or point it at another disk"
        )
    return found


def shares_the_database_disk(path: Journal, database: Path) -> bool:
    """Is the journal a file on the same file system as the database (a disk that fails or is
    restored takes both)?"""
    if isinstance(path, BucketJournal) or not database.exists():
        return False
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    return existing.stat().st_dev == database.stat().st_dev


#: what `doctor` has said once in this home (`said_once`), one line each
SAID_NAME = "doctor.said"


def same_disk_warning(path: Path, home: Path) -> str | None:
    """The warning for a journal on the database's file system, the first time `doctor` finds
    it for this journal (remembered in the home's `doctor.said`); None after that. On a box
    with one disk nothing else is possible: it is said once, with what to back up."""
    note = f"journal-same-disk {path}"
    said = home / SAID_NAME
    try:
        if note in said.read_text(encoding="utf-8").splitlines():
            return None
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError):
        return None  # unreadable: better unsaid than said at every run
    try:
        descriptor = os.open(said, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(descriptor, "a", encoding="utf-8") as writer:
            writer.write(note + "\n")
    except OSError:
        pass  # a read-only home: said again next time
    return (
        f"the publish journal {path} is on the same file system as the database: a disk that "
        f"fails or is restored takes both. Back up the journal's folder {path.parent} with the "
        "home, onto another disk or machine, or set `journal = ...` to a file on another disk "
        "(said once; `doctor --json` keeps it as journal.same_file_system)"
    )


def database_seq(db: Database) -> int:
    found = meta.get(db, "journal_seq")
    return 0 if found is None else int(found)


def take(db: Database, path: Path, entry: dict[str, Any]) -> int | None:
    """Give `entry` the next number and keep the database's copy of its line. Call inside the
    transaction that records the event; append with `catch_up` right after its commit.

    Returns None, and records nothing, when the journal is ahead of the database (a restored
    copy): the number would be one the journal already used.
    """
    if isinstance(path, BucketJournal) and path.cleared:
        # The bucket was found not ahead once in this process: the number is compared with
        # nothing, so the counter row is locked only by taking it (the store's one turn-taking
        # point, ledger.postgres), not a statement earlier.
        known = database_seq(db)
    else:
        known = numbering.hold_numbering(db)
    if isinstance(path, BucketJournal):
        try:
            if path.ahead_of_taking(known):
                return None
            path.create()
        except JournalUnreachable:
            # A publish that happened is recorded all the same, its line left to catch up:
            # putting it later finds a number another copy of the database took (a conflict,
            # which holds posting). An attempt's line must be put before its request goes
            # out, so it waits for the bucket anyway. A journal this run has not seen made
            # yet is not numbered into.
            if not path.created:
                raise
        return numbering.number_entry(db, entry)
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


def catch_up(db: Database, path: Journal) -> int:
    """Append, in order and fsynced, every line the database holds that the journal lacks (the
    one just taken, and any a crash left out). Returns how many were appended. Raises one of
    WRITE_ERRORS when the journal cannot be written (JournalConflict: a bucket's journal holds
    one of the numbers for another line)."""
    faults.checkpoint("journal_append")
    if isinstance(path, BucketJournal):
        return path.catch_up(db)
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


def append(path: Journal, entry: dict[str, Any]) -> None:
    """Append one line that no database holds (the mark `resume` leaves), fsynced."""
    if isinstance(path, BucketJournal):
        path.append(entry)
        return
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
    # a reply to a comment (issue 28): its attempt before the request, its publish after
    "reply_attempt": {"reply_id": int, "channel": str, "platform": str},
    "reply": {"reply_id": int, "channel": str, "platform": str},
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
    return _checked(raw, lambda problem: JournalDamaged(path, problem, line=number))


def _checked(raw: bytes, damaged: Callable[[str], JournalDamaged]) -> dict[str, Any]:
    """One journal line, checked; `damaged(problem)` is what is raised when it is unusable."""
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


def entries(path: Journal) -> list[dict[str, Any]]:
    """Every complete line of the journal, checked (a torn last line from a crash is skipped).
    JournalDamaged names the first line that cannot be read."""
    if isinstance(path, BucketJournal):
        return path.entries()
    reader = _open(path)
    if reader is None:
        return []
    with reader:
        data = reader.read()
    # The last piece is empty, or a line a crash left without its line break.
    return [_entry(path, number, raw) for number, raw in enumerate(data.split(b"\n")[:-1], 1)]


def journal_seq(path: Journal, *, near: int | None = None) -> int:
    """The highest sequence number in the journal, reading (and checking) only its tail: the
    journal grows with every post, and status and every idle run-due ask for its number. A
    bucket's journal is asked from `near` on (the database's number), see BucketJournal."""
    if isinstance(path, BucketJournal):
        return path.highest(near)[0]
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
    path: Journal
    missing: bool = False  # the journal itself is not there
    conflict: bool = False  # its last line is another than the database's line of that number

    @property
    def restored(self) -> bool:
        return self.journal_seq > self.database_seq

    @property
    def reason(self) -> str:
        check = (
            "Posting is held. Check what the platforms already have (`autoretto journal` lists "
            "what the database forgot), then run `autoretto resume --checked`"
        )
        if self.conflict:
            return (
                f"the publish journal {self.path} holds #{self.journal_seq} for another event "
                f"than the database's #{self.journal_seq}: another copy of the database "
                f"numbered it, so this one was restored from an older copy. {check}"
            )
        if self.restored:
            return (
                f"the database knows publishes up to #{self.database_seq} but the journal has "
                f"#{self.journal_seq}: it was restored from an older copy. {check}"
            )
        if self.missing:
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


def restore_hold(db: Database, path: Journal) -> Hold | None:
    if isinstance(path, BucketJournal):
        return path.restore_hold(db)
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
        return Hold(known, written, path, missing=True)
    # A crash between a commit and its line leaves the last lines out; the database's copies
    # fill the gap. Lines it has no copy of cannot be told apart from a restore.
    if written < known and numbering.count_lines_after(db, written) < known - written:
        return Hold(known, written, path)
    return None


def missing_entries(db: Database, path: Journal) -> list[dict[str, Any]]:
    """The journal's lines that a restored database does not know (a bucket's, from the first
    one that is another than the database's line of its number)."""
    known = database_seq(db)
    if isinstance(path, BucketJournal):
        return path.missing_entries(db, known)
    return [entry for entry in entries(path) if entry["seq"] > known]


# -- the journal in a bucket --------------------------------------------------------------------

SEQ_DIGITS = 12
#: the object that says the journal was made (before its first number), beside the lines: a
#: name with a dot sorts before every number, so no listing from a number on ever meets it
CREATED = ".created"
_OBJECT_FIX = "mend or delete that object (keep a copy of it first)"


@cache
@cache
def bucket_journal(url: str) -> BucketJournal:
    """The journal of `url` (`s3://bucket/prefix`): its objects are `<prefix>/journal/...`. One
    per process and URL, so what a run learnt once (the journal exists, it was not ahead of the
    database) holds for the run."""
    return BucketJournal(Bucket(url).under("journal"))


class BucketJournal:
    """The publish journal as write-once objects in a bucket, for several hosts that share one
    PostgreSQL store: every host sees the same journal, and a restore of the database (a
    pg_dump put back) cannot roll it back.

    Each numbered line is an object of its own, `<prefix>/journal/<seq>`, its number zero-padded
    to 12 digits so that key order is number order, written with a conditional put (S3's
    `If-None-Match: *`): a number is an object that is written once, by whoever comes first.
    Catching up puts the database's pending lines in order; a key already taken with the same
    line is another host that caught up first; one taken with another line is a number this
    database gave to something else, so it was restored from an older copy, and posting holds
    (JournalConflict, then the hold of `restore_hold`) until a person resumes.

    Reads stay cheap however long the journal grows: nothing ever lists it whole except
    `autoretto journal` after a restore. The highest number is asked with the database's own
    number `near` in hand: one listing of the keys from `near` on (StartAfter the key before
    it; normally it finds `near` alone) and one read of the last key found, which is checked
    like a file's line. An empty answer means the journal is behind the database (a crash, or
    the bucket unreachable, after a commit): the keys before `near` are then listed in windows
    that double back from it, so a journal one line behind costs one more listing. As lines are
    only ever put in order, the last key of the first window that has any is the highest. The
    database's number is read before and after (`restore_hold`), so an event another host
    commits meanwhile never looks like a restore.

    `.created` is put (after checking once that the bucket honours conditional puts) before the
    first number is taken: a journal without it while the database has numbers was lost or
    moved, as a missing file is. A bucket that does not answer raises JournalUnreachable: the
    run sends nothing and tries again later.
    """

    def __init__(self, bucket: Bucket) -> None:
        self.bucket = bucket
        self._created = False
        self._clear_through: int | None = None  # found not ahead of this number (take)

    def __str__(self) -> str:
        return self.bucket.place.url

    def __repr__(self) -> str:
        return f"BucketJournal({self.bucket.place.url!r})"

    @staticmethod
    def name(seq: int) -> str:
        return f"{seq:0{SEQ_DIGITS}d}"

    def where(self, name: str) -> str:
        return f"{self.bucket.place.url}{name}"

    @contextmanager
    def _reaching(self) -> Iterator[None]:
        """A bucket that does not answer for now as JournalUnreachable (waiting helps); one a
        person must fix (a refused credential, no such bucket) stays a BucketError."""
        try:
            yield
        except JournalUnreachable:
            raise
        except BucketError as error:
            if not error.passing:
                raise
            raise JournalUnreachable(
                f"the publish journal {self} cannot be reached: {error}"
            ) from None

    def _numbers(self, start_after: int) -> Iterator[int]:
        """The numbers of the lines after `start_after`, in order (a listing, page by page)."""
        with self._reaching():
            for name in self.bucket.names(start_after=self.name(start_after)):
                if name.startswith("."):
                    continue
                if not re.fullmatch(rf"\d{{{SEQ_DIGITS}}}", name):
                    raise JournalDamaged(
                        self.where(name),
                        f"is not named by a journal number ({SEQ_DIGITS} digits)",
                        fix="move that object out of the journal's folder",
                    )
                yield int(name)

    def _line(self, seq: int, *, missing_ok: bool = False) -> dict[str, Any] | None:
        """Line `seq`, read and checked; JournalDamaged names its object. None when there is no
        such object and `missing_ok`."""
        where = self.where(self.name(seq))

        def damaged(problem: str) -> JournalDamaged:
            return JournalDamaged(where, problem, fix=_OBJECT_FIX)

        with self._reaching():
            raw = self.bucket.read(self.name(seq))
        if raw is None:
            if missing_ok:
                return None
            raise damaged("was listed but cannot be read")
        entry = _checked(raw.rstrip(b"\n"), damaged)
        if entry["seq"] != seq:
            raise damaged(f"holds #{entry['seq']}, not the number of its name")
        return entry

    def highest(self, near: int | None) -> tuple[int, dict[str, Any] | None]:
        """The highest number in the journal and its line (0, None: none), asked from `near`
        on (the database's number; None lists from the start)."""
        near = max(0, near or 0)
        found = list(self._numbers(max(0, near - 1)))
        step = 2
        while not found and near > 1:
            low = max(1, near - step)
            found = list(self._numbers(low - 1))
            if low == 1:
                break
            step *= 2
        if not found:
            return 0, None
        self._created = True
        return found[-1], self._line(found[-1])

    def ahead_of(self, known: int) -> bool:
        """Has the journal any number after `known`? (One listing, of its first page.)"""
        return next(self._numbers(known), None) is not None

    def ahead_of_taking(self, known: int) -> bool:
        """`ahead_of`, asked by `take` inside a write transaction: asked of the bucket once a
        process (the first number it takes), not once a number. A number taken later in the
        run cannot reuse one of the journal's unseen: all hosts number through this one
        database, and a database restored under a running process is caught by the
        conditional put of the line, which finds the number taken with another line
        (JournalConflict: nothing is sent, posting holds). So no request to the bucket is
        made while the store's write lock is held, but the first."""
        if self._clear_through is not None and known >= self._clear_through:
            return False
        if self.ahead_of(known):
            return True
        self._clear_through = known
        return False

    @property
    def cleared(self) -> bool:
        """Found not ahead of the database once in this process (`ahead_of_taking`)."""
        return self._clear_through is not None

    @property
    def created(self) -> bool:
        """Known (in this process) to have been made."""
        return self._created

    def exists(self) -> bool:
        if not self._created:
            with self._reaching():
                self._created = self.bucket.facts(CREATED) is not None
        return self._created

    def create(self) -> None:
        """Made, before its first number is taken: the bucket is checked once to honour
        conditional puts (BucketError in one line when it does not), then `.created` put."""
        if self.exists():
            return
        with self._reaching():
            self.bucket.check_conditional_puts()
            self.bucket.put_new(CREATED, json.dumps({"created": iso(now())}).encode("utf-8"))
        self._created = True

    def _differs(self, db: Database, entry: dict[str, Any]) -> bool:
        """Is `entry` another line than the database's own of its number (when it has one)?"""
        copy = numbering.line_of(db, entry["seq"])
        return copy is not None and json.loads(copy) != entry

    def _conflict(self, seq: int) -> JournalConflict:
        return JournalConflict(
            f"the publish journal's {self.where(self.name(seq))} holds #{seq} for another event "
            f"than this database's #{seq}: another copy of the database numbered it, so this "
            "one was restored from an older copy. Posting is held. Check what the platforms "
            "already have (`autoretto journal` lists what the database forgot), then run "
            "`autoretto resume --checked`"
        )

    def _put(self, seq: int, entry: dict[str, Any], line: str) -> bool:
        """Put line `seq`; True when this call wrote it, False when another host had (the same
        line); JournalConflict when the number holds another line."""
        with self._reaching():
            if self.bucket.put_new(self.name(seq), line.encode("utf-8")):
                return True
        if self._line(seq) != entry:
            raise self._conflict(seq)
        return False

    def catch_up(self, db: Database) -> int:
        """Put, in order, every line the database holds after the journal's highest number."""
        self.create()
        written, last = self.highest(database_seq(db))
        if last is not None and self._differs(db, last):
            raise self._conflict(written)
        pending = numbering.lines_after(db, written)
        for line in pending:
            entry = json.loads(line)
            self._put(entry["seq"], entry, line)
        return len(pending)

    def append(self, entry: dict[str, Any]) -> None:
        """Put one line that no database holds (the mark `resume` leaves)."""
        self.create()
        self._put(entry["seq"], entry, json.dumps(entry, ensure_ascii=False, sort_keys=True))

    def entries(self, after: int = 0) -> list[dict[str, Any]]:
        """Every line numbered after `after`, checked, in order (one read each)."""
        return [self._line(seq) for seq in list(self._numbers(after))]

    def restore_hold(self, db: Database) -> Hold | None:
        # The database's number is the hint; the journal is read before the database's number
        # that counts, as for a file.
        written, last = self.highest(database_seq(db))
        known = database_seq(db)
        if written > known:
            return Hold(known, written, self)
        if written == 0 and known > 0 and not self.exists():
            return Hold(known, written, self, missing=True)
        if last is not None and self._differs(db, last):
            return Hold(known, written, self, conflict=True)
        if written < known and numbering.count_lines_after(db, written) < known - written:
            return Hold(known, written, self)
        return None

    def missing_entries(self, db: Database, known: int) -> list[dict[str, Any]]:
        """The lines after `known`, and before them those (counted back from the database's
        number) that are other lines than the database's of their number."""
        ahead = self.entries(known)
        differing: list[dict[str, Any]] = []
        seq = min(known, self.highest(known)[0])
        while seq > 0:
            copy = numbering.line_of(db, seq)
            entry = self._line(seq, missing_ok=True) if copy is not None else None
            if entry is None or json.loads(copy) == entry:
                break
            differing.insert(0, entry)
            seq -= 1
        return differing + ahead
