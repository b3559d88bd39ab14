"""YouTube's comments (issue 28) against the local fake over TLS: read in counted pages that
continue where the last read stopped, replies sent once and found again after a lost answer,
and every refusal named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests

from autoretto.accounts import load_account, update_meta
from autoretto.config import Paths
from autoretto.ledger.store import open_database
from autoretto.platforms.base import (
    Comment,
    Failure,
    LimitReached,
    NeedsPerson,
    PassingError,
    PlatformContext,
    Published,
    ReplyRequest,
)
from autoretto.platforms.youtube import (
    QUOTA,
    SCOPE_EDIT,
    SCOPE_READONLY,
    SCOPE_UPLOAD,
    UNITS_KEPT_FROM_STATS,
    YouTubePlatform,
    project_of,
    quota_used,
)
from tests.fakes.youtube_server import (
    CHANNEL_ID,
    CLIENT_ID,
    FakeYouTube,
    Tls,
    connect_account,
    make_tls,
    tls_environment,
)

NOW = "2026-11-29T18:00:00Z"
PROJECT = project_of(CLIENT_ID)


@pytest.fixture(scope="module")
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
def video(youtube: FakeYouTube) -> str:
    return youtube.add_video(tags=[], title="Rain on Glass")


def platform(home: Path, db: Any, youtube: FakeYouTube, **settings: Any) -> YouTubePlatform:
    table = {"api_base": youtube.url, "token_uri": youtube.token_uri, "retries": 0, **settings}
    paths = Paths(home)
    parsed = YouTubePlatform.parse_settings(table, path=paths.config, paths=paths)
    made = YouTubePlatform(PlatformContext("youtube", parsed, paths, db))
    made.sleep = lambda seconds: None
    return made


def read(youtube_platform: YouTubePlatform, video: str, cursor: str | None = None):
    """(every comment read, the cursor of each page) of one read."""
    pages = list(youtube_platform.read_comments(video, cursor))
    return [c for page in pages for c in page.comments], [page.cursor for page in pages]


def units(db: Any) -> int:
    """The project's units counted today."""
    return quota_used(db, PROJECT, "units")


def reply_request(comment: Comment, text: str, saved: list[dict] | None = None) -> ReplyRequest:
    return ReplyRequest(
        reply_id=1,
        attempt=1,
        marker="autoretto-0123456789abcdef",
        channel="lofi",
        platform="youtube",
        comment=comment,
        text=text,
        save_handles=(saved.append if saved is not None else lambda handles: None),
    )


def test_the_platform_says_what_it_can_do() -> None:
    assert YouTubePlatform.comments == "reply"
    assert YouTubePlatform.comment_scope == SCOPE_EDIT
    assert YouTubePlatform.reply_links is False and YouTubePlatform.reply_disclosure is None
    assert YouTubePlatform.replies_per_day > 0 and YouTubePlatform.reply_length == 10000


def test_connect_asks_for_the_comment_scope() -> None:
    assert YouTubePlatform.sign_in_scopes({}, {}) == [SCOPE_UPLOAD, SCOPE_READONLY, SCOPE_EDIT]


def test_a_read_takes_every_comment_and_reply_one_counted_call_a_page(
    home, db, youtube, video
) -> None:
    first = youtube.add_comment(video, "Love this one", author="Ana")
    youtube.add_comment(video, "Same here", author="Bo", author_channel="UCbo", parent=first)
    for number in range(119):
        youtube.add_comment(video, f"comment {number}", author_channel=f"UC{number}")
    newest = youtube.add_comment(video, "What is the track at 2:10?", author="Cy")

    comments, cursors = read(platform(home, db, youtube), video)

    assert youtube.count("commentThreads") == 2  # 121 threads, 100 a page
    assert units(db) == 2  # one unit a call, each counted
    assert len(comments) == 122 and len({c.id for c in comments}) == 122
    reply = next(c for c in comments if c.text == "Same here")
    assert (reply.parent_id, reply.author, reply.author_id) == (first, "Bo", "UCbo")
    assert reply.ref == {"thread": first, "video": video}
    top = next(c for c in comments if c.id == newest)
    assert (top.parent_id, top.post_id, top.mine) == (None, video, False)
    # the cursor is kept only once the whole read is stored: the last page carries it
    assert cursors == [None, youtube.comment_resources[newest]["snippet"]["publishedAt"]]
    asked = youtube.of_kind("commentThreads")[0]["query"]
    assert asked["order"] == "time" and asked["textFormat"] == "plainText"
    assert asked["part"] == "snippet,replies" and asked["videoId"] == video


def test_the_next_read_continues_from_the_cursor(home, db, youtube, video) -> None:
    for number in range(120):
        youtube.add_comment(video, f"old {number}")
    _, cursors = read(platform(home, db, youtube), video)
    calls = youtube.count("commentThreads")
    new = youtube.add_comment(video, "A new one")

    comments, later = read(platform(home, db, youtube), video, cursors[-1])

    assert youtube.count("commentThreads") == calls + 1  # stops at the first older thread
    assert new in {c.id for c in comments} and len(comments) <= 2  # the boundary one at most
    assert later == [youtube.comment_resources[new]["snippet"]["publishedAt"]]


def test_replies_beyond_the_thread_are_listed_and_our_own_are_mine(
    home, db, youtube, video
) -> None:
    top = youtube.add_comment(video, "Great mix")
    for number in range(6):
        youtube.add_comment(video, f"reply {number}", author_channel=f"UCr{number}", parent=top)
    youtube.add_comment(
        video, "Thank you!", author="Rain Lofi", author_channel=CHANNEL_ID, parent=top
    )

    comments, _ = read(platform(home, db, youtube), video)

    assert youtube.count("comments") == 1  # 7 replies, the thread carries 5
    assert len(comments) == 8
    assert [c.mine for c in comments if c.text == "Thank you!"] == [True]
    assert units(db) == 2


def test_a_read_keeps_the_units_of_posting(home, db, youtube, video) -> None:
    youtube.add_comment(video, "Hello")
    QUOTA.charge(db, PROJECT, "units", 10000 - UNITS_KEPT_FROM_STATS, 10000)

    with pytest.raises(LimitReached, match="kept for posting"):
        read(platform(home, db, youtube), video)
    assert youtube.count("commentThreads") == 0


def test_a_call_refused_still_counts_its_unit(home, db, youtube, video) -> None:
    youtube.fail_next("commentThreads", 503)
    with pytest.raises(PassingError):
        read(platform(home, db, youtube), video)
    assert youtube.count("commentThreads") == 1 and units(db) == 1


def test_a_missing_scope_names_it_and_leaves_the_account_connected(
    home, db, youtube, video
) -> None:
    youtube.comment_scope = False
    with pytest.raises(NeedsPerson, match=r"youtube\.force-ssl") as refused:
        read(platform(home, db, youtube), video)
    assert "autoretto connect youtube" in refused.value.reason
    assert load_account(db, "youtube").state == "connected"  # uploads go on


def test_an_account_connected_without_the_scope_is_told_before_any_call(
    home, db, youtube, video
) -> None:
    update_meta(db, load_account(db, "youtube"), {"scopes": [SCOPE_UPLOAD, SCOPE_READONLY]})
    with pytest.raises(NeedsPerson, match=r"youtube\.force-ssl"):
        read(platform(home, db, youtube), video)
    assert youtube.count("commentThreads") == 0 and units(db) == 0


def test_a_rate_limited_read_waits_for_its_window(home, db, youtube, video) -> None:
    youtube.rate_limit("commentThreads", retry_after=900)
    with pytest.raises(LimitReached) as limited:
        read(platform(home, db, youtube), video)
    assert limited.value.retry_after == 900


def test_comments_turned_off_read_as_none(home, db, youtube, video) -> None:
    youtube.script["commentThreads"].append("comments_off")
    youtube.add_comment(video, "hidden")
    comments, cursors = read(platform(home, db, youtube), video)
    assert comments == [] and cursors == [None]


# -- replies ------------------------------------------------------------------------------------


def comment_on(youtube: FakeYouTube, home, db, video: str, text: str = "Love it") -> Comment:
    youtube.add_comment(video, text)
    comments, _ = read(platform(home, db, youtube), video)
    return next(c for c in comments if c.text == text)


def test_a_reply_goes_under_its_comment_counted_first(home, db, youtube, video) -> None:
    comment = comment_on(youtube, home, db, video)
    before = units(db)
    saved: list[dict] = []

    outcome = platform(home, db, youtube).reply(reply_request(comment, "Thank you, Ana!", saved))

    assert isinstance(outcome, Published), outcome
    replies = youtube.replies_to(comment.id)
    assert [r["snippet"]["textOriginal"] for r in replies] == ["Thank you, Ana!"]
    assert outcome.platform_post_id == replies[0]["id"]
    assert outcome.url == f"https://www.youtube.com/watch?v={video}&lc={replies[0]['id']}"
    assert units(db) == before + 50
    assert saved and saved[0]["reply_sent"] == NOW  # on record before the call
    sent = youtube.of_kind("comments.insert")[0]
    assert sent["query"]["part"] == "snippet"
    assert sent["body"] == {"snippet": {"parentId": comment.id, "textOriginal": "Thank you, Ana!"}}


def test_a_reply_to_a_reply_goes_under_the_top_level_comment(home, db, youtube, video) -> None:
    top = youtube.add_comment(video, "First")
    youtube.add_comment(video, "Agreed", author_channel="UCbo", parent=top)
    comments, _ = read(platform(home, db, youtube), video)
    answered = next(c for c in comments if c.text == "Agreed")

    outcome = platform(home, db, youtube).reply(reply_request(answered, "Thanks, Bo"))

    assert isinstance(outcome, Published)
    assert [r["snippet"]["textOriginal"] for r in youtube.replies_to(top)] == ["Thanks, Bo"]


@pytest.mark.parametrize("fault", ["drop", "stored:500"])
def test_a_lost_answer_is_found_again_never_sent_twice(home, db, youtube, video, fault) -> None:
    comment = comment_on(youtube, home, db, video)
    youtube.script["comments.insert"].append(fault)
    request = reply_request(comment, "Thank you!")

    outcome = platform(home, db, youtube).reply(request)
    assert isinstance(outcome, Failure) and outcome.kind == "lost_answer", outcome

    found = platform(home, db, youtube).find_reply(request)
    assert isinstance(found, Published)
    assert [r["id"] for r in youtube.replies_to(comment.id)] == [found.platform_post_id]
    assert youtube.count("comments.insert") == 1


def test_find_reply_is_none_when_it_never_went_out(home, db, youtube, video) -> None:
    comment = comment_on(youtube, home, db, video)
    youtube.add_comment(video, "Thank you!", author_channel="UCsomeone", parent=comment.id)
    assert platform(home, db, youtube).find_reply(reply_request(comment, "Thank you!")) is None


def test_a_deleted_comment_is_gone(home, db, youtube, video) -> None:
    comment = comment_on(youtube, home, db, video)
    youtube.delete_comment(comment.id)

    outcome = platform(home, db, youtube).reply(reply_request(comment, "Thanks"))

    assert isinstance(outcome, Failure) and outcome.kind == "gone", outcome
    assert youtube.count("comments.insert") == 1  # asked once, never retried


def test_a_rate_limited_reply_waits_without_a_try(home, db, youtube, video) -> None:
    comment = comment_on(youtube, home, db, video)
    youtube.rate_limit("comments.insert", retry_after=120)

    outcome = platform(home, db, youtube).reply(reply_request(comment, "Thanks"))

    assert isinstance(outcome, Failure) and outcome.kind == "limit", outcome
    assert outcome.retry_after == 120 and youtube.replies_to(comment.id) == []


def test_a_reply_without_units_left_is_not_sent(home, db, youtube, video) -> None:
    comment = comment_on(youtube, home, db, video)
    QUOTA.charge(db, PROJECT, "units", 10000 - UNITS_KEPT_FROM_STATS - 10, 10000)

    outcome = platform(home, db, youtube).reply(reply_request(comment, "Thanks"))

    assert isinstance(outcome, Failure) and outcome.kind == "limit", outcome
    assert youtube.count("comments.insert") == 0


def test_a_revoked_grant_asks_for_a_person(home, db, youtube, video) -> None:
    comment = comment_on(youtube, home, db, video)
    youtube.revoke()

    outcome = platform(home, db, youtube).reply(reply_request(comment, "Thanks"))

    assert isinstance(outcome, Failure) and outcome.kind == "needs_person", outcome
    assert "autoretto connect youtube" in outcome.reason
    assert youtube.replies_to(comment.id) == []


def test_a_reply_without_the_scope_names_it(home, db, youtube, video) -> None:
    comment = comment_on(youtube, home, db, video)
    youtube.comment_scope = False

    outcome = platform(home, db, youtube).reply(reply_request(comment, "Thanks"))

    assert isinstance(outcome, Failure) and outcome.kind == "needs_person"
    assert SCOPE_EDIT in outcome.reason


# -- the fake keeps to YouTube's description ----------------------------------------------------


def _get(youtube: FakeYouTube, tls: Tls, path: str, **query: str) -> requests.Response:
    token = youtube.issue_tokens()["access_token"]
    return requests.get(
        youtube.url + path,
        params=query,
        headers={"Authorization": f"Bearer {token}"},
        verify=str(tls.ca),
        timeout=10,
    )


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ({"part": "snippet,bogus", "videoId": "v"}, "unknownPart"),
        ({"part": "snippet", "videoId": "v", "order": "newest"}, "invalidParameter"),
        ({"part": "snippet", "videoId": "v", "maxResults": "ten"}, "invalidParameter"),
        ({"videoId": "v"}, "required"),
        ({"part": "snippet", "videoId": "v", "sort": "time"}, "badRequest"),
    ],
)
def test_the_fake_refuses_a_comment_thread_list_that_breaks_the_description(
    youtube, tls, query, reason
) -> None:
    answer = _get(youtube, tls, "/youtube/v3/commentThreads", **query)
    assert answer.status_code == 400
    assert answer.json()["error"]["errors"][0]["reason"] == reason


def test_the_fake_refuses_a_comment_insert_that_breaks_the_description(youtube, tls) -> None:
    token = youtube.issue_tokens()["access_token"]
    answer = requests.post(
        youtube.url + "/youtube/v3/comments",
        params={"part": "snippet"},
        data=json.dumps({"snippet": {"parentId": 7, "textOriginal": "hi"}}),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        verify=str(tls.ca),
        timeout=10,
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["errors"][0]["reason"] == "invalid"
    assert youtube.count("comments.insert") == 0
    unknown = _get(youtube, tls, "/youtube/v3/comments", part="snippet", parentId="x", order="time")
    assert unknown.json()["error"]["errors"][0]["reason"] == "badRequest"
