"""The SQLite store: schema, connection settings, migrations.

One database file is the single source of truth. It is opened in WAL mode with a busy
timeout so overlapping cron runs wait for each other instead of failing, and in autocommit
mode so that every multi-statement change is an explicit `transaction()` (BEGIN IMMEDIATE:
the write lock is taken up front, so two runs never interleave a read-then-write).

Schema changes are numbered migrations; `PRAGMA user_version` is the schema version.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import StoreError

if TYPE_CHECKING:
    from sqlite_utils import Database

BUSY_TIMEOUT_SECONDS = 60


def _import_sqlite_utils() -> Any:
    # sqlite-utils imports numpy (and pandas) at import time when they are installed, only to
    # map their scalar types. We never store those, and numpy costs `status` and an idle
    # `run-due` more than the rest of their start-up together, so keep it out.
    if "sqlite_utils" in sys.modules:
        return sys.modules["sqlite_utils"]
    blocked = [name for name in ("numpy", "pandas") if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        import sqlite_utils
    finally:
        for name in blocked:
            del sys.modules[name]
    return sqlite_utils


def _migration_1(db: Database) -> None:
    db["channels"].create(
        {
            "name": str,
            "schedule_fingerprint": str,
            "schedule_seen_at": str,  # when a run first saw the current schedule
            "last_release_at": str,  # the stamp: slot instant of the latest release
            "decided_through": str,  # every slot up to here is decided (released or missed)
            "claim_run_id": str,
            "claim_slot": str,
            "claim_slot_at": str,
            "claim_heartbeat_at": str,
            "created_at": str,
        },
        pk="name",
    )
    db["slots"].create(
        {
            "channel": str,
            "slot": str,  # local wall-time key, e.g. 2026-11-29T10:00
            "slot_at": str,  # UTC instant
            "state": str,  # claimed | filled | missed | failed
            "run_id": str,
            "updated_at": str,
        },
        pk=("channel", "slot"),
    )
    db["slots"].create_index(["channel", "slot_at"])
    db["decisions"].create(
        {
            "id": int,
            "channel": str,
            "slot": str,
            "slot_at": str,
            "platform": str,
            "outcome": str,
            "reason": str,
            "decided_at": str,
            "post_id": int,
            "run_id": str,
        },
        pk="id",
    )
    db["decisions"].create_index(["channel", "slot", "platform"], unique=True)
    db["decisions"].create_index(["decided_at"])
    db["episodes"].create(
        {
            "id": int,
            "channel": str,
            "state": str,  # making | ready | rejected | approved
            "title": str,
            "description": str,
            "tags": str,  # JSON list
            "texts": str,  # JSON: platform -> ready-to-post text
            "videos": str,  # JSON: format -> absolute path
            "thumbnail": str,
            "audio": str,
            "duration": float,
            "tempo": float,
            "beats": str,  # JSON list of seconds
            "gates": str,  # JSON list of {name, passed, reason}
            "ai_generated": int,
            "fingerprint": str,
            "source": str,  # JSON: where it came from
            "off_schedule": int,  # 1: only `post-now` posts it
            "reason": str,  # why it was rejected
            "run_id": str,  # the run making it
            "heartbeat_at": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="id",
    )
    db["episodes"].create_index(["channel", "state", "id"])
    db["posts"].create(
        {
            "id": int,
            "episode_id": int,
            "channel": str,
            "platform": str,
            "state": str,  # queued | sending | published | may_be_live | failed | needs_person
            "url": str,
            "platform_post_id": str,
            "attempts": int,
            "reason": str,
            "slot": str,  # the slot that posted it (None for post-now)
            "run_id": str,  # the run moving it now
            "heartbeat_at": str,
            "created_at": str,
            "updated_at": str,
            "published_at": str,
        },
        pk="id",
        foreign_keys=[("episode_id", "episodes", "id")],
    )
    db["posts"].create_index(["episode_id", "platform"], unique=True)
    db["posts"].create_index(["channel", "platform", "state"])
    db["post_attempts"].create(
        {
            "id": int,
            "post_id": int,
            "run_id": str,
            "marker": str,  # what the platform lets us find this attempt by
            "started_at": str,
            "ended_at": str,
            "outcome": str,
            "error": str,
            "handles": str,  # JSON: durable platform handles saved before irreversible steps
        },
        pk="id",
        foreign_keys=[("post_id", "posts", "id")],
    )
    db["post_attempts"].create_index(["post_id"])
    db["runs"].create(
        {
            "id": str,
            "kind": str,  # run-due | post-now | make
            "pid": int,
            "started_at": str,
            "ended_at": str,
            "outcome": str,
        },
        pk="id",
    )
    db["accounts"].create(
        {
            "platform": str,
            "label": str,  # "default", or a name a channel picks with its config
            "account_id": str,  # the platform's id of the connected account
            "name": str,
            "state": str,  # connected | reconnect
            "reason": str,
            "sealed": bytes,  # AES-GCM sealed token bundle
            "meta": str,  # JSON, no secrets
            "connected_at": str,
            "updated_at": str,
        },
        pk=("platform", "label"),
    )
    db["usage"].create(
        {
            "platform": str,
            "account": str,
            "bucket": str,  # e.g. "insert", "units", "posts"
            "day": str,  # the platform's own day (e.g. the Pacific day for YouTube)
            "used": int,
        },
        pk=("platform", "account", "bucket", "day"),
    )


def _migration_2(db: Database) -> None:
    db["meta"].create({"key": str, "value": int}, pk="key")
    db["meta"].insert({"key": "journal_seq", "value": 0})
    db["incidents"].create(
        {
            "id": int,
            "opened_at": str,
            "closed_at": str,
            "failures": int,  # failed attempts counted while it was open
            "reason": str,  # the failure that opened it
            "last_failure_at": str,
        },
        pk="id",
    )


def _migration_3(db: Database) -> None:
    # Platform credits reserved when a post is queued and charged once it is live (X).
    db["credit_ledger"].create(
        {
            "post_id": int,
            "platform": str,
            "channel": str,
            "account": str,
            "state": str,  # reserved | charged | released
            "credits": int,  # millionths of the platform's currency unit (X: USD)
            "reserved_at": str,
            "charged_at": str,
            "released_at": str,
            "reason": str,
        },
        pk="post_id",
    )
    db["credit_ledger"].create_index(["platform", "state", "charged_at"])
    # A platform paused for every channel until an instant (X credits exhausted).
    db["pauses"].create(
        {"platform": str, "paused_until": str, "reason": str, "set_at": str}, pk="platform"
    )


def _migration_4(db: Database) -> None:
    # Human pace: a post may wait for its moment (`not_before`) after the slot it serves.
    db["posts"].add_column("not_before", str)
    db["posts"].add_column("slot_at", str)
    db["posts"].create_index(["state", "not_before"])


def _migration_5(db: Database) -> None:
    # What an episode is: a slot `episode`, a long `film` (its own cadence), a `compilation`.
    db["episodes"].add_column("kind", str, not_null_default="episode")
    # Public counters of published posts, as a time series (`autoretto stats`).
    db["post_stats"].create(
        {
            "post_id": int,
            "at": str,
            "views": int,
            "likes": int,
            "comments": int,
            "reposts": int,
            "replies": int,
        },
        pk=("post_id", "at"),
        foreign_keys=[("post_id", "posts", "id")],
    )
    # An episode's copy in other languages, ready to post by hand.
    db["translations"].create(
        {"episode_id": int, "language": str, "texts": str, "created_at": str, "applied_at": str},
        pk=("episode_id", "language"),
        foreign_keys=[("episode_id", "episodes", "id")],
    )


def _migration_6(db: Database) -> None:
    # Never twice, proven from outside (issue 15).
    # A post's identity on the platform, derived from what is posted and where.
    db["posts"].add_column("identity", str)
    # The database's own copy of every journal line, so a line lost to a crash is written again.
    db["journal_entries"].create({"seq": int, "entry": str}, pk="seq")
    # Every schedule a channel had, from when a run first saw it: what each past slot was owed.
    db["schedules"].create(
        {"id": int, "channel": str, "fingerprint": str, "spec": str, "seen_at": str}, pk="id"
    )
    db["schedules"].create_index(["channel", "seen_at"])
    # A slot's platform that waits for a post still on its way (busy is not a decision).
    db["slot_waits"].create(
        {
            "channel": str,
            "slot": str,
            "slot_at": str,
            "platform": str,
            "reason": str,
            "since": str,
            "run_id": str,  # the run settling it now (a claim, like a slot's)
            "heartbeat_at": str,
        },
        pk=("channel", "slot", "platform"),
    )
    # Making is claimed per channel, like slots.
    db["channels"].add_column("make_run_id", str)
    db["channels"].add_column("make_heartbeat_at", str)


MIGRATIONS: list[Callable[[Database], None]] = [
    _migration_1,
    _migration_2,
    _migration_3,
    _migration_4,
    _migration_5,
    _migration_6,
]
SCHEMA_VERSION = len(MIGRATIONS)


def open_database(path: Path, *, create: bool = True) -> Database:
    """Open (and migrate) the database at `path`. Raises StoreError in plain words."""
    sqlite_utils = _import_sqlite_utils()
    folder = path.parent
    if not folder.is_dir():
        raise StoreError(
            f"{folder}: the database folder does not exist; run `autoretto init` "
            "or set AUTORETTO_HOME to your Autoretto home"
        )
    if not path.exists() and not create:
        raise StoreError(f"{path}: no database here; run `autoretto init`")
    try:
        connection = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_SECONDS * 1000}")
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute("PRAGMA foreign_keys = ON")
        db = sqlite_utils.Database(connection)
        _migrate(db)
    except sqlite3.DatabaseError as error:
        raise StoreError(f"{path}: cannot open the database ({error})") from None
    return db


def _migrate(db: Database) -> None:
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version == SCHEMA_VERSION:
        return
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the database has schema version {version}, newer than this Autoretto "
            f"({SCHEMA_VERSION}); upgrade Autoretto"
        )
    with transaction(db):
        # Re-read under the write lock: another process may have migrated meanwhile.
        version = db.execute("PRAGMA user_version").fetchone()[0]
        for number in range(version, SCHEMA_VERSION):
            MIGRATIONS[number](db)
            db.execute(f"PRAGMA user_version = {number + 1}")


@contextmanager
def transaction(db: Database) -> Iterator[Database]:
    """BEGIN IMMEDIATE … COMMIT, rolled back on any exception."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def execute(db: Database, sql: str, params: dict[str, Any] | tuple = ()) -> int:
    """Run one write statement; return its rowcount (1 = a compare-and-set won)."""
    return db.execute(sql, params).rowcount


def rows(db: Database, sql: str, params: dict[str, Any] | tuple = ()) -> list[dict[str, Any]]:
    """Run one SELECT; rows as dicts. (A plain cursor: sqlite-utils' `query` wraps every read
    in a savepoint, three statements where one does, which `status` over many channels feels.)"""
    cursor = db.execute(sql, params)
    keys = [column[0] for column in cursor.description]
    return [dict(zip(keys, values, strict=True)) for values in cursor.fetchall()]


def row(db: Database, sql: str, params: dict[str, Any] | tuple = ()) -> dict[str, Any] | None:
    found = rows(db, sql, params)
    return found[0] if found else None


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def loads(text: str | None, default: Any = None) -> Any:
    return default if text is None else json.loads(text)
