"""Instagram's comments (issue 28) against the local Graph fake: reading them page by page (its
`after` cursors) until the ones a read before kept, in either order, replying under a comment,
finding a reply whose answer was lost, and each refusal named."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoretto.accounts import load_account
from autoretto.errors import ConfigProblems
from autoretto.platforms import REGISTRY
from autoretto.platforms import instagram as module
from autoretto.platforms.base import (
    Comment,
    Failure,
    LimitReached,
    NeedsPerson,
    Published,
    ReplyRequest,
    UsageLedger,
)
from autoretto.platforms.instagram import InstagramPlatform
from autoretto.platforms.linkedin import LinkedInPlatform
from autoretto.platforms.threads import ThreadsPlatform
from tests.fakes.instagram_server import INSTAGRAM, FakeGraph
from tests.platforms.harness import Bench


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(REGISTRY, "instagram", InstagramPlatform)
    monkeypatch.setenv("AUTORETTO_VAULT", "file")


@pytest.fixture
def fake():
    with FakeGraph(INSTAGRAM) as server:
        yield server


def bench_for(home: Path, clip: Path, fake: FakeGraph, extra: str = "") -> Bench:
    bench = Bench(home, "instagram", settings=extra + fake.settings(), clip=clip)
    bench.connect(**fake.account())
    return bench


@pytest.fixture
def bench(home: Path, clip: Path, fake: FakeGraph) -> Bench:
    return bench_for(home, clip, fake)


def read_all(
    bench: Bench, post: str, cursor: str | None = None
) -> tuple[list[Comment], str | None]:
    """Every comment one read gives, and the cursor the inbox would keep after it."""
    comments: list[Comment] = []
    for page in bench.platform().read_comments(post, cursor):
        comments.extend(page.comments)
        cursor = page.cursor or cursor
    return comments, cursor


def request_for(comment: Comment, text: str = "Thank you for listening!", **more) -> ReplyRequest:
    fields = {"reply_id": 1, "attempt": 1, **more}
    return ReplyRequest(
        marker="autoretto-0123456789abcdef", channel="lofi",
        platform="instagram", comment=comment, text=text, **fields,
    )  # fmt: skip


@pytest.mark.parametrize("newest_first", [True, False], ids=["newest first", "oldest first"])
def test_comments_are_read_page_by_page_and_a_later_read_gets_the_new_ones(
    bench: Bench, fake: FakeGraph, monkeypatch: pytest.MonkeyPatch, newest_first: bool
) -> None:
    """Meta's page does not say in which order comments are listed: either way a later read
    gets the new comments, and newest first it stops where the comments read before begin."""
    monkeypatch.setattr(module, "COMMENT_PAGE", 2)
    fake.comments_newest_first = newest_first
    post = fake.add_post("Rainy night")
    first = fake.add_comment(post, "love this", username="mika")
    fake.add_comment(post, "me too", username="jo", parent=first)
    fake.add_comment(post, "what synth is that?", username="sam")
    fake.add_comment(post, "🔥", username="lee")
    fake.add_comment(post, "nice", username="kai")
    fake.add_comment(post, "again!", username="ray")

    comments, cursor = read_all(bench, post)
    assert sorted((c.author, c.text, c.parent_id) for c in comments) == [
        ("jo", "me too", first),
        ("kai", "nice", None),
        ("lee", "🔥", None),
        ("mika", "love this", None),
        ("ray", "again!", None),
        ("sam", "what synth is that?", None),
    ]
    assert all(c.post_id == post and c.published_at.endswith("Z") for c in comments)
    assert not any(c.mine for c in comments)
    assert cursor == max(c.published_at for c in comments)  # the newest comment's time
    calls = fake.of_kind("comments")
    assert len(calls) == 3  # three pages of two top-level comments
    assert calls[0]["params"]["limit"] == "2" and "replies{" in calls[0]["params"]["fields"]
    assert "after" not in calls[0]["params"] and calls[1]["params"]["after"]

    fake.add_comment(post, "new one", username="ana")
    fake.add_comment(post, "newer one", username="bo")
    later, moved = read_all(bench, post, cursor)
    assert {"new one", "newer one"} <= {c.text for c in later}
    assert moved > cursor and moved == max(c.published_at for c in later)
    # newest first, the read stops at the first page all older than it had: the fourth and
    # last page is not read; oldest first, the new ones are on the last page
    assert len(fake.of_kind("comments")) - 3 == (3 if newest_first else 4)

    again, kept = read_all(bench, post, moved)
    assert kept == moved  # nothing new: the cursor stays
    assert {c.id for c in again} <= {c.id for c in comments + later}

    # every call counted for the account and day, before it was made
    used = UsageLedger("instagram").used(bench.db, fake.user_id, "comment_calls")
    assert used == fake.count("comments")


def test_a_read_cut_short_keeps_the_cursor_it_had(
    bench: Bench, fake: FakeGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A limit on the second page: the first page's comments are kept, the cursor is not
    moved past the comments not read yet."""
    monkeypatch.setattr(module, "COMMENT_PAGE", 2)
    post = fake.add_post("Rainy night")
    fake.add_comment(post, "one")
    _, cursor = read_all(bench, post)
    for text in ("two", "three", "four"):
        fake.add_comment(post, text)
    fake.script["comments"].extend(["ok", "status:429"])
    pages = bench.platform().read_comments(post, cursor)
    first = next(pages)
    assert [c.text for c in first.comments] == ["four", "three"] and first.cursor is None
    with pytest.raises(LimitReached):
        next(pages)
    later, moved = read_all(bench, post, cursor)  # the next read begins where this one did
    assert [c.text for c in later] == ["four", "three", "two", "one"] and moved > cursor


def test_the_day_s_comment_calls_stop_the_read_before_a_call_is_made(
    home: Path, clip: Path, fake: FakeGraph
) -> None:
    bench = bench_for(home, clip, fake, "comment_calls_per_day = 1\n")
    post = fake.add_post("Rainy night")
    fake.add_comment(post, "love this")
    assert len(read_all(bench, post)[0]) == 1
    with pytest.raises(LimitReached, match="comment_calls_per_day"):
        read_all(bench, post)
    assert fake.count("comments") == 1


def test_a_reply_goes_under_the_comment_once_and_our_own_replies_read_as_mine(
    bench: Bench, fake: FakeGraph
) -> None:
    post = fake.add_post("Rainy night")
    first = fake.add_comment(post, "love this", username="mika")
    answer = fake.add_comment(post, "same", username="jo", parent=first)
    (comment, nested), _ = read_all(bench, post)

    outcome = bench.platform().reply(request_for(comment))
    assert isinstance(outcome, Published)
    # a reply to a reply goes under its top-level comment, as Instagram places it
    assert isinstance(bench.platform().reply(request_for(nested, "Cheers!")), Published)
    mine = fake.my_replies()
    assert [(r["text"], r["parent_id"]) for r in mine] == [
        ("Thank you for listening!", first),
        ("Cheers!", first),
    ]
    assert outcome.platform_post_id == mine[0]["id"] and nested.id == answer
    assert fake.of_kind("reply")[0]["params"]["message"] == "Thank you for listening!"
    comments, _ = read_all(bench, post)
    assert [c.mine for c in comments] == [False, False, True, True]


@pytest.mark.parametrize("fault", ["drop", "stored:500"], ids=["lost answer", "stored then 500"])
def test_a_reply_whose_answer_went_missing_is_found_again_not_sent_twice(
    bench: Bench, fake: FakeGraph, fault: str
) -> None:
    post = fake.add_post("Rainy night")
    fake.add_comment(post, "love this")
    (comment,), _ = read_all(bench, post)
    fake.script["reply"].append(fault)

    outcome = bench.platform().reply(request_for(comment))
    assert isinstance(outcome, Failure) and outcome.kind == "lost_answer", outcome
    found = bench.platform().find_reply(request_for(comment))
    (made,) = fake.my_replies()
    assert found == Published(made["id"])
    assert fake.count("reply") == 1


def test_find_reply_wants_the_account_s_own_reply_with_that_text(
    bench: Bench, fake: FakeGraph
) -> None:
    post = fake.add_post("Rainy night")
    first = fake.add_comment(post, "love this")
    fake.add_comment(post, "Thank you for listening!", username="someone_else", parent=first)
    (comment, _), _ = read_all(bench, post)
    assert bench.platform().find_reply(request_for(comment)) is None
    fake.delete_comment(first)
    assert bench.platform().find_reply(request_for(comment)) is None  # gone, and its replies


def test_a_missing_comment_permission_names_it_and_leaves_posting_alone(
    bench: Bench, fake: FakeGraph
) -> None:
    post = fake.add_post("Rainy night")
    fake.add_comment(post, "love this")
    (comment,), _ = read_all(bench, post)
    fake.comments_denied = True
    with pytest.raises(NeedsPerson, match="instagram_business_manage_comments"):
        read_all(bench, post)
    outcome = bench.platform().reply(request_for(comment))
    assert outcome.kind == "needs_person" and "instagram_business_manage_comments" in outcome.reason
    assert load_account(bench.db, "instagram").state == "connected"
    assert fake.my_replies() == []


def test_a_revoked_grant_asks_for_a_reconnect(bench: Bench, fake: FakeGraph) -> None:
    post = fake.add_post("Rainy night")
    fake.add_comment(post, "love this")
    (comment,), _ = read_all(bench, post)
    fake.revoke()
    outcome = bench.platform().reply(request_for(comment))
    assert outcome.kind == "needs_person" and "connect instagram" in outcome.reason
    assert load_account(bench.db, "instagram").state == "reconnect"


def test_a_rate_limit_spends_no_try_and_sends_nothing(bench: Bench, fake: FakeGraph) -> None:
    post = fake.add_post("Rainy night")
    fake.add_comment(post, "love this")
    (comment,), _ = read_all(bench, post)
    fake.rate_limit("reply", retry_after=3600)
    outcome = bench.platform().reply(request_for(comment))
    assert outcome.kind == "limit", outcome
    fake.rate_limit("comments", retry_after=3600)
    with pytest.raises(LimitReached):
        read_all(bench, post)
    assert fake.my_replies() == []


def test_a_reply_to_a_deleted_comment_is_gone(bench: Bench, fake: FakeGraph) -> None:
    post = fake.add_post("Rainy night")
    first = fake.add_comment(post, "love this")
    (comment,), _ = read_all(bench, post)
    fake.delete_comment(first)
    outcome = bench.platform().reply(request_for(comment))
    assert outcome.kind == "gone", outcome
    assert fake.my_replies() == []


def test_the_fake_refuses_what_instagram_refuses(bench: Bench, fake: FakeGraph) -> None:
    """A reply without its text, a field a comment does not have: Graph's code 100."""
    post = fake.add_post("Rainy night")
    first = fake.add_comment(post, "love this")
    platform = bench.platform()
    with pytest.raises(Exception, match="message is required"):
        platform.comment_call("POST", f"{first}/replies", sends=True, data={"message": " "})
    with pytest.raises(Exception, match="nonexisting field"):
        platform.comment_call("GET", f"{post}/comments", params={"fields": "id,likes_count"})


@pytest.mark.parametrize("cls", [InstagramPlatform, ThreadsPlatform, LinkedInPlatform])
def test_config_check_wants_at_least_one_page_of_comments(bench: Bench, cls: type) -> None:
    with pytest.raises(ConfigProblems) as refused:
        cls.parse_settings(
            {"comment_pages": 0}, path=bench.home / "autoretto.toml", paths=bench.config.paths
        )
    assert f"platforms.{cls.name}.comment_pages" in str(refused.value)
    assert "more than 0" in str(refused.value)
