"""Racing runs on one store: 8 processes claiming, deciding and advancing 5,000 channels, on
the SQLite file and on PostgreSQL side by side.

Run from the repository root: python benchmarks/bench_race.py [--processes 8]
[--channels 5000] [--store both|sqlite|postgresql]

Every channel has the same one slot due. Each process opens the store, waits for the others at
a barrier, then goes over every channel in the same order (so the processes run neck and neck
on the same rows) and does what a run does with a due slot, through the ledger's own functions:

- claim it (`claims.claim_slot`, one compare-and-set, outside a transaction as run-due does);
- record the slot's decision (`claims.record_decision`: the unique key, the first insert wins);
- inside one write transaction, advance the stamp (`claims.advance_stamp`, only the claim's
  holder can) and, when it moved, number a journal entry (`journal.number_entry`), as
  engine.run_due.release does.

Every process tries every step on every channel, whatever the step before gave it: each guard
must hold on its own, not only behind the one before it. It prints, for each store, the slots
claimed, decided or advanced more than once and those no one got (lost), the journal numbers
taken twice and the ones skipped, how far what the store itself holds afterwards is from one
decision, one stamp and one journal line a channel, and the wall time from the barrier to the
last process done. Every count but the wall time must be 0. The claims each process won are
printed too: a race that one process won throughout would prove nothing.

The PostgreSQL store is a throw-away server (tests/postgres_server.py: initdb in a temporary
folder, a Unix socket only). The run is bounded: a process that is not done in `--timeout`
seconds is killed and the benchmark fails.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

STORES = ("sqlite", "postgresql")
SLOT = "2026-11-29T10:00"
SLOT_AT = "2026-11-29T10:00:00Z"
NOW = "2026-11-29T10:00:05Z"


def make_store(path: Path, url: str | None, channels: int) -> None:
    """A new store with `channels` channels, none of which has released anything yet."""
    from autoretto.ledger.claims import register_channel
    from autoretto.ledger.store import open_database, transaction

    db = open_database(path, url=url)
    with transaction(db):
        for number in range(channels):
            register_channel(db, f"channel-{number}", "race", {"slots": ["10:00"]}, NOW)
    db.conn.close()


def worker(
    path: Path, url: str | None, index: int, channels: int, barrier: Any, results: Any
) -> None:
    """One racing run: every step on every channel; puts what it won on `results`."""
    from autoretto.ledger.claims import advance_stamp, claim_slot, record_decision
    from autoretto.ledger.journal import number_entry
    from autoretto.ledger.store import open_database, transaction

    db = open_database(path, create=False, url=url)
    run_id = f"race-{index}"
    won: dict[str, list[Any]] = {"claimed": [], "decided": [], "advanced": [], "numbers": []}
    barrier.wait()
    for number in range(channels):
        name = f"channel-{number}"
        if claim_slot(db, name, SLOT, SLOT_AT, run_id, NOW):
            won["claimed"].append(name)
        decided = record_decision(
            db,
            run_id=run_id,
            channel=name,
            slot=SLOT,
            slot_at=SLOT_AT,
            platform="folder",
            outcome="posted",
            reason="race",
            decided_at=NOW,
            post_id=None,
        )
        if decided:
            won["decided"].append(name)
        with transaction(db):
            if advance_stamp(db, name, SLOT_AT, run_id):
                won["advanced"].append(name)
                entry = {"kind": "stamp", "at": NOW, "channel": name, "slot": SLOT}
                won["numbers"].append(number_entry(db, {**entry, "slot_at": SLOT_AT}))
    db.conn.close()
    results.put((index, won))


def store_holds(path: Path, url: str | None) -> dict[str, int]:
    """What the store holds after the race, counted by the store itself."""
    from autoretto.ledger.store import open_database, row

    db = open_database(path, create=False, url=url)
    counts = {
        "decisions": "SELECT COUNT(*) AS n FROM decisions WHERE slot = :slot",
        "distinct decisions": "SELECT COUNT(DISTINCT channel) AS n FROM decisions"
        " WHERE slot = :slot",
        "journal entries": "SELECT COUNT(*) AS n FROM journal_entries",
        "distinct journal numbers": "SELECT COUNT(DISTINCT seq) AS n FROM journal_entries",
        "journal_seq": "SELECT CAST(value AS INTEGER) AS n FROM meta WHERE key = 'journal_seq'",
        "stamped": "SELECT COUNT(*) AS n FROM channels WHERE last_release_at = :at"
        " AND claim_run_id IS NULL",
    }
    held = {}
    for label, sql in counts.items():
        found = row(db, sql, {"slot": SLOT, "at": SLOT_AT})
        held[label] = int(found["n"]) if found and found["n"] is not None else 0
    db.conn.close()
    return held


def race(
    store: str, folder: Path, url: str | None, processes: int, channels: int, timeout: float
) -> dict[str, float]:
    """One race on one store; returns its counts (and `wall s`)."""
    path = folder / store / "autoretto.db"
    path.parent.mkdir()
    make_store(path, url, channels)
    before = store_holds(path, url)["journal_seq"]
    # spawn, not fork: every process makes its own connection from nothing, as a run does.
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes + 1)
    results = context.Queue()
    running = [
        context.Process(target=worker, args=(path, url, index, channels, barrier, results))
        for index in range(processes)
    ]
    for process in running:
        process.start()
    barrier.wait(timeout=120)  # every process has its connection: the race starts now
    started = time.perf_counter()
    won: list[dict[str, list[Any]]] = []
    try:
        for _ in running:
            won.append(results.get(timeout=max(timeout - (time.perf_counter() - started), 1))[1])
    except Exception:
        for process in running:
            process.kill()
        raise SystemExit(f"{store}: the race was not done in {timeout:.0f} s") from None
    wall = time.perf_counter() - started
    for process in running:
        process.join(timeout=30)

    counts: dict[str, float] = {}
    for step in ("claimed", "decided", "advanced"):
        per_channel = Counter(name for one in won for name in one[step])
        counts[f"{step} twice"] = sum(n - 1 for n in per_channel.values() if n > 1)
        counts[f"{step}: lost"] = channels - len(per_channel)
    numbers = [seq for one in won for seq in one["numbers"]]
    counts["numbers taken twice"] = len(numbers) - len(set(numbers))
    # Every number from the one before the race to the last one taken, each taken once.
    counts["numbers skipped"] = len(set(range(before + 1, before + channels + 1)) - set(numbers))
    held = store_holds(path, url)
    counts["store rows off"] = (
        abs(held["decisions"] - channels)
        + (held["decisions"] - held["distinct decisions"])
        + abs(held["journal entries"] - channels)
        + (held["journal entries"] - held["distinct journal numbers"])
        + abs(held["journal_seq"] - before - channels)
        + abs(held["stamped"] - channels)
    )
    # Whether it was a race at all: one process winning every claim would prove nothing.
    claimed = sorted(len(one["claimed"]) for one in won)
    print(f"{store}: claims won per process {claimed}, race {wall:.1f} s")
    counts["wall s"] = wall
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--channels", type=int, default=5000)
    parser.add_argument("--store", choices=("both", *STORES), default="both")
    parser.add_argument("--timeout", type=float, default=600, help="seconds a race may take")
    options = parser.parse_args()
    stores = STORES if options.store == "both" else (options.store,)
    # The SQLite race must be on the file, whatever this shell has set.
    os.environ.pop("AUTORETTO_DATABASE_URL", None)

    print(
        f"race: {options.processes} processes x {options.channels} channels, one slot due;"
        f" load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus"
    )
    server = None
    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        try:
            for store in stores:
                url = None
                if store == "postgresql":
                    from tests.postgres_server import PostgresServer

                    server = PostgresServer().start()
                    url = server.fresh_url()
                figures[store] = race(
                    store, Path(folder), url, options.processes, options.channels, options.timeout
                )
        finally:
            if server is not None:
                server.stop()

    labels = list(figures[stores[0]])
    print(f"{'':24}" + "".join(f" {store:>11}" for store in stores))
    for label in labels:
        shown = [figures[store][label] for store in stores]
        if label == "wall s":
            print(f"{label:24}" + "".join(f" {value:11.1f}" for value in shown))
        else:
            print(f"{label:24}" + "".join(f" {int(value):11d}" for value in shown))
    if len(stores) == 2:
        ratio = figures["postgresql"]["wall s"] / figures["sqlite"]["wall s"]
        print(f"{'wall ratio (pg/sqlite)':24} {'':>11} {ratio:11.2f}")
    bad = [
        f"{store}: {label}"
        for store in stores
        for label, value in figures[store].items()
        if label != "wall s" and value
    ]
    if bad:
        raise SystemExit(f"the race lost or doubled something: {', '.join(bad)}")


if __name__ == "__main__":
    main()
