"""The contract table: one row per registered platform, and the home every case runs in.

A row names the platform (its registry name, which is also its `[platforms.NAME]` table), its
fake (a `tests.fakes.base.FakeServer`, so it speaks the one fault vocabulary), the operations
of its publish after which Autoretto holds a durable handle (where the crash cases kill the
run), and whether the platform can be asked about an attempt (`can_ask`: a lost answer is then
found again; else the harness expects `may_be_live` and a working `autoretto confirm`).

Adding a platform is one row here (and its fake on the shared base); the cases in
`test_never_twice.py` run over every row.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from autoretto.accounts import save_account
from autoretto.platforms import platform_class
from tests.fakes.base import FakeServer
from tests.platforms.harness import Bench
from tests.support import Cli

#: the runs of a case: the 10:00 slot's run; then cron's later runs: 10:25, past the 15 minutes
#: a killed run's claim and post stay its own, and 11:05, the next slot's run, past every
#: platform's `look_delay` (a post that may be live is looked for before the platform is used
#: again)
FIRST_RUN = "2026-11-29T10:05:00Z"
LATER_RUNS = ("2026-11-29T10:25:00Z", "2026-11-29T11:05:00Z")


@dataclass(frozen=True)
class Row:
    """One platform of the table."""

    name: str  # the registry name and the config table `[platforms.NAME]`
    #: its fake server, made in a folder of the test's with the test's monkeypatch (for what
    #: the client must trust); None: no network (folder)
    fake: Callable[[Path, pytest.MonkeyPatch], FakeServer] | None
    #: the fake's operations at which a run is killed (the fake did the work, its answer never
    #: arrives): the call whose answer is the handle Autoretto keeps, and the call that makes
    #: the copy
    crash_at: tuple[str, ...] = ()
    #: can Autoretto ask the platform whether an attempt is there? If not, a post in doubt
    #: stays `may_be_live` until `autoretto confirm` (the harness checks that it does)
    can_ask: bool = True
    #: the operation that refuses the content, when it is not the publish (YouTube refuses
    #: the metadata when the upload starts)
    refuse_at: str | None = None
    manual: bool = False  # posted by a person (`autoretto post`), never on a slot
    xfail: dict[str, str] = field(default_factory=dict)  # case -> the adapter's defect

    def __str__(self) -> str:
        return self.name

    @property
    def publish(self) -> str:
        """The fake's operation that makes the copy (what the faults of a case hit)."""
        return self.crash_at[-1]


def _youtube(folder: Path, monkeypatch: pytest.MonkeyPatch) -> FakeServer:
    from tests.fakes.youtube_server import FakeYouTube, make_tls, tls_environment

    tls = make_tls(folder / "tls")
    tls_environment(monkeypatch, tls)
    return FakeYouTube(tls)


def _instagram(folder: Path, monkeypatch: pytest.MonkeyPatch) -> FakeServer:
    from tests.fakes.instagram_server import INSTAGRAM, FakeGraph

    return FakeGraph(INSTAGRAM)


def _of(module: str, name: str) -> Callable[[Path, pytest.MonkeyPatch], FakeServer]:
    """A fake made by calling `tests.fakes.MODULE.NAME()`."""

    def make(folder: Path, monkeypatch: pytest.MonkeyPatch) -> FakeServer:
        from importlib import import_module

        return getattr(import_module(f"tests.fakes.{module}"), name)()

    return make


ROWS = [
    Row(
        "youtube",
        _youtube,
        crash_at=("initiate", "chunk"),
        refuse_at="initiate",
        xfail={
            "rate_limited_for_an_hour": (
                "YouTubePlatform._upload_from waits out any Retry-After on a chunk "
                "(self.sleep(self._backoff(...)), _backoff has no cap): a 429 with "
                "Retry-After: 3600 holds the run an hour, past LONGEST_WAIT_SECONDS (120 s)"
            )
        },
    ),
    Row("facebook", _of("facebook_server", "FakeFacebook"), crash_at=("start", "finish")),
    Row("instagram", _instagram, crash_at=("create", "publish")),
    Row(
        "linkedin",
        _of("linkedin_server", "FakeLinkedIn"),
        crash_at=("initialize", "post"),
        # LinkedIn lists an author's posts only to apps granted r_member_social, which the
        # fake's grant (like most apps') lacks: https://learn.microsoft.com/en-us/linkedin/
        # marketing/community-management/shares/posts-api (Find Posts by Authors)
        can_ask=False,
    ),
    Row("threads", _of("threads_server", "fake_threads"), crash_at=("create", "publish")),
    Row(
        "bluesky",
        _of("bluesky_server", "FakeBluesky"),
        crash_at=("app.bsky.video.uploadVideo", "com.atproto.repo.createRecord"),
    ),
    Row("x", _of("x_server", "FakeX"), crash_at=("initialize", "create")),
    Row("webhook", _of("webhook_server", "FakeWebhook"), crash_at=("publish",)),
    Row("folder", None),
]


class FolderOutbox:
    """The folder platform's side, read as a fake is: the copies a person finds there."""

    title = "Folder outbox"

    def __init__(self, home: Path) -> None:
        self.home = home

    def visible_copies(self) -> int:
        return len(list((self.home / "outbox").glob("*/*.json")))

    def settings(self) -> str:
        return 'path = "outbox"\n'


class Home:
    """A home with one channel posting to one platform, its account connected, one episode
    ready, and the stamp just before the 10:00 slot; `cli` runs Autoretto in-process."""

    def __init__(self, home: Path, row: Row, fake: Any, clip: Path) -> None:
        self.home, self.row, self.fake = home, row, fake
        self.cli = Cli()
        self.bench = Bench(home, row.name, settings=fake.settings(), clip=clip, now=FIRST_RUN)
        if platform_class(row.name).needs_account:
            save_account(self.bench.db, home, platform=row.name, **fake.account())
        self.run("2026-11-29T09:00:00Z")  # the stamp: 10:00 is the next slot

    def run(self, now: str) -> str:
        code, out, err = self.cli("run-due", now=now)
        assert code == 0, (out, err)
        return out

    def posts(self) -> list[dict]:
        return self.cli.json("posts")

    def post(self) -> dict:
        (post,) = self.posts()
        return post

    def decisions(self) -> list[dict]:
        return self.cli.json("decisions")

    def dump(self) -> str:
        return json.dumps(
            {
                "posts": self.posts(),
                "decisions": self.decisions(),
                "slots": self.slot_states(),
                "calls": self.kinds(),
            },
            indent=1,
        )

    def kinds(self) -> list[str]:
        return self.fake.kinds() if hasattr(self.fake, "kinds") else []

    def slot_states(self) -> dict[str, str]:
        """slot -> its state, as `autoretto status --json` shows the recent slots."""
        status = self.cli.json("status", now="2026-11-29T12:30:00Z")["channels"][0]
        return {slot["slot"]: slot["state"] for slot in status["recent"]}
