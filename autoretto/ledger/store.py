"""The ledger's store: the SQLite file (the default), its schema, connection and migrations,
and the helpers every ledger module runs its statements through (`execute`, `row`, `rows`,
`transaction`). Code outside `autoretto.ledger` never calls these: it calls the ledger.

One database file is the single source of truth. It is opened in WAL mode with a busy
timeout so overlapping cron runs wait for each other instead of failing, and in autocommit
mode so that every multi-statement change is an explicit `transaction()` (BEGIN IMMEDIATE:
the write lock is taken up front, so two runs never interleave a read-then-write).

Schema changes are migrations by name (`apply_migrations`, the `_migrations` table), run the
same way on both stores; `PRAGMA user_version` keeps their count on the SQLite file.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..errors import DISK_FULL, StoreError

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


def _migration_7(db: Database) -> None:
    # `status` reads the decisions of each channel's recent slots: an index that holds their
    # outcome and post too answers from the index alone, not one table page per slot more (a
    # fresh process over 1,000 channels pays for each page it reads).
    db["decisions"].create_index(
        ["channel", "slot", "outcome", "post_id"], index_name="idx_decisions_shown"
    )


def _migration_8(db: Database) -> None:
    # Never twice under a jumping clock (issue 24): a claim's holder is judged gone by its
    # process (same machine) or by a beat counter seen unchanged twice, never by comparing
    # its heartbeat time with another clock (liveness.py).
    db["runs"].add_column("machine", str)
    db["runs"].add_column("process_start", str)
    db["runs"].add_column("beat", int, not_null_default=0)
    db["run_sightings"].create({"run_id": str, "beat": int, "seen_at": str}, pk="run_id")
    # A post whose run went away is looked for only once its request must have ended: the
    # attempt's request timeout, and the moment from which the post may be asked about.
    db["post_attempts"].add_column("timeout_seconds", float)
    db["posts"].add_column("look_from", str)


def _migration_leases(db: Database) -> None:
    # Several hosts on one store (issue 26): work any host could start and only one may do at
    # a time (an account's token refresh) is leased in the store, no longer flocked in a home.
    execute(
        db,
        "CREATE TABLE leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, taken_at TEXT)",
    )


def _migration_episode_files(db: Any) -> None:
    # Media in a bucket (issue 26): each file of an episode that publishing reads, recorded
    # once its upload to `[media] url` completed, with the digest taken while it was local.
    execute(
        db,
        "CREATE TABLE IF NOT EXISTS episode_files (episode_id INTEGER NOT NULL, name TEXT NOT NULL,"
        " key TEXT NOT NULL, sha256 TEXT NOT NULL, size INTEGER NOT NULL, uploaded_at TEXT,"
        " PRIMARY KEY (episode_id, name))",
    )
    # An upload of the episode's files began: objects may be in the bucket that no record
    # names yet (a host killed mid-upload); retention cleans them once the episode is dropped.
    execute(
        db,
        "CREATE TABLE IF NOT EXISTS episode_uploads (episode_id INTEGER PRIMARY KEY,"
        " started_at TEXT NOT NULL)",
    )


def _migration_episode_edits(db: Any) -> None:
    # The page's editor and `episode edit` (issue 27): each change to an episode's copy before
    # it goes out, who made it and when, old and new text side by side.
    execute(
        db,
        "CREATE TABLE IF NOT EXISTS episode_edits (episode_id INTEGER NOT NULL, seq INTEGER"
        " NOT NULL, at TEXT NOT NULL, who TEXT NOT NULL, platform TEXT, field TEXT NOT NULL,"
        " old TEXT, new TEXT, PRIMARY KEY (episode_id, seq))",
    )
    # A slot takes the channel's first episode in line (episodes.next_episode_for): by id,
    # unless `episode move` / `episode swap` gave it another place. NULL: its place is its id.
    execute(db, "ALTER TABLE episodes ADD COLUMN queue_order INTEGER")


def _migration_comments(db: Any) -> None:
    # The audience (issue 28). Each comment under one of our posts, stored once per (platform,
    # account, the platform's id) whatever the overlap of reads, with what became of it:
    #   new | drafted (a draft waits for a person) | approved (a reply is queued) | answered |
    #   ignored | held (spam, abuse, or a question the assistant cannot answer: a person's) |
    #   gone (deleted before it was answered) | mine (our own reply, never answered)
    execute(
        db,
        "CREATE TABLE IF NOT EXISTS comments (id INTEGER PRIMARY KEY, platform TEXT NOT NULL,"
        " account TEXT NOT NULL, platform_comment_id TEXT NOT NULL, post_id INTEGER NOT NULL,"
        " episode_id INTEGER NOT NULL, channel TEXT NOT NULL, parent_id TEXT, author TEXT"
        " NOT NULL, author_id TEXT, text TEXT NOT NULL, published_at TEXT, ref TEXT,"
        " state TEXT NOT NULL, category TEXT, draft TEXT, draft_by TEXT, reason TEXT,"
        " collected_at TEXT NOT NULL, updated_at TEXT NOT NULL)",
    )
    execute(
        db,
        "CREATE UNIQUE INDEX IF NOT EXISTS comments_once ON comments (platform, account,"
        " platform_comment_id)",
    )
    execute(db, "CREATE INDEX IF NOT EXISTS comments_inbox ON comments (channel, state, id)")
    # Where the next read of a post's comments continues (the platform's own cursor).
    execute(
        db,
        "CREATE TABLE IF NOT EXISTS comment_cursors (platform TEXT NOT NULL, account TEXT NOT"
        " NULL, post_id INTEGER NOT NULL, cursor TEXT, read_at TEXT NOT NULL,"
        " PRIMARY KEY (platform, account, post_id))",
    )
    # A reply is a post of its own (posts' states and guards): one per comment, for good.
    #   queued -> sending -> published | may_be_live | failed | needs_person | gone
    execute(
        db,
        "CREATE TABLE IF NOT EXISTS replies (id INTEGER PRIMARY KEY, comment_id INTEGER NOT NULL"
        " UNIQUE, channel TEXT NOT NULL, platform TEXT NOT NULL, account TEXT NOT NULL,"
        " text TEXT NOT NULL, identity TEXT, state TEXT NOT NULL, attempts INTEGER NOT NULL"
        " DEFAULT 0, reason TEXT, approved_by TEXT NOT NULL, not_before TEXT, url TEXT,"
        " platform_reply_id TEXT, run_id TEXT, heartbeat_at TEXT, look_from TEXT,"
        " created_at TEXT NOT NULL, updated_at TEXT NOT NULL, published_at TEXT)",
    )
    execute(db, "CREATE INDEX IF NOT EXISTS replies_state ON replies (platform, account, state)")
    execute(
        db,
        "CREATE TABLE IF NOT EXISTS reply_attempts (id INTEGER PRIMARY KEY, reply_id INTEGER NOT"
        " NULL, run_id TEXT, marker TEXT NOT NULL, started_at TEXT NOT NULL, ended_at TEXT,"
        " outcome TEXT, error TEXT, handles TEXT, timeout_seconds REAL)",
    )
    execute(db, "CREATE INDEX IF NOT EXISTS reply_attempts_reply ON reply_attempts (reply_id)")


def _migration_carousels(db: Any) -> None:
    # Carousels (issue 29): a post is a video or a carousel of the episode's cards, each once
    # per (episode, platform): the one-post-per-(episode, platform) index takes the kind.
    execute(db, "ALTER TABLE posts ADD COLUMN kind TEXT NOT NULL DEFAULT 'video'")
    execute(db, "DROP INDEX IF EXISTS idx_posts_episode_id_platform")
    execute(db, "CREATE UNIQUE INDEX posts_once ON posts (episode_id, platform, kind)")


MIGRATIONS: list[Callable[[Database], None]] = [
    _migration_1,
    _migration_2,
    _migration_3,
    _migration_4,
    _migration_5,
    _migration_6,
    _migration_7,
    _migration_8,
    _migration_leases,
    _migration_episode_files,
    _migration_episode_edits,
    _migration_comments,
    _migration_carousels,
]
SCHEMA_VERSION = len(MIGRATIONS)


#: The variable that names a PostgreSQL store, over `[store] url` and the home's SQLite file.
DATABASE_URL_VARIABLE = "AUTORETTO_DATABASE_URL"


def store_url(configured: str | None = None) -> str | None:
    """The PostgreSQL URL in force: AUTORETTO_DATABASE_URL, else `[store] url`, else None (the
    home's SQLite file)."""
    return os.environ.get(DATABASE_URL_VARIABLE) or configured or None


def store_name(db: Any, path: Path) -> str:
    """How a person names the store in use: the SQLite file, or the URL without its password."""
    url = getattr(db, "url", None)
    if url:
        from .postgres import shown_url

        return shown_url(url)
    return str(path)


#: How far the database server's clock may be from this host's before a run refuses to post
#: (and `doctor` says so).
CLOCK_TOLERANCE_SECONDS = 30


@dataclass(frozen=True)
class ClockOffset:
    """How far this process's system clock is from the store's own: `seconds` > 0 when this
    host is ahead, measured over a round trip of `round_trip` seconds (the database read its
    clock somewhere inside it, so the offset is known to within half of it)."""

    seconds: float
    round_trip: float

    def beyond(self, limit: float = CLOCK_TOLERANCE_SECONDS) -> bool:
        """True when the clocks are surely more than `limit` apart, the round trip allowed for."""
        return abs(self.seconds) - self.round_trip / 2 > limit

    def words(self) -> str:
        """`3600 s ahead of` / `12 s behind` / `0.1 s from`: how this host's clock stands."""
        apart = abs(self.seconds)
        figure = f"{apart:.0f}" if apart >= 10 else f"{apart:.1f}"
        if apart < 0.05:
            return f"{figure} s from"
        return f"{figure} s {'ahead of' if self.seconds > 0 else 'behind'}"


def clock_offset(db: Any) -> ClockOffset | None:
    """This host's clock against the store's, or None for a store without a clock of its own
    (the SQLite file is read and written on this machine, by this clock)."""
    if not getattr(db, "url", None):
        return None
    # time.time(), the system clock, and never clock.now(): AUTORETTO_NOW (`--now`) is a
    # moment chosen on purpose (tests, demos) and says nothing of whether this host keeps time.
    before = time.time()
    found = db.execute("SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)")
    server = float(found.fetchone()[0])
    after = time.time()
    return ClockOffset((before + after) / 2 - server, after - before)


def store_problems(db: Any) -> list[str]:
    """What `doctor` says of the store itself: for a PostgreSQL server, a clock more than 30 s
    from this host's (a run refuses to post then). The SQLite file has nothing to add."""
    from .postgres import shown_url

    offset = clock_offset(db)
    if offset is None or not offset.beyond():
        return []
    return [
        f"{shown_url(db.url)}: this host's clock is {offset.words()} the database's (limit "
        f"{CLOCK_TOLERANCE_SECONDS} s): runs refuse to post; fix its time (timedatectl / chrony)"
    ]


def open_database(path: Path, *, create: bool = True, url: str | None = None) -> Database:
    """Open (and migrate) the home's store: the SQLite file at `path`, or the PostgreSQL
    database that `store_url(url)` names (ledger.postgres). Raises StoreError in plain words.

    Before anything is written, the file is checked to be ours: an empty (0-byte) file is a
    database cut short, never silently made afresh; another program's SQLite file is refused
    untouched (not even switched to WAL). A database that does not exist yet is made whole,
    mode 0600, under another name and then linked into place, so no process ever sees half of
    one."""
    chosen = store_url(url)
    if chosen:
        from .postgres import open_postgres

        return cast("Database", open_postgres(chosen, create=create))
    db = open_sqlite(path, create=create)
    moved = db.execute("SELECT value FROM meta WHERE key = 'store_moved_to'").fetchone()
    if moved is not None:
        db.conn.close()
        raise StoreError(
            f"{path}: this home's store was copied to {moved[0]} (`autoretto store copy`); "
            'set [store] url = "postgresql://…" in autoretto.toml (or AUTORETTO_DATABASE_URL), '
            "so that no run posts from this old copy"
        )
    return db


def open_sqlite(path: Path, *, create: bool = True) -> Database:
    """The SQLite file at `path`, opened (and migrated) as `open_database` describes."""
    folder = path.parent
    if not folder.is_dir():
        raise StoreError(
            f"{folder}: the database folder does not exist; run `autoretto init` "
            "or set AUTORETTO_HOME to your Autoretto home"
        )
    if not path.exists():
        if not create:
            raise StoreError(f"{path}: no database here; run `autoretto init`")
        _create(path)
    elif not path.is_file():
        raise StoreError(f"{path}: cannot open the database (it is not a file); move it away")
    elif path.stat().st_size == 0:
        raise StoreError(
            f"{path}: the database is empty (0 bytes), cut short by a full disk or an "
            "interrupted copy; restore it from a backup, or move it away to start afresh"
        )
    try:
        connection = _connect(path)
    except sqlite3.DatabaseError as error:
        raise StoreError(f"{path}: cannot open the database ({error})") from None
    try:
        _refuse_foreign(connection, path)
        return _prepare(connection)
    except BaseException as error:
        connection.close()
        if isinstance(error, sqlite3.DatabaseError):
            raise StoreError(f"{path}: cannot open the database ({error})") from None
        raise


def _connect(path: Path, busy_timeout: float = BUSY_TIMEOUT_SECONDS) -> sqlite3.Connection:
    connection = sqlite3.connect(
        str(path), timeout=busy_timeout, isolation_level=None, factory=_Connection
    )
    connection.path = path
    connection.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
    return connection


@contextmanager
def reopen(db: Database, *, busy_timeout: float = BUSY_TIMEOUT_SECONDS) -> Iterator[Database]:
    """Another connection to the store `db` is on, for another thread (a SQLite connection
    stays in the thread that made it), closed when the block ends: the same file, waiting at
    most `busy_timeout` seconds for its lock, or the same PostgreSQL database. The store is
    already open and migrated, so nothing is checked again. Raises StoreError in plain words."""
    url = getattr(db, "url", None)
    if url:
        from .postgres import open_postgres

        other: Any = open_postgres(url, create=False)
    else:
        try:
            other = Store(_connect(Path(str(db.conn.path)), busy_timeout))
        except sqlite3.DatabaseError as error:
            raise StoreError(f"{db.conn.path}: cannot open the database ({error})") from None
    try:
        yield cast("Database", other)
    finally:
        other.conn.close()


def _prepare(connection: sqlite3.Connection) -> Database:
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = NORMAL")
    connection.execute("PRAGMA foreign_keys = ON")
    connection.execute("PRAGMA recursive_triggers = ON")  # as sqlite-utils' Database sets it
    db = cast("Database", Store(connection))
    _migrate(db)
    return db


class Store:
    """The handle every module is given: sqlite-utils' `Database` over our connection, made
    the first time a table method is used (`db["posts"].insert(...)`, `db.table_names()`).

    Reads go straight to the connection (`execute`, `conn`), so a read-only command (`status`,
    an idle `run-due`) never pays for importing sqlite-utils and what it brings (click,
    dateutil, pluggy); every write through a table still goes through sqlite-utils. Its
    plugins are not loaded: nothing installed beside Autoretto changes our connection.
    """

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.conn = connection
        self._database: Database | None = None

    def execute(self, sql: str, parameters: Any = None) -> sqlite3.Cursor:
        """As sqlite-utils' `Database.execute`."""
        if parameters is None:
            return self.conn.execute(sql)
        return self.conn.execute(sql, parameters)

    def database(self) -> Database:
        if self._database is None:
            self._database = _import_sqlite_utils().Database(
                self.conn, recursive_triggers=False, execute_plugins=False
            )
        return self._database

    def __getitem__(self, table: str) -> Any:
        return self.database()[table]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.database(), name)


def _create(path: Path) -> None:
    """Make a new, migrated database at `path` (mode 0600), unless another process does first."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.new")
    try:
        os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        connection = _connect(partial)
        try:
            _prepare(connection)
        finally:
            connection.close()  # the last connection: SQLite folds the WAL back in
        try:
            os.link(partial, path)  # never replaces a database another process just made
        except FileExistsError:
            pass
        except OSError as error:
            if error.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP):
                raise
            if not path.exists():  # a file system without hard links (FAT, some shares)
                os.replace(partial, path)
    except OSError as error:
        raise StoreError(
            f"{path}: cannot create the database ({error.strerror or type(error).__name__})"
        ) from None
    finally:
        for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
            leftover.unlink(missing_ok=True)


#: Tables every Autoretto database has had since its first schema.
OUR_TABLES = frozenset({"channels", "slots", "decisions", "episodes", "posts", "runs"})


def _refuse_foreign(connection: sqlite3.Connection, path: Path) -> None:
    """Read (never write) enough to know the file is an Autoretto database in one piece: its
    schema version, its tables, and the first page of each."""
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    tables = [
        name
        for (name,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    if not set(tables) >= OUR_TABLES and (version or tables):
        holds = ", ".join(sorted(tables)[:6]) or "no tables"
        raise StoreError(
            f"{path} is not an Autoretto database (it holds {holds}); point AUTORETTO_HOME at "
            "your Autoretto home, or move the file away"
        )
    # The first row of every table and every index: a page of garbage where one starts is found
    # here, before the first write, instead of halfway through a run.
    for table, index in connection.execute(
        "SELECT tbl_name, name FROM sqlite_master WHERE type IN ('table', 'index')"
        " AND name NOT LIKE 'sqlite_%'"
    ).fetchall():
        chosen = "NOT INDEXED" if table == index else f'INDEXED BY "{index}"'
        try:
            connection.execute(f'SELECT * FROM "{table}" {chosen} LIMIT 1').fetchall()
        except sqlite3.OperationalError:  # an index this query cannot use (a partial one)
            continue


def _migrate(db: Database) -> None:
    """Bring the SQLite file to this version's schema by name (`apply_migrations`).
    `PRAGMA user_version` keeps how many are applied, so that a file already current costs one
    read, and a file of an Autoretto from before the names (its count only) is read rightly."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    named = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
    ).fetchone()
    if version == SCHEMA_VERSION and named:
        return
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the database has schema version {version}, newer than this Autoretto "
            f"({SCHEMA_VERSION}); upgrade Autoretto"
        )
    with transaction(db):
        # Re-read under the write lock: another process may have migrated meanwhile.
        version = db.execute("PRAGMA user_version").fetchone()[0]
        try:
            apply_migrations(db, numbered=version)
        except StoreError as error:
            raise StoreError(f"{db.conn.path}: {error}") from None
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def migration_name(step: Callable[[Any], None]) -> str:
    """A migration's name, its identity in `_migrations` for good: its function's name."""
    return step.__name__.lstrip("_")


def apply_migrations(db: Any, *, numbered: int = 0, made_whole: bool = False) -> list[str]:
    """Run, in order, every migration whose name `_migrations` does not hold, and record it;
    the same way on every store (as llm's and sqlite-utils' migrations do). `numbered`: the
    count an Autoretto from before the names left in `PRAGMA user_version` (those first
    migrations are recorded as applied). `made_whole`: the schema was just made whole
    (PostgreSQL's, from schema_statements): every migration is recorded, none is run.
    Migrations from `_migration_9` on are written in statements both stores accept. Call inside
    a transaction. Returns the names applied now. Raises StoreError for a database that knows a
    migration this Autoretto does not (a newer one)."""
    execute(db, "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at TEXT)")
    applied = {found["name"] for found in rows(db, "SELECT name FROM _migrations")}
    known = [migration_name(step) for step in MIGRATIONS]
    newer = sorted(applied - set(known))
    if newer:
        raise StoreError(
            f"the database has migration {newer[0]}, newer than this Autoretto; upgrade Autoretto"
        )
    if not applied and numbered:
        applied = set(known[:numbered])
        for name in known[:numbered]:
            _record_migration(db, name)
    done = []
    for step, name in zip(MIGRATIONS, known, strict=True):
        if name in applied:
            continue
        if not made_whole:
            step(db)
        _record_migration(db, name)
        done.append(name)
    return done


def _record_migration(db: Any, name: str) -> None:
    from ..clock import iso, now

    execute(
        db,
        "INSERT INTO _migrations (name, applied_at) VALUES (?, ?)",
        (name, iso(now())),
    )


@contextmanager
def transaction(db: Database, *, rows_only: bool = False) -> Iterator[Database]:
    """BEGIN IMMEDIATE … COMMIT, rolled back on any exception (a COMMIT that fails, for a full
    disk, included: the connection is never left inside a transaction).

    `rows_only`: the change is compare-and-set statements on the rows it names, its journal
    number (if any) taken last. On the SQLite file it makes no difference (one writer at a
    time). On PostgreSQL such changes run side by side, each waiting only on the rows it
    touches, and every other transaction still has the ledger to itself (ledger.postgres)."""
    if getattr(db, "dialect", None) == "postgresql":
        db.begin(rows_only=rows_only)  # type: ignore[union-attr]
    else:
        db.execute("BEGIN IMMEDIATE")
    try:
        yield db
        db.execute("COMMIT")
    except BaseException:
        if db.conn.in_transaction:
            db.execute("ROLLBACK")
        raise


#: What a statement raises that is no person's to fix (StoreError is one line for a person):
#: code outside the ledger catches this, never sqlite3's own error type.
DatabaseError = sqlite3.Error


# -- what SQLite says, in a person's words -------------------------------------------------------
# A full disk, a damaged file, a read-only or failing disk, a lock held for a minute: these are
# not bugs, and every command that meets one ends with one line naming the database and what to
# do. Every statement and every fetch goes through these two classes, so the translation holds
# wherever the error shows (a damaged page is often met only when its rows are read).

_PLAIN_SQLITE_ERRORS = {
    "SQLITE_FULL": DISK_FULL,
    "SQLITE_CORRUPT": "the database is damaged; restore it from a backup (see README: restores)",
    "SQLITE_NOTADB": "the database is damaged or not a database; restore it from a backup",
    "SQLITE_IOERR": "the disk reported an input/output error; check it (dmesg), then run again",
    "SQLITE_READONLY": "the database is read-only; make it and its folder writable by this user",
    "SQLITE_CANTOPEN": "the database cannot be opened; check its folder and permissions",
    "SQLITE_BUSY": f"another process held the database for {BUSY_TIMEOUT_SECONDS} s; run again",
    "SQLITE_LOCKED": f"another process held the database for {BUSY_TIMEOUT_SECONDS} s; run again",
}


def _plain_error(error: sqlite3.Error, path: object) -> Exception:
    """StoreError for what a person fixes; the error itself (a bug) otherwise."""
    name = getattr(error, "sqlite_errorname", "") or ""
    for prefix, advice in _PLAIN_SQLITE_ERRORS.items():
        if name == prefix or name.startswith(prefix + "_"):
            if prefix == "SQLITE_IOERR" and _no_room_beside(path):
                advice = DISK_FULL  # SQLite says "I/O error" when not even its -shm file fits
            return StoreError(f"{path}: {advice} ({error})")
    return error


def _no_room_beside(path: object) -> bool:
    try:
        facts = os.statvfs(Path(str(path)).parent)
    except OSError:
        return False
    return facts.f_bavail * facts.f_frsize < 64 * 1024


def _translated(method: Callable[..., Any]) -> Callable[..., Any]:
    def call(self: Any, *args: Any) -> Any:
        try:
            return method(self, *args)
        except sqlite3.Error as error:
            connection = self if isinstance(self, sqlite3.Connection) else self.connection
            plain = _plain_error(error, connection.path)
            if plain is error:
                raise
            raise plain from None

    return call


class _Cursor(sqlite3.Cursor):
    execute = _translated(sqlite3.Cursor.execute)
    executemany = _translated(sqlite3.Cursor.executemany)
    executescript = _translated(sqlite3.Cursor.executescript)
    fetchone = _translated(sqlite3.Cursor.fetchone)
    fetchmany = _translated(sqlite3.Cursor.fetchmany)
    fetchall = _translated(sqlite3.Cursor.fetchall)
    __next__ = _translated(sqlite3.Cursor.__next__)


class _Connection(sqlite3.Connection):
    path: object = "the database"  # the file, set by _connect

    def cursor(self, factory: Any = _Cursor) -> Any:  # type: ignore[override]
        return super().cursor(factory)

    # sqlite3's own shortcuts make a plain cursor; these make ours.
    def execute(self, sql: str, parameters: Any = ()) -> Any:  # type: ignore[override]
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any) -> Any:  # type: ignore[override]
        return self.cursor().executemany(sql, parameters)

    def executescript(self, script: str) -> Any:  # type: ignore[override]
        return self.cursor().executescript(script)

    commit = _translated(sqlite3.Connection.commit)


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


def marks(count: int) -> str:
    """`?` placeholders for an IN list of `count` values ("?, ?, ?"): the portable stand-in
    for SQLite's json_each over a list."""
    return ", ".join("?" * count)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def loads(text: str | None, default: Any = None) -> Any:
    return default if text is None else json.loads(text)
