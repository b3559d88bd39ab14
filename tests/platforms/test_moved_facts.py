"""Platform facts that moved (issue 29): Bluesky's video size, the Graph API versions that
ended, Suno's model (tests/pipeline/test_suno.py) and LinkedIn's default version
(tests/platforms/test_notices.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoretto.episodes import episode_view, get_episode
from autoretto.platforms import REGISTRY
from autoretto.platforms.bluesky import BlueskyPlatform
from tests.fakes import bluesky_server


def sparse(path: Path, size: int) -> Path:
    """A file of `size` bytes that takes no room on the disk."""
    with open(path, "wb") as file:
        file.truncate(size)
    return path


def test_bluesky_takes_videos_up_to_300_million_bytes(
    home: Path, clip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.platforms.test_bluesky import connected

    monkeypatch.setitem(REGISTRY, "bluesky", BlueskyPlatform)
    fake = bluesky_server.start()
    try:
        bench = connected(home, clip, fake)
        platform = bench.platform()

        def reason(size: int) -> str | None:
            video = sparse(tmp_path / f"{size}.mp4", size)
            videos = {"landscape": str(video), "vertical": str(video), "reels": str(video)}
            episode = bench.add_episode(clip, title=f"{size} bytes", videos=videos)
            return platform.unsuitable_reason(episode_view(get_episode(bench.db, episode)))

        assert reason(150_000_000) is None  # over the old 100 MB, within the new limit
        assert reason(300_000_000) is None
        assert "up to 300 MB" in (reason(300_000_001) or "")
    finally:
        fake.close()


@pytest.mark.parametrize("platform", ["facebook", "instagram"])
def test_a_graph_version_that_ended_says_when(platform: str) -> None:
    """v19.0 was served until 2026-05-21 (the versions table lists the ended ones too): set by
    hand, it is reported ended on that day, not as a version with no announced end."""
    from datetime import date

    from autoretto.platforms.versions import version_facts

    facts = version_facts(REGISTRY[platform], {"api_version": "v19.0"})
    assert facts.ends == date(2026, 5, 21) and not facts.estimated and facts.overridden
    reason = facts.reason(date(2026, 11, 29))
    assert reason and "stopped serving API version v19.0 on 2026-05-21" in reason
    assert facts.state(date(2026, 11, 29)) == "ended"
    earlier = version_facts(REGISTRY[platform], {"api_version": "v2.12"})
    assert earlier.ends == date(2020, 5, 5)


def test_a_call_to_an_ended_graph_version_is_served_by_the_oldest_served() -> None:
    from tests.fakes.graph_versions import served_version

    # AUTORETTO_NOW is 2026-11-29: v20.0 ended in September, v21.0 is the oldest served
    assert served_version("v19.0") == "v21.0"
    assert served_version("v99.0") is None  # a version that never was
