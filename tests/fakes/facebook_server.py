"""A local stand-in for Facebook: Graph API reels, rupload, and Facebook Login, on 127.0.0.1
(tests/fakes/base.py).

    with FakeFacebook() as fake:
        fake.script["finish"].append("drop")     # publish, then hang up without answering
        fake.processing_polls = 3                # three status polls before it is published
        ... [platforms.facebook] fake.settings() ...
        assert fake.count("start") == 1

It speaks PLATFORMS.md §2: `POST /{v}/{page}/video_reels` (start → video_id; finish publishes),
`POST /video-upload/{v}/{video_id}` with `offset` / `file_size` (resumable), `GET /{v}/{video}`
with `status` (video_status and the three phases, `bytes_transfered`), `GET /{v}/{page}/
video_reels` (the Page's reels), and the login side: the dialog (a person pressing Allow),
`/{v}/oauth/access_token` (code, then `fb_exchange_token`) and `/{v}/me/accounts`.

Each request of a kind (`start`, `upload`, `finish`, `status`, `list`, `token`) takes the next
scripted behaviour of that kind (default: work): the shared vocabulary (`status:N[:S]`, a Graph
error, code 2 for 5xx and 4 for 429; `drop`; `hold`; `hangup`; `refuse`, the Video API's
1363023 "file too large"), and `code:C` (a Graph error with that code, nothing done), `half`
(upload: keep half the bytes, then hang up), `offset` (upload: OffsetInvalidError). Every
request is recorded without its secrets.

Comments (issue 28): `add_comment(object_id, text, ...)` puts someone's comment under a reel
(or, with a comment's id, a reply under it), `delete_comment(id)` deletes one;
`GET /{v}/{object}/comments` (`comments`: `filter` toplevel|stream, `order` chronological|
reverse_chronological, `fields`, `limit`, `after` cursors; an unknown parameter, field or value
is refused with code 100 as Graph does) and `POST /{v}/{comment}/comments` (`reply`, a comment
of the Page's) serve them. `granted` holds the Page token's permissions: without
pages_read_engagement a read is refused (code 10), without pages_manage_engagement a reply
(code 200). Besides the shared words, `stored:N` on `reply` makes the reply, then answers N
(`store_then_fail(500)`).
"""

from __future__ import annotations

import base64
import datetime as dt
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from tests.fakes.base import Call, FakeServer
from tests.fakes.graph_versions import served_version, unknown_version_error

VERSION = "v23.0"
PAGE_ID = "1010101010"
OTHER_PAGE_ID = "2020202020"
APP_ID = "424242424242"
APP_SECRET = "fake-app-secret-do-not-print"
PAGE_TOKEN = "EAAPage-fake-page-token"
OTHER_PAGE_TOKEN = "EAAPage-fake-other-token"
SECRET_PARAMS = ("client_secret", "access_token", "fb_exchange_token", "code")


@dataclass
class Reel:
    video_id: str
    received: bytearray = field(default_factory=bytearray)
    size: int | None = None
    finished: bool = False
    title: str = ""
    description: str = ""
    polls_left: int = 0
    failure: str | None = None
    published_at: int = 0


class FakeFacebook(FakeServer):
    title = "Facebook"
    publish_operation = "finish"
    poll_interval = 0.05

    def __init__(self) -> None:
        super().__init__()
        self.reels: dict[str, Reel] = {}
        self.processing_polls = 0  # status polls that show "processing" after a finish
        self.processing_error: str | None = None  # the next finished video fails processing
        self.versions_served: list[str] = []  # the Graph version that answered each call
        self.unknown_version_shape = "code12"  # or "path": how an unknown version is refused
        self.page_token = PAGE_TOKEN
        self.pages = [
            {"id": PAGE_ID, "name": "Lofi Nights", "access_token": PAGE_TOKEN},
            {"id": OTHER_PAGE_ID, "name": "Other Page", "access_token": OTHER_PAGE_TOKEN},
        ]
        self.codes: dict[str, str] = {}  # code -> redirect_uri
        self.user_tokens: set[str] = set()
        self._clock = 1_795_942_800  # 2026-11-29T09:00:00Z, an hour before the tests' "now"
        self.photos: dict[str, dict[str, Any]] = {}  # photo id -> {page, published, bytes}
        self.feed: list[dict[str, Any]] = []  # the Page's multi-photo posts, oldest first
        # -- comments and replies (issue 28)
        self.comments: dict[str, dict[str, Any]] = {}  # id -> comment, in the order made
        self.deleted_comments: set[str] = set()
        self.granted = {
            "pages_show_list",
            "pages_read_engagement",
            "pages_manage_posts",
            "pages_read_user_content",
            "pages_manage_engagement",
        }

    # -- helpers for tests ---------------------------------------------------------------------

    def settings(self) -> str:
        """The `[platforms.facebook]` lines that point Autoretto here, with no waiting."""
        return (
            f'graph_base = "{self.url}"\nrupload_base = "{self.url}"\n'
            f'auth_uri = "{self.url}/dialog/oauth"\ngraph_version = "{VERSION}"\n'
            'poll_wait = "0s"\n'
        )

    def account(self) -> dict[str, Any]:
        return {
            "account_id": PAGE_ID,
            "name": "Lofi Nights",
            "tokens": {"access_token": self.page_token, "expires_at": None},
            "meta": {"page_id": PAGE_ID},
        }

    @property
    def published(self) -> list[Reel]:
        return [r for r in self.reels.values() if r.finished and r.failure is None]

    def visible_copies(self) -> int:
        return len(self.published)

    def add_reel(self, description: str) -> str:
        """A reel already live on the Page (posted by someone or something else)."""
        with self.lock:
            reel = self._new_reel()
            reel.finished, reel.description, reel.size = True, description, 0
        return reel.video_id

    def _new_reel(self) -> Reel:
        video_id = str(9_000_000 + len(self.reels) + 1)
        self._clock += 60
        reel = Reel(video_id, published_at=self._clock)
        self.reels[video_id] = reel
        return reel

    # -- routing -------------------------------------------------------------------------------

    def route(self, call: Call) -> None:
        path = call.path.strip("/").split("/")
        if call.method == "POST" and path[:1] == ["video-upload"]:
            if len(path) < 3 or served_version(path[1]) is None:
                return call.send(400, unknown_version_error(path[1] if len(path) > 1 else ""))
            return self._upload(call, path[-1])
        multipart = call.content_type.startswith("multipart/form-data")
        form = call.form if call.method == "POST" and not multipart else {}
        query = call.query
        if path == ["dialog", "oauth"]:
            return self._dialog(call, query)
        served = served_version(path[0]) if path else None
        if served is None:
            self._begin(call, "unknown_version", version=path[0] if path else "")
            return call.send(400, unknown_version_error(path[0], self.unknown_version_shape))
        with self.lock:
            self.versions_served.append(served)
        rest = path[1:]
        if rest == ["oauth", "access_token"]:
            return self._access_token(call, query)
        if rest == ["me", "accounts"]:
            return self._accounts(call, query)
        if len(rest) == 2 and rest[1] == "comments":
            if call.method == "POST":
                return self._reply(call, rest[0], form)
            return self._comments(call, rest[0], query)
        if len(rest) == 2 and rest[1] == "video_reels":
            if call.method == "POST":
                return self._video_reels(call, rest[0], form)
            return self._list(call, rest[0], query)
        if len(rest) == 2 and rest[1] == "photos" and call.method == "POST":
            return self._photo(call, rest[0])
        if len(rest) == 2 and rest[1] == "feed":
            if call.method == "POST":
                return self._feed_post(call, rest[0], form)
            return self._feed_list(call, rest[0], query)
        if len(rest) == 1 and call.method == "GET":
            return self._status(call, rest[0], query)
        return call.send(404, {"error": {"message": "unknown path", "code": 803}})

    def _begin(self, call: Call, kind: str, **facts: Any) -> None:
        authorization = call.headers.get("Authorization", "")
        call.begin(
            kind,
            sign_in=kind in ("dialog", "token", "accounts"),
            path=call.path,
            query_has_secret=any(name in call.lists for name in SECRET_PARAMS)
            and kind not in ("token",),
            auth_scheme=authorization.split(" ", 1)[0] if authorization else None,
            **facts,
        )

    # -- answers in the Graph API's words -----------------------------------------------------

    @staticmethod
    def _graph_error(
        call: Call, code: int, status: int = 400, message: str = "", subcode: int | None = None
    ) -> None:
        error: dict[str, Any] = {
            "message": message or f"fake error {code}",
            "type": "OAuthException" if code == 190 else "FacebookApiException",
            "code": code,
            "fbtrace_id": "Afake",
        }
        if code == 190:
            error["error_subcode"] = 460
        if subcode is not None:
            error["error_subcode"] = subcode
        if code in (1, 2):
            error["is_transient"] = True
        call.send(status, {"error": error})

    def failure(self, call: Call, status: int) -> Any:
        # https://developers.facebook.com/docs/graph-api/guides/error-handling: 2 is a
        # temporary service error, 4 the app's rate limit; a client error is 100.
        code = 2 if status >= 500 else 4 if status == 429 else 100
        error: dict[str, Any] = {
            "message": "scripted trouble",
            "type": "FacebookApiException",
            "code": code,
            "fbtrace_id": "Afake",
        }
        if code == 2:
            error["is_transient"] = True
        return {"error": error}

    def refusal(self, call: Call) -> None:
        # The Video API's "file too large" (1363023), one of its refusals of the file.
        self._graph_error(call, 1363023, 400, "The video file is too large")

    def _refuse(self, call: Call) -> bool:
        """Apply a refusing behaviour (the shared words, or `code:C`); True when applied."""
        if call.behaviour.startswith("code:"):
            self._graph_error(call, int(call.behaviour.split(":")[1]))
            return True
        return call.refused()

    def _page_authorized(self, call: Call, page_id: str | None = None) -> bool:
        scheme, _, token = call.headers.get("Authorization", "").partition(" ")
        good = (
            scheme == "OAuth"
            and not self.revoked
            and token in (self.page_token, OTHER_PAGE_TOKEN)
            and (page_id is None or (token == self.page_token) == (page_id == PAGE_ID))
        )
        if not good:
            self._graph_error(call, 190, 400, "Error validating access token")
        return good

    # -- reels ---------------------------------------------------------------------------------

    def _video_reels(self, call: Call, page_id: str, form: dict[str, str]) -> None:
        phase = form.get("upload_phase")
        kind = "start" if phase == "start" else "finish"
        self._begin(call, kind, form=form)
        if self._refuse(call) or not self._page_authorized(call, page_id):
            return None
        if phase == "start":
            with self.lock:
                reel = self._new_reel()
            answer = {
                "video_id": reel.video_id,
                "upload_url": f"{self.url}/video-upload/{VERSION}/{reel.video_id}",
            }
        elif phase == "finish":
            with self.lock:
                reel = self.reels.get(form.get("video_id", ""))
                if reel is None or reel.size is None or len(reel.received) < reel.size:
                    reel = None
                elif not reel.finished:
                    reel.finished = True
                    reel.title = form.get("title", "")
                    reel.description = form.get("description", "")
                    reel.polls_left = self.processing_polls
                    reel.failure, self.processing_error = self.processing_error, None
                    self._clock += 60
                    reel.published_at = self._clock
            if reel is None:
                return self._graph_error(call, 6000, 400, "There was a problem uploading")
            if form.get("video_state") != "PUBLISHED":
                return self._graph_error(call, 100, 400, "video_state must be PUBLISHED")
            answer = {"success": True}
        else:
            return self._graph_error(call, 100, 400, "unknown upload_phase")
        call.answer(200, answer)

    def _upload(self, call: Call, video_id: str) -> None:
        offset = int(call.headers.get("offset", "-1"))
        size = int(call.headers.get("file_size", "-1"))
        self._begin(call, "upload", offset=offset, file_size=size, length=call.length)
        if call.behaviour == "half":
            kept = call.read(call.length // 2)
            with self.lock:
                reel = self.reels.get(video_id)
                if reel is not None and offset == len(reel.received):
                    reel.size = size
                    reel.received += kept
            return call.hang_up()
        body = call.body
        if self._refuse(call) or not self._page_authorized(call):
            return None
        offset_invalid = {
            "debug_info": {
                "retriable": False,
                "type": "OffsetInvalidError",
                "message": "offset does not match",
            }
        }
        if call.behaviour == "offset":
            return call.send(400, offset_invalid)
        with self.lock:
            reel = self.reels.get(video_id)
            good = reel is not None and offset == len(reel.received) and size > 0
            if good:
                reel.size = size
                reel.received += body
        if not good:
            return call.send(400, offset_invalid)
        call.answer(200, {"success": True})

    def _status(self, call: Call, video_id: str, query: dict[str, str]) -> None:
        self._begin(call, "status")
        if self._refuse(call) or not self._page_authorized(call):
            return None
        with self.lock:
            reel = self.reels.get(video_id)
            if reel is None:
                status = None
            else:
                status = self._reel_status(reel)
                if reel.finished and reel.polls_left > 0:
                    reel.polls_left -= 1
        if status is None:
            # Graph's answer for an id it does not have: code 100, subcode 33
            # (https://developers.facebook.com/docs/graph-api/guides/error-handling).
            return self._graph_error(
                call,
                100,
                400,
                f"Unsupported get request. Object with ID '{video_id}' does not exist, cannot be "
                "loaded due to missing permissions, or does not support this operation",
                subcode=33,
            )
        call.answer(200, {"id": video_id, "status": status})

    @staticmethod
    def _reel_status(reel: Reel) -> dict[str, Any]:
        received = len(reel.received)
        uploaded = reel.size is not None and received >= reel.size
        not_started = {"status": "not_started"}
        status: dict[str, Any] = {
            "video_status": "upload_complete" if uploaded else "uploading",
            "uploading_phase": {
                "status": "complete"
                if uploaded
                else ("in_progress" if received else "not_started"),
                "bytes_transfered": received,
            },
            "processing_phase": not_started,
            "publishing_phase": not_started,
        }
        if not reel.finished:
            return status
        if reel.failure:
            status["video_status"] = "error"
            status["processing_phase"] = {"status": "error", "error": {"message": reel.failure}}
        elif reel.polls_left > 0:
            status["video_status"] = "processing"
            status["processing_phase"] = {"status": "in_progress"}
        else:
            status["video_status"] = "ready"
            status["processing_phase"] = {"status": "complete"}
            status["publishing_phase"] = {
                "status": "complete",
                "publish_status": "published",
                "publish_time": reel.published_at,
            }
        return status

    def _list(self, call: Call, page_id: str, query: dict[str, str]) -> None:
        self._begin(call, "list", query=dict(query))
        if self._refuse(call) or not self._page_authorized(call, page_id):
            return None
        since = int(query.get("since") or 0)
        limit = int(query.get("limit") or 25)
        with self.lock:
            live = sorted(self.published, key=lambda r: -r.published_at)
            data = [
                {"id": r.video_id, "description": r.description, "updated_time": r.published_at}
                for r in live
                if r.published_at >= since and r.polls_left == 0
            ]
        call.answer(200, {"data": data[:limit]})

    # -- multi-photo posts (https://developers.facebook.com/docs/graph-api/reference/page/feed/)

    def carousels(self) -> int:
        """Multi-photo posts on the Page: what a person sees of carousels."""
        with self.lock:
            return sum(1 for post in self.feed if len(post["photos"]) > 1)

    def _photo(self, call: Call, page_id: str) -> None:
        """`POST /{page}/photos` with the picture as `source` (multipart); `published=false`
        keeps it off the Page until a post attaches it."""
        from email.parser import BytesParser
        from email.policy import default

        message = BytesParser(policy=default).parsebytes(
            f"Content-Type: {call.content_type}\r\n\r\n".encode() + call.body
        )
        fields: dict[str, Any] = {}
        for part in message.iter_parts() if message.is_multipart() else []:
            name = part.get_param("name", header="content-disposition")
            fields[name] = part.get_payload(decode=True)
        self._begin(call, "photo", published=fields.get("published"))
        if self._refuse(call) or not self._page_authorized(call, page_id):
            return None
        picture = fields.get("source") or b""
        if not picture:
            return self._graph_error(call, 324, 400, "Requires upload file")
        if len(picture) > 4 * 1024 * 1024:  # "less than 4MB" (the Page photos reference)
            return self._graph_error(call, 100, 400, "The photo is over 4 MB")
        with self.lock:
            photo_id = str(7_000_000 + len(self.photos) + 1)
            published = (fields.get("published") or b"true").decode() != "false"
            self.photos[photo_id] = {"page": page_id, "published": published, "bytes": picture}
            if published:  # a photo posted on its own: a post of one photo
                self._clock += 60
                self.feed.append(
                    {"id": f"{page_id}_{photo_id}", "message": "", "photos": [photo_id],
                     "created_time": self._clock}
                )  # fmt: skip
        call.answer(200, {"id": photo_id})

    def _feed_post(self, call: Call, page_id: str, form: dict[str, str]) -> None:
        import json

        attached = []
        for key in sorted(k for k in form if k.startswith("attached_media[")):
            try:
                attached.append(str(json.loads(form[key])["media_fbid"]))
            except (ValueError, KeyError, TypeError):
                self._begin(call, "feed", form=form)
                return self._graph_error(call, 100, 400, f"Invalid parameter: {key}")
        self._begin(call, "feed", form=form)
        if self._refuse(call) or not self._page_authorized(call, page_id):
            return None
        with self.lock:
            for photo_id in attached:
                photo = self.photos.get(photo_id)
                if photo is None or photo["page"] != page_id or photo["published"]:
                    return self._graph_error(
                        call, 100, 400, f"Invalid parameter: media_fbid {photo_id}"
                    )
            if not attached and not form.get("message"):
                return self._graph_error(call, 100, 400, "The post is empty")
            self._clock += 60
            post = {
                "id": f"{page_id}_{8_000_000 + len(self.feed) + 1}",
                "message": form.get("message", ""),
                "photos": attached,
                "created_time": self._clock,
            }
            self.feed.append(post)
        call.answer(200, {"id": post["id"]})

    def _feed_list(self, call: Call, page_id: str, query: dict[str, str]) -> None:
        self._begin(call, "feed_list", query=dict(query))
        if self._refuse(call) or not self._page_authorized(call, page_id):
            return None
        since = int(query.get("since") or 0)
        limit = int(query.get("limit") or 25)
        with self.lock:
            data = [
                {"id": p["id"], "message": p["message"], "created_time": p["created_time"]}
                for p in reversed(self.feed)
                if p["created_time"] >= since
            ]
        call.answer(200, {"data": data[:limit]})

    # -- comments and replies (issue 28) ----------------------------------------------------
    # https://developers.facebook.com/docs/graph-api/reference/object/comments

    COMMENT_FIELDS = frozenset(
        {"id", "message", "created_time", "from", "parent", "permalink_url", "like_count"}
    )

    def add_comment(
        self, object_id: str, text: str, *, author: str = "Ana", author_id: str = "555000",
    ) -> str:  # fmt: skip
        """Someone's comment under reel `object_id`, or a reply when it is a comment's id."""
        with self.lock:
            return self._new_comment(object_id, text, {"id": author_id, "name": author})

    def store_then_fail(self, status: int = 500) -> None:
        """The next reply is stored, then answered `status` (`reply` scripted `stored:N`)."""
        self.script["reply"].append(f"stored:{status}")

    def delete_comment(self, comment_id: str) -> None:
        with self.lock:
            self.deleted_comments.add(comment_id)

    def replies_to(self, comment_id: str) -> list[dict[str, Any]]:
        """The Page's live replies under `comment_id`."""
        with self.lock:
            return [
                c
                for c in self.comments.values()
                if c["parent"] == comment_id and c["from"]["id"] == PAGE_ID and self._alive(c)
            ]

    def _new_comment(self, object_id: str, text: str, author: dict[str, str]) -> str:
        parent = self.comments.get(object_id)
        if parent is not None:  # one level deep: a reply to a reply joins its thread
            top = parent["parent"] or parent["id"]
            reel = parent["reel"]
        else:
            top, reel = None, object_id
        self._clock += 60
        comment_id = f"{reel}_{len(self.comments) + 1}"
        created = dt.datetime.fromtimestamp(self._clock, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S%z")
        self.comments[comment_id] = {
            "id": comment_id,
            "message": text,
            "created_time": created,
            "from": author,
            "parent": top,
            "reel": reel,
            "order": len(self.comments),
        }
        return comment_id

    def _alive(self, comment: dict[str, Any]) -> bool:
        return (
            comment["id"] not in self.deleted_comments
            and comment["parent"] not in self.deleted_comments
        )

    def _exists(self, object_id: str) -> bool:
        comment = self.comments.get(object_id)
        if comment is not None:
            return self._alive(comment)
        reel = self.reels.get(object_id)
        return reel is not None and reel.finished

    def _no_object(self, call: Call, object_id: str) -> None:
        self._graph_error(
            call,
            100,
            400,
            f"Unsupported get request. Object with ID '{object_id}' does not exist, cannot be "
            "loaded due to missing permissions, or does not support this operation",
            subcode=33,
        )

    @staticmethod
    def _cursor(order: int) -> str:
        return base64.urlsafe_b64encode(f"order:{order}".encode()).decode()

    @staticmethod
    def _position(cursor: str) -> int | None:
        try:
            return int(base64.urlsafe_b64decode(cursor.encode()).decode().split(":", 1)[1])
        except (ValueError, IndexError):
            return None

    def _comments_problem(self, query: dict[str, str]) -> str | None:
        known = {"filter", "order", "fields", "limit", "after", "before", "summary"}
        for name in query:
            if name not in known:
                return f"(#100) The parameter {name} is not valid for this edge"
        if query.get("filter", "toplevel") not in ("toplevel", "stream"):
            return "(#100) filter must be one of the following values: toplevel, stream"
        if query.get("order", "chronological") not in ("chronological", "reverse_chronological"):
            return (
                "(#100) order must be one of the following values: chronological, "
                "reverse_chronological"
            )
        for field_name in _top_fields(query.get("fields", "")):
            if field_name not in self.COMMENT_FIELDS:
                return (
                    f"(#100) Tried accessing nonexisting field ({field_name}) on node type "
                    "(Comment)"
                )
        if not str(query.get("limit", "25")).isdigit():
            return "(#100) Param limit must be an integer"
        return None

    def _comments(self, call: Call, object_id: str, query: dict[str, str]) -> None:
        self._begin(call, "comments", object_id=object_id, query=dict(query))
        problem = self._comments_problem(query)
        if problem:
            return self._graph_error(call, 100, 400, problem)
        if self._refuse(call) or not self._page_authorized(call):
            return None
        if "pages_read_engagement" not in self.granted:
            return self._graph_error(
                call, 10, 403, "(#10) This endpoint requires the 'pages_read_engagement' permission"
            )
        with self.lock:
            if not self._exists(object_id):
                found = None
            else:
                stream = query.get("filter") == "stream"
                on_comment = object_id in self.comments
                found = sorted(
                    (
                        c
                        for c in self.comments.values()
                        if self._alive(c)
                        and (
                            c["parent"] == object_id
                            if on_comment
                            else c["reel"] == object_id and (stream or c["parent"] is None)
                        )
                    ),
                    key=lambda c: c["order"],
                    reverse=query.get("order") == "reverse_chronological",
                )
        if found is None:
            return self._no_object(call, object_id)
        after = query.get("after")
        if after:
            position = self._position(after)
            if position is None:
                return self._graph_error(call, 100, 400, "(#100) Invalid cursor")
            index = next((i for i, c in enumerate(found) if c["order"] == position), None)
            found = found[index + 1 :] if index is not None else [
                c for c in found if c["order"] > position
            ]  # fmt: skip
        limit = int(query.get("limit") or 25)
        page, more = found[:limit], len(found) > limit
        fields = set(_top_fields(query.get("fields", "id,message,created_time")))
        data = []
        for comment in page:
            item = {"id": comment["id"]}
            for name in fields - {"id"}:
                if name == "parent":
                    if comment["parent"]:
                        item["parent"] = {"id": comment["parent"]}
                elif name in comment:
                    item[name] = comment[name]
            data.append(item)
        answer: dict[str, Any] = {"data": data}
        if page:
            cursors = {
                "before": self._cursor(page[0]["order"]),
                "after": self._cursor(page[-1]["order"]),
            }
            answer["paging"] = {"cursors": cursors}
            if more:
                answer["paging"]["next"] = f"{self.url}{call.path}?after={cursors['after']}"
        call.answer(200, answer)

    def _reply(self, call: Call, object_id: str, form: dict[str, str]) -> None:
        self._begin(call, "reply", object_id=object_id, form=form)
        if self._refuse(call) or not self._page_authorized(call):
            return None
        if "pages_manage_engagement" not in self.granted:
            return self._graph_error(
                call, 200, 403, "(#200) Permissions error: pages_manage_engagement is required"
            )
        if not form.get("message", "").strip():
            return self._graph_error(call, 100, 400, "(#100) The parameter message is required")
        with self.lock:
            made = None
            if object_id in self.comments and self._exists(object_id):
                made = self._new_comment(
                    object_id, form["message"], {"id": PAGE_ID, "name": "Lofi Nights"}
                )
        if made is None:
            return self._no_object(call, object_id)
        if call.behaviour.startswith("stored:"):
            return self.answer_failure(call, int(call.behaviour.split(":")[1]))
        call.answer(200, {"id": made})

    # -- login ---------------------------------------------------------------------------------

    def _dialog(self, call: Call, query: dict[str, str]) -> None:
        """A person pressing Allow on the Facebook Login dialog."""
        self._begin(call, "dialog", scope=query.get("scope"))
        if query.get("client_id") != APP_ID:
            return call.send(400, {"error": {"message": "Invalid App ID", "code": 101}})
        code = "fbcode-" + secrets.token_urlsafe(8)
        with self.lock:
            self.codes[code] = query.get("redirect_uri", "")
        target = query.get("redirect_uri", "")
        location = f"{target}?" + urlencode({"code": code, "state": query.get("state", "")})
        call.send(302, None, {"Location": location})

    def _access_token(self, call: Call, query: dict[str, str]) -> None:
        grant = query.get("grant_type", "authorization_code")
        self._begin(call, "token", grant=grant)
        if self._refuse(call):
            return None
        if query.get("client_id") != APP_ID or query.get("client_secret") != APP_SECRET:
            return self._graph_error(call, 1, 400, "Error validating client secret")
        with self.lock:
            if grant == "fb_exchange_token":
                good = query.get("fb_exchange_token") in self.user_tokens
                token = "EAAlong-" + secrets.token_urlsafe(8)
                answer = {"access_token": token, "token_type": "bearer", "expires_in": 5183944}
            else:
                good = self.codes.pop(query.get("code", ""), None) == query.get("redirect_uri")
                token = "EAAshort-" + secrets.token_urlsafe(8)
                answer = {"access_token": token, "token_type": "bearer", "expires_in": 5400}
            if good:
                self.user_tokens.add(token)
        if not good:
            return self._graph_error(call, 100, 400, "Invalid verification code format.")
        call.answer(200, answer)

    def _accounts(self, call: Call, query: dict[str, str]) -> None:
        self._begin(call, "accounts")
        token = call.headers.get("Authorization", "").partition(" ")[2]
        if token not in self.user_tokens or not token.startswith("EAAlong-"):
            return self._graph_error(call, 190, 400, "Invalid OAuth access token")
        pages = [
            {**page, "tasks": ["ANALYZE", "ADVERTISE", "MODERATE", "CREATE_CONTENT", "MANAGE"]}
            for page in self.pages
        ]
        call.send(200, {"data": pages, "paging": {"cursors": {"before": "a", "after": "b"}}})


def _top_fields(fields: str) -> list[str]:
    """The top-level names of a Graph `fields` list ("from{id,name},message" -> from, message)."""
    names, depth, current = [], 0, ""
    for char in fields:
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char == "," and depth == 0:
            names.append(current.strip())
            current = ""
            continue
        if depth == 0 and char not in "{}":
            current += char
    if current.strip():
        names.append(current.strip())
    return [name for name in names if name]
