"""X's replies (issue 28) against the fake X API: a post's conversation read by recent search
from a cursor, each call's posts counted before it is made; replies sent once, found again
among the account's own posts after a lost answer; every refusal named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests

from autoretto.accounts import save_account
from autoretto.config import Paths
from autoretto.ledger.store import open_database
from autoretto.platforms.base import (
    Comment,
    Failure,
    LimitReached,
    NeedsPerson,
    PlatformContext,
    Published,
    ReplyRequest,
)
from autoretto.platforms.x import USAGE, XPlatform, pause
from autoretto.retry import RetryPolicy
from tests.fakes import x_server
from tests.fakes.x_server import USER_ID, USERNAME

NOW = "2026-11-29T10:05:00Z"
TODAY = "2026-11-29"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AUTORETTO_NOW", NOW)
    server = x_server.start()
    yield server
    server.close()


@pytest.fixture
def db(home: Path, fake: Any) -> Any:
    home.mkdir(parents=True, exist_ok=True)
    database = open_database(home / "autoretto.db")
    save_account(
        database,
        home,
        platform="x",
        account_id=USER_ID,
        name="@" + USERNAME,
        tokens=fake.tokens(),
        meta={"username": USERNAME},
    )
    return database


def platform(home: Path, db: Any, fake: Any, **settings: Any) -> XPlatform:
    table = {
        "api_base": fake.url,
        "token_uri": fake.token_uri,
        "auth_uri": f"{fake.url}/i/oauth2/authorize",
        "client_id": x_server.CLIENT_ID,
        "timeout": 30.0,
        **settings,
    }
    paths = Paths(home)
    parsed = XPlatform.parse_settings(table, path=paths.config, paths=paths)
    retry = RetryPolicy(attempts=1, first_wait=0)
    made = XPlatform(PlatformContext("x", parsed, paths, db, retry=retry))
    made.sleep = lambda seconds: None
    return made


def our_post(fake: Any) -> str:
    """One of the account's posts, as a publish made it."""
    with fake.lock:
        post = {"id": fake._next_id(), "text": "Rain on Glass", "media_keys": [], "created_at": NOW}
        fake.posts.append(post)
    return post["id"]


def read(x: XPlatform, post_id: str, cursor: str | None = None):
    pages = list(x.read_comments(post_id, cursor))
    return [c for page in pages for c in page.comments], [page.cursor for page in pages]


def reply_request(comment: Comment, text: str, handles: dict | None = None) -> ReplyRequest:
    saved: list[dict] = []
    request = ReplyRequest(
        reply_id=1,
        attempt=1,
        marker="autoretto-0123456789abcdef",
        channel="lofi",
        platform="x",
        comment=comment,
        text=text,
        handles=handles or {},
        save_handles=saved.append,
    )
    object.__setattr__(request, "saved", saved)  # what the attempt's record received
    return request


def test_the_platform_says_what_it_can_do() -> None:
    assert XPlatform.comments == "reply" and "search" in XPlatform.comments_note
    assert XPlatform.comment_scope == "tweet.read tweet.write"
    assert XPlatform.reply_length == 280 and XPlatform.reply_links is False
    assert 0 < XPlatform.replies_per_day < 2400


def test_a_conversation_is_read_in_counted_pages(home, db, fake) -> None:
    post = our_post(fake)
    first = fake.add_reply(post, "Love this", username="ana", author_id="101")
    for number in range(11):
        fake.add_reply(post, f"reply {number}", username=f"u{number}", author_id=str(200 + number))
    nested = fake.add_reply(first, "Me too", username="bo", author_id="102")

    comments, cursors = read(platform(home, db, fake, read_page=10), post)

    assert fake.count("search") == 2  # 13 replies, 10 a page
    assert len(comments) == 13 and nested in {c.id for c in comments}
    ana = next(c for c in comments if c.id == first)
    assert (ana.author, ana.author_id, ana.post_id, ana.mine) == ("@ana", "101", post, False)
    assert ana.ref == {"conversation": post}
    assert cursors == [None, nested]  # the newest id, kept once the whole read is stored
    asked = fake.of_kind("search")[0]["query"]
    assert asked["query"] == f"conversation_id:{post}" and asked["expansions"] == "author_id"
    assert post not in {c.id for c in comments}  # the search lists the post itself too
    # counted before each call (10 each), what did not come back given back after: the 13
    # replies and the post, each a post read
    assert USAGE.used(db, USER_ID, "reads", TODAY) == 14


def test_the_next_read_continues_from_the_cursor(home, db, fake) -> None:
    post = our_post(fake)
    fake.add_reply(post, "First")
    _, cursors = read(platform(home, db, fake), post)
    new = fake.add_reply(post, "Second")

    comments, later = read(platform(home, db, fake), post, cursors[-1])

    assert [c.id for c in comments] == [new] and later == [new]
    assert fake.of_kind("search")[-1]["query"]["since_id"] == cursors[-1]


def test_our_own_replies_are_read_as_mine(home, db, fake) -> None:
    post = our_post(fake)
    theirs = fake.add_reply(post, "Nice")
    comments, _ = read(platform(home, db, fake), post)
    outcome = platform(home, db, fake).reply(reply_request(comments[0], "Thanks!"))
    assert isinstance(outcome, Published)

    again, _ = read(platform(home, db, fake), post, theirs)

    assert [(c.id, c.mine) for c in again] == [(outcome.platform_post_id, True)]


def test_reads_stop_at_the_daily_allowance_before_any_call(home, db, fake) -> None:
    post = our_post(fake)
    fake.add_reply(post, "Hi")
    USAGE.charge(db, USER_ID, "reads", 495, 500, TODAY)

    with pytest.raises(LimitReached, match="daily_reads"):
        read(platform(home, db, fake), post)
    assert fake.count("search") == 0


def test_an_app_without_search_says_so(home, db, fake) -> None:
    post = our_post(fake)
    with pytest.raises(LimitReached, match="read_access"):
        read(platform(home, db, fake, read_access="free"), post)
    assert fake.count("search") == 0

    fake.search_enrolled = False
    with pytest.raises(LimitReached, match="does not include search"):
        read(platform(home, db, fake), post)
    assert USAGE.used(db, USER_ID, "reads", TODAY) == 0  # a refused call is given back


def test_a_token_without_tweet_read_names_the_scope(home, db, fake) -> None:
    post = our_post(fake)
    fake.scopes.discard("tweet.read")
    with pytest.raises(NeedsPerson, match=r"tweet\.read") as refused:
        read(platform(home, db, fake), post)
    assert "autoretto connect x" in refused.value.reason


def test_a_rate_limited_read_waits_for_its_window(home, db, fake) -> None:
    post = our_post(fake)
    fake.rate_limit("search", retry_after=900)
    with pytest.raises(LimitReached) as limited:
        read(platform(home, db, fake), post)
    assert 800 < (limited.value.retry_after or 0) <= 900


def test_reads_wait_while_x_is_paused(home, db, fake) -> None:
    post = our_post(fake)
    from autoretto.clock import parse_instant

    pause(db, parse_instant(NOW), 120, "credits depleted")
    with pytest.raises(LimitReached, match="paused"):
        read(platform(home, db, fake), post)
    assert fake.count("search") == 0


# -- replies ------------------------------------------------------------------------------------


def a_comment(home, db, fake, text: str = "Love this") -> Comment:
    post = our_post(fake)
    fake.add_reply(post, text)
    comments, _ = read(platform(home, db, fake), post)
    return comments[0]


def test_a_reply_answers_the_comment(home, db, fake) -> None:
    comment = a_comment(home, db, fake)
    request = reply_request(comment, "Thank you, Ana!")

    outcome = platform(home, db, fake).reply(request)

    assert isinstance(outcome, Published), outcome
    assert outcome.url == f"https://x.com/{USERNAME}/status/{outcome.platform_post_id}"
    made = fake.replies_to(comment.id)
    assert [(r["id"], r["text"]) for r in made] == [(outcome.platform_post_id, "Thank you, Ana!")]
    body = fake.of_kind("create")[0]["body"]
    assert body == {"text": "Thank you, Ana!", "reply": {"in_reply_to_tweet_id": comment.id}}
    assert request.saved[0]["create_sent"] == NOW  # on record before the call
    assert USAGE.used(db, "installation", "replies", TODAY) == 1


@pytest.mark.parametrize("fault", ["drop", "stored:500"])
def test_a_lost_answer_is_found_again_never_sent_twice(home, db, fake, fault) -> None:
    comment = a_comment(home, db, fake)
    fake.script["create"].append(fault)
    request = reply_request(comment, "Thanks!")

    outcome = platform(home, db, fake).reply(request)
    assert isinstance(outcome, Failure) and outcome.kind == "lost_answer", outcome

    later = reply_request(comment, "Thanks!", handles=request.saved[-1])
    found = platform(home, db, fake).find_reply(later)
    assert isinstance(found, Published)
    assert [r["id"] for r in fake.replies_to(comment.id)] == [found.platform_post_id]
    assert fake.count("create") == 1


def test_a_lost_answer_is_found_whatever_x_dated_it(home, db, fake) -> None:
    """X dates a post by its own clock: the look does not rely on it agreeing with ours."""
    comment = a_comment(home, db, fake)
    fake.now = "2026-11-29T08:00:00Z"  # two hours behind this run's clock
    fake.drop_after("create")
    request = reply_request(comment, "Thanks!")
    assert platform(home, db, fake).reply(request).kind == "lost_answer"

    found = platform(home, db, fake).find_reply(reply_request(comment, "Thanks!"))

    assert isinstance(found, Published) and len(fake.replies_to(comment.id)) == 1


def test_find_reply_is_none_when_nothing_went_out(home, db, fake) -> None:
    comment = a_comment(home, db, fake)
    assert platform(home, db, fake).find_reply(reply_request(comment, "Thanks!")) is None


def test_a_duplicate_refusal_finds_the_reply_already_there(home, db, fake) -> None:
    comment = a_comment(home, db, fake)
    first = platform(home, db, fake).reply(reply_request(comment, "Thanks!"))

    again = platform(home, db, fake).reply(reply_request(comment, "Thanks!"))

    assert again == first and len(fake.replies_to(comment.id)) == 1


def test_a_deleted_comment_is_gone(home, db, fake) -> None:
    comment = a_comment(home, db, fake)
    fake.delete_post(comment.id)

    outcome = platform(home, db, fake).reply(reply_request(comment, "Thanks"))

    assert isinstance(outcome, Failure) and outcome.kind == "gone", outcome
    assert USAGE.used(db, "installation", "replies", TODAY) == 0  # nothing made, nothing spent


def test_a_rate_limited_reply_waits_without_a_try(home, db, fake) -> None:
    comment = a_comment(home, db, fake)
    fake.rate_limit("create", retry_after=600)

    outcome = platform(home, db, fake).reply(reply_request(comment, "Thanks"))

    assert isinstance(outcome, Failure) and outcome.kind == "limit", outcome
    assert fake.replies_to(comment.id) == []


def test_the_daily_reply_cap_stops_before_the_call(home, db, fake) -> None:
    comment = a_comment(home, db, fake)
    USAGE.charge(db, "installation", "replies", 2, 2, TODAY)

    outcome = platform(home, db, fake, reply_daily_cap=2).reply(reply_request(comment, "Hi"))

    assert isinstance(outcome, Failure) and outcome.kind == "limit"
    assert "reply_daily_cap" in outcome.reason and fake.count("create") == 0


def test_a_token_without_tweet_write_names_the_scope(home, db, fake) -> None:
    comment = a_comment(home, db, fake)
    fake.scopes.discard("tweet.write")

    outcome = platform(home, db, fake).reply(reply_request(comment, "Thanks"))

    assert isinstance(outcome, Failure) and outcome.kind == "needs_person"
    assert "tweet.write" in outcome.reason


def test_a_revoked_grant_asks_for_a_person(home, db, fake) -> None:
    comment = a_comment(home, db, fake)
    fake.revoke()

    outcome = platform(home, db, fake).reply(reply_request(comment, "Thanks"))

    assert isinstance(outcome, Failure) and outcome.kind == "needs_person", outcome
    assert fake.replies_to(comment.id) == []


def test_credits_exhausted_pause_x(home, db, fake) -> None:
    comment = a_comment(home, db, fake)
    fake.script["create"].append("credits")

    outcome = platform(home, db, fake).reply(reply_request(comment, "Thanks"))

    assert isinstance(outcome, Failure) and outcome.kind == "limit"
    with pytest.raises(LimitReached, match="paused"):
        read(platform(home, db, fake), comment.post_id)


# -- the fake keeps to X's description ------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        {"query": "conversation_id:1", "tweet.fields": "bogus"},
        {"query": "conversation_id:1", "max_results": "5"},
        {"query": "conversation_id:1", "sort": "recency"},
        {"max_results": "10"},
        {"query": "conversation_id:1", "since_id": "1", "start_time": "2026-11-29T00:00:00Z"},
    ],
)
def test_the_fake_refuses_a_search_that_breaks_the_description(fake, query) -> None:
    token = fake.tokens()["access_token"]
    answer = requests.get(
        fake.url + "/2/tweets/search/recent",
        params=query,
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert answer.status_code == 400
    assert answer.json()["type"] == "https://api.x.com/2/problems/invalid-request"


def test_the_fake_refuses_a_reply_body_that_breaks_the_description(fake) -> None:
    token = fake.tokens()["access_token"]
    answer = requests.post(
        fake.url + "/2/tweets",
        json={"text": "hi", "reply": {"in_reply_to_tweet_id": 5}},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert answer.status_code == 400 and fake.posts == []
