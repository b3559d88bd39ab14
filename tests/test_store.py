"""The store's schema moves forward in numbered steps, and a database of an older Autoretto is
taken as it is."""

from __future__ import annotations

import sqlite3

from autoretto import store
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
    assert connection.execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION == 7
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
