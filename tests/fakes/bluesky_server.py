"""A fake Bluesky on 127.0.0.1: a PDS under /pds and the video service under /video.

    fake = bluesky_server.start()
    settings: pds = fake.pds_url, video_service = fake.video_url
    fake.script.append("drop")          # the next createRecord is stored, then the line is cut
    assert len(fake.records) == 1

It speaks the XRPC calls Autoretto makes: createSession, refreshSession (refresh tokens rotate:
an old one is refused with ExpiredToken), getServiceAuth, getRecord, createRecord (with a
client-chosen rkey; an existing rkey is refused), and on the video service getUploadLimits,
uploadVideo (raw bytes; the same bytes again answer `already_exists` with the blob) and
getJobStatus. Every request is recorded by what it was, never with its tokens.

Scripted faults for createRecord (`script`, one word per call, default `ok`): `ok`,
`status:N` (answer HTTP N, store nothing), `drop` (store, then hang up). Switches:
`expire_next_access` (the next authorised PDS call answers ExpiredToken), `can_upload`,
`upload_message`, `polls_before_done` (job polls answering in progress), `revoked`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

DID = "did:plc:fakelofi7777"
HANDLE = "lofi.test"
APP_PASSWORD = "abcd-efgh-ijkl-mnop"


def lexicon_problem(data: Any) -> str | None:
    """Why the PDS would refuse this createRecord input by the lexicons, else None.

    The `atproto` package's generated models are the lexicons (com.atproto.repo.createRecord,
    app.bsky.feed.post and what it embeds), validated strictly, string formats included
    (datetime, did, nsid, record key, language...). The models do not count graphemes, so the
    post's `maxGraphemes: 300` (lexicons/app/bsky/feed/post.json) is checked here.
    """
    import regex
    from atproto_client import models
    from atproto_client.models.utils import get_or_create

    try:
        get_or_create(
            data, models.ComAtprotoRepoCreateRecord.Data, strict=True, strict_string_format=True
        )
        if (data or {}).get("collection") == "app.bsky.feed.post":
            record = data.get("record") or {}
            get_or_create(
                record, models.AppBskyFeedPost.Record, strict=True, strict_string_format=True
            )
            if len(regex.findall(r"\X", str(record.get("text") or ""))) > 300:
                return (
                    "Invalid app.bsky.feed.post record: text must not be longer than 300 graphemes"
                )
    except Exception as error:  # the models' ModelError wraps pydantic's ValidationError
        return f"Invalid app.bsky.feed.post record: {str(error).splitlines()[1:3]}"
    return None


def fake_jwt(kind: str, lifetime: int = 7200) -> str:
    """A token shaped like a JWT whose `exp` the client can read."""

    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    # The fake's clock is the test's clock (AUTORETTO_NOW), so a token's lifetime means the
    # same to the client on any real date.
    clock = os.environ.get("AUTORETTO_NOW")
    issued = datetime.fromisoformat(clock).timestamp() if clock else time.time()
    claims = {"scope": kind, "exp": int(issued) + lifetime, "jti": secrets.token_hex(8)}
    return f"{part({'alg': 'HS256'})}.{part(claims)}.{secrets.token_hex(8)}"


@dataclass
class Seen:
    service: str  # pds | video
    method: str  # the NSID
    auth: str  # session | service | refresh | none | bad
    query: dict[str, str] = field(default_factory=dict)
    body: Any = None


@dataclass
class FakeBluesky:
    server: ThreadingHTTPServer
    script: deque = field(default_factory=deque)
    requests: list[Seen] = field(default_factory=list)
    records: dict[str, dict] = field(default_factory=dict)  # rkey -> record
    access_tokens: set[str] = field(default_factory=set)
    refresh_tokens: set[str] = field(default_factory=set)
    service_tokens: dict[str, str] = field(default_factory=dict)  # token -> lxm
    blobs: dict[str, dict] = field(default_factory=dict)  # sha256 of the bytes -> blob
    jobs: dict[str, dict] = field(default_factory=dict)
    expire_next_access: bool = False
    can_upload: bool = True
    upload_message: str = ""
    polls_before_done: int = 1
    revoked: bool = False
    email_confirmed: bool = True  # False: uploadVideo answers `unconfirmed_email`
    unconfirmed_status: int = 400  # the HTTP status of that answer (#3097 does not say)
    already_exists_blob: bool = False  # True: `already_exists` carries the blob itself
    lock: threading.Lock = field(default_factory=threading.Lock)
    # app.bsky.feed.getPosts: counters per rkey, and scripted answers (`status:N[:retry-after]`)
    counters: dict[str, dict[str, int]] = field(default_factory=dict)
    get_posts_script: deque = field(default_factory=deque)

    @property
    def base(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def pds_url(self) -> str:
        return self.base + "/pds"

    @property
    def video_url(self) -> str:
        return self.base + "/video"

    def settings(self, **extra: Any) -> str:
        lines = [f'pds = "{self.pds_url}"', f'video_service = "{self.video_url}"']
        lines += ["poll_wait = 0", "timeout = 5"]
        lines += [f"{key} = {json.dumps(value)}" for key, value in extra.items()]
        return "\n".join(lines) + "\n"

    def issue_session(self) -> dict[str, str]:
        access, refresh = fake_jwt("access"), fake_jwt("refresh", 90 * 86400)
        with self.lock:
            self.access_tokens.add(access)
            self.refresh_tokens.add(refresh)
        return {"accessJwt": access, "refreshJwt": refresh, "did": DID, "handle": HANDLE}

    def tokens(self, *, expired: bool = False) -> dict[str, Any]:
        """A token bundle as `autoretto connect bluesky` seals it."""
        session = self.issue_session()
        return {
            "access_token": session["accessJwt"],
            "refresh_token": session["refreshJwt"],
            "expires_at": "2000-01-01T00:00:00Z" if expired else "2999-01-01T00:00:00Z",
            "pds": self.pds_url,
            "did": DID,
        }

    def count(self, method: str) -> int:
        return sum(1 for seen in self.requests if seen.method == method)

    def methods(self) -> list[str]:
        return [seen.method for seen in self.requests]

    @property
    def posts(self) -> list[dict]:
        return list(self.records.values())

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start() -> FakeBluesky:
    fake: FakeBluesky

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self._serve(b"")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            self._serve(self.rfile.read(length))

        def answer(self, status: int, body: dict | None = None) -> None:
            data = json.dumps(body or {}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def error(self, status: int, error: str, message: str = "") -> None:
            self.answer(status, {"error": error, "message": message or error})

        def _serve(self, body: bytes) -> None:
            parts = urlsplit(self.path)
            service, _, method = parts.path.strip("/").partition("/xrpc/")
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            bearer = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            with fake.lock:
                if bearer in fake.access_tokens:
                    auth = "session"
                elif bearer in fake.service_tokens:
                    auth = "service"
                elif bearer in fake.refresh_tokens:
                    auth = "refresh"
                else:
                    auth = "none" if not bearer else "bad"
                parsed: Any = None
                if body and self.headers.get("Content-Type", "").startswith("application/json"):
                    parsed = json.loads(body)
                fake.requests.append(Seen(service, method, auth, query, parsed))
            route = getattr(self, "_" + method.replace(".", "_"), None)
            if route is None:
                self.error(404, "MethodNotImplemented", method)
                return
            route(query, body, parsed, auth, bearer)

        # -- PDS --------------------------------------------------------------------------

        def _session_ok(self, auth: str) -> bool:
            if fake.revoked:
                self.error(401, "InvalidToken", "Token has been revoked")
                return False
            if auth != "session":
                self.error(401, "AuthenticationRequired", "Authentication Required")
                return False
            with fake.lock:
                if fake.expire_next_access:
                    fake.expire_next_access = False
                    self.error(400, "ExpiredToken", "Token has expired")
                    return False
            return True

        def _com_atproto_server_createSession(self, query, body, parsed, auth, bearer) -> None:
            if (parsed or {}).get("identifier") not in (HANDLE, DID) or (parsed or {}).get(
                "password"
            ) != APP_PASSWORD:
                self.error(401, "AuthenticationRequired", "Invalid identifier or password")
                return
            session = fake.issue_session()
            session["emailConfirmed"] = True
            session["didDoc"] = {
                "id": DID,
                "service": [
                    {
                        "id": "#atproto_pds",
                        "type": "AtprotoPersonalDataServer",
                        "serviceEndpoint": fake.pds_url,
                    }
                ],
            }
            self.answer(200, session)

        def _com_atproto_server_refreshSession(self, query, body, parsed, auth, bearer) -> None:
            if fake.revoked:
                self.error(400, "ExpiredToken", "Token has been revoked")
                return
            with fake.lock:
                if auth != "refresh":
                    self.error(400, "ExpiredToken", "Token has expired")
                    return
                fake.refresh_tokens.discard(bearer)  # single use: the old one is gone
            self.answer(200, fake.issue_session())

        def _com_atproto_server_getServiceAuth(self, query, body, parsed, auth, bearer) -> None:
            if not self._session_ok(auth):
                return
            token = fake_jwt("service", 1800)
            with fake.lock:
                fake.service_tokens[token] = f"{query.get('aud')}|{query.get('lxm')}"
            self.answer(200, {"token": token})

        def _com_atproto_repo_getRecord(self, query, body, parsed, auth, bearer) -> None:
            if not self._session_ok(auth):
                return
            record = fake.records.get(query.get("rkey", ""))
            if record is None or query.get("repo") != DID:
                self.error(400, "RecordNotFound", "Could not locate record")
                return
            self.answer(
                200, {"uri": record["uri"], "cid": record["cid"], "value": record["record"]}
            )

        def _com_atproto_repo_createRecord(self, query, body, parsed, auth, bearer) -> None:
            if not self._session_ok(auth):
                return
            problem = lexicon_problem(parsed)
            if problem:
                self.error(400, "InvalidRequest", problem)
                return
            with fake.lock:
                behaviour = fake.script.popleft() if fake.script else "ok"
                if behaviour.startswith("status:"):
                    status = int(behaviour.split(":")[1])
                    self.error(status, "InternalServerError" if status >= 500 else "Refused")
                    return
                rkey = parsed.get("rkey") or secrets.token_hex(6)
                if rkey in fake.records:
                    self.error(400, "InvalidRequest", "Record already exists")
                    return
                uri = f"at://{DID}/{parsed['collection']}/{rkey}"
                fake.records[rkey] = {
                    "uri": uri,
                    "cid": "bafyrei" + secrets.token_hex(8),
                    "record": parsed["record"],
                }
            if behaviour == "drop":
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.answer(200, {"uri": uri, "cid": fake.records[rkey]["cid"]})

        # -- video service -----------------------------------------------------------------

        def _service_ok(self, bearer: str, method: str) -> bool:
            granted = fake.service_tokens.get(bearer, "")
            if not granted.endswith("|" + method):
                self.error(401, "AuthenticationRequired", f"a service token for {method}")
                return False
            return True

        def _app_bsky_video_getUploadLimits(self, query, body, parsed, auth, bearer) -> None:
            if not self._service_ok(bearer, "app.bsky.video.getUploadLimits"):
                return
            answer: dict[str, Any] = {"canUpload": fake.can_upload}
            if fake.can_upload:
                answer.update(remainingDailyVideos=20, remainingDailyBytes=9 * 10**9)
            else:
                answer["message"] = fake.upload_message or "daily video limit reached"
            self.answer(200, answer)

        def _app_bsky_video_uploadVideo(self, query, body, parsed, auth, bearer) -> None:
            if not self._service_ok(bearer, "com.atproto.repo.uploadBlob"):
                return
            if not fake.email_confirmed:
                # bluesky-social/atproto#3097: nested in jobStatus, with every id empty.
                self.answer(
                    fake.unconfirmed_status,
                    {
                        "jobStatus": {
                            "did": "",
                            "error": "unconfirmed_email",
                            "jobId": "",
                            "state": "",
                        }
                    },
                )
                return
            digest = hashlib.sha256(body).hexdigest()
            with fake.lock:
                known = fake.blobs.get(digest)
                if known is not None:
                    # The same bytes again: an HTTP error naming the earlier job, flat; its blob
                    # comes through getJobStatus (bsky-docs docs/tutorials/video.mdx: "check for
                    # the presence of a BlobRef ... regardless"), or in the answer itself.
                    answer = {
                        "did": query.get("did"),
                        "error": "already_exists",
                        "message": "Video already processed",
                        "jobId": "job-" + digest[:8],
                        "state": "JOB_STATE_COMPLETED",
                    }
                    if fake.already_exists_blob:
                        answer["blob"] = known
                    self.answer(409, answer)
                    return
                blob = {
                    "$type": "blob",
                    "ref": {"$link": "bafkrei" + digest[:40]},
                    "mimeType": "video/mp4",
                    "size": len(body),
                }
                job = "job-" + digest[:8]
                fake.jobs[job] = {"blob": blob, "digest": digest, "polls": 0}
            # uploadVideo answers flat (bluesky-social/atproto#3026, #3097), not in jobStatus.
            self.answer(200, {"jobId": job, "did": query.get("did"), "state": "JOB_STATE_CREATED"})

        def _app_bsky_video_getJobStatus(self, query, body, parsed, auth, bearer) -> None:
            if not query.get("jobId"):
                # app.bsky.video.getJobStatus: `jobId` is a required parameter.
                self.error(400, "InvalidRequest", 'Error: Params must have the property "jobId"')
                return
            with fake.lock:
                job = fake.jobs.get(query.get("jobId", ""))
                if job is None:
                    self.error(400, "NotFound", "no such job")
                    return
                job["polls"] += 1
                done = job["polls"] > fake.polls_before_done
                if done:
                    fake.blobs[job["digest"]] = job["blob"]
            status = {"jobId": query["jobId"], "did": DID, "state": "JOB_STATE_RUNNING"}
            if done:
                status.update(state="JOB_STATE_COMPLETED", blob=job["blob"])
            self.answer(200, {"jobStatus": status})

        # -- AppView (through the PDS) -------------------------------------------------------

        def _app_bsky_feed_getPosts(self, query, body, parsed, auth, bearer) -> None:
            if not self._session_ok(auth):
                return
            uris = parse_qs(urlsplit(self.path).query).get("uris", [])
            with fake.lock:
                behaviour = fake.get_posts_script.popleft() if fake.get_posts_script else "ok"
            if behaviour.startswith("status:"):
                _, status, *wait = behaviour.split(":")
                data = json.dumps({"error": "RateLimitExceeded", "message": "slow down"})
                self.send_response(int(status))
                if wait:
                    self.send_header("Retry-After", wait[0])
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())
                return
            if len(uris) > 25:
                self.error(400, "InvalidRequest", "at most 25 uris")
                return
            posts = []
            for uri in uris:
                rkey = uri.rsplit("/", 1)[-1]
                if rkey not in fake.records and rkey not in fake.counters:
                    continue  # deleted: getPosts leaves it out
                counters = fake.counters.get(rkey, {})
                posts.append(
                    {
                        "uri": uri,
                        "cid": "bafyrei" + rkey,
                        "author": {"did": DID, "handle": HANDLE},
                        "record": {},
                        "indexedAt": "2026-11-29T10:00:00.000Z",
                        "likeCount": counters.get("likes", 0),
                        "repostCount": counters.get("reposts", 0),
                        "replyCount": counters.get("replies", 0),
                        "quoteCount": counters.get("quotes", 0),
                    }
                )
            self.answer(200, {"posts": posts})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    fake = FakeBluesky(server)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return fake
