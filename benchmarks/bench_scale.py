"""Several hosts on one PostgreSQL store (issue 26): H = 1, 2 and 4 hosts × 500 and 2,000
channels, every channel's one slot due at the same moment, against a local fake platform, with
the SQLite file on one host beside them in the same run.

Run from the repository root: python benchmarks/bench_scale.py [--channels 500 2000]
[--hosts 1 2 4] [--quick] [--journal file|bucket]

`--quick` is a sanity check: 100 channels, 1 and 2 hosts (well under a minute).

What a configuration is. H homes (one folder each, its own AUTORETTO_HOME), all with the same
autoretto.toml: N channels, each with the one slot 10:00 UTC and the `webhook` platform, whose
endpoint is the fake of tests/fakes/webhook_server.py run by this benchmark on 127.0.0.1 (it
keeps every copy it is sent: it does not honour Idempotency-Key, so a second send of one post is
a second copy); the journal is one shared file (or, with `--journal bucket`, write-once objects
in a bucket of moto's S3 server, started by the benchmark, as README's "Running on several
hosts" recommends; the bucket's requests then count in `journal`). On
PostgreSQL every home is pointed at one fresh database of a throw-away server
(tests/postgres_server.py) by AUTORETTO_DATABASE_URL; the SQLite configuration is one home on
its own file.

Making is replaced by stock: before the timed part, every channel gets one ready episode,
written through the ledger (`ledger.episodes.add_episode`) with its video at one shared
absolute path (a 16 kB file; the webhook platform sends its bytes, it does not decode them).
The channels have no pipeline, so a run makes nothing: each slot costs what coordination
costs (claim, decide, post through the post state machine, stamp, journal) plus one HTTP
upload to a local endpoint. Before the timed part each home also runs `run-due` once at 09:00
(nothing is due): the channels are registered and every home's first-run work is done, as on
hosts that have been running hourly.

The timed part. At t0 all H hosts are started together, each running
`autoretto run-due --now 2026-11-29T10:05:00Z --no-wait --json` as a real process (as cron
would start them at the tick); a host whose run decided something runs again at once, until a
run of its decides nothing (one extra, idle round per host, as its next cron tick would be).
It prints, per configuration:

- dup: copies at the platform beyond the first for any (channel, slot); must be 0;
- lost: channels whose due slot has no copy at the platform when every host is done; must be 0;
- slots/min: slots posted per minute of wall time, from t0 to the last post's arrival;
- p95 late s: the 95th percentile of (the post's arrival at the endpoint, wall clock) - t0: how
  late after the cron tick that found the slot due its post got out (the runs' own clock is
  the fixed --now, so lateness is measured on the wall clock; it includes process start-up);
- store ms/slot: the time the hosts spent inside store calls, summed over every host and
  round, per slot posted. It is measured in each host process: the benchmark starts
  `autoretto` through a small wrapper (this file with `--host`) that times, before the CLI
  is imported, every statement the ledger sends (PostgresStore.execute on PostgreSQL; the
  SQLite connection's execute and its cursors' fetches on the file) and opening the store,
  so it holds the server's work, the socket's round trips and every wait for a lock; the
  Python around the statements is not in it. `lock` is the part of it spent in BEGIN IMMEDIATE
  (on PostgreSQL: BEGIN and the advisory write lock every writing transaction takes; on
  SQLite: the file's write lock), i.e. waiting for the other hosts; `stmts/slot` counts the
  statements. The store's time per slot staying flat as H grows is issue 26's aim;
- server / in xact (PostgreSQL): the server's own execution time per slot
  (pg_stat_statements, loaded by restarting the throw-away server) and the time the hosts'
  sessions sat idle inside a transaction (pg_stat_database), which is time the one advisory
  write lock is held while a host works between statements; the statements that took the
  server most time are listed for the most hosts of each channel count;
- journal ms/slot: the hosts' time in the shared journal file (journal.take's tail read,
  catch_up's flock, append and fsync), its statements left out (they are in the store's);
- CPU ms/slot: the host processes' user+system time, and the server processes' (the
  postmaster's own, its reaped backends', its live children's).

Floors measured in the same run: `python -c pass`, and `autoretto --help` on the SQLite home.

The fake endpoint is threads in this process; the machine's cores are shared by the hosts,
the PostgreSQL server and the endpoint, so on a machine with fewer cores than hosts the
slots/min cannot grow with H (the benchmark measures coordination, not parallel speed-up):
compare the store's ms/slot and the lock's share across H.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SLOT_KEY = "2026-11-29T10:00"
SLOT_AT = "2026-11-29T10:00:00Z"
BEFORE = "2026-11-29T09:00:00Z"  # the warm-up round: channels registered, nothing due
NOW = "2026-11-29T10:05:00Z"  # the timed round: every channel's 10:00 slot is due
MOST_ROUNDS = 5  # a host still deciding after this many runs is a failure


# -- inside a host process ---------------------------------------------------------------------


def as_host(counters: Path, argv: list[str]) -> None:
    """Run `autoretto ARGV` in this process with every store call timed; the totals are written
    to `counters` (JSON) when the command ends, however it ends."""
    import atexit

    timed = {"store_s": 0.0, "lock_s": 0.0, "open_s": 0.0, "journal_s": 0.0, "statements": 0}
    clock = time.perf_counter
    opening_now = threading.local()

    def timing(method: Any, *, fetch: bool = False, begin: bool = False) -> Any:
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            # Counted whole in open_s while opening; a call inside a timed one (execute's
            # BEGIN IMMEDIATE calling begin) is in its caller's figure.
            if getattr(opening_now, "yes", False) or getattr(opening_now, "inside", False):
                return method(self, *args, **kwargs)
            started = clock()
            opening_now.inside = True
            try:
                return method(self, *args, **kwargs)
            finally:
                opening_now.inside = False
                spent = clock() - started
                timed["store_s"] += spent
                if not fetch:
                    timed["statements"] += 1
                    if begin or (args and str(args[0]).lstrip().upper().startswith("BEGIN")):
                        timed["lock_s"] += spent

        return call

    if os.environ.get("AUTORETTO_DATABASE_URL"):
        import psycopg  # noqa: F401  (imported before the timing: opening is connect + check)

    from autoretto.ledger import postgres, store

    postgres.PostgresStore.execute = timing(postgres.PostgresStore.execute)
    # ledger.store.transaction opens a PostgreSQL transaction with `begin` (BEGIN and the lock).
    postgres.PostgresStore.begin = timing(postgres.PostgresStore.begin, begin=True)
    connection, cursor = store._Connection, store._Cursor
    connection.execute = timing(connection.execute)
    connection.executemany = timing(connection.executemany)
    for name in ("fetchone", "fetchmany", "fetchall", "__next__"):
        setattr(cursor, name, timing(getattr(cursor, name), fetch=True))
    opening = store.open_database

    def open_database(*args: Any, **kwargs: Any) -> Any:
        started = clock()
        opening_now.yes = True
        try:
            return opening(*args, **kwargs)
        finally:
            opening_now.yes = False
            timed["open_s"] += clock() - started

    store.open_database = open_database  # before the CLI imports it by name

    from autoretto import journal

    def journal_work(function: Any) -> Any:
        """The journal's own work: the file (read, flock, append, fsync), not its statements
        (those are in store_s already)."""

        def call(*args: Any, **kwargs: Any) -> Any:
            started, inside = clock(), timed["store_s"]
            try:
                return function(*args, **kwargs)
            finally:
                timed["journal_s"] += clock() - started - (timed["store_s"] - inside)

        return call

    journal.take = journal_work(journal.take)
    journal.catch_up = journal_work(journal.catch_up)

    atexit.register(lambda: counters.write_text(json.dumps(timed)))
    sys.argv = ["autoretto", *argv]
    from autoretto.cli import run

    run()


# -- the fake platform -------------------------------------------------------------------------


def start_endpoint() -> Any:
    """The fake webhook endpoint, each request stamped with its wall-clock arrival."""
    from tests.fakes.webhook_server import FakeWebhook

    class Stamped(FakeWebhook):
        def record(self, kind: str, **facts: Any) -> Any:
            return super().record(kind, arrived=time.time(), **facts)

    return Stamped().start()


# -- the store server --------------------------------------------------------------------------


def start_server() -> Any:
    """The throw-away server of tests/postgres_server.py, restarted with pg_stat_statements
    loaded (the server's own time per statement)."""
    import psycopg

    from tests.postgres_server import PostgresServer

    server = PostgresServer().start()
    with psycopg.connect(server.url(), autocommit=True) as connection:
        connection.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
    pg_ctl = str(server.bin / "pg_ctl")
    # restart keeps the first start's options (postmaster.opts)
    subprocess.run(
        server._as_server_user(
            pg_ctl, "-D", str(server.data), "-w", "-m", "fast", "-l",
            str(server.root / "server.log"), "restart",
        ),
        check=True, capture_output=True,
    )  # fmt: skip
    return server


def server_cpu(server: Any) -> float:
    """CPU seconds the server's processes have used: the postmaster's own, the backends it has
    reaped (its children's times) and those of its children alive now."""
    ticks = os.sysconf("SC_CLK_TCK")
    postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        pid, ppid = int(stat.parent.name), int(fields[1])
        if pid == postmaster:
            total += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
        elif ppid == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / ticks


def reset_server_figures(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        connection.execute("SELECT pg_stat_statements_reset()")
        connection.execute("SELECT pg_stat_reset()")


def server_figures(url: str) -> dict[str, Any]:
    """What the server says of the database since `reset_server_figures`: the statements'
    execution time (pg_stat_statements), its sessions' time active and idle inside a
    transaction (pg_stat_database), and the statements that took the most time."""
    import psycopg

    time.sleep(0.5)  # the hosts' sessions have ended; their statistics are flushed at the end
    with psycopg.connect(url, autocommit=True) as connection:
        statements = connection.execute(
            "SELECT query, calls, total_exec_time FROM pg_stat_statements"
            " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND query NOT LIKE '%pg_stat%' ORDER BY total_exec_time DESC"
        ).fetchall()
        active, idle = connection.execute(
            "SELECT active_time, idle_in_transaction_time FROM pg_stat_database"
            " WHERE datname = current_database()"
        ).fetchone()
    return {
        "exec_ms": sum(found[2] for found in statements),
        "active_ms": float(active),
        "idle_ms": float(idle),
        "top": [(query, calls, total) for query, calls, total in statements[:6]],
    }


# -- building a configuration ------------------------------------------------------------------


def config_text(channels: int, endpoint_url: str, journal: Path | str) -> str:
    parts = [f'journal = "{journal}"\n']
    for number in range(channels):
        parts.append(
            f'[[channels]]\nname = "channel-{number}"\ntimezone = "UTC"\nslots = ["10:00"]\n'
            'catch_up_window = "2h"\nplatforms = ["webhook"]\n'
        )
    parts.append(f'[platforms.webhook]\nurl = "{endpoint_url}"\ntimeout = 30\n')
    return "\n".join(parts)


#: moto's S3 server when the journal is in a bucket (`--journal bucket`), else None.
BUCKETS: Any = None


def host_env(home: Path, url: str | None, folder: Path) -> dict[str, str]:
    env = dict(
        os.environ,
        AUTORETTO_HOME=str(home),
        XDG_STATE_HOME=str(folder / "state"),
        # Timed as installed (pip writes the bytecode at install): the warm-up round writes it
        # into a cache of this run's own.
        PYTHONPYCACHEPREFIX=str(folder / "pycache"),
    )
    for name in ("PYTHONDONTWRITEBYTECODE", "AUTORETTO_DATABASE_URL", "AUTORETTO_NOW"):
        env.pop(name, None)
    if url:
        env["AUTORETTO_DATABASE_URL"] = url
    if BUCKETS is not None:
        # Straight to the server: the tests' cuttable relay would add a process's hop.
        env.update(BUCKETS.environment, AWS_ENDPOINT_URL_S3=f"http://127.0.0.1:{BUCKETS.port}")
    return env


def stock(home: Path, url: str | None, channels: int, video: Path) -> None:
    """One ready episode per channel, written through the ledger: the stand-in for making."""
    from autoretto.ledger.episodes import add_episode
    from autoretto.ledger.store import open_database, transaction

    db = open_database(home / "autoretto.db", create=False, url=url)
    with transaction(db):
        for number in range(channels):
            add_episode(
                db,
                {
                    "channel": f"channel-{number}",
                    "state": "ready",
                    "title": f"Episode of channel {number}",
                    "description": "made before the timed part",
                    "tags": "[]",
                    "texts": "{}",
                    "videos": json.dumps({"landscape": str(video)}),
                    "duration": 1.0,
                    "gates": "[]",
                    "ai_generated": 0,
                    "source": json.dumps({"bench": "stock"}),
                    "off_schedule": 0,
                    "kind": "episode",
                    "created_at": BEFORE,
                    "updated_at": BEFORE,
                },
            )
    db.conn.close()


def host_command(counters: Path, now: str) -> list[str]:
    return [
        sys.executable, str(Path(__file__).resolve()), "--host", str(counters), "--",
        "run-due", "--now", now, "--no-wait", "--json",
    ]  # fmt: skip


def run_host(command: list[str], env: dict[str, str]) -> tuple[dict, float]:
    """One `run-due` of one host: its JSON report and its wall seconds."""
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise SystemExit(
            f"run-due failed (exit {done.returncode}): {done.stderr[-2000:]}"
        ) from None
    if report.get("errors"):
        raise SystemExit(f"run-due reported errors: {report['errors'][:3]}")
    return report, wall


def configuration(
    store: str, hosts: int, channels: int, folder: Path, server: Any, endpoint: Any, video: Path
) -> dict[str, float]:
    """One configuration, built, warmed up and timed; returns its figures."""
    place = folder / f"{store}-{channels}-{hosts}"
    url = server.fresh_url() if store == "postgresql" else None
    journal: Path | str = place / "journal.jsonl"
    if BUCKETS is not None:
        journal = f"s3://{BUCKETS.fresh_bucket()}/autoretto"
    text = config_text(channels, endpoint.url, journal)
    homes = []
    for index in range(hosts):
        home = place / f"host-{index}"
        (home / "logs").mkdir(parents=True)
        (home / "autoretto.toml").write_text(text)
        homes.append(home)
    envs = [host_env(home, url, folder) for home in homes]

    # The warm-up round, one host after the other: the first registers the channels.
    for index, env in enumerate(envs):
        report, _ = run_host(host_command(place / f"warm-{index}.json", BEFORE), env)
        if report["decisions"]:
            raise SystemExit(f"the warm-up round decided something: {report['decisions'][:2]}")
    stock(homes[0], url, channels, video)
    endpoint.reset()
    if url:
        reset_server_figures(url)
        cpu_before = server_cpu(server)
    import resource

    hosts_before = resource.getrusage(resource.RUSAGE_CHILDREN)

    walls: list[float] = []
    rounds: list[int] = []
    counters: list[Path] = []
    failures: list[BaseException] = []
    lock = threading.Lock()

    def one_host(index: int) -> None:
        try:
            for number in range(1, MOST_ROUNDS + 1):
                path = place / f"host-{index}-round-{number}.json"
                report, wall = run_host(host_command(path, NOW), envs[index])
                with lock:
                    walls.append(wall)
                    counters.append(path)
                if not report["decisions"] and not report["waiting"]:
                    with lock:
                        rounds.append(number)
                    return
            raise SystemExit(f"host {index} still deciding after {MOST_ROUNDS} runs")
        except BaseException as error:  # reported by the main thread
            failures.append(error)

    threads = [threading.Thread(target=one_host, args=(index,)) for index in range(hosts)]
    t0 = time.time()
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    makespan = time.perf_counter() - started
    if failures:
        raise SystemExit(f"{store}, {hosts} hosts, {channels} channels: {failures[0]}")
    hosts_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    host_cpu = (hosts_after.ru_utime - hosts_before.ru_utime) + (
        hosts_after.ru_stime - hosts_before.ru_stime
    )
    said: dict[str, Any] = {}
    if url:
        said = server_figures(url)
        said["cpu_s"] = server_cpu(server) - cpu_before

    copies = [seen for seen in endpoint.publishes if seen.metadata is not None]
    per_slot = Counter((seen.metadata["channel"], seen.metadata["slot"]) for seen in copies)
    due = {(f"channel-{number}", SLOT_KEY) for number in range(channels)}
    late = sorted(seen.arrived - t0 for seen in copies)
    spent = {"store_s": 0.0, "lock_s": 0.0, "open_s": 0.0, "journal_s": 0.0, "statements": 0}
    for path in counters:
        for key, value in json.loads(path.read_text()).items():
            spent[key] += value
    posted = len(per_slot.keys() & due)
    decided = count_decided(homes[0], url)
    if decided != channels:
        raise SystemExit(f"{store}: the store has {decided} decisions for {channels} slots")
    per = 1000 / max(posted, 1)
    return {
        "server_ms": said["exec_ms"] / max(posted, 1) if said else None,
        "idle_ms": said["idle_ms"] / max(posted, 1) if said else None,
        "server_cpu_ms": said["cpu_s"] * per if said else None,
        "host_cpu_ms": host_cpu * per,
        "top": said.get("top", []),
        "posted": posted,
        "dup": sum(n - 1 for n in per_slot.values() if n > 1) + len(per_slot.keys() - due),
        "lost": len(due - per_slot.keys()),
        "per_min": posted / max(late[-1], 1e-9) * 60 if late else 0.0,
        "p50": statistics.median(late) if late else float("nan"),
        "p95": late[int(0.95 * (len(late) - 1))] if late else float("nan"),
        "store_ms": (spent["store_s"] + spent["open_s"]) * per,
        "lock_ms": spent["lock_s"] * per,
        "statements": spent["statements"] / max(posted, 1),
        "journal_ms": spent["journal_s"] * per,
        "host_ms": sum(walls) * per,
        "makespan": makespan,
        "rounds": max(rounds),
        "runs": len(walls),
    }


def count_decided(home: Path, url: str | None) -> int:
    from autoretto.ledger.store import open_database, row

    db = open_database(home / "autoretto.db", create=False, url=url)
    found = row(db, "SELECT COUNT(*) AS n FROM decisions WHERE slot = ?", (SLOT_KEY,))
    db.conn.close()
    return int(found["n"]) if found else 0


def floor(command: list[str], env: dict[str, str], repeat: int = 5) -> float:
    walls = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(command, env=env, capture_output=True, check=True)
        walls.append(time.perf_counter() - started)
    return statistics.median(walls)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--host":
        as_host(Path(sys.argv[2]), sys.argv[4:] if sys.argv[3] == "--" else sys.argv[3:])
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--channels", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--quick", action="store_true", help="100 channels, 1 and 2 hosts")
    parser.add_argument(
        "--journal",
        choices=["file", "bucket"],
        default="file",
        help="one shared journal file (default), or the journal in a bucket of moto's server",
    )
    options = parser.parse_args()
    if options.quick:
        options.channels, options.hosts = [100], [1, 2]

    print(
        f"scale: hosts {options.hosts} x channels {options.channels}, one slot due on every"
        f" channel; journal: {options.journal}; load average {os.getloadavg()[0]:.2f} on"
        f" {os.cpu_count()} cpus"
    )
    global BUCKETS
    server = endpoint = None
    results: list[tuple[str, int, int, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        try:
            server = start_server()
            endpoint = start_endpoint()
            if options.journal == "bucket":
                from tests.s3_server import S3Server

                BUCKETS = S3Server()
                BUCKETS.start()
            video = folder / "shared" / "clip.mp4"
            video.parent.mkdir()
            video.write_bytes(os.urandom(16 * 1024))
            for channels in options.channels:
                plan = [("sqlite", 1)] + [("postgresql", hosts) for hosts in options.hosts]
                for store, hosts in plan:
                    started = time.perf_counter()
                    figures = configuration(store, hosts, channels, folder, server, endpoint, video)
                    results.append((store, hosts, channels, figures))
                    print(
                        f"  {store} H={hosts} N={channels}: done in"
                        f" {time.perf_counter() - started:.0f} s (timed part"
                        f" {figures['makespan']:.1f} s)",
                        flush=True,
                    )
            home = folder / f"sqlite-{options.channels[0]}-1" / "host-0"
            env = host_env(home, None, folder)
            python_floor = floor([sys.executable, "-c", "pass"], env)
            help_floor = floor([sys.executable, "-m", "autoretto", "--help"], env)
        finally:
            if endpoint is not None:
                endpoint.close()
            if server is not None:
                server.stop()
            if BUCKETS is not None:
                BUCKETS.stop()

    show_table(results)
    print(
        f"floor: python -c pass {python_floor:.3f} s, autoretto --help {help_floor:.3f} s;"
        f" load average after: {os.getloadavg()[0]:.2f}"
    )
    show_statements(results)
    bad = [f"{s} H={h} N={n}" for s, h, n, f in results if f["dup"] or f["lost"]]
    if bad:
        raise SystemExit(f"duplicates or lost slots: {', '.join(bad)}")


def show_table(results: list[tuple[str, int, int, dict[str, Any]]]) -> None:
    def ms(value: float | None, width: int) -> str:
        return f"{'-':>{width}}" if value is None else f"{value:{width}.2f}"

    print()
    print(
        f"{'':29} {'':9} {'late s':>11}  {'------ store, ms per slot ------':>38}"
        f" {'journal':>7}  {'CPU ms per slot':>15}"
    )
    print(
        f"{'store':10} {'H':>2} {'N':>5} {'dup':>4} {'lost':>4} {'slots/min':>9}"
        f" {'p50':>5} {'p95':>5}  {'calls':>6} {'lock':>6} {'server':>6} {'in xact':>7}"
        f" {'stmts':>6} {'ms/slot':>7}  {'hosts':>7} {'server':>7} {'runs':>4}"
    )
    for store, hosts, channels, f in results:
        print(
            f"{store:10} {hosts:2d} {channels:5d} {f['dup']:4d} {f['lost']:4d}"
            f" {f['per_min']:9.0f} {f['p50']:5.1f} {f['p95']:5.1f}"
            f"  {f['store_ms']:6.2f} {f['lock_ms']:6.2f} {ms(f['server_ms'], 6)}"
            f" {ms(f['idle_ms'], 7)} {f['statements']:6.1f} {f['journal_ms']:7.2f}"
            f"  {f['host_cpu_ms']:7.1f} {ms(f['server_cpu_ms'], 7)} {f['runs']:4d}"
        )
    print(
        "calls: wall time inside store calls in the hosts (statements, fetches, opening the"
        " store), summed over hosts; lock: its part in BEGIN (waiting for the write lock);"
        " server: PostgreSQL's own execution time (pg_stat_statements); in xact: time the"
        " hosts' sessions sat idle inside a transaction (pg_stat_database), i.e. the write"
        " lock held while a host works; stmts: statements sent; journal: time in the shared"
        " journal file (tail read, flock, append, fsync; its statements are in calls); CPU: the"
        " host processes' user+system time, and the server's processes'"
    )


def show_statements(results: list[tuple[str, int, int, dict[str, Any]]]) -> None:
    """Where PostgreSQL's time went, for the most hosts of each channel count."""
    largest: dict[int, tuple[int, dict[str, Any]]] = {}
    for store, hosts, channels, f in results:
        if store == "postgresql" and hosts >= largest.get(channels, (0, {}))[0]:
            largest[channels] = (hosts, f)
    for channels, (hosts, f) in largest.items():
        print(f"\nPostgreSQL, H={hosts} N={channels}: the statements that took the most time")
        print(f"{'ms/slot':>8} {'calls/slot':>10}  statement")
        for query, calls, total in f["top"]:
            text = " ".join(query.split())
            print(
                f"{total / f['posted']:8.3f} {calls / f['posted']:10.2f}  "
                f"{text[:110]}{'...' if len(text) > 110 else ''}"
            )


if __name__ == "__main__":
    main()
