"""Facebook's comments (issue 28) against the fake Graph API: a reel's comments read with
`after` cursors, each call counted before it is made; replies made as the Page once, found
again after a lost answer; every refusal named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import requests

from autoretto.accounts import load_account, save_account
from autoretto.config import Paths
from autoretto.ledger.store import open_database
from autoretto.platforms.base import (
    Comment,
    CommentGone,
    Failure,
    LimitReached,
    NeedsPerson,
    PlatformContext,
    Published,
    ReplyRequest,
)
from autoretto.platforms.facebook import COMMENT_USAGE, SCOPES, FacebookPlatform
from autoretto.retry import RetryPolicy
from tests.fakes.facebook_server import PAGE_ID, PAGE_TOKEN, VERSION, FakeFacebook

NOW = "2026-11-29T10:00:00Z"
TODAY = "2026-11-29"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AUTORETTO_NOW", NOW)
    with FakeFacebook() as server:
        yield server


@pytest.fixture
def db(home: Path, fake: FakeFacebook) -> Any:
    home.mkdir(parents=True, exist_ok=True)
    database = open_database(home / "autoretto.db")
    save_account(database, home, platform="facebook", **fake.account())
    return database


@pytest.fixture
def reel(fake: FakeFacebook) -> str:
    return fake.add_reel("Rain on Glass")


def platform(home: Path, db: Any, fake: FakeFacebook, **settings: Any) -> FacebookPlatform:
    table = {
        "graph_base": fake.url,
        "rupload_base": fake.url,
        "auth_uri": f"{fake.url}/dialog/oauth",
        "graph_version": VERSION,
        "poll_wait": "0s",
        **settings,
    }
    paths = Paths(home)
    parsed = FacebookPlatform.parse_settings(table, path=paths.config, paths=paths)
    retry = RetryPolicy(attempts=1, first_wait=0)
    made = FacebookPlatform(PlatformContext("facebook", parsed, paths, db, retry=retry))
    made.sleep = lambda seconds: None
    return made


def read(facebook: FacebookPlatform, reel: str, cursor: str | None = None):
    pages = list(facebook.read_comments(reel, cursor))
    return [c for page in pages for c in page.comments], [page.cursor for page in pages]


def reply_request(comment: Comment, text: str, handles: dict | None = None) -> ReplyRequest:
    saved: list[dict] = []
    request = ReplyRequest(
        reply_id=1,
        attempt=1,
        marker="autoretto-0123456789abcdef",
        channel="lofi",
        platform="facebook",
        comment=comment,
        text=text,
        handles=handles or {},
        save_handles=saved.append,
    )
    object.__setattr__(request, "saved", saved)  # what the attempt's record received
    return request


def calls(db: Any) -> int:
    return COMMENT_USAGE.used(db, PAGE_ID, "comment_calls", TODAY)


def test_the_platform_says_what_it_can_do() -> None:
    assert FacebookPlatform.comments == "reply" and FacebookPlatform.reply_links is True
    for scope in ("pages_read_engagement", "pages_read_user_content", "pages_manage_engagement"):
        assert scope in FacebookPlatform.comment_scope and scope in SCOPES  # asked at connect


def test_a_read_takes_comments_and_replies_in_counted_pages(home, db, fake, reel) -> None:
    first = fake.add_comment(reel, "Love this", author="Ana", author_id="555")
    reply = fake.add_comment(first, "Me too", author="Bo", author_id="556")
    for number in range(3):
        fake.add_comment(reel, f"comment {number}", author_id=str(600 + number))

    comments, cursors = read(platform(home, db, fake, comment_page=2), reel)

    assert fake.count("comments") == 3 and calls(db) == 3  # 5 comments, 2 a page
    assert len(comments) == 5
    ana = comments[0]
    assert (ana.id, ana.author, ana.author_id, ana.parent_id) == (first, "Ana", "555", None)
    assert ana.published_at and ana.published_at.endswith("Z")
    bo = next(c for c in comments if c.id == reply)
    assert (bo.parent_id, bo.post_id, bo.mine) == (first, reel, False)
    # each page carries its own `after`: a read cut short goes on from the last page stored
    assert all(cursors) and len(set(cursors)) == 3
    asked = fake.of_kind("comments")[0]["query"]
    assert asked["filter"] == "stream" and asked["order"] == "chronological"
    assert fake.of_kind("comments")[1]["query"]["after"] == cursors[0]


def test_the_next_read_continues_from_the_cursor(home, db, fake, reel) -> None:
    fake.add_comment(reel, "First")
    _, cursors = read(platform(home, db, fake), reel)
    new = fake.add_comment(reel, "Second")

    comments, later = read(platform(home, db, fake), reel, cursors[-1])

    assert [c.id for c in comments] == [new] and later[-1] != cursors[-1]
    nothing, same = read(platform(home, db, fake), reel, later[-1])
    assert nothing == [] and same == [later[-1]]  # no new comment: the cursor stays


def test_reads_stop_at_the_daily_count_before_any_call(home, db, fake, reel) -> None:
    COMMENT_USAGE.charge(db, PAGE_ID, "comment_calls", 5, 5, TODAY)
    with pytest.raises(LimitReached, match="comment_reads"):
        read(platform(home, db, fake, comment_reads=5), reel)
    assert fake.count("comments") == 0


def test_a_missing_permission_names_the_scopes(home, db, fake, reel) -> None:
    fake.granted.discard("pages_read_engagement")
    with pytest.raises(NeedsPerson, match="pages_read_engagement") as refused:
        read(platform(home, db, fake), reel)
    assert "autoretto connect facebook" in refused.value.reason
    assert load_account(db, "facebook").state == "connected"  # reels still post


def test_a_rate_limited_read_waits_for_its_window(home, db, fake, reel) -> None:
    fake.script["comments"].append("code:80001")
    with pytest.raises(LimitReached, match="rate limit"):
        read(platform(home, db, fake), reel)


def test_a_deleted_reel_has_no_comments_to_read(home, db, fake) -> None:
    with pytest.raises(CommentGone):
        read(platform(home, db, fake), "9999999")


# -- replies ------------------------------------------------------------------------------------


def a_comment(home, db, fake, reel, text: str = "Love this") -> Comment:
    fake.add_comment(reel, text)
    comments, _ = read(platform(home, db, fake), reel)
    return next(c for c in comments if c.text == text)


def test_a_reply_is_made_as_the_page(home, db, fake, reel) -> None:
    comment = a_comment(home, db, fake, reel)
    request = reply_request(comment, "Thank you, Ana!")

    outcome = platform(home, db, fake).reply(request)

    assert isinstance(outcome, Published), outcome
    made = fake.replies_to(comment.id)
    assert [(r["id"], r["message"]) for r in made] == [
        (outcome.platform_post_id, "Thank you, Ana!")
    ]
    number = outcome.platform_post_id.rsplit("_", 1)[1]
    assert outcome.url == f"https://www.facebook.com/reel/{reel}?comment_id={number}"
    assert fake.of_kind("reply")[0]["form"] == {"message": "Thank you, Ana!"}
    assert request.saved[0]["reply_sent"] == NOW  # on record before the call
    again, _ = read(platform(home, db, fake), reel)
    assert [c.mine for c in again if c.id == outcome.platform_post_id] == [True]


def test_a_reply_to_a_reply_joins_its_thread(home, db, fake, reel) -> None:
    top = fake.add_comment(reel, "First")
    fake.add_comment(top, "Agreed", author_id="556")
    comments, _ = read(platform(home, db, fake), reel)
    answered = next(c for c in comments if c.text == "Agreed")

    outcome = platform(home, db, fake).reply(reply_request(answered, "Thanks, Bo"))

    assert isinstance(outcome, Published)
    assert [r["message"] for r in fake.replies_to(top)] == ["Thanks, Bo"]


@pytest.mark.parametrize("fault", ["drop", "stored:500"])
def test_a_lost_answer_is_found_again_never_sent_twice(home, db, fake, reel, fault) -> None:
    comment = a_comment(home, db, fake, reel)
    fake.script["reply"].append(fault)
    request = reply_request(comment, "Thanks!")

    outcome = platform(home, db, fake).reply(request)
    assert isinstance(outcome, Failure) and outcome.kind == "lost_answer", outcome

    found = platform(home, db, fake).find_reply(reply_request(comment, "Thanks!"))
    assert isinstance(found, Published)
    assert [r["id"] for r in fake.replies_to(comment.id)] == [found.platform_post_id]
    assert fake.count("reply") == 1


def test_find_reply_is_none_when_nothing_went_out(home, db, fake, reel) -> None:
    comment = a_comment(home, db, fake, reel)
    fake.add_comment(comment.id, "Thanks!", author_id="777")  # someone else's words
    assert platform(home, db, fake).find_reply(reply_request(comment, "Thanks!")) is None


def test_a_deleted_comment_is_gone(home, db, fake, reel) -> None:
    comment = a_comment(home, db, fake, reel)
    fake.delete_comment(comment.id)

    outcome = platform(home, db, fake).reply(reply_request(comment, "Thanks"))

    assert isinstance(outcome, Failure) and outcome.kind == "gone", outcome
    assert fake.count("reply") == 1


def test_a_rate_limited_reply_waits_without_a_try(home, db, fake, reel) -> None:
    comment = a_comment(home, db, fake, reel)
    fake.rate_limit("reply", retry_after=300)

    outcome = platform(home, db, fake).reply(reply_request(comment, "Thanks"))

    assert isinstance(outcome, Failure) and outcome.kind == "limit", outcome
    assert fake.replies_to(comment.id) == []


def test_a_reply_without_the_permission_names_it(home, db, fake, reel) -> None:
    comment = a_comment(home, db, fake, reel)
    fake.granted.discard("pages_manage_engagement")

    outcome = platform(home, db, fake).reply(reply_request(comment, "Thanks"))

    assert isinstance(outcome, Failure) and outcome.kind == "needs_person"
    assert "pages_manage_engagement" in outcome.reason
    assert load_account(db, "facebook").state == "connected"


def test_a_revoked_token_asks_for_a_person(home, db, fake, reel) -> None:
    comment = a_comment(home, db, fake, reel)
    fake.revoke()

    outcome = platform(home, db, fake).reply(reply_request(comment, "Thanks"))

    assert isinstance(outcome, Failure) and outcome.kind == "needs_person", outcome
    assert load_account(db, "facebook").state == "reconnect"


# -- the fake keeps to Graph's rules --------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ({"filter": "everything"}, "filter must be"),
        ({"order": "newest"}, "order must be"),
        ({"fields": "id,text"}, "nonexisting field (text)"),
        ({"sort": "chronological"}, "parameter sort"),
        ({"limit": "many"}, "limit"),
    ],
)
def test_the_fake_refuses_a_comments_read_that_breaks_the_rules(fake, reel, query, words) -> None:
    answer = requests.get(
        f"{fake.url}/{VERSION}/{reel}/comments",
        params=query,
        headers={"Authorization": f"OAuth {PAGE_TOKEN}"},
        timeout=10,
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == 100 and words in answer.json()["error"]["message"]
