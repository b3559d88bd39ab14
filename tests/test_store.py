"""The store's schema moves forward in numbered steps, and a database of an older Autoretto is
taken as it is."""

from __future__ import annotations

import sqlite3

from autoretto.ledger import store
from tests.support import channel_toml, write_config


def test_a_database_of_the_previous_schema_is_upgraded_and_keeps_its_decisions(home, cli):
    """A home made by the Autoretto before this one (schema 6): the next command upgrades it
    in place; its decisions stay, and `status` reads them through the new index."""
    write_config(home, channel_toml())
    path = home / "autoretto.db"
    # The schema as the previous version left it: its six steps, nothing of the seventh.
    from sqlite_utils import Database

    old = Database(path)
    for number, step in enumerate(store.MIGRATIONS[:6]):
        step(old)
        old.execute(f"PRAGMA user_version = {number + 1}")
    old.execute(
        "INSERT INTO channels (name, created_at, schedule_seen_at) VALUES"
        " ('lofi', '2026-11-28T00:00:00Z', '2026-11-28T00:00:00Z')"
    )
    old.execute(
        "INSERT INTO decisions (channel, slot, slot_at, platform, outcome, reason, decided_at,"
        " run_id) VALUES ('lofi', '2026-11-29T10:00', '2026-11-29T10:00:00Z', 'folder',"
        " 'missed', 'the catch-up window closed', '2026-11-29T12:00:00Z', 'old')"
    )
    old.conn.commit()
    old.conn.close()

    code, _, err = cli("status", "--json", now="2026-11-29T10:30:00Z")
    assert code == 0, err
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION == 8
    plan = " ".join(
        row[-1]
        for row in connection.execute(
            "EXPLAIN QUERY PLAN SELECT outcome, post_id FROM decisions"
            " WHERE channel = 'lofi' AND slot = '2026-11-29T10:00'"
        )
    )
    assert "COVERING INDEX idx_decisions_shown" in plan
    (recent,) = [
        s for s in cli.json("status")["channels"][0]["recent"] if s["slot"] == "2026-11-29T10:00"
    ]
    assert recent["slot_state"] == "missed"
    assert cli.json("decisions")[0]["reason"] == "the catch-up window closed"


def test_a_claim_held_in_a_schema_7_database_is_judged_by_two_sightings(home, cli):
    """A home of the Autoretto before the beat counter (schema 7) with a slot claimed by a run
    that left no word of its machine: after the upgrade the claim is kept at first sight and
    taken over only once its beat has not moved for `stale_after` (15m) by this clock."""
    from sqlite_utils import Database

    write_config(home, channel_toml(slots=("10:00",)))
    path = home / "autoretto.db"
    old = Database(path)
    for number, step in enumerate(store.MIGRATIONS[:7]):
        step(old)
        old.execute(f"PRAGMA user_version = {number + 1}")
    old.execute(
        "INSERT INTO runs (id, kind, pid, started_at) VALUES ('old', 'run-due', 1,"
        " '2026-11-29T10:01:00Z')"
    )
    old.conn.commit()
    old.conn.close()
    cli("run-due", now="2026-11-29T09:00:00Z")  # the channel is seen (and the schema upgraded)
    connection = sqlite3.connect(path)
    assert connection.execute("PRAGMA user_version").fetchone()[0] == 8
    assert connection.execute("SELECT beat, machine FROM runs WHERE id = 'old'").fetchone() == (
        0,
        None,
    )
    connection.execute(
        "UPDATE channels SET claim_run_id = 'old', claim_slot = '2026-11-29T10:00',"
        " claim_slot_at = '2026-11-29T10:00:00Z', claim_heartbeat_at = '2026-11-29T10:01:00Z'"
    )
    connection.commit()
    connection.close()
    assert cli.json("status", now="2026-11-29T10:05:00Z")["channels"][0]["claim"]["run_id"] == "old"
    for moment in ("2026-11-29T10:05:00Z", "2026-11-29T10:19:00Z"):
        code, out, err = cli("run-due", "--no-make", now=moment)
        assert code == 0 and "nothing due" in out, (out, err)
    code, out, err = cli("run-due", "--no-make", now="2026-11-29T10:20:00Z")
    assert code == 0, err
    assert "2026-11-29T10:00 folder: nothing_ready" in out
