"""The page as a person meets it: `autoretto serve` as a real process, Chromium driving it.

`served` starts `autoretto serve --port 0` against the test's home (its clock is the test's
AUTORETTO_NOW) and reads where it listens and its sign-in address. `browsers` opens headless
Chromium (Debian's /usr/bin/chromium, through Playwright; never Playwright's own download),
each browser with a fresh profile, and fails the test on any console error or page error (a
Content-Security-Policy violation is one) or any dialog (a script that got in).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import webhook_server

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM = os.environ.get("AUTORETTO_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
LISTENING = re.compile(r"page is at (http://\S+?)/ ")


@dataclass
class Served:
    url: str
    sign_in: str  # the address with this start's sign-in token
    process: Any
    log: Path

    @property
    def token(self) -> str:
        return self.sign_in.split("token=", 1)[1]

    def stop(self) -> str:
        """Stop the server (as systemd would, SIGTERM); returns everything it wrote."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except Exception:
                self.process.kill()
                self.process.wait()
        return self.log.read_text(encoding="utf-8", errors="replace")


def start_server(
    home: Path, *args: str, env: dict[str, str] | None = None, open_files: int | None = None
) -> Served:
    """`autoretto serve` for `home`; `open_files`: its file limit (`ulimit -n`), else ours."""
    log = home.parent / f"serve-{time.monotonic_ns()}.log"
    command = [sys.executable, "-m", "autoretto", "serve", "--port", "0", *args]
    if open_files is not None:  # as a person would, in the shell that starts it
        command = ["sh", "-c", f'ulimit -n {int(open_files)} && exec "$@"', "sh", *command]
    with open(log, "w", encoding="utf-8") as output:
        process = subprocess.Popen(
            command,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = log.read_text(encoding="utf-8", errors="replace")
        found = LISTENING.search(text)
        login = home / "serve.login"
        if found and login.exists():
            return Served(found.group(1), login.read_text().strip(), process, log)
        if process.poll() is not None:
            pytest.fail(f"autoretto serve stopped: {text[-2000:]}")
        time.sleep(0.05)
    process.kill()
    pytest.fail("autoretto serve did not start in 60 s")


@pytest.fixture
def served(home: Path) -> Iterator[Any]:
    """`served()` starts the page for the test's home; every server is stopped at the end,
    and no line it wrote may hold its sign-in token or a review link's signature."""
    started: list[Served] = []

    def serve(
        *args: str, env: dict[str, str] | None = None, open_files: int | None = None
    ) -> Served:
        server = start_server(home, *args, env=env, open_files=open_files)
        started.append(server)
        return server

    yield serve
    for server in started:
        written = server.stop()
        assert server.token not in written, "the sign-in token reached the server's log"
        assert "sig=" not in written and "token=" not in written, written[-2000:]


@pytest.fixture
def fake():
    """The webhook platform's fake endpoint (tests/fakes/webhook_server.py)."""
    server = webhook_server.start()
    yield server
    server.close()


@dataclass
class Browsers:
    playwright: Any
    folder: Path
    opened: list[Any] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def open(self) -> Any:
        """A new browser (its own profile, so its own cookies) and a page in it."""
        profile = self.folder / f"profile-{len(self.opened)}"
        context = self.playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        self.opened.append(context)
        page = context.pages[0] if context.pages else context.new_page()
        return self._watched(page)

    def _watched(self, page: Any) -> Any:
        """`page`, with every console error, page error, dialog and refused part noted."""
        page.set_default_timeout(30_000)
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        page.on("dialog", self._dialog)
        page.on("response", self._response)
        return page

    def _console(self, message: Any) -> None:
        # A refused page is asserted by its test; a refused part of a page is caught below.
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            self.problems.append(f"console: {message.text}")

    def _response(self, response: Any) -> None:
        if response.status >= 400 and response.request.resource_type != "document":
            self.problems.append(f"{response.status} for {response.url}")

    def _dialog(self, dialog: Any) -> None:
        self.problems.append(f"a dialog opened: {dialog.message}")
        dialog.dismiss()


def need_chromium() -> None:
    """Skip where AUTORETTO_SKIP_BROWSER=1 says so; fail in one line where Chromium is missing."""
    if os.environ.get("AUTORETTO_SKIP_BROWSER") == "1":
        pytest.skip("AUTORETTO_SKIP_BROWSER=1: the browser tests are skipped on this machine")
    if shutil.which(CHROMIUM) is None:
        pytest.fail(
            f"headless Chromium is needed for the page's browser tests and {CHROMIUM} is "
            "missing: `apt-get install -y chromium` (or set AUTORETTO_SKIP_BROWSER=1)"
        )


@pytest.fixture
def browsers(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Browsers]:
    need_chromium()
    # The session's one Playwright (a second cannot start in a thread where one runs).
    found = Browsers(request.getfixturevalue("playwright_session"), tmp_path / "browsers")
    yield found
    for context in found.opened:
        context.close()
    assert found.problems == [], found.problems


def screenshot(page: Any, name: str) -> Path:
    """Keep what the page looks like now as test-artifacts/web-NAME.png."""
    ARTIFACTS.mkdir(exist_ok=True)
    target = ARTIFACTS / f"web-{name}.png"
    page.screenshot(path=str(target), full_page=True)
    return target


def sign_in(page: Any, server: Served) -> None:
    """Open the sign-in address `serve` printed, as its owner would."""
    page.goto(server.sign_in)
    page.wait_for_url(f"{server.url}/")


@dataclass
class SharedBrowsers(Browsers):
    """`Browsers` whose every `open()` is a new context (its own cookies, storage and cache,
    as a fresh profile has) of one Chromium already running, not a Chromium of its own."""

    browser: Any = None

    def open(self) -> Any:
        context = self.browser.new_context(viewport={"width": 1280, "height": 900})
        self.opened.append(context)
        page = context.new_page()
        return self._watched(page)


@pytest.fixture(scope="session")
def playwright_session() -> Iterator[Any]:
    """Playwright's driver, once for the session (each pytest worker's own), started on first
    use by `browsers` or `chromium`. While it runs, its asyncio loop is this thread's running
    loop (so Playwright's sync API works): a test here must not call asyncio.run() itself
    (none does; Starlette's TestClient runs its loop on a thread of its own)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        yield playwright


@pytest.fixture(scope="session")
def chromium(request: pytest.FixtureRequest) -> Iterator[Any]:
    """One headless Chromium for the session (each pytest worker's own), started on first use:
    Playwright's driver and a Chromium take seconds to start, a new context of a running one a
    fraction of that."""
    need_chromium()
    playwright = request.getfixturevalue("playwright_session")
    browser = playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS
    )
    yield browser
    browser.close()


@pytest.fixture
def shared_browsers(chromium: Any, tmp_path: Path) -> Iterator[SharedBrowsers]:
    """`browsers` on the session's one Chromium (`chromium`), with the same checks: any
    console error, page error or dialog fails the test."""
    found = SharedBrowsers(None, tmp_path / "browsers", browser=chromium)
    yield found
    for context in found.opened:
        context.close()
    assert found.problems == [], found.problems
