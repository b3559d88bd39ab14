"""A fake TikTok Content Posting API on 127.0.0.1.

    fake = tiktok_server.start()
    settings: fake.settings()             # api_base, token_uri, auth_uri point here
    fake.script["init"].append("status:500")
    assert len(fake.published) == 1

It speaks what Autoretto calls: the OAuth token endpoint (authorization code with a hex PKCE
challenge; refresh tokens rotate, an old one is refused with invalid_grant), creator_info/query,
video/init (checking the post info against the creator and the source against the chunk
rules), the chunk PUTs to the upload address (checking the video's Content-Type and
Content-Range: in order, whole chunks, the sizes the init announced) and status/fetch. Every
request is recorded without its tokens.

It is a `tests.fakes.base.FakeServer`: the shared vocabulary applies to its operations
(`creator`, `init`, `upload`, `status`, `token`), and TikTok's own words beside it: `spam`
(spam_risk_too_many_posts), `rate` (rate_limit_exceeded, 429, Retry-After: 90), `unaudited`
(unaudited_client_can_only_post_to_private_accounts). Switches: `expire_next_access`,
`revoked` (`revoke()`), `polls_before_done`, `fail_reason` (the publish ends FAILED with it),
`creator` (the creator_info answer), `on_upload` (called at each chunk PUT, before it is
stored).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.base import Call, FakeServer

CLIENT_KEY = "fakeclientkey"
CLIENT_SECRET = "fake-client-secret-777"
OPEN_ID = "open-id-lofi-1"
USERNAME = "lofi.beats"
NICKNAME = "Lofi Beats"
MB = 1024 * 1024
# https://developers.tiktok.com/doc/content-posting-api-media-transfer-guide: each chunk PUT
# carries `Content-Type: {MIME_TYPE}`, the video's own (its supported types: mp4, quicktime,
# webm); anything else, application/octet-stream included, is a malformed request (400).
VIDEO_TYPES = ("video/mp4", "video/quicktime", "video/webm")


def default_creator() -> dict[str, Any]:
    return {
        "creator_avatar_url": "https://example.invalid/avatar.jpg",
        "creator_username": USERNAME,
        "creator_nickname": NICKNAME,
        "privacy_level_options": ["PUBLIC_TO_EVERYONE", "FOLLOWER_OF_CREATOR", "SELF_ONLY"],
        "comment_disabled": False,
        "duet_disabled": True,
        "stitch_disabled": False,
        "max_video_post_duration_sec": 600,
    }


@dataclass
class Publish:
    publish_id: str
    post_info: dict
    source_info: dict
    received: bytearray = field(default_factory=bytearray)
    chunks: list[str] = field(default_factory=list)  # the Content-Range of each PUT
    status: str = "PROCESSING_UPLOAD"
    polls: int = 0
    post_id: str | None = None
    fail_reason: str | None = None


class FakeTikTok(FakeServer):
    title = "TikTok"
    publish_operation = "upload"  # the last chunk's PUT is what publishes
    poll_interval = 0.05

    def __init__(self) -> None:
        super().__init__()
        self.publishes: dict[str, Publish] = {}
        self.access_tokens: set[str] = set()
        self.refresh_tokens: set[str] = set()
        self.codes: dict[str, str] = {}  # code -> PKCE challenge
        self.creator: dict[str, Any] = default_creator()
        self.expire_next_access = False
        self.polls_before_done = 0
        self.fail_reason: str | None = None
        self.on_upload: Callable[[Publish], None] | None = None

    def settings(self, **extra: Any) -> str:
        lines = [
            f'api_base = "{self.url}"',
            f'token_uri = "{self.url}/v2/oauth/token/"',
            f'auth_uri = "{self.url}/v2/auth/authorize/"',
            f'client_key = "{CLIENT_KEY}"',
            "poll_wait = 0",
            "timeout = 30",
            "upload_timeout = 30",
        ]
        lines += [f"{key} = {json.dumps(value)}" for key, value in extra.items()]
        return "\n".join(lines) + "\n"

    def account(self) -> dict[str, Any]:
        return {
            "account_id": OPEN_ID,
            "name": USERNAME,
            "tokens": self.tokens(),
            "meta": {"username": USERNAME, "nickname": NICKNAME},
        }

    def visible_copies(self) -> int:
        with self.lock:
            return len([p for p in self.publishes.values() if p.status == "PUBLISH_COMPLETE"])

    def issue(self) -> dict[str, Any]:
        access, refresh = "act." + secrets.token_hex(12), "rft." + secrets.token_hex(12)
        with self.lock:
            self.access_tokens.add(access)
            self.refresh_tokens.add(refresh)
        return {
            "access_token": access,
            "refresh_token": refresh,
            "expires_in": 7200,
            "refresh_expires_in": 180 * 86400,
            "open_id": OPEN_ID,
            "scope": "user.info.basic,video.publish",
            "token_type": "Bearer",
        }

    def tokens(self, *, expired: bool = False) -> dict[str, Any]:
        """A token bundle as `autoretto connect tiktok` seals it."""
        issued = self.issue()
        return {
            "access_token": issued["access_token"],
            "refresh_token": issued["refresh_token"],
            "expires_at": "2000-01-01T00:00:00Z" if expired else "2999-01-01T00:00:00Z",
            "client_key": CLIENT_KEY,
            "client_secret": CLIENT_SECRET,
            "token_uri": self.url + "/v2/oauth/token/",
        }

    def consent(self, authorize_url: str) -> str:
        """What the browser ends on after the person authorizes: the redirect with a code."""
        query = {k: v[0] for k, v in parse_qs(urlsplit(authorize_url).query).items()}
        code = "code-" + secrets.token_hex(6)
        with self.lock:
            self.codes[code] = query["code_challenge"]
        return f"{query['redirect_uri']}?code={code}&state={query['state']}&scopes=video.publish"

    def calls_to(self, path_part: str) -> int:
        """Calls whose path holds `path_part`."""
        with self.lock:
            return sum(1 for seen in self.requests if path_part in seen.path)

    def paths(self) -> list[str]:
        with self.lock:
            return [seen.path for seen in self.requests]

    @property
    def inits(self) -> list[Publish]:
        return list(self.publishes.values())

    @property
    def published(self) -> list[Publish]:
        return [p for p in self.publishes.values() if p.status == "PUBLISH_COMPLETE"]

    # -- answers in TikTok's words -------------------------------------------------------------

    @staticmethod
    def ok(call: Call, data: dict) -> None:
        call.answer(200, {"data": data, "error": {"code": "ok", "message": "", "log_id": "l"}})

    @staticmethod
    def fail(call: Call, status: int, code: str, message: str = "", headers: dict | None = None):
        call.send(
            status,
            {"data": {}, "error": {"code": code, "message": message or code, "log_id": "l"}},
            headers,
        )

    def answer_failure(self, call: Call, status: int, retry_after: int | None = None) -> None:
        # https://developers.tiktok.com/doc/tiktok-api-v2-error-handling: the envelope's code
        code = "rate_limit_exceeded" if status == 429 else "internal_error"
        self.fail(
            call,
            status,
            code,
            "Something went wrong",
            self.failure_headers(call, status, retry_after),
        )

    def refusal(self, call: Call) -> None:
        # https://developers.tiktok.com/doc/content-posting-api-reference-direct-post (errors)
        self.fail(call, 400, "invalid_params", "The video is not acceptable")

    def _own_fault(self, call: Call) -> bool:
        """Answer TikTok's scripted words, or the shared ones; True when answered."""
        behaviour = call.behaviour
        if behaviour == "spam":
            self.fail(call, 403, "spam_risk_too_many_posts", "The user has reached the daily cap")
        elif behaviour == "rate":
            self.fail(call, 429, "rate_limit_exceeded", "Too many requests", {"Retry-After": "90"})
        elif behaviour == "unaudited":
            self.fail(
                call,
                403,
                "unaudited_client_can_only_post_to_private_accounts",
                "Please review our integration guidelines",
            )
        else:
            return call.refused()
        return True

    # -- routing -------------------------------------------------------------------------------

    def route(self, call: Call) -> None:
        raw = call.body
        path = call.path
        bearer = call.bearer
        with self.lock:
            if bearer in self.access_tokens and not self.revoked:
                auth = "access"
            else:
                auth = "none" if not bearer else "bad"
        body: Any = None
        kind = call.content_type
        form: dict[str, str] = {}
        if kind.startswith("application/json") and raw:
            body = json.loads(raw)
        elif kind.startswith("application/x-www-form-urlencoded"):
            form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
            body = form
        seen_headers = {
            k: v for k, v in call.headers.items() if k.lower() in ("content-range", "content-type")
        }
        operation = {
            "/v2/oauth/token/": "token",
            "/v2/post/publish/creator_info/query/": "creator",
            "/v2/post/publish/video/init/": "init",
            "/v2/post/publish/status/fetch/": "status",
        }.get(path, "upload" if path.startswith("/upload/") else "unknown")
        call.begin(
            operation,
            sign_in=operation == "token",
            path=path,
            auth=auth,
            body=body,
            headers=seen_headers,
        )
        if operation == "token":
            return self._token(call, form)
        if operation == "upload":
            return self._upload(call, path.rsplit("/", 1)[1], raw)
        if not self._authorised(call, auth):
            return None
        if operation == "creator":
            return self._creator_info(call)
        if operation == "init":
            return self._init(call, body or {})
        if operation == "status":
            return self._status(call, (body or {}).get("publish_id", ""))
        return self.fail(call, 404, "not_found", path)

    def _authorised(self, call: Call, auth: str) -> bool:
        if auth != "access":
            self.fail(call, 401, "access_token_invalid", "The access token is invalid or not found")
            return False
        with self.lock:
            if self.expire_next_access:
                self.expire_next_access = False
                self.fail(call, 401, "access_token_invalid", "The access token has expired")
                return False
        return True

    # -- OAuth ---------------------------------------------------------------------------------

    def _token(self, call: Call, form: dict[str, str]) -> None:
        if call.refused():
            return
        if form.get("client_key") != CLIENT_KEY or form.get("client_secret") != CLIENT_SECRET:
            return call.send(401, {"error": "invalid_client", "error_description": "bad client"})
        grant = form.get("grant_type")
        if grant == "authorization_code":
            with self.lock:
                challenge = self.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            if challenge is None or hashlib.sha256(verifier.encode()).hexdigest() != challenge:
                return call.send(
                    400,
                    {"error": "invalid_request", "error_description": "Code verifier invalid"},
                )
            return call.answer(200, self.issue())
        if grant == "refresh_token":
            with self.lock:
                known = form.get("refresh_token") in self.refresh_tokens and not self.revoked
                if known:
                    self.refresh_tokens.discard(form["refresh_token"])  # rotated away
            if not known:
                return call.send(
                    400,
                    {"error": "invalid_grant", "error_description": "Refresh token is invalid"},
                )
            return call.answer(200, self.issue())
        return call.send(400, {"error": "unsupported_grant_type"})

    # -- posting -------------------------------------------------------------------------------

    def _creator_info(self, call: Call) -> None:
        if self._own_fault(call):
            return
        self.ok(call, dict(self.creator))

    def _init(self, call: Call, body: dict) -> None:
        if self._own_fault(call):
            return
        info, source = body.get("post_info") or {}, body.get("source_info") or {}
        if info.get("privacy_level") not in self.creator["privacy_level_options"]:
            return self.fail(
                call, 400, "privacy_level_option_mismatch", "privacy not in the options"
            )
        if info.get("brand_content_toggle") and info.get("privacy_level") == "SELF_ONLY":
            return self.fail(call, 400, "invalid_params", "Branded content cannot be private")
        problem = chunk_problem(source)
        if problem:
            return self.fail(call, 400, "invalid_params", problem)
        publish_id = "v_pub_file~v2." + secrets.token_hex(6)
        with self.lock:
            self.publishes[publish_id] = Publish(publish_id, info, source)
        self.ok(call, {"publish_id": publish_id, "upload_url": f"{self.url}/upload/{publish_id}"})

    def _upload(self, call: Call, publish_id: str, raw: bytes) -> None:
        publish = self.publishes.get(publish_id)
        if publish is None:
            return self.fail(call, 404, "not_found", "no such upload")
        if self.on_upload is not None:
            self.on_upload(publish)
        if call.behaviour.startswith("status:"):  # the upload host answers with an empty body
            _, status, *after = call.behaviour.split(":")
            wait = int(after[0]) if after else None
            return call.send(int(status), headers=self.failure_headers(call, int(status), wait))
        if call.refused():
            return None
        kind = call.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if kind not in VIDEO_TYPES:
            return self.fail(
                call, 400, "invalid_params", f"Content-Type must be the video's type, not {kind}"
            )
        match = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)", call.headers.get("Content-Range", ""))
        source = publish.source_info
        if not match or int(match.group(3)) != source["video_size"]:
            return self.fail(call, 400, "invalid_params", "bad Content-Range")
        first, last = int(match.group(1)), int(match.group(2))
        if last - first + 1 != len(raw) or first > len(publish.received):
            return self.fail(call, 416, "invalid_params", "chunks must come in order")
        with self.lock:
            publish.received[first : last + 1] = raw  # the same range again overwrites
            publish.chunks.append(call.headers["Content-Range"])
            done = len(publish.received) == source["video_size"]
            if done and publish.status == "PROCESSING_UPLOAD":
                publish.status = "PROCESSING_PUBLISH"
                _advance(self, publish)  # TikTok goes on whether or not it is asked
        call.answer(201 if done else 206)

    def _status(self, call: Call, publish_id: str) -> None:
        if call.behaviour == "drop":
            return call.hang_up()
        if self._own_fault(call):
            return
        publish = self.publishes.get(publish_id)
        if publish is None:
            return self.fail(call, 400, "invalid_publish_id", "publish_id does not exist")
        with self.lock:
            publish.polls += 1
            _advance(self, publish)
            shown = (
                "PROCESSING_UPLOAD" if publish.status == "PROCESSING_PUBLISH" else publish.status
            )
            data: dict[str, Any] = {
                "status": shown,
                "uploaded_bytes": len(publish.received),
                "publicaly_available_post_id": [publish.post_id] if publish.post_id else [],
            }
            if publish.fail_reason:
                data["fail_reason"] = publish.fail_reason
        self.ok(call, data)


def start() -> FakeTikTok:
    return FakeTikTok().start()


def _advance(fake: FakeTikTok, publish: Publish) -> None:
    """Move a fully uploaded publish on once `polls_before_done` status fetches have passed."""
    if publish.status != "PROCESSING_PUBLISH" or publish.polls < fake.polls_before_done:
        return
    if fake.fail_reason:
        publish.status, publish.fail_reason = "FAILED", fake.fail_reason
        return
    publish.status = "PUBLISH_COMPLETE"
    if publish.post_info.get("privacy_level") != "SELF_ONLY":
        publish.post_id = str(7_300_000_000_000_000_000 + len(fake.publishes))


def chunk_problem(source: dict) -> str | None:
    """What breaks TikTok's FILE_UPLOAD chunk rules in an init's source_info, else None."""
    if source.get("source") != "FILE_UPLOAD":
        return "only FILE_UPLOAD here"
    size, chunk, count = (
        source.get("video_size"),
        source.get("chunk_size"),
        source.get("total_chunk_count"),
    )
    if not all(isinstance(v, int) and v > 0 for v in (size, chunk, count)):
        return "video_size, chunk_size and total_chunk_count must be positive integers"
    if size < 5 * MB:
        return None if (chunk, count) == (size, 1) else "a file under 5 MB goes whole"
    if not 5 * MB <= chunk <= 64 * MB:
        return "chunks are 5 to 64 MB"
    if count != size // chunk or not 1 <= count <= 1000:
        return "total_chunk_count must be floor(video_size / chunk_size), 1 to 1000"
    if size - chunk * (count - 1) > 128 * MB:
        return "the last chunk may be at most 128 MB"
    if size > 64 * MB and count < 2:
        return "a video over 64 MB must be uploaded in multiple chunks"
    return None
