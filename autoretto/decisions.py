"""Decisions: what became of each slot, for each platform (ARCHITECTURE.md §3).

Each (channel, slot, platform) gets exactly one decision row, with its reason: `posted`,
`nothing_ready`, `waiting_for_approval`, `refused_by_limit`, `missed`, `failed` (and `dry_run`
for films until direct publishing). A unique key enforces "decided once": the first run to
insert wins, every later try is a no-op. Each decision is also one line of `logs/run.log`.

Busy is not a decision. While the previous post to a platform is still on its way, the slot's
platform waits (`slot_waits`, shown in `status`) and is decided later, inside its window, by
the same or a later run; a window that closes while it waits makes it `missed`.

Each (channel, slot) also has a state row, the second guard and the history: due (a run
claimed it), then posted, waiting, empty, failed or missed (ledger.claims.SlotState, which keeps
the row's own spellings).

What a person is shown of a slot is one SlotState, the same word in `status`, the report,
`decisions` and the README (`SLOT_STATES`): `slot_state` names a slot from its decisions.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import clock
from .clock import iso
from .ledger import claims
from .ledger.claims import SlotState
from .runlog import append_line, decision_line
from .slots import Slot

if TYPE_CHECKING:
    from .ledger.store import Store as Database


def decide(
    db: Database,
    *,
    run_id: str,
    run_log: Path,
    channel: str,
    slot: Slot,
    platform: str,
    outcome: str,
    reason: str,
    post_id: int | None = None,
) -> dict[str, Any] | None:
    """Record the one decision for (channel, slot, platform) and log it. Returns the decision,
    or None when it was already decided (nothing is written then)."""
    decided_at = iso(clock.now())
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
    inserted = claims.record_decision(db, run_id=run_id, **entry)
    if not inserted:
        return None
    append_line(
        run_log,
        decision_line(
            at=decided_at,
            run_id=run_id,
            channel=channel,
            slot=slot.key,
            platform=platform,
            outcome=outcome,
            reason=reason,
            post_id=post_id,
        ),
    )
    return entry


# -- slot states -------------------------------------------------------------------------------

#: What became of a slot (ledger.claims.SlotState), each with its words for a person, in the
#: order that names a slot whose platforms' decisions differ: a slot that went out on one
#: platform is `posted` (its other platforms' decisions say what became of them there), one
#: that waits for a busy platform is `waiting`, and so on.
SLOT_STATES: dict[str, str] = {state.value: state.words for state in SlotState}


#: outcomes older versions recorded, in today's words: `busy` was a platform still sending the
#: previous post, which is a wait now
OLD_OUTCOMES = {"busy": "waiting"}


def slot_state(outcomes: Iterable[str], *, waiting: bool = False) -> SlotState | str | None:
    """The word for a slot from its platforms' outcomes (a decision whose post went out since,
    after `confirm` or `look`, is passed as `posted`); None when nothing is decided yet. An
    outcome of an older version is named in today's words (`OLD_OUTCOMES`); one this version
    does not know is shown as it was recorded."""
    found = {OLD_OUTCOMES.get(outcome, outcome) for outcome in outcomes}
    if SlotState.POSTED in found:
        return SlotState.POSTED
    if waiting:
        return SlotState.WAITING
    known = (state for state in SlotState if state in found)
    return next(known, min(found) if found else None)


def set_slot_state(db: Database, run_id: str, channel: str, slot: Slot, state: SlotState) -> None:
    """The slot's state row; a slot once missed stays missed."""
    claims.set_slot_state(db, run_id, channel, slot.key, slot.at_text, state, iso(clock.now()))


def record_missed_slot(db: Database, run_id: str, channel: str, slot: Slot) -> None:
    claims.record_missed_slot(db, run_id, channel, slot.key, slot.at_text, iso(clock.now()))


def decided_slots(db: Database, channel: str, after: datetime | None) -> frozenset[str]:
    """Keys of the channel's slots after `after` that were served or missed (the due rule looks
    at each one's own decision above the decided-through mark)."""
    return claims.decided_slots(db, channel, iso(after) if after else "")


# -- waiting -----------------------------------------------------------------------------------


def record_wait(
    db: Database, *, channel: str, slot: Slot, platform: str, reason: str, now: datetime
) -> None:
    """The slot's platform waits for the platform to be free; its reason is kept fresh."""
    claims.record_wait(
        db,
        channel=channel,
        slot=slot.key,
        slot_at=slot.at_text,
        platform=platform,
        reason=reason,
        now=iso(now),
    )


def waits(db: Database, channels: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Waiting (slot, platform)s, oldest slot first; of `channels` only, when given."""
    found = claims.slot_waits(db)
    if channels is None:
        return found
    wanted = set(channels)
    return [w for w in found if w["channel"] in wanted]


# -- listings ----------------------------------------------------------------------------------


#: the names of UTC itself: a slot in UTC needs no zone beside it (its instant is the slot)
UTC_NAMES = ("UTC", "Etc/UTC", "Z")


def decision_words(decision: dict[str, Any]) -> str:
    """One decision (or a wait) as a person reads it, its local slot naming its zone when that
    is not UTC: `lofi 2026-11-29T10:00 (Europe/Berlin) youtube: posted (post 3) - published`."""
    zone = decision.get("timezone")
    zone = f" ({zone})" if zone and zone not in UTC_NAMES else ""
    post = f" (post {decision['post_id']})" if decision.get("post_id") else ""
    outcome = decision.get("outcome") or "waiting"
    return (
        f"{decision['channel']} {decision['slot']}{zone} {decision['platform']}: "
        f"{outcome}{post} - {decision['reason']}"
    )


def list_decisions(
    db: Database, *, channel: str | None = None, since: datetime | None = None
) -> list[dict[str, Any]]:
    return claims.list_decisions(db, channel=channel, since=iso(since) if since else None)
