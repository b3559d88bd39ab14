"""The reply contract's rows for Instagram, Threads and LinkedIn (issue 28): each entry holds
the fields of one `ReplyRow` of `tests/contract/replies.py`: the fake's operation that makes a
reply, another account's comment under our published post (the fields a stored comment keeps),
its deletion, how many replies of ours a person sees, and how the fake stores a reply and then
answers an error (these fakes name the operation it happens to)."""

from __future__ import annotations

from typing import Any


def _graph_comment(fake: Any, post_id: str, text: str) -> dict[str, Any]:
    comment_id = fake.add_comment(post_id, text, username="mika")
    return {
        "platform_comment_id": comment_id,
        "author": "mika",
        "author_id": "",
        "text": text,
        "ref": {},
    }


def _linkedin_comment(fake: Any, post_id: str, text: str) -> dict[str, Any]:
    actor = "urn:li:person:Listener1"
    urn = fake.add_comment(post_id, text, actor=actor)
    return {
        "platform_comment_id": urn,
        "author": actor,
        "author_id": actor,
        "text": text,
        "ref": {},
    }


def _delete(fake: Any, comment: dict[str, Any]) -> None:
    fake.delete_comment(comment["platform_comment_id"])


ROWS: list[dict[str, Any]] = [
    {
        "name": "instagram",
        "reply_at": "reply",
        "add_comment": _graph_comment,
        "delete_comment": _delete,
        "replies": lambda fake: len(fake.my_replies()),
        "store_then_fail": lambda fake: fake.store_then_fail("reply", 500),
    },
    {
        # the reply's container is saved on the attempt before `threads_publish`
        "name": "threads",
        "reply_at": "reply_publish",
        "add_comment": _graph_comment,
        "delete_comment": _delete,
        "replies": lambda fake: len(fake.my_replies()),
        "store_then_fail": lambda fake: fake.store_then_fail("reply_publish", 500),
    },
    {
        "name": "linkedin",
        "reply_at": "comment",
        "add_comment": _linkedin_comment,
        "delete_comment": _delete,
        "replies": lambda fake: len(fake.my_replies()),
        "store_then_fail": lambda fake: fake.store_then_fail("comment", 500),
        # a comment's replies are listed only to apps granted r_member_social, which the
        # posting table's LinkedIn grant (like most apps') lacks: a person confirms
        "can_ask": False,
    },
]
