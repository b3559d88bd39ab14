"""The PostgreSQL store (issue 25): chosen by a URL, refused in one line when it is wrong, and a
home copied into it with `store copy` goes on posting from there with nothing sent twice. The
server is real: Debian's, started by the tests (tests/postgres_server.py)."""

from __future__ import annotations

import json
import sqlite3
from urllib.parse import urlsplit

import pytest

from tests.forked import run_command_forked, run_forked
from tests.postgres_server import PASSWORD, PASSWORD_USER
from tests.support import channel_toml, outbox_sidecars, write_config


def database_name(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


def with_user(url: str, user: str, password: str) -> str:
    """`url` as another user with a password (the socket folder stays in the query)."""
    parts = urlsplit(url)
    query = "&".join(p for p in parts.query.split("&") if not p.startswith("user="))
    return f"postgresql://{user}:{password}@{parts.path}?{query}"


def test_a_wrong_password_is_one_line_without_the_password(home, cli, postgres_url):
    write_config(home, channel_toml())
    url = with_user(postgres_url, PASSWORD_USER, "wrong-" + PASSWORD)
    code, _, err = run_command_forked("status", env={"AUTORETTO_DATABASE_URL": url})
    assert code != 0
    assert len(err.strip().splitlines()) == 1, err
    assert "password" in err and PASSWORD not in err and "wrong-" not in err
    assert "***" in err


def test_an_unreachable_server_is_one_line(home, cli, tmp_path):
    write_config(home, channel_toml())
    url = f"postgresql:///nothing?host={tmp_path}/no-socket-here&user=postgres"
    code, _, err = run_command_forked("status", env={"AUTORETTO_DATABASE_URL": url})
    assert code != 0
    assert len(err.strip().splitlines()) == 1, err
    assert "cannot connect" in err


def test_a_database_of_another_program_is_refused_untouched(home, cli, postgres_url):
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("CREATE TABLE invoices (id BIGINT PRIMARY KEY)")
    write_config(home, channel_toml())
    code, _, err = run_command_forked("status", env={"AUTORETTO_DATABASE_URL": postgres_url})
    assert code != 0
    assert "is not an Autoretto database (it holds invoices)" in err
    with psycopg.connect(postgres_url) as connection:
        tables = connection.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchall()
    assert tables == [("invoices",)]


def test_a_schema_newer_than_the_code_is_refused(home, cli, postgres_url):
    import psycopg

    write_config(home, channel_toml())
    code, _, err = run_command_forked("status", env={"AUTORETTO_DATABASE_URL": postgres_url})
    assert code == 0, err
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("INSERT INTO _migrations (name) VALUES ('migration_99_from_the_future')")
    code, _, err = run_command_forked("status", env={"AUTORETTO_DATABASE_URL": postgres_url})
    assert code != 0
    assert "migration_99_from_the_future, newer than this Autoretto" in err
    assert "upgrade Autoretto" in err


def test_a_bad_store_url_in_the_config_is_one_line(home, cli):
    write_config(home, channel_toml(), extra='\n[store]\nurl = "mysql://db/autoretto"\n')
    code, _, err = cli("config", "check")
    assert code != 0
    assert "store.url" in err and "PostgreSQL URL" in err


def test_doctor_names_the_store_in_use(home, cli, postgres_url):
    write_config(home, channel_toml(), extra=f'\n[store]\nurl = "{postgres_url}"\n')
    code, out, err = run_command_forked("init")
    assert code == 0, err
    code, out, err = run_command_forked("doctor", "--json")
    report = json.loads(out)
    assert report["database"]["store"] == "postgresql"
    assert report["database"]["ok"] is True
    assert database_name(postgres_url) in report["database"]["url"]
    assert not (home / "autoretto.db").exists()  # nothing was written to a SQLite file


def home_with_history(home, cli, clip) -> None:
    """A home that has posted: decisions, posts, journal lines, a stamp, episodes in stock."""
    write_config(home, channel_toml(slots=("10:00", "11:00")))
    cli("init")
    for number in range(4):
        code, _, err = cli("episode", "add", "lofi", str(clip), "--title", f"lofi {number}")
        assert code == 0, err
    for moment in ("2026-11-29T09:00:00Z", "2026-11-29T10:05:00Z"):
        code, _, err = cli("run-due", now=moment)
        assert code == 0, err
    from autoretto import accounts
    from autoretto.ledger.store import open_database

    db = open_database(home / "autoretto.db")
    accounts.save_account(
        db, home, platform="bluesky", account_id="did:plc:abc", name="lofi.example",
        tokens={"access_token": "a", "refresh_token": "r-secret"}, meta={"pds": "x"},
    )  # fmt: skip
    db.conn.close()


def test_a_home_copied_to_postgresql_goes_on_posting_from_there_once(home, cli, clip, postgres_url):
    home_with_history(home, cli, clip)
    journal_before = cli.json("journal")
    code, out, err = run_command_forked("store", "copy", "--to", postgres_url, "--json")
    assert code == 0, err
    copied = json.loads(out)
    assert copied["tables"]["decisions"] == 1 and copied["tables"]["posts"] == 1

    # The old file refuses to be posted from again.
    code, out, err = run_command_forked("run-due", now="2026-11-29T11:05:00Z")
    assert code != 0 and "store copy" in err
    assert [s["slot"] for s in outbox_sidecars(home)] == ["2026-11-29T10:00"]

    on_postgres = {"AUTORETTO_DATABASE_URL": postgres_url}
    code, out, err = run_command_forked("journal", "--json", env=on_postgres)
    assert code == 0, err
    assert json.loads(out)["database_seq"] == journal_before["database_seq"]
    code, out, err = run_command_forked("run-due", now="2026-11-29T11:05:00Z", env=on_postgres)
    assert code == 0, (out, err)
    assert "lofi 2026-11-29T11:00 folder: posted" in out
    code, out, err = run_command_forked("run-due", now="2026-11-30T10:05:00Z", env=on_postgres)
    assert code == 0, (out, err)
    sidecars = outbox_sidecars(home)
    assert [s["slot"] for s in sidecars] == [
        "2026-11-29T10:00", "2026-11-29T11:00", "2026-11-30T10:00",
    ]  # fmt: skip
    assert len({s["episode_id"] for s in sidecars}) == 3  # no episode twice
    code, out, err = run_command_forked("decisions", "--json", env=on_postgres)
    slots = [(d["slot"], d["outcome"]) for d in json.loads(out)]
    assert len(slots) == len(set(slots))
    # The sealed tokens came across byte for byte: they still open.
    from autoretto import accounts
    from autoretto.ledger.store import open_database

    db = open_database(home / "unused.db", url=postgres_url)
    (account,) = accounts.list_accounts(db)
    assert accounts.open_tokens(db, home, account)["refresh_token"] == "r-secret"
    db.close()


def test_a_copy_into_a_database_that_holds_a_home_is_refused(home, cli, clip, postgres_url):
    home_with_history(home, cli, clip)
    code, _, err = run_command_forked("store", "copy", "--to", postgres_url)
    assert code == 0, err
    database = sqlite3.connect(home / "autoretto.db")
    database.execute("DELETE FROM meta WHERE key = 'store_moved_to'")
    database.commit()
    database.close()
    code, _, err = run_command_forked("store", "copy", "--to", postgres_url)
    assert code != 0 and "already holds an Autoretto home" in err


@pytest.mark.parametrize("racers", [8])
def test_racing_runs_on_postgresql_post_each_slot_once(home, cli, clip, postgres_url, racers):
    """The claims and decisions hold across processes on PostgreSQL as on SQLite."""
    on_postgres = {"AUTORETTO_DATABASE_URL": postgres_url}
    channels = ("lofi", "jazz", "rain")
    write_config(home, *(channel_toml(name) for name in channels))
    assert run_command_forked("init", env=on_postgres)[0] == 0
    for name in channels:
        for number in range(2):
            code, _, err = run_command_forked(
                "episode", "add", name, str(clip), "--title", f"{name} {number}", env=on_postgres
            )
            assert code == 0, err
    run_command_forked("run-due", now="2026-11-29T09:00:00Z", env=on_postgres)
    runs = [
        run_forked("run-due", now="2026-11-29T11:45:00Z", env=on_postgres) for _ in range(racers)
    ]
    for process in runs:
        process.communicate(timeout=300)
    for name in channels:
        assert [s["slot"] for s in outbox_sidecars(home, name)] == ["2026-11-29T11:00"], name
    code, out, err = run_command_forked("decisions", "--json", env=on_postgres)
    found = json.loads(out)
    keys = [(d["channel"], d["slot"], d["platform"]) for d in found]
    assert len(keys) == len(set(keys)) == 6


def test_each_slot_s_changes_wait_only_on_the_rows_they_touch(postgres_url):
    """Two hosts' slot changes (a stamp moved with its journal number) run side by side until
    the numbering, which takes turns; a change that reads and then writes has the ledger to
    itself. "Would wait" is asked of the server without waiting (a lock tried, a row locked
    NOWAIT): its lock timeout is a timer, which a faked clock can stop."""
    import psycopg

    from autoretto.ledger.claims import advance_stamp, claim_slot, register_channels
    from autoretto.ledger.journal import hold_numbering, number_entry
    from autoretto.ledger.postgres import WRITE_LOCK, open_postgres
    from autoretto.ledger.store import transaction

    first, second = open_postgres(postgres_url), open_postgres(postgres_url)
    probe = psycopg.connect(postgres_url, autocommit=True)
    now, at = "2026-11-29T09:00:00Z", "2026-11-29T10:00:00Z"
    register_channels(first, [(n, "f", {"slots": ["10:00"]}) for n in ("a", "b")], now)
    assert claim_slot(first, "a", "10:00", at, "run-1", now)
    assert claim_slot(second, "b", "10:00", at, "run-2", now)

    def write_lock(store) -> list[tuple[str, bool]]:
        pid = store.connection.info.backend_pid
        return probe.execute(
            "SELECT mode, granted FROM pg_locks WHERE locktype = 'advisory' AND pid = %s", (pid,)
        ).fetchall()

    def whole_ledger_would_wait() -> bool:
        with probe.transaction():
            tried = probe.execute("SELECT pg_try_advisory_xact_lock(%s)", (WRITE_LOCK,))
            return not tried.fetchone()[0]

    with transaction(first):  # the counter's row, as any numbering before leaves it
        assert hold_numbering(first) == 0
    assert not whole_ledger_would_wait()
    with transaction(first, rows_only=True):
        assert write_lock(first) == [("ShareLock", True)]
        assert advance_stamp(first, "a", at, "run-1")
        # The other host's stamp moves meanwhile, up to its number...
        second.begin(rows_only=True)
        assert write_lock(second) == [("ShareLock", True)]
        assert advance_stamp(second, "b", at, "run-2")
        # ...but a transaction of the whole ledger would wait for both.
        assert whole_ledger_would_wait()
        # The first takes its number; the second's numbering would wait for the first's commit.
        hold_numbering(first)
        assert number_entry(first, {"kind": "stamp", "channel": "a"}) == 1
        with pytest.raises(psycopg.errors.LockNotAvailable):
            second.connection.execute(
                "SELECT value FROM meta WHERE key = 'journal_seq' FOR UPDATE NOWAIT"
            )
        second.connection.execute("ROLLBACK")

    with transaction(second, rows_only=True):
        assert advance_stamp(second, "b", at, "run-2")
        assert hold_numbering(second) == 1
        assert number_entry(second, {"kind": "stamp", "channel": "b"}) == 2
    # Any other transaction takes the lock whole.
    with transaction(first):
        assert write_lock(first) == [("ExclusiveLock", True)]
    assert not whole_ledger_would_wait()
    for connection in (first, second):
        connection.close()
    probe.close()
