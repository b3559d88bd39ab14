"""`run-due` and its relatives: channels → due slots → decisions → posts.

For each channel the engine applies the due rule (slots.py), claims the due slot with the stamp's
compare-and-set (stamp.py), and gives every chosen platform, in the registry's order, exactly one
decision for that slot: posted, nothing_ready, waiting_for_approval, refused_by_limit, missed,
busy or failed. Posting itself goes through the post state machine (posts.py), which is what
makes a post-now and a slot, or two overlapping runs, unable to send one episode twice.
"""

from __future__ import annotations

import logging
import os
import secrets
import sqlite3
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from . import clock, faults, journal, pace, stamp
from .clock import from_iso, iso
from .config import HEARTBEAT_SECONDS, ChannelConfig, Config, share_media_host
from .episodes import (
    clean_interrupted_imports,
    episode_view,
    get_episode,
    interrupted_imports,
    next_episode_for,
    postable_episode,
)
from .errors import AutorettoError, UsageError, environment_problem
from .notify import heartbeat as heartbeat_ping
from .platforms import MANUAL_PLATFORMS, REGISTRY, platform_class
from .platforms.base import Platform, PlatformContext
from .platforms.notices import platform_warnings, tell_platform_warnings
from .posts import Posting, PostResult, ensure_post, send_post
from .runlog import append_line, decision_line, rotate_logs
from .slots import Slot, due_rule, take
from .store import execute, row, rows, transaction

if TYPE_CHECKING:
    from sqlite_utils import Database

log = logging.getLogger("autoretto.engine")


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

    @property
    def exit_code(self) -> int:
        return 1 if self.errors or self.held else 0

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
        }


class Heartbeat:
    """Refreshes this run's claims, in-flight posts and episodes being made, from a thread.

    It has its own connection (SQLite connections stay in their thread), and one statement per
    table keyed by the run id, so it needs to know nothing of what the run is doing.
    """

    def __init__(self, database: str, run_id: str, interval: float = HEARTBEAT_SECONDS) -> None:
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
            except sqlite3.Error as error:  # a busy database must not kill the run
                log.warning("heartbeat skipped: %s", error)

    def beat(self) -> None:
        connection = sqlite3.connect(self.database, timeout=30, isolation_level=None)
        try:
            now = iso(clock.now())
            params = {"now": now, "run": self.run_id}
            connection.execute(
                "UPDATE channels SET claim_heartbeat_at = :now WHERE claim_run_id = :run", params
            )
            connection.execute(
                "UPDATE posts SET heartbeat_at = :now WHERE run_id = :run AND state = 'sending'",
                params,
            )
            connection.execute(
                "UPDATE episodes SET heartbeat_at = :now WHERE run_id = :run AND state = 'making'",
                params,
            )
        finally:
            connection.close()


def pace_seed(db: Database, *, create: bool) -> int:
    """The installation's own seed for human-pace draws, drawn once and kept."""
    if create:
        execute(
            db,
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('pace_seed', ?)",
            (secrets.randbits(62),),
        )
    found = row(db, "SELECT value FROM meta WHERE key = 'pace_seed'")
    return int(found["value"]) if found else 0


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
    ) -> None:
        self.config = config
        self.db = db
        self.kind = kind
        self.record = record  # False: a read-only look (status): no run row, no heartbeat
        self.id = uuid.uuid4().hex[:12]
        self.now = now or clock.now()
        self.report = RunReport(self.id, self.now)
        self._platforms: dict[str, Platform] = {}
        self.make_failed: dict[str, str] = {}  # channel -> why its make failed in this run
        self.pace = pace.PaceConfig(
            seed=pace_seed(db, create=record),
            twins={c.name: c.twin_of for c in config.channels if c.twin_of},
            cron_interval=config.cron_interval,
        )
        self.posting = Posting(
            db=db,
            run_id=self.id,
            now=self.now,
            stale_after=config.stale_after,
            journal=config.journal,
            notify=config.notify,
        )

    def __enter__(self) -> Run:
        if self.record:
            self.db["runs"].insert(
                {"id": self.id, "kind": self.kind, "pid": os.getpid(), "started_at": iso(self.now)}
            )
            self._heartbeat = Heartbeat(str(self.config.paths.database), self.id).__enter__()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if not self.record:
            return
        self._heartbeat.__exit__()
        outcome = "crashed" if exc_type else ("errors" if self.report.errors else "ok")
        execute(
            self.db,
            "UPDATE runs SET ended_at = :end, outcome = :outcome WHERE id = :id",
            {"end": iso(clock.now()), "outcome": outcome, "id": self.id},
        )

    @property
    def stale_before(self) -> datetime:
        return self.now - self.config.stale_after

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
        decided_at = iso(clock.now())
        inserted = execute(
            self.db,
            "INSERT OR IGNORE INTO decisions (channel, slot, slot_at, platform, outcome, reason,"
            " decided_at, post_id, run_id) VALUES (:channel, :slot, :slot_at, :platform,"
            " :outcome, :reason, :decided_at, :post_id, :run)",
            {
                "channel": channel,
                "slot": slot.key,
                "slot_at": slot.at_text,
                "platform": platform,
                "outcome": outcome,
                "reason": reason,
                "decided_at": decided_at,
                "post_id": post_id,
                "run": self.id,
            },
        )
        if inserted:
            entry = {
                "channel": channel,
                "slot": slot.key,
                "slot_at": slot.at_text,
                "platform": platform,
                "outcome": outcome,
                "reason": reason,
                "decided_at": decided_at,
                "post_id": post_id,
            }
            self.report.decisions.append(entry)
            append_line(
                self.config.paths.run_log,
                decision_line(
                    at=decided_at,
                    run_id=self.id,
                    channel=channel,
                    slot=slot.key,
                    platform=platform,
                    outcome=outcome,
                    reason=reason,
                    post_id=post_id,
                ),
            )
        return inserted == 1


def register_channels(config: Config, db: Database, now: datetime) -> dict[str, dict]:
    """Every configured channel's row, creating rows and noting schedule edits as needed.

    One read for all channels; writes only for new channels and edited schedules, so an idle
    run over many channels writes nothing.
    """
    known = {r["name"]: r for r in rows(db, "SELECT * FROM channels")}
    changed = [
        c
        for c in config.cadences
        if c.name not in known or known[c.name]["schedule_fingerprint"] != c.schedule_fingerprint
    ]
    if changed:
        with transaction(db):
            for channel in changed:
                known[channel.name] = stamp.register_channel(
                    db, channel.name, channel.schedule_fingerprint, now
                )
    return known


def _decided_through(channel_row: dict) -> datetime | None:
    marks = [m for m in (channel_row["last_release_at"], channel_row["decided_through"]) if m]
    return from_iso(max(marks)) if marks else None


def run_due(
    config: Config,
    db: Database,
    *,
    only_channel: str | None = None,
    make: bool = True,
    wait: bool = True,
    sleep: Callable[[datetime], None] = clock.sleep_until,
) -> RunReport:
    """Send paced posts whose moment came, serve every channel's due slot once (or only
    `only_channel`'s), top up the stocks of ready episodes (unless `make` is False), then
    (unless `wait` is False) wait in-process for paced posts due before the next cron tick.
    Never raises for one channel's trouble: it is reported and the other channels go on."""
    channels = _cadences(config, only_channel)
    rotate_logs(config.paths.logs)  # cron.log (cron's shell appends to it) and run.log
    heartbeat_ping(config.notify, "start")
    with Run(config, db, "run-due") as run:
        hold = refuse_when_held(run)
        if hold:
            run.report.held = hold
        else:
            run.report.notes.extend(clean_interrupted_imports(config, db, run.now))
            rows_by_name = register_channels(config, db, run.now)
            run_pending(run, wait=False, sleep=sleep)  # older paced posts go before new slots
            for channel in channels:
                run.report.channels += 1
                try:
                    serve_channel(run, channel, rows_by_name[channel.name])
                except AutorettoError as error:
                    run.report.errors.append(f"{channel.name}: {error}")
                except Exception as error:  # one channel's bug must not stop the others
                    problem = environment_problem(error)  # a full disk is no bug: no traceback
                    if problem is None:
                        log.exception("channel %s failed", channel.name)
                        problem = f"{type(error).__name__}: {error}"
                    run.report.errors.append(f"{channel.name}: {problem}")
            if make:
                top_up(run, channels)
            warn_expiring_sign_ins(run)
            tell_platform_warnings(run.config, run.db, run.now, run.posting.tell, run.report.notes)
            run_pending(run, wait=wait, sleep=sleep)
            apply_retention(run)
    heartbeat_ping(
        config.notify, "fail" if run.report.exit_code else "success", run.report.as_json()
    )
    return run.report


def apply_retention(run: Run) -> None:
    """The retention policy ([media] keep) once the run's posts are out; what it removed, or
    could not remove, is a note of the run."""
    from .retention import prune

    try:
        result = prune(run.config, run.db, now=run.now)
    except (OSError, sqlite3.Error) as error:  # the posts are out; this waits for a next run
        run.report.notes.append(f"retention: not applied this time ({error})")
        return
    if result["pruned"]:
        run.report.notes.append(
            f"retention: removed the working files of {len(result['pruned'])} published "
            f'episodes ({result["bytes"] / 1e6:.1f} MB; [media] keep = "{result["keep"]}")'
        )
    run.report.notes.extend(f"retention: {error}" for error in result["errors"])


EXPIRY_WARNING = timedelta(days=7)


def expiring_sign_ins(run: Run) -> list[dict[str, Any]]:
    """Connected accounts whose sign-in ends within a week and cannot be refreshed here."""
    found = []
    connected = [r["platform"] for r in rows(run.db, "SELECT DISTINCT platform FROM accounts")]
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
        told = row(run.db, "SELECT value FROM meta WHERE key = ?", (key,))
        if told is not None and str(told["value"]) == day:
            continue
        run.posting.tell("sign_in_expiring", **warning)
        run.report.notes.append(warning["reason"])
        execute(
            run.db,
            "INSERT INTO meta (key, value) VALUES (:key, :day)"
            " ON CONFLICT (key) DO UPDATE SET value = :day",
            {"key": key, "day": int(day)},
        )


def _cadences(config: Config, only_channel: str | None) -> list[ChannelConfig]:
    """What run-due and status look at: every cadence, or one channel's (its films too)."""
    if only_channel is None:
        return list(config.cadences)
    config.channel(only_channel)  # a clear error for an unknown channel
    return [c for c in config.cadences if c.episode_channel == only_channel]


def refuse_when_held(run: Run) -> str | None:
    """The restore hold's reason when the database is behind the journal (and tell a person,
    once per journal position), else None."""
    hold = journal.restore_hold(run.db, run.config.journal)
    if hold is None:
        return None
    told = row(run.db, "SELECT value FROM meta WHERE key = 'hold_told_seq'")
    if told is None or told["value"] != hold.journal_seq:
        run.posting.tell(
            "posting_held",
            reason=hold.reason,
            database_seq=hold.database_seq,
            journal_seq=hold.journal_seq,
        )
        execute(
            run.db,
            "INSERT INTO meta (key, value) VALUES ('hold_told_seq', :seq)"
            " ON CONFLICT (key) DO UPDATE SET value = :seq",
            {"seq": hold.journal_seq},
        )
    return hold.reason


def serve_channel(run: Run, channel: ChannelConfig, channel_row: dict) -> None:
    result = due_rule(
        channel.schedule,
        window=channel.catch_up_window,
        now=run.now,
        seen_at=from_iso(channel_row["schedule_seen_at"]),
        decided_through=_decided_through(channel_row),
    )
    if result.due is None and not result.missed:
        return
    holder = channel_row["claim_run_id"]
    if holder is not None:
        heartbeat_at = channel_row["claim_heartbeat_at"]
        if heartbeat_at is not None and from_iso(heartbeat_at) >= run.stale_before:
            log.info("%s: claimed by run %s, leaving it alone", channel.name, holder)
            return
    platforms = run.platforms_for(channel)
    if result.due is None:
        if holder is not None:
            _clear_stale_claim(run, channel.name, holder)
        _record_missed(run, channel, result.missed, platforms)
        return

    slot = result.due
    if holder is None:
        owned = stamp.claim_slot(run.db, channel.name, slot, run.id, run.now)
    else:
        owned = stamp.take_over_claim(
            run.db,
            channel.name,
            slot,
            stale_run_id=holder,
            run_id=run.id,
            now=run.now,
            stale_before=run.stale_before,
        )
    if not owned:
        return
    faults.checkpoint("after_claim")
    _record_missed(run, channel, result.missed, platforms)
    _set_slot_state(run, channel.name, slot, "claimed")

    sent = False
    try:
        for platform_name in platforms:
            result_of_post = _decide_platform(run, channel, slot, platform_name)
            sent = sent or (result_of_post is not None and result_of_post.sent)
    except BaseException:
        if not sent:
            stamp.give_back_claim(run.db, channel.name, run.id)
        raise
    _finish_slot(run, channel, slot, platforms)


def _decide_platform(
    run: Run, channel: ChannelConfig, slot: Slot, platform_name: str
) -> PostResult | None:
    already = row(
        run.db,
        "SELECT outcome FROM decisions WHERE channel = ? AND slot = ? AND platform = ?",
        (channel.name, slot.key, platform_name),
    )
    if already is not None:
        return None  # decided by the run whose claim this was
    platform = run.platform(platform_name)
    if not platform.is_connected():
        run.decide(
            channel.name,
            slot,
            platform_name,
            "failed",
            f"{platform.title} is not connected: run `autoretto connect {platform_name}`",
        )
        return None
    blocked = platform.not_ready_reason()
    if blocked:
        run.decide(channel.name, slot, platform_name, "failed", blocked)
        return None

    # A post already sent for this very slot (by a run that died before it could record the
    # decision) is this slot's post; otherwise a post still on its way keeps the platform busy
    # with it (it is looked for, or sent again once safe).
    in_flight = row(
        run.db,
        "SELECT p.* FROM posts p JOIN episodes e ON e.id = p.episode_id"
        " WHERE p.channel = :channel AND p.platform = :platform AND e.kind = :kind"
        " AND (p.slot = :slot OR p.state IN ('sending', 'may_be_live')"
        " OR (p.not_before IS NOT NULL AND p.state IN ('queued', 'failed')))"
        " ORDER BY p.slot = :slot DESC, p.id LIMIT 1",
        {
            "channel": channel.episode_channel,
            "platform": platform_name,
            "slot": slot.key,
            "kind": channel.kind,
        },
    )
    if in_flight is not None and in_flight["not_before"] and in_flight["state"] != "published":
        if in_flight["slot"] != slot.key:
            run.decide(
                channel.name, slot, platform_name, "busy",
                f"post {in_flight['id']} waits for its moment {in_flight['not_before']}"
                f" (slot {in_flight['slot']})", in_flight["id"],
            )  # fmt: skip
        return None  # this slot's own post, waiting for its paced moment
    if in_flight is not None:
        episode = get_episode(run.db, in_flight["episode_id"])
    else:
        episode, why = _choose_episode(run, channel, platform)
        if episode is None:
            outcome, _, detail = why.partition(": ")
            reason = (
                detail
                or {
                    "nothing_ready": "no ready episode this platform has not had",
                    "waiting_for_approval": "ready episodes wait for `autoretto approve`",
                }[outcome]
            )
            run.decide(channel.name, slot, platform_name, outcome, reason)
            return None
        if channel.dry_run:
            record = _record_dry_run(run, channel, slot, platform, episode)
            run.decide(
                channel.name, slot, platform_name, "dry_run",
                f"direct_publishing is off: what would be sent is in {record}",
            )  # fmt: skip
            return None
        # Films keep the creator's own times: pacing is for the daily episodes.
        moment = (
            slot.at
            if channel.kind != "episode"
            else pace.slot_moment(
                run.pace,
                pace.SlotJob(
                    channel.name, platform_name, slot.key, slot.at, channel.catch_up_window
                ),
                _account_moments(run.db, platform_name, slot.at, episode["id"]),
            )
        )
        if moment is None:
            run.decide(
                channel.name, slot, platform_name, "refused_by_limit",
                "no moment inside the catch-up window keeps a human pace on this account",
            )  # fmt: skip
            return None
        if moment > run.now:
            _defer(run, episode, platform_name, slot, moment)
            return None
    result = send_post(
        run.posting, platform, episode, publish_at=slot.at, slot=slot.key, slot_at=slot.at_text
    )
    run.decide(channel.name, slot, platform_name, result.outcome, result.reason, result.post_id)
    return result


def _record_dry_run(
    run: Run, channel: ChannelConfig, slot: Slot, platform: Platform, episode: dict
) -> str:
    """Write exactly what a post would send, beside the film; returns the file's path."""
    import json

    from .episodes import episode_view

    view = episode_view(episode)
    facts = {
        "platform": platform.name,
        "channel": channel.episode_channel,
        "slot": slot.key,
        "slot_at": slot.at_text,
        "publish_at": slot.at_text,
        "episode_id": view.id,
        "video": view.main_video,
        "title": view.title,
        "description": view.description,
        "tags": list(view.tags),
        "text": view.texts.get(platform.name),
        "ai_generated": view.ai_generated,
        "recorded_at": iso(clock.now()),
    }
    folder = run.config.paths.media / "episodes" / str(view.id)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"dry-run-{slot.key.replace(':', '-')}-{platform.name}.json"
    path.write_text(json.dumps(facts, indent=2, ensure_ascii=False), encoding="utf-8")
    return str(path)


def _account_moments(
    db: Database, platform: str, slot_at: datetime, episode_id: int
) -> pace.AccountState:
    """The platform account's posting moments around a slot, for the pacing rules."""
    moments = [
        from_iso(r["moment"])
        for r in rows(
            db,
            "SELECT COALESCE(published_at, not_before) AS moment FROM posts"
            " WHERE platform = :platform AND episode_id != :episode"
            " AND COALESCE(published_at, not_before) BETWEEN :start AND :end",
            {
                "platform": platform,
                "episode": episode_id,
                "start": iso(slot_at - timedelta(hours=28)),
                "end": iso(slot_at + timedelta(hours=2)),
            },
        )
    ]
    day_before = tuple(
        m for m in moments if timedelta(hours=20) <= slot_at - m <= timedelta(hours=28)
    )
    others = tuple(m for m in moments if abs(m - slot_at) <= timedelta(hours=2))
    return pace.AccountState(day_before=day_before, others=others)


def _defer(run: Run, episode: dict, platform: str, slot: Slot, moment: datetime) -> None:
    """Queue the slot's post for its paced moment; it is decided when it goes out."""
    post = ensure_post(run.db, episode=episode, platform=platform, slot=slot.key, now=run.now)
    execute(
        run.db,
        "UPDATE posts SET not_before = :moment, slot = :slot, slot_at = :at, updated_at = :now"
        " WHERE id = :id AND state IN ('queued', 'failed')",
        {
            "moment": iso(moment),
            "slot": slot.key,
            "at": slot.at_text,
            "now": iso(run.now),
            "id": post["id"],
        },
    )
    run.report.notes.append(
        f"{episode['channel']} {slot.key} {platform}: post {post['id']} goes out at {iso(moment)}"
    )


def run_pending(run: Run, *, wait: bool, sleep: Callable[[datetime], None]) -> None:
    """Send the paced posts whose moment has come; with `wait`, wait in-process for those due
    before the next cron tick. A post whose slot's window closed before its moment came (no
    run was there) is decided `missed`, and its episode goes on a later slot."""
    channels = {c.name: c for c in run.config.channels}
    while True:
        now = clock.now()
        later = []
        for post in rows(
            run.db,
            "SELECT * FROM posts WHERE not_before IS NOT NULL AND state IN ('queued', 'failed')"
            " ORDER BY not_before, id",
        ):
            channel = channels.get(post["channel"])
            if channel is None or post["slot_at"] is None:
                continue
            slot = Slot(from_iso(post["slot_at"]), post["slot"])
            moment = from_iso(post["not_before"])
            if now - slot.at > channel.catch_up_window:
                _clear_moment(run, post)
                run.decide(
                    channel.name, slot, post["platform"], "missed",
                    f"its paced moment {post['not_before']} passed while no run was there",
                    post["id"],
                )  # fmt: skip
            elif moment <= now:
                _send_paced(run, channel, post, slot, moment)
            else:
                later.append(moment)
        moments = pace.wait_for(run.pace, later, run.now, clock.now()) if wait else []
        if not moments:
            return
        sleep(moments[0])


def _clear_moment(run: Run, post: dict) -> None:
    execute(run.db, "UPDATE posts SET not_before = NULL WHERE id = ?", (post["id"],))


def _send_paced(run: Run, channel: ChannelConfig, post: dict, slot: Slot, moment: datetime) -> None:
    platform = run.platform(post["platform"])
    _clear_moment(run, post)
    blocked = (
        None if platform.is_connected() else f"{platform.title} is not connected"
    ) or platform.not_ready_reason()
    if blocked:
        run.decide(channel.name, slot, platform.name, "failed", blocked, post["id"])
        return
    posting = replace(run.posting, now=clock.now())
    result = send_post(
        posting,
        platform,
        get_episode(run.db, post["episode_id"]),
        publish_at=moment,
        slot=slot.key,
        slot_at=slot.at_text,
    )
    run.decide(channel.name, slot, platform.name, result.outcome, result.reason, result.post_id)
    if result.outcome == "posted":
        _set_slot_state(run, channel.name, slot, "filled")
        _release(run, channel.name, slot)


def _release(run: Run, channel: str, slot: Slot, *, claimed: bool = False) -> None:
    """Move the stamp to `slot` (releasing our claim when we hold one) and journal it."""
    with transaction(run.db):
        if claimed:
            moved = stamp.advance_stamp(run.db, channel, slot, run.id)
        else:
            moved = stamp.record_release(run.db, channel, slot)
        seq = journal.next_seq(run.db) if moved else None
    if seq is not None:
        journal.append(
            run.config.journal,
            {
                "seq": seq,
                "kind": "stamp",
                "at": iso(clock.now()),
                "channel": channel,
                "slot": slot.key,
                "slot_at": slot.at_text,
            },
        )


def _choose_episode(
    run: Run, channel: ChannelConfig, platform: Platform
) -> tuple[dict | None, str]:
    """The oldest episode the platform can take; when there is none and the channel produces,
    one is made right now."""

    def choose() -> tuple[dict | None, str]:
        return next_episode_for(
            run.db,
            channel,
            platform.name,
            unsuitable=lambda episode: platform.unsuitable_reason(episode_view(episode)),
        )

    episode, why = choose()
    if episode is None and why == "nothing_ready" and channel.produces:
        if make_on_demand(run, channel) is None:
            return None, f"nothing_ready: {run.make_failed[channel.name]}"
        episode, why = choose()
    return episode, why


def make_on_demand(run: Run, channel: ChannelConfig) -> dict | None:
    """Make one episode now (once per run and channel). Returns it when it is ready; on any
    other end, remembers why in `run.make_failed` and returns None."""
    from .pipeline import ProviderUnavailable
    from .produce import make_for_channel, make_notes

    if channel.name in run.make_failed:
        return None
    try:
        episode = make_for_channel(run.config, run.db, channel, run_id=run.id, now=run.now)
    except ProviderUnavailable as error:
        run.make_failed[channel.name] = f"making an episode failed for now: {error}"
        run.report.notes.append(f"{channel.name}: {error}")
        return None
    except AutorettoError as error:
        run.make_failed[channel.name] = f"making an episode failed: {error}"
        run.report.errors.append(f"{channel.name}: making an episode failed: {error}")
        return None
    if episode["state"] != "ready":
        run.make_failed[channel.name] = f"the episode made was rejected ({episode['reason']})"
        run.report.notes.append(f"{channel.name}: episode {episode['id']} {episode['reason']}")
        return None
    run.report.made.append(episode["id"])
    run.report.notes.extend(
        f"{channel.name}: episode {episode['id']}: {n}" for n in make_notes(episode)
    )
    return episode


def top_up(run: Run, channels: list[ChannelConfig]) -> None:
    """After the slots: make episodes until each producing channel has `ready_ahead` in
    stock, within the run's make budget (a long backlog is made over several runs)."""
    import time

    from .produce import unposted_ready

    deadline = time.monotonic() + run.config.make_budget.total_seconds()
    for channel in channels:
        if not channel.produces:
            continue
        while (
            time.monotonic() < deadline
            and channel.name not in run.make_failed
            and unposted_ready(run.db, channel.name) < channel.ready_ahead
        ):
            make_on_demand(run, channel)


def _finish_slot(run: Run, channel: ChannelConfig, slot: Slot, platforms: list[str]) -> None:
    outcomes = [
        r["outcome"]
        for r in rows(
            run.db,
            "SELECT outcome FROM decisions WHERE channel = ? AND slot = ?",
            (channel.name, slot.key),
        )
    ]
    faults.checkpoint("before_stamp")
    if "posted" in outcomes:
        _set_slot_state(run, channel.name, slot, "filled")
        _release(run, channel.name, slot, claimed=True)
        return
    _set_slot_state(run, channel.name, slot, "failed" if "failed" in outcomes else "empty")
    # Nothing was released: the stamp stays, but the slot is decided and never due again.
    with transaction(run.db):
        stamp.mark_decided_through(run.db, channel.name, slot.at)
        stamp.give_back_claim(run.db, channel.name, run.id)


def _set_slot_state(run: Run, channel: str, slot: Slot, state: str) -> None:
    execute(
        run.db,
        "INSERT INTO slots (channel, slot, slot_at, state, run_id, updated_at)"
        " VALUES (:channel, :slot, :at, :state, :run, :now)"
        " ON CONFLICT (channel, slot) DO UPDATE SET state = :state, run_id = :run,"
        " updated_at = :now WHERE state != 'missed'",
        {
            "channel": channel,
            "slot": slot.key,
            "at": slot.at_text,
            "state": state,
            "run": run.id,
            "now": iso(clock.now()),
        },
    )


def _record_missed(
    run: Run, channel: ChannelConfig, missed: tuple[Slot, ...], platforms: list[str]
) -> None:
    if not missed:
        return
    window = channel.catch_up_window
    for slot in reversed(missed):  # oldest first, as they happened
        late = run.now - slot.at
        reason = (
            f"found {_span(late)} after its time, outside the {_span(window)} catch-up window"
            if late > window
            else "a later slot was due; only the most recent slot is filled"
        )
        execute(
            run.db,
            "INSERT OR IGNORE INTO slots (channel, slot, slot_at, state, run_id, updated_at)"
            " VALUES (?, ?, ?, 'missed', ?, ?)",
            (channel.name, slot.key, slot.at_text, run.id, iso(run.now)),
        )
        for platform in platforms:
            run.decide(channel.name, slot, platform, "missed", reason)
    stamp.mark_decided_through(run.db, channel.name, missed[0].at)


def _clear_stale_claim(run: Run, channel: str, holder: str) -> None:
    execute(
        run.db,
        "UPDATE channels SET claim_run_id = NULL, claim_slot = NULL, claim_slot_at = NULL,"
        " claim_heartbeat_at = NULL WHERE name = :name AND claim_run_id = :holder"
        " AND claim_heartbeat_at < :stale_before",
        {"name": channel, "holder": holder, "stale_before": iso(run.stale_before)},
    )


def _span(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds % 86400 == 0 and seconds:
        return f"{seconds // 86400}d"
    if seconds >= 3600:
        hours, rest = divmod(seconds, 3600)
        return f"{hours}h{rest // 60:02d}m" if rest else f"{hours}h"
    return f"{seconds // 60}m"


# -- post-now ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PostNowResult:
    platform: str
    outcome: str
    reason: str
    post_id: int | None
    url: str | None


def post_now(
    config: Config,
    db: Database,
    channel_name: str,
    *,
    episode_id: int | None = None,
    announce: Callable[[datetime], None] | None = None,
    sleep: Callable[[datetime], None] = clock.sleep_until,
) -> tuple[dict, list[PostNowResult]]:
    """Post a ready episode now, outside the slots, to the channel's platforms.

    It goes out 20 s to 2 min after the command (a human pace; `announce` hears when), through
    the same post records as the slots, so a post-now and a slot can never both post one
    episode to one platform.
    """
    channel = config.channel(channel_name)
    # A person's mistake is refused before the run starts: it leaves no run row behind.
    episode = None if episode_id is None else postable_episode(db, channel.name, episode_id)
    with Run(config, db, "post-now") as run:
        hold = refuse_when_held(run)
        if hold:
            raise AutorettoError(hold)
        platforms = run.platforms_for(channel)
        if not platforms:
            raise UsageError(f'channel "{channel.name}" has no connected platform to post to')
        if episode is None:
            for name in platforms:
                found, _ = next_episode_for(db, channel, name, off_schedule=True)
                if found is not None and (episode is None or found["id"] < episode["id"]):
                    episode = found
            if episode is None:
                raise UsageError(
                    f'channel "{channel.name}" has no ready episode that its platforms have '
                    "not had (see `autoretto episodes`)"
                )
        moment = pace.post_now_moment(run.pace, run.now, run.id)
        if announce is not None:
            announce(moment)
        sleep(moment)
        run.posting = replace(run.posting, now=clock.now())
        results = []
        for name in platforms:
            platform = run.platform(name)
            blocked = (
                (None if platform.is_connected() else f"{platform.title} is not connected")
                or platform.not_ready_reason()
                or platform.unsuitable_reason(episode_view(episode))
            )
            if blocked:
                results.append(PostNowResult(name, "failed", blocked, None, None))
                continue
            result = send_post(run.posting, platform, episode, publish_at=run.posting.now)
            append_line(
                config.paths.run_log,
                decision_line(
                    at=iso(clock.now()),
                    run_id=run.id,
                    channel=channel.name,
                    slot="post-now",
                    platform=name,
                    outcome=result.outcome,
                    reason=result.reason,
                    post_id=result.post_id,
                ),
            )
            results.append(
                PostNowResult(name, result.outcome, result.reason, result.post_id, result.url)
            )
        return episode, results


# -- status --------------------------------------------------------------------------------


def status(
    config: Config,
    db: Database,
    now: datetime,
    *,
    only_channel: str | None = None,
    around: int = 3,
) -> dict[str, Any]:
    """Per channel: stamp, claim, due slot, recent and upcoming slots, ready count. Read-only."""
    channels = _cadences(config, only_channel)
    known = {r["name"]: r for r in rows(db, "SELECT * FROM channels")}
    ready_counts = _ready_counts(db)
    report = []
    for channel in channels:
        channel_row = known.get(channel.name)
        seen_at = from_iso(channel_row["schedule_seen_at"]) if channel_row else now
        if channel_row and channel_row["schedule_fingerprint"] != channel.schedule_fingerprint:
            seen_at = now  # the next run will see the edited schedule as new
        decided = _decided_through(channel_row) if channel_row else None
        result = due_rule(
            channel.schedule,
            window=channel.catch_up_window,
            now=now,
            seen_at=seen_at,
            decided_through=decided,
        )
        recorded = {
            r["slot"]: r["state"]
            for r in rows(
                db,
                "SELECT slot, state FROM slots WHERE channel = ? ORDER BY slot_at DESC LIMIT ?",
                (channel.name, around * 4),
            )
        }
        missed_keys = {s.key for s in result.missed}
        due_key = result.due.key if result.due else None

        recent = take(channel.schedule.walk_back(now), around)
        upcoming = take(channel.schedule.walk_forward(now), around)
        claim = None
        if channel_row and channel_row["claim_run_id"]:
            claim = {
                "run_id": channel_row["claim_run_id"],
                "slot": channel_row["claim_slot"],
                "heartbeat_at": channel_row["claim_heartbeat_at"],
            }
        report.append(
            {
                "channel": channel.name,
                "timezone": channel.timezone,
                "stamp": channel_row["last_release_at"] if channel_row else None,
                "claim": claim,
                "due": {"slot": result.due.key, "slot_at": result.due.at_text}
                if result.due
                else None,
                "ready": ready_counts.get(channel.name, 0),
                "recent": [
                    {
                        "slot": s.key,
                        "slot_at": s.at_text,
                        "state": _slot_state(s.key, recorded, due_key, missed_keys),
                    }
                    for s in reversed(recent)
                ],
                "upcoming": [
                    {"slot": s.key, "slot_at": s.at_text, "state": "waiting"} for s in upcoming
                ],
            }
        )
    from .incidents import list_incidents

    hold = journal.restore_hold(db, config.journal)
    with Run(config, db, "status", record=False, now=now) as looking:
        expiring = expiring_sign_ins(looking)
    return {
        "now": iso(now),
        "held": hold.reason if hold else None,
        "expiring": expiring,
        "platform_warnings": platform_warnings(config, db, now),
        "incidents": list_incidents(db, open_only=True),
        "needs_person": rows(
            db,
            "SELECT id, channel, platform, state, reason FROM posts"
            " WHERE state IN ('needs_person', 'may_be_live') ORDER BY id",
        ),
        "interrupted": interrupted_imports(db, now, config.stale_after),
        "channels": report,
    }


def _slot_state(key: str, recorded: dict[str, str], due_key: str | None, missed: set[str]) -> str:
    """A past slot's state for `status`: what was recorded, else what the next run will do."""
    if key in recorded:
        return recorded[key]
    if key == due_key:
        return "due"
    return "missed" if key in missed else "empty"


def _ready_counts(db: Database) -> dict[str, int]:
    """Ready episodes per channel that are not yet published everywhere they were posted to."""
    counts: dict[str, int] = {}
    for entry in rows(
        db,
        "SELECT e.channel AS channel, COUNT(*) AS ready FROM episodes e"
        " WHERE e.state IN ('ready', 'approved') AND e.off_schedule = 0"
        " AND NOT EXISTS (SELECT 1 FROM posts p WHERE p.episode_id = e.id"
        " AND p.state = 'published') GROUP BY e.channel",
    ):
        counts[entry["channel"]] = entry["ready"]
    return counts


def list_decisions(
    db: Database, *, channel: str | None = None, since: datetime | None = None
) -> list[dict[str, Any]]:
    clauses, params = [], []
    if channel:
        clauses.append("channel = ?")
        params.append(channel)
    if since:
        clauses.append("slot_at >= ?")
        params.append(iso(since))
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    return rows(
        db,
        "SELECT channel, slot, slot_at, platform, outcome, reason, decided_at, post_id"
        f" FROM decisions{where} ORDER BY slot_at, channel, id",
        tuple(params),
    )


# -- a person's word: confirm, look, journal, resume -----------------------------------------


def confirm_post(config: Config, db: Database, post_id: int, *, live_url: str | None) -> dict:
    """`autoretto confirm POST --live URL | --not-live`."""
    from .posts import confirm, get_post

    get_post(db, post_id)  # an unknown post is refused before the run starts (no run row)
    with Run(config, db, "confirm") as run:
        return confirm(run.posting, post_id, live_url=live_url)


def look_post(config: Config, db: Database, post_id: int) -> PostResult:
    """`autoretto look POST`: look for its last attempt on the platform, then send if absent."""
    from .posts import get_post, look

    # A person's mistake is refused before the run starts: it leaves no run row behind.
    post = get_post(db, post_id)
    if post["platform"] in ("tiktok", "pinterest"):
        raise UsageError(
            f"post {post_id} is made by a person: run `autoretto post {post['platform']} "
            f"{post['episode_id']}`, which looks for the last attempt before sending"
        )
    if post["platform"] not in REGISTRY:
        raise UsageError(f"post {post_id} is for {post['platform']}, unknown to this version")
    with Run(config, db, "look") as run:
        hold = refuse_when_held(run)
        if hold:
            raise AutorettoError(hold)
        platform = run.platform(post["platform"])
        return look(run.posting, platform, post_id)


def journal_report(config: Config, db: Database) -> dict[str, Any]:
    """What the journal holds that the database lacks, and whether posting is held."""
    hold = journal.restore_hold(db, config.journal)
    return {
        "journal": str(config.journal),
        "database_seq": journal.database_seq(db),
        "journal_seq": journal.journal_seq(config.journal),
        "held": hold.reason if hold else None,
        "missing": journal.missing_entries(db, config.journal),
    }


def resume(config: Config, db: Database, *, checked: bool) -> dict[str, Any]:
    """Write what the journal knows back into a restored database, then lift the hold.

    Every publish the database forgot becomes a `published` post again (its episode row is
    recreated as a placeholder when the old database never had it, which also moves the next
    id past it), and every stamp move moves the stamp again. While held, no episode is made or
    imported, so no new episode can take the id of one the journal names.
    """
    report = journal_report(config, db)
    if report["held"] is None:
        return {**report, "written_back": 0}
    if not checked:
        raise UsageError(
            "check first what the platforms already have (`autoretto journal` lists what the "
            "database forgot), then run `autoretto resume --checked`"
        )
    missing = report["missing"]
    moment = iso(clock.now())
    with transaction(db):
        for entry in missing:
            if entry["kind"] == "publish":
                _write_back_publish(db, entry, moment)
            elif entry["kind"] == "stamp":
                execute(
                    db,
                    "UPDATE channels SET last_release_at = MAX(COALESCE(last_release_at, ''), :at),"
                    " decided_through = MAX(COALESCE(decided_through, ''), :at),"
                    " claim_run_id = NULL, claim_slot = NULL, claim_slot_at = NULL,"
                    " claim_heartbeat_at = NULL WHERE name = :name",
                    {"at": entry["slot_at"], "name": entry["channel"]},
                )
                execute(
                    db,
                    "INSERT INTO slots (channel, slot, slot_at, state, run_id, updated_at)"
                    " VALUES (:channel, :slot, :at, 'filled', 'resume', :now)"
                    " ON CONFLICT (channel, slot) DO UPDATE SET state = 'filled'",
                    {
                        "channel": entry["channel"], "slot": entry["slot"],
                        "at": entry["slot_at"], "now": moment,
                    },
                )  # fmt: skip
        execute(
            db,
            "UPDATE meta SET value = :seq WHERE key = 'journal_seq'",
            {"seq": report["journal_seq"]},
        )
    return {**report, "held": None, "written_back": len(missing)}


def _write_back_publish(db: Database, entry: dict[str, Any], moment: str) -> None:
    execute(
        db,
        "INSERT OR IGNORE INTO episodes (id, channel, state, title, off_schedule, source,"
        " created_at, updated_at) VALUES (:id, :channel, 'ready', :title, 1, :source, :now, :now)",
        {
            "id": entry["episode_id"],
            "channel": entry["channel"],
            "title": f"(restored from the journal: episode {entry['episode_id']})",
            "source": '{"restored_from_journal": true}',
            "now": moment,
        },
    )
    execute(
        db,
        "INSERT INTO posts (id, episode_id, channel, platform, state, url, platform_post_id,"
        " attempts, slot, created_at, updated_at, published_at) VALUES (:post_id, :episode_id,"
        " :channel, :platform, 'published', :url, :pid, 1, :slot, :now, :now, :at)"
        " ON CONFLICT (episode_id, platform) DO UPDATE SET state = 'published', url = :url,"
        " platform_post_id = :pid, run_id = NULL, reason = 'written back from the journal'",
        {
            "post_id": entry["post_id"],
            "episode_id": entry["episode_id"],
            "channel": entry["channel"],
            "platform": entry["platform"],
            "url": entry.get("url"),
            "pid": entry.get("platform_post_id"),
            "slot": entry.get("slot"),
            "now": moment,
            "at": entry["at"],
        },
    )
