"""A fake Pinterest API v5 on 127.0.0.1: production under /prod, the sandbox under /sandbox,
and a presigned upload host under /upload.

    fake = pinterest_server.start()
    settings: fake.settings()      # api_base, sandbox_base, token_uri point here
    fake.script["pin"].append("drop")
    assert len(fake.pins) == 1

Requests are checked against Pinterest's own v5 description (tests/fakes/pinterest_contract.py):
the bodies of `POST /v5/pins` and `POST /v5/media` (an unknown field such as the removed
`note`, a wrong type such as a fractional `cover_image_key_frame_time`: 400 code 1), the scopes
each call declares (a token without one of them: 403 code 3), and answers carry only the
fields of the `Pin` schema.

It speaks what Autoretto calls: the OAuth token endpoint (Basic auth with the app id and secret;
continuous refresh tokens rotate: the old one is refused), /v5/user_account, /v5/boards,
/v5/boards/{id}/pins, /v5/media (register; GET for the status), /v5/pins, and the multipart
upload, which refuses a form that lacks any presigned field or whose `file` is not last. Every
request is recorded by path and host, never with its tokens.

`trial = True` makes production refuse Pin creation with code 29 (the sandbox takes it).
Scripts, one word per call (`script["pin"]`, `script["media"]`, `script["upload"]`), default
`ok`: `status:N` (answer HTTP N), `drop` (make the Pin, then hang up), `failed` (the media's
processing fails). Switches: `expire_next_access`, `revoked`, `polls_before_done`.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.pinterest_contract import (
    MEDIA_UPLOAD_CREATE,
    PIN_CREATE,
    as_pin,
    body_problem,
    scopes_for,
)

ALL_SCOPES = frozenset(
    {"boards:read", "boards:write", "pins:read", "pins:write", "user_accounts:read"}
)
APP_ID = "1500000"
APP_SECRET = "fake-pinterest-secret-999"
USERNAME = "lofibeats"
USER_ID = "880000000000001"
BOARDS = [
    {"id": "900000000000001", "name": "Lofi nights", "privacy": "PUBLIC"},
    {"id": "900000000000002", "name": "Drafts", "privacy": "SECRET"},
]
UPLOAD_FIELDS = {
    "x-amz-date": "20261129T100500Z",
    "x-amz-signature": "abc123",
    "x-amz-security-token": "presigned-token",
    "x-amz-algorithm": "AWS4-HMAC-SHA256",
    "key": "uploads/video.mp4",
    "policy": "eyJwb2xpY3kiOiJ0ZXN0In0=",
    "x-amz-credential": "AKIA/20261129/us-east-1/s3/aws4_request",
    "Content-Type": "multipart/form-data",
}


@dataclass
class Seen:
    host: str  # prod | sandbox | upload
    method: str
    path: str
    auth: str
    body: Any = None


@dataclass
class FakePinterest:
    server: ThreadingHTTPServer
    script: dict[str, deque] = field(default_factory=lambda: defaultdict(deque))
    requests: list[Seen] = field(default_factory=list)
    pins: dict[str, dict] = field(default_factory=dict)  # id -> pin (with host)
    media: dict[str, dict] = field(default_factory=dict)
    uploads: list[list[str]] = field(default_factory=list)  # form field names, in order
    access_tokens: set[str] = field(default_factory=set)
    token_scopes: dict[str, frozenset[str]] = field(default_factory=dict)
    granted: frozenset[str] | None = None  # scopes a sign-in gets; None: what was asked for
    asked_scopes: list[str] = field(default_factory=list)  # the consent page's scope list
    refresh_tokens: set[str] = field(default_factory=set)
    codes: set[str] = field(default_factory=set)
    code_scopes: dict[str, frozenset[str]] = field(default_factory=dict)
    trial: bool = False
    expire_next_access: bool = False
    revoked: bool = False
    polls_before_done: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def settings(self, **extra: Any) -> str:
        lines = [
            f'api_base = "{self.url}/prod"',
            f'sandbox_base = "{self.url}/sandbox"',
            f'token_uri = "{self.url}/prod/v5/oauth/token"',
            f'auth_uri = "{self.url}/oauth/"',
            f'app_id = "{APP_ID}"',
            "poll_wait = 0",
            "timeout = 5",
            "upload_timeout = 5",
        ]
        extra = {"approved": True, **extra}
        lines += [f"{key} = {json.dumps(value)}" for key, value in extra.items()]
        return "\n".join(lines) + "\n"

    def issue(self, scopes: frozenset[str] | None = None) -> dict[str, Any]:
        access, refresh = "pina_" + secrets.token_hex(12), "pinr_" + secrets.token_hex(12)
        scopes = scopes if scopes is not None else (self.granted or ALL_SCOPES)
        with self.lock:
            self.access_tokens.add(access)
            self.refresh_tokens.add(refresh)
            self.token_scopes[access] = scopes
            self.token_scopes[refresh] = scopes
        return {
            "access_token": access,
            "refresh_token": refresh,
            "expires_in": 2592000,
            "refresh_token_expires_in": 5184000,
            "scope": ",".join(sorted(scopes)),
            "token_type": "bearer",
        }

    def tokens(self, *, expired: bool = False) -> dict[str, Any]:
        issued = self.issue()
        return {
            "access_token": issued["access_token"],
            "refresh_token": issued["refresh_token"],
            "expires_at": "2000-01-01T00:00:00Z" if expired else "2999-01-01T00:00:00Z",
            "app_id": APP_ID,
            "app_secret": APP_SECRET,
            "token_uri": self.url + "/prod/v5/oauth/token",
            "continuous_refresh": True,
        }

    def consent(self, authorize_url: str) -> str:
        """A person pressing "Give access": the code grants what the app asked for."""
        query = {k: v[0] for k, v in parse_qs(urlsplit(authorize_url).query).items()}
        code = "code-" + secrets.token_hex(6)
        asked = [scope for scope in query.get("scope", "").split(",") if scope]
        with self.lock:
            self.codes.add(code)
            self.asked_scopes = asked
            self.code_scopes[code] = self.granted or frozenset(asked)
        return f"{query['redirect_uri']}?code={code}&state={query['state']}"

    def count(self, method: str, path_part: str) -> int:
        return sum(1 for s in self.requests if s.method == method and path_part in s.path)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start() -> FakePinterest:
    fake: FakePinterest

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self._serve(b"")

        def do_POST(self) -> None:
            self._serve(self.rfile.read(int(self.headers.get("Content-Length", 0))))

        def answer(self, status: int, body: dict | None = None) -> None:
            data = json.dumps(body or {}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _serve(self, raw: bytes) -> None:
            parts = urlsplit(self.path)
            host, _, path = parts.path.strip("/").partition("/")
            path = "/" + path
            bearer = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            with fake.lock:
                auth = "access" if bearer in fake.access_tokens and not fake.revoked else "none"
            body: Any = None
            if self.headers.get("Content-Type", "").startswith("application/json") and raw:
                body = json.loads(raw)
            with fake.lock:
                fake.requests.append(Seen(host, self.command, path, auth, body))
            if host == "upload":
                self._upload(raw)
                return
            if path == "/v5/oauth/token":
                self._token(raw)
                return
            if not self._authorised(auth) or not self._scoped(bearer, path):
                return
            if path == "/v5/user_account":
                self.answer(200, {"username": USERNAME, "id": USER_ID, "account_type": "BUSINESS"})
            elif path == "/v5/boards":
                self.answer(200, {"items": BOARDS, "bookmark": None})
            elif path.startswith("/v5/boards/") and path.endswith("/pins"):
                board = path.split("/")[3]
                items = [p for p in reversed(fake.pins.values()) if p["board_id"] == board]
                self.answer(
                    200,
                    {"items": [as_pin(p) for p in items if p["host"] == host], "bookmark": None},
                )
            elif path == "/v5/media" and self.command == "POST":
                self._register(body)
            elif path.startswith("/v5/media/"):
                self._media_status(path.rsplit("/", 1)[1])
            elif path == "/v5/pins" and self.command == "POST":
                self._create_pin(host, body or {})
            else:
                self.answer(404, {"code": 404, "message": "not found"})

        def _scoped(self, bearer: str, path: str) -> bool:
            """The scopes the description declares for this call are all granted."""
            wanted = scopes_for(self.command, path)
            with fake.lock:
                granted = fake.token_scopes.get(bearer, ALL_SCOPES)
            missing = sorted((wanted or frozenset()) - granted)
            if missing:
                # Pinterest's wording for a missing scope is not documented.
                self.answer(403, {"code": 3, "message": f"Missing scopes: {', '.join(missing)}"})
                return False
            return True

        def _authorised(self, auth: str) -> bool:
            if auth != "access":
                self.answer(401, {"code": 2, "message": "Authentication failed."})
                return False
            with fake.lock:
                if fake.expire_next_access:
                    fake.expire_next_access = False
                    self.answer(401, {"code": 2, "message": "Authentication failed."})
                    return False
            return True

        def _scripted(self, name: str) -> str:
            with fake.lock:
                return fake.script[name].popleft() if fake.script[name] else "ok"

        def _token(self, raw: bytes) -> None:
            expected = base64.b64encode(f"{APP_ID}:{APP_SECRET}".encode()).decode()
            if self.headers.get("Authorization") != f"Basic {expected}":
                self.answer(401, {"code": 1, "message": "Invalid app credentials"})
                return
            form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
            with fake.lock:
                if form.get("grant_type") == "authorization_code":
                    known = form.get("code") in fake.codes
                    fake.codes.discard(form.get("code", ""))
                    scopes = fake.code_scopes.pop(form.get("code", ""), None)
                else:
                    known = form.get("refresh_token") in fake.refresh_tokens and not fake.revoked
                    fake.refresh_tokens.discard(form.get("refresh_token", ""))  # rotated away
                    scopes = fake.token_scopes.get(form.get("refresh_token", ""))
            if not known or form.get("continuous_refresh") != "true":
                self.answer(400, {"code": 1, "message": "Invalid refresh token or code"})
                return
            self.answer(200, fake.issue(scopes))

        def _register(self, body: Any) -> None:
            problem = body_problem(MEDIA_UPLOAD_CREATE, body)
            if problem:
                self.answer(400, {"code": 1, "message": f"Invalid request: {problem}"})
                return
            behaviour = self._scripted("media")
            media_id = str(5_000_000 + len(fake.media) + 1)
            with fake.lock:
                fake.media[media_id] = {
                    "status": "registered",
                    "polls": 0,
                    "fail": behaviour == "failed",
                }
            self.answer(
                201,
                {
                    "media_id": media_id,
                    "media_type": "video",
                    "upload_url": f"{fake.url}/upload/{media_id}",
                    "upload_parameters": UPLOAD_FIELDS,
                },
            )

        def _upload(self, raw: bytes) -> None:
            import email.parser
            import email.policy

            behaviour = self._scripted("upload")
            if behaviour.startswith("status:"):
                self.answer(int(behaviour.split(":")[1]))
                return
            media_id = urlsplit(self.path).path.rsplit("/", 1)[1]
            head = f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode()
            message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
            names = [
                part.get_param("name", header="content-disposition")
                for part in message.iter_parts()
            ]
            values = {
                part.get_param("name", header="content-disposition"): part.get_content()
                for part in message.iter_parts()
                if part.get_param("name", header="content-disposition") != "file"
            }
            with fake.lock:
                fake.uploads.append(names)
            if values != UPLOAD_FIELDS or names[-1:] != ["file"]:
                self.answer(403, {"message": "every presigned field, then the file last"})
                return
            with fake.lock:
                fake.media[media_id]["status"] = "processing"
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _media_status(self, media_id: str) -> None:
            with fake.lock:
                media = fake.media.get(media_id)
                if media is None:
                    self.answer(404, {"code": 3, "message": "media not found"})
                    return
                if media["status"] == "processing":
                    media["polls"] += 1
                    if media["polls"] > fake.polls_before_done:
                        media["status"] = "failed" if media["fail"] else "succeeded"
                status = media["status"]
            self.answer(200, {"media_id": media_id, "media_type": "video", "status": status})

        def _create_pin(self, host: str, body: dict) -> None:
            behaviour = self._scripted("pin")
            if host == "prod" and fake.trial:
                self.answer(
                    403,
                    {
                        "code": 29,
                        "message": "Apps with Trial access may not create Pins in production "
                        "https://api.pinterest.com - use API Sandbox instead.",
                    },
                )
                return
            if behaviour.startswith("status:"):
                status = int(behaviour.split(":")[1])
                self.answer(status, {"code": 8 if status == 429 else 1, "message": "refused"})
                return
            problem = body_problem(PIN_CREATE, body)
            if problem:
                self.answer(400, {"code": 1, "message": f"Invalid request: {problem}"})
                return
            media = fake.media.get(body.get("media_source", {}).get("media_id", ""))
            if media is None or media["status"] != "succeeded":
                self.answer(400, {"code": 1, "message": "media not ready"})
                return
            if body.get("board_id") not in {b["id"] for b in BOARDS}:
                self.answer(404, {"code": 40, "message": "Board not found."})
                return
            pin_id = str(1_000_000_000 + len(fake.pins) + 1)
            pin = {
                "id": pin_id,
                "created_at": "2026-11-29T10:05:30",
                "host": host,
                **{
                    k: body.get(k) for k in ("board_id", "title", "description", "link", "alt_text")
                },
                "media_source": body.get("media_source"),  # kept for the tests; never answered
            }
            with fake.lock:
                fake.pins[pin_id] = pin
            if behaviour == "drop":
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.answer(201, as_pin(pin))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    fake = FakePinterest(server)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return fake
