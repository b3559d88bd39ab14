"""One process's run: its id, its moment, its platforms, its heartbeat, and its report.

Every command that may post (run-due, post-now, look, confirm, a hand-made post) runs inside
a `Run`: a `runs` row while it lives, a heartbeat thread that keeps its claims fresh, the
restore-hold check before anything else, and the decisions it made, for the report.
"""

from __future__ import annotations

import logging
import secrets
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from .. import clock, decisions, journal, liveness, pace, posts, produce
from ..clock import iso
from ..config import HEARTBEAT_SECONDS, ChannelConfig, Config, share_media_host
from ..errors import ClockApart, Exit, JournalDamaged, StoreError
from ..ledger import claims, meta, runs
from ..ledger.store import DatabaseError, reopen
from ..media import Media
from ..platforms import MANUAL_PLATFORMS, REGISTRY, class_or_base, platform_class
from ..platforms.base import Platform, PlatformContext
from ..posts import Posting
from ..slots import Slot

if TYPE_CHECKING:
    from ..ledger.store import Store as Database

log = logging.getLogger("autoretto.engine")

EXPIRY_WARNING = timedelta(days=7)


@dataclass
class RunReport:
    run_id: str
    now: datetime
    decisions: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    channels: int = 0
    held: str | None = None  # the restore hold's reason: nothing was posted
    made: list[int] = field(default_factory=list)  # episodes made in this run
    notes: list[str] = field(default_factory=list)  # worth knowing, nothing to fix
    waiting: list[dict[str, Any]] = field(default_factory=list)  # slots that wait, and why
    post_states: dict[int, str] = field(default_factory=dict)  # its decisions' posts, at the end
    sent: list[int] = field(default_factory=list)  # posts whose request went out, as they went
    owed: list[str] = field(default_factory=list)  # failed before anything went out: retried
    #: carousels planned (with their moment) and sent (with their outcome) in this run
    carousels: list[dict[str, Any]] = field(default_factory=list)
    #: what run-due's reply sessions did (replies.SessionReport.as_json); None: none ran
    replies: dict[str, Any] | None = None

    @property
    def exit_code(self) -> Exit:
        """0 done (nothing due too); 3 posting held; 1 an error, or a slot that failed in a way
        a person must fix; 4 a post that failed for now (the next run tries it again)."""
        if self.held:
            return Exit.HELD
        codes = [
            outcome_exit(d["outcome"], self.post_states.get(d["post_id"]), asked=False)
            for d in self.decisions
        ]
        if self.errors:
            codes.append(Exit.NEEDS_PERSON)
        if self.owed:
            codes.append(Exit.RETRY)
        # A request that went out for a post no decision of this run speaks for (it waits,
        # its answer lost), and that is not known to be live: never a quiet 0.
        decided = {d["post_id"] for d in self.decisions}
        codes += [
            Exit.RETRY
            for post in self.sent
            if post not in decided and self.post_states.get(post) != "published"
        ]
        return worst(codes)

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "now": iso(self.now),
            "channels": self.channels,
            "decisions": self.decisions,
            "errors": self.errors,
            "held": self.held,
            "made": self.made,
            "notes": self.notes,
            "waiting": self.waiting,
            "sent": self.sent,
            "owed": self.owed,
            "carousels": self.carousels,
            **({"replies": self.replies} if self.replies is not None else {}),
        }


#: when several codes apply, the first of these is the command's
PRECEDENCE = (Exit.HELD, Exit.MISTAKE, Exit.NEEDS_PERSON, Exit.RETRY, Exit.DONE)


def worst(codes: list[Exit]) -> Exit:
    """The exit code of a command whose parts asked for `codes` (DONE when there are none)."""
    return min(codes, key=PRECEDENCE.index, default=Exit.DONE)


def outcome_exit(outcome: str, post_state: str | None, *, asked: bool) -> Exit:
    """The exit code one platform's outcome asks for. A failure whose post is tried again on a
    later slot is RETRY; one whose post needs a person or may be live, or that has no post at
    all (a platform not connected), NEEDS_PERSON. A slot decided otherwise (nothing ready, a
    limit, missed) is a run that did its job; a post a person `asked` for now (post-now, look)
    that did not go out for any reason is RETRY."""
    if outcome == "posted":
        return Exit.DONE
    if outcome == "failed":
        return Exit.RETRY if post_state == "failed" else Exit.NEEDS_PERSON
    return Exit.RETRY if asked else Exit.DONE


class RunProgress(Protocol):
    """What a run tells a person watching it at a terminal (nothing under cron)."""

    def stage(self, channel: str, what: str) -> None:
        """A step began: a slot claimed, a post being sent, an episode being made."""

    def making(self, channel: str, stage: str, fraction: float) -> None:
        """How far the channel's make is: its stage and the share of the whole make done."""


class Heartbeat:
    """Refreshes this run's claims, in-flight posts and episodes being made, from a thread.

    It has its own connection to the run's store (SQLite connections stay in their thread), and
    statements keyed by the run id, so it needs to know nothing of what the run is doing.
    """

    def __init__(
        self, database: Database, run_id: str, interval: float = HEARTBEAT_SECONDS
    ) -> None:
        self.database = database
        self.run_id = run_id
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.beat()
            except (DatabaseError, StoreError) as error:  # a busy database must not kill the run
                log.warning("heartbeat skipped: %s", error)

    def beat(self) -> None:
        with reopen(self.database, busy_timeout=30) as connection:
            now = clock.now()
            runs.beat_run(connection, self.run_id)
            claims.refresh_claims(connection, self.run_id, iso(now))
            posts.beat(connection, self.run_id, now)
            produce.beat(connection, self.run_id, now)


def pace_seed(db: Database, *, create: bool) -> int:
    """The installation's own seed for human-pace draws, drawn once and kept."""
    if create:
        meta.put_if_absent(db, "pace_seed", secrets.randbits(62))
    found = meta.get(db, "pace_seed")
    return int(found) if found is not None else 0


class Run:
    """One process's run: its id, its moment, its platforms and its log lines."""

    def __init__(
        self,
        config: Config,
        db: Database,
        kind: str,
        *,
        record: bool = True,
        now: datetime | None = None,
        make: bool = True,
        progress: RunProgress | None = None,
    ) -> None:
        self.config = config
        self.db = db
        self.kind = kind
        self.record = record  # False: a read-only look (status): no run row, no heartbeat
        self.make = make  # False: this run makes no episode at all (`run-due --no-make`)
        self.progress = progress
        self.zones = {c.name: c.timezone for c in config.cadences}  # a slot key is local time
        self.id = uuid.uuid4().hex[:12]
        self.now = now or clock.now()
        self.report = RunReport(self.id, self.now)
        self._platforms: dict[str, Platform] = {}
        self.make_failed: dict[str, str] = {}  # channel -> why its make failed in this run
        #: (channel, slot, platform) that failed in this run before anything went out
        self.tried: set[tuple[str, str, str]] = set()
        self.pace = pace.PaceConfig(
            seed=pace_seed(db, create=record),
            twins={c.name: c.twin_of for c in config.channels if c.twin_of},
            cron_interval=config.cron_interval,
            paced=lambda name: class_or_base(name).paced,
        )
        self.posting = Posting(
            db=db,
            run_id=self.id,
            now=self.now,
            stale_after=config.stale_after,
            journal=config.journal,
            notify=config.notify,
            sent=self.report.sent,
            waits=kind == "run-due",
            media=Media.of(config),
        )

    def __enter__(self) -> Run:
        if self.record:
            runs.open_run(
                self.db,
                run_id=self.id,
                kind=self.kind,
                **liveness.describe_this_process(),
                started_at=iso(self.now),
            )
            self._heartbeat = Heartbeat(self.db, self.id).__enter__()
            self._acted = liveness.acting()  # a run inside another gives it back at its end
            liveness.act_for(self.id, self.config.stale_after)  # what a lease names as holder
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if not self.record:
            return
        liveness.act_for(*(self._acted or (None,)))
        self._heartbeat.__exit__()
        runs.forget_sightings(self.db, self.id)  # nobody needs to judge this run now
        outcome = "crashed" if exc_type else ("errors" if self.report.errors else "ok")
        runs.end_run(self.db, self.id, ended_at=iso(clock.now()), outcome=outcome)

    def stage(self, channel: str, what: str) -> None:
        if self.progress is not None:
            self.progress.stage(channel, what)

    def making(self, channel: str) -> Callable[[str, float], None] | None:
        """The progress callback of a make for `channel` (None when nobody watches)."""
        progress = self.progress
        if progress is None:
            return None
        return lambda stage, fraction: progress.making(channel, stage, fraction)

    def gone(self, holder: str | None) -> liveness.Gone | None:
        """The run `holder` as gone (its claims may be taken over), else None while it may be
        alive (liveness.holder_gone, by this run's own clock)."""
        if holder is None or holder == self.id:
            return None
        return liveness.holder_gone(
            self.db,
            holder,
            now=clock.now(),
            stale_after=self.config.stale_after,
            note=self.record,
        )

    def platform(self, name: str) -> Platform:
        if name not in self._platforms:
            cls = platform_class(name)
            settings = self.config.platforms.get(name)
            if settings is None:
                settings = cls.parse_settings({}, path=self.config.path, paths=self.config.paths)
                share_media_host(settings, self.config.media_host)
            self._platforms[name] = cls(
                PlatformContext(
                    name, settings, self.config.paths, self.db, self.now, self.config.retry
                )
            )
        return self._platforms[name]

    def platforms_for(self, channel: ChannelConfig) -> list[str]:
        """The channel's platforms in posting order: chosen ones, or every connected one."""
        if channel.platforms is not None:
            return list(channel.platforms)
        return [
            name
            for name in REGISTRY
            if name in self.config.platforms and self.platform(name).is_connected()
        ]

    def decide(
        self,
        channel: str,
        slot: Slot,
        platform: str,
        outcome: str,
        reason: str,
        post_id: int | None = None,
    ) -> bool:
        """Record the one decision for (channel, slot, platform). False if already decided."""
        entry = decisions.decide(
            self.db,
            run_id=self.id,
            run_log=self.config.paths.run_log,
            channel=channel,
            slot=slot,
            platform=platform,
            outcome=outcome,
            reason=reason,
            post_id=post_id,
        )
        if entry is not None:
            self.report.decisions.append({**entry, "timezone": self.zones.get(channel)})
        return entry is not None


def register_channels(config: Config, db: Database, now: datetime) -> dict[str, dict]:
    """Every configured channel's row, creating rows and noting schedule edits as needed.

    One read for all channels; writes only for new channels and edited schedules, so an idle
    run over many channels writes nothing.
    """
    known = {r["name"]: r for r in claims.channel_rows(db)}
    changed = [
        c
        for c in config.cadences
        if c.name not in known or known[c.name]["schedule_fingerprint"] != c.schedule_fingerprint
    ]
    if changed:
        known |= claims.register_channels(
            db,
            [(c.name, c.schedule_fingerprint, c.schedule.spec) for c in changed],
            iso(now),
        )
    return known


def cadences(config: Config, only_channel: str | None) -> list[ChannelConfig]:
    """What run-due and status look at: every cadence, or one channel's (its films too)."""
    if only_channel is None:
        return list(config.cadences)
    config.channel(only_channel)  # a clear error for an unknown channel
    return [c for c in config.cadences if c.episode_channel == only_channel]


HOST_ID_VARIABLE = liveness.HOST_ID_VARIABLE


def host_identity(config: Config) -> str:
    """This host as the order of its channels knows it: AUTORETTO_HOST_ID, else the machine's
    name and the home's path (two homes on one machine are two hosts of the store)."""
    import os
    import socket

    return os.environ.get(HOST_ID_VARIABLE) or f"{socket.gethostname()}\0{config.paths.home}"


def host_order(config: Config, db: Database, channels: list[ChannelConfig]) -> list[ChannelConfig]:
    """The channels in the order this host walks them: on a store several hosts share
    (PostgreSQL), the configured list rotated by a stable hash of this host's identity, so that
    hosts whose runs start together begin at different channels and spread the claims and the
    making between them (a channel one host is making for is skipped by the others:
    ledger.claims.claim_making); the same order on every run of one host. On the SQLite file
    (one machine) the configured order."""
    import hashlib

    if len(channels) < 2 or not getattr(db, "url", None):
        return channels
    digest = hashlib.sha256(host_identity(config).encode("utf-8")).digest()
    start = int.from_bytes(digest[:8], "big") % len(channels)
    return channels[start:] + channels[:start]


def refuse_when_clock_apart(db: Database) -> None:
    """Raise ClockApart (exit 1, one line) when this host's clock is more than 30 s from the
    store's own (PostgreSQL; the SQLite file is this machine's, by this clock). Called before a
    run starts, so that it records nothing and sends nothing: the instants the ledger keeps
    (claims, decisions, a paced post's moment) come from each host's clock, and hosts that
    disagree would serve slots at the wrong times. The liveness of other runs never depends on
    it (liveness.py compares no two clocks)."""
    from ..ledger.store import CLOCK_TOLERANCE_SECONDS, clock_offset

    offset = clock_offset(db)
    if offset is not None and offset.beyond(CLOCK_TOLERANCE_SECONDS):
        raise ClockApart(
            f"this host's clock is {offset.words()} the database's (limit "
            f"{CLOCK_TOLERANCE_SECONDS} s): fix its time (timedatectl / chrony) before it posts"
        )


def refuse_when_held(run: Run) -> str | None:
    """The restore hold's reason when the database and the journal disagree (and tell a
    person, once per journal position), else None. A journal only behind by lines a crash left
    out is caught up first, from the database's copies."""
    path = run.config.journal
    try:
        hold = journal.restore_hold(run.db, path)
    except JournalDamaged as error:
        return str(error)  # it proves nothing of what went out: held, like one not writable
    if hold is None:
        database_seq = journal.database_seq(run.db)
        if journal.journal_seq(path, near=database_seq) < database_seq:
            try:
                journal.catch_up(run.db, path)
            except journal.JournalConflict as error:
                return str(error)
            except journal.JournalUnreachable:
                raise  # not held: nothing is sent, and the next run tries again
            except journal.WRITE_ERRORS as error:
                return (
                    f"the publish journal {path} cannot be written ({error}): nothing is sent "
                    "until it can be"
                )
        return None
    told = meta.get(run.db, "hold_told_seq")
    if told is None or told != hold.journal_seq:
        run.posting.tell(
            "posting_held",
            reason=hold.reason,
            database_seq=hold.database_seq,
            journal_seq=hold.journal_seq,
        )
        meta.put(run.db, "hold_told_seq", hold.journal_seq)
    return hold.reason


def expiring_sign_ins(run: Run) -> list[dict[str, Any]]:
    """Connected accounts whose sign-in ends within a week and cannot be refreshed here."""
    found = []
    connected = runs.connected_platforms(run.db)
    for name in connected:
        if name not in REGISTRY and name not in MANUAL_PLATFORMS:
            continue  # an account of a platform this version does not have
        platform = run.platform(name)
        if not platform.is_connected():
            continue
        expires_at = platform.token_expires_at()
        if expires_at is not None and expires_at - run.now <= EXPIRY_WARNING:
            found.append(
                {
                    "platform": name,
                    "expires_at": iso(expires_at),
                    "reason": f"the {platform.title} sign-in ends {iso(expires_at)}: reconnect "
                    f"with `autoretto connect {name}` before then",
                }
            )
    return found


def warn_expiring_sign_ins(run: Run) -> None:
    """Tell a person, once a day per platform, about sign-ins that are about to end."""
    day = run.now.strftime("%Y%m%d")
    for warning in expiring_sign_ins(run):
        key = f"expiry_told_{warning['platform']}"
        told = meta.get(run.db, key)
        if told is not None and str(told) == day:
            continue
        run.posting.tell("sign_in_expiring", **warning)
        run.report.notes.append(warning["reason"])
        meta.put(run.db, key, int(day))
