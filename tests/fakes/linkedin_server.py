"""A local stand-in for LinkedIn: Videos API, Posts API and 3-legged OAuth, on 127.0.0.1
(tests/fakes/base.py).

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

Each request of a kind (`initialize`, `part`, `finalize`, `video`, `post`, `list`,
`get_post`) takes the next scripted behaviour of that kind (default: work), the shared
vocabulary: `status:N[:S]` (HTTP N, nothing done, with Retry-After when given), `drop` (do the
work, then hang up), `hold`, `hangup` (hang up, nothing done), `refuse` (422, LinkedIn's
refusal of the post). Every request is recorded without its secrets.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field
from datetime import date
from itertools import count
from typing import Any
from urllib.parse import unquote, urlencode

from tests.fakes.base import Call, FakeServer, today

# https://learn.microsoft.com/linkedin/marketing/integrations/migrations (sunset dates) and
# https://learn.microsoft.com/linkedin/marketing/versioning ("supported ... a minimum of one
# year"; calls without a version header, or with one not active, are refused).
SUNSETS = {
    "202510": date(2026, 10, 15),
    "202511": date(2026, 11, 16),
    "202601": date(2027, 1, 15),
    "202602": date(2027, 2, 15),
    "202603": date(2027, 3, 16),
    "202604": date(2027, 4, 15),
    "202605": date(2027, 5, 15),
    "202606": date(2027, 6, 15),
    "202607": date(2027, 7, 15),
}
# https://learn.microsoft.com/linkedin/marketing/community-management/shares/posts-api ("Post
# Schema": the fields marked required) and its `distribution` object (`feedDistribution`
# required). A post without one is refused as Rest.li's validation refuses a missing field:
# 422 "ERROR :: /field :: field is required but not found and has no default value" (status
# from https://learn.microsoft.com/linkedin/shared/api-guide/concepts/error-handling; the
# wording is Rest.li's as developers quote it, UNCONFIRMED on a LinkedIn page).
POST_REQUIRED = ("author", "commentary", "visibility", "distribution", "lifecycleState")
DISTRIBUTION_REQUIRED = ("feedDistribution",)
# https://learn.microsoft.com/linkedin/marketing/community-management/shares/posts-api and
# .../videos-api: the permission each call needs (an organisation's posts need the
# organisation's permission instead).
WRITE_SCOPES = {"w_member_social", "w_organization_social"}
READ_SCOPES = {"r_member_social", "r_organization_social"}
#: kind of REST call -> (the scope a member's call needs, the one an organisation's needs)
SCOPE_OF = {
    "initialize": ("w_member_social", "w_organization_social"),
    "image_initialize": ("w_member_social", "w_organization_social"),
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


def version_active(version: str, day: date) -> bool:
    """Is this LinkedIn-Version served on `day`? Released by its month, not yet sunset."""
    found = re.fullmatch(r"(20[0-9]{2})(0[1-9]|1[0-2])(\.[0-9]{2})?", version)
    if not found:
        return False
    year, month = int(found.group(1)), int(found.group(2))
    sunset = SUNSETS.get(version[:6], date(year + 1, month, 15))
    return date(year, month, 1) <= day < sunset


def missing_post_field(payload: dict) -> str | None:
    """The path of the first required Posts API field `payload` lacks (`/distribution`,
    `/distribution/feedDistribution`, ...), else None."""
    for name in POST_REQUIRED:
        if name not in payload:
            return f"/{name}"
    distribution = payload["distribution"]
    for name in DISTRIBUTION_REQUIRED:
        if not isinstance(distribution, dict) or name not in distribution:
            return f"/distribution/{name}"
    return None


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


class FakeLinkedIn(FakeServer):
    title = "LinkedIn"
    publish_operation = "post"
    poll_interval = 0.05

    def __init__(self, *, part_size: int = 16384) -> None:
        super().__init__()
        self.part_size = part_size
        self.videos: dict[str, Video] = {}
        self.images: dict[str, dict[str, Any]] = {}  # urn -> {owner, bytes}
        self.posts: list[Post] = []
        self.processing_polls = 0
        self.processing_failure: str | None = None  # the next finalized video fails with this
        # What the consent grants; r_member_social is a restricted permission most apps lack.
        self.granted = "openid,profile,w_member_social"
        self.access_tokens: dict[str, set[str]] = {}
        self.codes: dict[str, str] = {}
        self.comments: list[dict[str, Any]] = []  # issue 28: see "comments" below
        self.comments_newest_first = False  # LinkedIn's page does not say which

    # -- helpers for tests ---------------------------------------------------------------------

    def settings(self) -> str:
        """The `[platforms.linkedin]` lines that point Autoretto here, with no waiting."""
        return (
            f'api_base = "{self.url}"\nauth_uri = "{self.url}/oauth/v2/authorization"\n'
            f'token_uri = "{self.url}/oauth/v2/accessToken"\npoll_wait = "0s"\n'
        )

    def account(self) -> dict[str, Any]:
        """A member signed in with what the consent grants (`granted`)."""
        return {
            "account_id": MEMBER_URN,
            "name": "Rae Lofi",
            "tokens": {"access_token": self.issue_token(), "expires_at": "2027-01-28T10:00:00Z"},
            "meta": {"author": MEMBER_URN, "token_expires_at": "2027-01-28T10:00:00Z"},
        }

    def issue_token(self, scopes: str | None = None) -> str:
        """A token carrying `scopes` (comma or space separated; default: `granted`)."""
        token = "AQVfake-" + secrets.token_urlsafe(12)
        with self.lock:
            self.access_tokens[token] = set(re.split(r"[ ,]+", scopes or self.granted))
        return token

    def visible_copies(self) -> int:
        return len(self.posts)

    def carousels(self) -> int:
        """Multi-image posts: what a person sees of carousels."""
        with self.lock:
            return sum(1 for post in self.posts if "multiImage" in (post.body.get("content") or {}))

    def add_post(self, commentary: str, author: str = MEMBER_URN) -> str:
        """A post already on the author's feed."""
        with self.lock:
            urn = f"urn:li:share:{7000 + len(self.posts) + 1}"
            self.posts.append(Post(urn, author, commentary, "", "", {}))
        return urn

    # -- routing -------------------------------------------------------------------------------

    def route(self, call: Call) -> None:
        path, method, query = call.path, call.method, call.query
        if path == "/oauth/v2/authorization" and method == "GET":
            return self._consent(call, query)
        if path == "/oauth/v2/accessToken" and method == "POST":
            return self._token(call)
        if path == "/v2/userinfo" and method == "GET":
            return self._userinfo(call)
        if path.startswith("/upload-image/") and method == "PUT":
            return self._image_part(call, path)
        if path.startswith("/upload/") and method == "PUT":
            return self._part(call, path)
        if path == "/rest/images" and method == "POST":
            wanted = query.get("action") == "initializeUpload"
            return self._rest(call, "image_initialize" if wanted else "unknown")
        if path == "/rest/videos" and method == "POST":
            kind = {"initializeUpload": "initialize", "finalizeUpload": "finalize"}.get(
                query.get("action", ""), "unknown"
            )
            return self._rest(call, kind)
        if path.startswith("/rest/videos/") and method == "GET":
            return self._rest(call, "video", unquote(path[len("/rest/videos/") :]))
        if path == "/rest/posts" and method == "POST":
            return self._rest(call, "post")
        if path == "/rest/posts" and method == "GET":
            return self._rest(call, "list")
        if path.startswith("/rest/posts/") and method == "GET":
            return self._rest(call, "get_post", unquote(path[len("/rest/posts/") :]))
        if path.startswith("/rest/socialActions/") and path.endswith("/comments"):  # issue 28
            urn = unquote(path[len("/rest/socialActions/") : -len("/comments")])
            return self._rest(call, "comments" if method == "GET" else "comment", urn)
        return call.send(404, {"status": 404, "message": f"no {method} {path}"})

    def _begin(self, call: Call, kind: str, **facts: Any) -> None:
        call.begin(
            kind,
            sign_in=kind in ("consent", "token", "userinfo"),
            version=call.headers.get("LinkedIn-Version"),
            restli=call.headers.get("X-Restli-Protocol-Version"),
            authorized=call.headers.get("Authorization", "").startswith("Bearer "),
            **facts,
        )

    def failure(self, call: Call, status: int) -> Any:
        return {"status": status, "message": "scripted trouble"}

    def refusal(self, call: Call) -> None:
        # https://learn.microsoft.com/linkedin/shared/api-guide/concepts/error-handling: 422
        # is a request LinkedIn understood and will not take.
        call.send(422, {"status": 422, "message": "The video cannot be used in a post"})

    def _scopes(self, call: Call) -> set[str]:
        with self.lock:
            return set(self.access_tokens.get(call.bearer, ()))

    def _permitted(self, call: Call, kind: str, payload: dict, query: dict) -> bool:
        """The call's permission: a member's or an organisation's, by the urn it acts for."""
        if kind not in SCOPE_OF:
            return True
        acting_for = str(
            (payload.get("initializeUploadRequest") or {}).get("owner")
            or payload.get("author")
            or payload.get("actor")
            or query.get("author")
            or ""
        )
        member, organization = SCOPE_OF[kind]
        needed = organization if acting_for.startswith("urn:li:organization:") else member
        granted = self._scopes(call)
        # A video's status names no author: either write permission reads it.
        if needed in granted or (kind == "video" and granted & WRITE_SCOPES):
            return True
        # The shape of LinkedIn's permission refusal (wording UNCONFIRMED; status and code from
        # https://learn.microsoft.com/linkedin/shared/api-guide/concepts/error-handling).
        call.send(
            403,
            {
                "status": 403,
                "serviceErrorCode": 100,
                "code": "ACCESS_DENIED",
                "message": f"Not enough permissions to access: {kind} (needs {needed})",
            },
        )
        return False

    def _authorized(self, call: Call) -> bool:
        with self.lock:
            good = call.bearer in self.access_tokens and not self.revoked
        if not good:
            call.send(
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

    def _rest(self, call: Call, kind: str, urn: str = "") -> None:
        payload = json.loads(call.body) if call.body else {}
        query = call.query
        self._begin(call, kind, query=query, json=payload, urn=urn)
        if call.refused() or not self._authorized(call):
            return None
        if not call.headers.get("LinkedIn-Version") or (
            call.headers.get("X-Restli-Protocol-Version") != "2.0.0"
        ):
            return call.send(426, {"status": 426, "message": "version headers missing"})
        version = call.headers["LinkedIn-Version"]
        if not version_active(version, today()):
            return call.send(
                426,
                {
                    "status": 426,
                    "code": "NONEXISTENT_VERSION",
                    "message": f"Requested version {version} is not active",
                },
            )
        if not self._permitted(call, kind, payload, query):
            return None
        status, answer, headers = {
            "initialize": self._initialize,
            "image_initialize": self._image_initialize,
            "finalize": self._finalize,
            "video": self._video,
            "post": self._post,
            "list": self._list,
            "get_post": self._get_post,
            **self._comment_handlers(call),
        }.get(kind, lambda p, q, u: (400, {"message": "unknown action"}, {}))(payload, query, urn)
        call.answer(status, answer, headers)

    def _initialize(self, payload: dict, query: dict, urn: str) -> tuple[int, Any, dict]:
        request = payload.get("initializeUploadRequest") or {}
        size = int(request.get("fileSizeBytes") or 0)
        owner = str(request.get("owner") or "")
        if size <= 0 or not owner.startswith(("urn:li:person:", "urn:li:organization:")):
            return 422, {"status": 422, "message": "owner and fileSizeBytes are required"}, {}
        with self.lock:
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

    def _image_initialize(self, payload: dict, query: dict, urn: str) -> tuple[int, Any, dict]:
        """`POST /rest/images?action=initializeUpload`: an image URN and where its bytes go
        (https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/images-api)."""
        owner = str((payload.get("initializeUploadRequest") or {}).get("owner") or "")
        if not owner.startswith(("urn:li:person:", "urn:li:organization:")):
            return 422, {"status": 422, "message": "initializeUploadRequest.owner is required"}, {}
        with self.lock:
            number = len(self.images) + 1
            urn = f"urn:li:image:C4fake{number}"
            self.images[urn] = {"owner": owner, "bytes": None}
        value = {
            "uploadUrlExpiresAt": 1_900_000_000_000,
            "uploadUrl": f"{self.url}/upload-image/{number}",
            "image": urn,
        }
        return 200, {"value": value}, {}

    def _image_part(self, call: Call, path: str) -> None:
        number = path.rsplit("/", 1)[-1]
        body = call.body
        self._begin(call, "image_upload", length=len(body))
        if call.refused():
            return None
        with self.lock:
            image = self.images.get(f"urn:li:image:C4fake{number}")
            if image is not None and body:
                image["bytes"] = body
        if image is None or not body:
            return call.send(400, {"status": 400, "message": "bad image upload"})
        call.answer(201, None)

    def _part(self, call: Call, path: str) -> None:
        _, _, index, number = path.split("/")
        body = call.body
        self._begin(call, "part", part=int(number), length=len(body))
        if call.refused():
            return None
        urn = f"urn:li:video:D4fake{index}"
        with self.lock:
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
            return call.send(400, {"status": 400, "message": "bad part"})
        call.answer(200, None, {"ETag": video.etags[part]})

    def _finalize(self, payload: dict, query: dict, urn: str) -> tuple[int, Any, dict]:
        request = payload.get("finalizeUploadRequest") or {}
        with self.lock:
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
        with self.lock:
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
        missing = missing_post_field(payload)
        if missing:
            message = (
                f"ERROR :: {missing} :: field is required but not found and has no default value"
            )
            return 422, {"status": 422, "code": "UNPROCESSABLE_ENTITY", "message": message}, {}
        author = payload.get("author")
        commentary = payload.get("commentary", "")
        content = payload.get("content") or {}
        media = content.get("media") or {}
        multi = (content.get("multiImage") or {}).get("images")
        with self.lock:
            if multi is not None:
                # 2 to 20 images, each uploaded by the author
                # (https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/multiimage-post-api)
                urns = [str(image.get("id")) for image in multi if isinstance(image, dict)]
                known = [self.images.get(u) for u in urns]
                if not 2 <= len(urns) <= 20 or any(
                    i is None or i["bytes"] is None or i["owner"] != author for i in known
                ):
                    return 422, {"status": 422, "message": "the images are not available"}, {}
                video = Video("", str(author), 0, [], finalized=True)
                video.urn = ",".join(urns)
            else:
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
        with self.lock:
            mine = [p for p in reversed(self.posts) if p.author == query.get("author")]
        elements = [{"id": p.urn, "author": p.author, "commentary": p.commentary} for p in mine]
        return 200, {"elements": elements[:count], "paging": {"count": count, "start": 0}}, {}

    def _get_post(self, payload: dict, query: dict, urn: str) -> tuple[int, Any, dict]:
        with self.lock:
            found = next((p for p in self.posts if p.urn == urn), None)
        if found is None:
            return 404, {"status": 404, "message": "no such post"}, {}
        return 200, {"id": found.urn, "author": found.author, "commentary": found.commentary}, {}

    # -- sign-in -------------------------------------------------------------------------------

    def _consent(self, call: Call, query: dict[str, str]) -> None:
        """A person pressing Allow on LinkedIn's consent page."""
        self._begin(call, "consent", scope=query.get("scope"))
        code = "li-code-" + secrets.token_urlsafe(8)
        with self.lock:
            self.codes[code] = query.get("redirect_uri", "")
        location = f"{query.get('redirect_uri', '')}?" + urlencode(
            {"code": code, "state": query.get("state", "")}
        )
        call.send(302, None, {"Location": location})

    def _token(self, call: Call) -> None:
        form = call.form
        self._begin(call, "token", grant=form.get("grant_type"))
        if form.get("client_id") != CLIENT_ID or form.get("client_secret") != CLIENT_SECRET:
            return call.send(
                401, {"error": "invalid_client", "error_description": "Client authentication"}
            )
        with self.lock:
            good = self.codes.pop(form.get("code", ""), None) == form.get("redirect_uri")
        if form.get("grant_type") != "authorization_code" or not good:
            return call.send(
                400, {"error": "invalid_request", "error_description": "Unable to retrieve token"}
            )
        token = self.issue_token()
        call.send(200, {"access_token": token, "expires_in": 5183999, "scope": self.granted})

    def _userinfo(self, call: Call) -> None:
        self._begin(call, "userinfo")
        if not self._authorized(call):
            return None
        call.send(200, {"sub": MEMBER_SUB, "name": "Rae Lofi", "email_verified": True})

    # -- comments (issue 28) --------------------------------------------------------------------
    # The Comments API (https://learn.microsoft.com/linkedin/marketing/community-management/
    # shares/comments-api): `GET /rest/socialActions/{urn}/comments?start=&count=` lists the
    # comments under a post (or, under a comment's URN, the comments nested in it), oldest
    # first (`comments_newest_first`: the other way; the page does not say), with `paging`
    # {start, count, total}; `POST` there creates one from `actor`, `object`, `message.text`
    # and, nested, `parentComment` (201, `x-restli-id`). Reading needs r_member_social
    # (r_organization_social), writing w_member_social (w_organization_social). A post or
    # comment that is not there is 404. Kinds `comments` and `comment` take the shared
    # vocabulary and `stored:N` (`store_then_fail`: the comment made, then HTTP N).

    def add_comment(
        self, post: str, text: str, *, actor: str = "urn:li:person:Listener1",
        parent: str | None = None,
    ) -> str:  # fmt: skip
        """A comment by someone else under the post `post` (nested in `parent`); its URN."""
        with self.lock:
            return self._new_comment(post, text, actor, parent)

    def delete_comment(self, urn: str) -> None:
        """The comment is deleted, and the comments nested in it."""
        with self.lock:
            self.comments = [c for c in self.comments if urn not in (c["urn"], c["parent"])]

    def my_replies(self) -> list[dict[str, Any]]:
        """The comments the connected member wrote, oldest first."""
        with self.lock:
            return [c for c in self.comments if c["actor"] == MEMBER_URN]

    def store_then_fail(self, operation: str, status: int = 500) -> None:
        """The next call to `operation` does its work, then answers HTTP `status`."""
        self.script[operation].append(f"stored:{status}")

    def _new_comment(self, post: str, text: str, actor: str, parent: str | None) -> str:
        made = self.__dict__.setdefault("_comments_made", count(1))
        number = 6636062862760562000 + next(made)
        activity = post.replace("urn:li:share:", "urn:li:activity:")
        urn = f"urn:li:comment:({activity},{number})"
        self.comments.append(
            {
                "urn": urn,
                "id": str(number),
                "post": post,
                "actor": actor,
                "text": text,
                "parent": parent,
                "time": 1_795_000_000_000 + len(self.comments) * 1000,
            }
        )
        return urn

    def _element(self, comment: dict[str, Any]) -> dict[str, Any]:
        element = {
            "$URN": comment["urn"],
            "commentUrn": comment["urn"],
            "id": comment["id"],
            "actor": comment["actor"],
            "object": comment["post"],
            "message": {"text": comment["text"], "attributes": []},
            "created": {"actor": comment["actor"], "time": comment["time"]},
        }
        if comment["parent"]:
            element["parentComment"] = comment["parent"]
        return element

    def _comment_handlers(self, call: Call) -> dict[str, Any]:
        def stored(status: int, body: Any, headers: dict) -> tuple[int, Any, dict]:
            if call.behaviour.startswith("stored:"):
                code = int(call.behaviour.split(":")[1])
                return code, self.failure(call, code), {}
            return status, body, headers

        def listed(payload: dict, query: dict, urn: str) -> tuple[int, Any, dict]:
            try:
                start, count = int(query.get("start") or 0), int(query.get("count") or 10)
            except ValueError:
                return 400, {"status": 400, "message": "start and count must be numbers"}, {}
            if start < 0 or not 0 < count <= 100:
                return 400, {"status": 400, "message": "count must be from 1 to 100"}, {}
            with self.lock:
                if urn.startswith("urn:li:comment:"):
                    if not any(c["urn"] == urn for c in self.comments):
                        return 404, {"status": 404, "message": f"no comment {urn}"}, {}
                    under = [c for c in self.comments if c["parent"] == urn]
                else:
                    if not any(p.urn == urn for p in self.posts):
                        return 404, {"status": 404, "message": f"no post {urn}"}, {}
                    under = [c for c in self.comments if c["post"] == urn and not c["parent"]]
                if self.comments_newest_first:
                    under = under[::-1]
                page = [self._element(c) for c in under[start : start + count]]
            paging = {"start": start, "count": count, "total": len(under), "links": []}
            return 200, {"elements": page, "paging": paging}, {}

        def made(payload: dict, query: dict, urn: str) -> tuple[int, Any, dict]:
            text = str((payload.get("message") or {}).get("text") or "")
            actor, target = str(payload.get("actor") or ""), str(payload.get("object") or "")
            if not text.strip() or not actor.startswith(("urn:li:person:", "urn:li:organization:")):
                return 400, {"status": 400, "message": "actor and message.text are required"}, {}
            if len(text) > 1250:
                return 400, {"status": 400, "message": "message.text is too long"}, {}
            with self.lock:
                parent = payload.get("parentComment")
                if urn.startswith("urn:li:comment:"):
                    comment = next((c for c in self.comments if c["urn"] == urn), None)
                    if comment is None:
                        return 404, {"status": 404, "message": f"no comment {urn}"}, {}
                    if parent != urn or target != comment["post"]:
                        return 400, {"status": 400, "message": "parentComment must be the "
                                     "comment of the path, object its post"}, {}  # fmt: skip
                elif not any(p.urn == urn for p in self.posts) or target != urn:
                    return 404, {"status": 404, "message": f"no post {urn}"}, {}
                new = self._new_comment(target, text, actor, parent)
                element = self._element(self.comments[-1])
            return stored(201, element, {"x-restli-id": new.rsplit(",", 1)[1].rstrip(")")})

        return {"comments": listed, "comment": made}


SCOPE_OF.update(
    {
        "comments": ("r_member_social", "r_organization_social"),
        "comment": ("w_member_social", "w_organization_social"),
    }
)
