"""A local stand-in for LinkedIn: Videos API, Posts API and 3-legged OAuth, on 127.0.0.1.

    with FakeLinkedIn() as fake:
        fake.script["post"].append("drop")       # create the post, then hang up
        fake.processing_polls = 2                # two polls show PROCESSING
        ... [platforms.linkedin] fake.settings() ...
        assert len(fake.posts) == 1

It speaks PLATFORMS.md §4: `POST /rest/videos?action=initializeUpload` (upload instructions in
parts of `part_size` bytes), `PUT` of each part (answered with an `ETag`), `finalizeUpload`
(the ETags must come in order), `GET /rest/videos/{urn}` (WAITING_UPLOAD → PROCESSING →
AVAILABLE, or PROCESSING_FAILED), `POST /rest/posts` (201 + `x-restli-id`; the same author and
commentary again → 422 "Content is a duplicate of urn:li:share:…"), `GET /rest/posts?q=author`
and `GET /rest/posts/{urn}`; and the sign-in: the consent page (a person pressing Allow),
`/oauth/v2/accessToken` and `/v2/userinfo`. REST calls must carry `LinkedIn-Version` and
`X-Restli-Protocol-Version: 2.0.0`.

LinkedIn publishes no machine-readable description, so its documented rules are written here,
each with its page:
- the version window: a `LinkedIn-Version` is served from its month until its sunset (the
  migrations table; a version missing there is served a year, to the 15th); a sunset or unknown
  version is answered 426 `NONEXISTENT_VERSION`; "today" is the test's clock (AUTORETTO_NOW);
- the scopes per endpoint: posting and uploading need `w_member_social` (or
  `w_organization_social` for an organisation), reading posts `r_member_social` (or
  `r_organization_social`); a token without it is answered 403 `ACCESS_DENIED`. Each token
  carries the scopes granted when it was issued (`granted`), as LinkedIn's do.

Each request of a kind takes the next scripted behaviour of that kind (default: work):
`status:N` (HTTP N, nothing done; 429 adds `Retry-After` when `retry_after` is set), `drop`
(do the work, then hang up), `hangup` (hang up, nothing done). Every request is recorded
without its secrets.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import socket
import threading
from collections import defaultdict, deque
from dataclasses import dataclass, field
from datetime import date, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

# https://learn.microsoft.com/linkedin/marketing/integrations/migrations (sunset dates) and
# https://learn.microsoft.com/linkedin/marketing/versioning ("supported ... a minimum of one
# year"; calls without a version header, or with one not active, are refused).
SUNSETS = {
    "202510": date(2026, 10, 15),
    "202511": date(2026, 11, 16),
    "202601": date(2027, 1, 15),
    "202602": date(2027, 2, 15),
    "202603": date(2027, 3, 16),
}
# https://learn.microsoft.com/linkedin/marketing/community-management/shares/posts-api and
# .../videos-api: the permission each call needs (an organisation's posts need the
# organisation's permission instead).
WRITE_SCOPES = {"w_member_social", "w_organization_social"}
READ_SCOPES = {"r_member_social", "r_organization_social"}
#: kind of REST call -> (the scope a member's call needs, the one an organisation's needs)
SCOPE_OF = {
    "initialize": ("w_member_social", "w_organization_social"),
    "finalize": ("w_member_social", "w_organization_social"),
    "video": ("w_member_social", "w_organization_social"),
    "post": ("w_member_social", "w_organization_social"),
    "list": ("r_member_social", "r_organization_social"),
    "get_post": ("r_member_social", "r_organization_social"),
}

CLIENT_ID = "78fakeclientid"
CLIENT_SECRET = "fake-linkedin-secret-do-not-print"
MEMBER_SUB = "AbC123xYz"
MEMBER_URN = f"urn:li:person:{MEMBER_SUB}"
ORGANIZATION_URN = "urn:li:organization:5515715"


def today() -> date:
    """The fake's day: the test's clock."""
    clock = os.environ.get("AUTORETTO_NOW")
    moment = datetime.fromisoformat(clock.replace("Z", "+00:00")) if clock else datetime.now()
    return moment.date()


def version_active(version: str, day: date) -> bool:
    """Is this LinkedIn-Version served on `day`? Released by its month, not yet sunset."""
    found = re.fullmatch(r"(20[0-9]{2})(0[1-9]|1[0-2])(\.[0-9]{2})?", version)
    if not found:
        return False
    year, month = int(found.group(1)), int(found.group(2))
    sunset = SUNSETS.get(version[:6], date(year + 1, month, 15))
    return date(year, month, 1) <= day < sunset


@dataclass
class Video:
    urn: str
    owner: str
    size: int
    parts: list[tuple[int, int]]
    etags: dict[int, str] = field(default_factory=dict)
    received: dict[int, bytes] = field(default_factory=dict)
    finalized: bool = False
    polls_left: int = 0
    failure: str | None = None


@dataclass
class Post:
    urn: str
    author: str
    commentary: str
    video: str
    title: str
    body: dict[str, Any]


class FakeLinkedIn:
    def __init__(self, *, part_size: int = 16384) -> None:
        self.part_size = part_size
        self.requests: list[dict[str, Any]] = []
        self.script: defaultdict[str, deque[str]] = defaultdict(deque)
        self.videos: dict[str, Video] = {}
        self.posts: list[Post] = []
        self.processing_polls = 0
        self.processing_failure: str | None = None  # the next finalized video fails with this
        self.revoked = False
        self.retry_after: int | None = None
        # What the consent grants; r_member_social is a restricted permission most apps lack.
        self.granted = "openid,profile,w_member_social"
        self.access_tokens: dict[str, set[str]] = {}
        self.codes: dict[str, str] = {}
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    # -- lifecycle and helpers for tests -------------------------------------------------------

    def __enter__(self) -> FakeLinkedIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def settings(self) -> str:
        """The `[platforms.linkedin]` lines that point Autoretto here, with no waiting."""
        return (
            f'api_base = "{self.url}"\nauth_uri = "{self.url}/oauth/v2/authorization"\n'
            f'token_uri = "{self.url}/oauth/v2/accessToken"\npoll_wait = "0s"\n'
        )

    def issue_token(self, scopes: str | None = None) -> str:
        """A token carrying `scopes` (comma or space separated; default: `granted`)."""
        token = "AQVfake-" + secrets.token_urlsafe(12)
        with self._lock:
            self.access_tokens[token] = set(re.split(r"[ ,]+", scopes or self.granted))
        return token

    def count(self, kind: str) -> int:
        return sum(1 for r in self.requests if r["kind"] == kind)

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["kind"] == kind]

    def add_post(self, commentary: str, author: str = MEMBER_URN) -> str:
        """A post already on the author's feed."""
        with self._lock:
            urn = f"urn:li:share:{7000 + len(self.posts) + 1}"
            self.posts.append(Post(urn, author, commentary, "", "", {}))
        return urn

    # -- HTTP plumbing -------------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                return

            def do_GET(self) -> None:
                fake._dispatch(self, "GET")

            def do_POST(self) -> None:
                fake._dispatch(self, "POST")

            def do_PUT(self) -> None:
                fake._dispatch(self, "PUT")

            def reply(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def hang_up(self) -> None:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.request.shutdown(socket.SHUT_RDWR)

        return Handler

    def _dispatch(self, handler: Any, method: str) -> None:
        parts = urlsplit(handler.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        path = parts.path
        if path == "/oauth/v2/authorization" and method == "GET":
            return self._consent(handler, query)
        if path == "/oauth/v2/accessToken" and method == "POST":
            return self._token(handler, body)
        if path == "/v2/userinfo" and method == "GET":
            return self._userinfo(handler)
        if path.startswith("/upload/") and method == "PUT":
            return self._part(handler, path, body)
        if path == "/rest/videos" and method == "POST":
            kind = {"initializeUpload": "initialize", "finalizeUpload": "finalize"}.get(
                query.get("action", ""), "unknown"
            )
            return self._rest(handler, kind, body, query)
        if path.startswith("/rest/videos/") and method == "GET":
            return self._rest(handler, "video", body, query, unquote(path[len("/rest/videos/") :]))
        if path == "/rest/posts" and method == "POST":
            return self._rest(handler, "post", body, query)
        if path == "/rest/posts" and method == "GET":
            return self._rest(handler, "list", body, query)
        if path.startswith("/rest/posts/") and method == "GET":
            return self._rest(
                handler, "get_post", body, query, unquote(path[len("/rest/posts/") :])
            )
        return handler.reply(404, {"status": 404, "message": f"no {method} {path}"})

    def _record(self, handler: Any, kind: str, **facts: Any) -> None:
        with self._lock:
            self.requests.append(
                {
                    "kind": kind,
                    "version": handler.headers.get("LinkedIn-Version"),
                    "restli": handler.headers.get("X-Restli-Protocol-Version"),
                    "authorized": handler.headers.get("Authorization", "").startswith("Bearer "),
                    **facts,
                }
            )

    def _scripted(self, kind: str) -> str:
        with self._lock:
            return self.script[kind].popleft() if self.script[kind] else "work"

    def _refuse(self, handler: Any, behaviour: str) -> bool:
        if behaviour.startswith("status:"):
            status = int(behaviour.split(":")[1])
            headers = {}
            if status == 429 and self.retry_after is not None:
                headers["Retry-After"] = str(self.retry_after)
            handler.reply(status, {"status": status, "message": "scripted trouble"}, headers)
            return True
        if behaviour == "hangup":
            handler.hang_up()
            return True
        return False

    def _scopes(self, handler: Any) -> set[str]:
        token = handler.headers.get("Authorization", "").removeprefix("Bearer ")
        with self._lock:
            return set(self.access_tokens.get(token, ()))

    def _permitted(self, handler: Any, kind: str, payload: dict, query: dict) -> bool:
        """The call's permission: a member's or an organisation's, by the urn it acts for."""
        if kind not in SCOPE_OF:
            return True
        acting_for = str(
            (payload.get("initializeUploadRequest") or {}).get("owner")
            or payload.get("author")
            or query.get("author")
            or ""
        )
        member, organization = SCOPE_OF[kind]
        needed = organization if acting_for.startswith("urn:li:organization:") else member
        granted = self._scopes(handler)
        # A video's status names no author: either write permission reads it.
        if needed in granted or (kind == "video" and granted & WRITE_SCOPES):
            return True
        # The shape of LinkedIn's permission refusal (wording UNCONFIRMED; status and code from
        # https://learn.microsoft.com/linkedin/shared/api-guide/concepts/error-handling).
        handler.reply(
            403,
            {
                "status": 403,
                "serviceErrorCode": 100,
                "code": "ACCESS_DENIED",
                "message": f"Not enough permissions to access: {kind} (needs {needed})",
            },
        )
        return False

    def _authorized(self, handler: Any) -> bool:
        token = handler.headers.get("Authorization", "").removeprefix("Bearer ")
        with self._lock:
            good = token in self.access_tokens and not self.revoked
        if not good:
            handler.reply(
                401,
                {
                    "status": 401,
                    "serviceErrorCode": 65601,
                    "code": "REVOKED_ACCESS_TOKEN",
                    "message": "The token used in the request has been revoked by the user",
                },
            )
        return good

    # -- REST ----------------------------------------------------------------------------------

    def _rest(
        self, handler: Any, kind: str, body: bytes, query: dict[str, str], urn: str = ""
    ) -> None:
        payload = json.loads(body) if body else {}
        self._record(handler, kind, query=query, json=payload, urn=urn)
        behaviour = self._scripted(kind)
        if self._refuse(handler, behaviour) or not self._authorized(handler):
            return None
        if not handler.headers.get("LinkedIn-Version") or (
            handler.headers.get("X-Restli-Protocol-Version") != "2.0.0"
        ):
            return handler.reply(426, {"status": 426, "message": "version headers missing"})
        version = handler.headers["LinkedIn-Version"]
        if not version_active(version, today()):
            return handler.reply(
                426,
                {
                    "status": 426,
                    "code": "NONEXISTENT_VERSION",
                    "message": f"Requested version {version} is not active",
                },
            )
        if not self._permitted(handler, kind, payload, query):
            return None
        status, answer, headers = {
            "initialize": self._initialize,
            "finalize": self._finalize,
            "video": self._video,
            "post": self._post,
            "list": self._list,
            "get_post": self._get_post,
        }.get(kind, lambda p, q, u: (400, {"message": "unknown action"}, {}))(payload, query, urn)
        if behaviour == "drop":
            return handler.hang_up()
        return handler.reply(status, answer, headers)

    def _initialize(self, payload: dict, query: dict, urn: str) -> tuple[int, Any, dict]:
        request = payload.get("initializeUploadRequest") or {}
        size = int(request.get("fileSizeBytes") or 0)
        owner = str(request.get("owner") or "")
        if size <= 0 or not owner.startswith(("urn:li:person:", "urn:li:organization:")):
            return 422, {"status": 422, "message": "owner and fileSizeBytes are required"}, {}
        with self._lock:
            urn = f"urn:li:video:D4fake{len(self.videos) + 1}"
            parts = [
                (first, min(first + self.part_size, size) - 1)
                for first in range(0, size, self.part_size)
            ]
            self.videos[urn] = Video(urn, owner, size, parts)
        index = urn.rsplit("fake", 1)[1]
        instructions = [
            {"uploadUrl": f"{self.url}/upload/{index}/{n}", "firstByte": a, "lastByte": b}
            for n, (a, b) in enumerate(parts)
        ]
        value = {
            "uploadUrlsExpireAt": 1_900_000_000_000,
            "video": urn,
            "uploadInstructions": instructions,
            "uploadToken": "" if len(parts) == 1 else "fake-upload-token",
        }
        return 200, {"value": value}, {}

    def _part(self, handler: Any, path: str, body: bytes) -> None:
        _, _, index, number = path.split("/")
        behaviour = self._scripted("part")
        self._record(handler, "part", part=int(number), length=len(body))
        if self._refuse(handler, behaviour):
            return None
        urn = f"urn:li:video:D4fake{index}"
        with self._lock:
            video = self.videos.get(urn)
            part = int(number)
            good = video is not None and part < len(video.parts)
            if good:
                first, last = video.parts[part]
                good = len(body) == last - first + 1
            if good:
                video.received[part] = body
                video.etags[part] = f'"etag-{index}-{part}-{secrets.token_hex(3)}"'
        if not good:
            return handler.reply(400, {"status": 400, "message": "bad part"})
        if behaviour == "drop":
            return handler.hang_up()
        return handler.reply(200, None, {"ETag": video.etags[part]})

    def _finalize(self, payload: dict, query: dict, urn: str) -> tuple[int, Any, dict]:
        request = payload.get("finalizeUploadRequest") or {}
        with self._lock:
            video = self.videos.get(str(request.get("video")))
            if video is None:
                return 404, {"status": 404, "message": "no such video"}, {}
            if video.finalized:
                return 400, {"status": 400, "message": "the upload is already finalized"}, {}
            expected = [video.etags.get(n) for n in range(len(video.parts))]
            if request.get("uploadedPartIds") != expected:
                return 400, {"status": 400, "message": "uploadedPartIds do not match"}, {}
            video.finalized = True
            video.polls_left = self.processing_polls
            video.failure, self.processing_failure = self.processing_failure, None
        return 200, None, {}

    def _video(self, payload: dict, query: dict, urn: str) -> tuple[int, Any, dict]:
        with self._lock:
            video = self.videos.get(urn)
            if video is None:
                return 404, {"status": 404, "message": "no such video"}, {}
            answer: dict[str, Any] = {"id": urn, "owner": video.owner}
            if not video.finalized:
                answer["status"] = "WAITING_UPLOAD"
            elif video.failure:
                answer["status"] = "PROCESSING_FAILED"
                answer["processingFailureReason"] = video.failure
            elif video.polls_left > 0:
                video.polls_left -= 1
                answer["status"] = "PROCESSING"
            else:
                answer["status"] = "AVAILABLE"
        return 200, answer, {}

    def _post(self, payload: dict, query: dict, urn: str) -> tuple[int, Any, dict]:
        author = payload.get("author")
        commentary = payload.get("commentary", "")
        media = (payload.get("content") or {}).get("media") or {}
        with self._lock:
            video = self.videos.get(str(media.get("id")))
            if video is None or not video.finalized or video.polls_left or video.failure:
                return 422, {"status": 422, "message": "the video is not available"}, {}
            for post in self.posts:
                if post.author == author and post.commentary == commentary:
                    message = f"Content is a duplicate of {post.urn}"
                    return 422, {"status": 422, "message": message}, {}
            new = Post(
                f"urn:li:share:{7000 + len(self.posts) + 1}",
                str(author),
                commentary,
                video.urn,
                str(media.get("title", "")),
                payload,
            )
            self.posts.append(new)
        return 201, None, {"x-restli-id": new.urn}

    def _list(self, payload: dict, query: dict, urn: str) -> tuple[int, Any, dict]:
        if query.get("q") != "author":
            return 400, {"status": 400, "message": "q=author expected"}, {}
        count = int(query.get("count") or 10)
        with self._lock:
            mine = [p for p in reversed(self.posts) if p.author == query.get("author")]
        elements = [{"id": p.urn, "author": p.author, "commentary": p.commentary} for p in mine]
        return 200, {"elements": elements[:count], "paging": {"count": count, "start": 0}}, {}

    def _get_post(self, payload: dict, query: dict, urn: str) -> tuple[int, Any, dict]:
        with self._lock:
            found = next((p for p in self.posts if p.urn == urn), None)
        if found is None:
            return 404, {"status": 404, "message": "no such post"}, {}
        return 200, {"id": found.urn, "author": found.author, "commentary": found.commentary}, {}

    # -- sign-in -------------------------------------------------------------------------------

    def _consent(self, handler: Any, query: dict[str, str]) -> None:
        """A person pressing Allow on LinkedIn's consent page."""
        self._record(handler, "consent", scope=query.get("scope"))
        code = "li-code-" + secrets.token_urlsafe(8)
        with self._lock:
            self.codes[code] = query.get("redirect_uri", "")
        location = f"{query.get('redirect_uri', '')}?" + urlencode(
            {"code": code, "state": query.get("state", "")}
        )
        handler.reply(302, None, {"Location": location})

    def _token(self, handler: Any, body: bytes) -> None:
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        self._record(handler, "token", grant=form.get("grant_type"))
        if form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET:
            return handler.reply(
                401, {"error": "invalid_client", "error_description": "Client authentication"}
            )
        with self._lock:
            good = self.codes.pop(form.get("code", ""), None) == form.get("redirect_uri")
        if form.get("grant_type") != "authorization_code" or not good:
            return handler.reply(
                400, {"error": "invalid_request", "error_description": "Unable to retrieve token"}
            )
        token = self.issue_token()
        handler.reply(200, {"access_token": token, "expires_in": 5183999, "scope": self.granted})

    def _userinfo(self, handler: Any) -> None:
        self._record(handler, "userinfo")
        if not self._authorized(handler):
            return None
        handler.reply(200, {"sub": MEMBER_SUB, "name": "Rae Lofi", "email_verified": True})
