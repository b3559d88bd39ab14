"""`run-due --dry-run`: what a run would claim, make and post now, changing nothing.

It walks the same steps as `run_due` in the same order (paced posts, then each channel's due
slot and every platform of it, the slots that wait, the stocks, the retention policy) and asks
each step what it would do (`run_due.next_step`, the same function a real run takes its steps
from), but calls nothing that writes: no run row, no claim, no decision, no post, no make, no
journal line, no log rotation, no heartbeat ping, no notification, and no request to any
platform. A post may still be refused by a platform's limit when it is really sent; the
preview says what is known before that.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .. import decisions, journal, pace
from ..clock import from_iso, iso
from ..config import ChannelConfig, Config
from ..episodes import interrupted_imports
from ..errors import Exit
from ..ledger import claims
from ..ledger.views import channels_by_name, count_unposted
from ..posts import paced_posts
from ..slots import Slot, span
from .run import Run, cadences, host_order
from .run_due import Step, StepAction, due_of, next_step

if TYPE_CHECKING:
    from ..ledger.store import Store as Database

#: the keys of every entry of `would`
KEYS = ("channel", "slot", "platform", "action", "outcome", "episode_id", "post_id", "at")


@dataclass
class Preview:
    """What a run would do now: one entry per step, each with its words (`what`)."""

    now: datetime
    channels: int = 0
    held: str | None = None
    would: list[dict[str, Any]] = field(default_factory=list)

    @property
    def exit_code(self) -> Exit:
        return Exit.HELD if self.held else Exit.DONE

    def add(self, what: str, **facts: Any) -> None:
        self.would.append({**dict.fromkeys(KEYS), **facts, "what": what})

    def as_json(self) -> dict[str, Any]:
        return {
            "dry_run": True,
            "now": iso(self.now),
            "channels": self.channels,
            "held": self.held,
            "would": self.would,
        }


@dataclass
class Plan:
    """What the preview has planned so far: the stock episodes it would send now, per channel,
    and the channels it would make an episode for on demand."""

    sent: dict[str, set[int]] = field(default_factory=dict)
    making: set[str] = field(default_factory=set)


def preview_run_due(
    config: Config,
    db: Database,
    *,
    only_channel: str | None = None,
    make: bool = True,
    wait: bool = True,
) -> Preview:
    """What `run_due(config, db, only_channel=, make=, wait=)` would do now; writes nothing."""
    channels = host_order(config, db, cadences(config, only_channel))  # as the run walks them
    run = Run(config, db, "run-due", record=False, make=make)  # no run row, no heartbeat
    preview = Preview(run.now, channels=len(channels))
    hold = journal.restore_hold(db, config.journal)
    if hold is not None:
        preview.held = hold.reason
        return preview
    for episode in interrupted_imports(db, run.now, config.stale_after):
        preview.add(
            f"clean up the interrupted import of episode {episode['id']} (it becomes rejected)",
            channel=episode["channel"], action="clean_import", episode_id=episode["id"],
        )  # fmt: skip
    known = channels_by_name(db)
    _paced(run, preview, wait=wait)
    planned = Plan()
    for channel in channels:
        if channel.name not in known:
            preview.add(
                "see this channel for the first time: none of its slots before now is posted",
                channel=channel.name, action="register",
            )  # fmt: skip
        _due_slot(run, preview, channel, known.get(channel.name), planned)
    _waits(run, preview, channels, planned)
    if make:
        _stock(run, preview, channels, planned)
    _retention(run, preview)
    return preview


def _paced(run: Run, preview: Preview, *, wait: bool) -> None:
    channels = {c.name: c for c in run.config.channels}
    later = []
    for post in paced_posts(run.db):
        channel = channels.get(post["channel"])
        if channel is None or post["slot_at"] is None:
            continue
        facts = {
            "channel": channel.name, "slot": post["slot"], "platform": post["platform"],
            "post_id": post["id"], "episode_id": post["episode_id"], "at": post["not_before"],
        }  # fmt: skip
        moment = from_iso(post["not_before"])
        if run.now - from_iso(post["slot_at"]) > channel.catch_up_window:
            preview.add(
                f"record post {post['id']}'s slot missed: its paced moment {post['not_before']} "
                "passed while no run was there",
                action="decide", outcome="missed", **facts,
            )  # fmt: skip
        elif moment <= run.now:
            preview.add(
                f"send post {post['id']} (episode {post['episode_id']}): its paced moment "
                f"{post['not_before']} has come",
                action="post", **facts,
            )  # fmt: skip
        else:
            later.append((moment, post, facts))
    moments = [moment for moment, _, _ in later]
    waited = set(pace.wait_for(run.pace, moments, run.now, run.now)) if wait else set()
    for moment, post, facts in later:
        how = "wait in-process to send it" if moment in waited else "leave it to a later run"
        preview.add(
            f"{how}: post {post['id']} goes out at its paced moment {post['not_before']}",
            action="wait" if moment in waited else "leave", **facts,
        )  # fmt: skip


def _due_slot(
    run: Run,
    preview: Preview,
    channel: ChannelConfig,
    channel_row: dict | None,
    planned: Plan,
) -> None:
    result = due_of(run.db, channel, channel_row, run.now)
    for slot in reversed(result.missed):
        preview.add(
            f"record slot {slot.key} ({channel.timezone}) missed: {result.reasons[slot.key]}",
            channel=channel.name, slot=slot.key, action="decide", outcome="missed",
        )  # fmt: skip
    slot = result.due
    if slot is None:
        return
    holder = channel_row["claim_run_id"] if channel_row else None
    if holder is not None and run.gone(holder) is None:
        preview.add(
            f"leave slot {slot.key} to run {holder}, which is serving it",
            channel=channel.name, slot=slot.key, action="leave",
        )  # fmt: skip
        return
    taken = f" (taking it over from the gone run {holder})" if holder else ""
    preview.add(
        f"claim slot {slot.key} ({channel.timezone}, {slot.at_text}){taken}",
        channel=channel.name, slot=slot.key, action="claim", at=slot.at_text,
    )  # fmt: skip
    for platform in run.platforms_for(channel):
        _platform_step(run, preview, channel, slot, platform, planned)


def _platform_step(
    run: Run,
    preview: Preview,
    channel: ChannelConfig,
    slot: Slot,
    platform: str,
    planned: Plan,
) -> None:
    facts = {"channel": channel.name, "slot": slot.key, "platform": platform}
    step = next_step(run, channel, slot, platform)
    if step.action is StepAction.MAKE and channel.name in planned.making:
        preview.add("post the episode made first for this slot", action="post", **facts)
        return
    if step.action is StepAction.MAKE:
        planned.making.add(channel.name)
        preview.add("make an episode first (nothing is ready), then post it", action="make",
                    **facts)  # fmt: skip
        return
    if step.episode is not None and step.action is StepAction.SEND:
        planned.sent.setdefault(channel.name, set()).add(step.episode["id"])
    preview.add(_words(step), action=_action(step), outcome=step.outcome or None, **facts,
                episode_id=step.episode["id"] if step.episode else None,
                at=iso(step.moment) if step.moment else None)  # fmt: skip


#: a step's `action` in `run-due --dry-run --json` where it is not the step's own value
_SHOWN_ACTIONS = {
    StepAction.SEND: "post",
    StepAction.DEFER: "post",
    StepAction.RECORD_DRY_RUN: "decide",
}


def _action(step: Step) -> str:
    return _SHOWN_ACTIONS.get(step.action, step.action.value)


def _words(step: Step) -> str:
    episode = step.episode
    title = f'episode {episode["id"]} "{episode["title"]}"' if episode else ""
    if step.action is StepAction.DECIDED:
        return "nothing: already decided"
    if step.action is StepAction.DEFERRED:
        return "wait: this slot's post waits for its paced moment"
    if step.action is StepAction.DECIDE:
        return f"decide {step.outcome}: {step.reason}"
    if step.action is StepAction.WAIT:
        return f"wait (the platform is busy): {step.reason}"
    if step.action is StepAction.RECORD_DRY_RUN:
        return f"record what {title} would send (direct_publishing is off)"
    if step.action is StepAction.DEFER:
        assert step.moment is not None
        return f"post {title} at {iso(step.moment)} (a human pace after the slot)"
    return f"post {title} now"


def _waits(run: Run, preview: Preview, channels: list[ChannelConfig], planned: Plan) -> None:
    by_name = {c.name: c for c in channels}
    for waiting in sorted(decisions.waits(run.db, by_name), key=lambda w: w["slot_at"])[::-1]:
        channel = by_name[waiting["channel"]]
        slot = Slot(from_iso(waiting["slot_at"]), waiting["slot"])
        facts = {"channel": channel.name, "slot": slot.key, "platform": waiting["platform"]}
        newer = claims.newer_slot(run.db, channel.name, waiting["platform"], waiting["slot_at"])
        if newer is not None:
            preview.add(
                f"record the waiting slot {slot.key} missed: the later slot {newer} came",
                action="decide", outcome="missed", **facts,
            )  # fmt: skip
        elif run.now - slot.at > channel.catch_up_window:
            preview.add(
                f"record the waiting slot {slot.key} missed: its "
                f"{span(channel.catch_up_window)} catch-up window closed",
                action="decide", outcome="missed", **facts,
            )  # fmt: skip
        else:
            _platform_step(run, preview, channel, slot, waiting["platform"], planned)


def _stock(run: Run, preview: Preview, channels: list[ChannelConfig], planned: Plan) -> None:
    from ..produce import unposted_ready

    for channel in channels:
        if not channel.produces:
            continue
        # A stock episode sent now leaves the stock (one made on demand and sent does not).
        sent = planned.sent.get(channel.name, set())
        left = unposted_ready(run.db, channel.name) - _unposted(run.db, sent)
        short = channel.ready_ahead - left
        if short > 0:
            preview.add(
                f"make up to {short} episode{'s' if short != 1 else ''} to keep ready_ahead = "
                f"{channel.ready_ahead} in stock ({left} ready after this run's posts; within "
                f"make_budget {span(run.config.make_budget)})",
                channel=channel.name, action="make",
            )  # fmt: skip


def _unposted(db: Database, episode_ids: set[int]) -> int:
    """How many of `episode_ids` no platform has had yet (the stock `unposted_ready` counts)."""
    if not episode_ids:
        return 0
    return count_unposted(db, sorted(episode_ids))


def _retention(run: Run, preview: Preview) -> None:
    from ..retention import prune

    result = prune(run.config, run.db, now=run.now, dry_run=True)
    for entry in result["pruned"]:
        preview.add(
            f"remove the working files of episode {entry['episode_id']} "
            f"({entry['bytes'] / 1e6:.1f} MB; [media] keep = \"{result['keep']}\")",
            channel=entry["channel"], action="prune", episode_id=entry["episode_id"],
        )  # fmt: skip
