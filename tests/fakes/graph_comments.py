"""The comments of Meta's Graph fakes (issue 28): Instagram's comments and Threads' replies,
mixed into `FakeGraph` (tests/fakes/instagram_server.py), which asks `comments_route` first.

    fake.add_post("Rainy night")                       # our post (or one the fake published)
    first = fake.add_comment(media_id, "love it", username="mika")
    fake.add_comment(media_id, "same", username="jo", parent=first)
    fake.delete_comment(first)                         # its replies go with it
    fake.comments_denied = True                        # code 10: the comment permission missing
    fake.store_then_fail("reply")                      # the reply is made, then HTTP 500
    assert [r["text"] for r in fake.my_replies()] == ["Thank you!"]

Instagram (https://developers.facebook.com/docs/instagram-platform/comment-moderation):
`GET /{ig-media-id}/comments` (kind `comments`; top-level comments, each with its `replies`
when the `fields` ask for them), `GET /{ig-comment-id}/replies` (`replies`) and
`POST /{ig-comment-id}/replies?message=…` (`reply`; a reply to a reply lands under its top-level
comment, as Instagram does).

Threads (https://developers.facebook.com/documentation/threads/reference/reply-management):
`GET /{media-id}/conversation` (`conversation`; every reply under the root at any depth,
`reverse=false` oldest first, reverse chronological by default), `GET /{media-id}/replies`
(`replies`; the direct replies), a TEXT container with `reply_to_id` on `POST /{user}/threads`
(`reply_container`), published by `POST /{user}/threads_publish` (`reply_publish`), and the reply
limit on `GET /{user}/threads_publishing_limit?fields=reply_quota_usage,reply_config`
(`reply_limit`; 1,000 a day, `reply_quota_total`).

Pages hold `limit` items (25 by default, at most 100), Instagram's newest first unless
`comments_newest_first` is False, with Graph's `paging.cursors.after` (and `paging.next` while
more remain); an empty page has no paging, as Graph's. Refused as Graph refuses them: a field
the node does not have, a reply without its text, both `before` and `after`, a comment or post
that does not exist (code 100, subcode 33). Each kind takes the shared vocabulary and
`stored:N` (`store_then_fail`): the work done, then HTTP N.
"""

from __future__ import annotations

import base64
import secrets
from datetime import UTC, datetime
from typing import Any

from tests.fakes.base import Call, clock

#: the fields of a comment each platform serves
INSTAGRAM_FIELDS = {"id", "text", "username", "timestamp", "from", "replies", "like_count",
                    "hidden", "parent_id", "media"}  # fmt: skip
THREADS_FIELDS = {"id", "text", "username", "timestamp", "replied_to", "root_post", "is_reply",
                  "is_reply_owned_by_me", "hide_status", "permalink", "media_type",
                  "has_replies"}  # fmt: skip
REPLY_TEXT_MAX = (
    500  # a Threads reply is a post: https://developers.facebook.com/docs/threads/overview
)


def split_fields(spec: str) -> list[tuple[str, str]]:
    """Graph's `fields` as (name, its nested fields): "id,replies{id,text}" gives
    [("id", ""), ("replies", "id,text")]."""
    found, depth, start = [], 0, 0
    for index, char in enumerate(spec + ","):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            part = spec[start:index].strip()
            if part:
                name, _, nested = part.partition("{")
                found.append((name.strip(), nested.rstrip("}")))
            start = index + 1
    return found


def cursor_of(seq: int) -> str:
    return base64.urlsafe_b64encode(f"c{seq}".encode()).decode()


def seq_of(cursor: str) -> int | None:
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
    except (ValueError, UnicodeDecodeError):
        return None
    return int(text[1:]) if text.startswith("c") and text[1:].isdigit() else None


class GraphCommentsFake:
    """The comment state and routes (see the module's docstring); `FakeGraph` mixes it in."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: id -> {id, media_id (the root post), parent_id (None: under the post), text,
        #: username, from_id, seq, timestamp, mine}
        self.comments: dict[str, dict[str, Any]] = {}
        self.comments_denied = False
        #: Instagram's order of a listing (Meta's page does not say; tools built on the API say
        #: newest first); Threads' follows its `reverse` parameter
        self.comments_newest_first = True
        self.reply_quota_total = 1000
        self.reply_quota_usage = 0
        self._seq = 0

    # -- what a test sets up and reads ---------------------------------------------------------

    def add_comment(
        self, media_id: str, text: str, *, username: str = "listener", parent: str | None = None
    ) -> str:
        """A comment by someone else under our post `media_id` (under the comment `parent`)."""
        with self.lock:
            return self._new_comment(media_id, text, username, f"u{len(username)}99", parent)

    def delete_comment(self, comment_id: str) -> None:
        """The comment is deleted (by its author, say), and every reply under it."""
        with self.lock:
            gone = {comment_id}
            while True:
                more = {c["id"] for c in self.comments.values() if c["parent_id"] in gone} - gone
                if not more:
                    break
                gone |= more
            for each in gone:
                self.comments.pop(each, None)

    def my_replies(self) -> list[dict[str, Any]]:
        """The replies the account wrote through the API, oldest first (what a person sees)."""
        with self.lock:
            return sorted((c for c in self.comments.values() if c["mine"]), key=_by_seq)

    def store_then_fail(self, operation: str, status: int = 500) -> None:
        """The next call to `operation` does its work, then answers HTTP `status`."""
        self.script[operation].append(f"stored:{status}")

    # -- internals -------------------------------------------------------------------------------

    def _new_comment(
        self, media_id: str, text: str, username: str, from_id: str, parent: str | None,
        *, mine: bool = False,
    ) -> str:  # fmt: skip
        self._seq += 1
        comment_id = "179" + "".join(secrets.choice("0123456789") for _ in range(14))
        moment = datetime.fromtimestamp(clock() + self._seq, UTC)
        self.comments[comment_id] = {
            "id": comment_id,
            "media_id": media_id,
            "parent_id": parent,
            "text": text,
            "username": username,
            "from_id": from_id,
            "seq": self._seq,
            "timestamp": moment.strftime("%Y-%m-%dT%H:%M:%S+0000"),
            "mine": mine,
        }
        return comment_id

    def _is_threads(self) -> bool:
        return self.flavour.name == "threads"

    def comments_route(self, call: Call, method: str, path: str, params: dict[str, str]) -> bool:
        """Answer a call of the comments; False when it is not one (FakeGraph goes on)."""
        segments = [s for s in path.split("/") if s]
        if len(segments) != 2:
            return False
        node, edge = segments
        threads = self._is_threads()
        kind = {
            ("GET", "comments"): None if threads else "comments",
            ("GET", "replies"): "replies",
            ("POST", "replies"): None if threads else "reply",
            ("GET", "conversation"): "conversation" if threads else None,
        }.get((method, edge))
        if threads and method == "POST" and edge == "threads" and params.get("reply_to_id"):
            kind = "reply_container"
        if threads and method == "POST" and edge == "threads_publish":
            with self.lock:
                container = self.containers.get(params.get("creation_id", ""))
            if container is None or not container.fields.get("reply_to_id"):
                return False
            kind = "reply_publish"
        if (
            threads
            and method == "GET"
            and edge == "threads_publishing_limit"
            and "reply_" in params.get("fields", "")
        ):
            kind = "reply_limit"
        if kind is None:
            return False
        call.begin(kind, path=path, params=dict(params))
        if call.refused() or self._graph_error(call) or not self._authorized(call):
            return True
        if self.comments_denied:
            scope = "threads_read_replies" if threads else "instagram_business_manage_comments"
            self._error(
                call, 403, 10, f"Application does not have permission for this action ({scope})"
            )
            return True
        {
            "comments": lambda: self._list(call, params, node, top_level=True),
            "replies": lambda: self._list(call, params, node, top_level=False),
            "conversation": lambda: self._list(call, params, node, top_level=False, deep=True),
            "reply": lambda: self._reply(call, params, node),
            "reply_container": lambda: self._reply_container(call, params, node),
            "reply_publish": lambda: self._reply_publish(call, params, node),
            "reply_limit": lambda: self._reply_limit(call, node),
        }[kind]()
        return True

    def _gone(self, call: Call, object_id: str) -> None:
        self._error(
            call, 400, 100,
            f"Unsupported get request. Object with ID '{object_id}' does not exist, cannot be "
            "loaded due to missing permissions, or does not support this operation",
            subcode=33, kind="GraphMethodException",
        )  # fmt: skip

    def _exists(self, object_id: str) -> bool:
        with self.lock:
            posts = {p["id"] for p in self.posts}
            return object_id in self.comments or object_id in posts

    def _done(self, call: Call, status: int, body: Any) -> None:
        """Answer work that was done, as scripted (`stored:N`: HTTP N instead)."""
        if call.behaviour.startswith("stored:"):
            self.answer_failure(call, int(call.behaviour.split(":")[1]))
            return
        call.answer(status, body)

    def _list(
        self, call: Call, params: dict[str, str], node: str, *, top_level: bool, deep: bool = False
    ) -> None:
        threads = self._is_threads()
        known = THREADS_FIELDS if threads else INSTAGRAM_FIELDS
        fields = split_fields(params.get("fields") or "id,text,timestamp")
        wrong = [name for name, _ in fields if name not in known]
        if wrong:
            node_type = "ThreadsMedia" if threads else "IGComment"
            return self._error(
                call, 400, 100, f"Tried accessing nonexisting field ({wrong[0]}) on node type "
                f"({node_type})",
            )  # fmt: skip
        if params.get("before") and params.get("after"):
            return self._error(call, 400, 100, "Both before and after cannot be passed")
        if not self._exists(node):
            return self._gone(call, node)
        limit = int(params.get("limit") or 25)
        if not 0 < limit <= 100:
            return self._error(call, 400, 100, "The parameter limit must be between 1 and 100")
        with self.lock:
            if deep:
                shown = [c for c in self.comments.values() if c["media_id"] == node]
            elif top_level:
                shown = [
                    c for c in self.comments.values()
                    if c["media_id"] == node and c["parent_id"] is None
                ]  # fmt: skip
            else:
                shown = [c for c in self.comments.values() if c["parent_id"] == node]
                if threads and node not in self.comments:  # the replies to the post itself
                    shown = [
                        c for c in self.comments.values()
                        if c["media_id"] == node and c["parent_id"] is None
                    ]  # fmt: skip
            shown.sort(key=_by_seq)
            if threads:
                newest_first = params.get("reverse", "true") != "false"
            else:
                newest_first = self.comments_newest_first
            if newest_first:
                shown.reverse()
            after = seq_of(params["after"]) if params.get("after") else None
            if after is not None:
                position = next((i for i, c in enumerate(shown) if c["seq"] == after), None)
                if position is None:  # the item it pointed at is gone: by order of making
                    keep = (
                        (lambda c: c["seq"] < after)
                        if newest_first
                        else (lambda c: c["seq"] > after)
                    )
                    shown = [c for c in shown if keep(c)]
                else:
                    shown = shown[position + 1 :]
            page, more = shown[:limit], len(shown) > limit
            data = [self._shown(c, fields) for c in page]
        body: dict[str, Any] = {"data": data}
        if page:
            body["paging"] = {
                "cursors": {
                    "before": cursor_of(page[0]["seq"]),
                    "after": cursor_of(page[-1]["seq"]),
                }
            }
            if more:
                body["paging"]["next"] = (
                    f"{self.url}/{node}/next?after={cursor_of(page[-1]['seq'])}"
                )
        call.answer(200, body)

    def _shown(self, comment: dict[str, Any], fields: list[tuple[str, str]]) -> dict[str, Any]:
        """A comment as Graph shows it, with the `fields` asked for (the lock is held)."""
        shown: dict[str, Any] = {}
        for name, nested in fields:
            if name in ("id", "text", "username", "timestamp"):
                shown[name] = comment[name]
            elif name == "from":
                shown["from"] = {"id": comment["from_id"], "username": comment["username"]}
            elif name == "replied_to":
                shown["replied_to"] = {"id": comment["parent_id"] or comment["media_id"]}
            elif name == "root_post":
                shown["root_post"] = {"id": comment["media_id"]}
            elif name == "is_reply":
                shown["is_reply"] = True
            elif name == "is_reply_owned_by_me":
                shown["is_reply_owned_by_me"] = comment["mine"]
            elif name == "replies":
                under = sorted(
                    (c for c in self.comments.values() if c["parent_id"] == comment["id"]),
                    key=_by_seq,
                )
                inner = split_fields(nested or "id,text,timestamp")
                shown["replies"] = {"data": [self._shown(c, inner) for c in under]}
        return shown

    def _mine(self, media_id: str, text: str, parent: str | None) -> str:
        return self._new_comment(
            media_id,
            text,
            self.username,
            self.user_id,
            parent,
            mine=True,
        )

    def _reply(self, call: Call, params: dict[str, str], node: str) -> None:
        """Instagram: `POST /{ig-comment-id}/replies` with `message`."""
        message = params.get("message", "")
        if not message.strip():
            return self._error(call, 400, 100, "The parameter message is required")
        with self.lock:
            comment = self.comments.get(node)
            if comment is not None:
                top = comment["parent_id"] or node  # a reply to a reply joins its top-level one
                made = self._mine(comment["media_id"], message, top)
        if comment is None:
            return self._gone(call, node)
        self._done(call, 200, {"id": made})

    def _reply_container(self, call: Call, params: dict[str, str], node: str) -> None:
        """Threads: a TEXT container answering `reply_to_id`."""
        from tests.fakes.instagram_server import Container

        text = params.get("text", "")
        if node != self.user_id:
            return self._error(call, 400, 100, "Unsupported request: wrong user id", subcode=33)
        if params.get("media_type") != "TEXT" or not text.strip():
            return self._error(call, 400, 100, "The parameter text is required for TEXT posts")
        if len(text) > REPLY_TEXT_MAX:
            return self._error(call, 400, 100, "Param text must be at most 500 characters long")
        if not self._exists(params["reply_to_id"]):
            return self._gone(call, params["reply_to_id"])
        with self.lock:
            container = Container(
                id="189" + "".join(secrets.choice("0123456789") for _ in range(14)),
                video_url="",
                text=text,
                fields=dict(params),
                state="FINISHED",
            )
            self.containers[container.id] = container
        self._done(call, 200, {"id": container.id})

    def _reply_publish(self, call: Call, params: dict[str, str], node: str) -> None:
        """Threads: publish a reply's container (once; the comment must still be there)."""
        with self.lock:
            container = self.containers[params["creation_id"]]
            state, answered = container.state, container.fields["reply_to_id"]
            target = self.comments.get(answered)
            root = target["media_id"] if target else answered
            there = target is not None or any(p["id"] == answered for p in self.posts)
            full = self.reply_quota_usage >= self.reply_quota_total
            if state == "FINISHED" and there and not full:
                container.state = "PUBLISHED"
                container.media_id = self._mine(root, container.text, answered if target else None)
                self.reply_quota_usage += 1
        if state != "FINISHED":
            return self._error(call, 400, 9007, "Media ID is not available", subcode=2207027)
        if not there:
            return self._gone(call, answered)
        if full:
            return self._error(
                call, 400, 9, "The user has reached the reply limit", subcode=2207042
            )
        self._done(call, 200, {"id": container.media_id})

    def _reply_limit(self, call: Call, node: str) -> None:
        call.answer(
            200,
            {
                "data": [
                    {
                        "reply_quota_usage": self.reply_quota_usage,
                        "reply_config": {
                            "quota_total": self.reply_quota_total,
                            "quota_duration": 86400,
                        },
                    }
                ]
            },
        )


def _by_seq(comment: dict[str, Any]) -> int:
    return int(comment["seq"])
