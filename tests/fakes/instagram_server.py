"""A local stand-in for Meta's container APIs (Instagram Reels here; Threads reuses it), on
the shared fake-server base (tests/fakes/base.py).

    with FakeGraph(INSTAGRAM) as fake:
        token = fake.issue_token()
        fake.processing_polls = 2              # IN_PROGRESS twice, then FINISHED
        fake.drop_after("publish")             # publish, then hang up without the answer
        fake.graph_error_next("publish", 9, 2207042)  # Meta's own error code, answered 400
        ... [platforms.instagram] fake.settings() ...
        assert len(fake.publishes) == 1

Like the real platforms, creating a container makes the fake **fetch the video** from the
`video_url` it is given (here: the media host), with a plain GET, and record what it got
(`fetches`). A container whose fetch failed ends in ERROR. It also speaks the sign-in (code
exchange, long-lived exchange, refresh), `me`, the container status, publish, the permalink,
the account's listing and the live publishing limit. Every request is recorded by kind (`me`,
`object`, `create`, `publish`, `listing`, `limit`; sign-in: `code_exchange`, `exchange`,
`refresh`), without its token; the Graph error envelope is Meta's. Each kind takes the shared
vocabulary (`status:N[:S]`: code 2 for 5xx, 4 for 429; `drop`; `hold`; `hangup`; `refuse`:
the container ends in ERROR with an invalid-video detail) and one word of Meta's own,
`graph:CODE[:SUBCODE]` (`graph_error_next`): HTTP 400 with that Graph error, nothing done.
Meta's own state is plain attributes: `processing_polls`, `container_errors` (the details the
next containers end in ERROR with), `quota_usage` / `quota_total` (the live limit).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any

import requests

from tests.fakes.base import Call, FakeServer, free_port
from tests.fakes.graph_comments import GraphCommentsFake
from tests.fakes.graph_versions import THREADS_VERSIONS, served_version, unknown_version_error

APP_ID = "1234567890"
APP_SECRET = "fake-app-secret"


def names(text: str) -> frozenset[str]:
    """The words of `text`: a list of parameter names written as prose lines."""
    return frozenset(text.split())


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
    invalid_video: str  # the container detail when the video is refused
    permalink: str  # format with {shortcode} and {username}
    container_params: frozenset[str]  # the parameters the container edge takes
    #: a carousel item's media_type (None: sent without one), and the most items of a carousel
    item_media_type: str | None = None
    carousel_most: int = 10


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
    # https://developers.facebook.com/docs/instagram-platform/reference/error-codes (2207026:
    # the video format is not supported)
    invalid_video="Error: INVALID_VIDEO_FORMAT (2207026)",
    permalink="https://www.instagram.com/reel/{shortcode}/",
    # the parameters of POST /<IG_ID>/media:
    # https://developers.facebook.com/docs/instagram-platform/instagram-graph-api/reference/ig-user/media
    container_params=names(
        "access_token alt_text audio_name caption children collaborators cover_url "
        "image_url is_carousel_item location_id media_type product_tags share_to_feed "
        "thumb_offset trial_params upload_type user_tags video_url"
    ),
    # image items carry no media_type; a carousel has up to 10 items
    # (https://developers.facebook.com/docs/instagram-platform/content-publishing/)
    item_media_type=None,
    carousel_most=10,
)


def unknown_param_error(name: str) -> dict[str, Any]:
    """Graph's refusal of a parameter the edge does not take: code 100, "Invalid parameter"
    (https://developers.facebook.com/docs/graph-api/guides/error-handling; the message naming
    the parameter is the fake's, Meta's exact words for it are UNCONFIRMED)."""
    return _graph_error(
        100,
        f"(#100) Invalid parameter: {name} is not a parameter of this edge",
        None,
        False,
        "OAuthException",
    )


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
    kind: str = "video"  # video | item (a carousel's card) | carousel
    children: tuple[str, ...] = ()


class FakeGraph(GraphCommentsFake, FakeServer):
    publish_operation = "publish"

    def __init__(
        self,
        flavour: Flavour,
        *,
        user_id: str = "17841400000000001",
        username: str = "rainlofi",
        account_type: str = "BUSINESS",
    ) -> None:
        super().__init__()
        self.flavour = flavour
        self.title = flavour.name.title()
        self.user_id = user_id
        self.username = username
        self.account_type = account_type
        self.processing_polls = 0  # IN_PROGRESS answers each new container gives before FINISHED
        self.container_errors: list[str] = []  # the next containers end in ERROR with these
        self.quota_usage = 0
        self.quota_total = 50
        self.containers: dict[str, Container] = {}
        self.posts: list[dict[str, Any]] = []  # newest first
        self.fetches: list[dict[str, Any]] = []  # what the fake fetched from video URLs
        self.tokens: set[str] = set()
        self.codes: set[str] = set()
        self.media_host_port = free_port()

    # -- what a test sets up and reads --------------------------------------------------------

    def settings(self) -> str:
        """The `[platforms.NAME]` lines that point Autoretto here, with no waiting, and a media
        host of its own on 127.0.0.1 (the fake fetches the video from it)."""
        name, port = self.flavour.name, self.media_host_port
        return (
            f'api_base = "{self.url}"\n'
            f'token_uri = "{self.url}/oauth/access_token"\n'
            f'app_id = "{APP_ID}"\n'
            "wait_first = 0\nwait_between = 0\n"
            f"\n[platforms.{name}.media_host]\n"
            'kind = "self"\n'
            f'bind = "127.0.0.1:{port}"\n'
            f'public_url = "http://127.0.0.1:{port}"\n'
        )

    def account(self) -> dict[str, Any]:
        """A professional account signed in today: its token lasts 60 days."""
        from datetime import timedelta

        from autoretto.clock import iso, now

        token = self.issue_token()
        expires_at = iso(now() + timedelta(days=60))
        return {
            "account_id": self.user_id,
            "name": self.username,
            "tokens": {"access_token": token, "refresh_token": token, "expires_at": expires_at},
            "meta": {"username": self.username, "token_expires_at": expires_at},
        }

    def issue_token(self) -> str:
        token = f"{self.flavour.name[:2].upper()}fake-" + secrets.token_urlsafe(16)
        with self.lock:
            self.tokens.add(token)
        return token

    def authorize(self) -> str:
        """What the consent screen does when the person presses Allow: a code."""
        code = "fake-code-" + secrets.token_urlsafe(8)
        with self.lock:
            self.codes.add(code)
        return code

    def add_post(self, text: str) -> str:
        """A post already on the account (made elsewhere)."""
        with self.lock:
            return self._new_post(text)

    @property
    def publishes(self) -> list[dict[str, Any]]:
        """Posts made through the publish endpoint."""
        with self.lock:
            return [post for post in self.posts if post.get("via_publish")]

    def visible_copies(self) -> int:
        return len(self.publishes)

    # -- internals ------------------------------------------------------------------------------

    def _new_post(self, text: str, *, via_publish: bool = False, cards: int = 0) -> str:
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
                "cards": cards,
            },
        )
        return media_id

    def _record(self, kind: str, **facts: Any) -> None:
        self.record(kind, **facts)

    def route(self, call: Call) -> None:
        params = {**call.query, **(call.form if call.method == "POST" else {})}
        found = re.match(r"^/(v\d+\.\d+)/", call.path)
        if found:
            schedule = THREADS_VERSIONS if self.flavour.name == "threads" else None
            if served_version(found.group(1), schedule) is None:
                return call.send(400, unknown_version_error(found.group(1)))
        path = re.sub(r"^/v\d+\.\d+/", "/", call.path)
        self._route(call, call.method, path, params)

    @staticmethod
    def _error(
        call: Call,
        status: int,
        code: int,
        message: str,
        *,
        subcode: int | None = None,
        transient: bool = False,
        kind: str = "OAuthException",
    ) -> None:
        call.send(status, _graph_error(code, message, subcode, transient, kind))

    def failure(self, call: Call, status: int) -> Any:
        if status >= 500:
            return _graph_error(2, "Service temporarily unavailable", None, True, "OAuthException")
        if status == 429:
            return _graph_error(
                4, "Application request limit reached", None, True, "OAuthException"
            )
        return _graph_error(100, "scripted trouble", None, False, "OAuthException")

    def refusal(self, call: Call) -> None:
        """The container the call makes (or the next one) ends in ERROR: Meta refuses the
        video itself."""
        with self.lock:
            self.container_errors.insert(0, self.flavour.invalid_video)
        call.behaviour = "ok"
        self._create(call, call.params)

    def _authorized(self, call: Call) -> bool:
        token = call.bearer
        with self.lock:
            good = token in self.tokens and not self.revoked
        if not good:
            self._error(call, 400, 190, "Error validating access token", subcode=460)
        return good

    def _route(self, call: Call, method: str, path: str, params: dict[str, str]) -> None:
        flavour = self.flavour
        call.params = params
        if self.comments_route(call, method, path, params):  # issue 28 (graph_comments.py)
            return None
        if path == "/oauth/access_token" and method == "POST":
            return self._exchange_code(call, params)
        if path == "/access_token" and method == "GET":
            return self._long_lived(call, params)
        if path == "/refresh_access_token" and method == "GET":
            return self._refresh(call, params)
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
        call.begin(kind, path=path, params={k: v for k, v in params.items() if k != "video_url"})
        if kind == "unknown":
            return self._error(call, 404, 100, f"Unknown path components: {path}")
        if call.refused() or self._graph_error(call) or not self._authorized(call):
            return None
        if kind == "me":
            return self._me(call)
        if segments[0] != self.user_id and kind != "object":
            return self._error(call, 400, 100, "Unsupported request: wrong user id", subcode=33)
        return {
            "object": lambda: self._object(call, segments[0], params),
            "create": lambda: self._create(call, params),
            "publish": lambda: self._publish(call, params),
            "listing": lambda: self._listing(call, params),
            "limit": lambda: self._limit(call),
        }[kind]()

    def graph_error_next(self, operation: str, code: int, subcode: int | None = None) -> None:
        """The next call to `operation` answers HTTP 400 with Meta's error `code` (and
        `subcode`), doing nothing."""
        self.script[operation].append(f"graph:{code}" + (f":{subcode}" if subcode else ""))

    def _graph_error(self, call: Call) -> bool:
        """Answer a scripted `graph:CODE[:SUBCODE]`; True when the call is answered."""
        if not call.behaviour.startswith("graph:"):
            return False
        _, code, *subcode = call.behaviour.split(":")
        said = f"scripted Graph error {code}"
        self._error(call, 400, int(code), said, subcode=int(subcode[0]) if subcode else None)
        return True

    # -- sign-in ---------------------------------------------------------------------------------

    def _exchange_code(self, call: Call, form: dict[str, str]) -> None:
        call.begin("code_exchange", sign_in=True, client_id=form.get("client_id"))
        with self.lock:
            known = form.get("code") in self.codes
            self.codes.discard(form.get("code", ""))
        if (
            not known
            or form.get("client_secret") != APP_SECRET
            or form.get("grant_type") != "authorization_code"
        ):
            return self._error(call, 400, 100, "Invalid verification code format")
        call.send(200, {"access_token": self.issue_token(), "user_id": self.user_id})

    def _long_lived(self, call: Call, params: dict[str, str]) -> None:
        call.begin("exchange", sign_in=True, grant_type=params.get("grant_type"))
        with self.lock:
            known = params.get("access_token") in self.tokens
        if params.get("grant_type") != self.flavour.exchange_grant or not known:
            return self._error(call, 400, 190, "Invalid OAuth access token")
        if params.get("client_secret") != APP_SECRET:
            return self._error(call, 400, 101, "Error validating client secret")
        call.send(
            200,
            {"access_token": self.issue_token(), "token_type": "bearer", "expires_in": 5183944},
        )

    def _refresh(self, call: Call, params: dict[str, str]) -> None:
        call.begin("refresh", sign_in=True, grant_type=params.get("grant_type"))
        if call.refused():
            return None
        with self.lock:
            known = params.get("access_token") in self.tokens
        if self.revoked or not known:
            return self._error(call, 400, 190, "Error validating access token", subcode=463)
        if params.get("grant_type") != self.flavour.refresh_grant:
            return self._error(call, 400, 100, "Unsupported grant type")
        call.answer(
            200,
            {"access_token": self.issue_token(), "token_type": "bearer", "expires_in": 5184000},
        )

    def _me(self, call: Call) -> None:
        if self.flavour.name == "instagram":
            return call.answer(
                200,
                {
                    "id": "app-scoped-" + self.user_id[-4:],
                    "user_id": self.user_id,
                    "username": self.username,
                    "account_type": self.account_type,
                },
            )
        return call.answer(200, {"id": self.user_id, "username": self.username})

    # -- publishing ------------------------------------------------------------------------------

    def _fetch(self, url: str) -> tuple[bool, int]:
        """What Meta does with `video_url`: fetch it, whole."""
        try:
            answer = requests.get(url, timeout=10)
            got = (answer.status_code, len(answer.content))
        except requests.RequestException as error:
            with self.lock:
                self.fetches.append({"status": 0, "bytes": 0, "error": type(error).__name__})
            return False, 0
        with self.lock:
            self.fetches.append({"status": got[0], "bytes": got[1]})
        return got[0] == 200 and got[1] > 0, got[1]

    def _create(self, call: Call, params: dict[str, str]) -> None:
        flavour = self.flavour
        unknown = sorted(set(params) - flavour.container_params)
        if unknown:
            # Graph refuses it: a renamed `caption` (`message`) is not silently dropped.
            return call.send(400, unknown_param_error(unknown[0]))
        if params.get("is_carousel_item") == "true":
            return self._create_item(call, params)
        if params.get("media_type") == "CAROUSEL":
            return self._create_carousel(call, params)
        if params.get("media_type") != flavour.media_type or not params.get("video_url"):
            return self._error(call, 400, 100, "The parameter video_url is required")
        ok, _ = self._fetch(params["video_url"])
        with self.lock:
            container = Container(
                id="179" + "".join(secrets.choice("0123456789") for _ in range(14)),
                video_url=params["video_url"],
                text=params.get(flavour.text_param, ""),
                fields={k: v for k, v in params.items() if k != "video_url"},
                polls_left=self.processing_polls,
            )
            if not ok:
                container.state, container.detail = "ERROR", flavour.download_failed
            elif self.container_errors:
                container.state = "ERROR"
                container.detail = self.container_errors.pop(0)
            self.containers[container.id] = container
        call.answer(200, {"id": container.id})

    def _create_item(self, call: Call, params: dict[str, str]) -> None:
        """A carousel's card: an image fetched from `image_url`, no text of its own."""
        flavour = self.flavour
        if params.get("media_type") != flavour.item_media_type and not (
            flavour.item_media_type is None and params.get("media_type") == "IMAGE"
        ):
            wanted = flavour.item_media_type or "none"
            return self._error(call, 400, 100, f"Invalid parameter: media_type (wanted {wanted})")
        if not params.get("image_url"):
            return self._error(call, 400, 100, "The parameter image_url is required")
        if flavour.text_param in params:
            return self._error(call, 400, 100, "A carousel item takes no text of its own")
        ok, size = self._fetch(params["image_url"])
        with self.lock:
            container = Container(
                id="179" + "".join(secrets.choice("0123456789") for _ in range(14)),
                video_url=params["image_url"],
                text="",
                fields={k: v for k, v in params.items() if k != "image_url"},
                kind="item",
            )
            if not ok:
                container.state, container.detail = "ERROR", flavour.download_failed
            elif size > 8 * 1024 * 1024:
                container.state, container.detail = "ERROR", "the image is over 8 MB"
            self.containers[container.id] = container
        call.answer(200, {"id": container.id})

    def _create_carousel(self, call: Call, params: dict[str, str]) -> None:
        """The carousel of item containers named by `children`, with the post's text."""
        flavour = self.flavour
        children = tuple(c for c in params.get("children", "").split(",") if c)
        if not 2 <= len(children) <= flavour.carousel_most:
            return self._error(
                call, 400, 100, f"Invalid parameter: children (2 to {flavour.carousel_most})"
            )
        with self.lock:
            items = [self.containers.get(child) for child in children]
            if any(i is None or i.kind != "item" or i.state != "FINISHED" for i in items):
                return self._error(call, 400, 100, "Invalid parameter: children", subcode=33)
            container = Container(
                id="179" + "".join(secrets.choice("0123456789") for _ in range(14)),
                video_url="",
                text=params.get(flavour.text_param, ""),
                fields={k: v for k, v in params.items() if k != "children"},
                kind="carousel",
                children=children,
            )
            self.containers[container.id] = container
        call.answer(200, {"id": container.id})

    @property
    def carousels(self) -> list[dict[str, Any]]:
        """Carousels published through the publish endpoint."""
        with self.lock:
            return [post for post in self.posts if post.get("via_publish") and post.get("cards")]

    def _object(self, call: Call, object_id: str, params: dict[str, str]) -> None:
        flavour = self.flavour
        with self.lock:
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
            return call.answer(200, answer)
        if post is not None:
            return call.answer(200, {"id": post["id"], "permalink": post["permalink"]})
        return self._error(
            call,
            400,
            100,
            f"Unsupported get request. Object with ID '{object_id}' does not exist",
            subcode=33,
            kind="GraphMethodException",
        )

    def _publish(self, call: Call, params: dict[str, str]) -> None:
        with self.lock:
            container = self.containers.get(params.get("creation_id", ""))
            if container is None:
                state = None
            else:
                state = container.state
                if state == "FINISHED" and container.kind == "item":
                    state = "ITEM"  # a card is published only inside its carousel
                elif state == "FINISHED":
                    container.state = "PUBLISHED"
                    container.media_id = self._new_post(
                        container.text, via_publish=True, cards=len(container.children)
                    )
        if container is None:
            return self._error(call, 400, 100, "Invalid parameter: creation_id", subcode=33)
        if state != "FINISHED":
            return self._error(
                call, 400, 9007, "Media ID is not available", subcode=2207027, kind="OAuthException"
            )
        call.answer(200, {"id": container.media_id})

    def _listing(self, call: Call, params: dict[str, str]) -> None:
        limit = int(params.get("limit") or 25)
        with self.lock:
            shown = self.posts[:limit]
        fields = (params.get("fields") or "id").split(",")
        call.answer(
            200, {"data": [{k: p[k] for k in fields if k in p} for p in shown], "paging": {}}
        )

    def _limit(self, call: Call) -> None:
        call.answer(
            200,
            {
                "data": [
                    {
                        "quota_usage": self.quota_usage,
                        "config": {"quota_total": self.quota_total, "quota_duration": 86400},
                    }
                ]
            },
        )


def instagram_fake() -> FakeGraph:
    return FakeGraph(INSTAGRAM)


def _graph_error(
    code: int, message: str, subcode: int | None, transient: bool, kind: str
) -> dict[str, Any]:
    """Meta's error envelope (https://developers.facebook.com/docs/graph-api/guides/error-handling)."""
    error: dict[str, Any] = {
        "message": message,
        "type": kind,
        "code": code,
        "is_transient": transient,
        "fbtrace_id": "Afake" + secrets.token_hex(4),
    }
    if subcode is not None:
        error["error_subcode"] = subcode
    return {"error": error}
