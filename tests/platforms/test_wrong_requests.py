"""Each fake refuses a wrong request the way its service does (issue 29).

Every test sends the wrong request through the adapter's own code (patched to drop or rename
one field, as a slip in the adapter would), against the fake, and checks what a person would
see: the post is not published and the fake made nothing. The same test then sends the right
request and it goes through, so each refusal is shown to come from the one wrong field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from autoretto.platforms import REGISTRY, tiktok
from autoretto.platforms.linkedin import LinkedInPlatform
from tests.fakes import tiktok_server
from tests.fakes.linkedin_server import MEMBER_URN, FakeLinkedIn
from tests.platforms.harness import Bench


@pytest.fixture(autouse=True)
def file_vault(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTORETTO_VAULT", "file")


# -- LinkedIn: a post without `distribution` ---------------------------------------------------


def linkedin_bench(home: Path, clip: Path, fake: FakeLinkedIn) -> Bench:
    bench = Bench(home, "linkedin", settings=fake.settings() + "poll_tries = 5\n", clip=clip)
    bench.connect(
        account_id=MEMBER_URN,
        name="Rae Lofi",
        tokens={"access_token": fake.issue_token(), "expires_at": "2027-01-28T10:00:00Z"},
        meta={"author": MEMBER_URN, "token_expires_at": "2027-01-28T10:00:00Z"},
    )
    return bench


def test_linkedin_refuses_a_post_without_distribution(
    home: Path, clip: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(REGISTRY, "linkedin", LinkedInPlatform)
    sent = LinkedInPlatform._rest

    def without_distribution(self, method: str, path: str, **arguments: Any) -> Any:
        if method == "POST" and path == "posts":
            arguments["json"] = {k: v for k, v in arguments["json"].items() if k != "distribution"}
        return sent(self, method, path, **arguments)

    with FakeLinkedIn() as fake:
        bench = linkedin_bench(home, clip, fake)
        monkeypatch.setattr(LinkedInPlatform, "_rest", without_distribution)
        wrong = bench.send()
        assert wrong.outcome == "failed" and fake.posts == []
        assert bench.post(wrong.post_id)["state"] == "needs_person", wrong.reason
        assert "/distribution" in wrong.reason

        monkeypatch.setattr(LinkedInPlatform, "_rest", sent)
        right = bench.send(episode_id=bench.add_episode(clip, title="Second night"))
        assert right.outcome == "posted", right.reason
        (post,) = fake.posts
        assert post.body["distribution"]["feedDistribution"] == "MAIN_FEED"


# -- TikTok: a chunk sent as application/octet-stream ------------------------------------------


def test_tiktok_refuses_a_chunk_without_the_videos_mime_type(
    home: Path, clip: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.platforms.test_tiktok import ChosenTikTok, connected

    monkeypatch.setitem(REGISTRY, "tiktok", ChosenTikTok)
    fake = tiktok_server.start()
    try:
        bench = connected(home, clip, fake)
        monkeypatch.setitem(tiktok.CONTENT_TYPES, ".mp4", "application/octet-stream")
        wrong = bench.send()
        assert wrong.outcome == "failed" and fake.published == []
        assert all(not publish.received for publish in fake.inits)
        assert "refused chunk 1 of 1 (HTTP 400)" in wrong.reason

        monkeypatch.setitem(tiktok.CONTENT_TYPES, ".mp4", "video/mp4")
        right = bench.send(episode_id=bench.add_episode(clip, title="Second night"))
        assert right.outcome == "posted", right.reason
        assert len(fake.published) == 1
    finally:
        fake.close()
