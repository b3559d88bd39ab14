"""Shared fixtures: every test gets its own Autoretto home; time comes from AUTORETTO_NOW.

No test reads the real clock: every test starts with AUTORETTO_NOW at a fixed instant (tests
that need another moment set their own), so the suite gives the same answers on any date.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import Cli

#: The instant every test starts at unless it sets its own: a Sunday, far from any DST change.
TEST_NOW = "2026-11-29T12:00:00Z"


def pytest_configure(config: pytest.Config) -> None:
    """Compile Autoretto's modules (and the tests', which the fake servers' processes import)
    once, before the suite starts its thousands of processes. Where PYTHONDONTWRITEBYTECODE is
    set (this machine sets it) no process writes what it compiled, so each would compile the
    ~130 modules it imports again: a quarter of the CPU of a test that runs the CLI (measured on
    tests/test_run_due.py: 29 s of CPU without, 22 s with). The sources win where they are newer."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller did it
        return
    import compileall

    root = Path(__file__).resolve().parents[1]
    for folder in ("autoretto", "tests"):
        compileall.compile_dir(root / folder, quiet=1)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh AUTORETTO_HOME (and XDG state folder) per test, the fixed test clock, and no
    inherited fault."""
    home = tmp_path / "home"
    monkeypatch.setenv("AUTORETTO_HOME", str(home))
    monkeypatch.setenv("AUTORETTO_NOW", TEST_NOW)
    # The publish journal's default place is outside the home, in the XDG state folder.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("AUTORETTO_FAULT", raising=False)
    return home


@pytest.fixture(scope="session")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-second 160x90 H.264/AAC clip, made once for the session."""
    from autoretto.ffmpeg import run_ffmpeg

    path = tmp_path_factory.mktemp("media") / "clip.mp4"
    run_ffmpeg(
        [
            "-y", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30:duration=1",
            "-f", "lavfi", "-i", "sine=frequency=440:duration=1",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
            "-c:a", "aac", "-t", "1", str(path),
        ]
    )  # fmt: skip
    return path


@pytest.fixture
def cli() -> Cli:
    return Cli()


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server for the session (tests/postgres_server.py), started on first
    use. A machine without it fails here with the line that says what to install."""
    from tests.postgres_server import PostgresServer

    server = PostgresServer()
    try:
        server.start()
    except (RuntimeError, OSError) as error:
        server.stop()
        pytest.fail(str(error), pytrace=False)
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server, monkeypatch: pytest.MonkeyPatch) -> str:
    """An empty PostgreSQL database of the test's own, not yet chosen as the store; dropped
    after the test."""
    url = postgres_server.fresh_url()
    yield url
    postgres_server.drop(url)


@pytest.fixture(scope="session")
def s3_server():
    """A real S3 endpoint for the session (moto's server, tests/s3_server.py) behind a relay the
    tests can cut. A machine without moto fails here with the line that says what to install."""
    from tests.s3_server import S3Server

    server = S3Server()
    try:
        server.start()
    except (RuntimeError, OSError) as error:
        server.stop()
        pytest.fail(str(error), pytrace=False)
    yield server
    server.stop()


@pytest.fixture
def bucket_url(s3_server, monkeypatch: pytest.MonkeyPatch) -> str:
    """`s3://<a new bucket of the test's own>/autoretto`, with the endpoint and credentials in
    the environment (as boto3 finds them) for this process and every one it starts."""
    for name, value in s3_server.environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    s3_server.relay.mend()
    return f"s3://{s3_server.fresh_bucket()}/autoretto"


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once on the home's SQLite file and once on a PostgreSQL database of its
    own (AUTORETTO_DATABASE_URL, which every process the test starts inherits)."""
    if request.param == "postgresql":
        url = request.getfixturevalue("postgres_server").fresh_url()
        monkeypatch.setenv("AUTORETTO_DATABASE_URL", url)
    return request.param


@pytest.fixture
def pings():
    """A recorder for the notifier's webhook and a cron monitor's heartbeat on 127.0.0.1:
    (the list of (path, body) it received, its base URL)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from tests.fakes.base import SHUTDOWN_POLL

    received: list[tuple[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
            received.append((self.path, body))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL}, daemon=True
    ).start()
    received_url = f"http://127.0.0.1:{server.server_address[1]}"
    yield received, received_url
    server.shutdown()
    server.server_close()
