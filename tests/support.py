"""Helpers shared by the tests (fixtures live in conftest.py)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from autoretto.cli import app, only_the_command

CHANNEL = """
[[channels]]
name = "{name}"
timezone = "{timezone}"
slots = {slots}
catch_up_window = "{window}"
platforms = ["folder"]
approval = {approval}
"""


def channel_toml(
    name: str = "lofi",
    *,
    timezone: str = "UTC",
    slots: tuple[str, ...] = ("10:00", "11:00", "12:00"),
    window: str = "2h",
    approval: bool = False,
) -> str:
    return CHANNEL.format(
        name=name,
        timezone=timezone,
        slots=json.dumps(list(slots)),
        window=window,
        approval=str(approval).lower(),
    )


def write_config(home: Path, *channels: str, extra: str = "") -> Path:
    home.mkdir(parents=True, exist_ok=True)
    text = "\n".join(textwrap.dedent(c) for c in channels)
    text += '\n[platforms.folder]\npath = "outbox"\n' + extra
    path = home / "autoretto.toml"
    path.write_text(text, encoding="utf-8")
    return path


class Cli:
    """Runs `autoretto` in-process (fast) and returns (exit code, stdout, stderr)."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(
        self, *args: str, now: str | None = None, env: dict[str, str] | None = None
    ) -> tuple[int, str, str]:
        """`env`: variables set for this command alone (another host's AUTORETTO_HOME, ...)."""
        env = {**(env or {}), **({"AUTORETTO_NOW": now} if now else {})} or None
        # the app of the command alone, as `autoretto` itself runs it (cli.run)
        result = self.runner.invoke(
            only_the_command(app, list(args)), list(args), env=env, catch_exceptions=False
        )
        return result.exit_code, result.stdout, result.stderr

    def json(self, *args: str, now: str | None = None, env: dict[str, str] | None = None):
        code, out, err = self(*args, "--json", now=now, env=env)
        assert code == 0, err
        return json.loads(out)


def run_process(
    *args: str, now: str | None = None, env: dict[str, str] | None = None, **kwargs
) -> subprocess.Popen:
    """Start `autoretto ARGS` as a real process of its own."""
    environment = dict(os.environ)
    if now:
        environment["AUTORETTO_NOW"] = now
    environment.update(env or {})
    return subprocess.Popen(
        [sys.executable, "-m", "autoretto", *args],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def paused_at(
    home: Path, point: str, *args: str, now: str | None = None, timeout: float = 120
) -> subprocess.Popen:
    """Start `autoretto ARGS` with the fault point `point` set to pause (autoretto/faults.py)
    and return the process once it sits there, for a test to act in that moment."""
    process = run_process(*args, now=now, env={"AUTORETTO_FAULT": f"{point}:pause"})
    marker = home / f"fault-{point}.paused"
    deadline = time.monotonic() + timeout
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    if not marker.exists():
        if process.poll() is None:
            process.kill()
        raise AssertionError(f"never paused at {point}: {process.communicate()}")
    return process


def run_command(
    *args: str, now: str | None = None, env: dict[str, str] | None = None, timeout: float = 120
) -> tuple[int, str, str]:
    """Run `autoretto ARGS` as a real process to its end: (exit code, stdout, stderr)."""
    process = run_process(*args, now=now, env=env, stdin=subprocess.DEVNULL)
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def snapshot(home: Path) -> dict[str, str]:
    """Every file of the home with a digest of its bytes; the database by its rows (its bytes
    move when SQLite checkpoints the write-ahead log, which changes nothing stored)."""
    found = {}
    for path in sorted(home.rglob("*")):
        if not path.is_file() or path.name.endswith(("-wal", "-shm")):
            continue
        if path.suffix == ".db":
            connection = sqlite3.connect(path)
            content = "\n".join(connection.iterdump()).encode()
            connection.close()
        else:
            content = path.read_bytes()
        found[str(path.relative_to(home))] = hashlib.sha256(content).hexdigest()
    return found


def outbox_sidecars(home: Path, channel: str = "lofi") -> list[dict]:
    """The folder platform's sidecars in the order they were published (their file names are
    the posts' identities, which say nothing of time)."""
    folder = home / "outbox" / channel
    if not folder.exists():
        return []
    found = [json.loads(p.read_text()) for p in folder.glob("*.json")]
    return sorted(found, key=lambda s: (s["published_at"], s["slot_at"] or "", s["post_id"]))


class SignInPerson:
    """The person at `autoretto connect`, scripted (platforms/signin.Person): `said` collects
    the lines shown, `ask` answers a prompt, `secret` is what they would type unseen."""

    def __init__(self, said: list[str], ask: Any = None, secret: str = "") -> None:
        self.said, self._ask, self._secret = said, ask, secret
        self.secrets_asked: list[str] = []

    def say(self, line: str) -> None:
        self.said.append(line)

    def ask(self, prompt: str) -> str:
        return self._ask(prompt)

    def secret(self, prompt: str, *, instead: str, optional: bool = False) -> str:
        self.secrets_asked.append(prompt)
        return self._secret


def sign_in(platform_name: str, db: Any, home: Path, settings: Any, person: Any, **given: Any):
    """`autoretto connect NAME` as the library runs it: the stored account."""
    from autoretto.paths import Paths
    from autoretto.platforms import REGISTRY, signin

    platform = REGISTRY[platform_name]
    flags = {flag.key: None for flag in platform.signin.flags}
    given = {**flags, **given}
    account, _ = signin.connect(platform, lambda: db, Paths(home), settings, given, person)
    return account


def run_sql(home: Path, statement: str) -> None:
    """One statement on the home's store, whichever is in force: the SQLite file, or the
    PostgreSQL database AUTORETTO_DATABASE_URL names (tests that reach under the ledger)."""
    url = os.environ.get("AUTORETTO_DATABASE_URL")
    if url:
        import psycopg

        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(statement)
        return
    connection = sqlite3.connect(home / "autoretto.db")
    connection.execute(statement)
    connection.commit()
    connection.close()


def refresher_script(platform: str, title: str, printed: str) -> str:
    """A process (`python -c SCRIPT HOME`) that refreshes `platform`'s token through the lease
    and prints `printed` (an expression of `tokens`); it says "waiting" on stderr the first time
    it waits for the lease another holds (accounts._sleep: a waiter's pause)."""
    return textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from autoretto import accounts
        from autoretto.oauth import refresh_grant
        from autoretto.ledger.store import open_database

        pause = accounts._sleep
        def waiting(seconds):
            if not getattr(waiting, "said", False):
                waiting.said = True
                print("waiting", file=sys.stderr, flush=True)
            pause(seconds)
        accounts._sleep = waiting
        home = Path(sys.argv[1])
        db = open_database(home / "autoretto.db")
        tokens = accounts.fresh_tokens(
            db, home, platform={platform!r}, title={title!r}, refresh=refresh_grant
        )
        print({printed})
        """
    )
