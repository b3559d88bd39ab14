"""A fake TikTok Content Posting API on 127.0.0.1.

    fake = tiktok_server.start()
    settings: fake.settings()             # api_base, token_uri, auth_uri point here
    fake.script["init"].append("status:500")
    assert len(fake.published) == 1

It speaks what Autoretto calls: the OAuth token endpoint (authorization code with a hex PKCE
challenge; refresh tokens rotate, an old one is refused with invalid_grant), creator_info/query,
video/init (checking the post info against the creator and the source against the chunk
rules), the chunk PUTs to the upload address (checking Content-Range: in order, whole chunks,
the sizes the init announced) and status/fetch. Every request is recorded without its tokens.

Scripts, one word per call and a deque per endpoint (`script[...]`, keys `creator`, `init`,
`upload`, `status`); default `ok`: `status:N` (answer HTTP N with internal_error), `spam`
(spam_risk_too_many_posts), `rate` (rate_limit_exceeded, 429), `unaudited`
(unaudited_client_can_only_post_to_private_accounts), `drop` (do the work, then hang up without
an answer). Switches: `expire_next_access`, `revoked`, `polls_before_done`, `fail_reason`
(the publish ends FAILED with it), `creator` (the creator_info answer), `on_upload` (called at
each chunk PUT, before it is stored).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import threading
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

CLIENT_KEY = "fakeclientkey"
CLIENT_SECRET = "fake-client-secret-777"
OPEN_ID = "open-id-lofi-1"
USERNAME = "lofi.beats"
NICKNAME = "Lofi Beats"
MB = 1024 * 1024


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
class Seen:
    path: str
    auth: str  # access | refresh | none | bad
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


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


@dataclass
class FakeTikTok:
    server: ThreadingHTTPServer
    script: dict[str, deque] = field(default_factory=lambda: defaultdict(deque))
    requests: list[Seen] = field(default_factory=list)
    publishes: dict[str, Publish] = field(default_factory=dict)
    access_tokens: set[str] = field(default_factory=set)
    refresh_tokens: set[str] = field(default_factory=set)
    codes: dict[str, str] = field(default_factory=dict)  # code -> PKCE challenge
    creator: dict[str, Any] = field(default_factory=default_creator)
    expire_next_access: bool = False
    revoked: bool = False
    polls_before_done: int = 0
    fail_reason: str | None = None
    on_upload: Callable[[Publish], None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def settings(self, **extra: Any) -> str:
        lines = [
            f'api_base = "{self.url}"',
            f'token_uri = "{self.url}/v2/oauth/token/"',
            f'auth_uri = "{self.url}/v2/auth/authorize/"',
            f'client_key = "{CLIENT_KEY}"',
            "poll_wait = 0",
            "timeout = 5",
            "upload_timeout = 5",
        ]
        lines += [f"{key} = {json.dumps(value)}" for key, value in extra.items()]
        return "\n".join(lines) + "\n"

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

    def count(self, path_part: str) -> int:
        return sum(1 for seen in self.requests if path_part in seen.path)

    def paths(self) -> list[str]:
        return [seen.path for seen in self.requests]

    @property
    def inits(self) -> list[Publish]:
        return list(self.publishes.values())

    @property
    def published(self) -> list[Publish]:
        return [p for p in self.publishes.values() if p.status == "PUBLISH_COMPLETE"]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start() -> FakeTikTok:
    fake: FakeTikTok

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self._serve()

        def do_PUT(self) -> None:
            self._serve()

        def answer(self, status: int, body: dict, headers: dict | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def ok(self, data: dict) -> None:
            self.answer(200, {"data": data, "error": {"code": "ok", "message": "", "log_id": "l"}})

        def fail(self, status: int, code: str, message: str = "", headers: dict | None = None):
            self.answer(
                status,
                {"data": {}, "error": {"code": code, "message": message or code, "log_id": "l"}},
                headers,
            )

        def hang_up(self) -> None:
            self.close_connection = True
            self.connection.shutdown(2)

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            raw = self.rfile.read(length)
            path = urlsplit(self.path).path
            bearer = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            with fake.lock:
                if bearer in fake.access_tokens and not fake.revoked:
                    auth = "access"
                else:
                    auth = "none" if not bearer else "bad"
            body: Any = None
            kind = self.headers.get("Content-Type", "")
            if kind.startswith("application/json") and raw:
                body = json.loads(raw)
            elif kind.startswith("application/x-www-form-urlencoded"):
                body = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
                body = {
                    k: ("<secret>" if "secret" in k or "token" in k else v) for k, v in body.items()
                }
            seen_headers = {
                k: v
                for k, v in self.headers.items()
                if k.lower() in ("content-range", "content-type")
            }
            with fake.lock:
                fake.requests.append(Seen(path, auth, body, seen_headers))
            if path == "/v2/oauth/token/":
                self._token({k: v[0] for k, v in parse_qs(raw.decode()).items()})
            elif path.startswith("/upload/"):
                self._upload(path.rsplit("/", 1)[1], raw)
            elif not self._authorised(auth):
                return
            elif path == "/v2/post/publish/creator_info/query/":
                self._creator_info()
            elif path == "/v2/post/publish/video/init/":
                self._init(body or {})
            elif path == "/v2/post/publish/status/fetch/":
                self._status((body or {}).get("publish_id", ""))
            else:
                self.fail(404, "not_found", path)

        def _authorised(self, auth: str) -> bool:
            if auth != "access":
                self.fail(401, "access_token_invalid", "The access token is invalid or not found")
                return False
            with fake.lock:
                if fake.expire_next_access:
                    fake.expire_next_access = False
                    self.fail(401, "access_token_invalid", "The access token has expired")
                    return False
            return True

        def _scripted(self, endpoint: str) -> str:
            with fake.lock:
                return fake.script[endpoint].popleft() if fake.script[endpoint] else "ok"

        def _common_fault(self, behaviour: str) -> bool:
            """Answer a scripted fault shared by every endpoint; True when answered."""
            if behaviour.startswith("status:"):
                self.fail(int(behaviour.split(":")[1]), "internal_error", "Something went wrong")
            elif behaviour == "spam":
                self.fail(403, "spam_risk_too_many_posts", "The user has reached the daily cap")
            elif behaviour == "rate":
                self.fail(429, "rate_limit_exceeded", "Too many requests", {"Retry-After": "90"})
            elif behaviour == "unaudited":
                self.fail(
                    403,
                    "unaudited_client_can_only_post_to_private_accounts",
                    "Please review our integration guidelines",
                )
            else:
                return False
            return True

        # -- OAuth -------------------------------------------------------------------------

        def _token(self, form: dict[str, str]) -> None:
            if form.get("client_key") != CLIENT_KEY or form.get("client_secret") != CLIENT_SECRET:
                self.answer(401, {"error": "invalid_client", "error_description": "bad client"})
                return
            grant = form.get("grant_type")
            if grant == "authorization_code":
                with fake.lock:
                    challenge = fake.codes.pop(form.get("code", ""), None)
                verifier = form.get("code_verifier", "")
                if challenge is None or hashlib.sha256(verifier.encode()).hexdigest() != challenge:
                    self.answer(
                        400,
                        {"error": "invalid_request", "error_description": "Code verifier invalid"},
                    )
                    return
                self.answer(200, fake.issue())
                return
            if grant == "refresh_token":
                with fake.lock:
                    known = form.get("refresh_token") in fake.refresh_tokens and not fake.revoked
                    if known:
                        fake.refresh_tokens.discard(form["refresh_token"])  # rotated away
                if not known:
                    self.answer(
                        400,
                        {"error": "invalid_grant", "error_description": "Refresh token is invalid"},
                    )
                    return
                self.answer(200, fake.issue())
                return
            self.answer(400, {"error": "unsupported_grant_type"})

        # -- posting -----------------------------------------------------------------------

        def _creator_info(self) -> None:
            if self._common_fault(self._scripted("creator")):
                return
            self.ok(dict(fake.creator))

        def _init(self, body: dict) -> None:
            behaviour = self._scripted("init")
            if self._common_fault(behaviour):
                return
            info, source = body.get("post_info") or {}, body.get("source_info") or {}
            if info.get("privacy_level") not in fake.creator["privacy_level_options"]:
                self.fail(400, "privacy_level_option_mismatch", "privacy not in the options")
                return
            if info.get("brand_content_toggle") and info.get("privacy_level") == "SELF_ONLY":
                self.fail(400, "invalid_params", "Branded content cannot be private")
                return
            problem = chunk_problem(source)
            if problem:
                self.fail(400, "invalid_params", problem)
                return
            publish_id = "v_pub_file~v2." + secrets.token_hex(6)
            with fake.lock:
                fake.publishes[publish_id] = Publish(publish_id, info, source)
            if behaviour == "drop":
                self.hang_up()
                return
            self.ok({"publish_id": publish_id, "upload_url": f"{fake.url}/upload/{publish_id}"})

        def _upload(self, publish_id: str, raw: bytes) -> None:
            publish = fake.publishes.get(publish_id)
            if publish is None:
                self.fail(404, "not_found", "no such upload")
                return
            if fake.on_upload is not None:
                fake.on_upload(publish)
            behaviour = self._scripted("upload")
            if behaviour.startswith("status:"):
                self.send_response(int(behaviour.split(":")[1]))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            match = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)", self.headers.get("Content-Range", ""))
            source = publish.source_info
            if not match or int(match.group(3)) != source["video_size"]:
                self.fail(400, "invalid_params", "bad Content-Range")
                return
            first, last = int(match.group(1)), int(match.group(2))
            if last - first + 1 != len(raw) or first > len(publish.received):
                self.fail(416, "invalid_params", "chunks must come in order")
                return
            with fake.lock:
                publish.received[first : last + 1] = raw  # the same range again overwrites
                publish.chunks.append(self.headers["Content-Range"])
                done = len(publish.received) == source["video_size"]
                if done and publish.status == "PROCESSING_UPLOAD":
                    publish.status = "PROCESSING_PUBLISH"
                    _advance(fake, publish)  # TikTok goes on whether or not it is asked
            if behaviour == "drop":
                self.hang_up()
                return
            self.send_response(201 if done else 206)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _status(self, publish_id: str) -> None:
            behaviour = self._scripted("status")
            if behaviour == "drop":
                self.hang_up()
                return
            if self._common_fault(behaviour):
                return
            publish = fake.publishes.get(publish_id)
            if publish is None:
                self.fail(400, "invalid_publish_id", "publish_id does not exist")
                return
            with fake.lock:
                publish.polls += 1
                _advance(fake, publish)
                shown = (
                    "PROCESSING_UPLOAD"
                    if publish.status == "PROCESSING_PUBLISH"
                    else publish.status
                )
                data: dict[str, Any] = {
                    "status": shown,
                    "uploaded_bytes": len(publish.received),
                    "publicaly_available_post_id": [publish.post_id] if publish.post_id else [],
                }
                if publish.fail_reason:
                    data["fail_reason"] = publish.fail_reason
            self.ok(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    fake = FakeTikTok(server)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return fake


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
