"""`posts_toward_cap` at the edges of a daily cap (Facebook, LinkedIn, Instagram, Threads count
with it): what counts, and what does not, as a person reading `autoretto posts` would expect."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from autoretto.clock import iso
from autoretto.platforms.base import posts_toward_cap
from tests.platforms.harness import Bench


def test_what_counts_toward_a_daily_cap(home: Path, clip: Path) -> None:
    bench = Bench(home, "folder", settings='path = "outbox"\n', clip=clip)
    since = bench.now - timedelta(hours=24)

    def post(state: str, published_at: str | None = None, platform: str = "instagram") -> int:
        episode = bench.add_episode(clip, title=f"Episode {state}")
        moment = iso(bench.now)
        return (
            bench.db["posts"]
            .insert(
                {
                    "episode_id": episode,
                    "channel": "lofi",
                    "platform": platform,
                    "state": state,
                    "attempts": 1,
                    "created_at": moment,
                    "updated_at": moment,
                    "published_at": published_at,
                }
            )
            .last_pk
        )

    deciding = post("may_be_live")  # the post being decided: never counted against itself
    assert posts_toward_cap(bench.db, "instagram", since, deciding) == 0
    post("published", iso(since))  # exactly 24 hours old: still in the window
    post("published", iso(since - timedelta(seconds=1)))  # just out of it
    assert posts_toward_cap(bench.db, "instagram", since, deciding) == 1
    post("sending")  # on its way
    post("may_be_live")  # its answer lost: it may be live
    post("failed")
    post("needs_person")
    post("queued")
    post("published", iso(bench.now), platform="threads")  # another platform's
    assert posts_toward_cap(bench.db, "instagram", since, deciding) == 3
    assert posts_toward_cap(bench.db, "instagram", since, 0) == 4  # a post not yet made
