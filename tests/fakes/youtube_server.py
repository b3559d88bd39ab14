"""A local stand-in for YouTube (Data API v3 + Google's token endpoint), over HTTPS.

google-api-python-client keeps `https` for media-upload URLs when the endpoint is overridden,
so the fake serves TLS with a certificate made at test time (`make_tls`); the clients trust it
through REQUESTS_CA_BUNDLE / HTTPLIB2_CA_CERTS, verification stays on.

    tls = make_tls(tmp_path)
    with FakeYouTube(tls) as youtube:
        youtube.drop_after("finish")   # finish the video, then hang up, once
        ... settings api_base=youtube.url, token_uri=youtube.token_uri ...
        assert youtube.count("initiate") == 1

It speaks the resumable protocol (initiate → Location, chunked PUTs with 308 + Range, final
200 with the video resource, `bytes */SIZE` status probes), channels.list, playlistItems.list,
videos.list, thumbnails.set, and the token endpoint (authorization code with PKCE, refresh,
rotation, invalid_grant). Every request is recorded by kind, without its secrets.

Faults are the shared vocabulary of tests/fakes/base.py (`fail_next("*", 503)`, `revoke()`,
`drop_after("chunk")`...) and YouTube's own words, scripted like them:

    youtube.script["initiate"].append("quota")   # 403 quotaExceeded (any API call takes it)
    youtube.script["initiate"].append("upload_limit")   # 400 uploadLimitExceeded
    youtube.script["videos.update"].append("no_scope")   # 403 insufficientPermissions
    youtube.script["chunk"].extend([OK, "half"])   # 2nd chunk (not the last): half kept, hang up
    youtube.drop_after("finish")   # the chunk that completes the video: made, answer lost
    youtube.script["auth"].append("deny")   # the person presses Cancel on the consent screen
    youtube.script["probe"].append("garbled")   # a made video's probe answered 200, cut short

and the states of the channel and its API project: `lock_private` (a project Google has not
audited: every upload is locked private), `hide_new_uploads` (new videos stay out of the
uploads playlist), `rotate_refresh_tokens` (each refresh answers a new refresh token).

Comments (issue 28): `add_comment(video_id, text, ...)` puts a comment by someone else under
a video (or, with `parent`, a reply under a top-level comment), `delete_comment(id)` deletes
one; commentThreads.list (`commentThreads`), comments.list (`comments`) and comments.insert
(`comments.insert`, a reply kept as the channel's) serve them as YouTube does. `comment_scope =
False`: the grant lacks youtube.force-ssl (403 insufficientPermissions on every comments call).
Besides the shared words, `stored:N` on `comments.insert` makes the reply, then answers N
(`store_then_fail(500)`).

Every API request is first checked against the discovery document shipped inside
google-api-python-client (tests/fakes/youtube_contract.py: the method, its parameters, the
part names, the body's fields and types); one that breaks it is refused with Google's error
envelope (reason `badRequest`, `invalidParameter`, `required`, `unknownPart` or `invalid`).
videos.insert keeps only the parts its `part` names (a `status` left out of `part=snippet` is
dropped, as YouTube drops it) and refuses a `publishAt` on a video that is not private
(`invalidPublishAt`).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import ipaddress
import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

from tests.fakes.base import Call, FakeServer
from tests.fakes.youtube_contract import request_problem

CHANNEL_ID = "UCfakechannel0000000000"
UPLOADS_ID = "UUfakechannel0000000000"
CLIENT_ID = "123456789012-fake.apps.googleusercontent.com"
CLIENT_SECRET = "fake-client-secret"
STATISTICS = ("viewCount", "likeCount", "favoriteCount", "commentCount")
JSON = "application/json; charset=UTF-8"
#: YouTube's own error words: (status, reason, message) of
#: https://developers.google.com/youtube/v3/docs/errors
ERRORS = {
    "quota": (403, "quotaExceeded", "The request cannot be completed"),
    "upload_limit": (
        400,
        "uploadLimitExceeded",
        "The user has exceeded the number of videos they may upload.",
    ),
    "no_scope": (403, "insufficientPermissions", "Request had insufficient scopes."),
    # commentThreads.list on a video whose comments are turned off (issue 28)
    "comments_off": (
        403,
        "commentsDisabled",
        "The video identified by the videoId parameter has disabled comments.",
    ),
}


@dataclass(frozen=True)
class Tls:
    ca: Path  # the bundle clients trust
    cert: Path
    key: Path


def make_tls(folder: Path) -> Tls:
    """A throwaway CA and a server certificate for 127.0.0.1 / localhost signed by it."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder.mkdir(parents=True, exist_ok=True)
    start = dt.datetime.now(dt.UTC) - dt.timedelta(days=1)
    end = start + dt.timedelta(days=30)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Autoretto test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
                encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = Tls(folder / "ca.pem", folder / "server.pem", folder / "server.key")
    paths.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths


@dataclass
class Session:
    metadata: dict[str, Any]
    size: int
    received: bytearray = field(default_factory=bytearray)
    video_id: str | None = None


class FakeYouTube(FakeServer):
    """YouTube on the shared fake base (see the module's docstring), whose operations are the
    recorded kinds (`initiate`, `chunk`, `probe`, `channels`,
    `playlistItems`, `videos`, `thumbnails`, `videos.update`, `token`). A word scripted on
    `chunk` applies to the next chunk; the contract's one-second clip is sent in one."""

    title = "YouTube"
    publish_operation = "chunk"

    def __init__(self, tls: Tls, *, channel_title: str = "Rain Lofi") -> None:
        super().__init__(tls=tls)
        # https://developers.google.com/youtube/v3/docs/videos/insert: uploads of unverified
        # API projects created after 2020-07-28 are locked private
        self.lock_private = False
        self.hide_new_uploads = False
        self.rotate_refresh_tokens = False
        self.channel_title = channel_title
        self.videos: dict[str, dict[str, Any]] = {}  # id -> resource
        self.uploads: list[str] = []  # newest first
        self.hidden: set[str] = set()
        self.video_bytes: dict[str, bytes] = {}
        self.thumbnails: dict[str, int] = {}
        self.statistics: dict[str, dict[str, str]] = {}  # id -> videos.list `statistics`
        self.sessions: dict[str, Session] = {}
        self.access_tokens: dict[str, float] = {}  # token -> expiry (fake seconds, unused)
        self.refresh_tokens: set[str] = set()
        self.codes: dict[str, dict[str, str]] = {}
        # -- comments and replies (issue 28)
        self.comment_resources: dict[str, dict[str, Any]] = {}  # id -> comment resource
        self.deleted_comments: set[str] = set()
        self.comment_scope = True  # the grant holds youtube.force-ssl
        self.replies_in_thread = 5  # replies a commentThreads item carries at most
        self._comment_clock = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)

    @property
    def token_uri(self) -> str:
        return f"{self.url}/token"

    # -- what a test sets up and reads ----------------------------------------------------

    def settings(self) -> str:
        return f'api_base = "{self.url}"\ntoken_uri = "{self.token_uri}"\n'

    def account(self) -> dict[str, Any]:
        """A channel connected today with the upload scope, its tokens known here."""
        from autoretto.platforms.youtube import project_of

        tokens = {
            **self.issue_tokens(),
            "expires_at": "2099-01-01T00:00:00Z",
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "token_uri": self.token_uri,
            "scopes": ["https://www.googleapis.com/auth/youtube.upload"],
        }
        return {
            "account_id": CHANNEL_ID,
            "name": self.channel_title,
            "tokens": tokens,
            "meta": {"uploads": UPLOADS_ID, "project": project_of(CLIENT_ID)},
        }

    def visible_copies(self) -> int:
        """Videos on the channel made by an upload (a person sees them, public or private)."""
        with self.lock:
            return len(self.video_bytes)

    def issue_tokens(self, *, refresh_token: str | None = None) -> dict[str, str]:
        """A valid access token and refresh token, as if a person had connected."""
        access = "ya29.fake-" + secrets.token_urlsafe(12)
        refresh = refresh_token or "1//fake-refresh-" + secrets.token_urlsafe(12)
        with self.lock:
            self.access_tokens[access] = 0
            self.refresh_tokens.add(refresh)
        return {"access_token": access, "refresh_token": refresh}

    def authorize(self, *, challenge: str, redirect_uri: str, scope: str) -> str:
        """What Google's consent screen does: remember the PKCE challenge, hand out a code."""
        code = "4/fake-code-" + secrets.token_urlsafe(8)
        with self.lock:
            self.codes[code] = {
                "challenge": challenge,
                "redirect_uri": redirect_uri,
                "scope": scope,
            }
        return code

    def add_video(self, *, tags: list[str], title: str = "Earlier upload") -> str:
        video_id = self._new_video(
            {"snippet": {"title": title, "description": "", "tags": tags}, "status": {}}
        )
        return video_id

    def chunk_starts(self) -> list[int]:
        with self.lock:
            return [r["start"] for r in self.requests if r["kind"] == "chunk"]

    # -- internals ------------------------------------------------------------------------

    def _new_video(self, metadata: dict[str, Any]) -> str:
        video_id = "vid" + secrets.token_hex(4)
        snippet = dict(metadata.get("snippet", {}))
        snippet.update(channelId=CHANNEL_ID, publishedAt="2026-11-29T10:00:00Z")
        status = dict(metadata.get("status", {}))
        status.setdefault("privacyStatus", "public")
        if self.lock_private:
            status["privacyStatus"] = "private"
        status["uploadStatus"] = "uploaded"
        self.videos[video_id] = {
            "kind": "youtube#video",
            "id": video_id,
            "snippet": snippet,
            "status": status,
        }
        self.uploads.insert(0, video_id)
        if self.hide_new_uploads:
            self.hidden.add(video_id)
        return video_id

    @staticmethod
    def _error(call: Call, status: int, reason: str, message: str, **headers: str) -> None:
        call.send(
            status,
            {
                "error": {
                    "code": status,
                    "message": message,
                    "errors": [{"reason": reason, "message": message, "domain": "youtube"}],
                }
            },
            headers,
            content_type=JSON,
        )

    def failure(self, call: Call, status: int) -> Any:
        # the reasons of https://developers.google.com/youtube/v3/docs/errors (core errors)
        reason, message = {
            429: ("rateLimitExceeded", "Rate Limit Exceeded"),
            500: ("internalError", "Internal Error"),
            503: ("backendError", "Backend Error"),
        }.get(status, ("badRequest", "Bad Request"))
        return {
            "error": {
                "code": status,
                "message": message,
                "errors": [{"reason": reason, "message": message, "domain": "global"}],
            }
        }

    def refusal(self, call: Call) -> None:
        # videos.insert's refusal of the metadata: https://developers.google.com/youtube/v3/
        # docs/videos/insert#errors (badRequest: invalidTitle)
        self._error(call, 400, "invalidTitle", "The request metadata specifies an invalid title.")

    def _authorized(self, call: Call) -> bool:
        token = call.bearer
        with self.lock:
            good = token in self.access_tokens and not self.revoked
        if not good:
            self._error(call, 401, "authError", "Invalid Credentials")
        return good

    def _refused(self, call: Call) -> bool:
        """The call is answered without its work: by a shared word (`status:N`, `refuse`...)
        or one of YouTube's errors (ERRORS)."""
        if call.refused():
            return True
        if call.behaviour in ERRORS:
            self._error(call, *ERRORS[call.behaviour])
            return True
        return False

    def route(self, call: Call) -> None:
        method, path, query, body = call.method, call.path, call.query, call.body
        if path == "/token" and method == "POST":
            return self._token(call, body)
        if path == "/auth" and method == "GET":
            return self._consent(call, query)
        # Every API call is checked against the discovery document first, as YouTube would.
        problem = request_problem(method, path, query, body)
        if problem is not None:
            call.begin("refused", method=method, path=path, reason=problem[1])
            return self._error(call, *problem)
        if path == "/upload/youtube/v3/videos" and method == "POST":
            return self._initiate(call, query, body)
        if path == "/upload/youtube/v3/videos" and method == "PUT":
            return self._chunk(call, query, body)
        if path == "/upload/youtube/v3/thumbnails/set" and method == "POST":
            return self._thumbnail(call, query, body)
        if path == "/youtube/v3/videos" and method == "PUT":
            return self._videos_update(call, query, body)
        if path == "/youtube/v3/comments" and method == "POST":
            return self._comments_insert(call, query, body)
        api = {
            "/youtube/v3/commentThreads": self._comment_threads,
            "/youtube/v3/comments": self._comments_list,
            "/youtube/v3/channels": self._channels,
            "/youtube/v3/playlistItems": self._playlist_items,
            "/youtube/v3/videos": self._videos_list,
        }.get(path)
        if api is None or method != "GET":
            call.begin("unknown", method=method, path=path)
            return self._error(call, 404, "notFound", f"no {method} {path}")
        call.begin(path.rsplit("/", 1)[1], query=query)
        if self._refused(call) or not self._authorized(call):
            return None
        if "/comment" in path and not self._comment_scoped(call):
            return None
        return api(call, query)

    # -- the consent screen and the token endpoint ----------------------------------------------

    def _consent(self, call: Call, query: dict[str, str]) -> None:
        """A person pressing Allow (or Cancel, the word `deny`) on Google's consent page."""
        call.begin("auth", sign_in=True, query=query)
        target = query["redirect_uri"]
        state = query.get("state", "")
        if call.behaviour == "deny":
            location = f"{target}?" + urlencode({"error": "access_denied", "state": state})
        else:
            code = self.authorize(
                challenge=query.get("code_challenge", ""),
                redirect_uri=target,
                scope=query.get("scope", ""),
            )
            location = f"{target}?" + urlencode({"state": state, "code": code})
        call.answer(302, None, {"Location": location})

    # -- the token endpoint ------------------------------------------------------------------

    def _token(self, call: Call, body: bytes) -> None:
        form = {key: values[0] for key, values in parse_qs(body.decode()).items()}
        grant = form.get("grant_type")
        call.begin("token", sign_in=True, grant=grant)
        if call.refused():
            return None
        basic = call.headers.get("Authorization", "")
        if basic.startswith("Basic "):  # client credentials may come as HTTP Basic auth
            client_id, _, client_secret = base64.b64decode(basic[6:]).decode().partition(":")
            form.setdefault("client_id", client_id)
            form.setdefault("client_secret", client_secret)
        if form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET:
            return call.answer(
                400, {"error": "invalid_client", "error_description": "Unauthorized"}
            )
        if grant == "refresh_token":
            with self.lock:
                known = form.get("refresh_token") in self.refresh_tokens
                if not known or self.revoked:
                    refused = True
                else:
                    refused = False
                    answer = {"token_type": "Bearer", "expires_in": 3599}
                    answer["access_token"] = "ya29.fake-" + secrets.token_urlsafe(12)
                    self.access_tokens[answer["access_token"]] = 0
                    if self.rotate_refresh_tokens:
                        self.refresh_tokens.discard(form["refresh_token"])
                        answer["refresh_token"] = "1//fake-rotated-" + secrets.token_urlsafe(12)
                        self.refresh_tokens.add(answer["refresh_token"])
            if refused:
                return call.answer(
                    400,
                    {
                        "error": "invalid_grant",
                        "error_description": "Token has been expired or revoked.",
                    },
                )
            return call.answer(200, answer)
        if grant == "authorization_code":
            with self.lock:
                issued = self.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            digest = hashlib.sha256(verifier.encode()).digest()
            challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            if (
                issued is None
                or issued["challenge"] != challenge
                or issued["redirect_uri"] != form.get("redirect_uri")
            ):
                return call.answer(
                    400, {"error": "invalid_grant", "error_description": "Bad Request"}
                )
            tokens = self.issue_tokens()
            return call.answer(
                200,
                {**tokens, "expires_in": 3599, "token_type": "Bearer", "scope": issued["scope"]},
            )
        return call.answer(400, {"error": "unsupported_grant_type"})

    # -- uploads -------------------------------------------------------------------------------

    def _initiate(self, call: Call, query: dict[str, str], body: bytes) -> None:
        call.begin("initiate", query=query)
        if self._refused(call) or not self._authorized(call):
            return None
        if query.get("uploadType") != "resumable":
            return self._error(call, 400, "badRequest", "only resumable uploads here")
        metadata = json.loads(body or b"{}")
        # `part` "identifies the properties that the write operation will set" (the discovery
        # document's videos.insert): a part the body carries but `part` does not name is
        # ignored, as YouTube ignores it (its privacy, publishAt, synthetic-media flag).
        named = {part.strip() for part in query.get("part", "").split(",")}
        metadata = {key: value for key, value in metadata.items() if key in named}
        status = metadata.get("status", {})
        if status.get("publishAt") and status.get("privacyStatus") != "private":
            # VideoStatus.publishAt "can be set only if the privacy status of the video is
            # private" (discovery document); the refusal is videos.insert's badRequest
            # invalidPublishAt (https://developers.google.com/youtube/v3/docs/videos/insert#errors)
            return self._error(
                call,
                400,
                "invalidPublishAt",
                "The request metadata specifies an invalid scheduled publishing time.",
            )
        title = metadata.get("snippet", {}).get("title", "")
        if not title or len(title) > 100 or "<" in title or ">" in title:
            return self._error(
                call,
                400,
                "invalidTitle",
                "The request metadata specifies an invalid video title.",
            )
        size = int(call.headers.get("X-Upload-Content-Length") or 0)
        upload_id = secrets.token_urlsafe(12)
        with self.lock:
            self.sessions[upload_id] = Session(metadata, size)
        location = f"{self.url}/upload/youtube/v3/videos?uploadType=resumable&upload_id={upload_id}"
        call.answer(200, None, {"Location": location})

    def _chunk(self, call: Call, query: dict[str, str], body: bytes) -> None:
        content_range = call.headers.get("Content-Range", "")
        probe = content_range.startswith("bytes */")
        start = None if probe else int(content_range.split(" ", 1)[1].split("-", 1)[0])
        call.begin("probe" if probe else "chunk", start=start, length=len(body))
        if self._refused(call):
            return None
        with self.lock:
            session = self.sessions.get(query.get("upload_id", ""))
        if session is None:
            return self._error(call, 404, "notFound", "upload session not found")
        if probe:
            return self._session_state(call, session)
        with self.lock:
            if start != len(session.received):
                bad = True
            else:
                bad = False
                finishing = start + len(body) >= session.size
                if call.behaviour == "half" and not finishing:
                    session.received += body[: len(body) // 2]
                    drop = True
                else:
                    drop = False
                    session.received += body
                    if len(session.received) >= session.size and session.video_id is None:
                        session.video_id = self._new_video(session.metadata)
                        self.video_bytes[session.video_id] = bytes(session.received)
                        drop = self.script.take("finish", shared=False) == "drop"
        if bad:
            return self._error(
                call, 400, "badContentRange", f"expected byte {len(session.received)}"
            )
        if drop:
            return call.hang_up()
        return self._session_state(call, session)

    def _session_state(self, call: Call, session: Session) -> None:
        if session.video_id is not None:
            return call.answer(200, self.videos[session.video_id])
        headers = {}
        if session.received:
            headers["Range"] = f"bytes=0-{len(session.received) - 1}"
        return call.answer(308, None, headers)

    def _thumbnail(self, call: Call, query: dict[str, str], body: bytes) -> None:
        call.begin("thumbnail", query=query, length=len(body))
        if self._refused(call) or not self._authorized(call):
            return None
        video_id = query.get("videoId", "")
        if video_id not in self.videos:
            return self._error(call, 404, "videoNotFound", "video not found")
        self.thumbnails[video_id] = len(body)
        call.answer(200, {"kind": "youtube#thumbnailSetResponse", "items": [{}]})

    # -- listings -------------------------------------------------------------------------------

    def _channels(self, call: Call, query: dict[str, str]) -> None:
        if query.get("mine") != "true":
            return self._error(call, 400, "missingParameter", "mine=true expected")
        call.answer(
            200,
            {
                "items": [
                    {
                        "id": CHANNEL_ID,
                        "snippet": {"title": self.channel_title},
                        "contentDetails": {"relatedPlaylists": {"uploads": UPLOADS_ID}},
                    }
                ]
            },
        )

    def _playlist_items(self, call: Call, query: dict[str, str]) -> None:
        if query.get("playlistId") != UPLOADS_ID:
            return self._error(call, 404, "playlistNotFound", "playlist not found")
        size = int(query.get("maxResults", "5"))
        offset = int(query.get("pageToken") or 0)
        with self.lock:
            listed = [v for v in self.uploads if v not in self.hidden]
        page = listed[offset : offset + size]
        answer: dict[str, Any] = {
            "items": [
                {
                    "snippet": {
                        "title": self.videos[v]["snippet"].get("title"),
                        "description": self.videos[v]["snippet"].get("description", ""),
                        "resourceId": {"kind": "youtube#video", "videoId": v},
                    }
                }
                for v in page
            ]
        }
        if offset + size < len(listed):
            answer["nextPageToken"] = str(offset + size)
        call.answer(200, answer)

    def _videos_list(self, call: Call, query: dict[str, str]) -> None:
        ids = [v for v in query.get("id", "").split(",") if v]
        if "statistics" in query.get("part", "").split(","):
            return self._videos_statistics(call, ids)
        call.answer(200, {"items": [self.videos[v] for v in ids if v in self.videos]})

    def _videos_statistics(self, call: Call, ids: list[str]) -> None:
        """videos.list?part=statistics: at most 50 ids, counters as decimal strings."""
        if len(ids) > 50:
            return self._error(call, 400, "invalidFilters", "at most 50 video ids")
        items = [
            {
                "kind": "youtube#video",
                "id": v,
                "statistics": self.statistics.get(v, dict.fromkeys(STATISTICS, "0")),
            }
            for v in ids
            if v in self.videos
        ]
        call.answer(200, {"items": items})

    def set_statistics(self, video_id: str, *, views: int, likes: int, comments: int) -> None:
        self.statistics[video_id] = {
            "viewCount": str(views),
            "likeCount": str(likes),
            "favoriteCount": "0",
            "commentCount": str(comments),
        }

    def _videos_update(self, call: Call, query: dict[str, str], body: bytes) -> None:
        """videos.update: each part named replaces that part of the video, as YouTube does."""
        resource = json.loads(body or b"{}")
        call.begin("videos.update", query=query, body=resource)
        if self._refused(call) or not self._authorized(call):
            return None
        video = self.videos.get(resource.get("id", ""))
        if video is None:
            return self._error(call, 404, "videoNotFound", "video not found")
        parts = [part.strip() for part in query.get("part", "").split(",") if part.strip()]
        snippet = resource.get("snippet")
        if "snippet" in parts and not (
            snippet and snippet.get("title") and snippet.get("categoryId")
        ):
            return self._error(
                call, 400, "invalidVideoMetadata", "The request metadata is invalid."
            )
        if "localizations" in parts and resource.get("localizations"):
            default = (snippet or {}).get("defaultLanguage") if "snippet" in parts else None
            if not (default or video["snippet"].get("defaultLanguage")):
                return self._error(
                    call,
                    400,
                    "defaultLanguageNotSet",
                    "The request is trying to add localized video details without specifying "
                    "the default language of the video details.",
                )
        with self.lock:
            if "snippet" in parts:
                kept = {k: video["snippet"][k] for k in ("channelId", "publishedAt")}
                video["snippet"] = {**snippet, **kept}
            if "localizations" in parts:
                video["localizations"] = resource.get("localizations") or {}
        call.answer(200, video)

    # -- comments and replies (issue 28) ----------------------------------------------------
    # commentThreads.list, comments.list and comments.insert as
    # https://developers.google.com/youtube/v3/docs/commentThreads/list and
    # https://developers.google.com/youtube/v3/docs/comments/insert describe them.

    def add_comment(
        self, video_id: str, text: str, *, author: str = "Ana", author_channel: str = "UCana",
        parent: str | None = None, published_at: str | None = None,
    ) -> str:  # fmt: skip
        """A comment by someone else under `video_id` (a reply under `parent`), dated
        `published_at` (default: a minute after the fake's last comment); its id."""
        with self.lock:
            return self._new_comment(video_id, text, author, author_channel, parent, published_at)

    def store_then_fail(self, status: int = 500) -> None:
        """The next reply is stored, then answered `status` (`stored:N` on `comments.insert`)."""
        self.script["comments.insert"].append(f"stored:{status}")

    def delete_comment(self, comment_id: str) -> None:
        """Its author (or the channel) deleted the comment (and a top-level one's replies)."""
        with self.lock:
            self.deleted_comments.add(comment_id)

    def replies_to(self, comment_id: str, *, mine: bool = True) -> list[dict[str, Any]]:
        """The live replies under top-level comment `comment_id` (the channel's only: `mine`)."""
        with self.lock:
            return [
                item
                for item in self._replies(comment_id)
                if not mine or item["snippet"]["authorChannelId"]["value"] == CHANNEL_ID
            ]

    def _new_comment(
        self, video_id: str, text: str, author: str, author_channel: str, parent: str | None,
        published_at: str | None,
    ) -> str:  # fmt: skip
        if published_at is None:
            self._comment_clock += dt.timedelta(minutes=1)
            published_at = self._comment_clock.strftime("%Y-%m-%dT%H:%M:%SZ")
        comment_id = ("Ugr" if parent else "Ugz") + secrets.token_hex(6)
        snippet: dict[str, Any] = {
            "channelId": CHANNEL_ID,
            "videoId": video_id,
            "textDisplay": text,
            "textOriginal": text,
            "authorDisplayName": author,
            "authorChannelId": {"value": author_channel},
            "canRate": True,
            "likeCount": 0,
            "publishedAt": published_at,
            "updatedAt": published_at,
        }
        if parent:
            snippet["parentId"] = parent
        self.comment_resources[comment_id] = {
            "kind": "youtube#comment",
            "id": comment_id,
            "snippet": snippet,
        }
        return comment_id

    def _live(self, item: dict[str, Any]) -> bool:
        parent = item["snippet"].get("parentId")
        return item["id"] not in self.deleted_comments and parent not in self.deleted_comments

    def _replies(self, parent: str) -> list[dict[str, Any]]:
        """The live replies under `parent`, oldest first (a caller holds the lock)."""
        found = [
            item
            for item in self.comment_resources.values()
            if item["snippet"].get("parentId") == parent and self._live(item)
        ]
        return sorted(found, key=lambda item: item["snippet"]["publishedAt"])

    def _shown(self, item: dict[str, Any]) -> dict[str, Any]:
        """A comment as a reader sees it: textOriginal only to its author (the channel)."""
        shown = json.loads(json.dumps(item))
        if shown["snippet"]["authorChannelId"]["value"] != CHANNEL_ID:
            shown["snippet"].pop("textOriginal", None)
        return shown

    def _comment_scoped(self, call: Call) -> bool:
        if not self.comment_scope:
            self._error(call, 403, "insufficientPermissions", "Request had insufficient scopes.")
        return self.comment_scope

    @staticmethod
    def _page(query: dict[str, str], items: list[Any], default: int = 20) -> tuple[list, dict]:
        size = int(query.get("maxResults") or default)
        offset = int(query.get("pageToken") or 0)
        more = {"nextPageToken": str(offset + size)} if offset + size < len(items) else {}
        return items[offset : offset + size], more

    def _comment_threads(self, call: Call, query: dict[str, str]) -> None:
        """commentThreads.list?videoId=: the video's threads, newest first (`order=time`)."""
        video_id = query.get("videoId")
        if not video_id:
            return self._error(call, 400, "missingRequiredParameter", "No filter selected.")
        if video_id not in self.videos:
            return self._error(call, 404, "videoNotFound", "The video could not be found.")
        parts = query.get("part", "").split(",")
        with self.lock:
            tops = sorted(
                (
                    item
                    for item in self.comment_resources.values()
                    if item["snippet"]["videoId"] == video_id
                    and "parentId" not in item["snippet"]
                    and self._live(item)
                ),
                key=lambda item: item["snippet"]["publishedAt"],
                reverse=query.get("order", "time") == "time",
            )
            page, more = self._page(query, tops)
            items = []
            for top in page:
                replies = self._replies(top["id"])
                thread: dict[str, Any] = {
                    "kind": "youtube#commentThread",
                    "id": top["id"],
                    "snippet": {
                        "channelId": CHANNEL_ID,
                        "videoId": video_id,
                        "topLevelComment": self._shown(top),
                        "canReply": True,
                        "totalReplyCount": len(replies),
                        "isPublic": True,
                    },
                }
                if "replies" in parts and replies:
                    shown = [self._shown(r) for r in replies[-self.replies_in_thread :]]
                    thread["replies"] = {"comments": shown}
                items.append(thread)
        call.answer(200, {"kind": "youtube#commentThreadListResponse", "items": items, **more})

    def _comments_list(self, call: Call, query: dict[str, str]) -> None:
        """comments.list?parentId=: the replies under one top-level comment."""
        parent = query.get("parentId")
        if not parent:
            return self._error(call, 400, "missingRequiredParameter", "No filter selected.")
        with self.lock:
            if parent not in self.comment_resources or parent in self.deleted_comments:
                found = None
            else:
                page, more = self._page(query, self._replies(parent))
                found = [self._shown(item) for item in page]
        if found is None:
            return self._error(call, 404, "commentNotFound", "The comment could not be found.")
        call.answer(200, {"kind": "youtube#commentListResponse", "items": found, **more})

    def _comments_insert(self, call: Call, query: dict[str, str], body: bytes) -> None:
        """comments.insert: a reply of the channel's under a top-level comment."""
        resource = json.loads(body or b"{}")
        call.begin("comments.insert", query=query, body=resource)
        if self._refused(call) or not self._authorized(call) or not self._comment_scoped(call):
            return None
        snippet = resource.get("snippet") or {}
        parent, text = snippet.get("parentId"), snippet.get("textOriginal") or ""
        if not text.strip():
            return self._error(call, 400, "commentTextRequired", "The comment has no text.")
        if len(text) > 10000:
            return self._error(call, 400, "commentTextTooLong", "The comment is too long.")
        with self.lock:
            top = self.comment_resources.get(parent or "")
            if top is None or not self._live(top) or "parentId" in top["snippet"]:
                made = None
            else:
                made = self._new_comment(
                    top["snippet"]["videoId"], text, self.channel_title, CHANNEL_ID, parent, None
                )
        if made is None:
            return self._error(
                call, 404, "parentCommentNotFound", "The parent comment could not be found."
            )
        if call.behaviour.startswith("stored:"):
            return self.answer_failure(call, int(call.behaviour.split(":")[1]))
        call.answer(200, self.comment_resources[made])


def tls_environment(monkeypatch: Any, tls: Tls) -> None:
    """Make every HTTP stack trust the fake's CA, and keep tests out of any real keyring."""
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(tls.ca))
    monkeypatch.setenv("HTTPLIB2_CA_CERTS", str(tls.ca))
    monkeypatch.setenv("AUTORETTO_VAULT", "file")


def connect_account(
    db: Any, home: Path, fake: FakeYouTube, *, expires_at: str = "2099-01-01T00:00:00Z"
) -> dict[str, Any]:
    """Store a connected YouTube account whose tokens the fake knows; returns the tokens."""
    from autoretto.accounts import save_account
    from autoretto.platforms.youtube import project_of

    issued = fake.issue_tokens()
    tokens = {
        **issued,
        "expires_at": expires_at,
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "token_uri": fake.token_uri,
        "scopes": ["https://www.googleapis.com/auth/youtube.upload"],
    }
    save_account(
        db,
        home,
        platform="youtube",
        account_id=CHANNEL_ID,
        name=fake.channel_title,
        tokens=tokens,
        meta={"uploads": UPLOADS_ID, "project": project_of(CLIENT_ID)},
    )
    return tokens
