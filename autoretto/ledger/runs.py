"""Runs and what is told of them: a process's `runs` row and its beat counter, the sightings
other runs make of it (liveness.py: the rule of two sightings), and the incidents that posts
which keep failing open (incidents.py).

Instants are ISO text (clock.iso), compared as text. Only `record_failure` opens a
transaction of its own; the others are one statement each.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .store import execute, marks, row, rows, transaction

# -- a run's row -------------------------------------------------------------------------------


def open_run(
    db: Any,
    *,
    run_id: str,
    kind: str,
    pid: int,
    machine: str | None,
    process_start: str | None,
    started_at: str,
) -> None:
    """The row of a run that starts now, with what another run on this machine asks after."""
    execute(
        db,
        "INSERT INTO runs (id, kind, pid, machine, process_start, started_at)"
        " VALUES (:id, :kind, :pid, :machine, :process_start, :at)",
        {
            "id": run_id,
            "kind": kind,
            "pid": pid,
            "machine": machine,
            "process_start": process_start,
            "at": started_at,
        },
    )


def end_run(db: Any, run_id: str, *, ended_at: str, outcome: str) -> None:
    execute(
        db,
        "UPDATE runs SET ended_at = :end, outcome = :outcome WHERE id = :id",
        {"end": ended_at, "outcome": outcome, "id": run_id},
    )


def run_facts(db: Any, run_id: str) -> dict[str, Any] | None:
    """What tells whether run `run_id` is gone: pid, machine, process_start, beat, ended_at."""
    return row(
        db,
        "SELECT pid, machine, process_start, beat, ended_at FROM runs WHERE id = ?",
        (run_id,),
    )


def beat_run(db: Any, run_id: str) -> None:
    """One more beat of `run_id` (its heartbeat thread calls this)."""
    execute(db, "UPDATE runs SET beat = beat + 1 WHERE id = ?", (run_id,))


# -- sightings ---------------------------------------------------------------------------------


def sighting(db: Any, run_id: str) -> dict[str, Any] | None:
    """The beat another run last noted of `run_id`, and when by its clock (`seen_at`)."""
    return row(db, "SELECT beat, seen_at FROM run_sightings WHERE run_id = ?", (run_id,))


def note_sighting(db: Any, run_id: str, beat: int, now: str) -> None:
    """Note `run_id`'s beat as seen at `now`, replacing an earlier sighting."""
    execute(
        db,
        "INSERT INTO run_sightings (run_id, beat, seen_at) VALUES (:run, :beat, :now)"
        " ON CONFLICT (run_id) DO UPDATE SET beat = excluded.beat, seen_at = excluded.seen_at",
        {"run": run_id, "beat": beat, "now": now},
    )


def forget_sightings(db: Any, run_id: str) -> None:
    """A run that ends: the sightings others made of it are of no more use."""
    execute(db, "DELETE FROM run_sightings WHERE run_id = ?", (run_id,))


# -- what a run reports ------------------------------------------------------------------------


def post_states(db: Any, post_ids: Iterable[int]) -> dict[int, str]:
    """The state of each post of `post_ids`, as it is now."""
    ids = list(post_ids)
    if not ids:
        return {}
    found = rows(db, f"SELECT id, state FROM posts WHERE id IN ({marks(len(ids))})", tuple(ids))
    return {r["id"]: r["state"] for r in found}


def connected_platforms(db: Any) -> list[str]:
    """The platforms with a connected account (any label)."""
    return [found["platform"] for found in rows(db, "SELECT DISTINCT platform FROM accounts")]


# -- incidents ---------------------------------------------------------------------------------


def record_failure(
    db: Any,
    *,
    reason: str,
    now: str,
    since: str,
    failed_outcomes: tuple[str, ...],
    failures_to_open: int,
) -> dict[str, Any] | None:
    """Count a failed attempt on the open incident; with none open, open one when at least
    `failures_to_open` attempts ended in one of `failed_outcomes` since `since`. Returns the
    incident if this failure opened one. Opens its own transaction (the count and the opening
    hold together): never call it inside one."""
    placeholders = marks(len(failed_outcomes))
    with transaction(db):
        open_incident = row(db, "SELECT * FROM incidents WHERE closed_at IS NULL")
        if open_incident is not None:
            execute(
                db,
                "UPDATE incidents SET failures = failures + 1, last_failure_at = ? WHERE id = ?",
                (now, open_incident["id"]),
            )
            return None
        recent = row(
            db,
            f"SELECT COUNT(*) AS n FROM post_attempts WHERE outcome IN ({placeholders})"
            " AND ended_at >= ?",
            (*failed_outcomes, since),
        )["n"]
        if recent < failures_to_open:
            return None
        return row(
            db,
            "INSERT INTO incidents (opened_at, failures, reason, last_failure_at)"
            " VALUES (:now, :failures, :reason, :now) RETURNING *",
            {"now": now, "failures": recent, "reason": reason},
        )


def close_incidents(db: Any, now: str) -> None:
    """The open incident (if any) closes at `now`: a publish went through."""
    execute(db, "UPDATE incidents SET closed_at = ? WHERE closed_at IS NULL", (now,))


def list_incidents(db: Any, *, open_only: bool = False) -> list[dict]:
    where = " WHERE closed_at IS NULL" if open_only else ""
    return rows(db, f"SELECT * FROM incidents{where} ORDER BY id")
