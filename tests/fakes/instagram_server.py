"""A local stand-in for Meta's container APIs (Instagram Reels here; Threads reuses it).

    with FakeGraph(INSTAGRAM) as fake:
        token = fake.issue_token()
        fake.faults.processing_polls = 2       # IN_PROGRESS twice, then FINISHED
        ... settings api_base=fake.url, token_uri=fake.url + "/oauth/access_token" ...
        assert len(fake.publishes) == 1

Like the real platforms, creating a container makes the fake **fetch the video** from the
`video_url` it is given (here: the media host), with a plain GET, and record what it got
(`fetches`). A container whose fetch failed ends in ERROR. It also speaks the sign-in (code
exchange, long-lived exchange, refresh), `me`, the container status, publish, the permalink,
the account's listing and the live publishing limit. Every request is recorded by kind,
without its token; the Graph error envelope is Meta's.
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests

from tests.fakes.graph_versions import THREADS_VERSIONS, served_version, unknown_version_error

APP_ID = "1234567890"
APP_SECRET = "fake-app-secret"


@dataclass(frozen=True)
class Flavour:
    name: str
    container_edge: str
    publish_edge: str
    limit_edge: str
    listing_edge: str
    text_param: str
    state_field: str
    detail_field: str
    media_type: str
    refresh_grant: str
    exchange_grant: str
    download_failed: str  # the container detail after a failed fetch
    permalink: str  # format with {shortcode} and {username}


INSTAGRAM = Flavour(
    name="instagram",
    container_edge="media",
    publish_edge="media_publish",
    limit_edge="content_publishing_limit",
    listing_edge="media",
    text_param="caption",
    state_field="status_code",
    detail_field="status",
    media_type="REELS",
    refresh_grant="ig_refresh_token",
    exchange_grant="ig_exchange_token",
    download_failed="Error: the media could not be fetched from the URI (2207003)",
    permalink="https://www.instagram.com/reel/{shortcode}/",
)


@dataclass
class Faults:
    """Switches a test flips; counters count down as the fault fires."""

    processing_polls: int = 0  # IN_PROGRESS answers each new container gives before FINISHED
    container_errors: list[str] = field(default_factory=list)  # next containers end in ERROR
    drop_publish: int = 0  # the publish takes effect, then the connection is cut
    drop_published_status: int = 0  # status requests of a published container are cut
    refresh_errors: int = 0  # the next refreshes answer 500
    server_errors: int = 0  # the next API requests answer 500, is_transient
    revoked: bool = False  # every token is refused (190)
    refresh_refused: bool = False  # the refresh endpoint refuses (190)
    hide_published: bool = False  # new posts stay out of the account's listing
    quota_usage: int = 0
    quota_total: int = 50
    publish_error: dict[str, Any] | None = None  # answered (400) to the next publish
    create_errors: list[dict[str, Any]] = field(default_factory=list)  # (400) to next creates


@dataclass
class Container:
    id: str
    video_url: str
    text: str
    fields: dict[str, str]
    state: str = "IN_PROGRESS"
    detail: str = ""
    polls_left: int = 0
    media_id: str | None = None


class FakeGraph:
    def __init__(
        self,
        flavour: Flavour,
        *,
        user_id: str = "17841400000000001",
        username: str = "rainlofi",
        account_type: str = "BUSINESS",
    ) -> None:
        self.flavour = flavour
        self.user_id = user_id
        self.username = username
        self.account_type = account_type
        self.faults = Faults()
        self.requests: list[dict[str, Any]] = []
        self.containers: dict[str, Container] = {}
        self.posts: list[dict[str, Any]] = []  # newest first
        self.hidden: set[str] = set()
        self.fetches: list[dict[str, Any]] = []  # what the fake fetched from video URLs
        self.tokens: set[str] = set()
        self.codes: set[str] = set()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeGraph:
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- what a test sets up and reads --------------------------------------------------------

    def issue_token(self) -> str:
        token = f"{self.flavour.name[:2].upper()}fake-" + secrets.token_urlsafe(16)
        with self._lock:
            self.tokens.add(token)
        return token

    def authorize(self) -> str:
        """What the consent screen does when the person presses Allow: a code."""
        code = "fake-code-" + secrets.token_urlsafe(8)
        with self._lock:
            self.codes.add(code)
        return code

    def add_post(self, text: str) -> str:
        """A post already on the account (made elsewhere)."""
        with self._lock:
            return self._new_post(text)

    @property
    def publishes(self) -> list[dict[str, Any]]:
        """Posts made through the publish endpoint."""
        with self._lock:
            return [post for post in self.posts if post.get("via_publish")]

    def count(self, kind: str) -> int:
        with self._lock:
            return sum(1 for request in self.requests if request["kind"] == kind)

    def kinds(self) -> list[str]:
        with self._lock:
            return [request["kind"] for request in self.requests]

    # -- internals ------------------------------------------------------------------------------

    def _new_post(self, text: str, *, via_publish: bool = False) -> str:
        media_id = "18" + "".join(secrets.choice("0123456789") for _ in range(15))
        shortcode = secrets.token_urlsafe(8)
        self.posts.insert(
            0,
            {
                "id": media_id,
                self.flavour.text_param: text,
                "permalink": self.flavour.permalink.format(
                    shortcode=shortcode, username=self.username
                ),
                "timestamp": "2026-11-29T10:05:00+0000",
                "via_publish": via_publish,
            },
        )
        if self.faults.hide_published:
            self.hidden.add(media_id)
        return media_id

    def _record(self, kind: str, **facts: Any) -> None:
        with self._lock:
            self.requests.append({"kind": kind, **facts})

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

            def _serve(self, method: str) -> None:
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
                found = re.match(r"^/(v\d+\.\d+)/", parts.path)
                if found:
                    schedule = THREADS_VERSIONS if fake.flavour.name == "threads" else None
                    if served_version(found.group(1), schedule) is None:
                        return self.reply(400, unknown_version_error(found.group(1)))
                path = re.sub(r"^/v\d+\.\d+/", "/", parts.path)
                fake._route(self, method, path, {**query, **form})

            def reply(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def hang_up(self) -> None:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.request.shutdown(socket.SHUT_RDWR)

        return Handler

    @staticmethod
    def _error(
        handler: Any,
        status: int,
        code: int,
        message: str,
        *,
        subcode: int | None = None,
        transient: bool = False,
        kind: str = "OAuthException",
    ) -> None:
        error: dict[str, Any] = {
            "message": message,
            "type": kind,
            "code": code,
            "is_transient": transient,
            "fbtrace_id": "Afake" + secrets.token_hex(4),
        }
        if subcode is not None:
            error["error_subcode"] = subcode
        handler.reply(status, {"error": error})

    def _authorized(self, handler: Any) -> bool:
        token = handler.headers.get("Authorization", "").removeprefix("Bearer ")
        with self._lock:
            good = token in self.tokens and not self.faults.revoked
        if not good:
            self._error(handler, 400, 190, "Error validating access token", subcode=460)
        return good

    def _server_error(self, handler: Any) -> bool:
        with self._lock:
            if self.faults.server_errors <= 0:
                return False
            self.faults.server_errors -= 1
        self._error(handler, 500, 2, "Service temporarily unavailable", transient=True)
        return True

    def _route(self, handler: Any, method: str, path: str, params: dict[str, str]) -> None:
        flavour = self.flavour
        if path == "/oauth/access_token" and method == "POST":
            return self._exchange_code(handler, params)
        if path == "/access_token" and method == "GET":
            return self._long_lived(handler, params)
        if path == "/refresh_access_token" and method == "GET":
            return self._refresh(handler, params)
        segments = [s for s in path.split("/") if s]
        kind = {
            (1, "GET"): "me" if segments[:1] == ["me"] else "object",
            (2, "POST"): {flavour.container_edge: "create", flavour.publish_edge: "publish"}.get(
                segments[-1], "unknown"
            )
            if len(segments) == 2
            else "unknown",
            (2, "GET"): {flavour.listing_edge: "listing", flavour.limit_edge: "limit"}.get(
                segments[-1], "unknown"
            )
            if len(segments) == 2
            else "unknown",
        }.get((len(segments), method), "unknown")
        self._record(kind, path=path, params={k: v for k, v in params.items() if k != "video_url"})
        if kind == "unknown":
            return self._error(handler, 404, 100, f"Unknown path components: {path}")
        if kind == "object" and self._drop_published_status(segments[0]):
            return handler.hang_up()
        if self._server_error(handler) or not self._authorized(handler):
            return None
        if kind == "me":
            return self._me(handler)
        if segments[0] != self.user_id and kind != "object":
            return self._error(handler, 400, 100, "Unsupported request: wrong user id", subcode=33)
        return {
            "object": lambda: self._object(handler, segments[0], params),
            "create": lambda: self._create(handler, params),
            "publish": lambda: self._publish(handler, params),
            "listing": lambda: self._listing(handler, params),
            "limit": lambda: self._limit(handler),
        }[kind]()

    def _drop_published_status(self, object_id: str) -> bool:
        with self._lock:
            container = self.containers.get(object_id)
            if (
                container is not None
                and container.state == "PUBLISHED"
                and self.faults.drop_published_status > 0
            ):
                self.faults.drop_published_status -= 1
                return True
        return False

    # -- sign-in ---------------------------------------------------------------------------------

    def _exchange_code(self, handler: Any, form: dict[str, str]) -> None:
        self._record("code_exchange", client_id=form.get("client_id"))
        with self._lock:
            known = form.get("code") in self.codes
            self.codes.discard(form.get("code", ""))
        if (
            not known
            or form.get("client_secret") != APP_SECRET
            or form.get("grant_type") != "authorization_code"
        ):
            return self._error(handler, 400, 100, "Invalid verification code format")
        handler.reply(200, {"access_token": self.issue_token(), "user_id": self.user_id})

    def _long_lived(self, handler: Any, params: dict[str, str]) -> None:
        self._record("exchange", grant_type=params.get("grant_type"))
        with self._lock:
            known = params.get("access_token") in self.tokens
        if params.get("grant_type") != self.flavour.exchange_grant or not known:
            return self._error(handler, 400, 190, "Invalid OAuth access token")
        if params.get("client_secret") != APP_SECRET:
            return self._error(handler, 400, 101, "Error validating client secret")
        handler.reply(
            200,
            {"access_token": self.issue_token(), "token_type": "bearer", "expires_in": 5183944},
        )

    def _refresh(self, handler: Any, params: dict[str, str]) -> None:
        self._record("refresh", grant_type=params.get("grant_type"))
        with self._lock:
            known = params.get("access_token") in self.tokens
            failing = self.faults.refresh_errors > 0
            if failing:
                self.faults.refresh_errors -= 1
        if failing:
            return self._error(handler, 500, 2, "Service temporarily unavailable", transient=True)
        if self.faults.refresh_refused or self.faults.revoked or not known:
            return self._error(handler, 400, 190, "Error validating access token", subcode=463)
        if params.get("grant_type") != self.flavour.refresh_grant:
            return self._error(handler, 400, 100, "Unsupported grant type")
        handler.reply(
            200,
            {"access_token": self.issue_token(), "token_type": "bearer", "expires_in": 5184000},
        )

    def _me(self, handler: Any) -> None:
        if self.flavour.name == "instagram":
            return handler.reply(
                200,
                {
                    "id": "app-scoped-" + self.user_id[-4:],
                    "user_id": self.user_id,
                    "username": self.username,
                    "account_type": self.account_type,
                },
            )
        return handler.reply(200, {"id": self.user_id, "username": self.username})

    # -- publishing ------------------------------------------------------------------------------

    def _fetch(self, url: str) -> tuple[bool, int]:
        """What Meta does with `video_url`: fetch it, whole."""
        try:
            answer = requests.get(url, timeout=10)
            got = (answer.status_code, len(answer.content))
        except requests.RequestException as error:
            with self._lock:
                self.fetches.append({"status": 0, "bytes": 0, "error": type(error).__name__})
            return False, 0
        with self._lock:
            self.fetches.append({"status": got[0], "bytes": got[1]})
        return got[0] == 200 and got[1] > 0, got[1]

    def _create(self, handler: Any, params: dict[str, str]) -> None:
        flavour = self.flavour
        if params.get("media_type") != flavour.media_type or not params.get("video_url"):
            return self._error(handler, 400, 100, "The parameter video_url is required")
        with self._lock:
            error = self.faults.create_errors.pop(0) if self.faults.create_errors else None
        if error is not None:
            return handler.reply(400, {"error": error})
        ok, _ = self._fetch(params["video_url"])
        with self._lock:
            container = Container(
                id="179" + "".join(secrets.choice("0123456789") for _ in range(14)),
                video_url=params["video_url"],
                text=params.get(flavour.text_param, ""),
                fields={k: v for k, v in params.items() if k != "video_url"},
                polls_left=self.faults.processing_polls,
            )
            if not ok:
                container.state, container.detail = "ERROR", flavour.download_failed
            elif self.faults.container_errors:
                container.state = "ERROR"
                container.detail = self.faults.container_errors.pop(0)
            self.containers[container.id] = container
        handler.reply(200, {"id": container.id})

    def _object(self, handler: Any, object_id: str, params: dict[str, str]) -> None:
        flavour = self.flavour
        with self._lock:
            container = self.containers.get(object_id)
            post = next((p for p in self.posts if p["id"] == object_id), None)
            if container is not None:
                if container.state == "IN_PROGRESS":
                    if container.polls_left > 0:
                        container.polls_left -= 1
                    else:
                        container.state = "FINISHED"
                answer = {flavour.state_field: container.state, "id": container.id}
                if container.detail:
                    answer[flavour.detail_field] = container.detail
        if container is not None:
            return handler.reply(200, answer)
        if post is not None:
            return handler.reply(200, {"id": post["id"], "permalink": post["permalink"]})
        return self._error(
            handler,
            400,
            100,
            f"Unsupported get request. Object with ID '{object_id}' does not exist",
            subcode=33,
            kind="GraphMethodException",
        )

    def _publish(self, handler: Any, params: dict[str, str]) -> None:
        with self._lock:
            if self.faults.publish_error is not None:
                error, self.faults.publish_error = self.faults.publish_error, None
            else:
                error = None
        if error is not None:
            return handler.reply(400, {"error": error})
        with self._lock:
            container = self.containers.get(params.get("creation_id", ""))
            if container is None:
                state = None
            else:
                state = container.state
                if state == "FINISHED":
                    container.state = "PUBLISHED"
                    container.media_id = self._new_post(container.text, via_publish=True)
                    drop = self.faults.drop_publish > 0
                    if drop:
                        self.faults.drop_publish -= 1
        if container is None:
            return self._error(handler, 400, 100, "Invalid parameter: creation_id", subcode=33)
        if state != "FINISHED":
            return self._error(
                handler,
                400,
                9007,
                "Media ID is not available",
                subcode=2207027,
                kind="OAuthException",
            )
        if drop:
            return handler.hang_up()
        handler.reply(200, {"id": container.media_id})

    def _listing(self, handler: Any, params: dict[str, str]) -> None:
        limit = int(params.get("limit") or 25)
        with self._lock:
            shown = [p for p in self.posts if p["id"] not in self.hidden][:limit]
        fields = (params.get("fields") or "id").split(",")
        handler.reply(
            200, {"data": [{k: p[k] for k in fields if k in p} for p in shown], "paging": {}}
        )

    def _limit(self, handler: Any) -> None:
        handler.reply(
            200,
            {
                "data": [
                    {
                        "quota_usage": self.faults.quota_usage,
                        "config": {"quota_total": self.faults.quota_total, "quota_duration": 86400},
                    }
                ]
            },
        )
