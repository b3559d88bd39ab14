"""The ledger's contract on both stores, raced by real processes: a journal number is taken once
and none is lost; a slot is claimed by one process only. (Measured before the ledger: with two
racing processes on PostgreSQL, the journal's read-then-write numbering lost thousands of
numbers in 5,000 transactions.)"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

RACERS = 4
EACH = 40

NUMBERING = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from autoretto.ledger.journal import number_entry
    from autoretto.ledger.store import open_database, transaction

    db = open_database(Path(sys.argv[1]))
    taken = []
    for index in range(int(sys.argv[2])):
        with transaction(db):
            taken.append(number_entry(db, {"kind": "stamp", "racer": sys.argv[3], "i": index}))
    print(json.dumps(taken))
    """
)

CLAIMING = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from autoretto.ledger.claims import claim_slot
    from autoretto.ledger.store import open_database

    db = open_database(Path(sys.argv[1]))
    won = [
        name for name in json.loads(sys.argv[2])
        if claim_slot(db, name, "2026-11-29T10:00", "2026-11-29T10:00:00Z", sys.argv[3],
                      "2026-11-29T10:00:00Z")
    ]
    print(json.dumps(won))
    """
)


def race(script: str, home, argument_of) -> list[list]:
    path = home / "autoretto.db"
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(path), argument_of(number), f"racer-{number}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for number in range(RACERS)
    ]
    results = []
    for racer in racers:
        out, err = racer.communicate(timeout=120)
        assert racer.returncode == 0, err
        results.append(json.loads(out))
    return results


@pytest.fixture
def ledger_home(home, store):
    """A made store (SQLite file or PostgreSQL database) for the racers."""
    from autoretto.ledger.store import open_database

    home.mkdir(parents=True)
    db = open_database(home / "autoretto.db")
    db.conn.close()
    return home


def test_racing_processes_take_every_journal_number_once(ledger_home):
    taken = race(NUMBERING, ledger_home, lambda number: str(EACH))
    numbers = sorted(n for numbers in taken for n in numbers)
    assert numbers == list(range(1, RACERS * EACH + 1)), "a number was taken twice or lost"

    from autoretto.ledger.journal import count_lines_after
    from autoretto.ledger.store import open_database

    db = open_database(ledger_home / "autoretto.db")
    assert count_lines_after(db, 0) == RACERS * EACH
    db.conn.close()


def test_racing_processes_claim_each_slot_once(ledger_home):
    from autoretto.ledger.claims import register_channel
    from autoretto.ledger.store import open_database, transaction

    names = [f"channel-{number}" for number in range(60)]
    db = open_database(ledger_home / "autoretto.db")
    with transaction(db):
        for name in names:
            register_channel(db, name, "f", {"slots": ["10:00"]}, "2026-11-29T09:00:00Z")
    db.conn.close()
    won = race(CLAIMING, ledger_home, lambda number: json.dumps(names[number:] + names[:number]))
    claimed = [name for names_won in won for name in names_won]
    assert sorted(claimed) == sorted(names), "a slot was claimed twice, or by nobody"
