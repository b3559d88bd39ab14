"""`autoretto connect NAME` through the real command: each platform against its fake, no
terminal, the secret asked for last, a pasted address of another attempt or with an error.

Every test here runs `python -m autoretto connect …` as a process of its own; the fakes serve
on 127.0.0.1 in the test process. At a terminal means a real pseudo-terminal (pty).
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from autoretto.accounts import list_accounts, load_account, open_tokens
from autoretto.ledger.store import open_database
from tests.fakes import pinterest_server, threads_server, tiktok_server, x_server
from tests.support import channel_toml, run_command, run_process, snapshot, write_config

REPO = Path(__file__).resolve().parent.parent


@contextmanager
def served(name: str):
    """The fake of platform `name`, its config section and how it answers a consent."""
    if name == "threads":
        with threads_server.fake_threads() as fake:
            settings = (
                f'api_base = "{fake.url}"\ntoken_uri = "{fake.url}/oauth/access_token"\n'
                f'auth_uri = "{fake.url}/oauth/authorize"\napp_id = "{threads_server.APP_ID}"\n'
            )

            def consent(url: str) -> str:
                state = parse_qs(urlsplit(url).query)["state"][0]
                return f"https://localhost/?code={fake.authorize()}&state={state}#_"

            yield fake, settings, consent
        return
    module = {"x": x_server, "tiktok": tiktok_server, "pinterest": pinterest_server}[name]
    fake = module.start()
    try:
        yield fake, fake.settings(), fake.consent
    finally:
        fake.close()


#: platform, the secret's variable and value, who the account is
PLATFORMS = [
    ("x", "X_CLIENT_SECRET", "", x_server.USER_ID),
    ("tiktok", "TIKTOK_CLIENT_SECRET", tiktok_server.CLIENT_SECRET, tiktok_server.OPEN_ID),
    ("pinterest", "PINTEREST_APP_SECRET", pinterest_server.APP_SECRET, pinterest_server.USER_ID),
    ("threads", "THREADS_APP_SECRET", threads_server.APP_SECRET, "25000000000000001"),
]


def stored(home: Path) -> dict[str, str]:
    """What the home holds, the config's parse cache aside (any command may write that)."""
    return {path: digest for path, digest in snapshot(home).items() if ".cache/" not in path}


def configure(home: Path, name: str, settings: str) -> None:
    write_config(home, channel_toml(), extra=f"\n[platforms.{name}]\n{settings}")


def answer_consent(process: subprocess.Popen, fake_url: str, consent: Any) -> tuple[str, str]:
    """Read the command's lines up to the consent address, answer it as the browser would."""
    for line in process.stdout:
        if line.startswith(fake_url):
            return process.communicate(consent(line.strip()) + "\n", timeout=60)
    return process.communicate(timeout=60)


@pytest.mark.parametrize(("name", "variable", "secret", "account_id"), PLATFORMS)
def test_each_platform_connects_through_the_command(home, name, variable, secret, account_id):
    with served(name) as (fake, settings, consent):
        configure(home, name, settings)
        process = run_process("connect", name, env={variable: secret}, stdin=subprocess.PIPE)
        out, err = answer_consent(process, fake.url, consent)

    assert process.returncode == 0, err
    assert "Connected" in out and "sealed in the vault" in out
    db = open_database(home / "autoretto.db")
    account = load_account(db, name)
    assert account.account_id == account_id and account.state == "connected"
    tokens = open_tokens(db, home, account)
    for text in (tokens["access_token"], secret):
        if text:
            assert text not in out + err
            assert text.encode() not in (home / "autoretto.db").read_bytes()


@pytest.mark.parametrize(
    ("name", "args", "variable"),
    [
        ("tiktok", (), "TIKTOK_CLIENT_SECRET"),
        ("pinterest", (), "PINTEREST_APP_SECRET"),
        ("x", (), "X_CLIENT_SECRET"),
        ("threads", (), "THREADS_APP_SECRET"),
        ("bluesky", ("--handle", "lofi.bsky.social"), "BLUESKY_APP_PASSWORD"),
    ],
)
def test_without_a_terminal_the_command_names_the_variable(home, name, args, variable):
    settings = {"bluesky": 'pds = "http://127.0.0.1:9"\n'}.get(name, "")
    if name in ("tiktok", "pinterest", "x", "threads"):
        settings = {
            "tiktok": 'client_key = "k"\n',
            "pinterest": 'app_id = "1"\n',
            "x": 'client_id = "c"\n',
            "threads": 'app_id = "1"\n',
        }[name]
    configure(home, name, settings)
    before = stored(home)
    environment = {key: value for key, value in os.environ.items() if key != variable}
    process = subprocess.run(
        [sys.executable, "-m", "autoretto", "connect", name, *args],
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert process.returncode == 2
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1 and variable in lines[0] and "no terminal" in lines[0], lines
    assert "Warning" not in process.stderr and "Traceback" not in process.stderr
    assert process.stdout == ""  # no consent address: nothing was started
    assert stored(home) == before  # no database made, nothing stored


# -- at a terminal -------------------------------------------------------------------------------


class Terminal:
    """`autoretto ARGS` on a pseudo-terminal: what it shows, what is typed into it."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        master, slave = pty.openpty()
        self.master, self.shown = master, ""
        environment = {**os.environ, **(env or {})}
        for key in ("TIKTOK_CLIENT_SECRET", "BLUESKY_APP_PASSWORD", "PINTEREST_SANDBOX_TOKEN"):
            environment.pop(key, None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "autoretto", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=environment,
            cwd=REPO,
            close_fds=True,
        )
        os.close(slave)

    def wait_for(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.shown:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.master], [], [], left)[0]:
                raise AssertionError(f"{text!r} never shown; shown: {self.shown!r}")
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # the command ended and closed the terminal
                raise AssertionError(f"{text!r} never shown; shown: {self.shown!r}") from None
            self.shown += chunk.decode(errors="replace")
        return self.shown

    def type(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def end(self, timeout: float = 60) -> int:
        code = self.process.wait(timeout=timeout)
        while select.select([self.master], [], [], 0.1)[0]:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                break
            if not chunk:
                break
            self.shown += chunk.decode(errors="replace")
        os.close(self.master)
        return code


@pytest.mark.parametrize(
    ("name", "settings", "args", "said", "secret_prompt"),
    [
        ("tiktok", "", (), "--client-key", "Client secret"),
        ("bluesky", "", ("--handle", "@"), "give your Bluesky handle", "App password"),
        ("pinterest", "", ("--sandbox-token",), "sandbox = true", "Sandbox access token"),
        ("linkedin", "", ("--organization", "acme"), "not an organisation URN", "secret"),
    ],
)
def test_a_missing_input_is_said_before_any_secret_is_asked(
    home, name, settings, args, said, secret_prompt
):
    configure(home, name, settings)
    before = stored(home)
    terminal = Terminal("connect", name, *args)
    assert terminal.end() == 2
    assert said in terminal.shown
    assert secret_prompt not in terminal.shown.replace(said, "")
    assert stored(home) == before


def test_at_a_terminal_the_secret_is_asked_unseen_then_the_sign_in_goes_on(home):
    with served("tiktok") as (fake, settings, consent):
        configure(home, "tiktok", settings)
        terminal = Terminal("connect", "tiktok")
        # click shows the prompt, then getpass turns echo off and shows its " "
        terminal.wait_for("Client secret: ")
        assert fake.url not in terminal.shown  # asked before anything is started
        terminal.type(tiktok_server.CLIENT_SECRET)
        shown = terminal.wait_for("Address")
        url = next(line.strip() for line in shown.splitlines() if line.startswith(fake.url))
        terminal.type(consent(url))
        assert terminal.end() == 0, terminal.shown
    assert "Connected TikTok account @" in terminal.shown
    assert tiktok_server.CLIENT_SECRET not in terminal.shown  # typed without echo
    assert load_account(open_database(home / "autoretto.db"), "tiktok").state == "connected"


# -- the pasted address --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pasted", "said"),
    [
        ("http://127.0.0.1:8765/callback?state=other&code=abc", "another sign-in attempt"),
        (
            "http://127.0.0.1:8765/callback?error=access_denied"
            "&error_description=The+user+denied+access&state=whatever",
            'X answered "The user denied access": access was not allowed',
        ),
        ("http://127.0.0.1:8765/callback?state=x", "holds no sign-in code"),
    ],
)
def test_a_pasted_address_that_is_not_this_sign_ins_is_refused(home, pasted, said):
    with served("x") as (fake, settings, _):
        configure(home, "x", settings)
        process = run_process("connect", "x", env={"X_CLIENT_SECRET": ""}, stdin=subprocess.PIPE)
        _, err = process.communicate(pasted + "\n", timeout=60)
        assert fake.count("token") == 0  # no code was exchanged
    assert process.returncode == 2
    assert said in err and len(err.strip().splitlines()) == 1, err
    assert list_accounts(open_database(home / "autoretto.db")) == []


def test_every_platform_shows_its_own_flags():
    expected = {
        "youtube": ("--client-secrets", "--port", "--paste", "--token-file", "--allow-edits"),
        "facebook": ("--client-file", "--client-id", "--client-secret-file", "--page"),
        "linkedin": ("--client-id", "--client-secret-file", "--organization", "--redirect-uri"),
        "instagram": ("--app-id", "--account", "--json"),
        "threads": ("--app-id", "--account"),
        "bluesky": ("--handle",),
        "x": ("--client-id",),
        "tiktok": ("--client-key",),
        "pinterest": ("--app-id", "--sandbox-token"),
    }
    for name, flags in expected.items():
        code, out, err = run_command("connect", name, "--help")
        assert code == 0, err
        assert re.search(r"Example:\s+autoretto connect " + name, out), out
        for flag in flags:
            assert flag in out, (name, flag)
    code, out, _ = run_command("connect", "youtube", "--help")
    assert "--organization" not in out and "--handle" not in out
