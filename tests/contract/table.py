"""The contract table: one row per registered platform, and the home every case runs in.

A row names the platform (its registry name, which is also its `[platforms.NAME]` table), its
fake (a `tests.fakes.base.FakeServer`, so it speaks the one fault vocabulary), the fake's
operations at which the crash cases kill the run (`crash_at`: the call whose answer is the
handle Autoretto keeps, then the call that makes the copy), whether the platform can be asked
about an attempt (`can_ask`: a lost answer is then found again; else the harness expects
`may_be_live` and a working `autoretto confirm`), and for a manual platform the person's
choices on its posting screen.

Adding a platform is one row here (and its fake on the shared base); the cases in
`test_never_twice.py` run over every row.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from autoretto.accounts import save_account
from autoretto.errors import Exit
from autoretto.platforms import platform_class
from tests.fakes.base import FakeServer
from tests.forked import Forked, run_forked
from tests.platforms.harness import Bench
from tests.support import Cli

#: the runs of a case: the 10:00 slot's run; then cron's later runs: 10:25, past the 15 minutes
#: a killed run's claim and post stay its own, and 11:05, the next slot's run, past every
#: platform's `look_delay` (a post that may be live is looked for before the platform is used
#: again)
FIRST_RUN = "2026-11-29T10:05:00Z"
LATER_RUNS = ("2026-11-29T10:25:00Z", "2026-11-29T11:05:00Z")
#: after a killed run, or for a paced platform (Bluesky, whose moment is drawn from the home's own
#: seed): its post may have been sent as late as 10:57, so it is another run's until 11:12
AFTER_A_KILL = "2026-11-29T12:05:00Z"


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
    #: a manual platform (never on a slot): what the person chose on its posting screen; its
    #: "runs" are the person's `autoretto post` (`tests/contract/by_hand.py`)
    choices: Callable[[], Any] | None = None
    xfail: dict[str, str] = field(default_factory=dict)  # case -> the adapter's defect

    def __str__(self) -> str:
        return self.name

    @property
    def manual(self) -> bool:
        return self.choices is not None

    @property
    def paced(self) -> bool:
        """Does its slot post go out at a drawn human moment (up to 57 minutes after the slot),
        not on the slot's minute?"""
        return platform_class(self.name).paced

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
    Row(
        "tiktok",
        _of("tiktok_server", "FakeTikTok"),
        crash_at=("init", "upload"),
        refuse_at="init",
        choices=lambda: _choices("tiktok"),
    ),
    Row(
        "pinterest",
        _of("pinterest_server", "FakePinterest"),
        crash_at=("media", "pin"),
        choices=lambda: _choices("pinterest"),
    ),
]


def _choices(name: str) -> Any:
    """What a person picks on the posting screen: private (what an unaudited TikTok app may
    post), music confirmed; the first board."""
    if name == "tiktok":
        from autoretto.platforms.tiktok import TikTokChoices

        return TikTokChoices(title="Rain", privacy_level="SELF_ONLY", music_confirmed=True)
    from autoretto.platforms.pinterest import PinterestChoices
    from tests.fakes.pinterest_server import BOARDS

    return PinterestChoices(board_id=BOARDS[0]["id"], title="Rain")


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
        if row.manual:  # on no channel's slots: the channel's slots go to the folder
            platform, settings = "folder", f'path = "outbox"\n[platforms.{row.name}]\n'
        else:
            platform, settings = row.name, ""
        settings += fake.settings()
        self.bench = Bench(home, platform, settings=settings, clip=clip, now=FIRST_RUN)
        if platform_class(row.name).needs_account:
            save_account(self.bench.db, home, platform=row.name, **fake.account())
        if not row.manual:
            self.run("2026-11-29T09:00:00Z")  # the stamp: 10:00 is the next slot

    def run(self, now: str) -> str:
        """Cron's `run-due` at `now`; for a manual platform, the person posts by hand."""
        if self.row.manual:
            from tests.contract.by_hand import post

            previous = os.environ["AUTORETTO_NOW"]
            os.environ["AUTORETTO_NOW"] = now
            try:
                return post(self.row.name)
            finally:
                os.environ["AUTORETTO_NOW"] = previous
        code, out, err = self.cli("run-due", now=now)
        # the exit-code table (errors.Exit): done, a post that needs a person or may be live,
        # a post that failed for now; never a mistake, a hold or a crash
        assert code in (Exit.DONE, Exit.NEEDS_PERSON, Exit.RETRY), (code, out, err)
        assert "Traceback" not in err, err
        return out

    def process(self, now: str, env: dict[str, str] | None = None) -> Forked:
        """The same as `run`, as a real process of its own (forked ready-imported:
        tests/forked.py)."""
        if self.row.manual:
            return run_forked(self.row.name, now=now, env=env, module="tests.contract.by_hand")
        return run_forked("run-due", now=now, env=env)

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
        status = self.cli.json("status", now="2026-11-29T13:00:00Z")["channels"][0]
        return {slot["slot"]: slot["state"] for slot in status["recent"]}
