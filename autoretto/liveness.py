"""Whether the run that holds a claim is gone, decided without comparing two clocks.

A claim (a slot, the making of a channel's episodes, a slot's platform that waits, a post
being sent) names the run that holds it. That run's heartbeat thread adds one to its `beat`
counter every few seconds. Another run may take the claim over only when the holder is gone:

- on the same machine (the same boot and the same process namespace) the holder's process is
  asked directly: gone when no process has its pid, or another one does (a process's start
  time in /proc tells a reused pid apart). A live holder is never taken over, whatever the two
  clocks say, and a dead one is taken over at once;
- elsewhere (another host, or a run this machine cannot ask) the rule is two sightings: a run
  that finds a claim notes the holder's beat and the moment it saw it, by its own clock; a
  later run takes over only if the very same beat is still there `stale_after` after it was
  first seen. The holder's heartbeat time is never compared with the observer's clock: a clock
  that jumps an hour (NTP after a suspend) or two hosts that disagree cannot make a live run
  look dead (ARCHITECTURE.md §3).

The take-over itself is a compare-and-set that also checks that the beat is still the one
seen (ledger.claims.BEAT_UNCHANGED), so a holder that beats between the look and the take-over
keeps its claim.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import TYPE_CHECKING

from .clock import from_iso, iso
from .ledger import runs

if TYPE_CHECKING:
    from .ledger.store import Store as Database


@dataclass(frozen=True)
class Gone:
    """A holder judged gone, and the beat it was judged by (for the take-over's CAS)."""

    run_id: str
    beat: int
    why: str


_acting = threading.local()


def act_for(run_id: str | None, stale_after: timedelta | None = None) -> None:
    """This thread now works for run `run_id` (None: for no run any more), which judges
    others' runs gone after `stale_after`: what a lease taken in this thread names as its
    holder (accounts.account_lock). A `Run` calls this as it starts and ends; the page's
    post-now runs each in a thread of its own, hence one per thread."""
    _acting.run = None if run_id is None else (run_id, stale_after)


def acting() -> tuple[str, timedelta | None] | None:
    """The run this thread works for, and its `stale_after`; None outside a run."""
    return getattr(_acting, "run", None)


#: Names this host among the hosts of one store (the order it walks the channels in, and the
#: machine its runs are on); default: its name and its home.
HOST_ID_VARIABLE = "AUTORETTO_HOST_ID"


def this_machine() -> str:
    """This boot of this machine and this process namespace, or "" where it cannot be told
    (no /proc): a pid means something only inside one of these (boot_id:
    https://man7.org/linux/man-pages/man4/random.4.html; /proc/self/ns/pid:
    https://man7.org/linux/man-pages/man7/pid_namespaces.7.html). With AUTORETTO_HOST_ID set,
    that name is part of it: two hosts declared apart never ask after each other's pids, even
    on one machine (containers that share a boot and a pid namespace), and are judged by the
    rule of two sightings."""
    boot = _boot_and_namespace()
    named = os.environ.get(HOST_ID_VARIABLE)
    return f"{named}/{boot}" if boot and named else boot


@cache
def _boot_and_namespace() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as reader:
            boot = reader.read().strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""
    return f"{boot}/{namespace}"


def process_start(pid: int) -> str | None:
    """When process `pid` started, in clock ticks since boot (field 22, starttime, of
    /proc/PID/stat: https://man7.org/linux/man-pages/man5/proc_pid_stat.5.html), or None when
    there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as reader:
            stat = reader.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: count after it.
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def describe_this_process() -> dict[str, object]:
    """What a run's row records so that another run on this machine can ask after it."""
    pid = os.getpid()
    return {"pid": pid, "machine": this_machine() or None, "process_start": process_start(pid)}


def holder_gone(
    db: Database, run_id: str | None, *, now: datetime, stale_after: timedelta, note: bool = True
) -> Gone | None:
    """The holder `run_id` as gone (with the beat it was judged by), or None while it may be
    alive. Writes a sighting when the rule of two sightings is the one that applies (unless
    `note` is False: a look that writes nothing)."""
    if run_id is None:
        return None
    found = runs.run_facts(db, run_id)
    beat = -1 if found is None else int(found["beat"] or 0)
    if found is not None and found["ended_at"]:
        return Gone(run_id, beat, "its run ended without giving the claim back")
    machine = this_machine()
    if found is not None and machine and found["machine"] == machine:
        started = process_start(int(found["pid"]))
        if started is not None and started == found["process_start"]:
            return None  # alive on this machine, however long its heartbeat seems to be
        return Gone(run_id, beat, f"its process {found['pid']} is gone")
    return _seen_twice(db, run_id, beat, now=now, stale_after=stale_after, note=note)


def _seen_twice(
    db: Database, run_id: str, beat: int, *, now: datetime, stale_after: timedelta, note: bool
) -> Gone | None:
    """The rule of two sightings (the module's docstring)."""
    seen = runs.sighting(db, run_id)
    if seen is not None and seen["beat"] == beat:
        first = from_iso(seen["seen_at"])
        if first <= now:
            if now - first >= stale_after:
                return Gone(run_id, beat, f"its heartbeat has not moved since {seen['seen_at']}")
            return None
        # A sighting "in the future": this clock went back. Count again from now.
    if not note:
        return None
    runs.note_sighting(db, run_id, beat, iso(now))
    return None
