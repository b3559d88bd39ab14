"""Several hosts on one store (issue 26): the per-host pieces become shared.

Each "host" is a home of its own (its own AUTORETTO_HOME, so nothing in a home is shared) on
the same PostgreSQL database; on the SQLite file the two are one home, as that store allows.
What they share is the store and the vault key (AUTORETTO_VAULT_KEY_FILE):

- an account's token is refreshed under a lease in the store: two hosts refreshing one account
  send one refresh request, and a holder killed mid-refresh is taken over;
- the sealed-token key is the same on every host, from a shared key file or the environment;
- a host whose clock is far from the database's refuses to post (the real `faketime`);
- hosts walk the channels from different places, and skip a channel another host is making.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from autoretto import accounts
from autoretto.ledger import claims, leases, runs
from autoretto.ledger.store import open_database
from autoretto.vault import KEY_FILE_VARIABLE, KEY_VARIABLE, Vault, VaultError
from tests.support import (
    Cli,
    channel_toml,
    outbox_sidecars,
    refresher_script,
    write_config,
)

REPO = Path(__file__).resolve().parent.parent
NOW = "2026-11-29T18:00:00Z"
EXPIRING = "2026-11-29T18:01:00Z"  # inside the refresh margin at NOW


class TokenEndpoint:
    """A local OAuth token endpoint (http://127.0.0.1) that counts refresh requests, rotates
    the refresh token on each one (an old one is refused with invalid_grant, as X does), and
    can hold the first request until the test lets it answer."""

    def __init__(self) -> None:
        self.refreshes = 0
        self.refresh_token = "rt-0"
        self.arrived = threading.Event()  # the first refresh request is here
        self.release = threading.Event()  # let the held request answer
        self.release.set()
        self._lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                status, body = endpoint.answer(form)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.uri = f"http://127.0.0.1:{self.server.server_address[1]}/token"

    def hold_first(self) -> None:
        self.release.clear()

    def answer(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.refreshes += 1
            number = self.refreshes
        if number == 1:
            self.arrived.set()
            self.release.wait(60)
        with self._lock:
            if form.get("refresh_token") != self.refresh_token:
                return 400, {"error": "invalid_grant", "error_description": "token rotated"}
            self.refresh_token = f"rt-{number}"
            return 200, {
                "access_token": f"at-{number}",
                "expires_in": 3600,
                "refresh_token": self.refresh_token,
            }

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint():
    served = TokenEndpoint()
    yield served
    served.close()


@pytest.fixture
def key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One vault key file every host reads (AUTORETTO_VAULT_KEY_FILE), made at first connect."""
    path = tmp_path / "shared" / "vault.key"
    path.parent.mkdir()
    monkeypatch.setenv(KEY_FILE_VARIABLE, str(path))
    monkeypatch.setenv("AUTORETTO_VAULT", "file")  # never a developer's keyring
    monkeypatch.delenv(KEY_VARIABLE, raising=False)
    monkeypatch.setenv("AUTORETTO_NOW", NOW)
    return path


@pytest.fixture
def hosts(store: str, home: Path, tmp_path: Path, key_file: Path) -> tuple[Path, Path]:
    """Two hosts' homes on one store: on PostgreSQL two homes, on the SQLite file one."""
    other = tmp_path / "host-b" if store == "postgresql" else home
    for each in (home, other):
        write_config(each, channel_toml())
    return home, other


def connect(home: Path, endpoint: TokenEndpoint, *, expires_at: str = EXPIRING) -> None:
    db = open_database(home / "autoretto.db")
    accounts.save_account(
        db,
        home,
        platform="x",
        account_id="42",
        name="lofi",
        tokens={
            "access_token": "at-0",
            "refresh_token": endpoint.refresh_token,
            "expires_at": expires_at,
            "client_id": "client",
            "client_secret": "secret",
            "token_uri": endpoint.uri,
        },
        meta={},
    )
    db.conn.close()


#: Refreshes the account's token through the lease (tests/support.py).
REFRESHER = refresher_script("x", "X", 'tokens["access_token"], tokens["refresh_token"]')


def refresher(home: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", REFRESHER, str(home)],
        env={**os.environ, "AUTORETTO_HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )


def said_waiting(worker: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    line = ""
    while line != "waiting\n":
        assert time.monotonic() < deadline and worker.poll() is None, worker.communicate()
        line = worker.stderr.readline()


def lease_row(home: Path) -> dict | None:
    db = open_database(home / "autoretto.db")
    try:
        return leases.lease_holder(db, accounts.lease_name("x"))
    finally:
        db.conn.close()


# -- the refresh lease ---------------------------------------------------------------------------


def test_two_hosts_refreshing_one_account_send_one_refresh_request(hosts, endpoint) -> None:
    first_home, second_home = hosts
    connect(first_home, endpoint)
    endpoint.hold_first()
    first = refresher(first_home)
    assert endpoint.arrived.wait(30), first.communicate()  # the first holds the lease, asking
    second = refresher(second_home)
    said_waiting(second)  # the second read the expiring token and waits for the lease
    endpoint.release.set()
    answers = [worker.communicate(timeout=60) for worker in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0], answers
    assert answers[0][0] == answers[1][0] == "at-1 rt-1\n"  # the second used the saved token
    assert endpoint.refreshes == 1
    assert lease_row(first_home) is None  # given back


def test_a_host_killed_mid_refresh_is_taken_over(hosts, endpoint) -> None:
    """SIGKILL while its refresh request is out: the lease names a process that is gone, so the
    next host takes it over at once (same machine: its pid is asked) and refreshes."""
    first_home, second_home = hosts
    connect(first_home, endpoint)
    endpoint.hold_first()
    victim = refresher(first_home)
    assert endpoint.arrived.wait(30), victim.communicate()
    held = lease_row(first_home)
    assert held is not None
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    survivor = refresher(second_home)
    out, err = survivor.communicate(timeout=60)
    assert survivor.returncode == 0, err
    assert out == "at-2 rt-2\n"  # its own refresh, the dead one's never answered
    assert endpoint.refreshes == 2
    assert lease_row(first_home) is None


def test_a_holder_on_another_host_is_taken_over_only_after_two_sightings(
    hosts, endpoint, monkeypatch
) -> None:
    """A holder this machine cannot ask is gone only once its beat stood still across two
    sightings `stale_after` (15m outside a run) apart by the waiter's clock: until then a
    waiter gives up in one line naming the account, and a beat that moves keeps the lease."""
    home, _ = hosts
    connect(home, endpoint)
    db = open_database(home / "autoretto.db")
    runs.open_run(
        db, run_id="elsewhere", kind="run-due", pid=1, machine="another-boot/pid:[1]",
        process_start="1", started_at="2026-11-29T17:59:00Z",
    )  # fmt: skip
    assert leases.take_lease(db, accounts.lease_name("x"), "elsewhere", "2026-11-29T17:59:30Z")

    with pytest.raises(accounts.RefreshFailed) as waited, accounts.account_lock(db, "x", wait=0.05):
        pass
    said = str(waited.value)
    assert "\n" not in said and "x account 'default'" in said and "elsewhere" in said

    monkeypatch.setenv("AUTORETTO_NOW", "2026-11-29T18:10:00Z")
    runs.beat_run(db, "elsewhere")  # it lives: the count starts again from this sighting
    with pytest.raises(accounts.RefreshFailed), accounts.account_lock(db, "x", wait=0.05):
        pass
    monkeypatch.setenv("AUTORETTO_NOW", "2026-11-29T18:20:00Z")  # 10 min since: not yet
    with pytest.raises(accounts.RefreshFailed), accounts.account_lock(db, "x", wait=0.05):
        pass
    monkeypatch.setenv("AUTORETTO_NOW", "2026-11-29T18:25:00Z")  # 15 min, the same beat
    with accounts.account_lock(db, "x", wait=0.05) as holder:
        assert leases.lease_holder(db, accounts.lease_name("x"))["holder"] == holder
    assert leases.lease_holder(db, accounts.lease_name("x")) is None


# -- the vault key, the same on every host -------------------------------------------------------


@pytest.fixture
def two_homes(postgres_url, home, tmp_path, key_file, monkeypatch) -> tuple[Path, Path]:
    monkeypatch.setenv("AUTORETTO_DATABASE_URL", postgres_url)
    other = tmp_path / "host-b"
    for each in (home, other):
        write_config(each, channel_toml())
    return home, other


def test_two_homes_with_one_key_file_read_each_others_sealed_account(
    two_homes, key_file, endpoint, monkeypatch
) -> None:
    first_home, second_home = two_homes
    connect(first_home, endpoint)  # the first connect makes the shared key file, 0600
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert not (first_home / "vault.key").exists() and not (second_home / "vault.key").exists()
    key_file.chmod(0o400)  # read-only is fine

    # The second host refreshes (opens and seals again); the first reads what it sealed.
    db = open_database(second_home / "autoretto.db")
    tokens = accounts.fresh_tokens(db, second_home, platform="x", title="X", refresh=_refresh)
    assert tokens["access_token"] == "at-1"
    other = open_database(first_home / "autoretto.db")
    account = accounts.load_account(other, "x")
    assert accounts.open_tokens(other, first_home, account)["access_token"] == "at-1"

    # The same key from the environment opens what the file sealed, and the other way round.
    monkeypatch.delenv(KEY_FILE_VARIABLE)
    monkeypatch.setenv(KEY_VARIABLE, key_file.read_text().strip())
    assert accounts.open_tokens(other, first_home, account)["refresh_token"] == "rt-1"
    sealed_by_variable = Vault(first_home).seal(b"secret", "bound", create_key=False)
    assert sealed_by_variable[3:4] == b"E"  # the place it records: the environment
    monkeypatch.delenv(KEY_VARIABLE)
    monkeypatch.setenv(KEY_FILE_VARIABLE, str(key_file))
    assert Vault(second_home).unseal(sealed_by_variable, "bound") == b"secret"

    # doctor on the second host: the key comes from the shared file, no problem.
    out = Cli()("doctor", "--json", env={"AUTORETTO_HOME": str(second_home)})[1]
    facts = json.loads(out)
    assert facts["vault"] == {
        "key": "file", "where": str(key_file), "keyring_usable": False, "keyring": None,
        "file_mode": "0400", "variable": KEY_FILE_VARIABLE,
    }  # fmt: skip
    assert not [p for p in facts["problems"] if "vault" in p or "key" in p], facts["problems"]


def _refresh(tokens: dict) -> dict:
    from autoretto.oauth import refresh_grant

    return refresh_grant(tokens)


def test_a_home_moves_to_a_shared_key_by_copying_its_key_file(home, tmp_path, monkeypatch):
    monkeypatch.setenv("AUTORETTO_VAULT", "file")
    monkeypatch.delenv(KEY_FILE_VARIABLE, raising=False)
    monkeypatch.delenv(KEY_VARIABLE, raising=False)
    blob = Vault(home).seal(b"refresh-token", "autoretto/x/default/42", create_key=True)
    assert blob[3:4] == b"F"
    shared = tmp_path / "shared.key"
    shutil.copy(home / "vault.key", shared)
    shared.chmod(0o600)
    (home / "vault.key").unlink()
    monkeypatch.setenv(KEY_FILE_VARIABLE, str(shared))
    assert Vault(home).unseal(blob, "autoretto/x/default/42") == b"refresh-token"


def test_a_wrong_or_open_key_is_one_line_naming_the_variable(home, key_file, monkeypatch):
    blob = Vault(home).seal(b"secret", "bound", create_key=True)
    right = key_file.read_text().strip()

    wrong = base64.b64encode(secrets.token_bytes(32)).decode()
    monkeypatch.setenv(KEY_VARIABLE, wrong)
    with pytest.raises(VaultError) as caught:
        Vault(home).unseal(blob, "bound")
    said = str(caught.value)
    assert "\n" not in said and KEY_VARIABLE in said and "not the one" in said
    assert wrong not in said and right not in said

    monkeypatch.setenv(KEY_VARIABLE, "not-base64!")
    with pytest.raises(VaultError, match=f"^{KEY_VARIABLE} is not a vault key") as caught:
        Vault(home).unseal(blob, "bound")
    assert "not-base64" not in str(caught.value)

    monkeypatch.delenv(KEY_VARIABLE)
    other = key_file.with_name("other.key")
    other.write_text(wrong + "\n")
    other.chmod(0o600)
    monkeypatch.setenv(KEY_FILE_VARIABLE, str(other))
    with pytest.raises(VaultError) as caught:
        Vault(home).unseal(blob, "bound")
    said = str(caught.value)
    assert KEY_FILE_VARIABLE in said and str(other) in said and wrong not in said

    key_file.chmod(0o644)
    monkeypatch.setenv(KEY_FILE_VARIABLE, str(key_file))
    with pytest.raises(VaultError) as caught:
        Vault(home).unseal(blob, "bound")
    said = str(caught.value)
    assert said == (
        f"{key_file} ({KEY_FILE_VARIABLE}) is mode 0644: a vault key must be readable by its "
        f"owner alone; run `chmod 600 {key_file}`"
    )


# -- the clock check -----------------------------------------------------------------------------


def faketime() -> str:
    found = shutil.which("faketime")
    if found is None:
        pytest.fail(
            "the clock-check tests need the faketime tool, missing: `apt-get install -y "
            "faketime` (the README's test command installs it)",
            pytrace=False,
        )
    return found


def ahead(*args: str, by: float = 3600, env: dict[str, str] | None = None):
    """`autoretto ARGS` under `faketime -f`, its clock `by` seconds from the database's. Under
    an outer faketime (the CI's far-date run sets FAKETIME to an offset every process shares,
    the test's PostgreSQL server too) the nested one replaces that offset: `by` is added to it."""
    inherited = os.environ.get("FAKETIME", "")
    base = float(inherited) if re.fullmatch(r"[+-]?\d+(\.\d+)?", inherited) else 0.0
    process = subprocess.run(
        [faketime(), "-f", f"{base + by:+.0f}", sys.executable, "-m", "autoretto", *args],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    # faketime itself warns on stderr when it runs inside another faketime
    said = "".join(
        line
        for line in process.stderr.splitlines(keepends=True)
        if not line.startswith("faketime:")
    )
    return process.returncode, process.stdout, said


def test_a_host_whose_clock_is_an_hour_ahead_refuses_to_post(
    postgres_url, home, clip, cli, monkeypatch, pings
) -> None:
    received, base = pings
    monkeypatch.setenv("AUTORETTO_DATABASE_URL", postgres_url)
    write_config(home, channel_toml(), extra=f'\n[notify]\nheartbeat_url = "{base}/ping"\n')
    cli("init")
    assert cli("episode", "add", "lofi", str(clip), "--title", "one")[0] == 0
    assert cli("run-due", now="2026-11-29T09:00:00Z")[0] == 0  # the channel is seen
    before = cli.json("decisions")
    monkeypatch.setenv("AUTORETTO_NOW", "2026-11-29T10:05:00Z")  # 10:00 is due

    received.clear()
    code, out, err = ahead("run-due")
    assert code == 1, (out, err)
    assert out == ""
    assert [path for path, _ in received] == ["/ping/start", "/ping/fail"]  # not in silence
    (line,) = err.splitlines()
    assert "this host's clock is 36" in line
    assert line.endswith(
        "s ahead of the database's (limit 30 s): fix its time (timedatectl / chrony) before it "
        "posts"
    )
    code, out, err = ahead("post-now", "lofi")
    assert code == 1 and "ahead of the database's (limit 30 s)" in err, (out, err)
    code, out, err = ahead("run-due", by=-120)
    assert code == 1 and "s behind the database's (limit 30 s)" in err, (out, err)
    # Nothing recorded, nothing sent: no run row, no decision, no post, no outbox file.
    assert cli.json("decisions") == before and cli.json("posts") == []
    assert outbox_sidecars(home) == []
    db = open_database(home / "autoretto.db")
    assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1  # the setup's run only

    code, out, err = ahead("doctor", "--json")
    facts = json.loads(out)
    assert 3590 < facts["database"]["clock_offset_seconds"] < 3610
    assert any("ahead of the database's" in p for p in facts["problems"]), facts["problems"]
    code, out, err = ahead("doctor")
    assert "clock     this host's is 36" in out

    code, out, err = cli("run-due")  # the same host with its clock right
    assert code == 0, err
    assert [s["slot"] for s in outbox_sidecars(home)] == ["2026-11-29T10:00"]
    assert abs(json.loads(cli("doctor", "--json")[1])["database"]["clock_offset_seconds"]) < 5


def test_the_sqlite_file_has_no_clock_of_its_own(home, clip, cli) -> None:
    """One machine, one clock: a host's clock set an hour ahead still posts from its file."""
    write_config(home, channel_toml())
    cli("init")
    assert cli("episode", "add", "lofi", str(clip), "--title", "one")[0] == 0
    assert cli("run-due", now="2026-11-29T09:00:00Z")[0] == 0
    code, _, err = ahead("run-due", env={"AUTORETTO_NOW": "2026-11-29T10:05:00Z"})
    assert code == 0, err
    assert [s["slot"] for s in outbox_sidecars(home)] == ["2026-11-29T10:00"]
    facts = json.loads(cli("doctor", "--json")[1])
    assert facts["database"]["clock_offset_seconds"] is None


# -- spreading the work --------------------------------------------------------------------------


def test_hosts_walk_the_channels_from_different_places(store, home, monkeypatch) -> None:
    from autoretto.config import Paths, load_config
    from autoretto.engine.run import host_order
    from autoretto.platforms import FIELDS

    names = [f"ch{number}" for number in range(7)]
    write_config(home, *(channel_toml(name) for name in names))
    config = load_config(Paths(home), platforms=FIELDS)
    db = open_database(home / "autoretto.db")
    orders = {}
    for host in ("host-a", "host-b", "host-c"):
        monkeypatch.setenv("AUTORETTO_HOST_ID", host)
        order = [c.name for c in host_order(config, db, list(config.cadences))]
        assert order == [c.name for c in host_order(config, db, list(config.cadences))]
        assert sorted(order) == sorted(names)
        start = order.index(names[0])
        assert order[start:] + order[:start] == names  # a rotation of the configured order
        orders[host] = order[0]
    if store == "sqlite":
        assert set(orders.values()) == {"ch0"}  # one machine: the configured order
    else:
        assert len(set(orders.values())) > 1, orders  # hosts start at different channels
    monkeypatch.delenv("AUTORETTO_HOST_ID")
    by_name = [c.name for c in host_order(config, db, list(config.cadences))]
    assert by_name == [c.name for c in host_order(config, db, list(config.cadences))]


def test_a_host_skips_a_channel_being_made_elsewhere_and_makes_the_next(
    home, cli, postgres_url, monkeypatch
) -> None:
    """Two producing channels; another host (a live run this machine cannot ask, its beat
    moving) is making for the first this host walks: this host makes for the other one."""
    from autoretto.config import Paths, load_config
    from autoretto.engine.run import host_order
    from autoretto.platforms import FIELDS
    from tests.test_produce import SMALL_PIPELINE

    monkeypatch.setenv("AUTORETTO_DATABASE_URL", postgres_url)
    monkeypatch.setenv("AUTORETTO_HOST_ID", "host-b")
    channels = [
        channel_toml(name).replace("approval = false", "approval = false\nready_ahead = 1")
        + SMALL_PIPELINE
        for name in ("lofi", "jazz")
    ]
    write_config(home, *channels)
    cli("init")
    cli("run-due", "--no-make", now="2026-11-29T09:00:00Z")
    db = open_database(home / "autoretto.db")
    config = load_config(Paths(home), platforms=FIELDS)
    first, second = (c.name for c in host_order(config, db, list(config.cadences)))
    runs.open_run(
        db, run_id="elsewhere", kind="run-due", pid=1, machine="another-boot/pid:[1]",
        process_start="1", started_at="2026-11-29T09:05:00Z",
    )  # fmt: skip
    assert claims.claim_making(
        db, first, "elsewhere", now="2026-11-29T09:05:00Z", holder=None, beat=None
    )
    code, out, err = cli("run-due", now="2026-11-29T09:10:00Z")
    assert code == 0, err
    made = {e["channel"] for e in cli.json("episodes")}
    assert made == {second}, (first, second, out)
    assert claims.making_by(db, first) == "elsewhere"
