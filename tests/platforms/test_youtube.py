"""The YouTube platform against a local fake YouTube over TLS: never twice, within quota."""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoretto.accounts import load_account
from autoretto.clock import parse_instant
from autoretto.config import Paths
from autoretto.ledger.store import open_database
from autoretto.platforms import REGISTRY
from autoretto.platforms.base import EpisodeView, Failure, PlatformContext, PostRequest, Published
from autoretto.platforms.youtube import (
    DESCRIPTION_MAX_BYTES,
    TAGS_MAX_CHARS,
    UNITS_USED,
    UPLOADS_USED,
    YouTubePlatform,
    fit_description,
    fit_tags,
    fit_title,
    pacific_day,
    project_of,
    quota_used,
)
from tests.fakes.base import OK
from tests.fakes.youtube_server import (
    CHANNEL_ID,
    FakeYouTube,
    Tls,
    connect_account,
    make_tls,
    tls_environment,
)

CHUNK = 256 * 1024
NOW = "2026-11-29T18:00:00Z"
MARKER = "ar-post1-attempt1-3f9c"


@pytest.fixture(scope="session")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    return make_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def youtube(tls: Tls, monkeypatch: pytest.MonkeyPatch, home: Path) -> FakeYouTube:
    tls_environment(monkeypatch, tls)
    monkeypatch.setenv("AUTORETTO_NOW", NOW)
    home.mkdir(parents=True, exist_ok=True)
    with FakeYouTube(tls) as fake:
        yield fake


@pytest.fixture
def db(home: Path, youtube: FakeYouTube) -> Any:
    database = open_database(home / "autoretto.db")
    connect_account(database, home, youtube)
    return database


@pytest.fixture
def video(tmp_path: Path) -> Path:
    path = tmp_path / "episode.mp4"
    path.write_bytes(os.urandom(2 * CHUNK + 180_000))  # three chunks, the last one short
    return path


@pytest.fixture
def thumbnail(tmp_path: Path) -> Path:
    path = tmp_path / "thumb.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(2000))
    return path


class Run:
    """One platform instance plus the attempt's saved handles, as the engine keeps them."""

    def __init__(self, home: Path, db: Any, youtube: FakeYouTube, **settings: Any) -> None:
        table = {
            "api_base": youtube.url,
            "token_uri": youtube.token_uri,
            "chunk_size": CHUNK,
            **settings,
        }
        paths = Paths(home)
        parsed = YouTubePlatform.parse_settings(table, path=paths.config, paths=paths)
        self.platform = YouTubePlatform(PlatformContext("youtube", parsed, paths, db))
        self.waits: list[float] = []
        self.platform.sleep = self.waits.append
        self.saved: list[dict[str, Any]] = []
        self.youtube = youtube

    @property
    def on_record(self) -> dict[str, Any]:
        """The handles the attempt last saved, as a later run reads them from the database."""
        return {k: v for k, v in self.saved[-1].items() if not k.startswith("_")}

    def request(
        self,
        video: Path,
        *,
        handles: dict[str, Any] | None = None,
        marker: str = MARKER,
        thumbnail: Path | None = None,
        publish_at: str = NOW,
        title: str = "Rain on Glass",
        ai_generated: bool = True,
    ) -> PostRequest:
        def save(new: dict[str, Any]) -> None:
            # What a user checks: the session is on record before any byte went out.
            self.saved.append({**new, "_chunks_sent": self.youtube.count("chunk")})

        episode = EpisodeView(
            id=7,
            channel="lofi",
            title=title,
            description="A rainy night, slowed down.",
            tags=("lofi", "rain", "study music"),
            videos={"landscape": str(video)},
            thumbnail=str(thumbnail) if thumbnail else None,
            ai_generated=ai_generated,
        )
        return PostRequest(
            post_id=1,
            attempt=1,
            marker=marker,
            channel="lofi",
            platform="youtube",
            episode=episode,
            publish_at=parse_instant(publish_at),
            handles=handles or {},
            save_handles=save,
        )

    def publish(self, video: Path, **kwargs: Any) -> Published | Failure:
        return self.platform.publish(self.request(video, **kwargs))


def uploaded(youtube: FakeYouTube) -> list[bytes]:
    return list(youtube.video_bytes.values())


def first_run_fails(home, db, youtube: FakeYouTube, video: Path, kind: str) -> dict[str, Any]:
    """A first run with no retry, whose try ends as a Failure of `kind`; the handles it left."""
    first = Run(home, db, youtube, retries=0)
    outcome = first.publish(video)
    assert isinstance(outcome, Failure) and outcome.kind == kind, outcome
    return first.on_record


def test_youtube_is_first_in_posting_order() -> None:
    assert next(iter(REGISTRY)) == "youtube"


def test_a_clean_upload(home, db, youtube, video, thumbnail) -> None:
    run = Run(home, db, youtube)
    outcome = run.publish(video, thumbnail=thumbnail)

    assert isinstance(outcome, Published), outcome
    assert outcome.url == f"https://www.youtube.com/watch?v={outcome.platform_post_id}"
    assert youtube.videos[outcome.platform_post_id]["snippet"]["channelId"] == CHANNEL_ID
    assert uploaded(youtube) == [video.read_bytes()]
    assert youtube.count("initiate") == 1
    assert youtube.chunk_starts() == [0, CHUNK, 2 * CHUNK]
    assert run.saved[0]["_chunks_sent"] == 0 and run.saved[0]["session_uri"]
    assert run.saved[-1]["video_id"] == outcome.platform_post_id
    resource = youtube.videos[outcome.platform_post_id]
    assert resource["snippet"]["title"] == "Rain on Glass"
    assert resource["snippet"]["categoryId"] == "10"
    assert resource["snippet"]["tags"][0] == MARKER
    assert resource["status"]["privacyStatus"] == "public"
    assert resource["status"]["containsSyntheticMedia"] is True
    assert resource["status"]["selfDeclaredMadeForKids"] is False
    assert "publishAt" not in resource["status"]
    assert youtube.thumbnails[outcome.platform_post_id] == thumbnail.stat().st_size
    # verified on the channel before it was called published
    assert youtube.kinds()[-1] == "playlistItems"
    project = project_of("123456789012-")
    assert quota_used(db, project, "insert") == 1
    assert quota_used(db, project, "units") == 50 + 2


def test_connection_dropped_after_the_last_chunk(home, db, youtube, video) -> None:
    youtube.drop_after("finish")
    run = Run(home, db, youtube)
    outcome = run.publish(video)

    assert isinstance(outcome, Published), outcome
    assert youtube.count("initiate") == 1
    assert youtube.count("probe") == 1
    assert len(youtube.videos) == 1
    assert outcome.platform_post_id in youtube.videos


def test_connection_dropped_mid_file_resumes(home, db, youtube, video) -> None:
    youtube.script["chunk"].extend([OK, "half"])
    run = Run(home, db, youtube)
    outcome = run.publish(video)

    assert isinstance(outcome, Published), outcome
    assert youtube.count("initiate") == 1
    starts = youtube.chunk_starts()
    assert starts.count(0) == 1  # resumed, not restarted
    assert starts[2] == CHUNK + CHUNK // 2  # the server kept half of the dropped chunk
    assert uploaded(youtube) == [video.read_bytes()]


@pytest.mark.parametrize("chunk", [0, 1, 2])
def test_a_connection_dropped_at_any_chunk_resumes_the_same_session(
    home, db, youtube, video, chunk
) -> None:
    """The chunk's bytes land, its answer never comes: the session is asked where it stands
    and the upload goes on from there; one video, the file's bytes exactly."""
    youtube.script["chunk"].extend([OK] * chunk + ["drop"])
    outcome = Run(home, db, youtube).publish(video)
    assert isinstance(outcome, Published), outcome
    assert youtube.count("initiate") == 1 and youtube.count("probe") == 1
    assert uploaded(youtube) == [video.read_bytes()]


def test_the_video_file_vanishing_mid_upload_is_resumed_once_it_is_back(
    home, db, youtube, video
) -> None:
    """The file is deleted while its first chunk is up and the second is cut: the try ends as a
    lost answer (the upload may be live), its session on record; once the file is back the next
    run asks the session before anything, resumes it and makes one video."""
    content = video.read_bytes()
    youtube.script["chunk"].extend([OK, "half"])
    first = Run(home, db, youtube)
    beats: list[int] = []

    def heartbeat() -> None:
        beats.append(1)
        if len(beats) == 1:
            video.unlink()  # after the first chunk

    request = replace(first.request(video), heartbeat=heartbeat)
    outcome = first.platform.publish(request)
    assert isinstance(outcome, Failure) and outcome.kind == "lost_answer", outcome
    assert "No such file" in outcome.reason
    handles = first.on_record
    video.write_bytes(content)

    second = Run(home, db, youtube)
    assert second.platform.find_attempt(second.request(video, handles=handles)) is None
    outcome = second.publish(video, handles=handles)
    assert isinstance(outcome, Published), outcome
    assert youtube.count("initiate") == 1 and youtube.chunk_starts().count(0) == 1
    assert uploaded(youtube) == [content]


def test_an_hour_long_retry_after_mid_file_leaves_the_session_to_the_next_run(
    home, db, youtube, video
) -> None:
    """A 429 asking for an hour on the second chunk: the run does not wait it out; the post is
    left for later with its session on record, and the next run resumes that session."""
    youtube.script["chunk"].append(OK)
    youtube.rate_limit("chunk", retry_after=3600)
    first = Run(home, db, youtube)
    outcome = first.publish(video)
    assert isinstance(outcome, Failure) and outcome.kind == "passing", outcome
    assert outcome.retry_after == 3600 and first.waits == []
    handles = first.on_record

    outcome = Run(home, db, youtube).publish(video, handles=handles)
    assert isinstance(outcome, Published), outcome
    assert youtube.count("initiate") == 1 and youtube.chunk_starts().count(0) == 1
    assert uploaded(youtube) == [video.read_bytes()]


def test_a_session_answer_without_its_address_is_asked_for_again(home, db, youtube, video) -> None:
    """YouTube answers the upload's first call 200 without a Location: no session to send to,
    so it is asked for once more; one video."""
    youtube.script["initiate"].append("status:200")
    run = Run(home, db, youtube)
    outcome = run.publish(video)
    assert isinstance(outcome, Published), outcome
    assert youtube.count("initiate") == 2 and uploaded(youtube) == [video.read_bytes()]


def test_a_crash_mid_file_resumes_in_the_next_run(home, db, youtube, video) -> None:
    youtube.script["chunk"].extend([OK, "half"])
    handles = first_run_fails(home, db, youtube, video, "passing")

    second = Run(home, db, youtube)
    outcome = second.publish(video, handles=handles)
    assert isinstance(outcome, Published), outcome
    assert youtube.count("initiate") == 1
    assert youtube.chunk_starts().count(0) == 1
    assert uploaded(youtube) == [video.read_bytes()]


def test_a_lost_last_answer_is_checked_by_the_next_run(home, db, youtube, video) -> None:
    youtube.drop_after("finish")
    handles = first_run_fails(home, db, youtube, video, "lost_answer")

    second = Run(home, db, youtube)
    found = second.platform.find_attempt(second.request(video, handles=handles))
    assert isinstance(found, Published)
    outcome = second.publish(video, handles=handles)
    assert isinstance(outcome, Published) and outcome == found
    assert youtube.count("initiate") == 1 and len(youtube.videos) == 1


def test_a_broken_answer_to_a_made_videos_probe_is_a_lost_answer(home, db, youtube, video):
    """The last chunk's answer lost; the next run's probe of the session answered 200 but cut
    short: the video may be made, so that try too ends as a lost answer (no traceback), and
    the run after it finds the video: one upload, one video."""
    youtube.drop_after("finish")
    youtube.script["probe"].append("garbled")
    handles = first_run_fails(home, db, youtube, video, "lost_answer")

    second = Run(home, db, youtube)
    outcome = second.publish(video, handles=handles)
    assert isinstance(outcome, Failure) and outcome.kind == "lost_answer", outcome
    assert "named no video" in outcome.reason

    third = Run(home, db, youtube)
    outcome = third.publish(video, handles=handles)
    assert isinstance(outcome, Published), outcome
    assert youtube.count("initiate") == 1 and len(youtube.videos) == 1
    assert outcome.platform_post_id in youtube.videos


def expired_session(youtube: FakeYouTube, video: Path, marker: str = MARKER) -> dict[str, Any]:
    return {
        "session_uri": f"{youtube.url}/upload/youtube/v3/videos?upload_id=gone",
        "size": video.stat().st_size,
        "marker": marker,
    }


def test_session_expired_and_the_video_is_on_the_channel(home, db, youtube, video) -> None:
    for index in range(60):  # the attempt sits on the second page of uploads
        youtube.add_video(tags=[MARKER] if index == 0 else ["other"])
    earlier = next(v for v, r in youtube.videos.items() if MARKER in r["snippet"]["tags"])
    run = Run(home, db, youtube)
    outcome = run.publish(video, handles=expired_session(youtube, video))

    assert isinstance(outcome, Published), outcome
    assert outcome.platform_post_id == earlier
    assert youtube.count("initiate") == 0
    assert youtube.count("chunk") == 0


def test_session_expired_and_not_on_the_channel_uploads_once(home, db, youtube, video) -> None:
    youtube.add_video(tags=["somebody-else"])
    run = Run(home, db, youtube)
    outcome = run.publish(video, handles=expired_session(youtube, video))

    assert isinstance(outcome, Published), outcome
    assert youtube.count("initiate") == 1
    assert uploaded(youtube) == [video.read_bytes()]


def test_session_expiring_mid_upload_is_not_uploaded_twice(home, db, youtube, video) -> None:
    youtube.script["chunk"].extend([OK, "status:404"])  # the session is gone after a chunk
    run = Run(home, db, youtube)
    outcome = run.publish(video)
    assert isinstance(outcome, Failure) and outcome.kind == "passing", outcome
    assert youtube.count("initiate") == 1 and youtube.videos == {}

    handles = run.on_record
    outcome = Run(home, db, youtube).publish(video, handles=handles)
    assert isinstance(outcome, Published), outcome
    assert len(youtube.videos) == 1


def test_quota_used_up_before_the_upload(home, db, youtube, video) -> None:
    run = Run(home, db, youtube, daily_uploads=1)
    assert isinstance(run.publish(video), Published)
    youtube.requests.clear()

    request = run.request(video, marker="ar-second")
    assert run.platform.limit_reason(request) == UPLOADS_USED
    outcome = run.platform.publish(request)
    assert outcome == Failure("limit", UPLOADS_USED, sent=False)
    assert youtube.requests == []  # nothing was sent


def test_the_quota_day_is_the_pacific_day(home, db, youtube, video, monkeypatch) -> None:
    monkeypatch.setenv("AUTORETTO_NOW", "2026-11-30T07:59:00Z")  # 23:59 in Los Angeles
    run = Run(home, db, youtube, daily_uploads=1)
    assert isinstance(run.publish(video), Published)
    assert pacific_day() == "2026-11-29"
    assert run.platform.limit_reason(run.request(video, marker="b")) == UPLOADS_USED

    monkeypatch.setenv("AUTORETTO_NOW", "2026-11-30T08:00:00Z")  # midnight Pacific
    assert run.platform.limit_reason(run.request(video, marker="b")) is None


def test_quota_exceeded_by_youtube_waits_for_the_next_day(home, db, youtube, video) -> None:
    youtube.script["initiate"].append("quota")
    run = Run(home, db, youtube)
    outcome = run.publish(video)

    assert outcome == Failure("limit", UPLOADS_USED)
    assert youtube.count("initiate") == 1  # not retried
    assert run.platform.limit_reason(run.request(video)) == UPLOADS_USED
    assert Run(home, db, youtube).publish(video) == Failure("limit", UPLOADS_USED, sent=False)
    assert youtube.count("initiate") == 1


def test_upload_limit_exceeded_is_a_limit(home, db, youtube, video) -> None:
    youtube.script["initiate"].append("upload_limit")
    outcome = Run(home, db, youtube).publish(video)
    assert outcome == Failure("limit", UPLOADS_USED)


def test_quota_running_out_after_the_upload_is_a_lost_answer(home, db, youtube, video) -> None:
    run = Run(home, db, youtube, daily_units=1)  # videos.list fits, playlistItems does not
    outcome = run.publish(video)

    assert isinstance(outcome, Failure) and outcome.kind == "lost_answer", outcome
    video_id = run.saved[-1]["video_id"]
    assert "uploaded as video" in outcome.reason and video_id in outcome.reason
    assert run.platform.limit_reason(run.request(video)) == UNITS_USED


def test_a_revoked_token_marks_the_account(home, db, youtube, video) -> None:
    youtube.revoke()
    run = Run(home, db, youtube)
    outcome = run.publish(video)

    assert isinstance(outcome, Failure) and outcome.kind == "needs_person", outcome
    assert "reconnect with `autoretto connect youtube`" in outcome.reason
    assert youtube.count("initiate") == 1 and youtube.count("token") == 1
    account = load_account(db, "youtube")
    assert account.state == "reconnect" and account.reason == outcome.reason
    assert not run.platform.is_connected()
    assert run.platform.not_ready_reason() == outcome.reason

    youtube.requests.clear()
    again = Run(home, db, youtube).publish(video)
    assert again == Failure("needs_person", outcome.reason, sent=False)
    assert youtube.requests == []  # nothing is sent from a reconnect account


def test_an_expired_token_is_refreshed_before_the_call(home, youtube, video) -> None:
    db = open_database(home / "autoretto.db")
    connect_account(db, home, youtube, expires_at="2026-11-29T18:02:00Z")  # < 5 min left
    outcome = Run(home, db, youtube).publish(video)
    assert isinstance(outcome, Published)
    assert youtube.kinds()[0] == "token"
    assert youtube.count("token") == 1


def test_server_errors_are_retried_with_backoff(home, db, youtube, video) -> None:
    youtube.fail_next("*", 503, retry_after=7, times=2)
    run = Run(home, db, youtube)
    outcome = run.publish(video)

    assert isinstance(outcome, Published), outcome
    assert youtube.count("initiate") == 3
    assert len(run.waits) == 2 and min(run.waits) >= 7  # Retry-After honoured
    assert len(youtube.videos) == 1


def test_invalid_metadata_rejects_the_episode(home, db, youtube, video) -> None:
    outcome = Run(home, db, youtube).publish(video, title="<>")
    assert outcome == Failure("rejected", "the episode has no title for YouTube", sent=False)
    assert youtube.requests == []


def test_not_verified_in_the_uploads_list_is_a_lost_answer(home, db, youtube, video) -> None:
    youtube.hide_new_uploads = True
    run = Run(home, db, youtube)
    outcome = run.publish(video)
    assert isinstance(outcome, Failure) and outcome.kind == "lost_answer", outcome
    assert len(run.waits) == 2  # verify_tries = 3

    youtube.hidden.clear()
    handles = run.on_record
    found = Run(home, db, youtube).platform.find_attempt(run.request(video, handles=handles))
    assert isinstance(found, Published) and found.platform_post_id == handles["video_id"]
    assert youtube.count("initiate") == 1


def test_find_attempt_matches_the_marker_only(home, db, youtube, video) -> None:
    youtube.add_video(tags=["ar-other-attempt"])
    run = Run(home, db, youtube)
    assert run.platform.find_attempt(run.request(video)) is None
    mine = youtube.add_video(tags=["lofi", MARKER])
    assert run.platform.find_attempt(run.request(video)) == Published(
        mine, f"https://www.youtube.com/watch?v={mine}"
    )


@pytest.mark.parametrize(
    ("slot", "privacy", "publish_at"),
    [
        ("2026-11-29T20:00:00Z", "private", "2026-11-29T20:00:00Z"),  # ahead: YouTube releases it
        ("2026-11-29T17:00:00Z", "public", None),  # a slot in the past is published now
    ],
)
def test_schedule_ahead(home, db, youtube, video, slot, privacy, publish_at) -> None:
    outcome = Run(home, db, youtube, schedule_ahead=True).publish(video, publish_at=slot)
    status = youtube.videos[outcome.platform_post_id]["status"]
    assert status["privacyStatus"] == privacy
    assert status.get("publishAt") == publish_at


def test_without_schedule_ahead_a_future_slot_is_not_scheduled(home, db, youtube, video) -> None:
    outcome = Run(home, db, youtube).publish(video, publish_at="2026-11-29T20:00:00Z")
    status = youtube.videos[outcome.platform_post_id]["status"]
    assert status["privacyStatus"] == "public" and "publishAt" not in status


def test_not_connected_says_how_to_connect(home, youtube, video) -> None:
    db = open_database(home / "autoretto.db")
    run = Run(home, db, youtube)
    assert not run.platform.is_connected()
    assert "autoretto connect youtube" in run.platform.not_ready_reason()
    outcome = run.publish(video)
    assert outcome.kind == "needs_person" and "autoretto connect youtube" in outcome.reason


def test_settings_are_checked(home) -> None:
    from autoretto.errors import ConfigError

    paths = Paths(home)
    for table in ({"privacy": "friends"}, {"chunk_size": 1000}, {"api_base": "http://x"}):
        with pytest.raises(ConfigError, match=r"platforms\.youtube"):
            YouTubePlatform.parse_settings(table, path=paths.config, paths=paths)


def test_the_tls_certificate_is_verified(home, db, youtube, video, monkeypatch) -> None:
    for name in ("REQUESTS_CA_BUNDLE", "HTTPLIB2_CA_CERTS", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    outcome = Run(home, db, youtube, retries=0).publish(video)
    assert isinstance(outcome, Failure) and outcome.kind == "passing"
    assert "SSLError" in outcome.reason
    assert youtube.count("initiate") == 0


# -- text limits --------------------------------------------------------------------------------


def test_fit_title() -> None:
    assert fit_title("a <b> " + "x" * 200).startswith("a b ")
    assert len(fit_title("x" * 200)) == 100


@given(st.text(max_size=6000))
def test_fit_description_stays_within_5000_bytes(text: str) -> None:
    fitted = fit_description(text)
    assert len(fitted.encode("utf-8")) <= DESCRIPTION_MAX_BYTES
    assert "<" not in fitted and ">" not in fitted


@given(st.lists(st.text(min_size=1, max_size=60), max_size=80))
def test_fit_tags_stays_within_500_characters(tags: list[str]) -> None:
    fitted = fit_tags(tags, reserved=["ar-marker"])
    assert fitted[0] == "ar-marker"
    total = sum(len(t) + (2 if " " in t else 0) for t in fitted) + len(fitted) - 1
    assert total <= TAGS_MAX_CHARS
    assert all("," not in t and "<" not in t and ">" not in t for t in fitted)


def test_httplib2_ca_certs_alone_is_honoured(home, db, youtube, video, monkeypatch) -> None:
    monkeypatch.delenv("REQUESTS_CA_BUNDLE")
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    assert isinstance(Run(home, db, youtube).publish(video), Published)


# -- what YouTube did with the privacy asked for -------------------------------------------------


def test_an_upload_youtube_keeps_private_is_published_but_private(home, db, youtube, video):
    """An API project that has not passed Google's audit: YouTube locks the upload private."""
    from autoretto.accounts import load_account

    youtube.lock_private = True
    run = Run(home, db, youtube)
    outcome = run.publish(video)

    assert isinstance(outcome, Published), outcome  # it is on YouTube, only not public
    assert youtube.videos[outcome.platform_post_id]["status"]["privacyStatus"] == "private"
    kept = run.saved[-1]["kept_private"]
    assert kept["video_id"] == outcome.platform_post_id and kept["privacy"] == "private"
    seen = load_account(db, "youtube").meta["kept_private"]
    assert seen["video_id"] == outcome.platform_post_id


def test_an_upload_youtube_makes_public_is_just_published(home, db, youtube, video):
    """The other documented outcome: an audited (or older) project's upload goes public."""
    from autoretto.accounts import load_account

    run = Run(home, db, youtube)
    outcome = run.publish(video)
    assert isinstance(outcome, Published)
    assert "kept_private" not in run.saved[-1]
    assert "kept_private" not in load_account(db, "youtube").meta


def test_a_private_channel_setting_is_no_lock(home, db, youtube, video):
    youtube.lock_private = True
    run = Run(home, db, youtube, privacy="private")
    assert isinstance(run.publish(video), Published)
    assert "kept_private" not in run.saved[-1]


def test_a_request_the_discovery_document_refuses_is_a_rejected_post(home, db, youtube, video):
    """The fake checks each call against the discovery document: a privacy YouTube does not
    have (here forced past the settings check) is refused, and the adapter reads that as a
    request to fix, with nothing uploaded."""
    run = Run(home, db, youtube)
    run.platform.settings = {**run.platform.settings, "privacy": "friends-only"}
    outcome = run.publish(video)

    assert isinstance(outcome, Failure) and outcome.kind == "rejected", outcome
    assert "privacyStatus" in outcome.reason, outcome.reason
    assert youtube.count("refused") == 1 and youtube.videos == {} and youtube.sessions == {}


def test_the_fake_refuses_what_the_discovery_document_does_not_have() -> None:
    from tests.fakes.youtube_contract import request_problem

    insert = "/upload/youtube/v3/videos"
    good = b'{"snippet": {"title": "t", "tags": ["a"]}, "status": {"privacyStatus": "public"}}'
    query = {"uploadType": "resumable", "part": "snippet,status"}
    assert request_problem("POST", insert, query, good) is None
    assert request_problem("POST", insert, {"uploadType": "resumable"}, good)[1] == "required"
    assert request_problem("POST", insert, {**query, "part": "snippet,fame"}, good)[1] == (
        "unknownPart"
    )
    assert request_problem("POST", insert, {**query, "notifySubscribers": "yes"}, good)[1] == (
        "invalidParameter"
    )
    bad_type = b'{"status": {"selfDeclaredMadeForKids": "no"}}'
    assert request_problem("POST", insert, query, bad_type)[1] == "invalid"
    unknown = b'{"status": {"note": "x"}}'
    assert "Unknown name" in request_problem("POST", insert, query, unknown)[2]


def test_an_upload_begun_by_an_earlier_try_is_finished_when_the_uploads_are_used(
    home, youtube, video
) -> None:
    """The slot's limit check sees the session the post's last attempt left: finishing it
    needs no new videos.insert, so a used-up uploads bucket does not hold it back."""
    from tests.platforms.harness import Bench

    settings = youtube.settings() + f"daily_uploads = 1\nchunk_size = {CHUNK}\n"
    bench = Bench(home, "youtube", settings=settings, clip=video)
    bench.connect(**youtube.account())
    youtube.script["chunk"].extend([OK, "status:503", "status:503", "status:503"])
    first = bench.send()
    assert first.outcome != "posted" and youtube.count("initiate") == 1

    second = bench.send(after=timedelta(hours=1))
    assert second.outcome == "posted", second
    assert youtube.count("initiate") == 1 and youtube.visible_copies() == 1
    assert uploaded(youtube) == [video.read_bytes()]
