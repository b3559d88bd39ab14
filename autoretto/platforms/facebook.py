"""Facebook Reels on a Page (Graph API video_reels + rupload), PLATFORMS.md §2.

A reel is one Graph video object, so its `video_id` is the whole idempotency story:

1. `POST /{page}/video_reels upload_phase=start` gives the `video_id`, saved on the attempt
   (`save_handles`) before any byte is sent. An unfinished video is a private draft.
2. The bytes go to `{rupload}/video-upload/{version}/{video_id}` with `offset` / `file_size`
   headers; a dropped upload resumes at the `bytes_transfered` (sic) of the video's status, in
   this try or a later one.
3. `upload_phase=finish video_state=PUBLISHED` with the title and the description (ending with
   the attempt's marker). Finishing the same `video_id` twice cannot make a second reel, so a
   lost answer here is settled by the video's status, never by a new upload.
4. `GET /{video_id}?fields=status` is polled with bounded waits until `publishing_phase` says
   published; a reel still processing when they run out is a lost answer (it may go live on its
   own, and `find_attempt` asks again later).

`find_attempt` reads the saved video's status; without a video id it matches the marker in the
descriptions of the Page's recent reels. Cap: 30 API-published reels per Page in a rolling 24
hours (`daily_cap`), counted in the database before the call. The Page token (from a long-lived
user token) does not expire; a 190 error marks the account `reconnect`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar

from .. import accounts
from ..clock import iso, parse_duration
from ..errors import AutorettoError
from ..oauth import json_body, retry_after
from .base import (
    CarouselSpec,
    Comment,
    CommentGone,
    CommentPage,
    ContentRejected,
    EpisodeView,
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
    video_to_send,
)
from .meta import THROTTLE_CODES, GraphPlatform, as_int, graph_body, graph_problem
from .signin import (
    CLIENT_FILE_FLAGS,
    CLIENT_FILE_SECRET,
    REDIRECT_FLAG,
    Attempt,
    Draft,
    Flag,
    SignIn,
    choose,
)
from .text import TextField, chars

log = logging.getLogger("autoretto.platforms.facebook")

NAME = "facebook"
REEL_URL = "https://www.facebook.com/reel/{}"
SCOPES = (
    "pages_show_list",
    "pages_read_engagement",
    "pages_manage_posts",
    # comments (issue 28): reading what people write on the Page, answering it as the Page
    "pages_read_user_content",
    "pages_manage_engagement",
)
#: what reading and answering comments needs, named when Facebook refuses it (issue 28)
COMMENT_SCOPES = "pages_read_engagement, pages_read_user_content and pages_manage_engagement"
#: comment calls a UTC day, per Page
COMMENT_USAGE = UsageLedger(NAME)
#: the Page's own rate limit (Business Use Case: 80001), beside Meta's usual throttles
#: (https://developers.facebook.com/docs/graph-api/overview/rate-limiting)
_PAGE_THROTTLE_CODES = {80001}

# Video API error codes (PLATFORMS.md §2, [FB-VE]); checked before the generic Meta table.
_VIDEO_PASSING = {6000, 1363019, 1363030, 1363037}
_VIDEO_NEEDS_PERSON = {1363042}
_VIDEO_REJECTED = {1363022, 1363023}
# rupload error types that mean "ask the video where it stands, then go on from there"
_RUPLOAD_RESUME = {"OffsetInvalidError", "PartialRequestError"}
_FAILED_VIDEO_STATUSES = {"upload_failed", "expired"}
_UPLOADED_VIDEO_STATUSES = {"upload_complete", "processing", "ready"}


def reel_state(status: dict[str, Any]) -> str:
    """Where a reel stands by its `status`: `published`, `failed` (it cannot be processed: fix
    the episode), `gone` (the upload failed or expired: start a new one), `publishing` (finished,
    on its way), `uploaded` (bytes complete, not finished) or `uploading` (bytes missing)."""
    video_status = str(status.get("video_status") or "")
    uploading = status.get("uploading_phase") or {}
    processing = status.get("processing_phase") or {}
    publishing = status.get("publishing_phase") or {}
    if publishing.get("publish_status") == "published" or publishing.get("status") == "complete":
        return "published"
    if processing.get("status") == "error" or publishing.get("status") == "error":
        return "failed"
    if video_status in _FAILED_VIDEO_STATUSES or uploading.get("status") == "error":
        return "gone"
    if video_status == "error":
        return "failed"
    if publishing.get("status") == "in_progress" or publishing.get("publish_status") == "scheduled":
        return "publishing"
    if uploading.get("status") == "complete" or video_status in _UPLOADED_VIDEO_STATUSES:
        return "uploaded"
    return "uploading"


def bytes_received(status: dict[str, Any]) -> int:
    uploading = status.get("uploading_phase") or {}
    value = uploading.get("bytes_transfered", uploading.get("bytes_transferred", 0))
    return max(0, as_int(value) or 0)


def failure_text(status: dict[str, Any]) -> str:
    for phase in ("processing_phase", "publishing_phase", "uploading_phase"):
        error = (status.get(phase) or {}).get("error") or {}
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
    return f"video status {status.get('video_status') or 'unknown'}"


class FacebookPlatform(GraphPlatform):
    name = NAME
    title = "Facebook"
    # Reels: PLATFORMS.md publishes no caption limit; 100 and 2,200 are conservative
    texts_title: ClassVar[str | None] = "Facebook Reels"
    text_fields: ClassVar[dict[str, TextField] | None] = {
        "title": TextField("title", (("characters", chars, 100),)),
        "description": TextField("short", (("characters", chars, 2200),)),
    }
    can_find_attempts = True
    #: a reel may take a few minutes to show in the Page's listing
    look_delay: ClassVar[timedelta] = timedelta(minutes=2)
    api_version_aliases: ClassVar[tuple[str, ...]] = ("graph_version",)
    settings_defaults: ClassVar[dict[str, Any]] = {
        "graph_base": "https://graph.facebook.com",
        "rupload_base": "https://rupload.facebook.com",
        "auth_uri": "https://www.facebook.com/dialog/oauth",
        "api_version": "",  # the Graph API version; empty: the one GraphPlatform declares
        "graph_version": "",  # the older name of api_version, still honoured
        "redirect_uri": "https://localhost/",
        "client_file": "facebook_client.json",
        "daily_cap": 30,  # reels per Page in a rolling 24 hours
        "timeout": 60,  # seconds for every Graph call
        "upload_timeout": 600,  # seconds for sending the bytes
        "poll_wait": "10s",  # between status polls
        "poll_tries": 30,  # status polls after finishing, at most
        "resumes": 3,  # upload resumes inside one try
        "find_limit": 50,  # recent reels listed to find an attempt
        "comment_page": 100,  # comments asked a call (issue 28)
        "comment_reads": 1000,  # comment calls a UTC day at most, counted before each one
    }
    address_settings = ("graph_base", "rupload_base", "auth_uri")
    positive_settings = ("poll_tries", "find_limit")
    duration_settings = ("poll_wait",)

    # Facebook Login for a Page: https://developers.facebook.com/docs/pages-api/getting-started
    signin: ClassVar[SignIn] = SignIn(
        help="""Connect a Facebook Page for Reels once; cron posts to it from then on.

        Needs a Meta app with Facebook Login, its redirect address (default https://localhost/)
        listed under Valid OAuth Redirect URIs, and a Page on which you can create content.

        Example: autoretto connect facebook --client-file ~/facebook_client.json --page 1234567890
        """,
        flags=(
            *CLIENT_FILE_FLAGS,
            Flag("--page", "The id of the Page to post to (else you are asked)."),
            REDIRECT_FLAG,
        ),
        id_key="client_id",
        client_file=True,
        secret=CLIENT_FILE_SECRET,
        scopes=SCOPES,
        scope_separator=",",
    )

    @classmethod
    def exchange_code(cls, attempt: Attempt, code: str) -> dict[str, Any]:
        """The code becomes a short-lived user token, then a long-lived one (~60 days):
        https://developers.facebook.com/docs/facebook-login/guides/access-tokens/get-long-lived"""
        client = attempt.client
        app = {"client_id": client.id, "client_secret": client.secret}
        form = {**app, "redirect_uri": client.redirect_uri, "code": code}
        short = _connect_call(attempt, "oauth/access_token", form, "accept the sign-in")
        exchange = {"grant_type": "fb_exchange_token", **app}
        exchange["fb_exchange_token"] = short.get("access_token", "")
        return _connect_call(attempt, "oauth/access_token", exchange, "make a long-lived sign-in")

    @classmethod
    def signed_in(cls, attempt: Attempt) -> Draft:
        """The user's Pages listed; the chosen Page's token (which does not expire) kept."""
        listed = _connect_call(
            attempt,
            "me/accounts",
            {"fields": "id,name,access_token,tasks", "limit": 100},
            "list your Pages",
            str(attempt.answer.get("access_token") or "") or None,
        )
        pages = {
            str(p["id"]): p
            for p in listed.get("data") or []
            if p.get("id") and p.get("access_token")
        }
        if not pages:
            raise AutorettoError(
                "this Facebook account manages no Page that Autoretto was allowed to see; create "
                "a Page, or connect again and tick the Page on the permission screen"
            )
        picked = choose(
            [{"id": key, "name": str(p.get("name") or "")} for key, p in pages.items()],
            attempt.given.get("page"),
            person=attempt.person,
            title=cls.title,
            what="Page",
            flag="--page",
            prompt="Post to Page number",
        )
        chosen = pages[picked["id"]]
        tasks = chosen.get("tasks")
        if isinstance(tasks, list) and "CREATE_CONTENT" not in tasks:
            raise AutorettoError(
                f'your role on the Page "{chosen.get("name", chosen["id"])}" cannot create '
                "content; ask a Page admin for it, then connect again"
            )
        name = picked["name"] or picked["id"]
        return Draft(
            account_id=picked["id"],
            name=name,
            tokens={"access_token": str(chosen["access_token"]), "expires_at": None},
            meta={
                "page_id": picked["id"],
                "client_id": attempt.client.id,
                "scopes": list(SCOPES),
                "token_expires_at": None,  # a Page token from a long-lived user token lasts
                "user_token_expires_at": attempt.ends("expires_in"),
            },
            lines=[
                f'Connected the Facebook Page "{name}" ({picked["id"]}).',
                "Its Page token does not expire unless you change your password, lose your role "
                "on the Page, or remove the app.",
            ],
        )

    base_setting = "graph_base"
    #: rupload wants the Page token as "OAuth", not "Bearer"
    auth_scheme = "OAuth"
    #: a permission a Page action lacks leaves the account connected: the Page may post still
    permission_reconnects = False

    # -- readiness -------------------------------------------------------------------------

    def unsuitable_reason(self, episode: EpisodeView) -> str | None:
        if not episode.videos.get("reels"):
            return (
                "Facebook Reels take the episode's own vertical edit of 90 seconds or less, "
                "and this episode has none"
            )
        return None

    def limit_reason(self, request: PostRequest) -> str | None:
        if self.context.db is None:
            return None
        cap = self.settings["daily_cap"]
        since = self.now - timedelta(hours=24)
        used = posts_toward_cap(self.db, NAME, since, request.post_id)
        if used >= cap:
            return (
                f"Facebook takes at most {cap} reels per Page in 24 hours (daily_cap); "
                f"{used} went out since {iso(since)}"
            )
        return None

    # -- HTTP --------------------------------------------------------------------------------

    def own_error(self, code: int | None, subcode: int | None, said: str) -> PlatformError | None:
        if code in _VIDEO_PASSING:
            return PassingError(f"Facebook had trouble with the upload ({said})")
        if code in _VIDEO_NEEDS_PERSON:
            return NeedsPerson(
                f"Facebook says this Page may not post videos ({said}); "
                f"{accounts.reconnect_hint(NAME)} with a Page role that can create content"
            )
        if code in _VIDEO_REJECTED:
            return ContentRejected(f"Facebook refused the video file: {said}")
        return None

    # -- publish -----------------------------------------------------------------------------

    def _publish(self, request: PostRequest) -> Published:
        path = video_to_send(self, request.episode, "reels")
        self.tokens()
        return self.retrying(lambda: self._attempt(request, path))

    def _attempt(self, request: PostRequest, video: Path) -> Published:
        """One try: resume what the handles say, or start a new reel."""
        handles = dict(self.handles(request))
        size = video.stat().st_size
        video_id = handles.get("video_id")
        status = self._status(video_id) if video_id else None
        where = reel_state(status) if status is not None else "gone"
        if where == "published":
            return self._published(video_id)
        if where == "publishing":
            return self._after_finish(request, video_id)
        # A video Facebook could not process was reported when it failed; reaching it again
        # means a person fixed the episode, so it gets a new video.
        if where in ("gone", "failed") or handles.get("size") != size:
            video_id = self._start(request, size)
            status, where = None, "uploading"
        if where == "uploading":
            offset = bytes_received(status) if status is not None else 0
            self._upload(request, video_id, video, size, offset)
        return self._finish(request, video_id)

    def _status(self, video_id: str) -> dict[str, Any] | None:
        """The video's `status`, or None when Facebook says it does not exist. Any other refusal
        is an error (PassingError for a 400): the video may be there, so no second reel starts."""
        answer = self.call("GET", self.url(video_id), check=False, params={"fields": "status"})
        if answer.status_code == 400 and _no_such_object(answer):
            return None  # a draft Facebook dropped, or an id it never had
        try:
            body = self.checked(answer)
        except ContentRejected as error:
            raise PassingError(
                f"Facebook would not show reel {video_id} ({error.reason}); it is looked at "
                "again before anything is sent"
            ) from None
        status = body.get("status")
        return status if isinstance(status, dict) else {}

    def _start(self, request: PostRequest, size: int) -> str:
        page_id = self.account().account_id
        body = self.graph("POST", f"{page_id}/video_reels", data={"upload_phase": "start"})
        video_id = str(body.get("video_id") or "")
        if not video_id:
            raise PassingError("Facebook started an upload without a video id")
        # The marker of the first upload stays with the video: every try finishes it with the
        # same description, so the Page's listing can be matched against it.
        marker = self.first_marker(request)
        self.save(request, {"video_id": video_id, "size": size, "marker": marker})
        log.info("facebook: reel %s started for post %s", video_id, request.post_id)
        return video_id

    def _upload(
        self, request: PostRequest, video_id: str, video: Path, size: int, offset: int
    ) -> None:
        """Send the bytes from `offset`; after a drop ask the video where it stands and go on
        from there, at most `resumes` times in this try."""
        base = self.settings["rupload_base"].rstrip("/")
        url = f"{base}/video-upload/{self.speaks_version}/{video_id}"
        resumes = 0
        while offset < size:
            try:
                with open(video, "rb") as body:
                    body.seek(offset)
                    answer = self.call(
                        "POST",
                        url,
                        check=False,
                        data=body,
                        headers={
                            "offset": str(offset),
                            "file_size": str(size),
                            "Content-Type": "application/octet-stream",
                        },
                        timeout=self.settings["upload_timeout"],
                    )
                self._rupload_result(answer)
                return
            except PassingError as error:
                resumes += 1
                if resumes > self.settings["resumes"]:
                    raise PassingError(
                        f"the reel upload kept breaking ({error.reason}); the next try resumes it"
                    ) from None
                status = self._status(video_id)
                if status is None or reel_state(status) == "gone":
                    raise PassingError(
                        "Facebook dropped the unfinished upload; the next try starts a new one"
                    ) from None
                if reel_state(status) != "uploading":
                    return  # the last bytes landed; only the answer was lost
                offset = bytes_received(status)
                log.info("facebook: resuming reel %s at byte %s", video_id, offset)
            finally:
                request.heartbeat()

    def _rupload_result(self, answer: Any) -> None:
        body = json_body(answer)
        if answer.status_code < 400 and body.get("success"):
            return
        debug = body.get("debug_info")
        if isinstance(debug, dict):
            kind = str(debug.get("type") or "")
            said = str(debug.get("message") or kind)[:300]
            if kind in _RUPLOAD_RESUME or debug.get("retriable"):
                raise PassingError(f"the reel upload stopped ({said})")
            if kind == "ProcessingFailedError":
                raise ContentRejected(f"Facebook could not take the video file ({said})")
            raise PassingError(f"the reel upload was refused ({said})")
        if answer.status_code < 400:
            raise PassingError(f"Facebook answered the upload with HTTP {answer.status_code}")
        raise self.classify(answer)

    def _finish(self, request: PostRequest, video_id: str) -> Published:
        """Publish the uploaded video. From the moment this request leaves, the reel may be
        live: anything but a clear refusal is settled by the video's status."""
        page_id = self.account().account_id
        marker = self.first_marker(request)
        title, description = marked_texts(type(self), request.episode, marker, "description")
        try:
            self.graph(
                "POST",
                f"{page_id}/video_reels",
                sends=True,
                data={
                    "upload_phase": "finish",
                    "video_id": video_id,
                    "video_state": "PUBLISHED",
                    "title": title,
                    "description": description,
                },
            )
        except LostAnswer:
            log.warning("facebook: the answer to finishing reel %s was lost", video_id)
        return self._after_finish(request, video_id)

    def _after_finish(self, request: PostRequest, video_id: str) -> Published:
        """Poll the status with bounded waits until the reel is published."""
        wait = parse_duration(self.settings["poll_wait"]).total_seconds()
        problem = "it is still being processed"
        for poll in range(self.settings["poll_tries"]):
            if poll:
                self.sleep(wait)
            request.heartbeat()
            try:
                status = self._status(video_id)
            except PlatformError as error:
                problem = error.reason
                if isinstance(error, NeedsPerson):
                    break
                continue
            where = reel_state(status) if status is not None else "gone"
            if where == "published":
                return self._published(video_id)
            if where == "failed":
                why = failure_text(status or {})
                raise ContentRejected(f"Facebook could not process the reel: {why}")
            if where == "gone":
                problem = "Facebook no longer shows the video"
        raise LostAnswer(
            f"reel {video_id} was sent for publishing but not seen published ({problem}); "
            "it is looked for before any retry"
        )

    def _published(self, video_id: str) -> Published:
        return Published(str(video_id), REEL_URL.format(video_id))

    # -- carousels (issue 29) --------------------------------------------------------------------

    #: a multi-photo Page post: each card uploaded unpublished (`POST /{page}/photos`,
    #: published=false), then one `POST /{page}/feed` naming them in `attached_media`
    #: (https://developers.facebook.com/docs/graph-api/reference/page/photos/ and
    #: https://developers.facebook.com/docs/graph-api/reference/page/feed/#publish); photos
    #: "should be less than 4 MB" (the photos reference). Meta names no most for
    #: attached_media: ten, as Instagram's carousels, keeps to what Pages show as one grid.
    carousel = CarouselSpec(
        least=2,
        most=10,
        size=(1080, 1350),
        max_bytes=4 * 1024 * 1024,
        source="https://developers.facebook.com/docs/graph-api/reference/page/feed/",
    )

    def _publish_carousel(self, request: PostRequest) -> Published:
        self.tokens()
        return self.retrying(lambda: self._carousel_attempt(request))

    def _carousel_attempt(self, request: PostRequest) -> Published:
        """The cards as unpublished photos (kept on the handles: a photo nobody sees is no
        post, and one an earlier try uploaded is used again), then the feed post of them."""
        handles = self.handles(request)
        if handles.get("feed_post_id"):
            return self._feed_post(handles["feed_post_id"])
        page_id = self.account().account_id
        photos: list[str | None] = list(handles.get("photos") or [None] * len(request.images))
        for index, image in enumerate(request.images):
            if photos[index]:
                continue
            with open(image.path, "rb") as picture:
                body = self.graph(
                    "POST",
                    f"{page_id}/photos",
                    data={"published": "false"},
                    files={"source": (Path(image.path).name, picture, image.mime)},
                )
            photos[index] = str(body.get("id") or "") or None
            if not photos[index]:
                raise PassingError("Facebook took a card without answering its photo id")
            handles = {**self.handles(request), "photos": photos}
            self.save(request, handles)
            request.heartbeat()
        marker = self.first_marker(request)
        if handles.get("marker") != marker:
            self.save(request, {**handles, "marker": marker})
        _, message = marked_texts(type(self), carousel_view(request.episode), marker, "description")
        fields = {"message": message}
        for index, photo in enumerate(photos):
            fields[f"attached_media[{index}]"] = json.dumps({"media_fbid": photo})
        try:
            answer = self.graph("POST", f"{page_id}/feed", sends=True, data=fields)
        except (PassingError, LostAnswer) as error:
            # The post may have been made before the error (a 500 after storing it): the
            # Page's feed says; if it does not show it yet, it is looked for again before any
            # second try, never sent again blind.
            found = self._find_in_feed((marker, handles.get("marker")))
            if found is not None:
                self.save(
                    request, {**self.handles(request), "feed_post_id": found.platform_post_id}
                )
                return found
            raise LostAnswer(
                f"Facebook did not confirm the carousel post ({error.reason}); it is looked for "
                "before anything else is sent"
            ) from None
        post_id = str(answer.get("id") or "")
        if not post_id:
            raise LostAnswer("Facebook answered the post without its id; it is looked for")
        self.save(request, {**self.handles(request), "feed_post_id": post_id})
        return self._feed_post(post_id)

    @staticmethod
    def _feed_post(post_id: str) -> Published:
        return Published(post_id, f"https://www.facebook.com/{post_id}")

    def _find_in_feed(self, markers: tuple[str | None, ...]) -> Published | None:
        """The Page's recent feed post whose message carries one of `markers`."""
        page_id = self.account().account_id
        since = self.now - timedelta(days=7)
        body = self.graph(
            "GET",
            f"{page_id}/feed",
            params={
                "fields": "id,message,created_time",
                "since": int(since.timestamp()),
                "limit": self.settings["find_limit"],
            },
        )
        found = find_marked(
            [body.get("data") or []], markers, lambda p: str(p.get("message") or "")
        )
        return self._feed_post(str(found["id"])) if found else None

    # -- finding an attempt --------------------------------------------------------------------

    def _find_attempt(self, request: PostRequest) -> Published | None:
        self.tokens()
        handles = self.handles(request)
        if request.kind == "carousel":
            if handles.get("feed_post_id"):
                return self._feed_post(handles["feed_post_id"])
            return self._find_in_feed((request.marker, handles.get("marker")))
        video_id = handles.get("video_id")
        status = self._status(video_id) if video_id else None
        if status is not None:
            where = reel_state(status)
            if where == "published":
                return self._published(video_id)
            if where == "publishing":
                raise PassingError(f"reel {video_id} is still being published")
            return None  # never finished, or failed: not live
        return self._find_by_marker((request.marker, handles.get("marker")))

    def _find_by_marker(self, markers: tuple[str | None, ...]) -> Published | None:
        """The Page's recent reels whose description carries one of `markers`."""
        page_id = self.account().account_id
        since = self.now - timedelta(days=7)
        body = self.graph(
            "GET",
            f"{page_id}/video_reels",
            params={
                "fields": "id,description,updated_time",
                "since": int(since.timestamp()),
                "limit": self.settings["find_limit"],
            },
        )
        reels = [body.get("data") or []]
        reel = find_marked(reels, markers, lambda reel: str(reel.get("description") or ""))
        return self._published(str(reel["id"])) if reel else None

    # -- comments and replies (issue 28) -------------------------------------------------------
    # GET /{object-id}/comments (filter=stream: replies too; order=chronological; `after`
    # cursors) and POST /{comment-id}/comments, as the Page:
    # https://developers.facebook.com/docs/graph-api/reference/object/comments and
    # https://developers.facebook.com/documentation/pages-api/comments-mentions (a Page token
    # with pages_read_engagement, pages_read_user_content and pages_manage_engagement).
    comments: ClassVar[str | None] = "reply"
    comment_scope: ClassVar[str] = COMMENT_SCOPES
    # A Facebook comment holds up to 8,000 characters (UNCONFIRMED on a Meta page)
    reply_length: ClassVar[int] = 8000
    reply_links: ClassVar[bool] = True
    reply_disclosure: ClassVar[str | None] = None
    # Meta publishes no daily number of comments a Page may make; its calls are bounded by the
    # Page's rate limit (https://developers.facebook.com/docs/graph-api/overview/rate-limiting)
    replies_per_day: ClassVar[int] = 50

    def _read_comments(self, post_id: str, cursor: str | None) -> Iterator[CommentPage]:
        """The comments (and replies) under reel `post_id` written after `cursor` (the `after`
        cursor of the last page an earlier read got), oldest first, a page per call, each call
        counted against `comment_reads` before it is made. Each page carries its own `after`,
        so a read cut short continues from the last page stored."""
        page_id = self.account().account_id
        after = cursor
        while True:
            params = {
                "filter": "stream",
                "order": "chronological",
                "fields": "id,message,created_time,from{id,name},parent{id}",
                "limit": self.settings["comment_page"],
            }
            if after:
                params["after"] = after
            answer = self._comment_call("GET", f"{post_id}/comments", params=params)
            found = tuple(
                self._comment_of(post_id, item, page_id) for item in answer.get("data") or []
            )
            paging = answer.get("paging") or {}
            after = (paging.get("cursors") or {}).get("after") or after
            yield CommentPage(found, cursor=after)
            if not (found and paging.get("next")):
                return

    @staticmethod
    def _comment_of(post_id: str, item: dict[str, Any], page_id: str) -> Comment:
        author = item.get("from") or {}
        parent = (item.get("parent") or {}).get("id")
        return Comment(
            id=str(item["id"]),
            post_id=post_id,
            author=str(author.get("name") or author.get("id") or "someone"),
            text=str(item.get("message") or ""),
            published_at=_graph_time(item.get("created_time")),
            author_id=str(author.get("id") or ""),
            parent_id=str(parent) if parent else None,
            mine=str(author.get("id") or "") == page_id,
        )

    def _reply(self, request: ReplyRequest) -> Published:
        """POST /{comment-id}/comments as the Page (a reply to a reply goes under its top-level
        comment: Facebook threads one level deep). The moment it is sent is saved on the
        attempt first; an answer that does not clearly refuse it may hide a reply."""
        thread = request.comment.parent_id or request.comment.id
        handles = {**request.handles, "reply_sent": iso(self.now)}
        request.save_handles(dict(handles))
        try:
            made = self._comment_call(
                "POST", f"{thread}/comments", data={"message": request.text}, sends=True
            )
        except LostAnswer:
            raise
        except PlatformError:
            request.save_handles({k: v for k, v in handles.items() if k != "reply_sent"})
            raise
        reply_id = str(made.get("id") or "")
        if not reply_id:
            raise LostAnswer("Facebook answered the reply without its id; it may be there")
        return self._reply_published(request.comment, reply_id)

    @staticmethod
    def _reply_published(comment: Comment, reply_id: str) -> Published:
        """The reply, with the address that opens its reel at it (the `comment_id` query of
        Facebook's own comment links; UNCONFIRMED for reels on a Meta page)."""
        return Published(reply_id, comment_url(comment.post_id, reply_id))

    def _find_reply(self, request: ReplyRequest) -> Published | None:
        """The Page's comment of the same text under the comment's thread (its newest
        `find_limit`), else None."""
        thread = request.comment.parent_id or request.comment.id
        page_id = self.account().account_id
        answer = self._comment_call(
            "GET",
            f"{thread}/comments",
            params={
                "filter": "stream",
                "order": "reverse_chronological",
                "fields": "id,message,from{id}",
                "limit": self.settings["find_limit"],
            },
        )
        wanted = " ".join(request.text.split())
        for item in answer.get("data") or []:
            author = str((item.get("from") or {}).get("id") or "")
            if author == page_id and " ".join(str(item.get("message") or "").split()) == wanted:
                return self._reply_published(request.comment, str(item["id"]))
        return None

    def _comment_call(
        self, method: str, path: str, *, sends: bool = False, **arguments: Any
    ) -> dict[str, Any]:
        """One comments call as the Page, counted against the day's `comment_reads` (a
        reply's too) before it is made; its JSON body, or the error it stands for. A read is
        retried as the retry policy says; a reply never is."""
        account = self.account().account_id

        def once() -> dict[str, Any]:
            allowed = self.settings["comment_reads"]
            if not COMMENT_USAGE.charge(self.db, account, "comment_calls", 1, allowed):
                raise LimitReached(
                    f"Facebook: {allowed} comment calls today (comment_reads); more tomorrow (UTC)"
                )
            response = self.call(method, self.url(path), sends=sends, check=False, **arguments)
            if self.succeeded(response):
                return graph_body(response, self.title)
            raise self._comment_refusal(response, sends=sends)

        return once() if sends else self.retrying(once)

    def _comment_refusal(self, response: Any, *, sends: bool) -> PlatformError:
        """A refused comments call (https://developers.facebook.com/docs/graph-api/guides/
        error-handling): a rate limit is a window to wait (no try spent), a missing permission
        names the ones comments need (the account stays connected: reels still post), an object
        that does not exist any more is gone; a reply whose answer is an error of the server
        may be there; else what any Graph refusal is."""
        status = response.status_code
        error, code, subcode, said = graph_problem(json_body(response), status)
        if code in THROTTLE_CODES or code in _PAGE_THROTTLE_CODES:
            return LimitReached(
                f"Facebook rate limit reached ({said}); comments wait for the window",
                retry_after=retry_after(response),
            )
        if code == 10 or (code is not None and 200 <= code <= 299):
            return NeedsPerson(
                f"Facebook refused {'the reply' if sends else 'reading comments'} ({said}): "
                f"connect again with `autoretto connect facebook` and grant {COMMENT_SCOPES}"
            )
        if code == 100 and (
            subcode == 33 or "does not exist" in str(error.get("message") or "").lower()
        ):
            return CommentGone(f"Facebook no longer has the comment or the reel ({said})")
        if sends and (status >= 500 or code in (1, 2) or error.get("is_transient")):
            return LostAnswer(f"Facebook answered {status} to the reply; it may be there")
        return self.classify(response, sends=sends)


def _no_such_object(answer: Any) -> bool:
    """Graph's answer for an id that does not exist: code 100, subcode 33, "Object with ID …
    does not exist" (https://developers.facebook.com/docs/graph-api/guides/error-handling)."""
    error, code, subcode, _ = graph_problem(json_body(answer), answer.status_code)
    if code != 100:
        return False
    return subcode == 33 or "does not exist" in str(error.get("message") or "").lower()


# -- connecting -------------------------------------------------------------------------------


def _connect_call(
    attempt: Attempt, path: str, params: dict[str, Any], what: str, token: str | None = None
) -> dict[str, Any]:
    """One Graph GET during `connect` (the query holds the app secret or a token: no error
    repeats it)."""
    url = FacebookPlatform.for_sign_in(attempt).url(path)
    return FacebookPlatform.sign_in_call(attempt, "GET", url, what=what, token=token, params=params)


# -- comments and replies (issue 28) ------------------------------------------------------------


def comment_url(reel_id: str, comment_id: str) -> str:
    """The address of reel `reel_id` opened at comment `comment_id` ("POST_COMMENT" ids keep the
    comment's own number last)."""
    return f"{REEL_URL.format(reel_id)}?comment_id={comment_id.rsplit('_', 1)[-1]}"


def _graph_time(value: Any) -> str | None:
    """Graph's `created_time` ("2026-11-29T10:05:00+0000") as ISO-8601 UTC ending in Z."""
    from datetime import UTC, datetime

    if not value:
        return None
    try:
        moment = datetime.strptime(str(value), "%Y-%m-%dT%H:%M:%S%z")
    except ValueError:
        return str(value)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
