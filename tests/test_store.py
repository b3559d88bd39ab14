"""The store's schema moves forward in numbered steps, and a database of an older Autoretto is
taken as it is."""

from __future__ import annotations

import sqlite3

import pytest

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
    assert connection.execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION == 13
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
    assert connection.execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION
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


def all_rows(path) -> dict[str, list]:
    """Every row of every table but the migrations' own, table by table."""
    connection = sqlite3.connect(path)
    tables = [
        name
        for (name,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            " AND name != '_migrations'"
        )
    ]
    found = {
        t: sorted(connection.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr) for t in tables
    }
    connection.close()
    return found


def test_a_home_at_the_schema_before_names_upgrades_in_place_keeping_every_row(home, cli, clip):
    """A real home (decisions, posts, a journal, an account) as the Autoretto before named
    migrations left it: schema 8 by number, no `_migrations`. The next command records the
    eight migrations by name, runs none again, and every row stays as it was."""
    from autoretto import accounts
    from autoretto.ledger.store import open_database

    write_config(home, channel_toml())
    cli("init")
    code, _, err = cli("episode", "add", "lofi", str(clip), "--title", "lofi 0")
    assert code == 0, err
    cli("run-due", now="2026-11-29T09:00:00Z")
    code, _, err = cli("run-due", now="2026-11-29T10:05:00Z")
    assert code == 0, err
    db = open_database(home / "autoretto.db")
    accounts.save_account(
        db, home, platform="bluesky", account_id="did:plc:abc", name="lofi.example",
        tokens={"access_token": "a", "refresh_token": "r"}, meta={},
    )  # fmt: skip
    db.conn.close()
    path = home / "autoretto.db"
    connection = sqlite3.connect(path)
    connection.execute("DROP TABLE _migrations")  # as the Autoretto before the names
    connection.commit()
    connection.close()
    before = all_rows(path)
    assert before["decisions"] and before["posts"] and before["journal_entries"]
    assert before["accounts"]

    code, _, err = cli("status", "--json", now="2026-11-29T10:30:00Z")
    assert code == 0, err
    connection = sqlite3.connect(path)
    names = [n for (n,) in connection.execute("SELECT name FROM _migrations ORDER BY name")]
    connection.close()
    assert names == sorted(store.migration_name(step) for step in store.MIGRATIONS)
    assert all_rows(path) == before
    assert cli.json("decisions")[0]["outcome"] == "posted"


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_a_new_migration_runs_once_by_name_on_either_store(home, engine, request, monkeypatch):
    """A migration added after a database was made runs the same way on both stores: once,
    recorded by its name, and not again at the next open."""
    from autoretto.ledger.store import execute, open_database, rows

    url = request.getfixturevalue("postgres_url") if engine == "postgresql" else None
    home.mkdir(parents=True)
    db = open_database(home / "autoretto.db", url=url)
    db.conn.close()

    def _migration_99_track_notes(handle) -> None:
        execute(handle, "ALTER TABLE episodes ADD COLUMN notes TEXT")

    monkeypatch.setattr(store, "MIGRATIONS", [*store.MIGRATIONS, _migration_99_track_notes])
    monkeypatch.setattr(store, "SCHEMA_VERSION", len(store.MIGRATIONS))
    for _ in range(2):
        db = open_database(home / "autoretto.db", url=url)
        execute(db, "INSERT INTO episodes (channel, state, notes) VALUES ('lofi', 'ready', 'n')")
        found = rows(db, "SELECT name FROM _migrations WHERE name = 'migration_99_track_notes'")
        db.conn.close()
        assert len(found) == 1
