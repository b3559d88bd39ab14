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
It is a `tests.fakes.base.FakeServer`: the shared vocabulary applies to its operations (`pin`,
`media`, `upload`, `media_status`, `board_pins`, `boards`, `user_account`, `token`), and
Pinterest's own word beside it: `failed` on `media` (the media's processing fails). Switches:
`expire_next_access`, `revoked` (`revoke()`), `polls_before_done`.
"""

from __future__ import annotations

import base64
import json
import secrets
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.base import Call, FakeServer
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


class FakePinterest(FakeServer):
    title = "Pinterest"
    publish_operation = "pin"
    poll_interval = 0.05

    def __init__(self) -> None:
        super().__init__()
        self.pins: dict[str, dict] = {}  # id -> pin (with host)
        self.media: dict[str, dict] = {}
        self.uploads: list[list[str]] = []  # form field names, in order
        self.access_tokens: set[str] = set()
        self.token_scopes: dict[str, frozenset[str]] = {}
        self.granted: frozenset[str] | None = None  # scopes a sign-in gets; None: as asked
        self.asked_scopes: list[str] = []  # the consent page's scope list
        self.refresh_tokens: set[str] = set()
        self.codes: set[str] = set()
        self.code_scopes: dict[str, frozenset[str]] = {}
        self.trial = False
        self.expire_next_access = False
        self.polls_before_done = 0

    def settings(self, **extra: Any) -> str:
        lines = [
            f'api_base = "{self.url}/prod"',
            f'sandbox_base = "{self.url}/sandbox"',
            f'token_uri = "{self.url}/prod/v5/oauth/token"',
            f'auth_uri = "{self.url}/oauth/"',
            f'app_id = "{APP_ID}"',
            "poll_wait = 0",
            "timeout = 30",
            "upload_timeout = 30",
        ]
        extra = {"approved": True, **extra}
        lines += [f"{key} = {json.dumps(value)}" for key, value in extra.items()]
        return "\n".join(lines) + "\n"

    def account(self) -> dict[str, Any]:
        return {
            "account_id": USER_ID,
            "name": USERNAME,
            "tokens": self.tokens(),
            "meta": {"username": USERNAME, "sandbox": False},
        }

    def visible_copies(self) -> int:
        with self.lock:
            return len(self.pins)

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

    def calls_to(self, method: str, path_part: str) -> int:
        """Calls of `method` whose path holds `path_part`."""
        with self.lock:
            return sum(1 for s in self.requests if s.method == method and path_part in s.path)

    # -- answers in Pinterest's words ----------------------------------------------------------

    def failure(self, call: Call, status: int) -> Any:
        # https://developers.pinterest.com/docs/reference/v5/ (error codes): 8 is the rate
        # limit, 1 a refused request
        return {"code": 8 if status == 429 else 1, "message": "refused"}

    def refusal(self, call: Call) -> None:
        call.send(400, {"code": 1, "message": "Invalid request: the Pin's media is refused"})

    # -- routing -------------------------------------------------------------------------------

    @staticmethod
    def _operation(method: str, host: str, path: str) -> str:
        if host == "upload":
            return "upload"
        if path == "/v5/oauth/token":
            return "token"
        if path == "/v5/user_account":
            return "user_account"
        if path == "/v5/boards":
            return "boards"
        if path.startswith("/v5/boards/") and path.endswith("/pins"):
            return "board_pins"
        if path == "/v5/media" and method == "POST":
            return "media"
        if path.startswith("/v5/media/"):
            return "media_status"
        if path == "/v5/pins" and method == "POST":
            return "pin"
        return "unknown"

    def route(self, call: Call) -> None:
        host, _, path = call.path.strip("/").partition("/")
        path = "/" + path
        bearer = call.bearer
        with self.lock:
            auth = "access" if bearer in self.access_tokens and not self.revoked else "none"
        raw = call.body
        body = call.json
        operation = self._operation(call.method, host, path)
        call.begin(
            operation,
            sign_in=operation == "token",
            host=host,
            method=call.method,
            path=path,
            auth=auth,
            body=body,
        )
        if operation == "upload":
            return self._upload(call, raw)
        if operation == "token":
            return self._token(call, raw)
        if operation == "unknown":
            return call.send(404, {"code": 404, "message": "not found"})
        if not self._authorised(call, auth) or not self._scoped(call, bearer, path):
            return None
        if operation == "pin":  # production's trial refusal comes before anything else
            return self._create_pin(call, host, body or {})
        if call.refused():
            return None
        if operation == "user_account":
            return call.answer(
                200, {"username": USERNAME, "id": USER_ID, "account_type": "BUSINESS"}
            )
        if operation == "boards":
            return call.answer(200, {"items": BOARDS, "bookmark": None})
        if operation == "board_pins":
            board = path.split("/")[3]
            with self.lock:
                items = [p for p in reversed(self.pins.values()) if p["board_id"] == board]
            pins = [as_pin(p) for p in items if p["host"] == host]
            return call.answer(200, {"items": pins, "bookmark": None})
        if operation == "media":
            return self._register(call, body)
        return self._media_status(call, path.rsplit("/", 1)[1])

    def _scoped(self, call: Call, bearer: str, path: str) -> bool:
        """The scopes the description declares for this call are all granted."""
        wanted = scopes_for(call.method, path)
        with self.lock:
            granted = self.token_scopes.get(bearer, ALL_SCOPES)
        missing = sorted((wanted or frozenset()) - granted)
        if missing:
            # Pinterest's wording for a missing scope is not documented.
            call.send(403, {"code": 3, "message": f"Missing scopes: {', '.join(missing)}"})
            return False
        return True

    def _authorised(self, call: Call, auth: str) -> bool:
        if auth != "access":
            call.send(401, {"code": 2, "message": "Authentication failed."})
            return False
        with self.lock:
            if self.expire_next_access:
                self.expire_next_access = False
                call.send(401, {"code": 2, "message": "Authentication failed."})
                return False
        return True

    def _token(self, call: Call, raw: bytes) -> None:
        if call.refused():
            return
        expected = base64.b64encode(f"{APP_ID}:{APP_SECRET}".encode()).decode()
        if call.headers.get("Authorization") != f"Basic {expected}":
            return call.send(401, {"code": 1, "message": "Invalid app credentials"})
        form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
        with self.lock:
            if form.get("grant_type") == "authorization_code":
                known = form.get("code") in self.codes
                self.codes.discard(form.get("code", ""))
                scopes = self.code_scopes.pop(form.get("code", ""), None)
            else:
                known = form.get("refresh_token") in self.refresh_tokens and not self.revoked
                self.refresh_tokens.discard(form.get("refresh_token", ""))  # rotated away
                scopes = self.token_scopes.get(form.get("refresh_token", ""))
        if not known or form.get("continuous_refresh") != "true":
            return call.send(400, {"code": 1, "message": "Invalid refresh token or code"})
        call.answer(200, self.issue(scopes))

    def _register(self, call: Call, body: Any) -> None:
        problem = body_problem(MEDIA_UPLOAD_CREATE, body)
        if problem:
            return call.send(400, {"code": 1, "message": f"Invalid request: {problem}"})
        with self.lock:
            media_id = str(5_000_000 + len(self.media) + 1)
            self.media[media_id] = {
                "status": "registered",
                "polls": 0,
                "fail": call.behaviour == "failed",
            }
        call.answer(
            201,
            {
                "media_id": media_id,
                "media_type": "video",
                "upload_url": f"{self.url}/upload/{media_id}",
                "upload_parameters": UPLOAD_FIELDS,
            },
        )

    def _upload(self, call: Call, raw: bytes) -> None:
        import email.parser
        import email.policy

        if call.behaviour.startswith("status:"):  # S3 answers with an empty body
            return call.send(int(call.behaviour.split(":")[1]))
        if call.refused():
            return None
        media_id = call.path.rsplit("/", 1)[1]
        head = f"Content-Type: {call.content_type}\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
        names = [
            part.get_param("name", header="content-disposition") for part in message.iter_parts()
        ]
        values = {
            part.get_param("name", header="content-disposition"): part.get_content()
            for part in message.iter_parts()
            if part.get_param("name", header="content-disposition") != "file"
        }
        with self.lock:
            self.uploads.append(names)
        if values != UPLOAD_FIELDS or names[-1:] != ["file"]:
            return call.send(403, {"message": "every presigned field, then the file last"})
        with self.lock:
            self.media[media_id]["status"] = "processing"
        call.answer(204)

    def _media_status(self, call: Call, media_id: str) -> None:
        with self.lock:
            media = self.media.get(media_id)
            if media is not None and media["status"] == "processing":
                media["polls"] += 1
                if media["polls"] > self.polls_before_done:
                    media["status"] = "failed" if media["fail"] else "succeeded"
            status = media["status"] if media is not None else None
        if status is None:
            return call.send(404, {"code": 3, "message": "media not found"})
        call.answer(200, {"media_id": media_id, "media_type": "video", "status": status})

    def _create_pin(self, call: Call, host: str, body: dict) -> None:
        if host == "prod" and self.trial:
            return call.send(
                403,
                {
                    "code": 29,
                    "message": "Apps with Trial access may not create Pins in production "
                    "https://api.pinterest.com - use API Sandbox instead.",
                },
            )
        if call.refused():
            return None
        problem = body_problem(PIN_CREATE, body)
        if problem:
            return call.send(400, {"code": 1, "message": f"Invalid request: {problem}"})
        media = self.media.get(body.get("media_source", {}).get("media_id", ""))
        if media is None or media["status"] != "succeeded":
            return call.send(400, {"code": 1, "message": "media not ready"})
        if body.get("board_id") not in {b["id"] for b in BOARDS}:
            return call.send(404, {"code": 40, "message": "Board not found."})
        with self.lock:
            pin_id = str(1_000_000_000 + len(self.pins) + 1)
            pin = {
                "id": pin_id,
                "created_at": "2026-11-29T10:05:30",
                "host": host,
                **{
                    k: body.get(k) for k in ("board_id", "title", "description", "link", "alt_text")
                },
                **({"ai_disclosures": body["ai_disclosures"]} if "ai_disclosures" in body else {}),
                "media_source": body.get("media_source"),  # kept for the tests; never answered
            }
            self.pins[pin_id] = pin
        call.answer(201, as_pin(pin))


def start() -> FakePinterest:
    return FakePinterest().start()
