"""The home's logs are size-capped and rotated by Autoretto, safely for runs that overlap.

`logs/run.log` (appended by every run, one O_APPEND write a line) and `logs/cron.log` (appended
by cron's shell, `>> cron.log`) are rotated by renaming: the tests check with real processes
that writers which overlap a rotation lose no line and split none.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from autoretto.runlog import KEEP, MAX_BYTES, append_line
from tests.support import channel_toml, write_config

LINE = re.compile(r"^w(\d+) (\d+) x+$")


def generations(path: Path) -> list[Path]:
    """The log's files, oldest first: NAME.N ... NAME.1, NAME."""
    rotated = sorted(
        path.parent.glob(f"{path.name}.*"), key=lambda p: int(p.suffix[1:]), reverse=True
    )
    return [*rotated, path] if path.exists() else rotated


def check_every_line_once(path: Path, writers: int, lines: int) -> list[list[int]]:
    """Every writer's lines are there once, whole, in the order it wrote them; returns which
    writers each file holds lines of."""
    seen: dict[int, list[int]] = {w: [] for w in range(writers)}
    per_file = []
    for generation in generations(path):
        writers_here = []
        for text in generation.read_text().splitlines():
            match = LINE.match(text)
            assert match, f"{generation.name}: a broken line {text[:80]!r}"
            writer, number = int(match[1]), int(match[2])
            seen[writer].append(number)
            writers_here.append(writer)
        per_file.append(writers_here)
    for writer, numbers in seen.items():
        assert numbers == list(range(lines)), f"writer {writer}: lines lost or out of order"
    return per_file


def start_together(script: str, count: int, folder: Path):
    """Start `count` real processes running `script` (with WRITER and GO defined); they begin
    together when the GO file appears, so their writes overlap."""
    go = folder / "go"
    programs = []
    for writer in range(count):
        code = f"WRITER = {writer}\nGO = {str(go)!r}\n" + textwrap.dedent(script)
        programs.append(subprocess.Popen([sys.executable, "-c", code]))
    time.sleep(0.5)  # the processes import Python meanwhile; none may start before GO
    go.touch()
    for program in programs:
        assert program.wait(timeout=120) == 0
    return programs


WAIT_FOR_GO = """
    import os, time
    while not os.path.exists(GO):
        time.sleep(0.005)
"""


def test_run_log_rotates_at_its_cap_and_keeps_the_last_files(tmp_path):
    log = tmp_path / "logs" / "run.log"
    for number in range(200):
        append_line(log, f"w0 {number} " + "x" * 40, max_bytes=1000, keep=3)
    files = generations(log)
    assert [f.name for f in files] == ["run.log.3", "run.log.2", "run.log.1", "run.log"]
    for rotated in files[:-1]:
        assert 1000 <= rotated.stat().st_size < 1000 + 50  # full, plus at most the last line
    kept = [int(line.split()[1]) for f in files for line in f.read_text().splitlines()]
    assert kept == list(range(kept[0], 200))  # the newest lines, none missing in between
    assert kept[0] > 0  # the oldest went: the logs stay within 4 files of 1000 bytes


def test_overlapping_runs_appending_to_run_log_lose_no_line_across_rotations(tmp_path):
    log = tmp_path / "logs" / "run.log"
    writers, lines = 6, 1500
    script = (
        WAIT_FOR_GO
        + f"""
    from pathlib import Path
    from autoretto.runlog import append_line
    for number in range({lines}):
        append_line(Path({str(log)!r}), f"w{{WRITER}} {{number}} " + "x" * 60,
                    max_bytes=8000, keep=500)
    """
    )
    start_together(script, writers, tmp_path)
    per_file = check_every_line_once(log, writers, lines)
    assert len(per_file) > 50  # it rotated many times while six processes wrote
    assert any(len(set(w)) > 1 for w in per_file)  # and they did write at the same time
    assert all(f.stat().st_size < 8000 + writers * 80 for f in generations(log))


def test_cron_log_rotated_by_jobs_that_write_through_their_shell_loses_no_line(tmp_path):
    """Jobs started as cron starts them (`job >> cron.log`), overlapping, each rotating the log
    as it starts as run-due does: a job keeps writing into the file its shell opened, renamed
    or not, the next job's shell makes a new one, and every line survives."""
    log = tmp_path / "logs" / "cron.log"
    log.parent.mkdir()
    jobs, lines = 30, 200
    script = f"""
        import os, time
        from pathlib import Path
        from autoretto.runlog import rotate_if_full
        rotate_if_full(Path({str(log)!r}), max_bytes=6000, keep=500)
        for number in range({lines}):
            os.write(1, f"w{{WRITER}} {{number}} {{'x' * 60}}\\n".encode())
            time.sleep(0.002)  # a run writes over a while, not at once
    """
    programs = []
    for job in range(jobs):
        code = f"WRITER = {job}\n" + textwrap.dedent(script)
        shell = f'exec "$0" -c "$1" >> {log} 2>&1'
        programs.append(subprocess.Popen(["/bin/sh", "-c", shell, sys.executable, code]))
        time.sleep(0.1)  # the next one starts while the last ones write
    assert [program.wait(timeout=120) for program in programs] == [0] * jobs
    per_file = check_every_line_once(log, jobs, lines)
    assert len(per_file) >= 3  # it rotated while jobs were writing
    assert any(len(set(writers)) > 1 for writers in per_file)  # jobs that overlapped


def test_run_due_rotates_full_logs_of_the_home(home, cli):
    write_config(home, channel_toml("lofi"))
    cli("init")
    logs = home / "logs"
    for name in ("cron.log", "run.log"):
        with open(logs / name, "wb") as full:
            full.truncate(MAX_BYTES)  # as big as the cap, without writing 5 MB
    for number in range(1, KEEP + 1):
        (logs / f"cron.log.{number}").write_text(f"rotated {number}\n")
    code, _, err = cli("run-due", now="2026-11-29T09:00:00Z")
    assert code == 0, err
    assert (logs / "cron.log.1").stat().st_size == MAX_BYTES
    assert not (logs / "cron.log").exists()  # cron's shell makes the next one
    kept = [(logs / f"cron.log.{n}").read_text() for n in range(2, KEEP + 1)]
    assert kept == [f"rotated {n}\n" for n in range(1, KEEP)]  # the oldest one is gone
    assert not (logs / f"cron.log.{KEEP + 1}").exists()
    assert (logs / "run.log.1").stat().st_size == MAX_BYTES
    # A log under the cap is left alone.
    code, _, err = cli("run-due", now="2026-11-29T10:05:00Z")
    assert code == 0, err
    assert not (logs / "run.log.2").exists() and not (logs / "cron.log.4").exists()
    assert "outcome=nothing_ready" in (logs / "run.log").read_text()
