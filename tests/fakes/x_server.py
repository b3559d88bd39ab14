"""A fake X API v2 on 127.0.0.1 (tests/fakes/base.py): OAuth 2.0 token endpoint, chunked
media upload, posts.

    fake = x_server.start()
    settings: fake.settings()          # api_base, token_uri, auth_uri, client_id point here
    fake.script.append("credits")      # the next POST /2/tweets answers 402 credits depleted
    assert len(fake.posts) == 1

It speaks what Autoretto calls: `POST /2/oauth2/token` (authorization code with PKCE S256, and
refresh: refresh tokens are single-use, a used one is refused with `invalid_request`),
`GET /2/users/me`, `GET /2/users/:id/tweets`, `POST /2/media/upload/initialize`,
`/2/media/upload/:id/append` (multipart), `/2/media/upload/:id/finalize`,
`GET /2/media/upload?command=STATUS`, `POST /2/tweets`. Each call is recorded by its operation
(`token`, `me`, `timeline`, `initialize`, `append`, `finalize`, `status`, `create`), never with
its tokens. The bodies of initialize, append and POST /2/tweets are checked against X's OpenAPI
description through the `xdk` models (tests/fakes/x_contract.py); one that breaks it is
answered 400 with X's problem envelope.

Every operation takes the shared vocabulary (`status:N`, a 429 with `x-rate-limit-reset` as
well as Retry-After, `drop`, `hold`, `refuse`: 400 Invalid Request); POST /2/tweets
(`script.append`) also `credits` (402 credits depleted, nothing posted) and `duplicate` (403).
Switches: `processing_polls` (STATUS polls answering in_progress), `revoked`,
`expire_next_access`.

Replies (issue 28): `add_reply(post_id, text, ...)` puts someone else's reply in a post's
conversation, `delete_post(id)` deletes one; `GET /2/tweets/search/recent` (`search`, its query
checked against the SDK's description: x_contract.search_problem) finds a conversation's posts
by `conversation_id:`, and `POST /2/tweets` with `reply.in_reply_to_tweet_id` makes a reply of
the account's (`replies_to(id)`). `search_enrolled = False`: the app's access has no search
(403 client-forbidden); `scopes` (the token's) without tweet.read or tweet.write: 403. Besides
the shared words, `stored:N` on `create` makes the post, then answers N
(`store_then_fail(500)`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from email.parser import BytesParser
from email.policy import default
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.base import Call, FakeServer, clock
from tests.fakes.x_contract import (
    INVALID_REQUEST,
    body_problem,
    search_problem,
    segment_problem,
)

USER_ID = "1790000000000000001"
USERNAME = "rainlofi"
CLIENT_ID = "fake-x-client"


class FakeX(FakeServer):
    title = "X"
    publish_operation = "create"
    poll_interval = 0.05

    def __init__(self) -> None:
        super().__init__()
        self.posts: list[dict] = []
        self.media: dict[str, dict] = {}
        self.access_tokens: set[str] = set()
        self.refresh_tokens: set[str] = set()
        self.used_refresh_tokens: set[str] = set()
        self.codes: dict[str, dict] = {}
        self.processing_polls = 1
        self.now = "2026-11-29T10:05:00Z"  # the fake's clock: when a post is dated
        self.expire_next_access = False
        # The posting account's tier and how long the uploaded video runs: X's limits follow
        # the account (xdevplatform/docs x-api/media/quickstart/best-practices.mdx: 0.5-140 s
        # and <= 512 MB for tweet_video; POST /2/tweets re-checks the length).
        self.account_tier = "standard"
        self.video_seconds = 1.0
        # -- comments and replies (issue 28)
        self.others: list[dict] = []  # posts by other accounts (replies to ours)
        self.deleted: set[str] = set()
        self.search_enrolled = True
        self.scopes = {"tweet.read", "tweet.write", "users.read", "offline.access", "media.write"}
        self._ids = 0

    @property
    def token_uri(self) -> str:
        return self.url + "/2/oauth2/token"

    def settings(self, **extra: Any) -> str:
        lines = [
            f'api_base = "{self.url}"',
            f'token_uri = "{self.token_uri}"',
            f'auth_uri = "{self.url}/i/oauth2/authorize"',
            f'client_id = "{CLIENT_ID}"',
            "poll_wait = 0",
            "timeout = 30",
            "chunk_size = 16384",
        ]
        for key, value in extra.items():
            if isinstance(value, dict):
                inner = ", ".join(f"{k} = {json.dumps(v)}" for k, v in value.items())
                lines.append(f"{key} = {{{inner}}}")
            else:
                lines.append(f"{key} = {json.dumps(value)}")
        return "\n".join(lines) + "\n"

    def issue(self) -> dict[str, Any]:
        access, refresh = "xa-" + secrets.token_hex(12), "xr-" + secrets.token_hex(12)
        with self.lock:
            self.access_tokens.add(access)
            self.refresh_tokens.add(refresh)
        return {
            "token_type": "bearer",
            "access_token": access,
            "refresh_token": refresh,
            "expires_in": 7200,
            "scope": "tweet.read tweet.write users.read offline.access media.write",
        }

    def tokens(self, *, expired: bool = False) -> dict[str, Any]:
        """A token bundle as `autoretto connect x` seals it."""
        issued = self.issue()
        return {
            "access_token": issued["access_token"],
            "refresh_token": issued["refresh_token"],
            "expires_at": "2000-01-01T00:00:00Z" if expired else "2999-01-01T00:00:00Z",
            "client_id": CLIENT_ID,
            "client_secret": None,
            "token_uri": self.token_uri,
        }

    def account(self) -> dict[str, Any]:
        return {
            "account_id": USER_ID,
            "name": "@" + USERNAME,
            "tokens": self.tokens(),
            "meta": {"username": USERNAME},
        }

    def visible_copies(self) -> int:
        return len(self.posts)

    def consent(self, authorization_url: str) -> str:
        """A person pressing "Authorize app": the address the browser is sent to."""
        query = {k: v[0] for k, v in parse_qs(urlsplit(authorization_url).query).items()}
        assert query["code_challenge_method"] == "S256"
        assert "offline.access" in query["scope"].split()
        code = "code-" + secrets.token_hex(6)
        with self.lock:
            self.codes[code] = query
        return f"{query['redirect_uri']}?state={query['state']}&code={code}"

    # -- answers in X's words -------------------------------------------------------------------

    @staticmethod
    def problem(
        call: Call, status: int, title: str, detail: str, kind: str = "about:blank", **headers
    ) -> None:
        body = {"title": title, "detail": detail, "type": kind, "status": status}
        call.send(status, body, {k.replace("_", "-"): v for k, v in headers.items()})

    def failure(self, call: Call, status: int) -> Any:
        title = "Too Many Requests" if status == 429 else "Service Unavailable"
        return {"title": title, "detail": "try again", "type": "about:blank", "status": status}

    def failure_headers(self, call: Call, status: int, retry_after: int | None) -> dict:
        headers = super().failure_headers(call, status, retry_after)
        if status == 429 and retry_after is not None:
            # X's rate limits say when the window resets (docs.x.com, "Rate limits").
            headers["x-rate-limit-reset"] = str(int(clock()) + retry_after)
        return headers

    def refusal(self, call: Call) -> None:
        self.problem(
            call, 400, "Invalid Request", "The video could not be posted.", INVALID_REQUEST
        )

    # -- routing --------------------------------------------------------------------------------

    def route(self, call: Call) -> None:
        token = call.bearer
        authorized = token in self.access_tokens and not self.revoked
        kind = self._kind(call.method, call.path)
        parsed: Any = None
        body = call.body
        if body and call.content_type.startswith("application/json"):
            parsed = json.loads(body)
        elif body and call.content_type.startswith("application/x-www-form-urlencoded"):
            parsed = call.form
        call.begin(
            kind, sign_in=kind == "token", authorized=authorized, query=call.query, body=parsed
        )
        if kind == "token":
            return self._token(call, parsed or {})
        if not authorized:
            return self.problem(call, 401, "Unauthorized", "Unauthorized")
        with self.lock:
            if self.expire_next_access:
                self.expire_next_access = False
                self.access_tokens.discard(token)
                return self.problem(call, 401, "Unauthorized", "Unauthorized")
        getattr(self, "_" + kind)(call, parsed)

    @staticmethod
    def _kind(method: str, path: str) -> str:
        if path == "/2/oauth2/token":
            return "token"
        if path == "/2/users/me":
            return "me"
        if path.startswith("/2/users/") and path.endswith("/tweets"):
            return "timeline"
        if path == "/2/media/upload/initialize":
            return "initialize"
        if path.endswith("/append"):
            return "append"
        if path.endswith("/finalize"):
            return "finalize"
        if path == "/2/media/upload" and method == "GET":
            return "status"
        if path == "/2/tweets" and method == "POST":
            return "create"
        if path == "/2/tweets/search/recent" and method == "GET":
            return "search"
        return "unknown"

    def _unknown(self, call: Call, parsed: Any) -> None:
        self.problem(call, 404, "Not Found", "no such endpoint")

    def _token(self, call: Call, form: dict[str, str]) -> None:
        if call.refused():
            return
        grant = form.get("grant_type")
        if grant == "authorization_code":
            with self.lock:
                asked = self.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            challenge = (
                base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
                .rstrip(b"=")
                .decode()
            )
            if (
                asked is None
                or asked["code_challenge"] != challenge
                or asked["redirect_uri"] != form.get("redirect_uri")
            ):
                return call.send(400, {"error": "invalid_request", "error_description": "bad code"})
            return call.answer(200, self.issue())
        if grant == "refresh_token":
            given = form.get("refresh_token", "")
            with self.lock:
                good = given in self.refresh_tokens and not self.revoked
                self.refresh_tokens.discard(given)  # single use
                self.used_refresh_tokens.add(given)
            if not good:
                return call.send(
                    400,
                    {
                        "error": "invalid_request",
                        "error_description": "Value passed for the token was invalid.",
                    },
                )
            return call.answer(200, self.issue())
        call.send(400, {"error": "unsupported_grant_type"})

    def _me(self, call: Call, parsed: Any) -> None:
        if call.refused():
            return
        call.answer(200, {"data": {"id": USER_ID, "username": USERNAME, "name": "Rain Lofi"}})

    def _timeline(self, call: Call, parsed: Any) -> None:
        if call.refused():
            return
        since = call.query.get("start_time", "")
        found = [
            {
                "id": post["id"],
                "text": post["text"] + " https://t.co/fakemedia",
                "created_at": post["created_at"],
                "attachments": {"media_keys": post["media_keys"]},
                "conversation_id": post.get("conversation_id", post["id"]),
            }
            for post in reversed(self.posts)
            if post["created_at"] >= since
        ][: int(call.query.get("max_results", 10))]
        call.answer(200, {"data": found, "meta": {"result_count": len(found)}})

    def _initialize(self, call: Call, parsed: Any) -> None:
        problem = body_problem("initialize", parsed)
        if problem:
            return self.problem(call, 400, "Invalid Request", problem, INVALID_REQUEST)
        if call.refused():
            return
        if self.account_tier == "standard" and int(parsed["total_bytes"]) > 512 * 1024**2:
            return self.problem(call, 400, "Invalid Request", "File size exceeds 536870912 bytes.")
        # "Image: 5 MB" (https://docs.x.com/x-api/media)
        if (
            parsed.get("media_category") == "tweet_image"
            and int(parsed["total_bytes"]) > 5 * 1024**2
        ):
            return self.problem(call, 400, "Invalid Request", "File size exceeds 5242880 bytes.")
        with self.lock:
            media_id = str(1_880_000_000_000_000_000 + len(self.media))
            self.media[media_id] = {
                "total": int(parsed["total_bytes"]),
                "chunks": {},
                "finalized": False,
                "polls": 0,
                "category": parsed.get("media_category"),
            }
        call.answer(
            200,
            {"data": {"id": media_id, "media_key": f"7_{media_id}", "expires_after_secs": 86400}},
        )

    def _append(self, call: Call, parsed: Any) -> None:
        media_id = call.path.split("/")[4]
        message = BytesParser(policy=default).parsebytes(
            f"Content-Type: {call.content_type}\r\n\r\n".encode() + call.body
        )
        fields: dict[str, Any] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            fields[name] = part.get_payload(decode=True)
        problem = segment_problem(fields)
        if problem:
            return self.problem(call, 400, "Invalid Request", problem, INVALID_REQUEST)
        if call.refused():
            return
        with self.lock:
            self.media[media_id]["chunks"][int(fields["segment_index"])] = fields["media"]
        call.answer(200, {"data": {"expires_at": 1_900_000_000}})

    def _finalize(self, call: Call, parsed: Any) -> None:
        if call.refused():
            return
        media_id = call.path.split("/")[4]
        item = self.media[media_id]
        received = sum(len(chunk) for chunk in item["chunks"].values())
        if received != item["total"]:
            return self.problem(
                call, 400, "Invalid Request", f"got {received} of {item['total']} bytes"
            )
        item["finalized"] = True
        state = "pending" if self.processing_polls else "succeeded"
        call.answer(
            200,
            {
                "data": {
                    "id": media_id,
                    "media_key": f"7_{media_id}",
                    "processing_info": {"state": state, "check_after_secs": 1},
                }
            },
        )

    def _status(self, call: Call, parsed: Any) -> None:
        if call.refused():
            return
        item = self.media[call.query["media_id"]]
        item["polls"] += 1
        state = "succeeded" if item["polls"] >= self.processing_polls else "in_progress"
        call.answer(
            200,
            {
                "data": {
                    "id": call.query["media_id"],
                    "processing_info": {"state": state, "check_after_secs": 1},
                }
            },
        )

    def _create(self, call: Call, parsed: Any) -> None:
        problem = body_problem("create", parsed)
        if problem:
            return self.problem(call, 400, "Invalid Request", problem, INVALID_REQUEST)
        if call.refused():
            return
        behaviour = call.behaviour
        if "tweet.write" not in self.scopes:
            return self._forbidden(call)
        reply_to = (parsed.get("reply") or {}).get("in_reply_to_tweet_id")
        if reply_to and not self._visible(reply_to):
            return call.send(
                403,
                {
                    "detail": "You attempted to reply to a Tweet that is deleted or not visible "
                    "to you.",
                    "type": "about:blank",
                    "title": "Forbidden",
                    "status": 403,
                },
            )
        if behaviour == "credits":
            return self.problem(
                call,
                402,
                "CreditsDepleted",
                "Your enrolled account does not have any credits to fulfill this request.",
                "https://api.x.com/2/problems/credits-depleted",
            )
        if behaviour == "duplicate" or any(p["text"] == parsed["text"] for p in self.posts):
            return call.send(
                403,
                {
                    "detail": "You are not allowed to create a Tweet with duplicate content.",
                    "type": "about:blank",
                    "title": "Forbidden",
                    "status": 403,
                },
            )
        media_ids = parsed.get("media", {}).get("media_ids", [])
        # media.media_ids: 1 to 4 elements (https://docs.x.com/x-api/posts/create-post); the
        # SDK's model does not carry the bound, so it is checked here
        if not 1 <= len(media_ids) <= 4 and "media" in parsed:
            return self.problem(
                call, 400, "Invalid Request", "media.media_ids must have 1 to 4 items",
                INVALID_REQUEST,
            )  # fmt: skip
        categories = {self.media.get(m, {}).get("category") for m in media_ids}
        if len(media_ids) > 1 and categories != {"tweet_image"}:
            return self.problem(
                call, 400, "Invalid Request", "only images may be posted several at once",
                INVALID_REQUEST,
            )  # fmt: skip
        for media_id in media_ids:
            if not self.media.get(media_id, {}).get("finalized"):
                return self.problem(call, 400, "Invalid Request", f"media {media_id} is not ready")
        longest = 140 if self.account_tier == "standard" else 125 * 60
        if "tweet_video" in categories and self.video_seconds > longest:
            return call.send(
                403,
                {
                    "detail": "You are not allowed to post a video longer than 2 minutes "
                    "and 20 seconds.",
                    "type": "about:blank",
                    "title": "Forbidden",
                    "status": 403,
                },
            )
        with self.lock:
            post = {
                "id": self._next_id(),
                "text": parsed["text"],
                "media_keys": [f"7_{m}" for m in media_ids],
                "created_at": self.now,
                "made_with_ai": parsed.get("made_with_ai") is True,
            }
            reply_to = (parsed.get("reply") or {}).get("in_reply_to_tweet_id")
            if reply_to:
                post["in_reply_to"] = reply_to
                post["conversation_id"] = self._conversation_of(reply_to)
            self.posts.append(post)
        if call.behaviour.startswith("stored:"):
            return self.answer_failure(call, int(call.behaviour.split(":")[1]))
        call.answer(201, {"data": {"id": post["id"], "text": post["text"]}})

    # -- comments and replies (issue 28) ----------------------------------------------------
    # GET /2/tweets/search/recent with `conversation_id:`, as
    # https://docs.x.com/x-api/posts/search/integrate/overview describes it.

    def _next_id(self) -> str:
        """Post ids grow with time, as X's do (`since_id` relies on it); a caller holds the lock
        or is the test's own thread."""
        self._ids += 1
        return str(1_990_000_000_000_000_000 + self._ids)

    def add_reply(
        self, post_id: str, text: str, *, username: str = "ana", author_id: str = "101",
        created_at: str | None = None,
    ) -> str:  # fmt: skip
        """Someone else's reply to post `post_id` (one of ours, or a reply in its
        conversation); its id."""
        with self.lock:
            reply = {
                "id": self._next_id(),
                "text": text,
                "author_id": author_id,
                "username": username,
                "created_at": created_at or self.now,
                "in_reply_to": post_id,
                "conversation_id": self._conversation_of(post_id),
            }
            self.others.append(reply)
        return reply["id"]

    def store_then_fail(self, status: int = 500) -> None:
        """The next reply is stored, then answered `status` (`create` scripted `stored:N`)."""
        self.script["create"].append(f"stored:{status}")

    def delete_post(self, post_id: str) -> None:
        with self.lock:
            self.deleted.add(post_id)

    def replies_to(self, post_id: str) -> list[dict]:
        """The account's live replies to `post_id`."""
        with self.lock:
            return [
                post
                for post in self.posts
                if post.get("in_reply_to") == post_id and post["id"] not in self.deleted
            ]

    def _conversation_of(self, post_id: str) -> str:
        for post in [*self.posts, *self.others]:
            if post["id"] == post_id:
                return post.get("conversation_id", post["id"])
        return post_id

    def _visible(self, post_id: str) -> bool:
        known = any(post["id"] == post_id for post in [*self.posts, *self.others])
        return known and post_id not in self.deleted

    def _forbidden(self, call: Call) -> None:
        self.problem(
            call, 403, "Forbidden", "You are not permitted to perform this action.",
            "https://api.x.com/2/problems/not-authorized-for-resource",
        )  # fmt: skip

    def _search(self, call: Call, parsed: Any) -> None:
        problem = search_problem(call.query)
        if problem:
            return self.problem(call, 400, "Invalid Request", problem, INVALID_REQUEST)
        if call.refused():
            return
        if not self.search_enrolled:
            # https://docs.x.com/x-api/fundamentals/response-codes-and-errors: client-forbidden
            return call.send(
                403,
                {
                    "title": "Client Forbidden",
                    "detail": "This request must be made using an approved developer account "
                    "that is enrolled in the requested endpoint.",
                    "reason": "client-not-enrolled",
                    "type": "https://api.x.com/2/problems/client-forbidden",
                    "status": 403,
                },
            )
        if "tweet.read" not in self.scopes:
            return self._forbidden(call)
        words = call.query["query"].split()
        conversation = next(
            (w.split(":", 1)[1] for w in words if w.startswith("conversation_id:")), None
        )
        since = int(call.query.get("since_id") or 0)
        size = int(call.query.get("max_results") or 10)
        offset = int(call.query.get("next_token") or 0)
        with self.lock:
            everyone = [
                {**post, "author_id": USER_ID, "username": USERNAME} for post in self.posts
            ] + list(self.others)
            found = sorted(
                (
                    post
                    for post in everyone
                    if conversation is not None
                    and post.get("conversation_id", post["id"]) == conversation
                    and post["id"] not in self.deleted
                    and int(post["id"]) > since
                ),
                key=lambda post: -int(post["id"]),
            )
        page = found[offset : offset + size]
        expanded = "author_id" in call.query.get("expansions", "").split(",")
        data = []
        for post in page:
            item = {"id": post["id"], "text": post["text"], "edit_history_tweet_ids": [post["id"]]}
            fields = call.query.get("tweet.fields", call.query.get("post.fields", ""))
            for field in ("created_at", "conversation_id"):
                if field in fields.split(","):
                    item[field] = post.get(field)
            if expanded:
                item["author_id"] = post["author_id"]
            data.append(item)
        answer: dict[str, Any] = {"meta": {"result_count": len(data)}}
        if data:
            answer["data"] = data
            answer["meta"].update(newest_id=data[0]["id"], oldest_id=data[-1]["id"])
        if expanded and data:
            authors = {post["author_id"]: post["username"] for post in page}
            answer["includes"] = {
                "users": [{"id": a, "username": u, "name": u} for a, u in authors.items()]
            }
        if offset + size < len(found):
            answer["meta"]["next_token"] = str(offset + size)
        call.answer(200, answer)


def start() -> FakeX:
    return FakeX().start()
