"""LinkedIn's comments (issue 28) against the local fake: the comments under our post read with
start/count until the ones read before (with the LinkedIn-Version header), a reply nested
under its comment (`parentComment`), found again after a lost answer, and each refusal named:
reading comments needs the restricted r_member_social."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from autoretto.accounts import load_account
from autoretto.platforms import REGISTRY
from autoretto.platforms import linkedin as module
from autoretto.platforms.base import (
    CannotAsk,
    Comment,
    Failure,
    NeedsPerson,
    Published,
    ReplyRequest,
    UsageLedger,
)
from autoretto.platforms.linkedin import LinkedInPlatform
from tests.fakes.linkedin_server import MEMBER_URN, FakeLinkedIn
from tests.platforms.harness import Bench

#: what an app granted LinkedIn's restricted r_member_social has: comments can be read
READING = "openid,profile,w_member_social,r_member_social"


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(REGISTRY, "linkedin", LinkedInPlatform)
    monkeypatch.setenv("AUTORETTO_VAULT", "file")


@pytest.fixture
def fake():
    with FakeLinkedIn() as server:
        yield server


def bench_for(
    home: Path, clip: Path, fake: FakeLinkedIn, extra: str = "", *, scopes: str = READING
) -> Bench:
    bench = Bench(home, "linkedin", settings=fake.settings() + extra, clip=clip)
    bench.connect(
        account_id=MEMBER_URN,
        name="Rae Lofi",
        tokens={"access_token": fake.issue_token(scopes), "expires_at": "2027-01-28T10:00:00Z"},
        meta={"author": MEMBER_URN, "token_expires_at": "2027-01-28T10:00:00Z"},
    )
    return bench


@pytest.fixture
def bench(home: Path, clip: Path, fake: FakeLinkedIn) -> Bench:
    return bench_for(home, clip, fake)


def read_all(
    bench: Bench, post: str, cursor: str | None = None
) -> tuple[list[Comment], str | None]:
    comments: list[Comment] = []
    for page in bench.platform().read_comments(post, cursor):
        comments.extend(page.comments)
        cursor = page.cursor or cursor
    return comments, cursor


def request_for(comment: Comment, text: str = "Thank you, glad you like it!", **more: Any):
    fields = {"reply_id": 1, "attempt": 1, **more}
    return ReplyRequest(
        marker="autoretto-0123456789abcdef", channel="lofi", platform="linkedin",
        comment=comment, text=text, **fields,
    )  # fmt: skip


def one_comment(bench: Bench, fake: FakeLinkedIn) -> tuple[str, Comment]:
    post = fake.add_post("Rainy night")
    fake.add_comment(post, "Lovely track")
    (comment,), _ = read_all(bench, post)
    return post, comment


@pytest.mark.parametrize("newest_first", [False, True], ids=["oldest first", "newest first"])
def test_comments_are_read_with_start_and_count_and_a_later_read_gets_the_new_ones(
    bench: Bench, fake: FakeLinkedIn, monkeypatch: pytest.MonkeyPatch, newest_first: bool
) -> None:
    """LinkedIn's page does not say in which order it lists comments: either way a later read
    gets the new ones, and newest first it stops where the comments read before begin."""
    monkeypatch.setattr(module, "COMMENT_COUNT", 2)
    fake.comments_newest_first = newest_first
    post = fake.add_post("Rainy night")
    urns = [fake.add_comment(post, f"comment {n}") for n in range(1, 8)]

    comments, cursor = read_all(bench, post)
    assert sorted(c.text for c in comments) == [f"comment {n}" for n in range(1, 8)]
    assert sorted(c.id for c in comments) == sorted(urns)
    first = next(c for c in comments if c.id == urns[0])
    assert first.author == "urn:li:person:Listener1" and first.published_at.endswith("Z")
    assert first.post_id == post and not first.mine
    assert cursor == max(c.published_at for c in comments)
    calls = fake.of_kind("comments")
    assert [(c["query"]["start"], c["query"]["count"]) for c in calls] == [
        ("0", "2"),
        ("2", "2"),
        ("4", "2"),
        ("6", "2"),
    ]
    assert all(c["version"] == LinkedInPlatform.api_version for c in calls)

    fake.add_comment(post, "comment 8")
    later, moved = read_all(bench, post, cursor)
    assert "comment 8" in {c.text for c in later} and moved > cursor
    # newest first: [8, 7], [6, 5] is all older, the rest unread; oldest first: every page
    assert len(fake.of_kind("comments")) - 4 == (2 if newest_first else 5)
    used = UsageLedger("linkedin").used(bench.db, MEMBER_URN, "comment_calls")
    assert used == fake.count("comments")


def test_a_reply_is_nested_under_its_comment_once(bench: Bench, fake: FakeLinkedIn) -> None:
    post, comment = one_comment(bench, fake)
    outcome = bench.platform().reply(request_for(comment))
    (made,) = fake.my_replies()
    assert outcome == Published(made["urn"], f"https://www.linkedin.com/feed/update/{post}/")
    assert made["parent"] == comment.id and made["text"] == "Thank you, glad you like it!"
    (sent,) = fake.of_kind("comment")
    assert sent["urn"] == comment.id
    assert sent["json"]["parentComment"] == comment.id and sent["json"]["object"] == post
    assert sent["json"]["actor"] == MEMBER_URN and sent["version"]
    # our nested reply is not among the post's own comments (LinkedIn lists those apart)
    assert [c.text for c in read_all(bench, post)[0]] == ["Lovely track"]


@pytest.mark.parametrize("fault", ["drop", "stored:500"], ids=["lost answer", "stored then 500"])
def test_a_reply_whose_answer_went_missing_is_found_again(
    bench: Bench, fake: FakeLinkedIn, fault: str
) -> None:
    _, comment = one_comment(bench, fake)
    fake.script["comment"].append(fault)
    outcome = bench.platform().reply(request_for(comment))
    assert isinstance(outcome, Failure) and outcome.kind == "lost_answer", outcome
    found = bench.platform().find_reply(request_for(comment))
    (made,) = fake.my_replies()
    assert found is not None and found.platform_post_id == made["urn"]
    assert fake.count("comment") == 1


def test_find_reply_wants_the_member_s_own_comment_with_that_text(
    bench: Bench, fake: FakeLinkedIn
) -> None:
    post, comment = one_comment(bench, fake)
    fake.add_comment(post, "Thank you, glad you like it!", parent=comment.id)  # someone else's
    assert bench.platform().find_reply(request_for(comment)) is None
    fake.delete_comment(comment.id)
    assert bench.platform().find_reply(request_for(comment)) is None


def test_without_r_member_social_reading_is_refused_by_name_and_nobody_can_look(
    home: Path, clip: Path, fake: FakeLinkedIn
) -> None:
    bench = bench_for(home, clip, fake, scopes="openid,profile,w_member_social")
    post = fake.add_post("Rainy night")
    urn = fake.add_comment(post, "Lovely track")
    with pytest.raises(NeedsPerson, match="r_member_social"):
        read_all(bench, post)
    comment = Comment(id=urn, post_id=post, author="urn:li:person:Listener1", text="Lovely track")
    with pytest.raises(CannotAsk, match="r_member_social"):
        bench.platform().find_reply(request_for(comment))
    # writing needs only w_member_social: a reply a person approved still goes out
    assert isinstance(bench.platform().reply(request_for(comment)), Published)
    assert load_account(bench.db, "linkedin").state == "connected"


def test_without_w_member_social_a_reply_is_refused_by_name(
    home: Path, clip: Path, fake: FakeLinkedIn
) -> None:
    bench = bench_for(home, clip, fake, scopes="openid,profile,r_member_social")
    _, comment = one_comment(bench, fake)
    outcome = bench.platform().reply(request_for(comment))
    assert outcome.kind == "needs_person" and "w_member_social" in outcome.reason
    assert fake.my_replies() == []


def test_a_revoked_token_asks_for_a_reconnect(bench: Bench, fake: FakeLinkedIn) -> None:
    _, comment = one_comment(bench, fake)
    fake.revoke()
    outcome = bench.platform().reply(request_for(comment))
    assert outcome.kind == "needs_person" and "connect linkedin" in outcome.reason
    assert load_account(bench.db, "linkedin").state == "reconnect"


def test_the_day_s_limit_spends_no_try(home: Path, clip: Path, fake: FakeLinkedIn) -> None:
    bench = bench_for(home, clip, fake, "comment_calls_per_day = 2\n")
    _, comment = one_comment(bench, fake)  # one call
    fake.rate_limit("comment", retry_after=86400)  # LinkedIn's own day: longer than a run waits
    assert bench.platform().reply(request_for(comment)).kind == "limit"
    assert fake.my_replies() == []
    outcome = bench.platform().reply(request_for(comment))  # our own budget is used now
    assert outcome.kind == "limit" and "comment_calls_per_day" in outcome.reason
    assert fake.count("comment") == 1


def test_a_reply_to_a_deleted_comment_is_gone(bench: Bench, fake: FakeLinkedIn) -> None:
    _, comment = one_comment(bench, fake)
    fake.delete_comment(comment.id)
    assert bench.platform().reply(request_for(comment)).kind == "gone"
    assert fake.my_replies() == []


def test_the_fake_refuses_what_linkedin_refuses(bench: Bench, fake: FakeLinkedIn) -> None:
    """A comment without its text, or nested without naming its parent comment."""
    post, comment = one_comment(bench, fake)
    platform = bench.platform()
    path = f"socialActions/{module.quote(comment.id, safe='')}/comments"
    empty = {"actor": MEMBER_URN, "object": post, "message": {"text": " "}}
    assert platform._rest("POST", path, json=empty, check=False).status_code == 400
    orphan = {"actor": MEMBER_URN, "object": post, "message": {"text": "hi"}}
    assert platform._rest("POST", path, json=orphan, check=False).status_code == 400
    assert fake.my_replies() == []
