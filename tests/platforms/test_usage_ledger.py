"""The usage ledger of daily allowances (YouTube's quota, Bluesky's daily cap) in the real
database: two runs at once never both spend the last unit, and nothing goes below zero."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from autoretto.ledger.store import open_database
from autoretto.platforms.base import UsageLedger

LEDGER = UsageLedger("youtube")
DAY = "2026-11-29"

#: one run: spend one unit at a time until the ledger refuses, print how many it got
SPENDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from autoretto.platforms.base import UsageLedger
    from autoretto.ledger.store import open_database

    db = open_database(Path(sys.argv[1]))
    ledger, got = UsageLedger("youtube"), 0
    print("ready", flush=True)
    sys.stdin.readline()  # both start together
    while ledger.charge(db, "project-1", "insert", 1, int(sys.argv[2]), "2026-11-29"):
        got += 1
    print(got)
    """
)


def test_two_runs_at_once_never_spend_past_the_allowance(home: Path) -> None:
    path = home / "autoretto.db"
    home.mkdir(parents=True, exist_ok=True)
    db = open_database(path)
    allowance = 2000
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", SPENDER, str(path), str(allowance)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for run in runs:
        assert run.stdout.readline() == "ready\n"
    for run in runs:
        run.stdin.write("go\n")
        run.stdin.flush()
    answers = [run.communicate(timeout=120) for run in runs]
    assert all(run.returncode == 0 for run in runs), answers
    got = [int(out) for out, _ in answers]
    assert sum(got) == allowance, got  # every unit spent once, none twice
    assert LEDGER.used(db, "project-1", "insert", DAY) == allowance
    assert not LEDGER.charge(db, "project-1", "insert", 1, allowance, DAY)


def test_a_charge_that_does_not_fit_counts_nothing_and_a_give_back_stops_at_zero(
    home: Path,
) -> None:
    home.mkdir(parents=True, exist_ok=True)
    db = open_database(home / "autoretto.db")
    assert not LEDGER.charge(db, "p", "units", 101, 100, DAY)  # larger than the allowance
    assert LEDGER.used(db, "p", "units", DAY) == 0
    assert LEDGER.charge(db, "p", "units", 60, 100, DAY)
    assert not LEDGER.charge(db, "p", "units", 41, 100, DAY)  # 60 + 41 > 100
    assert LEDGER.used(db, "p", "units", DAY) == 60
    LEDGER.give_back(db, "p", "units", 100, DAY)  # more than was counted
    assert LEDGER.used(db, "p", "units", DAY) == 0
    assert LEDGER.charge(db, "p", "units", 100, 100, DAY)  # the whole allowance again
    assert LEDGER.used(db, "p", "units", "2026-11-30") == 0  # another day, its own count


def test_youtube_s_quota_day_turns_at_pacific_midnight_in_summer_time_too(monkeypatch) -> None:
    """The day of the clock (AUTORETTO_NOW): midnight in Los Angeles is 08:00 UTC in winter
    and 07:00 UTC from the second Sunday of March (2026-03-08)."""
    from autoretto.platforms.youtube import QUOTA

    for moment, day in (
        ("2026-03-08T07:59:59Z", "2026-03-07"),
        ("2026-03-08T08:00:00Z", "2026-03-08"),  # the last winter midnight
        ("2026-03-09T06:59:59Z", "2026-03-08"),
        ("2026-03-09T07:00:00Z", "2026-03-09"),  # the first summer one
        ("2026-11-02T07:59:59Z", "2026-11-01"),
        ("2026-11-02T08:00:00Z", "2026-11-02"),  # winter again (the 1st, 2 a.m. PDT)
    ):
        monkeypatch.setenv("AUTORETTO_NOW", moment)
        assert QUOTA.day() == day, moment
