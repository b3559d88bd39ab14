"""A fake X API v2 on 127.0.0.1: OAuth 2.0 token endpoint, chunked media upload, posts.

    fake = x_server.start()
    settings: api_base = fake.url, token_uri = fake.token_uri
    fake.script.append("credits")      # the next POST /2/tweets answers 402 credits depleted
    assert len(fake.posts) == 1

It speaks what Autoretto calls: `POST /2/oauth2/token` (authorization code with PKCE S256, and
refresh: refresh tokens are single-use, a used one is refused with `invalid_request`),
`GET /2/users/me`, `GET /2/users/:id/tweets`, `POST /2/media/upload/initialize`,
`/2/media/upload/:id/append` (multipart), `/2/media/upload/:id/finalize`,
`GET /2/media/upload?command=STATUS`, `POST /2/tweets`. Every request is recorded by what it was,
never with its tokens. The bodies of initialize, append and POST /2/tweets are checked against
X's OpenAPI description through the `xdk` models (tests/fakes/x_contract.py); one that breaks it
is answered 400 with X's problem envelope.

Script for POST /2/tweets (one word per call, default `ok`): `ok`, `status:N`, `drop` (post,
then hang up), `credits` (402 credits depleted, nothing posted), `duplicate` (403). Switches:
`processing_polls` (STATUS polls answering in_progress), `revoked`, `expire_next_access`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from collections import deque
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import default
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.x_contract import INVALID_REQUEST, body_problem, segment_problem

USER_ID = "1790000000000000001"
USERNAME = "rainlofi"
CLIENT_ID = "fake-x-client"


@dataclass
class Seen:
    kind: str
    authorized: bool
    query: dict[str, str] = field(default_factory=dict)
    body: Any = None


@dataclass
class FakeX:
    server: ThreadingHTTPServer
    script: deque = field(default_factory=deque)
    requests: list[Seen] = field(default_factory=list)
    posts: list[dict] = field(default_factory=list)
    media: dict[str, dict] = field(default_factory=dict)
    access_tokens: set[str] = field(default_factory=set)
    refresh_tokens: set[str] = field(default_factory=set)
    used_refresh_tokens: set[str] = field(default_factory=set)
    codes: dict[str, dict] = field(default_factory=dict)
    processing_polls: int = 1
    now: str = "2026-11-29T10:05:00Z"  # the fake's clock: when a post is dated
    revoked: bool = False
    expire_next_access: bool = False
    # The posting account's tier and how long the uploaded video runs: X's limits follow the
    # account (xdevplatform/docs x-api/media/quickstart/best-practices.mdx: 0.5-140 s and
    # <= 512 MB for tweet_video; POST /2/tweets re-checks the length).
    account_tier: str = "standard"
    video_seconds: float = 1.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

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
            "timeout = 5",
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

    def consent(self, authorization_url: str) -> str:
        """A person pressing "Authorize app": the address the browser is sent to."""
        query = {k: v[0] for k, v in parse_qs(urlsplit(authorization_url).query).items()}
        assert query["code_challenge_method"] == "S256"
        assert "offline.access" in query["scope"].split()
        code = "code-" + secrets.token_hex(6)
        with self.lock:
            self.codes[code] = query
        return f"{query['redirect_uri']}?state={query['state']}&code={code}"

    def count(self, kind: str) -> int:
        return sum(1 for seen in self.requests if seen.kind == kind)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start() -> FakeX:
    fake: FakeX

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self._serve("GET", b"")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            self._serve("POST", self.rfile.read(length))

        def answer(self, status: int, body: dict | None = None, **headers: str) -> None:
            data = json.dumps(body or {}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.end_headers()
            self.wfile.write(data)

        def problem(self, status: int, title: str, detail: str, kind: str = "about:blank") -> None:
            self.answer(status, {"title": title, "detail": detail, "type": kind, "status": status})

        def _serve(self, method: str, body: bytes) -> None:
            parts = urlsplit(self.path)
            path = parts.path
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            authorized = token in fake.access_tokens and not fake.revoked
            kind = self._kind(method, path, query)
            parsed: Any = None
            content_type = self.headers.get("Content-Type", "")
            if body and content_type.startswith("application/json"):
                parsed = json.loads(body)
            elif body and content_type.startswith("application/x-www-form-urlencoded"):
                parsed = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            with fake.lock:
                fake.requests.append(Seen(kind, authorized, query, parsed))
            if kind == "token":
                self._token(parsed or {})
                return
            if not authorized:
                self.problem(401, "Unauthorized", "Unauthorized")
                return
            with fake.lock:
                if fake.expire_next_access:
                    fake.expire_next_access = False
                    fake.access_tokens.discard(token)
                    self.problem(401, "Unauthorized", "Unauthorized")
                    return
            getattr(self, "_" + kind)(path, query, parsed, body, content_type)

        @staticmethod
        def _kind(method: str, path: str, query: dict[str, str]) -> str:
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
            return "unknown"

        def _unknown(self, *args: Any) -> None:
            self.problem(404, "Not Found", "no such endpoint")

        def _token(self, form: dict[str, str]) -> None:
            grant = form.get("grant_type")
            if grant == "authorization_code":
                with fake.lock:
                    asked = fake.codes.pop(form.get("code", ""), None)
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
                    self.answer(400, {"error": "invalid_request", "error_description": "bad code"})
                    return
                self.answer(200, fake.issue())
                return
            if grant == "refresh_token":
                given = form.get("refresh_token", "")
                with fake.lock:
                    good = given in fake.refresh_tokens and not fake.revoked
                    fake.refresh_tokens.discard(given)  # single use
                    fake.used_refresh_tokens.add(given)
                if not good:
                    self.answer(
                        400,
                        {
                            "error": "invalid_request",
                            "error_description": "Value passed for the token was invalid.",
                        },
                    )
                    return
                self.answer(200, fake.issue())
                return
            self.answer(400, {"error": "unsupported_grant_type"})

        def _me(self, *args: Any) -> None:
            self.answer(200, {"data": {"id": USER_ID, "username": USERNAME, "name": "Rain Lofi"}})

        def _timeline(self, path, query, parsed, body, content_type) -> None:
            since = query.get("start_time", "")
            found = [
                {
                    "id": post["id"],
                    "text": post["text"] + " https://t.co/fakemedia",
                    "created_at": post["created_at"],
                    "attachments": {"media_keys": post["media_keys"]},
                }
                for post in reversed(fake.posts)
                if post["created_at"] >= since
            ][: int(query.get("max_results", 10))]
            self.answer(200, {"data": found, "meta": {"result_count": len(found)}})

        def _initialize(self, path, query, parsed, body, content_type) -> None:
            problem = body_problem("initialize", parsed)
            if problem:
                self.problem(400, "Invalid Request", problem, INVALID_REQUEST)
                return
            if fake.account_tier == "standard" and int(parsed["total_bytes"]) > 512 * 1024**2:
                self.problem(400, "Invalid Request", "File size exceeds 536870912 bytes.")
                return
            media_id = str(1_880_000_000_000_000_000 + len(fake.media))
            with fake.lock:
                fake.media[media_id] = {
                    "total": int(parsed["total_bytes"]),
                    "chunks": {},
                    "finalized": False,
                    "polls": 0,
                    "category": parsed.get("media_category"),
                }
            self.answer(
                200,
                {
                    "data": {
                        "id": media_id,
                        "media_key": f"7_{media_id}",
                        "expires_after_secs": 86400,
                    }
                },
            )

        def _append(self, path, query, parsed, body, content_type) -> None:
            media_id = path.split("/")[4]
            message = BytesParser(policy=default).parsebytes(
                f"Content-Type: {content_type}\r\n\r\n".encode() + body
            )
            fields: dict[str, Any] = {}
            for part in message.iter_parts():
                name = part.get_param("name", header="content-disposition")
                fields[name] = part.get_payload(decode=True)
            problem = segment_problem(fields)
            if problem:
                self.problem(400, "Invalid Request", problem, INVALID_REQUEST)
                return
            with fake.lock:
                fake.media[media_id]["chunks"][int(fields["segment_index"])] = fields["media"]
            self.answer(200, {"data": {"expires_at": 1_900_000_000}})

        def _finalize(self, path, query, parsed, body, content_type) -> None:
            media_id = path.split("/")[4]
            item = fake.media[media_id]
            received = sum(len(chunk) for chunk in item["chunks"].values())
            if received != item["total"]:
                self.problem(400, "Invalid Request", f"got {received} of {item['total']} bytes")
                return
            item["finalized"] = True
            state = "pending" if fake.processing_polls else "succeeded"
            self.answer(
                200,
                {
                    "data": {
                        "id": media_id,
                        "media_key": f"7_{media_id}",
                        "processing_info": {"state": state, "check_after_secs": 1},
                    }
                },
            )

        def _status(self, path, query, parsed, body, content_type) -> None:
            item = fake.media[query["media_id"]]
            item["polls"] += 1
            state = "succeeded" if item["polls"] >= fake.processing_polls else "in_progress"
            self.answer(
                200,
                {
                    "data": {
                        "id": query["media_id"],
                        "processing_info": {"state": state, "check_after_secs": 1},
                    }
                },
            )

        def _create(self, path, query, parsed, body, content_type) -> None:
            problem = body_problem("create", parsed)
            if problem:
                self.problem(400, "Invalid Request", problem, INVALID_REQUEST)
                return
            with fake.lock:
                behaviour = fake.script.popleft() if fake.script else "ok"
            if behaviour.startswith("status:"):
                status = int(behaviour.split(":")[1])
                self.problem(status, "Service Unavailable", "try again", **{})
                return
            if behaviour == "credits":
                self.problem(
                    402,
                    "CreditsDepleted",
                    "Your enrolled account does not have any credits to fulfill this request.",
                    "https://api.x.com/2/problems/credits-depleted",
                )
                return
            if behaviour == "duplicate" or any(p["text"] == parsed["text"] for p in fake.posts):
                self.answer(
                    403,
                    {
                        "detail": "You are not allowed to create a Tweet with duplicate content.",
                        "type": "about:blank",
                        "title": "Forbidden",
                        "status": 403,
                    },
                )
                return
            media_ids = parsed.get("media", {}).get("media_ids", [])
            for media_id in media_ids:
                if not fake.media.get(media_id, {}).get("finalized"):
                    self.problem(400, "Invalid Request", f"media {media_id} is not ready")
                    return
            longest = 140 if fake.account_tier == "standard" else 125 * 60
            if media_ids and fake.video_seconds > longest:
                self.answer(
                    403,
                    {
                        "detail": "You are not allowed to post a video longer than 2 minutes "
                        "and 20 seconds.",
                        "type": "about:blank",
                        "title": "Forbidden",
                        "status": 403,
                    },
                )
                return
            post = {
                "id": str(1_990_000_000_000_000_000 + len(fake.posts)),
                "text": parsed["text"],
                "media_keys": [f"7_{m}" for m in media_ids],
                "created_at": fake.now,
            }
            with fake.lock:
                fake.posts.append(post)
            if behaviour == "drop":
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.answer(201, {"data": {"id": post["id"], "text": post["text"]}})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    fake = FakeX(server)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return fake
