"""`run-due`: channels → due slots → decisions → posts, in that order, and nothing else.

For each channel the run applies the due rule (slots.py), claims the due slot (ledger.claims),
and gives every chosen platform, in the registry's order, exactly one decision for that slot
(decisions.py); posting itself goes through the post state machine (posts.py), which is what
makes a post-now and a slot, or two overlapping runs, unable to send one episode twice. A
platform still busy with an earlier post makes its slot wait, not lose its post: waiting slots
are settled after the due slots of every run (only the most recent slot of a platform is ever
filled), at its end, and by the post-now that freed them.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any

from .. import clock, decisions, faults, journal, pace, replies
from ..clock import from_iso, iso
from ..config import ChannelConfig, Config
from ..episodes import clean_interrupted_imports, episode_view, get_episode, next_episode_for
from ..errors import AutorettoError, Exit, environment_problem
from ..health import tell_trouble
from ..ledger import claims, runs
from ..ledger import episodes as episodes_ledger
from ..ledger.claims import SlotState
from ..ledger.store import DatabaseError
from ..liveness import Gone
from ..notify import heartbeat as heartbeat_ping
from ..platforms.base import Platform
from ..platforms.notices import tell_platform_warnings
from ..posts import PostResult, account_moments, clear_moment, defer_post, in_flight, send_post
from ..posts import paced_posts as paced_posts_now
from ..runlog import rotate_logs
from ..slots import DueResult, Schedule, Seen, Slot, due_rule, span
from .carousels import serve_carousels
from .run import (
    Run,
    RunProgress,
    RunReport,
    cadences,
    host_order,
    refuse_when_clock_apart,
    refuse_when_held,
    register_channels,
    warn_expiring_sign_ins,
)

if TYPE_CHECKING:
    from ..ledger.store import Store as Database

log = logging.getLogger("autoretto.engine")


def run_due(
    config: Config,
    db: Database,
    *,
    only_channel: str | None = None,
    make: bool = True,
    wait: bool = True,
    sleep: Callable[[datetime], None] = clock.sleep_until,
    progress: RunProgress | None = None,
) -> RunReport:
    """Send paced posts whose moment came, settle slots that waited, serve every channel's due
    slot once (or only `only_channel`'s), top up the stocks of ready episodes (unless `make`
    is False: then no episode is made at all, not even on demand), then (unless `wait` is
    False) wait in-process for paced posts due before the next cron tick. Never raises for one
    channel's trouble: it is reported and the other channels go on. `progress` hears each step
    (a terminal shows them; cron does not)."""
    channels = host_order(config, db, cadences(config, only_channel))
    rotate_logs(config.paths.logs)  # cron.log (cron's shell appends to it) and run.log
    with monitored(config) as ended:
        # A clock apart is refused inside the monitor's pings (a fail ping), before the run
        # records or sends anything.
        refuse_when_clock_apart(db)
        with Run(config, db, "run-due", make=make, progress=progress) as run:
            ended.append(run.report)
            if not wait:  # --no-wait: a look at a post that must wait is left to a later run too
                run.posting = replace(run.posting, waits=False)
            try:
                hold = refuse_when_held(run)
            except journal.JournalUnreachable as error:  # nothing sent or made: the next run tries
                run.report.owed.append(str(error))
                return run.report
            if hold:
                run.report.held = hold
            else:
                run.report.notes.extend(clean_interrupted_imports(config, db, run.now))
                rows_by_name = register_channels(config, db, run.now)
                run_pending(run, wait=False, sleep=sleep)  # older paced posts go before new slots
                for channel in channels:
                    run.report.channels += 1
                    guarded(
                        run, channel, lambda c=channel: serve_channel(run, c, rows_by_name[c.name])
                    )
                serve_waits(run, channels)  # after the due slots: only the most recent is filled
                serve_carousels(run)
                if make:
                    top_up(run, channels)
                warn_expiring_sign_ins(run)
                tell_platform_warnings(
                    run.config, run.db, run.now, run.posting.tell, run.report.notes
                )
                # A platform that cannot post, a stock about to run out: told once each.
                tell_trouble(run.config, run.db, run.now, run.posting.tell, run.report.notes)
                run_pending(run, wait=wait, sleep=sleep)
                serve_waits(run, channels)
                serve_replies(run, wait=wait, sleep=sleep)
                run.report.waiting = decisions.waits(db, [c.name for c in channels])
                apply_retention(run)
                run.report.post_states = post_states(db, run.report.decisions, run.report.sent)
    return run.report


def serve_replies(run: Run, *, wait: bool, sleep: Callable[[datetime], None]) -> None:
    """After the slots: the reply sessions whose moment has come (replies.run_sessions), in
    the run's report. One query when nothing is approved; trouble with replies is reported and
    never stops the run."""
    try:
        report = replies.run_sessions(run, wait=wait, sleep=sleep)
    except (AutorettoError, DatabaseError) as error:
        run.report.errors.append(f"replies: {error}")
        return
    run.report.replies = report.as_json()
    run.report.notes.extend(f"replies: {note}" for note in report.notes)


@contextmanager
def monitored(config: Config) -> Iterator[list[RunReport]]:
    """The cron monitor's pings around a run: `start`, then `success` or `fail` with the
    run's report, and `fail` whatever escaped the run (borgmatic sends it from its monitoring
    context's exit), so a monitor never waits for an end ping that never comes. The caller
    puts its run's report in the list it is given as soon as it has one."""
    heartbeat_ping(config.notify, "start")
    ended: list[RunReport] = []
    try:
        yield ended
    except BaseException as error:
        failed = ended[0].as_json() if ended else None
        if failed is not None:
            failed["errors"] = [*failed["errors"], f"the run stopped: {type(error).__name__}"]
        heartbeat_ping(config.notify, "fail", failed)
        raise
    report = ended[0]
    trouble = report.exit_code in (Exit.NEEDS_PERSON, Exit.HELD)
    heartbeat_ping(config.notify, "fail" if trouble else "success", report.as_json())


def post_states(db: Database, decided: list[dict], sent: list[int]) -> dict[int, str]:
    """The state of each post the decisions name, or whose request went out, as it is now."""
    return runs.post_states(db, sorted({d["post_id"] for d in decided if d["post_id"]} | set(sent)))


def apply_retention(run: Run) -> None:
    """The retention policy ([media] keep) once the run's posts are out; what it removed, or
    could not remove, is a note of the run."""
    from ..retention import prune

    try:
        result = prune(run.config, run.db, now=run.now)
    except (OSError, DatabaseError) as error:  # the posts are out; this waits for a next run
        run.report.notes.append(f"retention: not applied this time ({error})")
        return
    if result["pruned"]:
        run.report.notes.append(
            f"retention: removed the working files of {len(result['pruned'])} published "
            f'episodes ({result["bytes"] / 1e6:.1f} MB; [media] keep = "{result["keep"]}")'
        )
    run.report.notes.extend(f"retention: {error}" for error in result["errors"])


def guarded(run: Run, channel: ChannelConfig, work: Callable[[], object]) -> None:
    """One channel's work; its trouble is reported and the other channels go on."""
    try:
        work()
    except AutorettoError as error:
        run.report.errors.append(f"{channel.name}: {error}")
    except Exception as error:  # one channel's bug must not stop the others
        problem = environment_problem(error)  # a full disk is no bug: no traceback
        if problem is None:
            log.exception("channel %s failed", channel.name)
            problem = f"{type(error).__name__}: {error}"
        run.report.errors.append(f"{channel.name}: {problem}")


# -- the due slot ------------------------------------------------------------------------------


def serve_channel(run: Run, channel: ChannelConfig, channel_row: dict) -> None:
    result = due_of(run.db, channel, channel_row, run.now)
    if result.latest is None:
        return
    if result.due is None and not result.missed:
        claims.mark_decided_through(run.db, channel.name, iso(result.latest.at))
        return
    holder = channel_row["claim_run_id"]
    gone = run.gone(holder)
    if holder is not None and gone is None:
        log.info("%s: claimed by run %s, leaving it alone", channel.name, holder)
        return
    platforms = run.platforms_for(channel)
    if result.due is None:
        if gone is not None:
            claims.clear_gone_claim(run.db, channel.name, holder=gone.run_id, beat=gone.beat)
        record_missed(run, channel, result, platforms)
        return

    slot = result.due
    if gone is None:
        owned = claims.claim_slot(
            run.db, channel.name, slot.key, slot.at_text, run.id, iso(run.now)
        )
    else:
        owned = claims.take_over_claim(
            run.db, channel.name, slot.key, slot.at_text,
            holder=gone.run_id, beat=gone.beat, run_id=run.id, now=iso(run.now),
        )  # fmt: skip
        if owned:
            log.info("%s: took over the claim of run %s (%s)", channel.name, holder, gone.why)
    if not owned:
        return
    faults.checkpoint("after_claim")
    run.stage(channel.name, f"slot {slot.key} ({channel.timezone}) is due: claimed it")
    record_missed(run, channel, result, platforms)
    decisions.set_slot_state(run.db, run.id, channel.name, slot, SlotState.DUE)

    sent = False
    try:
        for platform_name in platforms:
            served = decide_platform(run, channel, slot, platform_name)
            sent = sent or served.sent
    except BaseException:
        if not sent:
            claims.give_back_claim(run.db, channel.name, run.id)
        raise
    finish_slot(run, channel, slot)


def due_of(
    db: Database, channel: ChannelConfig, channel_row: dict | None, now: datetime
) -> DueResult:
    """The due rule for one channel as the database has it, at `now`. A channel or an edit that
    no run has seen yet is taken as seen now, as the next run will see it (ledger.claims.
    register_channel; `status` looks ahead so). Every slot up to now decided, or older than the
    channel: an answer without a read."""
    if channel_row is None:  # created now, nothing decided: a slot at `now` itself is owed
        return due_rule(
            channel.schedule, window=channel.catch_up_window, now=now, seen_at=now,
            decided_through=None,
        )  # fmt: skip
    nothing = DueResult(None, None, ())
    edited = channel_row["schedule_fingerprint"] != channel.schedule_fingerprint
    watermark = _instant(channel_row["decided_through"])
    seen_at = edit_seen_at(now, watermark) if edited else from_iso(channel_row["schedule_seen_at"])
    latest = channel.schedule.latest_at_or_before(now)
    if (
        latest is None
        or (watermark is not None and latest.at <= watermark)
        or latest.at < from_iso(channel_row["created_at"])
    ):
        return nothing
    return due_rule(
        channel.schedule,
        window=channel.catch_up_window,
        now=now,
        seen_at=seen_at,
        decided_through=watermark,
        earlier=schedule_history(db, channel_row, including_current=edited),
        decided=decisions.decided_slots(db, channel.name, watermark),
        stamp=_instant(channel_row["last_release_at"]),
    )


def edit_seen_at(now: datetime, decided_through: datetime | None) -> datetime:
    """When an edit seen at `now` counts as first seen: never before the decided-through mark.
    Every owed slot up to the mark is decided, so the channel's time is past it even when the
    clock was set back since; an edit cannot reopen that time. A slot it adds at or before the
    mark was owed by no schedule (neither due nor missed); one both schedules hold was owed by
    the old one, and is decided. (SQL twin: `ledger.claims.register_channel`.)"""
    if decided_through is None or decided_through <= now:
        return now
    return decided_through


def schedule_history(
    db: Database, channel_row: dict, *, including_current: bool = False
) -> tuple[Seen, ...]:
    """The schedules the channel had before its current one, oldest first (with the current
    one too, for a look at an edit no run has seen yet)."""
    return tuple(
        Seen(from_iso(found["seen_at"]), Schedule.from_spec(found["spec"]))
        for found in claims.schedules_before(
            db, channel_row["name"], channel_row["schedule_seen_at"], including=including_current
        )
    )


def _instant(text: str | None) -> datetime | None:
    return from_iso(text) if text else None


def record_missed(
    run: Run, channel: ChannelConfig, result: DueResult, platforms: list[str]
) -> None:
    if not result.missed:
        return
    for slot in reversed(result.missed):  # oldest first, as they happened
        decisions.record_missed_slot(run.db, run.id, channel.name, slot)
        for platform in platforms:
            run.decide(channel.name, slot, platform, "missed", result.reasons[slot.key])
    settled = result.settled_through or result.missed[0].at
    claims.mark_decided_through(run.db, channel.name, iso(settled))


class PlatformState(Enum):
    """What became of one platform of one slot once a step was taken."""

    DECIDED = "decided"
    WAITING = "waiting"  # busy: decided later
    DEFERRED = "deferred"  # a paced post waits for its moment and is decided when it goes out


@dataclass(frozen=True)
class Served:
    """What became of one platform of one slot (`state`), and whether a request went out."""

    state: PlatformState
    sent: bool = False  # a request went out (the slot's claim cannot be given back)


class StepAction(Enum):
    """What serving one platform of one slot does next (`next_step`); `run-due --dry-run`
    shows its value."""

    DECIDED = "decided"  # already, by the run whose claim this was
    DEFERRED = "deferred"  # this slot's post waits for its paced moment
    DECIDE = "decide"  # record the step's `outcome`
    WAIT = "wait"  # the platform is busy: the slot waits
    MAKE = "make"  # nothing is ready: make an episode first
    RECORD_DRY_RUN = "record_dry_run"  # a film before direct publishing
    DEFER = "defer"  # post the step's `episode` at its human-pace `moment`
    SEND = "send"  # post the step's `episode` now


@dataclass(frozen=True)
class Step:
    """What serving one platform of one slot does next, found without writing anything: its
    `action`, and what that action needs (`outcome` and `reason` to decide, `reason` to wait,
    `episode` to record, defer or send, `moment` to defer)."""

    action: StepAction
    outcome: str = ""
    reason: str = ""
    episode: dict | None = None
    moment: datetime | None = None


def decide_platform(run: Run, channel: ChannelConfig, slot: Slot, platform_name: str) -> Served:
    step = next_step(run, channel, slot, platform_name)
    if step.action is StepAction.MAKE:
        platform = run.platform(platform_name)
        run.stage(channel.name, f"{platform_name}: nothing ready, making an episode first")
        try:
            make_one(run, channel, still_needed=lambda: choose(run, channel, platform)[0] is None)
        except MakingElsewhere as busy:
            return wait(run, channel, slot, platform_name, str(busy))
        step = next_step(run, channel, slot, platform_name, may_make=False)
    return take_step(run, channel, slot, platform_name, step)


def next_step(
    run: Run, channel: ChannelConfig, slot: Slot, platform_name: str, *, may_make: bool = True
) -> Step:
    """The next step for (slot, platform), read from the database and the platform's account
    alone: `run-due --dry-run` shows it, `decide_platform` takes it."""
    if claims.is_decided(run.db, channel.name, slot.key, platform_name):
        return Step(StepAction.DECIDED)
    platform = run.platform(platform_name)
    if not platform.is_connected():
        return Step(
            StepAction.DECIDE,
            "failed",
            f"{platform.title} is not connected: run `autoretto connect {platform_name}`",
        )
    blocked = platform.not_ready_reason()
    if blocked:
        return Step(StepAction.DECIDE, "failed", blocked)

    # A post already sent for this very slot is this slot's post; otherwise a post still on its
    # way keeps the platform busy with it (it is looked for, or sent again once safe).
    flying = in_flight(
        run.db,
        channel=channel.episode_channel,
        platform=platform_name,
        slot_key=slot.key,
        kind=channel.kind,
    )
    if flying is not None and flying["not_before"] and flying["state"] != "published":
        if flying["slot"] != slot.key:
            return Step(
                StepAction.WAIT,
                reason=f"post {flying['id']} waits for its moment {flying['not_before']}"
                f" (slot {flying['slot']})",
            )
        return Step(StepAction.DEFERRED)  # this slot's own post, waiting for its paced moment
    if flying is not None:
        return Step(StepAction.SEND, episode=get_episode(run.db, flying["episode_id"]))
    episode, why = choose(run, channel, platform)
    if episode is None:
        outcome, _, detail = why.partition(": ")
        if outcome == "nothing_ready" and channel.produces:
            if channel.name in run.make_failed:
                return Step(StepAction.DECIDE, "nothing_ready", run.make_failed[channel.name])
            busy = making_elsewhere(run, channel)
            if busy:
                return Step(StepAction.WAIT, reason=busy)
            if may_make and run.make:
                return Step(StepAction.MAKE)
        reason = (
            detail
            or {
                "nothing_ready": "no ready episode this platform has not had",
                "waiting_for_approval": "ready episodes wait for `autoretto approve`",
            }[outcome]
        )
        return Step(StepAction.DECIDE, outcome, reason)
    if channel.dry_run:
        return Step(StepAction.RECORD_DRY_RUN, episode=episode)
    # Films keep the creator's own times: pacing is for the daily episodes.
    moment = (
        slot.at
        if channel.kind != "episode"
        else pace.slot_moment(
            run.pace,
            pace.SlotJob(channel.name, platform_name, slot.key, slot.at, channel.catch_up_window),
            account_state(run, platform_name, slot.at, episode["id"]),
        )
    )
    if moment is None:
        return Step(
            StepAction.DECIDE,
            "refused_by_limit",
            "no moment inside the catch-up window keeps a human pace on this account",
        )
    if moment > run.now:
        return Step(StepAction.DEFER, episode=episode, moment=moment)
    return Step(StepAction.SEND, episode=episode, moment=moment)


def take_step(
    run: Run, channel: ChannelConfig, slot: Slot, platform_name: str, step: Step
) -> Served:
    """Do what `next_step` found (never `make`: `decide_platform` makes first)."""
    if step.action is StepAction.DECIDED:
        return Served(PlatformState.DECIDED)
    if step.action is StepAction.DEFERRED:
        return Served(PlatformState.DEFERRED)
    if step.action is StepAction.DECIDE:
        run.decide(channel.name, slot, platform_name, step.outcome, step.reason)
        return Served(PlatformState.DECIDED)
    if step.action is StepAction.WAIT:
        return wait(run, channel, slot, platform_name, step.reason)
    episode = step.episode
    assert episode is not None, step
    if step.action is StepAction.RECORD_DRY_RUN:
        record = record_dry_run(run, channel, slot, run.platform(platform_name), episode)
        run.decide(
            channel.name, slot, platform_name, "dry_run",
            f"direct_publishing is off: what would be sent is in {record}",
        )  # fmt: skip
        return Served(PlatformState.DECIDED)
    if step.action is StepAction.DEFER:
        assert step.moment is not None
        post = defer_post(
            run.db, episode=episode, platform=platform_name, slot_key=slot.key,
            slot_at=slot.at_text, moment=step.moment, now=run.now,
        )  # fmt: skip
        run.report.notes.append(
            f"{episode['channel']} {slot.key} {platform_name}: post {post['id']} goes out at "
            f"{iso(step.moment)}"
        )
        return Served(PlatformState.DEFERRED)
    run.stage(channel.name, f"{platform_name}: sending episode {episode['id']}")
    result = send_post(
        run.posting,
        run.platform(platform_name),
        episode,
        publish_at=slot.at,
        slot=slot.key,
        slot_at=slot.at_text,
    )
    return settle(run, channel, slot, platform_name, result)


def settle(
    run: Run, channel: ChannelConfig, slot: Slot, platform_name: str, result: PostResult
) -> Served:
    """A try's result as the slot's decision; busy is no decision: the slot waits. Nor is a
    failure before anything went out: the slot stays owed, and waits for a later run inside its
    window (ARCHITECTURE.md §3), then is missed with the reason."""
    if result.outcome == "busy":
        waiting = wait(run, channel, slot, platform_name, result.reason)
        return replace(waiting, sent=result.sent)
    if result.owed:
        run.tried.add((channel.name, slot.key, platform_name))  # once a run, not again now
        run.report.owed.append(f"{channel.name} {slot.key} {platform_name}: {result.reason}")
        return wait(run, channel, slot, platform_name, result.reason)
    run.decide(channel.name, slot, platform_name, result.outcome, result.reason, result.post_id)
    return Served(PlatformState.DECIDED, result.sent)


def wait(run: Run, channel: ChannelConfig, slot: Slot, platform: str, reason: str) -> Served:
    decisions.record_wait(
        run.db, channel=channel.name, slot=slot, platform=platform, reason=reason, now=run.now
    )
    return Served(PlatformState.WAITING)


def finish_slot(run: Run, channel: ChannelConfig, slot: Slot) -> None:
    faults.checkpoint("before_stamp")
    if settle_slot(run, channel, slot):
        release(run, channel.name, slot, claimed=True)
        return
    # Nothing was released: the stamp stays, but the slot is decided and never due again.
    claims.finish_slot(run.db, channel.name, iso(slot.at), run.id)


def settle_slot(run: Run, channel: ChannelConfig, slot: Slot) -> bool:
    """Write the slot's state from its decisions and waits; True when a platform posted it."""
    outcomes = claims.slot_outcomes(run.db, channel.name, slot.key)
    if SlotState.POSTED in outcomes:
        state = SlotState.POSTED
    elif any(w["slot"] == slot.key for w in decisions.waits(run.db, [channel.name])):
        state = SlotState.WAITING
    elif SlotState.FAILED in outcomes:
        state = SlotState.FAILED
    elif outcomes and all(outcome == SlotState.MISSED for outcome in outcomes):
        state = SlotState.MISSED
    else:
        state = SlotState.EMPTY
    decisions.set_slot_state(run.db, run.id, channel.name, slot, state)
    return state is SlotState.POSTED


def release(run: Run, channel: str, slot: Slot, *, claimed: bool = False) -> None:
    """Move the stamp to `slot` (releasing our claim when we hold one) and journal it."""
    moved = claims.release_slot(
        run.db,
        channel,
        slot.at_text,
        run_id=run.id if claimed else None,
        number=lambda locked: journal.take(
            locked,
            run.config.journal,
            {
                "kind": "stamp",
                "at": iso(clock.now()),
                "channel": channel,
                "slot": slot.key,
                "slot_at": slot.at_text,
            },
        ),
    )
    if moved:
        try:
            journal.catch_up(run.db, run.config.journal)
        except journal.JournalUnreachable as error:  # the next run puts the line first
            log.warning("%s: %s", channel, error)


def held_by(gone: Gone | None) -> dict[str, Any]:
    """A take-over's condition for a claim that may be held: the `holder` judged gone and the
    `beat` it was judged by (both None: only a free claim, or our own, is taken)."""
    return {"holder": gone.run_id if gone else None, "beat": gone.beat if gone else None}


# -- slots that wait ---------------------------------------------------------------------------


def serve_waits(run: Run, channels: list[ChannelConfig]) -> None:
    """Settle every waiting (slot, platform) of `channels` whose platform is free now, inside
    the slot's window; one whose window closed while it waited is missed, with the reason."""
    by_name = {c.name: c for c in channels}
    newest_first = sorted(decisions.waits(run.db, by_name), key=lambda w: w["slot_at"])[::-1]
    for waiting in newest_first:
        channel = by_name[waiting["channel"]]
        guarded(run, channel, lambda c=channel, w=waiting: _serve_wait(run, c, w))


def _serve_wait(run: Run, channel: ChannelConfig, waiting: dict) -> None:
    slot = Slot(from_iso(waiting["slot_at"]), waiting["slot"])
    platform = waiting["platform"]
    if (channel.name, slot.key, platform) in run.tried:
        return  # it failed in this run before anything went out: a later run tries again
    now = clock.now()
    holder = claims.wait_holder(run.db, channel.name, slot.key, platform)
    gone = run.gone(holder)
    if not claims.claim_wait(
        run.db, channel.name, slot.key, platform, run.id, now=iso(now), **held_by(gone)
    ):
        return  # another live run is settling it
    served = Served(PlatformState.WAITING)
    try:
        newer = claims.newer_slot(run.db, channel.name, platform, waiting["slot_at"])
        if newer is not None:
            run.decide(
                channel.name, slot, platform, "missed",
                f"waited for the platform ({waiting['reason']}) while the later slot {newer}"
                " came; only the most recent slot is filled",
            )  # fmt: skip
            served = Served(PlatformState.DECIDED)
        elif now - slot.at > channel.catch_up_window:
            run.decide(
                channel.name, slot, platform, "missed",
                f"waited for the platform ({waiting['reason']}) until its "
                f"{span(channel.catch_up_window)} catch-up window closed",
            )  # fmt: skip
            served = Served(PlatformState.DECIDED)
        else:
            run.posting = replace(run.posting, now=now)
            served = decide_platform(run, channel, slot, platform)
    finally:
        if served.state is PlatformState.WAITING:
            claims.release_wait(run.db, channel.name, slot.key, platform, run.id)
        else:
            claims.end_wait(run.db, channel.name, slot.key, platform)
    if served.state is not PlatformState.WAITING and settle_slot(run, channel, slot):
        release(run, channel.name, slot)


# -- paced posts -------------------------------------------------------------------------------


def run_pending(run: Run, *, wait: bool, sleep: Callable[[datetime], None]) -> None:
    """Send the paced posts whose moment has come; with `wait`, wait in-process for those due
    before the next cron tick. A post whose slot's window closed before its moment came (no
    run was there) is decided `missed`, and its episode goes on a later slot."""
    channels = {c.name: c for c in run.config.channels}
    while True:
        now = clock.now()
        later = []
        for post in paced_posts_now(run.db):
            channel = channels.get(post["channel"])
            if channel is None or post["slot_at"] is None:
                continue
            slot = Slot(from_iso(post["slot_at"]), post["slot"])
            moment = from_iso(post["not_before"])
            if now - slot.at > channel.catch_up_window:
                clear_moment(run.db, post["id"])
                run.decide(
                    channel.name, slot, post["platform"], "missed",
                    f"its paced moment {post['not_before']} passed while no run was there",
                    post["id"],
                )  # fmt: skip
            elif moment <= now:
                send_paced(run, channel, post, slot, moment)
            else:
                later.append(moment)
        moments = pace.wait_for(run.pace, later, run.now, clock.now()) if wait else []
        if not moments:
            return
        sleep(moments[0])


def send_paced(run: Run, channel: ChannelConfig, post: dict, slot: Slot, moment: datetime) -> None:
    platform = run.platform(post["platform"])
    clear_moment(run.db, post["id"])
    blocked = (
        None if platform.is_connected() else f"{platform.title} is not connected"
    ) or platform.not_ready_reason()
    if blocked:
        run.decide(channel.name, slot, platform.name, "failed", blocked, post["id"])
        return
    run.stage(channel.name, f"{platform.name}: sending post {post['id']} at its paced moment")
    posting = replace(run.posting, now=clock.now())
    result = send_post(
        posting,
        platform,
        get_episode(run.db, post["episode_id"]),
        publish_at=moment,
        slot=slot.key,
        slot_at=slot.at_text,
    )
    settle(run, channel, slot, platform.name, result)
    if result.outcome == "posted":
        decisions.set_slot_state(run.db, run.id, channel.name, slot, SlotState.POSTED)
        release(run, channel.name, slot)


def account_state(run: Run, platform: str, slot_at: datetime, episode_id: int) -> pace.AccountState:
    """The platform account's posting moments around a slot, for the pacing rules."""
    moments = account_moments(
        run.db,
        platform=platform,
        episode_id=episode_id,
        start=slot_at - timedelta(hours=28),
        end=slot_at + timedelta(hours=2),
    )
    day_before = tuple(
        m for m in moments if timedelta(hours=20) <= slot_at - m <= timedelta(hours=28)
    )
    others = tuple(m for m in moments if abs(m - slot_at) <= timedelta(hours=2))
    return pace.AccountState(day_before=day_before, others=others)


def record_dry_run(
    run: Run, channel: ChannelConfig, slot: Slot, platform: Platform, episode: dict
) -> str:
    """Write exactly what a post would send, beside the film; returns the file's path."""
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


# -- making episodes ---------------------------------------------------------------------------


class MakingElsewhere(Exception):
    """Another live run is making this channel's episodes."""


def choose(run: Run, channel: ChannelConfig, platform: Platform) -> tuple[dict | None, str]:
    """The oldest episode the platform can take, else why not (episodes.next_episode_for)."""
    return next_episode_for(
        run.db,
        channel,
        platform.name,
        unsuitable=lambda episode: platform.unsuitable_reason(episode_view(episode)),
    )


def making_elsewhere(run: Run, channel: ChannelConfig) -> str | None:
    """Why the channel's make is left to another run (a live one holds its claim), else None."""
    holder = claims.making_by(run.db, channel.name)
    if holder is not None and holder != run.id and run.gone(holder) is None:
        return f"an episode for {channel.name} is being made by run {holder}"
    return None


def make_one(run: Run, channel: ChannelConfig, *, still_needed: Callable[[], bool]) -> dict | None:
    """Make one episode under the channel's make claim, if it is `still_needed()` once the
    claim is ours (a racing run may have made it meanwhile). Returns it when it is ready; on
    any other end, remembers why in `run.make_failed` and returns None. Raises MakingElsewhere
    when another live run holds the claim."""
    from ..pipeline import ProviderUnavailable
    from ..produce import make_for_channel, make_notes

    if channel.name in run.make_failed:
        return None
    holder = claims.making_by(run.db, channel.name)
    gone = run.gone(holder)
    if not claims.claim_making(run.db, channel.name, run.id, now=iso(clock.now()), **held_by(gone)):
        raise MakingElsewhere(
            making_elsewhere(run, channel)
            or f"an episode for {channel.name} is being made by another run"
        )
    try:
        if not still_needed():
            return None
        run.stage(channel.name, "making an episode")
        episode = make_for_channel(
            run.config,
            run.db,
            channel,
            run_id=run.id,
            now=run.now,
            progress=run.making(channel.name),
        )
    except ProviderUnavailable as error:
        run.make_failed[channel.name] = f"making an episode failed for now: {error}"
        run.report.notes.append(f"{channel.name}: {error}")
        return None
    except AutorettoError as error:
        run.make_failed[channel.name] = f"making an episode failed: {error}"
        run.report.errors.append(f"{channel.name}: making an episode failed: {error}")
        return None
    finally:
        claims.release_making(run.db, channel.name, run.id)
    if episode["state"] != "ready":
        run.make_failed[channel.name] = f"the episode made was rejected ({episode['reason']})"
        run.report.notes.append(f"{channel.name}: episode {episode['id']} {episode['reason']}")
        return None
    run.report.made.append(episode["id"])
    run.stage(channel.name, f"made episode {episode['id']}")
    run.report.notes.extend(
        f"{channel.name}: episode {episode['id']}: {n}" for n in make_notes(episode)
    )
    return episode


def top_up(run: Run, channels: list[ChannelConfig]) -> None:
    """After the slots: make episodes until each producing channel has `ready_ahead` in
    stock, within the run's make budget (a long backlog is made over several runs). A channel
    another run is making for is left to it."""
    from ..produce import unposted_ready

    deadline = time.monotonic() + run.config.make_budget.total_seconds()
    stocked = episodes_ledger.unposted_ready_counts(run.db)  # one read for every channel
    for channel in channels:
        if not channel.produces or stocked.get(channel.name, 0) >= channel.ready_ahead:
            continue  # full when the run looked: an idle run reads nothing a channel

        def short(channel: ChannelConfig = channel) -> bool:
            return unposted_ready(run.db, channel.name) < channel.ready_ahead

        while time.monotonic() < deadline and channel.name not in run.make_failed and short():
            try:
                made = make_one(run, channel, still_needed=short)
            except MakingElsewhere:
                break
            if made is None and channel.name not in run.make_failed:
                break  # made meanwhile by another run
