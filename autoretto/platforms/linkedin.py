"""LinkedIn (Videos API + Posts API) as the member or an organisation, PLATFORMS.md §4.

1. `POST /rest/videos?action=initializeUpload` gives the video URN, an upload token and the
   upload instructions (parts of about 4 MiB), saved on the attempt (`save_handles`) before any
   byte is sent.
2. Each part is `PUT` to its upload URL; its `ETag` is saved as soon as it arrives, so a retry
   sends only the parts still missing.
3. `POST /rest/videos?action=finalizeUpload` with the ETags in order; the video is polled with
   bounded waits until it is `AVAILABLE` (`PROCESSING_FAILED` rejects the episode).
4. `POST /rest/posts` with the commentary (escaped "little text") and the video; 201 carries
   the post URN in `x-restli-id`.

Never twice: the commentary ends with the marker of the post's first upload, and every later
try sends exactly the same commentary. LinkedIn answers a repeat with 422 "Content is a
duplicate of urn:li:share:…", which names the earlier post: that is taken as published. After a
lost answer, `find_attempt` lists the author's recent posts (this needs `r_member_social` or
`r_organization_social`; without it a person confirms) and matches the marker.

Cap: `daily_cap` posts per UTC day (LinkedIn's own member and app limits are unpublished and
reset at midnight UTC), counted in the database before the call with the posts on their way
(they may be live already). Access tokens last 60 days; only Marketing Developer Platform
partners get refresh tokens, which are used when present. A 401 marks the account `reconnect`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote, urlsplit

from .. import accounts
from ..clock import from_iso, iso, parse_duration
from ..errors import AutorettoError, UsageError
from ..oauth import json_body, retry_after
from .base import (
    CannotAsk,
    CarouselSpec,
    Comment,
    CommentGone,
    CommentPage,
    ContentRejected,
    LimitReached,
    LostAnswer,
    NeedsPerson,
    PassingError,
    PlatformError,
    PostRequest,
    Published,
    ReplyRequest,
    UsageLedger,
    carousel_view,
    find_marked,
    marked_texts,
    posts_toward_cap,
)
from .http import AccountPlatform
from .meta import moment_cursor, reached_known
from .signin import (
    CLIENT_FILE_FLAGS,
    CLIENT_FILE_SECRET,
    REDIRECT_FLAG,
    Attempt,
    Draft,
    Flag,
    SignIn,
)
from .text import TextField, chars, linkedin_escaped
from .versions import sunset_reason

log = logging.getLogger("autoretto.platforms.linkedin")

NAME = "linkedin"
POST_URL = "https://www.linkedin.com/feed/update/{}/"
MEMBER_SCOPES = ("openid", "profile", "w_member_social")
ORGANIZATION_SCOPES = ("w_organization_social",)
_RESERVED = re.compile(r"([\\|{}@\[\]()<>#*_~])")
_POST_URN = re.compile(r"urn:li:(?:share|ugcPost):[0-9A-Za-z_-]+")
_ORGANIZATION = re.compile(r"urn:li:organization:[0-9]+")
#: what an upload link that has expired (or was refused) answers: a new upload
EXPIRED_PART = (400, 403, 404, 410)
#: the refusals of a request LinkedIn understood and will not take; any other 4xx is passing
# (https://learn.microsoft.com/linkedin/shared/api-guide/concepts/error-handling)
REFUSED_STATUSES = (400, 409, 413, 415, 422)


def escape_little_text(text: str) -> str:
    """`text` as LinkedIn's "little text" shows it literally: a backslash before each reserved
    character."""
    return _RESERVED.sub(r"\\\1", text)


class LinkedInPlatform(AccountPlatform):
    name = NAME
    title = "LinkedIn"
    # the commentary is "little text", 3,000 characters counted after escaping (PLATFORMS.md);
    # no title limit is published: 200 is conservative
    text_fields: ClassVar[dict[str, TextField] | None] = {
        "title": TextField("title", (("characters", chars, 200),)),
        "commentary": TextField("description", (("escaped characters", linkedin_escaped, 3000),)),
    }
    can_find_attempts = True
    #: a new post takes a while to show in the author's listing
    look_delay: ClassVar[timedelta] = timedelta(minutes=5)
    # Versions are monthly (YYYYMM) and each is served "for a minimum of one year"
    # (https://learn.microsoft.com/linkedin/marketing/versioning); the sunset dates are the
    # migrations table's (https://learn.microsoft.com/linkedin/marketing/integrations/migrations).
    # The default is the newest version that table lists as Active: 202607, until 2027-07-15
    # (read 2026-12 through api-evangelist/linkedin-ads lifecycle/linkedin-ads-lifecycle.yml,
    # which copies that table; 202604-202607 are dated there).
    api_version: ClassVar[str | None] = "202607"
    api_versions: ClassVar[dict[str, str | None]] = {
        "202510": "2026-10-15",
        "202511": "2026-11-16",
        "202601": "2027-01-15",
        "202602": "2027-02-15",
        "202603": "2027-03-16",
        "202604": "2027-04-15",
        "202605": "2027-05-15",
        "202606": "2027-06-15",
        "202607": "2027-07-15",
    }
    api_version_source: ClassVar[str] = (
        "https://learn.microsoft.com/linkedin/marketing/integrations/migrations"
    )
    api_version_pattern: ClassVar[str] = r"20[0-9]{2}(0[1-9]|1[0-2])(\.[0-9]{2})?"
    api_version_example: ClassVar[str] = "202607"
    api_version_aliases: ClassVar[tuple[str, ...]] = ("version",)
    settings_defaults: ClassVar[dict[str, Any]] = {
        "api_base": "https://api.linkedin.com",
        "auth_uri": "https://www.linkedin.com/oauth/v2/authorization",
        "token_uri": "https://www.linkedin.com/oauth/v2/accessToken",
        "api_version": "",  # the LinkedIn-Version header, YYYYMM; empty: the one declared below
        "version": "",  # the older name of api_version, still honoured
        "redirect_uri": "https://localhost/",
        "client_file": "linkedin_client.json",
        "extra_scopes": [],  # e.g. ["r_member_social"] when the app has it (lets posts be found)
        "format": "landscape",  # which of the episode's videos
        "visibility": "PUBLIC",  # PUBLIC | CONNECTIONS (members only)
        "daily_cap": 10,  # posts per UTC day
        "timeout": 60,
        "upload_timeout": 300,  # seconds per part
        "poll_wait": "10s",
        "poll_tries": 30,
        "find_count": 50,
        # comments and replies (issue 28): REST calls per author and UTC day, and pages a read
        # of one post takes at most
        "comment_calls_per_day": 500,
        "comment_pages": 10,
    }
    address_settings = ("api_base", "auth_uri", "token_uri")
    setting_choices: ClassVar[dict[str, tuple[str, ...]]] = {
        "visibility": ("PUBLIC", "CONNECTIONS")
    }
    positive_settings = ("poll_tries", "find_count", "comment_pages")
    duration_settings = ("poll_wait",)

    # 3-legged OAuth and OpenID Connect: https://learn.microsoft.com/linkedin/shared/authentication/authorization-code-flow
    signin: ClassVar[SignIn] = SignIn(
        help="""Connect LinkedIn once (as yourself, or an organisation you administer).

        Needs a LinkedIn app with "Sign In with LinkedIn using OpenID Connect" and "Share on
        LinkedIn" (the Community Management API for an organisation), and its redirect address
        (default https://localhost/) listed under Authorized redirect URLs. LinkedIn sign-ins
        last 60 days; connect again before then.

        Example: autoretto connect linkedin --client-file ~/linkedin_client.json
        """,
        flags=(
            *CLIENT_FILE_FLAGS,
            Flag(
                "--organization",
                "Post as this organisation (urn:li:organization:ID) that you administer, "
                "instead of as yourself.",
            ),
            REDIRECT_FLAG,
        ),
        id_key="client_id",
        client_file=True,
        secret=CLIENT_FILE_SECRET,
    )

    @classmethod
    def check_sign_in(cls, attempt: Attempt) -> None:
        """UsageError unless `--organization` is absent or an organisation URN."""
        organization = attempt.given.get("organization")
        if organization is not None and not _ORGANIZATION.fullmatch(organization):
            raise UsageError(
                f'"{organization}" is not an organisation URN; write it like '
                "urn:li:organization:12345678 (the number is in the Page admin address)"
            )

    @classmethod
    def sign_in_scopes(cls, settings: dict[str, Any], given: dict[str, Any]) -> list[str]:
        organization = given.get("organization") is not None
        scopes = list(MEMBER_SCOPES) + (list(ORGANIZATION_SCOPES) if organization else [])
        return scopes + [s for s in settings.get("extra_scopes") or [] if s not in scopes]

    @classmethod
    def signed_in(cls, attempt: Attempt) -> Draft:
        """The member read from OpenID `userinfo`; the author is the member or the organisation."""
        settings, answer = attempt.settings, attempt.answer
        organization = attempt.given.get("organization")
        url = f"{settings['api_base'].rstrip('/')}/v2/userinfo"
        what = "say who signed in"
        member = cls.sign_in_call(attempt, "GET", url, what=what, token=answer["access_token"])
        if not member.get("sub"):
            raise AutorettoError(f"LinkedIn did not {what}")
        member_urn = f"urn:li:person:{member['sub']}"
        granted = attempt.granted()
        wanted = "w_organization_social" if organization else "w_member_social"
        if granted and wanted not in granted:
            raise AutorettoError(
                f"LinkedIn did not grant {wanted}; add the product that offers it to the app "
                "(Share on LinkedIn, or the Community Management API), then connect again"
            )
        expires_at = attempt.ends("expires_in")
        tokens = {
            "access_token": str(answer["access_token"]),
            "expires_at": expires_at,
            "refresh_token": answer.get("refresh_token"),
            "client_id": attempt.client.id,
            "client_secret": attempt.client.secret,
            "token_uri": settings["token_uri"],
            "scopes": granted,
        }
        author = organization or member_urn
        name = str(member.get("name") or member_urn)
        name = f"{organization} (as {name})" if organization else name
        lines = [f'Connected LinkedIn: posting as "{name}" ({author}).']
        if expires_at and not answer.get("refresh_token"):
            lines.append(
                "LinkedIn sign-ins cannot be renewed unattended: connect again before "
                f"{expires_at}."
            )
        return Draft(
            account_id=author,
            name=name,
            tokens=tokens,
            meta={
                "author": author,
                "member": member_urn,
                "organization": organization,
                "scopes": granted,
                "token_expires_at": expires_at,
                "refreshable": bool(answer.get("refresh_token")),
                "refresh_expires_at": attempt.ends("refresh_token_expires_in"),
            },
            lines=lines,
        )

    @classmethod
    def setting_problems(cls, settings: dict[str, Any]) -> list[tuple[str, str]]:
        if not all(isinstance(scope, str) for scope in settings["extra_scopes"]):
            return [("extra_scopes", "must be a list of scope names")]
        return []

    @classmethod
    def version_ends(cls, version: str) -> tuple[Any, bool]:
        """A version missing from the published table is taken to be served one year from its
        month, to the 15th (LinkedIn's own sunsets fall mid-month): an estimate."""
        ends, estimated = super().version_ends(version)
        if ends is not None or version in cls.api_versions:
            return ends, estimated
        found = re.fullmatch(r"(20[0-9]{2})(0[1-9]|1[0-2]).*", version)
        if not found:
            return None, False
        return date(int(found.group(1)) + 1, int(found.group(2)), 15), True

    # -- readiness ---------------------------------------------------------------------------

    def not_ready_reason(self) -> str | None:
        return super().not_ready_reason() or self._expired_reason(self.account_row())

    def _expired_reason(self, account: accounts.Account) -> str | None:
        """Why the sign-in can no longer be used: expired with no refresh token to renew it."""
        expires_at = account.meta.get("token_expires_at")
        if not expires_at or account.meta.get("refreshable") or from_iso(expires_at) > self.now:
            return None
        return (
            f"the LinkedIn sign-in expired at {expires_at} (LinkedIn sign-ins last 60 days); "
            f"{accounts.reconnect_hint(NAME)}"
        )

    def limit_reason(self, request: PostRequest) -> str | None:
        if self.context.db is None:
            return None
        cap = self.settings["daily_cap"]
        midnight = self.now.replace(hour=0, minute=0, second=0, microsecond=0)
        used = posts_toward_cap(self.db, NAME, midnight, request.post_id)
        if used >= cap:
            return (
                f"the LinkedIn daily cap of {cap} posts is reached (daily_cap; {used} since "
                "midnight UTC)"
            )
        return None

    # -- HTTP ----------------------------------------------------------------------------------

    def headers(self) -> dict[str, str]:
        return {"LinkedIn-Version": self.speaks_version, "X-Restli-Protocol-Version": "2.0.0"}

    def author(self) -> str:
        account = self.account()
        return str(account.meta.get("author") or account.account_id)

    def tokens(self, rejected: str | None = None) -> accounts.Tokens:
        """The account's tokens; a sign-in past its 60 days with no refresh token to renew it
        marks the account `reconnect`."""
        expired = self._expired_reason(self.account())
        if expired:
            accounts.mark_reconnect(self.db, NAME, expired)
            raise NeedsPerson(expired)
        return super().tokens(rejected)

    def token_refused(self, response: Any) -> bool:
        # Only Marketing Developer Platform partners get refresh tokens: without one a refused
        # token is a reconnect at once, not a refresh.
        return response.status_code == 401 and bool(self.tokens().get("refresh_token"))

    def _rest(self, method: str, path: str, **arguments: Any) -> Any:
        return self.call(method, self.url(f"/rest/{path}"), **arguments)

    def classify(self, response: Any, *, sends: bool = False) -> PlatformError:
        """PLATFORMS.md §4: a sunset version or a 403 needs a person, a 429 longer than the run
        waits is the day's limit, any other 4xx outside REFUSED_STATUSES is passing; the rest
        goes by the status ladder."""
        status = response.status_code
        said = self.said(response)
        if status == 426 or self.problem(response)[0] == "NONEXISTENT_VERSION":
            # A sunset or unknown LinkedIn-Version: no retry can help, a person must act.
            # https://learn.microsoft.com/linkedin/marketing/versioning
            return NeedsPerson(sunset_reason(type(self), self.speaks_version, said))
        if status == 403:
            return NeedsPerson(
                f"LinkedIn refused: {said}; the connected account needs the permission (and, for "
                f"an organisation, an admin or content-admin role): {accounts.reconnect_hint(NAME)}"
            )
        if status == 429:
            wait = retry_after(response)
            if wait is not None and wait <= self.context.retry.max_wait:
                return PassingError(f"LinkedIn asked to slow down ({said})", retry_after=wait)
            return LimitReached(
                f"LinkedIn's daily limit for this member or app is used ({said}); it resets at "
                "midnight UTC"
            )
        if 401 < status < 500 and status not in REFUSED_STATUSES:
            return PassingError(f"LinkedIn answered HTTP {status} ({said})")
        return super().classify(response, sends=sends)

    # -- publish -------------------------------------------------------------------------------

    def _publish(self, request: PostRequest) -> Published:
        video = self.video_file(request.episode)
        self.author()  # the account, before anything is sent
        return self.retrying(lambda: self._attempt(request, video))

    def _attempt(self, request: PostRequest, video: Path) -> Published:
        author = self.author()
        handles = self.handles(request)
        if handles.get("post"):
            return _published(handles["post"])
        size = video.stat().st_size
        fresh = handles.get("size") != size or handles.get("owner") != author
        if not handles.get("video") or fresh:
            self._initialize(request, size, author)
        if not self.handles(request).get("finalized"):
            self._upload_parts(request, video)
            self._finalize(request)
        self._wait_until_available(request)
        return self._post(request, author)

    def _initialize(self, request: PostRequest, size: int, author: str) -> None:
        answer = self._rest(
            "POST",
            "videos",
            params={"action": "initializeUpload"},
            json={
                "initializeUploadRequest": {
                    "owner": author,
                    "fileSizeBytes": size,
                    "uploadCaptions": False,
                    "uploadThumbnail": False,
                }
            },
        )
        value = json_body(answer).get("value") or {}
        instructions = [
            {"url": str(i["uploadUrl"]), "first": int(i["firstByte"]), "last": int(i["lastByte"])}
            for i in value.get("uploadInstructions") or []
        ]
        if not value.get("video") or not instructions:
            raise PassingError("LinkedIn started an upload without a video or upload links")
        # The first upload's marker stays for every later try: the commentary never changes,
        # so LinkedIn can tell a repeat and name the earlier post.
        self.save(
            request,
            {
                "video": str(value["video"]),
                "upload_token": str(value.get("uploadToken") or ""),
                "instructions": instructions,
                "etags": [None] * len(instructions),
                "size": size,
                "owner": author,
                "marker": self.first_marker(request),
            },
        )
        log.info("linkedin: video %s registered for post %s", value["video"], request.post_id)

    def _start_over(self, request: PostRequest, why: str) -> PassingError:
        """Forget the upload (keeping the marker): the next try registers a new video."""
        self.save(request, {"marker": self.first_marker(request)})
        return PassingError(f"{why}; the next try uploads the video again")

    def _upload_parts(self, request: PostRequest, video: Path) -> None:
        handles = self.handles(request)
        etags = list(handles["etags"])
        with open(video, "rb") as source:
            for index, part in enumerate(handles["instructions"]):
                if etags[index]:
                    continue  # sent by an earlier try
                source.seek(part["first"])
                answer = self.call(
                    "PUT",
                    part["url"],
                    signed=self._trusted(part["url"]),
                    accept=EXPIRED_PART,
                    data=source.read(part["last"] - part["first"] + 1),
                    headers={"Content-Type": "application/octet-stream"},
                    timeout=self.settings["upload_timeout"],
                )
                request.heartbeat()
                if answer.status_code in EXPIRED_PART:
                    raise self._start_over(
                        request, f"LinkedIn refused part {index + 1} of the upload"
                    )
                etag = answer.headers.get("ETag")
                if not etag:
                    raise PassingError(f"LinkedIn took part {index + 1} without an ETag")
                etags[index] = etag
                self.save(request, {**self.handles(request), "etags": list(etags)})

    def _trusted(self, url: str) -> bool:
        """The upload links are signed; the token goes only to LinkedIn itself."""
        host = urlsplit(url).hostname or ""
        api_host = urlsplit(self.settings["api_base"]).hostname
        return host in (api_host, "linkedin.com") or host.endswith(".linkedin.com")

    def _finalize(self, request: PostRequest) -> None:
        handles = self.handles(request)
        try:
            self._rest(
                "POST",
                "videos",
                params={"action": "finalizeUpload"},
                json={
                    "finalizeUploadRequest": {
                        "video": handles["video"],
                        "uploadToken": handles["upload_token"],
                        "uploadedPartIds": handles["etags"],
                    }
                },
            )
        except (PassingError, ContentRejected) as problem:
            # A finalize whose answer was lost, or one repeated, fails; the video knows.
            status, _ = self._video(handles["video"])
            if status is None or (
                status == "WAITING_UPLOAD" and isinstance(problem, ContentRejected)
            ):
                raise self._start_over(
                    request, f"finishing the upload failed ({problem})"
                ) from None
            if status == "WAITING_UPLOAD":
                raise problem
        self.save(request, {**handles, "finalized": True})

    def _video(self, video: str) -> tuple[str | None, dict[str, Any]]:
        """The video's status (AVAILABLE, PROCESSING, WAITING_UPLOAD, PROCESSING_FAILED, …) and
        its resource; (None, {}) when LinkedIn does not know it."""
        answer = self._rest("GET", f"videos/{quote(video, safe='')}", accept=(404,))
        if answer.status_code == 404:
            return None, {}
        body = json_body(answer)
        return str(body.get("status") or ""), body

    def _wait_until_available(self, request: PostRequest) -> None:
        video = self.handles(request)["video"]
        wait = parse_duration(self.settings["poll_wait"]).total_seconds()
        last = "it is still processing"
        for poll in range(self.settings["poll_tries"]):
            if poll:
                self.sleep(wait)
            request.heartbeat()
            try:
                status, resource = self._video(video)
            except PassingError as error:
                last = error.reason
                continue
            if status == "AVAILABLE":
                return
            if status == "PROCESSING_FAILED":
                why = resource.get("processingFailureReason") or "no reason given"
                # A fixed episode starts a new upload; the marker stays.
                self.save(request, {"marker": self.first_marker(request)})
                raise ContentRejected(f"LinkedIn could not process the video: {why}")
            if status is None:
                raise self._start_over(request, "LinkedIn no longer knows the video")
            last = f"video status {status}"
        raise PassingError(f"LinkedIn's video {video} is not ready ({last}); nothing is posted yet")

    def _post(
        self, request: PostRequest, author: str, content: dict[str, Any] | None = None
    ) -> Published:
        """The one irreversible step. A lost answer here may mean the post is live. `content`:
        a carousel's images (else the video the handles name, with the episode's title)."""
        handles = self.handles(request)
        marker = self.first_marker(request)
        episode = request.episode if content is None else carousel_view(request.episode)
        title, commentary = marked_texts(
            type(self), episode, marker, "commentary", fallback=episode.title
        )
        body = {
            "author": author,
            "commentary": escape_little_text(commentary),
            "visibility": self.settings["visibility"],
            "distribution": {
                "feedDistribution": "MAIN_FEED",
                "targetEntities": [],
                "thirdPartyDistributionChannels": [],
            },
            "content": content or {"media": {"title": title, "id": handles["video"]}},
            "lifecycleState": "PUBLISHED",
            "isReshareDisabledByAuthor": False,
        }
        answer = self._rest("POST", "posts", json=body, sends=True, check=False)
        if answer.status_code == 201:
            urn = answer.headers.get("x-restli-id") or answer.headers.get("x-linkedin-id")
            if not urn:
                raise LostAnswer("LinkedIn took the post without naming it")
        elif answer.status_code == 422 and (earlier := self._duplicate_of(answer)):
            log.info("linkedin: post %s is already live as %s", request.post_id, earlier)
            urn = earlier
        else:
            raise self.classify(answer, sends=True)
        self.save(request, {**handles, "post": urn})
        return _published(urn)

    def _duplicate_of(self, answer: Any) -> str | None:
        """The earlier post a 422 "Content is a duplicate of urn:li:share:…" names."""
        text = self.problem(answer)[1]
        found = _POST_URN.search(text) if "duplicate" in text.lower() else None
        return found.group(0) if found else None

    # -- carousels (issue 29) ------------------------------------------------------------------

    #: a multi-image post of 2 to 20 images, each registered with the Images API
    #: (`POST /rest/images?action=initializeUpload`, then the bytes PUT to its uploadUrl) and
    #: named in `content.multiImage.images` with its alt text
    #: (https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/multiimage-post-api
    #: and .../shares/images-api). The Images API names pixels, not bytes (under 36,152,320
    #: pixels): 8 MB is Autoretto's own bound.
    carousel = CarouselSpec(
        least=2,
        most=20,
        size=(1080, 1350),
        max_bytes=8 * 1024 * 1024,
        source="https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/multiimage-post-api",
        alt_text=True,
    )

    def _publish_carousel(self, request: PostRequest) -> Published:
        self.author()  # the account, before anything is sent
        return self.retrying(lambda: self._carousel_attempt(request))

    def _carousel_attempt(self, request: PostRequest) -> Published:
        """Each card registered and uploaded (kept on the handles: an image no post names is
        no post), then the one multi-image post."""
        author = self.author()
        handles = self.handles(request)
        if handles.get("post"):
            return _published(handles["post"])
        if handles.get("owner") not in (None, author):
            handles = {"marker": self.first_marker(request)}  # another account: start over
        images: list[str | None] = list(handles.get("images") or [None] * len(request.images))
        for index, image in enumerate(request.images):
            if images[index]:
                continue
            images[index] = self._upload_image(request, author, Path(image.path))
            handles = {
                **self.handles(request),
                "images": images,
                "owner": author,
                "marker": self.first_marker(request),
            }
            self.save(request, handles)
        content = {
            "multiImage": {
                "images": [
                    {"id": urn, "altText": image.alt[:1000]}
                    for urn, image in zip(images, request.images, strict=True)
                ]
            }
        }
        return self._post(request, author, content)

    def _upload_image(self, request: PostRequest, author: str, picture: Path) -> str:
        answer = self._rest(
            "POST",
            "images",
            params={"action": "initializeUpload"},
            json={"initializeUploadRequest": {"owner": author}},
        )
        value = json_body(answer).get("value") or {}
        url, urn = value.get("uploadUrl"), value.get("image")
        if not url or not urn:
            raise PassingError("LinkedIn registered an image without its upload link or URN")
        self.call(
            "PUT",
            str(url),
            signed=self._trusted(str(url)),
            data=picture.read_bytes(),
            headers={"Content-Type": "application/octet-stream"},
            timeout=self.settings["upload_timeout"],
        )
        request.heartbeat()
        return str(urn)

    # -- finding an attempt --------------------------------------------------------------------

    def _find_attempt(self, request: PostRequest) -> Published | None:
        author = self.author()
        handles = self.handles(request)
        if handles.get("post"):
            path = f"posts/{quote(handles['post'], safe='')}"
            if self._rest("GET", path, accept=(403, 404)).status_code == 200:
                return _published(handles["post"])
        answer = self._rest(
            "GET",
            "posts",
            params={
                "q": "author",
                "author": author,
                "count": self.settings["find_count"],
                "sortBy": "LAST_MODIFIED",
            },
            headers={"X-RestLi-Method": "FINDER"},
            accept=(403,),
        )
        if answer.status_code == 403:
            raise CannotAsk(
                "LinkedIn lists an author's posts only for apps with the r_member_social "
                "(or r_organization_social) permission, so Autoretto cannot look"
            )
        posts = [[post for post in json_body(answer).get("elements") or [] if post.get("id")]]
        markers = (request.marker, handles.get("marker"))
        found = find_marked(posts, markers, lambda post: str(post.get("commentary") or ""))
        return _published(str(found["id"])) if found else None

    # -- comments and replies (issue 28) ---------------------------------------------------
    # The Comments API (https://learn.microsoft.com/linkedin/marketing/community-management/
    # shares/comments-api): `GET /rest/socialActions/{post urn}/comments` (start/count paging)
    # needs r_member_social, a restricted permission LinkedIn grants to select developers only
    # (r_organization_social for an organisation); `POST /rest/socialActions/{comment urn}/
    # comments` with `parentComment` answers a comment and needs w_member_social
    # (w_organization_social). Only the comments under the post itself are read; the replies
    # of others under them are not (each would be a call of its own).
    comments: ClassVar[str | None] = "reply"
    comment_scope: ClassVar[str] = (
        "r_member_social and w_member_social (r_organization_social and w_organization_social "
        "for an organisation)"
    )
    # LinkedIn's page gives no longest comment; tools built on the API document 1,250
    # characters (https://docs.upload-post.com/resources/character-limits/)
    reply_length: ClassVar[int] = 1250
    reply_links: ClassVar[bool] = True
    reply_disclosure: ClassVar[str | None] = None  # LinkedIn asks none of a comment
    # LinkedIn's member and app limits are unpublished and reset at midnight UTC
    # (https://learn.microsoft.com/linkedin/shared/api-guide/concepts/rate-limits): a person's
    # pace of comments, far below anything it has answered with 429
    replies_per_day: ClassVar[int] = 30

    def _comment_rest(
        self, method: str, path: str, *, sends: bool = False, **arguments: Any
    ) -> Any:
        """One counted REST call of the comments: its answer, or the comment's error (403: the
        permission, named; 404/410: the comment or post is gone; the rest as a post's)."""
        allowance = int(self.settings["comment_calls_per_day"])
        if not UsageLedger(NAME).charge(self.db, self.author(), "comment_calls", 1, allowance):
            raise LimitReached(
                f"LinkedIn's comment calls for today are used ({allowance}, comment_calls_per_day "
                "of [platforms.linkedin]); they go on after midnight UTC"
            )
        answer = self._rest(method, path, sends=sends, check=False, **arguments)
        status = answer.status_code
        if status < 300:
            return answer
        if status == 403:
            raise NeedsPerson(
                f"LinkedIn refused the comments ({self.said(answer)}): they need the "
                f"{self.comment_scope} permission; {accounts.reconnect_hint(NAME)} and allow it"
            )
        if status in (404, 410):
            raise CommentGone(f"LinkedIn no longer has it: the comment was deleted ({status})")
        raise self.classify(answer, sends=sends)

    def _comment_page(self, urn: str, start: int) -> list[dict[str, Any]]:
        """The comments under `urn` (a post's or a comment's) from `start`: one counted call,
        passing trouble retried."""
        path = f"socialActions/{quote(urn, safe='')}/comments"
        params = {"start": start, "count": COMMENT_COUNT}
        answer = self.retrying(lambda: self._comment_rest("GET", path, params=params))
        elements = json_body(answer).get("elements")
        return [e for e in elements if isinstance(e, dict)] if isinstance(elements, list) else []

    def _read_comments(self, post_id: str, cursor: str | None) -> Iterator[CommentPage]:
        """The comments under our post `post_id` newer than the time `cursor` (the newest
        comment the last read kept; None: all): pages of `COMMENT_COUNT` from `start` 0, at most
        `comment_pages`. LinkedIn's page does not say in which order it lists them, so a read
        stops where it meets the comments it read before when they come newest first, else at
        the last page; the cursor moves only on the read's last page (a read cut short is done
        again; comments are stored once whatever the overlap)."""
        known = moment_cursor(cursor)
        newest, start = known, 0
        author = self.author()
        pages = self.settings["comment_pages"]
        for number in range(pages):
            elements = self._comment_page(post_id, start)
            found = [_comment(element, post_id, author) for element in elements if _urn_of(element)]
            times = [c.published_at for c in found if c.published_at]
            newest = max([t for t in (newest, *times) if t], default=None)
            start += len(elements)
            last = (
                len(elements) < COMMENT_COUNT or number == pages - 1
                or reached_known(times, known)
            )  # fmt: skip
            yield CommentPage(tuple(found), newest if last else None)
            if last:
                return

    def _reply(self, request: ReplyRequest) -> Published:
        """`POST /rest/socialActions/{comment urn}/comments` with `parentComment`: one call; an
        erring answer after it went out is a lost answer (looked for before anything else)."""
        author = self.author()
        comment = request.comment
        parent = comment.parent_id or comment.id  # LinkedIn nests one level deep
        body = {
            "actor": author,
            "object": comment.post_id,
            "message": {"text": request.text},
            "parentComment": parent,
        }
        answer = self._comment_rest(
            "POST", f"socialActions/{quote(parent, safe='')}/comments", json=body, sends=True
        )
        made = json_body(answer)
        urn = _urn_of(made) or answer.headers.get("x-restli-id") or ""
        if not urn:
            raise LostAnswer("LinkedIn took the reply without naming it; it may have gone out")
        return Published(urn, POST_URL.format(comment.post_id))

    def _find_reply(self, request: ReplyRequest) -> Published | None:
        """The author's comment with the reply's text under its comment; CannotAsk without the
        permission to read comments, None when the comment (and the reply with it) is gone."""
        author = self.author()
        comment = request.comment
        parent = comment.parent_id or comment.id
        start = 0
        for _ in range(self.settings["comment_pages"]):
            try:
                elements = self._comment_page(parent, start)
            except NeedsPerson as refused:
                raise CannotAsk(refused.reason) from None
            except CommentGone:
                return None
            for element in elements:
                text = str((element.get("message") or {}).get("text") or "")
                if element.get("actor") == author and text.strip() == request.text.strip():
                    return Published(_urn_of(element), POST_URL.format(comment.post_id))
            if len(elements) < COMMENT_COUNT:
                return None
            start += len(elements)
        return None


#: comments a page asks for
COMMENT_COUNT = 50


def _urn_of(element: dict[str, Any]) -> str:
    """A comment's URN (`commentUrn`, else `$URN`), "" when it names none."""
    return str(element.get("commentUrn") or element.get("$URN") or "")


def _comment(element: dict[str, Any], post_id: str, author: str) -> Comment:
    """The Comment of a LinkedIn comment under our post `post_id` (`author`: ours). LinkedIn
    names its author by URN only (a name needs a profile read of its own)."""
    created = element.get("created") if isinstance(element.get("created"), dict) else {}
    moment = created.get("time")
    when = iso(datetime.fromtimestamp(moment / 1000, UTC)) if isinstance(moment, int) else None
    actor = str(element.get("actor") or "")
    message = element.get("message") if isinstance(element.get("message"), dict) else {}
    parent = element.get("parentComment")
    return Comment(
        id=_urn_of(element),
        post_id=post_id,
        author=actor,
        text=str(message.get("text") or ""),
        published_at=when,
        author_id=actor,
        parent_id=str(parent) if parent else None,
        mine=actor == author,
    )


def _published(urn: str) -> Published:
    return Published(urn, POST_URL.format(urn))
