"""Threads' replies (issue 28) against the local Graph fake: the conversation read oldest first
from where the last read stopped, a reply made as Threads makes it (a TEXT container answering
the comment, then `threads_publish`), found again after a lost answer, never made twice when
the run dies between the container and the publish, and each refusal named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from autoretto.accounts import load_account
from autoretto.platforms import REGISTRY
from autoretto.platforms import threads as module
from autoretto.platforms.base import (
    Comment,
    Failure,
    NeedsPerson,
    Published,
    ReplyRequest,
    UsageLedger,
)
from autoretto.platforms.threads import ThreadsPlatform
from tests.fakes.instagram_server import FakeGraph
from tests.fakes.threads_server import fake_threads
from tests.platforms.harness import Bench


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(REGISTRY, "threads", ThreadsPlatform)
    monkeypatch.setenv("AUTORETTO_VAULT", "file")


@pytest.fixture
def fake():
    with fake_threads() as server:
        yield server


@pytest.fixture
def bench(home: Path, clip: Path, fake: FakeGraph) -> Bench:
    bench = Bench(home, "threads", settings=fake.settings(), clip=clip)
    bench.connect(**fake.account())
    return bench


def read_all(
    bench: Bench, post: str, cursor: str | None = None
) -> tuple[list[Comment], str | None]:
    comments: list[Comment] = []
    for page in bench.platform().read_comments(post, cursor):
        comments.extend(page.comments)
        cursor = page.cursor or cursor
    return comments, cursor


def request_for(comment: Comment, text: str = "Thank you!", **more: Any) -> ReplyRequest:
    fields = {"reply_id": 1, "attempt": 1, **more}
    return ReplyRequest(
        marker="autoretto-0123456789abcdef", channel="lofi",
        platform="threads", comment=comment, text=text, **fields,
    )  # fmt: skip


def one_comment(bench: Bench, fake: FakeGraph) -> tuple[str, Comment]:
    post = fake.add_post("Rainy night")
    fake.add_comment(post, "love this", username="mika")
    (comment,), _ = read_all(bench, post)
    return post, comment


def test_the_conversation_is_read_oldest_first_and_a_later_read_continues(
    bench: Bench, fake: FakeGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(module, "COMMENT_PAGE", 2)
    post = fake.add_post("Rainy night")
    first = fake.add_comment(post, "love this", username="mika")
    fake.add_comment(post, "agreed", username="jo", parent=first)
    fake.add_comment(post, "what synth?", username="sam")

    comments, cursor = read_all(bench, post)
    assert [(c.author, c.text, c.parent_id) for c in comments] == [
        ("mika", "love this", None),
        ("jo", "agreed", first),
        ("sam", "what synth?", None),
    ]
    calls = fake.of_kind("conversation")
    assert len(calls) == 2
    assert calls[0]["params"]["reverse"] == "false" and calls[0]["params"]["limit"] == "2"
    assert "after" not in calls[0]["params"] and calls[1]["params"]["after"]

    # a new reply deep in the thread is in the next read, and nothing read before is
    fake.add_comment(post, "+1", username="lee", parent=first)
    later, cursor = read_all(bench, post, cursor)
    assert [(c.text, c.parent_id) for c in later] == [("+1", first)]
    assert read_all(bench, post, cursor) == ([], cursor)
    used = UsageLedger("threads").used(bench.db, fake.user_id, "comment_calls")
    assert used == fake.count("conversation") == 4


def test_a_reply_is_a_text_container_answering_the_comment_then_published(
    bench: Bench, fake: FakeGraph
) -> None:
    post, comment = one_comment(bench, fake)
    saved: list[dict] = []
    outcome = bench.platform().reply(request_for(comment, save_handles=saved.append))
    (made,) = fake.my_replies()
    assert outcome == Published(made["id"])
    (container,) = fake.of_kind("reply_container")
    assert container["params"]["media_type"] == "TEXT"
    assert container["params"]["reply_to_id"] == comment.id
    assert made["text"] == "Thank you!" and made["parent_id"] == comment.id
    # the container was on record before the publish, the reply's id after it
    assert "container_id" in saved[0] and "reply_id" not in saved[0]
    assert saved[-1]["reply_id"] == made["id"]
    comments, _ = read_all(bench, post)
    assert [c.mine for c in comments] == [False, True]
    assert fake.publishes == []  # a reply is no post of the profile's


def test_a_crash_between_the_container_and_the_publish_publishes_that_container(
    bench: Bench, fake: FakeGraph
) -> None:
    _, comment = one_comment(bench, fake)
    record: dict = {}

    def save_then_die(handles: dict) -> None:
        record.clear()
        record.update(handles)
        if "reply_id" not in handles:
            raise SystemExit("killed right after the container was saved")

    with pytest.raises(SystemExit):
        bench.platform().reply(request_for(comment, save_handles=save_then_die))
    assert fake.my_replies() == [] and fake.count("reply_publish") == 0

    # the next run: a new attempt carries the handles the killed one saved
    again = request_for(comment, attempt=2, handles=dict(record))
    assert bench.platform().find_reply(again) is None  # the container is not published
    outcome = bench.platform().reply(again)
    (made,) = fake.my_replies()
    assert outcome == Published(made["id"])
    assert fake.count("reply_container") == 1 and fake.count("reply_publish") == 1


@pytest.mark.parametrize("fault", ["drop", "stored:500"], ids=["lost answer", "stored then 500"])
def test_a_publish_whose_answer_went_missing_is_settled_by_its_container(
    bench: Bench, fake: FakeGraph, fault: str
) -> None:
    _, comment = one_comment(bench, fake)
    fake.script["reply_publish"].append(fault)
    outcome = bench.platform().reply(request_for(comment))
    (made,) = fake.my_replies()
    assert outcome == Published(made["id"])
    assert fake.count("reply_publish") == 1


def test_a_lost_answer_nobody_could_settle_is_found_again_by_the_next_run(
    bench: Bench, fake: FakeGraph
) -> None:
    _, comment = one_comment(bench, fake)
    saved: dict = {}
    fake.drop_after("reply_publish")
    fake.script["object"].extend(["hangup"] * 3)  # the container cannot be asked either
    outcome = bench.platform().reply(request_for(comment, save_handles=saved.update))
    assert isinstance(outcome, Failure) and outcome.kind == "lost_answer", outcome
    found = bench.platform().find_reply(request_for(comment, attempt=2, handles=dict(saved)))
    (made,) = fake.my_replies()
    assert found == Published(made["id"])
    # and by its text alone when nothing was saved (a restored database)
    assert bench.platform().find_reply(request_for(comment)) == found
    assert fake.count("reply_publish") == 1


def test_the_live_reply_limit_stops_a_reply_before_its_container(
    bench: Bench, fake: FakeGraph
) -> None:
    _, comment = one_comment(bench, fake)
    fake.reply_quota_usage = fake.reply_quota_total = 1000
    outcome = bench.platform().reply(request_for(comment))
    assert outcome.kind == "limit" and "1000 of 1000" in outcome.reason
    assert fake.count("reply_container") == 0


def test_a_rate_limit_spends_no_try(bench: Bench, fake: FakeGraph) -> None:
    _, comment = one_comment(bench, fake)
    fake.rate_limit("reply_container", retry_after=3600)
    assert bench.platform().reply(request_for(comment)).kind == "limit"
    assert fake.my_replies() == []


def test_missing_reply_permissions_are_named_and_leave_posting_alone(
    bench: Bench, fake: FakeGraph
) -> None:
    post, comment = one_comment(bench, fake)
    fake.comments_denied = True
    with pytest.raises(NeedsPerson, match="threads_read_replies"):
        read_all(bench, post)
    outcome = bench.platform().reply(request_for(comment))
    assert outcome.kind == "needs_person" and "threads_manage_replies" in outcome.reason
    assert load_account(bench.db, "threads").state == "connected"


def test_a_revoked_grant_asks_for_a_reconnect(bench: Bench, fake: FakeGraph) -> None:
    _, comment = one_comment(bench, fake)
    fake.revoke()
    outcome = bench.platform().reply(request_for(comment))
    assert outcome.kind == "needs_person"
    assert load_account(bench.db, "threads").state == "reconnect"


def test_a_reply_to_a_deleted_comment_is_gone(bench: Bench, fake: FakeGraph) -> None:
    _, comment = one_comment(bench, fake)
    fake.delete_comment(comment.id)
    assert bench.platform().reply(request_for(comment)).kind == "gone"
    assert bench.platform().find_reply(request_for(comment)) is None
    assert fake.my_replies() == []


def test_a_comment_deleted_between_container_and_publish_is_gone_too(
    bench: Bench, fake: FakeGraph
) -> None:
    _, comment = one_comment(bench, fake)
    record: dict = {}

    def save_then_die(handles: dict) -> None:
        record.update(handles)
        raise SystemExit

    with pytest.raises(SystemExit):
        bench.platform().reply(request_for(comment, save_handles=save_then_die))
    fake.delete_comment(comment.id)
    outcome = bench.platform().reply(request_for(comment, attempt=2, handles=record))
    assert outcome.kind == "gone", outcome
    assert fake.my_replies() == []
