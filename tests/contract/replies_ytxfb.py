"""The reply contract's rows for YouTube, X and Facebook (issue 28): each entry holds the fields of
one `ReplyRow` of `tests/contract/replies.py`. Each names the fake's operation that makes a
reply, and three small functions over the fake: another account's comment under our published
post (the fields a stored comment keeps), its deletion, and how many replies of ours a person
sees.
"""

from __future__ import annotations

from typing import Any


def _youtube_comment(fake: Any, post_id: str, text: str) -> dict[str, Any]:
    comment_id = fake.add_comment(post_id, text, author="Ana", author_channel="UCana")
    return {
        "platform_comment_id": comment_id,
        "author": "Ana",
        "author_id": "UCana",
        "text": text,
        "ref": {"thread": comment_id, "video": post_id},
    }


def _youtube_replies(fake: Any) -> int:
    from tests.fakes.youtube_server import CHANNEL_ID

    with fake.lock:
        return sum(
            1
            for item in fake.comment_resources.values()
            if item["snippet"]["authorChannelId"]["value"] == CHANNEL_ID
            and "parentId" in item["snippet"]
            and fake._live(item)
        )


def _x_comment(fake: Any, post_id: str, text: str) -> dict[str, Any]:
    reply_id = fake.add_reply(post_id, text, username="ana", author_id="101")
    return {
        "platform_comment_id": reply_id,
        "author": "@ana",
        "author_id": "101",
        "text": text,
        "ref": {"conversation": post_id},
    }


def _x_replies(fake: Any) -> int:
    with fake.lock:
        return sum(1 for post in fake.posts if post.get("in_reply_to"))


def _facebook_comment(fake: Any, post_id: str, text: str) -> dict[str, Any]:
    comment_id = fake.add_comment(post_id, text, author="Ana", author_id="555000")
    return {
        "platform_comment_id": comment_id,
        "author": "Ana",
        "author_id": "555000",
        "text": text,
        "ref": {},
    }


def _facebook_replies(fake: Any) -> int:
    from tests.fakes.facebook_server import PAGE_ID

    with fake.lock:
        return sum(
            1
            for comment in fake.comments.values()
            if comment["from"]["id"] == PAGE_ID and fake._alive(comment)
        )


ROWS: list[dict[str, Any]] = [
    {
        "name": "youtube",
        "reply_at": "comments.insert",
        "add_comment": _youtube_comment,
        "delete_comment": lambda fake, comment: fake.delete_comment(comment["platform_comment_id"]),
        "replies": _youtube_replies,
    },
    {
        "name": "facebook",
        "reply_at": "reply",
        "add_comment": _facebook_comment,
        "delete_comment": lambda fake, comment: fake.delete_comment(comment["platform_comment_id"]),
        "replies": _facebook_replies,
    },
    {
        "name": "x",
        "reply_at": "create",
        "add_comment": _x_comment,
        "delete_comment": lambda fake, comment: fake.delete_post(comment["platform_comment_id"]),
        "replies": _x_replies,
    },
]
