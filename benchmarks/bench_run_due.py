"""Idle `run-due`, `status` and `--help` as whole processes, over 1,000 channels × 24 slots,
on the SQLite file and on PostgreSQL side by side.

Run from the repository root: python benchmarks/bench_run_due.py [--channels 1000] [--repeat 5]
[--home DIR] [--store both|sqlite|postgresql]

`--home DIR` keeps the built home in DIR and, when DIR already holds one, times it again
without building (building a year of history for 1,000 channels takes minutes). The PostgreSQL
copy is made afresh every run, its server being thrown away (2 to 3 minutes at 1,000 channels).

It builds a home whose channels have a year of history (every slot decided: 24 × 365 slot rows
and decisions per channel, 8.7 M rows each at 1,000 channels, written straight into SQLite),
then times each command as its own process, round by round (every command on every store once
a round, `python -c pass` as the floor), and prints each one's median and fastest run, its peak
memory and whether a heavy library was imported on the path. On the SQLite path psycopg must not
be imported at all: the benchmark fails when it is.

The PostgreSQL home is the same home in a throw-away server (tests/postgres_server.py: initdb in
a temporary folder, a Unix socket only): everything but the history goes across with
`autoretto store copy`, the history rows with COPY (see `postgres_home`). Its commands run with
AUTORETTO_DATABASE_URL set; the ratio column is PostgreSQL's median over SQLite's (the aim:
at most 2×), raw and above the floor.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

HEAVY = ("numpy", "librosa", "googleapiclient", "scipy", "numba")
NOW = datetime(2026, 11, 29, 10, 30, tzinfo=UTC)
STORES = ("sqlite", "postgresql")
#: What PostgreSQL may take over SQLite, command by command (issue 25).
AIM = 2.0
#: The history tables. `store copy` moves a row at a time and holds a table's rows in memory:
#: for the 17.5 M rows of these two at 1,000 channels that is minutes and gigabytes (measured:
#: 1.75 M rows in 30 s and 0.7 GB), so the benchmark sends them with COPY and the command
#: carries everything else.
HISTORY = ("slots", "decisions")


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


def postgres_home(home: Path, folder: Path, url: str) -> Path:
    """The home at `home`, on the empty PostgreSQL database at `url`: the same rows, the same
    autoretto.toml. Returns the PostgreSQL home's folder (its SQLite file is marked as moved by
    `store copy`, so a command that missed AUTORETTO_DATABASE_URL fails instead of timing the
    file)."""
    import psycopg

    from autoretto.ledger.store import open_database

    moved = folder / "home-postgresql"
    (moved / "logs").mkdir(parents=True)
    shutil.copy(home / "autoretto.toml", moved / "autoretto.toml")
    # A SQLite file with every table of the built one but the history (the same migrations,
    # so the same columns in the same order), which `store copy` then moves as a person would.
    open_database(moved / "autoretto.db").conn.close()
    stripped = sqlite3.connect(moved / "autoretto.db", isolation_level=None)
    stripped.execute("ATTACH DATABASE ? AS built", (str(home / "autoretto.db"),))
    tables = [
        name
        for (name,) in stripped.execute(
            "SELECT name FROM built.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
        if name not in HISTORY
    ]
    stripped.execute("BEGIN")
    for table in tables:
        stripped.execute(f'DELETE FROM main."{table}"')
        stripped.execute(f'INSERT INTO main."{table}" SELECT * FROM built."{table}"')
    stripped.execute("COMMIT")
    stripped.close()
    env = dict(os.environ, AUTORETTO_HOME=str(moved))
    env.pop("AUTORETTO_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "autoretto", "store", "copy", "--to", url],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"autoretto store copy failed: {done.stderr}")

    source = sqlite3.connect(home / "autoretto.db")
    with psycopg.connect(url) as target:
        for table in HISTORY:
            cursor = source.execute(f'SELECT * FROM "{table}"')
            names = ", ".join(f'"{column[0]}"' for column in cursor.description)
            with target.cursor().copy(f'COPY "{table}" ({names}) FROM STDIN') as copy:
                for found in cursor:
                    copy.write_row(found)
        target.execute(
            "SELECT setval(pg_get_serial_sequence('decisions', 'id'),"
            " GREATEST((SELECT MAX(id) FROM decisions), 1))"
        )
    source.close()
    # Statistics for the planner, as autovacuum would gather them a minute after a bulk load
    # (`store copy` leaves that to it): timed before it, the plans would be a cold server's.
    with psycopg.connect(url, autocommit=True) as target:
        target.execute("VACUUM ANALYZE")
    return moved


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


def imported(command: list[str], env: dict[str, str]) -> set[str]:
    """The top-level packages the command imports (from `python -X importtime`)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *command[1:]],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--channels", type=int, default=1000)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--home", type=Path, help="keep the built home here; reuse it if there")
    parser.add_argument("--store", choices=("both", *STORES), default="both")
    options = parser.parse_args()
    stores = STORES if options.store == "both" else (options.store,)

    server = None
    with tempfile.TemporaryDirectory() as folder:
        try:
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
            homes = {"sqlite": home}
            url = ""
            if "postgresql" in stores:
                from tests.postgres_server import PostgresServer

                server = PostgresServer().start()
                url = server.fresh_url()
                started = time.perf_counter()
                homes["postgresql"] = postgres_home(home, Path(folder), url)
                seconds = time.perf_counter() - started
                print(f"postgresql: the same home copied in {seconds:.0f} s ({url})")
            print(f"load average before timing: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus")
            envs = {}
            for store in stores:
                env = dict(
                    os.environ,
                    # Timed as installed: pip and pipx write the package's bytecode at install,
                    # so nothing is compiled per run (a checkout under PYTHONDONTWRITEBYTECODE=1
                    # would compile every module of the path on every command). The first
                    # timed run writes it into a cache of this run's own.
                    PYTHONPYCACHEPREFIX=str(Path(folder) / "pycache"),
                    AUTORETTO_HOME=str(homes[store]),
                    AUTORETTO_NOW=_iso(NOW),
                    # the journal's place, kept in the run (and apart for each store)
                    XDG_STATE_HOME=str(Path(folder) / f"state-{store}"),
                )
                env.pop("PYTHONDONTWRITEBYTECODE", None)
                env.pop("AUTORETTO_DATABASE_URL", None)
                if store == "postgresql":
                    env["AUTORETTO_DATABASE_URL"] = url
                envs[store] = env
            time_commands(stores, envs, url, options.repeat)
        finally:
            if server is not None:
                server.stop()


def time_commands(
    stores: tuple[str, ...], envs: dict[str, dict[str, str]], url: str, repeat: int
) -> None:
    autoretto = [sys.executable, "-m", "autoretto"]
    for env in envs.values():
        for warm in (["--help"], ["status", "--json"], ["run-due"]):
            subprocess.run([*autoretto, *warm], env=env, capture_output=True, check=False)
    floor = "python -c pass"
    # What every PostgreSQL command pays before its first statement: importing psycopg and
    # connecting over the socket (shown in the postgresql column only).
    connect = "python: psycopg connect"
    rows = [
        (floor, [sys.executable, "-c", "pass"], None),
        (
            connect,
            [sys.executable, "-c", f"import psycopg; psycopg.connect({url!r}).close()"],
            None,
        ),
        ("autoretto --help", [*autoretto, "--help"], 0.3),
        ("autoretto status --json", [*autoretto, "status", "--json"], 0.3),
        ("autoretto run-due (idle)", [*autoretto, "run-due"], 0.5),
        (
            "status --json, one channel",
            [*autoretto, "status", "--json", "--channel", "channel-7"],
            0.3,
        ),
    ]

    def runs_on(label: str, store: str) -> bool:
        if label == floor:  # the floor is one, whatever the store
            return store == stores[0]
        return label != connect or store == "postgresql"

    # Round by round, every command on every store once a round: a slow spell of the machine
    # falls on every command alike (the floor included) instead of on one command's runs.
    walls: dict[tuple[str, str], list[float]] = {}
    for _ in range(repeat):
        for label, command, _ in rows:
            for store in stores:
                if not runs_on(label, store):
                    continue
                wall, output = once(command, envs[store])
                walls.setdefault((label, store), []).append(wall)
                if label.startswith("autoretto run-due") and "nothing due" not in output:
                    raise SystemExit(f"run-due ({store}) was not idle: {output[:300]}")

    floor_s = statistics.median(walls[floor, stores[0]])
    header = f"{'command':28}"
    for store in stores:
        header += f" {store + ' s':>13} {'min s':>6} {'MB':>4}"
    if len(stores) == 2:
        header += f" {'ratio':>6} {'net':>6}"
    print(header + f" {'target':>6}  heavy imports")
    psycopg_on_sqlite = []
    for label, command, target in rows:
        line = f"{label:28}"
        medians = {}
        heavy = []
        for store in stores:
            found = walls.get((label, store))
            if not found:
                line += f" {'-':>13} {'-':>6} {'-':>4}"
                continue
            medians[store] = statistics.median(found)
            peak = peak_mb(command, envs[store])
            line += f" {medians[store]:13.3f} {min(found):6.3f} {peak:4.0f}"
            if target:
                names = imported(command, envs[store])
                watched = (*HEAVY, "psycopg") if store == "sqlite" else HEAVY
                shown = sorted(name for name in watched if name in names)
                heavy.append(f"{store}: {', '.join(shown) or 'none'}")
                if store == "sqlite" and "psycopg" in names:
                    psycopg_on_sqlite.append(label)
        if len(medians) == 2:
            ratio = medians["postgresql"] / medians["sqlite"]
            above = max(medians["sqlite"] - floor_s, 1e-3)
            net = (medians["postgresql"] - floor_s) / above
            line += f" {ratio:6.2f} {net:6.2f}"
        elif len(stores) == 2:
            line += f" {'-':>6} {'-':>6}"
        shown_target = f"{target:.2f}" if target else "-"
        print(f"{line} {shown_target:>6}  {'; '.join(heavy)}".rstrip())
    if len(stores) == 2:
        print(
            f"ratio: postgresql median / sqlite median (aim <= {AIM:.0f}); net: the same above"
            f" the floor ({floor_s:.3f} s); MB: peak memory of the command's process (the"
            " server's not counted)"
        )
    if psycopg_on_sqlite:
        raise SystemExit(f"psycopg imported on the SQLite path: {', '.join(psycopg_on_sqlite)}")


if __name__ == "__main__":
    main()
