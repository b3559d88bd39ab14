"""The never-twice contract for carousels (issue 29), one table of cases over every platform
that takes them.

Each case posts the release's video on its 10:00 slot (no fault), which plans the carousel
2 to 8 hours later; then scripts the fake with the shared fault vocabulary (tests/fakes/base.py)
for the carousel's run at 19:05 (in-process; the crash cases as a real process that is
SIGKILLed) and cron's later runs, and counts what a person would see: the carousel on the other
side, once, and its post `published`.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from autoretto.accounts import save_account
from autoretto.errors import Exit
from tests.contract.table import FolderOutbox
from tests.forked import run_forked
from tests.platforms.harness import Bench
from tests.support import Cli

SLOT_RUNS = ("2026-11-29T09:00:00Z", "2026-11-29T10:05:00Z", "2026-11-29T11:05:00Z")
#: after every moment a carousel of the 10:00 release can be drawn for (up to 8 hours after a
#: video published as late as 10:57)
CAROUSEL_RUN = "2026-11-29T19:05:00Z"
#: cron's later runs: past the 15 minutes a killed run's post stays its own, and twice more
LATER_RUNS = ("2026-11-29T19:35:00Z", "2026-11-29T20:05:00Z", "2026-11-29T21:05:00Z")


@dataclass(frozen=True)
class Row:
    name: str
    fake: Callable[[], Any] | None  # None: the folder outbox
    #: the fake's operations: the one whose answer is a handle Autoretto keeps (a card's
    #: upload), then the one that makes the carousel
    crash_at: tuple[str, ...] = ()
    #: how many carousels a person sees on the other side
    copies: Callable[[Any], int] = lambda fake: 0
    #: can Autoretto ask the platform whether the carousel is there? If not, one in doubt
    #: stays `may_be_live` until a person says what they see (`autoretto confirm`)
    can_ask: bool = True

    def __str__(self) -> str:
        return self.name

    @property
    def publish(self) -> str:
        return self.crash_at[-1]


def _bluesky_carousels(fake: Any) -> int:
    return sum(
        1
        for record in fake.records.values()
        if (record["record"].get("embed") or {}).get("$type") == "app.bsky.embed.images"
    )


def _graph_carousels(fake: Any) -> int:
    return len(fake.carousels)


def _x_carousels(fake: Any) -> int:
    return sum(1 for post in fake.posts if len(post["media_keys"]) > 1)


def _folder_carousels(outbox: FolderOutbox) -> int:
    found = [json.loads(p.read_text()) for p in (outbox.home / "outbox").glob("*/*.json")]
    return sum(1 for sidecar in found if sidecar.get("kind") == "carousel")


def _of(module: str, name: str) -> Callable[[], Any]:
    def make() -> Any:
        from importlib import import_module

        return getattr(import_module(f"tests.fakes.{module}"), name)()

    return make


ROWS = [
    Row(
        "facebook",
        _of("facebook_server", "FakeFacebook"),
        crash_at=("photo", "feed"),
        copies=lambda fake: fake.carousels(),
    ),
    Row(
        "linkedin",
        _of("linkedin_server", "FakeLinkedIn"),
        crash_at=("image_initialize", "post"),
        copies=lambda fake: fake.carousels(),
        # it lists an author's posts only for apps granted r_member_social (tests/contract/
        # table.py says where); the fake's grant lacks it, as most apps' do
        can_ask=False,
    ),
    Row(
        "instagram",
        _of("instagram_server", "instagram_fake"),
        crash_at=("create", "publish"),
        copies=_graph_carousels,
    ),
    Row(
        "threads",
        _of("threads_server", "fake_threads"),
        crash_at=("create", "publish"),
        copies=_graph_carousels,
    ),
    Row(
        "bluesky",
        _of("bluesky_server", "FakeBluesky"),
        crash_at=("com.atproto.repo.uploadBlob", "com.atproto.repo.createRecord"),
        copies=_bluesky_carousels,
    ),
    Row("x", _of("x_server", "FakeX"), crash_at=("initialize", "create"), copies=_x_carousels),
    Row("folder", None, copies=_folder_carousels),
]


class Home:
    """A home whose channel opted in to carousels on one platform, its release posted."""

    def __init__(self, home: Path, row: Row, fake: Any, clip: Path) -> None:
        self.home, self.row, self.fake = home, row, fake
        self.cli = Cli()
        settings = fake.settings() if row.fake else 'path = "outbox"\n'
        self.bench = Bench(
            home,
            row.name,
            settings=settings,
            clip=clip,
            now=SLOT_RUNS[0],
            channel_extra=f'carousels = ["{row.name}"]',
        )
        if row.fake:
            save_account(self.bench.db, home, platform=row.name, **fake.account())
        for moment in SLOT_RUNS:
            self.run(moment)
        (video,) = self.posts("video")
        assert video["state"] == "published", self.dump()
        assert self.copies() == 0
        if hasattr(fake, "now"):  # a fake that dates its posts by a clock of its own
            fake.now = CAROUSEL_RUN

    def run(self, now: str) -> None:
        code, out, err = self.cli("run-due", now=now)
        assert code in (Exit.DONE, Exit.NEEDS_PERSON, Exit.RETRY), (code, out, err)
        assert "Traceback" not in err, err

    def posts(self, kind: str) -> list[dict]:
        connection_rows = self.cli.json("posts")
        return [p for p in connection_rows if p.get("kind", "video") == kind]

    def carousel(self) -> dict:
        (post,) = self.posts("carousel")
        return post

    def copies(self) -> int:
        return self.row.copies(self.fake)

    def dump(self) -> str:
        calls = self.fake.kinds() if hasattr(self.fake, "kinds") else []
        return json.dumps({"posts": self.cli.json("posts"), "calls": calls}, indent=1)

    def later_runs(self) -> None:
        for moment in LATER_RUNS:
            self.run(moment)

    def confirmed_if_in_doubt(self) -> None:
        """Where the platform cannot be asked, the person looks and says what they see."""
        post = self.carousel()
        if self.row.can_ask or post["state"] != "may_be_live":
            return
        seen = ("--live", "https://example.com/p/1") if self.copies() else ("--not-live",)
        code, out, err = self.cli("confirm", str(post["id"]), *seen)
        assert code == 0, (out, err)
        if seen == ("--not-live",):
            self.run("2026-11-29T22:05:00Z")

    def posted_once(self) -> None:
        self.confirmed_if_in_doubt()
        assert self.copies() == 1, self.dump()
        post = self.carousel()
        assert post["state"] == "published" and post["url"], self.dump()


def lost_answer(h: Home) -> None:
    h.fake.drop_after(h.row.publish)
    h.run(CAROUSEL_RUN)
    assert h.copies() == 1, h.dump()
    h.later_runs()
    h.posted_once()


def stored_then_500(h: Home) -> None:
    """The platform makes the carousel, then answers 500: the next look finds it."""
    h.fake.script[h.row.publish].append("stored:500")
    h.run(CAROUSEL_RUN)
    assert h.copies() == 1, h.dump()
    h.later_runs()
    h.posted_once()


def server_errors_then_success(h: Home) -> None:
    """503 on the first call and on the one that makes the carousel (nothing done): tried
    again, posted once."""
    h.fake.fail_next("*", 503)
    h.fake.fail_next(h.row.publish, 503)
    h.run(CAROUSEL_RUN)
    h.later_runs()
    h.posted_once()


def rate_limited(h: Home) -> None:
    h.fake.rate_limit(h.row.publish, retry_after=1)
    h.run(CAROUSEL_RUN)
    h.later_runs()
    h.posted_once()


def revoked(h: Home) -> None:
    h.fake.revoke()
    h.run(CAROUSEL_RUN)
    h.later_runs()
    assert h.copies() == 0, h.dump()
    assert h.carousel()["state"] in ("needs_person", "queued"), h.dump()
    (account,) = [a for a in h.cli.json("accounts") if a["platform"] == h.row.name]
    assert account["state"] == "reconnect", h.dump()


def killed(h: Home, *, fault: str | None = None, hold: str | None = None) -> None:
    env = {"AUTORETTO_FAULT": f"{fault}:kill"} if fault else {}
    if hold:
        h.fake.hold(hold)
    process = run_forked("run-due", now=CAROUSEL_RUN, env=env)  # a process of its own
    try:
        if hold:
            assert h.fake.holding.wait(90), process.communicate(timeout=60)
            os.kill(process.pid, signal.SIGKILL)
        process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if hold:
            h.fake.release()
    assert process.returncode == -signal.SIGKILL, process.returncode
    assert h.copies() <= 1, h.dump()
    h.later_runs()
    h.posted_once()


NETWORK_CASES = {
    "lost_answer": lost_answer,
    "stored_then_500": stored_then_500,
    "server_errors_then_success": server_errors_then_success,
    "rate_limited": rate_limited,
    "revoked": revoked,
}
FAULT_POINTS = ("before_send", "after_send", "before_journal", "after_publish_recorded")


def params() -> list:
    found = []
    for row in ROWS:
        names = [f"killed_at:{point}" for point in FAULT_POINTS]
        if row.fake:
            names += list(NETWORK_CASES)
            # a kill while the fake holds each operation: on the platforms whose carousel is
            # a record under a key (Bluesky) and a container (Instagram); the fault points
            # cover every row
            if row.name in ("bluesky", "instagram"):
                names += [f"killed_holding:{operation}" for operation in row.crash_at]
            names.append("killed_at:handles_saved")
        found += [pytest.param(row, name, id=f"{row.name}-{name}") for name in names]
    return found


@pytest.mark.parametrize(("row", "name"), params())
def test_a_carousel_goes_out_once(
    row: Row, name: str, home: Path, clip: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUTORETTO_VAULT", "file")
    fake = row.fake() if row.fake else FolderOutbox(home)
    if hasattr(fake, "start"):
        fake.start()
    try:
        h = Home(home, row, fake, clip)
        kind, _, what = name.partition(":")
        if kind == "killed_at":
            killed(h, fault=what)
        elif kind == "killed_holding":
            killed(h, hold=what)
        else:
            NETWORK_CASES[name](h)
    finally:
        if hasattr(fake, "close"):
            fake.close()


@pytest.mark.parametrize("point", [*FAULT_POINTS, "handles_saved"])
def test_a_carousel_goes_out_once_on_postgresql(
    point: str, postgres_url: str, home: Path, clip: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The crash cases on a PostgreSQL store (AUTORETTO_DATABASE_URL, which the killed run and
    the later runs inherit), on the platform whose record key makes a second copy impossible
    to hide."""
    monkeypatch.setenv("AUTORETTO_VAULT", "file")
    monkeypatch.setenv("AUTORETTO_DATABASE_URL", postgres_url)
    (row,) = [r for r in ROWS if r.name == "bluesky"]
    fake = row.fake().start()
    try:
        h = Home(home, row, fake, clip)
        assert not (home / "autoretto.db").exists()  # the ledger is the PostgreSQL one
        killed(h, fault=point)
    finally:
        fake.close()
