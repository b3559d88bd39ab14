"""`status` and `decisions`: what each channel's slots look like now. Read-only.

`status` reads the whole picture in a fixed number of statements, whatever the number of
channels: every channel row at once, the recorded state of every shown slot at once, the
ready counts at once. Only a channel with something to decide (a due slot, a slot to record
missed) costs a look of its own.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from .. import decisions, journal
from ..clock import iso
from ..config import ChannelConfig, Config
from ..decisions import list_decisions
from ..episodes import interrupted_imports
from ..health import platform_trouble, stock_forecast
from ..ledger.claims import SlotState
from ..ledger.runs import list_incidents
from ..ledger.views import (
    channels_by_name,
    posts_needing_person,
    ready_counts,
    shown_slot_records,
)
from ..platforms.notices import platform_warnings
from ..posts import paced_posts
from ..slots import Slot, take
from .run import Run, cadences, expiring_sign_ins
from .run_due import due_of

if TYPE_CHECKING:
    from ..ledger.store import Store as Database

__all__ = ["list_decisions", "status"]

#: `status --json`'s `state` of a recent slot with no row, neither due nor missed: the value
#: scripts have read since the first version. It is not SlotState.EMPTY (a row a run wrote):
#: `slot_state` tells the two apart.
NO_ROW = "empty"
#: `status --json`'s `state` of an upcoming slot, kept for scripts (its `slot_state` is future)
UPCOMING = "waiting"


def status(
    config: Config,
    db: Database,
    now: datetime,
    *,
    only_channel: str | None = None,
    around: int = 3,
) -> dict[str, Any]:
    """Per channel: stamp, claim, due slot, recent and upcoming slots, ready count, and
    `stock` (health.stock_forecast: when it runs out); at the top: a held restore, sign-ins
    that end soon, open incidents, posts that need a person, slots that wait for a busy
    platform, and `trouble` (health.platform_trouble: platforms that cannot post, each with
    the command that fixes it)."""
    channels = cadences(config, only_channel)
    known = channels_by_name(db)
    ready = ready_counts(db)
    stocks = {
        s.channel: s.to_json() for s in stock_forecast(config, db, now, only_channel=only_channel)
    }
    # Channels that share a schedule share its recent and next slots: computed once each.
    around_of = {
        schedule: (
            list(reversed(take(schedule.walk_back(now), around))),
            take(schedule.walk_forward(now), around),
        )
        for schedule in {c.schedule for c in channels}
    }
    recent = {c.name: around_of[c.schedule][0] for c in channels}
    shown = _shown_states(db, [(c, s.key) for c in channels for s in recent[c.name]])
    report = []
    for channel in channels:
        channel_row = known.get(channel.name)
        result = due_of(db, channel, channel_row, now)  # a new channel: as run-due sees it
        missed = set(result.missed)
        due_key = result.due.key if result.due else None
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
                "ready": ready.get(channel.name, 0),
                "recent": [
                    _slot_entry(
                        s,
                        shown.get((channel.name, s.key), (None, None)),
                        SlotState.DUE
                        if s.key == due_key
                        else SlotState.MISSED
                        if s in missed
                        else None,
                    )
                    for s in recent[channel.name]
                ],
                "upcoming": [
                    # `state` as scripts have read it since the first version; `slot_state`
                    # the SlotState that status, the report and the README share
                    {
                        "slot": s.key,
                        "slot_at": s.at_text,
                        "state": UPCOMING,
                        "slot_state": SlotState.FUTURE.value,
                    }
                    for s in around_of[channel.schedule][1]
                ],
                # None for a films cadence: films are the creator's own, one by one
                "stock": stocks.get(channel.name),
            }
        )
    hold = journal.restore_hold(db, config.journal)
    with Run(config, db, "status", record=False, now=now) as looking:
        expiring = expiring_sign_ins(looking)
    names = {c.name for c in channels}
    return {
        "now": iso(now),
        "held": hold.reason if hold else None,
        "expiring": expiring,
        "platform_warnings": platform_warnings(config, db, now),
        "incidents": list_incidents(db, open_only=True),
        "needs_person": posts_needing_person(db),
        "waiting": [
            {key: w[key] for key in ("channel", "slot", "slot_at", "platform", "reason", "since")}
            for w in decisions.waits(db, names)
        ],
        "interrupted": interrupted_imports(db, now, config.stale_after),
        "trouble": [t.to_json() for t in platform_trouble(config, db, now) if t.channel in names],
        "channels": report,
    }


def _slot_entry(
    slot: Slot, shown: tuple[str | None, str | None], computed: SlotState | None
) -> dict[str, Any]:
    """A recent slot in `status --json`. `state` keeps the values scripts have read since the
    first version (the slot row's stored state: filled, failed, waiting, claimed, missed,
    empty; else due, missed or empty for no row, `NO_ROW`); `slot_state` is the SlotState that
    the table, `decisions`, the report and the README share."""
    word, recorded = shown
    return {
        "slot": slot.key,
        "slot_at": slot.at_text,
        "state": recorded or (computed.value if computed else NO_ROW),
        # A stored empty row has read `unseen` here since the first version: --json keeps it.
        "slot_state": str(
            SlotState.UNSEEN if word == SlotState.EMPTY else (word or computed or SlotState.UNSEEN)
        ),
    }


def _shown_states(
    db: Database, wanted: list[tuple[ChannelConfig, str]]
) -> dict[tuple[str, str], tuple[str, str | None]]:
    """The SlotState (or an outcome this version does not know) and the stored state of each
    (cadence, slot key) in `wanted` that has a decision, a wait, a paced post or a state row:
    one statement for the decisions and rows, one for the few waits and paced posts."""
    if not wanted:
        return {}
    # Each cadence's shown keys are read as one range of its keys (shown_slot_records). A
    # range may hold keys not shown (an edited schedule's): they are passed over here.
    recorded: dict[tuple[str, str], str | None] = {}
    outcomes: dict[tuple[str, str], list[str]] = {}
    spans: dict[str, tuple[str, str]] = {}
    for cadence, key in wanted:
        recorded[cadence.name, key] = None
        outcomes[cadence.name, key] = []
        first, last = spans.get(cadence.name, (key, key))
        spans[cadence.name] = (min(first, key), max(last, key))
    for entry in shown_slot_records(db, spans):
        key = (entry["channel"], entry["slot"])
        if key not in recorded:
            continue  # inside a shown range, not a shown slot
        if entry["state"] is not None:
            recorded[key] = entry["state"]
        elif entry["outcome"] is not None:
            outcomes[key].append(entry["outcome"])  # `posted` when its post is published
    waiting = {(w["channel"], w["slot"]) for w in decisions.waits(db)}
    paced = {(p["channel"], p["slot"]) for p in paced_posts(db)}
    owners = {cadence.name: cadence.episode_channel for cadence, _ in wanted}
    states = {}
    for key, found in outcomes.items():
        state = decisions.slot_state(found, waiting=key in waiting)
        if state is None and (owners[key[0]], key[1]) in paced:
            state = SlotState.DUE  # its post waits for its human-pace moment
        state = state or SlotState.from_stored(recorded[key])
        if state is not None:
            states[key] = (state, recorded[key])
    return states
