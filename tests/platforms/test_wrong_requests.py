"""Each fake refuses a wrong request the way its service does (issue 29).

Every test sends the wrong request through the adapter's own code (patched to drop or rename
one field, as a slip in the adapter would), against the fake, and checks what a person would
see: the post is not published and the fake made nothing (or, where the service takes the
request and ignores the field, as YouTube does with a part `part` does not name, what was
lost). The same test then sends the right request and it goes through, so each refusal is
shown to come from the one wrong field. Suno's misnamed field is in tests/pipeline/test_suno.py.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from autoretto.platforms import REGISTRY, tiktok
from autoretto.platforms.base import Failure, Published
from autoretto.platforms.instagram import InstagramPlatform
from autoretto.platforms.linkedin import LinkedInPlatform
from autoretto.platforms.threads import ThreadsPlatform
from autoretto.platforms.youtube import YouTubePlatform
from tests.fakes import tiktok_server
from tests.fakes.instagram_server import INSTAGRAM, FakeGraph
from tests.fakes.linkedin_server import MEMBER_URN, FakeLinkedIn
from tests.fakes.threads_server import fake_threads
from tests.fakes.youtube_server import FakeYouTube, connect_account, make_tls, tls_environment
from tests.platforms.harness import Bench
from tests.platforms.test_youtube import CHUNK, NOW, Run


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


# -- YouTube: `part=snippet` alone, and a publishAt on a video that is not private -------------

SLOT_AHEAD = "2026-11-29T20:00:00Z"  # two hours after the YouTube tests' clock


@pytest.fixture
def youtube(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: Path) -> FakeYouTube:
    tls = make_tls(tmp_path / "tls")
    tls_environment(monkeypatch, tls)
    monkeypatch.setenv("AUTORETTO_NOW", NOW)
    home.mkdir(parents=True, exist_ok=True)
    with FakeYouTube(tls) as fake:
        yield fake


@pytest.fixture
def db(home: Path, youtube: FakeYouTube) -> Any:
    from autoretto.ledger.store import open_database

    database = open_database(home / "autoretto.db")
    connect_account(database, home, youtube)
    return database


@pytest.fixture
def video(tmp_path: Path) -> Path:
    path = tmp_path / "episode.mp4"
    path.write_bytes(os.urandom(2 * CHUNK + 180_000))
    return path


def test_youtube_drops_the_status_a_snippet_only_insert_does_not_name(
    home: Path, db: Any, youtube: Any, video: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`part` names what videos.insert sets: without `status` YouTube ignores the privacy, the
    publishAt and the synthetic-media flag the body carries, and so does the fake."""
    built = YouTubePlatform._insert_request

    def snippet_only(self, video: Path, body: dict[str, Any]) -> Any:
        insert = built(self, video, body)
        insert.uri = insert.uri.replace("part=snippet%2Cstatus", "part=snippet")
        assert "part=snippet&" in insert.uri or insert.uri.endswith("part=snippet")
        return insert

    monkeypatch.setattr(YouTubePlatform, "_insert_request", snippet_only)
    wrong = Run(home, db, youtube, schedule_ahead=True).publish(video, publish_at=SLOT_AHEAD)
    status = youtube.videos[wrong.platform_post_id]["status"]
    # What the adapter asked for is lost: a user would find the video public at once.
    assert "publishAt" not in status and "containsSyntheticMedia" not in status
    assert status["privacyStatus"] == "public"

    monkeypatch.setattr(YouTubePlatform, "_insert_request", built)
    right = Run(home, db, youtube, schedule_ahead=True).publish(
        video, publish_at=SLOT_AHEAD, marker="ar-post2-attempt1-77aa"
    )
    status = youtube.videos[right.platform_post_id]["status"]
    assert status["privacyStatus"] == "private" and status["publishAt"] == SLOT_AHEAD
    assert status["containsSyntheticMedia"] is True


def test_youtube_refuses_a_publish_at_on_a_video_that_is_not_private(
    home: Path, db: Any, youtube: Any, video: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = YouTubePlatform._resource

    def scheduled_public(self, request: Any) -> dict[str, Any]:
        resource = made(self, request)
        resource["status"]["privacyStatus"] = "public"
        return resource

    monkeypatch.setattr(YouTubePlatform, "_resource", scheduled_public)
    wrong = Run(home, db, youtube, schedule_ahead=True).publish(video, publish_at=SLOT_AHEAD)
    assert isinstance(wrong, Failure) and wrong.kind == "rejected", wrong
    assert "invalid scheduled publishing time" in wrong.reason
    assert youtube.videos == {} and youtube.sessions == {}

    monkeypatch.setattr(YouTubePlatform, "_resource", made)
    right = Run(home, db, youtube, schedule_ahead=True).publish(video, publish_at=SLOT_AHEAD)
    assert isinstance(right, Published), right


# -- Instagram and Threads: the caption under another name ------------------------------------


@pytest.mark.parametrize(
    ("platform", "renamed"),
    [(InstagramPlatform, "message"), (ThreadsPlatform, "caption")],
    ids=["instagram", "threads"],
)
def test_graph_refuses_a_container_whose_text_has_another_name(
    home: Path, clip: Path, monkeypatch: pytest.MonkeyPatch, platform: Any, renamed: str
) -> None:
    """Instagram's caption sent as `message` (Facebook's name), Threads' text as `caption`
    (Instagram's): Graph refuses the parameter, so nothing is made without its text."""
    from tests.platforms import test_instagram, test_threads

    tests = test_instagram if platform is InstagramPlatform else test_threads
    fake = FakeGraph(INSTAGRAM) if platform is InstagramPlatform else fake_threads()
    monkeypatch.setitem(REGISTRY, platform.name, platform)
    with fake:
        settings = tests.settings_for(fake, tests.free_port())
        bench = Bench(home, platform.name, settings=settings, clip=clip)
        tests.connect(bench, fake)
        right_name = platform.text_param
        monkeypatch.setattr(platform, "text_param", renamed)
        wrong = bench.send()
        assert wrong.outcome == "failed" and fake.containers == {} and fake.publishes == []
        assert f"{renamed} is not a parameter" in wrong.reason, wrong.reason

        monkeypatch.setattr(platform, "text_param", right_name)
        right = bench.send(episode_id=bench.add_episode(clip, title="Second night"))
        assert right.outcome == "posted", right.reason
        (container,) = fake.containers.values()
        assert container.fields[right_name] == container.text and container.text
