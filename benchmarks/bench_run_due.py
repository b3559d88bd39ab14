"""Idle `run-due`, `status` and `--help` as whole processes, over 1,000 channels × 24 slots.

Run by hand: python benchmarks/bench_run_due.py [--channels 1000] [--repeat 5] [--home DIR]

`--home DIR` keeps the built home in DIR and, when DIR already holds one, times it again
without building (building a year of history for 1,000 channels takes minutes).

It builds a home whose channels have a year of history (every slot decided: 24 × 365 slot rows
and decisions per channel, 8.7 M rows at 1,000 channels, written straight into SQLite), then
times each command as its own process, round by round (every command once a round, `python -c
pass` as the floor), and prints each one's median and fastest run, its peak memory and whether
a heavy library was imported on the path.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

HEAVY = ("numpy", "librosa", "googleapiclient", "scipy", "numba")
NOW = datetime(2026, 11, 29, 10, 30, tzinfo=UTC)


def build_home(home: Path, channels: int, days: int) -> None:
    from autoretto.config import Paths, load_config
    from autoretto.engine.run import register_channels
    from autoretto.ledger.store import open_database
    from autoretto.platforms import FIELDS

    slots = ", ".join(f'"{h:02d}:00"' for h in range(24))
    parts = []
    for number in range(channels):
        parts.append(
            f'[[channels]]\nname = "channel-{number}"\ntimezone = "Europe/Berlin"\n'
            f'slots = [{slots}]\ncatch_up_window = "2h"\nplatforms = ["folder"]\n'
        )
    parts.append('[platforms.folder]\npath = "outbox"\n')
    home.mkdir(parents=True)
    (home / "autoretto.toml").write_text("\n".join(parts))
    (home / "logs").mkdir()
    config = load_config(Paths(home), platforms=FIELDS)
    db = open_database(config.paths.database)
    register_channels(config, db, NOW - timedelta(days=days + 1))
    db.conn.close()

    # History straight through SQLite: every past slot decided, the latest one posted.
    schedule = config.channels[0].schedule
    history = schedule.slots_between(NOW - timedelta(days=days), NOW)
    connection = sqlite3.connect(home / "autoretto.db")
    connection.execute("PRAGMA synchronous = OFF")
    with connection:
        for number in range(channels):
            name = f"channel-{number}"
            connection.executemany(
                "INSERT INTO slots (channel, slot, slot_at, state, run_id, updated_at)"
                " VALUES (?, ?, ?, 'filled', 'bench', ?)",
                [(name, s.key, s.at_text, s.at_text) for s in history],
            )
            connection.executemany(
                "INSERT INTO decisions (channel, slot, slot_at, platform, outcome, reason,"
                " decided_at, run_id) VALUES (?, ?, ?, 'folder', 'posted', 'bench', ?, 'bench')",
                [(name, s.key, s.at_text, s.at_text) for s in history],
            )
        connection.execute(
            "UPDATE channels SET last_release_at = ?, decided_through = ?",
            (history[-1].at_text, history[-1].at_text),
        )
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# A small process that runs the command and reports its peak RSS: measured from this (big)
# process, a forked child would count the parent's pages too.
PEAK = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL);"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def once(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Wall seconds of one run, and its stdout."""
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr}")
    return wall, done.stdout


def peak_mb(command: list[str], env: dict[str, str]) -> float:
    measured = subprocess.run(
        [sys.executable, "-c", PEAK, *command], env=env, capture_output=True, text=True
    )
    return int(measured.stdout.strip() or 0) / 1024


def heavy_imports(command: list[str], env: dict[str, str]) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *command[1:]],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    names = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines()}
    return sorted(name for name in HEAVY if name in names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--channels", type=int, default=1000)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--home", type=Path, help="keep the built home here; reuse it if there")
    options = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        home = options.home or Path(folder) / "home"
        started = time.perf_counter()
        if (home / "autoretto.db").exists():
            built = "reused, built by an earlier run"
        else:
            build_home(home, options.channels, options.days)
            seconds = time.perf_counter() - started
            built = f"{options.days} days of history, built in {seconds:.0f} s"
        size = (home / "autoretto.db").stat().st_size / 1e6
        channels = (home / "autoretto.toml").read_text().count("[[channels]]")
        print(f"home: {channels} channels x 24 slots, db {size:.0f} MB, {built}")
        env = dict(
            os.environ,
            # Timed as installed: pip and pipx write the package's bytecode at install, so
            # nothing is compiled per run (a checkout under PYTHONDONTWRITEBYTECODE=1 would
            # compile every module of the path on every command). The first timed run writes
            # it into a cache of this run's own.
            PYTHONPYCACHEPREFIX=str(Path(folder) / "pycache"),
            AUTORETTO_HOME=str(home),
            AUTORETTO_NOW=_iso(NOW),
            XDG_STATE_HOME=str(Path(folder) / "state"),  # the journal's place, kept in the run
        )
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        autoretto = [sys.executable, "-m", "autoretto"]
        for warm in (["--help"], ["status", "--json"], ["run-due"]):
            subprocess.run([*autoretto, *warm], env=env, capture_output=True, check=False)
        rows = [
            ("python -c pass", [sys.executable, "-c", "pass"], None),
            ("autoretto --help", [*autoretto, "--help"], 0.3),
            ("autoretto status --json", [*autoretto, "status", "--json"], 0.3),
            ("autoretto run-due (idle)", [*autoretto, "run-due"], 0.5),
            (
                "status --json, one channel",
                [*autoretto, "status", "--json", "--channel", "channel-7"],
                0.3,
            ),
        ]
        # Round by round, every command once a round: a slow spell of the machine falls on
        # every command alike (the floor included) instead of on one command's runs.
        walls: dict[str, list[float]] = {label: [] for label, _, _ in rows}
        for _ in range(options.repeat):
            for label, command, _ in rows:
                wall, output = once(command, env)
                walls[label].append(wall)
                if label.startswith("autoretto run-due") and "nothing due" not in output:
                    raise SystemExit(f"run-due was not idle: {output[:300]}")
        print(
            f"{'command':28} {'median s':>8} {'min s':>8} {'target':>8} {'peak MB':>8}"
            "  heavy imports"
        )
        for label, command, target in rows:
            heavy = heavy_imports(command, env) if target else []
            shown = f"{target:.2f}" if target else "-"
            print(
                f"{label:28} {statistics.median(walls[label]):8.3f} {min(walls[label]):8.3f}"
                f" {shown:>8} {peak_mb(command, env):8.0f}  {', '.join(heavy) or 'none'}"
            )


if __name__ == "__main__":
    main()
