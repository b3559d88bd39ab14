"""Connected accounts: sealed tokens, refresh under a lock, the connect flows and commands."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import requests
import typer
from typer.testing import CliRunner

from autoretto import accounts
from autoretto.commands.accounts import register
from autoretto.config import Paths
from autoretto.errors import AutorettoError, UsageError
from autoretto.ledger.store import open_database
from autoretto.oauth import refresh_grant
from autoretto.platforms.youtube import YouTubePlatform
from tests.fakes.youtube_server import (
    CHANNEL_ID,
    CLIENT_ID,
    CLIENT_SECRET,
    FakeYouTube,
    Tls,
    connect_account,
    make_tls,
    tls_environment,
)
from tests.support import channel_toml, refresher_script, sign_in, write_config

NOW = "2026-11-29T18:00:00Z"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    return make_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def fake(tls: Tls, monkeypatch: pytest.MonkeyPatch, home: Path) -> FakeYouTube:
    tls_environment(monkeypatch, tls)
    monkeypatch.setenv("AUTORETTO_NOW", NOW)
    home.mkdir(parents=True, exist_ok=True)
    with FakeYouTube(tls) as server:
        yield server


@pytest.fixture
def db(home: Path, fake: FakeYouTube) -> Any:
    return open_database(home / "autoretto.db")


def youtube_toml(fake: FakeYouTube, *, token_uri: str | None = None) -> str:
    return textwrap.dedent(
        f"""
        [platforms.youtube]
        api_base = "{fake.url}"
        token_uri = "{token_uri or fake.token_uri}"
        auth_uri = "{fake.url}/auth"
        """
    )


def client_secrets(tmp_path: Path) -> Path:
    path = tmp_path / "client_secret.json"
    path.write_text(
        json.dumps(
            {
                "installed": {
                    "client_id": CLIENT_ID,
                    "client_secret": CLIENT_SECRET,
                    "auth_uri": "https://accounts.google.com/o/oauth2/auth",
                    "token_uri": "https://oauth2.googleapis.com/token",
                }
            }
        )
    )
    return path


def settings_for(fake: FakeYouTube, home: Path) -> dict[str, Any]:
    paths = Paths(home)
    table = {"api_base": fake.url, "token_uri": fake.token_uri, "auth_uri": f"{fake.url}/auth"}
    return YouTubePlatform.parse_settings(table, path=paths.config, paths=paths)


def everything_under(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file())


def youtube_fresh_tokens(db: Any, home: Path, **kwargs: Any) -> dict[str, Any]:
    return accounts.fresh_tokens(
        db, home, platform="youtube", title="YouTube", refresh=refresh_grant, **kwargs
    )


# -- the account store -----------------------------------------------------------------------


def test_an_account_is_stored_sealed_and_listed_without_secrets(home, db, fake) -> None:
    tokens = connect_account(db, home, fake)
    listed = accounts.list_accounts(db)
    assert [(a.platform, a.account_id, a.state) for a in listed] == [
        ("youtube", CHANNEL_ID, "connected")
    ]
    shown = json.dumps([a.to_json() for a in listed])
    stored = everything_under(home)
    for secret in (tokens["refresh_token"], tokens["access_token"]):
        assert secret not in shown
        assert secret.encode() not in stored
    assert accounts.open_tokens(db, home, listed[0])["refresh_token"] == tokens["refresh_token"]


def test_a_fresh_token_is_used_without_a_refresh(home, db, fake) -> None:
    tokens = connect_account(db, home, fake, expires_at="2026-11-29T19:00:00Z")
    assert youtube_fresh_tokens(db, home)["access_token"] == tokens["access_token"]
    assert fake.count("token") == 0


def test_a_rotated_refresh_token_is_saved(home, db, fake) -> None:
    fake.rotate_refresh_tokens = True
    old = connect_account(db, home, fake, expires_at="2026-11-29T18:03:00Z")
    new = youtube_fresh_tokens(db, home)
    assert new["access_token"] != old["access_token"]
    assert new["expires_at"] == "2026-11-29T18:59:59Z"
    account = accounts.load_account(db, "youtube")
    stored = accounts.open_tokens(db, home, account)
    assert stored["refresh_token"] != old["refresh_token"]
    assert stored["refresh_token"] in fake.refresh_tokens  # the old one is dead at the fake


def test_an_empty_refresh_token_never_overwrites_the_stored_one(home, db, fake) -> None:
    old = connect_account(db, home, fake, expires_at="2026-11-29T17:00:00Z")
    answer = {"access_token": "ya29.new", "expires_in": 3600, "refresh_token": ""}
    tokens = accounts.fresh_tokens(
        db, home, platform="youtube", title="YouTube", refresh=lambda t: answer
    )
    assert tokens["refresh_token"] == old["refresh_token"]
    stored = accounts.open_tokens(db, home, accounts.load_account(db, "youtube"))
    assert stored["refresh_token"] == old["refresh_token"]
    assert stored["access_token"] == "ya29.new"


def test_a_revoked_refresh_token_marks_the_account_reconnect(home, db, fake) -> None:
    connect_account(db, home, fake, expires_at="2026-11-29T17:00:00Z")
    fake.revoke()
    with pytest.raises(accounts.ReconnectNeeded) as caught:
        youtube_fresh_tokens(db, home)
    reason = str(caught.value)
    assert "invalid_grant" in reason
    assert reason.endswith("reconnect with `autoretto connect youtube`")
    account = accounts.load_account(db, "youtube")
    assert (account.state, account.reason) == ("reconnect", reason)
    with pytest.raises(accounts.ReconnectNeeded):
        youtube_fresh_tokens(db, home)
    assert fake.count("token") == 1  # nothing more is sent from a reconnect account


def test_an_unreachable_token_endpoint_is_passing(home, db, fake) -> None:
    tokens = connect_account(db, home, fake, expires_at="2026-11-29T17:00:00Z")
    fake.__exit__()  # the sign-in server is down
    with pytest.raises(accounts.RefreshFailed, match="could not reach"):
        youtube_fresh_tokens(db, home)
    assert accounts.load_account(db, "youtube").state == "connected"
    assert tokens


#: Refreshes the account's token through the lease (tests/support.py).
REFRESHER = refresher_script("youtube", "YouTube", 'tokens["access_token"]')


def wait_for_waiters(workers: list[subprocess.Popen], timeout: float = 30) -> None:
    """Until each worker said it waits for the lease (its first line on stderr)."""
    for worker in workers:
        line = ""
        deadline = time.monotonic() + timeout
        while line != "waiting\n":
            assert time.monotonic() < deadline and worker.poll() is None, worker.communicate()
            line = worker.stderr.readline()


def test_two_processes_refreshing_at_once_make_one_refresh_call(home, db, fake) -> None:
    fake.rotate_refresh_tokens = True  # a second refresh with the old token would fail
    connect_account(db, home, fake, expires_at="2026-11-29T18:01:00Z")
    with accounts.account_lock(db, "youtube"):
        workers = [
            subprocess.Popen(
                [sys.executable, "-c", REFRESHER, str(home)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=REPO,
            )
            for _ in range(2)
        ]
        wait_for_waiters(workers)  # both read the expiring token and now wait for the lease
    answers = [worker.communicate(timeout=60) for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0], answers
    assert answers[0][0] == answers[1][0]  # the second used the token the first saved
    assert fake.count("token") == 1
    assert accounts.load_account(db, "youtube").state == "connected"


def test_disconnect_deletes_our_copy(home, db, fake) -> None:
    connect_account(db, home, fake)
    removed = accounts.disconnect(db, "youtube")
    assert removed.account_id == CHANNEL_ID
    assert accounts.list_accounts(db) == []
    assert accounts.disconnect(db, "youtube") is None


# -- connecting ---------------------------------------------------------------------------------


class Person:
    """Follows the printed instructions: opens the URL, presses Allow, brings the answer back."""

    def __init__(self, fake: FakeYouTube, *, loopback: bool = False) -> None:
        self.fake = fake
        self.loopback = loopback
        self.lines: list[str] = []
        self.consent_url: str | None = None
        self.browser: threading.Thread | None = None

    def say(self, line: str) -> None:
        self.lines.append(line)
        if line.startswith(self.fake.url + "/auth"):
            self.consent_url = line
            if self.loopback:
                self.browser = threading.Thread(target=self._browse_through_tunnel)
                self.browser.start()

    def _consent(self) -> str:
        assert self.consent_url is not None
        answer = requests.get(self.consent_url, allow_redirects=False, timeout=10)
        assert answer.status_code == 302
        return answer.headers["Location"]

    def ask(self, prompt: str) -> str:
        return self._consent()

    def _browse_through_tunnel(self) -> None:
        target = self._consent()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                requests.get(target, timeout=5)
                return
            except requests.ConnectionError:
                time.sleep(0.02)  # Autoretto is not listening yet

    def consent_query(self) -> dict[str, str]:
        assert self.consent_url is not None
        return {k: v[0] for k, v in parse_qs(urlparse(self.consent_url).query).items()}


def connect_youtube(db, home, fake, tmp_path, person, **options: Any) -> accounts.Account:
    arguments = {
        "client_secrets": client_secrets(tmp_path),
        "port": 8765,
        "paste": True,
        "token_file": None,
        "allow_edits": False,
        **options,
    }
    return sign_in("youtube", db, home, settings_for(fake, home), person, **arguments)


def test_connect_with_paste(home, db, fake, tmp_path) -> None:
    person = Person(fake)
    account = connect_youtube(db, home, fake, tmp_path, person)

    assert (account.account_id, account.name, account.state) == (
        CHANNEL_ID,
        "Rain Lofi",
        "connected",
    )
    query = person.consent_query()
    assert query["access_type"] == "offline" and query["prompt"] == "consent"
    assert query["code_challenge_method"] == "S256" and query["code_challenge"]
    assert query["redirect_uri"] == "http://localhost:8765/"
    assert query["scope"].split() == [
        "https://www.googleapis.com/auth/youtube.upload",
        "https://www.googleapis.com/auth/youtube.readonly",
        "https://www.googleapis.com/auth/youtube.force-ssl",  # comments (issue 28)
    ]
    assert fake.kinds() == ["auth", "token", "channels"]  # the code exchange checked PKCE
    tokens = accounts.open_tokens(db, home, account)
    assert tokens["refresh_token"] in fake.refresh_tokens
    assert tokens["refresh_token"].encode() not in everything_under(home)
    assert account.meta["uploads"].startswith("UU")


def test_allow_edits_asks_for_the_edit_scope(home, db, fake, tmp_path) -> None:
    person = Person(fake)
    connect_youtube(db, home, fake, tmp_path, person, allow_edits=True)
    assert "https://www.googleapis.com/auth/youtube.force-ssl" in person.consent_query()["scope"]


def test_connect_through_the_loopback_tunnel(home, db, fake, tmp_path) -> None:
    person = Person(fake, loopback=True)
    with socket_port() as port:
        pass
    account = connect_youtube(db, home, fake, tmp_path, person, paste=False, port=port)
    person.browser.join(timeout=10)
    assert account.account_id == CHANNEL_ID
    assert any(line.strip().startswith(f"ssh -L {port}:localhost:{port} ") for line in person.lines)


def test_declining_consent_stores_nothing(home, db, fake, tmp_path) -> None:
    fake.script["auth"].append("deny")
    with pytest.raises(UsageError, match="access was not allowed"):
        connect_youtube(db, home, fake, tmp_path, Person(fake))
    assert accounts.list_accounts(db) == []


def test_a_pasted_address_of_another_attempt_is_refused(home, db, fake, tmp_path) -> None:
    person = Person(fake)
    person.ask = lambda prompt: "http://localhost:8765/?state=other&code=4/x"  # type: ignore
    with pytest.raises(UsageError, match="another sign-in attempt"):
        connect_youtube(db, home, fake, tmp_path, person)
    assert fake.count("token") == 0


def test_a_bad_token_file_is_explained(home, db, fake, tmp_path) -> None:
    path = tmp_path / "token.json"
    path.write_text(json.dumps({"type": "authorized_user", "client_id": CLIENT_ID}))
    with pytest.raises(UsageError, match="missing: client_secret, refresh_token"):
        connect_youtube(db, home, fake, tmp_path, Person(fake), token_file=path)
    path.write_text(
        json.dumps(
            {
                "type": "authorized_user",
                "client_id": CLIENT_ID,
                "client_secret": CLIENT_SECRET,
                "refresh_token": "1//unknown",
                "token_uri": fake.token_uri,
            }
        )
    )
    with pytest.raises(AutorettoError, match="Google refused this token"):
        connect_youtube(db, home, fake, tmp_path, Person(fake), token_file=path)


class socket_port:
    """A free local port."""

    def __enter__(self) -> int:
        import socket

        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        return self.socket.getsockname()[1]

    def __exit__(self, *exc: object) -> None:
        self.socket.close()


# -- the commands ---------------------------------------------------------------------------------


@pytest.fixture
def run(home: Path, fake: FakeYouTube) -> Any:
    app = typer.Typer()
    register(app)

    @app.callback()
    def main() -> None:
        """autoretto (the account commands only)."""

    runner = CliRunner()

    def invoke(*args: str, **kwargs: Any) -> Any:
        return runner.invoke(app, list(args), catch_exceptions=False, **kwargs)

    return invoke


def test_connect_with_a_token_file_leaves_no_token_in_clear(home, fake, tmp_path, run) -> None:
    # The config points the token URI elsewhere: the file's own token_uri must win.
    write_config(home, channel_toml(), extra=youtube_toml(fake, token_uri="https://127.0.0.1:9/x"))
    issued = fake.issue_tokens()
    token_file = tmp_path / "authorized_user.json"
    token_file.write_text(
        json.dumps(
            {
                "type": "authorized_user",
                "client_id": CLIENT_ID,
                "client_secret": CLIENT_SECRET,
                "refresh_token": issued["refresh_token"],
                "token_uri": fake.token_uri,
            }
        )
    )
    result = run("connect", "youtube", "--token-file", str(token_file))

    assert result.exit_code == 0, result.stderr
    assert 'Connected YouTube channel "Rain Lofi" (UCfake' in result.stdout
    assert "delete it now" in result.stdout
    assert fake.kinds() == ["token", "channels"]
    everything = everything_under(home)
    assert issued["refresh_token"].encode() not in everything
    assert issued["refresh_token"] not in result.stdout + result.stderr
    listed = run("accounts", "--json")
    assert json.loads(listed.stdout)[0]["account_id"] == CHANNEL_ID
    assert issued["refresh_token"] not in listed.stdout


def test_doctor_names_the_key_file_and_the_accounts(home, fake, db, run) -> None:
    write_config(home, channel_toml(), extra=youtube_toml(fake))
    connect_account(db, home, fake)
    result = run("doctor", "--json")
    assert result.exit_code == 0, result.stdout
    facts = json.loads(result.stdout)
    assert facts["vault"]["key"] == "file"
    assert facts["vault"]["where"] == str(home / "vault.key")
    assert facts["vault"]["file_mode"] == "0600"
    assert facts["vault"]["keyring_usable"] is False
    assert [a["state"] for a in facts["accounts"]] == ["connected"]
    assert facts["problems"] == []

    (home / "vault.key").unlink()
    result = run("doctor")
    assert result.exit_code == 1
    assert "vault.key is missing" in result.stdout and "restore it" in result.stdout


def test_disconnect_command(home, fake, db, run) -> None:
    write_config(home, channel_toml(), extra=youtube_toml(fake))
    connect_account(db, home, fake)
    result = run("disconnect", "youtube")
    assert result.exit_code == 0
    assert "https://myaccount.google.com/permissions" in result.stdout
    again = run("disconnect", "youtube")
    assert again.exit_code == 2 and "no youtube account is connected" in again.stderr
    assert run("disconnect", "folder").exit_code == 2


def test_connect_paste_as_a_real_process(home, fake, tmp_path) -> None:
    write_config(home, channel_toml(), extra=youtube_toml(fake))
    script = (
        "import typer; from autoretto.commands.accounts import register; app = typer.Typer();"
        " register(app); app.callback()(lambda: None); app()"
    )
    command = [sys.executable, "-c", script, "connect", "youtube", "--paste"]
    command += ["--client-secrets", str(client_secrets(tmp_path))]
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    consent_url = None
    for line in process.stdout:
        if line.startswith(fake.url + "/auth"):
            consent_url = line.strip()
            break
    assert consent_url, process.stderr.read()
    location = requests.get(consent_url, allow_redirects=False, timeout=10).headers["Location"]
    out, err = process.communicate(location + "\n", timeout=60)
    assert process.returncode == 0, err
    assert 'Connected YouTube channel "Rain Lofi"' in out
    assert "key is in" in out and "vault.key" in out
