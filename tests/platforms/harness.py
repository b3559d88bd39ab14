"""The shared harness for platform adapters: one table of cases per platform, run the same way.

A case says what the fake platform does (its own script, applied by the test's `arrange`) and
what a person would then check: the post's state, the decision it gives, how many times the
platform took a publish. `Bench` builds the rest the same way for every platform: a home with
the platform configured, a connected account (sealed in the vault), an episode whose
landscape, vertical and reels files exist, and the real post state machine around the adapter
(`send` is what a slot does; `look` is what a later slot or `autoretto look` does).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from autoretto.accounts import save_account
from autoretto.clock import parse_instant
from autoretto.config import Paths, load_config
from autoretto.episodes import get_episode
from autoretto.ledger import episodes as episode_ledger
from autoretto.ledger.store import dumps, open_database
from autoretto.notify import NotifySettings
from autoretto.platforms import FIELDS, REGISTRY
from autoretto.platforms.base import Platform, PlatformContext, RetryPolicy
from autoretto.posts import Posting, PostResult, get_post, look, send_post

NOW = "2026-11-29T10:05:00Z"


@dataclass
class Case:
    """One row of a platform's table."""

    name: str
    arrange: Callable[[Any], None] = lambda fake: None  # script the fake platform
    state: str = "published"  # the post's state after one send
    outcome: str = "posted"  # the decision that send gives
    publishes: int = 1  # publishes the platform took
    reason_has: str = ""  # words the reason must contain
    then_look: bool = False  # then a later slot looks: still one publish, published
    extra: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name


class Bench:
    """A home wired for one platform, with one episode ready."""

    def __init__(
        self,
        home: Path,
        platform: str,
        *,
        settings: str = "",
        clip: Path,
        now: str = NOW,
        channel_extra: str = "",
    ) -> None:
        self.home = home
        self.platform_name = platform
        home.mkdir(parents=True, exist_ok=True)
        (home / "autoretto.toml").write_text(
            textwrap.dedent(
                f"""
                [[channels]]
                name = "lofi"
                timezone = "UTC"
                slots = ["10:00", "11:00", "12:00"]
                platforms = ["{platform}"]
                {channel_extra}

                [retry]
                attempts = 3
                first_wait = "0s"

                [platforms.{platform}]
                """
            )
            + textwrap.dedent(settings)
        )
        self.config = load_config(Paths(home), platforms=FIELDS)
        self.db = open_database(self.config.paths.database)
        self.now = parse_instant(now)
        self.episode_id = self.add_episode(clip)

    def add_episode(self, clip: Path, *, title: str = "Rainy night", **columns: Any) -> int:
        videos = {
            "landscape": str(clip),
            "vertical": str(clip),
            "reels": str(clip),
            **columns.pop("videos", {}),
        }
        moment = self.now.strftime("%Y-%m-%dT%H:%M:%SZ")
        return episode_ledger.add_episode(
            self.db,
            {
                "channel": "lofi",
                "state": "ready",
                "title": title,
                "description": "A warm lofi beat for a rainy night. #lofi",
                "tags": dumps(["lofi", "rain"]),
                "texts": dumps(columns.pop("texts", {})),
                "videos": dumps({k: v for k, v in videos.items() if v}),
                "duration": columns.pop("duration", 1.0),
                "ai_generated": 0,
                "off_schedule": 0,
                "created_at": moment,
                "updated_at": moment,
                **columns,
            },
        )

    def connect(
        self, *, account_id: str, name: str, tokens: dict[str, Any], meta: dict | None = None
    ) -> None:
        save_account(
            self.db,
            self.home,
            platform=self.platform_name,
            account_id=account_id,
            name=name,
            tokens=tokens,
            meta=meta or {},
        )

    def platform(self, at: datetime | None = None) -> Platform:
        cls = REGISTRY[self.platform_name]
        settings = self.config.platforms.get(self.platform_name)
        return cls(
            PlatformContext(
                self.platform_name, settings, self.config.paths, self.db, at or self.now,
                RetryPolicy(attempts=3, first_wait=0.0),
            )
        )  # fmt: skip

    def posting(self, at: datetime, run_id: str = "run-1") -> Posting:
        return Posting(
            db=self.db,
            run_id=run_id,
            now=at,
            stale_after=timedelta(minutes=15),
            journal=self.config.journal,
            notify=NotifySettings(),
        )

    def send(self, *, episode_id: int | None = None, after: timedelta = timedelta(0)) -> PostResult:
        """What a slot does: post the episode to the platform through the state machine."""
        at = self.now + after
        episode = get_episode(self.db, episode_id or self.episode_id)
        return send_post(
            self.posting(at),
            self.platform(at),
            episode,
            publish_at=at,
            slot="2026-11-29T10:00",
            slot_at="2026-11-29T10:00:00Z",
        )

    def look(self, post_id: int, *, after: timedelta = timedelta(minutes=20)) -> PostResult:
        """What a later slot (or `autoretto look`) does for a post that may be live."""
        at = self.now + after
        return look(self.posting(at, "run-2"), self.platform(at), post_id)

    def post(self, post_id: int) -> dict:
        return get_post(self.db, post_id)


def run_case(bench: Bench, fake: Any, case: Case, published_count: Callable[[], int]) -> None:
    """Apply a case: arrange the fake, send once, check what a person would check."""
    case.arrange(fake)
    result = bench.send()
    post = bench.post(result.post_id)
    assert post["state"] == case.state, (case.name, post)
    assert result.outcome == case.outcome, (case.name, result)
    if case.reason_has:
        assert case.reason_has in (result.reason or ""), (case.name, result.reason)
    assert published_count() == case.publishes, (case.name, published_count())
    if case.then_look:
        again = bench.look(result.post_id)
        assert bench.post(result.post_id)["state"] == "published", (case.name, again)
        assert published_count() == max(case.publishes, 1), (case.name, "published twice")
