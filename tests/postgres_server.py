"""A real PostgreSQL server for the tests, started by the tests themselves.

Debian's `postgresql` package gives the server (`/usr/lib/postgresql/N/bin`). The server is
made with initdb in a temporary folder, listens on a Unix socket only (no TCP port), runs as
the `postgres` user when the tests run as root (the server refuses root), and lives for the
test session. Each test gets a database of its own: `fresh_url()` makes one, an empty one, in
a few tens of milliseconds.

A machine without the server skips nothing silently: the PostgreSQL half of the suite fails
with the line that says what to install.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

PASSWORD_USER = "autoretto_password"
PASSWORD = "right-horse-battery"

INSTALL = (
    "the PostgreSQL half of the tests needs Debian's server and psycopg: "
    "apt-get install -y postgresql && pip install -e '.[test]'"
)


def server_binaries() -> Path | None:
    """The folder of Debian's newest PostgreSQL server binaries, if any is installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=_major)
    return Path(found[-1]).parent if found else None


def _major(path: str) -> int:
    try:
        return int(Path(path).parent.parent.name)
    except ValueError:
        return 0


class PostgresServer:
    """One throw-away server: `start()`, `fresh_url()` per test, `stop()`."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="autoretto-pg-"))
        self.data = self.root / "data"
        self.socket = self.root / "socket"
        self.user = "postgres"
        self._numbers = itertools.count(1)
        self.bin: Path | None = None

    def _as_server_user(self, *command: str) -> list[str]:
        if os.geteuid() == 0:  # the server will not run as root
            return ["runuser", "-u", "postgres", "--", *command]
        return list(command)

    def start(self) -> PostgresServer:
        self.bin = server_binaries()
        if self.bin is None:
            raise RuntimeError(INSTALL)
        try:
            import psycopg
        except ImportError:
            raise RuntimeError(INSTALL) from None
        self.socket.mkdir(parents=True)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
            shutil.chown(self.socket, "postgres")
        else:
            self.user = os.environ.get("USER") or "postgres"
        subprocess.run(
            self._as_server_user(
                str(self.bin / "initdb"), "-D", str(self.data), "-U", self.user,
                "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync",
            ),
            check=True, capture_output=True,
        )  # fmt: skip
        # One user whose password is checked (scram), for the test of a refused password;
        # everyone else is trusted on this private socket.
        hba = self.data / "pg_hba.conf"
        hba.write_text(f"local all {PASSWORD_USER} scram-sha-256\n" + hba.read_text())
        options = (
            f"-k {self.socket} -c listen_addresses='' -c fsync=off -c full_page_writes=off"
            " -c synchronous_commit=off -c max_connections=200"
        )
        subprocess.run(
            self._as_server_user(
                str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options, "-w",
                "-l", str(self.root / "server.log"), "start",
            ),
            check=True, capture_output=True,
        )  # fmt: skip
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f"CREATE ROLE {PASSWORD_USER} LOGIN PASSWORD '{PASSWORD}'")
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql:///{database}?host={self.socket}&user={self.user}"

    def fresh_url(self) -> str:
        """A new, empty database of its own."""
        import psycopg

        name = f"test_{os.getpid()}_{next(self._numbers)}_{int(time.monotonic() * 1000)}"
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop(self, url: str) -> None:
        """Drop the database of `url` (made by fresh_url), its connections ended first: each
        is ~8 MB on disk, and hundreds left to the end cost the session's last seconds."""
        import psycopg

        name = url.split("///", 1)[1].split("?", 1)[0]
        try:
            with psycopg.connect(self.url(), autocommit=True) as connection:
                connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        except psycopg.Error:
            pass  # the server went with the session; stop() removes everything

    def stop(self) -> None:
        if self.bin is not None and self.data.exists():
            subprocess.run(
                self._as_server_user(
                    str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"
                ),
                check=False, capture_output=True,
            )  # fmt: skip
        shutil.rmtree(self.root, ignore_errors=True)
