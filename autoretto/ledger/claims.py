"""Claims and the stamp, decisions and slot states (ARCHITECTURE.md §3): every write is a
compare-and-set.

`channels.last_release_at` is the stamp, the slot instant of the channel's latest release. A run
owns a slot when its one conditional UPDATE changed a row (rowcount 1); a second run racing it
sees rowcount 0 and leaves the channel alone. Give-back, take-over and advance are conditional
on the run id that holds the claim, so a run that lost its claim cannot move anything.

The same shape claims the other things one run at a time may do: making a channel's episodes
(`claim_making`), and settling a slot's platform that waits for a post still on its way
(`claim_wait`). A claim is kept alive by its run's heartbeat (`refresh_claims`); it may be taken
over only from a run that is gone (liveness.py), never because its heartbeat time looks old to
another clock: a take-over names the gone `holder` and the `beat` it was judged by.

Each (channel, slot, platform) gets exactly one decision row (`record_decision`: a unique key,
the first insert wins); each (channel, slot) a state row, the second guard and the history.

Instants are ISO text (clock.iso), compared as text. Only the coarse operations that hold
several statements together open a transaction (`register_channels`, `finish_slot`,
`release_slot`; their docstrings say so); every other function here is one statement, or is
called inside one of those.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from enum import StrEnum
from typing import Any

from .store import execute, loads, row, rows, transaction

#: The condition a take-over's UPDATE adds (parameters :holder and :beat): the holder's beat
#: is still the one seen when it was judged gone (a run with no row has beat -1). See
#: liveness.py for the rule.
BEAT_UNCHANGED = "COALESCE((SELECT beat FROM runs WHERE id = :holder), -1) = :beat"


# -- a slot's state ------------------------------------------------------------------------------


class SlotState(StrEnum):
    """What became of a slot, one name per state: the word `status` (`slot_state` in its
    --json), `decisions`, `run-due`'s summary, the report and the README show. A decision's
    outcome is the same word (`posted`, `failed`, `missed`, ...). When a slot's platforms had
    different outcomes, the first of these that one of them has names the slot.

    A slot row keeps the states a run records (`stored`), in the spellings the database has
    kept since its first version: `filled` is POSTED, `claimed` is DUE."""

    POSTED = "posted"  # out on at least one platform
    WAITING = "waiting"  # a platform is busy with an earlier post; decided once it is free
    FAILED = "failed"  # no platform has it; a post failed (tried again on a later slot)
    REFUSED_BY_LIMIT = "refused_by_limit"  # a cap, a quota, the human pace
    MISSED = "missed"  # found too late, or a later slot came first
    WAITING_FOR_APPROVAL = "waiting_for_approval"  # ready episodes wait for `approve`
    NOTHING_READY = "nothing_ready"  # no ready episode the platform has not had
    DRY_RUN = "dry_run"  # a film's slot before direct publishing: what would be sent
    DUE = "due"  # due now, being served (a run claimed it), or its post waits for its moment
    FUTURE = "future"  # not yet
    UNSEEN = "unseen"  # before Autoretto first saw the channel's schedule
    # Served, and no platform posted, failed, waits or missed it: its platforms' decisions
    # (nothing ready, waiting for approval, a limit, a dry run) name it, or its posts wait for
    # their paced moment (`due`). Shown as itself only when neither is there: no platform was
    # chosen or connected, so nothing was decided for it.
    EMPTY = "empty"

    @property
    def words(self) -> str:
        """The state as a person reads it (`refused by a limit`)."""
        return _WORDS.get(self, self.value.replace("_", " "))

    @property
    def stored(self) -> str:
        """The state as a slot row keeps it. ValueError for a state no row records."""
        try:
            return _STORED[self]
        except KeyError:
            raise ValueError(f"a slot row does not record {self.value!r}") from None

    @classmethod
    def from_stored(cls, stored: str | None) -> SlotState | None:
        """The state a slot row's `stored` text records; None for none (or one this version
        does not know)."""
        return _FROM_STORED.get(stored or "")


_WORDS = {
    SlotState.REFUSED_BY_LIMIT: "refused by a limit",
    SlotState.UNSEEN: "before this schedule",
}
_STORED = {
    SlotState.DUE: "claimed",
    SlotState.POSTED: "filled",
    SlotState.WAITING: "waiting",
    SlotState.FAILED: "failed",
    SlotState.MISSED: "missed",
    SlotState.EMPTY: "empty",
}
_FROM_STORED = {stored: state for state, stored in _STORED.items()}


# -- channels and their schedules --------------------------------------------------------------


def channel_rows(db: Any) -> list[dict[str, Any]]:
    """Every channel's row."""
    return rows(db, "SELECT * FROM channels")


def channel_row(db: Any, name: str) -> dict[str, Any]:
    found = row(db, "SELECT * FROM channels WHERE name = ?", (name,))
    assert found is not None, name
    return found


def register_channel(
    db: Any, name: str, fingerprint: str, spec: dict[str, Any], now: str
) -> dict[str, Any]:
    """Make sure the channel has a row; note when its current schedule was first seen.

    A new or changed fingerprint (edited slots, zone or days) sets `schedule_seen_at` and adds
    the schedule to the channel's history, so what each past slot was owed can be told
    (slots.due_rule). A new channel's schedule is seen `now`; an edit's at `now`, or at the
    decided-through mark when the clock is behind it (engine.run_due.edit_seen_at, its Python
    twin). Call inside a transaction (three statements that hold together). Returns the
    channel's row.
    """
    params = {"name": name, "fingerprint": fingerprint, "now": now}
    created = execute(
        db,
        "INSERT INTO channels (name, schedule_fingerprint, schedule_seen_at, created_at)"
        " VALUES (:name, :fingerprint, :now, :now) ON CONFLICT (name) DO NOTHING",
        params,
    )
    edited = execute(
        db,
        "UPDATE channels SET schedule_fingerprint = :fingerprint,"
        " schedule_seen_at = CASE WHEN decided_through > :now THEN decided_through"
        " ELSE :now END"
        " WHERE name = :name AND schedule_fingerprint != :fingerprint",
        params,
    )
    if created or edited:
        execute(
            db,
            "INSERT INTO schedules (channel, fingerprint, spec, seen_at)"
            " SELECT name, schedule_fingerprint, :spec, schedule_seen_at FROM channels"
            " WHERE name = :name",
            {"name": name, "spec": json.dumps(spec, sort_keys=True)},
        )
    return channel_row(db, name)


def register_channels(
    db: Any, channels: Iterable[tuple[str, str, dict[str, Any]]], now: str
) -> dict[str, dict[str, Any]]:
    """`register_channel` for each (name, fingerprint, spec) of `channels`, all in one
    transaction that this opens. Returns each channel's row by name."""
    with transaction(db):
        return {
            name: register_channel(db, name, fingerprint, spec, now)
            for name, fingerprint, spec in channels
        }


def schedules_before(
    db: Any, channel: str, seen_at: str, *, including: bool = False
) -> list[dict[str, Any]]:
    """The schedules `channel` had that were seen before `seen_at` (at it too, when
    `including`), oldest first: each its `spec` (a dict) and its `seen_at`."""
    before = "<=" if including else "<"
    return [
        {"spec": loads(found["spec"]), "seen_at": found["seen_at"]}
        for found in rows(
            db,
            f"SELECT spec, seen_at FROM schedules WHERE channel = ? AND seen_at {before} ?"
            " ORDER BY seen_at, id",
            (channel, seen_at),
        )
    ]


# -- a slot ------------------------------------------------------------------------------------


def claim_slot(db: Any, channel: str, slot: str, slot_at: str, run_id: str, now: str) -> bool:
    """Claim the slot `slot` (its instant `slot_at`) for `run_id`: wins only if no one holds a
    claim and the slot is newer than both the stamp and the channel's decided-through mark."""
    return (
        execute(
            db,
            "UPDATE channels SET claim_run_id = :run, claim_slot = :key, claim_slot_at = :at,"
            " claim_heartbeat_at = :now"
            " WHERE name = :name AND claim_run_id IS NULL"
            " AND (last_release_at IS NULL OR last_release_at < :at)"
            " AND (decided_through IS NULL OR decided_through < :at)",
            {"run": run_id, "key": slot, "at": slot_at, "now": now, "name": channel},
        )
        == 1
    )


def take_over_claim(
    db: Any,
    channel: str,
    slot: str,
    slot_at: str,
    *,
    holder: str,
    beat: int,
    run_id: str,
    now: str,
) -> bool:
    """Take a gone run's claim: wins only if that run (`holder`) still holds it and its beat is
    still the one it was judged gone by (liveness.holder_gone)."""
    return (
        execute(
            db,
            "UPDATE channels SET claim_run_id = :run, claim_slot = :key, claim_slot_at = :at,"
            " claim_heartbeat_at = :now"
            f" WHERE name = :name AND claim_run_id = :holder AND {BEAT_UNCHANGED}"
            " AND (last_release_at IS NULL OR last_release_at < :at)"
            " AND (decided_through IS NULL OR decided_through < :at)",
            {
                "run": run_id,
                "key": slot,
                "at": slot_at,
                "now": now,
                "name": channel,
                "holder": holder,
                "beat": beat,
            },
        )
        == 1
    )


def give_back_claim(db: Any, channel: str, run_id: str) -> bool:
    """Release our claim without moving the stamp (nothing was sent; the slot can be retried)."""
    return (
        execute(
            db,
            "UPDATE channels SET claim_run_id = NULL, claim_slot = NULL, claim_slot_at = NULL,"
            " claim_heartbeat_at = NULL WHERE name = :name AND claim_run_id = :run",
            {"name": channel, "run": run_id},
        )
        == 1
    )


def clear_gone_claim(db: Any, channel: str, *, holder: str, beat: int) -> bool:
    """Drop a gone run's claim on a slot that is no longer due (its window closed)."""
    return (
        execute(
            db,
            "UPDATE channels SET claim_run_id = NULL, claim_slot = NULL, claim_slot_at = NULL,"
            " claim_heartbeat_at = NULL WHERE name = :name AND claim_run_id = :holder"
            f" AND {BEAT_UNCHANGED}",
            {"name": channel, "holder": holder, "beat": beat},
        )
        == 1
    )


#: `decided_through` moved forward to :at, never back (SQLite's two-argument MAX is not
#: PostgreSQL's; a NULL mark is behind every instant).
_DECIDED_THROUGH_AT_LEAST = (
    "decided_through = CASE WHEN decided_through > :at THEN decided_through ELSE :at END"
)


def advance_stamp(db: Any, channel: str, slot_at: str, run_id: str) -> bool:
    """Move the stamp to `slot_at` and release the claim; only the claim's holder can."""
    return (
        execute(
            db,
            f"UPDATE channels SET last_release_at = :at, {_DECIDED_THROUGH_AT_LEAST},"
            " claim_run_id = NULL, claim_slot = NULL, claim_slot_at = NULL,"
            " claim_heartbeat_at = NULL"
            " WHERE name = :name AND claim_run_id = :run"
            " AND (last_release_at IS NULL OR last_release_at < :at)",
            {"at": slot_at, "name": channel, "run": run_id},
        )
        == 1
    )


def mark_decided_through(db: Any, channel: str, at: str) -> None:
    """Remember that every owed slot up to `at` is decided (only ever forward)."""
    execute(
        db,
        "UPDATE channels SET decided_through = :at"
        " WHERE name = :name AND (decided_through IS NULL OR decided_through < :at)",
        {"at": at, "name": channel},
    )


def record_release(db: Any, channel: str, slot_at: str) -> bool:
    """Move the stamp to `slot_at` for a post that went out after its claim was released (a
    paced post, a slot that waited): only forward, never past a newer release."""
    return (
        execute(
            db,
            f"UPDATE channels SET last_release_at = :at, {_DECIDED_THROUGH_AT_LEAST}"
            " WHERE name = :name AND (last_release_at IS NULL OR last_release_at < :at)",
            {"at": slot_at, "name": channel},
        )
        == 1
    )


def finish_slot(db: Any, channel: str, slot_at: str, run_id: str) -> None:
    """A claimed slot decided without a release (no platform posted it): the stamp stays, the
    channel is decided through `slot_at` (the slot is never due again) and `run_id`'s claim is
    given back, in one transaction that this opens."""
    with transaction(db):
        mark_decided_through(db, channel, slot_at)
        give_back_claim(db, channel, run_id)


def release_slot(
    db: Any,
    channel: str,
    slot_at: str,
    *,
    run_id: str | None,
    number: Callable[[Any], object],
) -> bool:
    """Move the stamp to `slot_at` and, when it moved, have `number(db)` take the move's journal
    number, in one transaction that this opens (what `number` raises rolls it back). With a
    `run_id` the claim's holder releases its claim too (`advance_stamp`); without one, a post
    that went out after its claim was released moves the stamp (`record_release`). True when
    the stamp moved."""
    with transaction(db, rows_only=True):
        if run_id is not None:
            moved = advance_stamp(db, channel, slot_at, run_id)
        else:
            moved = record_release(db, channel, slot_at)
        if moved:
            number(db)
    return moved


def write_back_release(db: Any, channel: str, slot_at: str) -> None:
    """`resume`: a stamp move the journal knows and a restored database forgot. Any claim a
    run held in the old copy is dropped with it."""
    execute(
        db,
        "UPDATE channels SET last_release_at = CASE WHEN last_release_at > :at"
        f" THEN last_release_at ELSE :at END, {_DECIDED_THROUGH_AT_LEAST},"
        " claim_run_id = NULL, claim_slot = NULL, claim_slot_at = NULL,"
        " claim_heartbeat_at = NULL WHERE name = :name",
        {"at": slot_at, "name": channel},
    )


# -- making a channel's episodes ---------------------------------------------------------------


def claim_making(
    db: Any, channel: str, run_id: str, *, now: str, holder: str | None, beat: int | None
) -> bool:
    """Claim the making of `channel`'s episodes: only one run makes for a channel at a time, so
    racing runs never make more than the stock asks for. Our own claim is ours again; another
    run's only when that run (`holder`, judged by `beat`) is gone (liveness.holder_gone)."""
    return (
        execute(
            db,
            "UPDATE channels SET make_run_id = :run, make_heartbeat_at = :now"
            " WHERE name = :name AND (make_run_id IS NULL OR make_run_id = :run"
            f" OR (make_run_id = :holder AND {BEAT_UNCHANGED}))",
            {"run": run_id, "now": now, "name": channel, "holder": holder, "beat": beat},
        )
        == 1
    )


def release_making(db: Any, channel: str, run_id: str) -> None:
    execute(
        db,
        "UPDATE channels SET make_run_id = NULL, make_heartbeat_at = NULL"
        " WHERE name = :name AND make_run_id = :run",
        {"name": channel, "run": run_id},
    )


def making_by(db: Any, channel: str) -> str | None:
    """The run holding the claim on making `channel`'s episodes, if any (alive or not)."""
    found = row(db, "SELECT make_run_id FROM channels WHERE name = ?", (channel,))
    return found["make_run_id"] if found else None


# -- a slot's platform that waits --------------------------------------------------------------


def wait_holder(db: Any, channel: str, slot: str, platform: str) -> str | None:
    """The run settling a waiting (slot, platform) now, if any (alive or not)."""
    found = row(
        db,
        "SELECT run_id FROM slot_waits WHERE channel = ? AND slot = ? AND platform = ?",
        (channel, slot, platform),
    )
    return found["run_id"] if found else None


def claim_wait(
    db: Any,
    channel: str,
    slot: str,
    platform: str,
    run_id: str,
    *,
    now: str,
    holder: str | None,
    beat: int | None,
) -> bool:
    """Claim the settling of a waiting (slot, platform), so two runs never both choose an
    episode for it: free, ours, or held by a run (`holder`, judged by `beat`) that is gone."""
    return (
        execute(
            db,
            "UPDATE slot_waits SET run_id = :run, heartbeat_at = :now"
            " WHERE channel = :channel AND slot = :slot AND platform = :platform"
            f" AND (run_id IS NULL OR run_id = :run OR (run_id = :holder AND {BEAT_UNCHANGED}))",
            {
                "run": run_id,
                "now": now,
                "channel": channel,
                "slot": slot,
                "platform": platform,
                "holder": holder,
                "beat": beat,
            },
        )
        == 1
    )


def release_wait(db: Any, channel: str, slot: str, platform: str, run_id: str) -> None:
    execute(
        db,
        "UPDATE slot_waits SET run_id = NULL, heartbeat_at = NULL"
        " WHERE channel = :channel AND slot = :slot AND platform = :platform AND run_id = :run",
        {"channel": channel, "slot": slot, "platform": platform, "run": run_id},
    )


def record_wait(
    db: Any, *, channel: str, slot: str, slot_at: str, platform: str, reason: str, now: str
) -> None:
    """The slot's platform waits for the platform to be free; its reason is kept fresh."""
    execute(
        db,
        "INSERT INTO slot_waits (channel, slot, slot_at, platform, reason, since)"
        " VALUES (:channel, :slot, :at, :platform, :reason, :now)"
        " ON CONFLICT (channel, slot, platform) DO UPDATE SET reason = excluded.reason",
        {
            "channel": channel,
            "slot": slot,
            "at": slot_at,
            "platform": platform,
            "reason": reason,
            "now": now,
        },
    )


def end_wait(db: Any, channel: str, slot: str, platform: str) -> None:
    execute(
        db,
        "DELETE FROM slot_waits WHERE channel = ? AND slot = ? AND platform = ?",
        (channel, slot, platform),
    )


def slot_waits(db: Any) -> list[dict[str, Any]]:
    """Every waiting (slot, platform), oldest slot first."""
    return rows(db, "SELECT * FROM slot_waits ORDER BY slot_at, channel, platform")


def newer_slot(db: Any, channel: str, platform: str, slot_at: str) -> str | None:
    """The key of a later slot of the channel that was served on `platform` (decided other
    than missed, or waiting): an older slot that waited is then missed, as only the most
    recent slot is filled."""
    found = row(
        db,
        "SELECT slot FROM decisions WHERE channel = :channel AND platform = :platform"
        " AND slot_at > :at AND outcome != 'missed'"
        " UNION ALL SELECT slot FROM slot_waits WHERE channel = :channel"
        " AND platform = :platform AND slot_at > :at LIMIT 1",
        {"channel": channel, "platform": platform, "at": slot_at},
    )
    return found["slot"] if found else None


# -- the heartbeat -----------------------------------------------------------------------------


def refresh_claims(db: Any, run_id: str, now: str) -> None:
    """Refresh every claim `run_id` holds: slots, making, waiting slots (each its own
    statement: the heartbeat's connection is in no transaction)."""
    params = {"now": now, "run": run_id}
    execute(db, "UPDATE channels SET claim_heartbeat_at = :now WHERE claim_run_id = :run", params)
    execute(db, "UPDATE channels SET make_heartbeat_at = :now WHERE make_run_id = :run", params)
    execute(db, "UPDATE slot_waits SET heartbeat_at = :now WHERE run_id = :run", params)


# -- decisions ---------------------------------------------------------------------------------


def record_decision(
    db: Any,
    *,
    run_id: str,
    channel: str,
    slot: str,
    slot_at: str,
    platform: str,
    outcome: str,
    reason: str,
    decided_at: str,
    post_id: int | None,
) -> bool:
    """The one decision for (channel, slot, platform); False when it was already decided (the
    unique key: the first insert wins, nothing is written then)."""
    return (
        execute(
            db,
            "INSERT INTO decisions (channel, slot, slot_at, platform, outcome, reason,"
            " decided_at, post_id, run_id) VALUES (:channel, :slot, :slot_at, :platform,"
            " :outcome, :reason, :decided_at, :post_id, :run)"
            " ON CONFLICT (channel, slot, platform) DO NOTHING",
            {
                "channel": channel,
                "slot": slot,
                "slot_at": slot_at,
                "platform": platform,
                "outcome": outcome,
                "reason": reason,
                "decided_at": decided_at,
                "post_id": post_id,
                "run": run_id,
            },
        )
        == 1
    )


def is_decided(db: Any, channel: str, slot: str, platform: str) -> bool:
    return (
        row(
            db,
            "SELECT 1 AS yes FROM decisions WHERE channel = ? AND slot = ? AND platform = ?",
            (channel, slot, platform),
        )
        is not None
    )


def slot_outcomes(db: Any, channel: str, slot: str) -> list[str]:
    """The outcomes of the slot's decisions, one per decided platform."""
    return [
        found["outcome"]
        for found in rows(
            db, "SELECT outcome FROM decisions WHERE channel = ? AND slot = ?", (channel, slot)
        )
    ]


def list_decisions(
    db: Any, *, channel: str | None = None, since: str | None = None
) -> list[dict[str, Any]]:
    """Decisions (of `channel`, of slots at or after `since`), by slot instant."""
    clauses, params = [], []
    if channel:
        clauses.append("channel = ?")
        params.append(channel)
    if since:
        clauses.append("slot_at >= ?")
        params.append(since)
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    return rows(
        db,
        "SELECT channel, slot, slot_at, platform, outcome, reason, decided_at, post_id"
        f" FROM decisions{where} ORDER BY slot_at, channel, id",
        tuple(params),
    )


# -- slot states -------------------------------------------------------------------------------


def set_slot_state(
    db: Any, run_id: str, channel: str, slot: str, slot_at: str, state: SlotState, now: str
) -> None:
    """The slot's state row; a slot once missed stays missed."""
    execute(
        db,
        "INSERT INTO slots (channel, slot, slot_at, state, run_id, updated_at)"
        " VALUES (:channel, :slot, :at, :state, :run, :now)"
        " ON CONFLICT (channel, slot) DO UPDATE SET state = excluded.state,"
        " run_id = excluded.run_id, updated_at = excluded.updated_at"
        " WHERE slots.state != :missed",
        {
            "channel": channel,
            "slot": slot,
            "at": slot_at,
            "state": state.stored,
            "run": run_id,
            "now": now,
            "missed": SlotState.MISSED.stored,
        },
    )


def record_missed_slot(
    db: Any, run_id: str, channel: str, slot: str, slot_at: str, now: str
) -> None:
    """The slot's state row as missed, unless it has one."""
    execute(
        db,
        "INSERT INTO slots (channel, slot, slot_at, state, run_id, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (channel, slot) DO NOTHING",
        (channel, slot, slot_at, SlotState.MISSED.stored, run_id, now),
    )


def decided_slots(db: Any, channel: str, after: str) -> frozenset[str]:
    """Keys of the channel's slots after `after` ("" for all) that were served or missed (a row
    in any state but claimed)."""
    return frozenset(
        found["slot"]
        for found in rows(
            db,
            "SELECT slot FROM slots WHERE channel = ? AND slot_at > ? AND state != ?",
            (channel, after, SlotState.DUE.stored),
        )
    )
