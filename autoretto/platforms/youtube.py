"""YouTube (Data API v3): resumable upload, found again by its marker, within the daily quota.

The requests are built by google-api-python-client from the discovery document it ships
(`static_discovery=True`, never fetched) and carried by the one signed-in request path (http.py);
the configured `api_base` replaces Google's host for API and upload URLs alike.

Never twice (ARCHITECTURE.md §3, PLATFORMS.md §1):

1. The resumable session is created by one POST of our own, and its URI saved on the attempt
   before any byte of the video is sent; the library's `next_chunk` then sends the chunks to it.
2. After a lost answer (in this run or a later one) the session is probed with an empty `PUT`
   and `Content-Range: bytes */SIZE`: finished → its answer is the video; 308 → resume at the
   offset the server gives; 404/410 → the session is gone, and the channel's uploads are
   searched for the attempt's marker (a tag, which only the owner sees) before a new upload.
3. Once the bytes are up, the video id is saved too, and the video must be seen in the
   channel's uploads list before the post is reported published. Any failure after that point
   is a lost answer (the video may be live), never a plain failure.

Publish time: a slot in the past (cron runs at or after it) is published now with the
configured privacy. With `schedule_ahead = true` and a slot still ahead, the video is uploaded
private with `status.publishAt` = the slot and YouTube releases it then, even if this box is
down; `publishAt` exists only for private videos that turn public, so `privacy = "unlisted"` or
`"private"` never schedules.
"""

from __future__ import annotations

import hashlib
import json
import logging
import mimetypes
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import cached_property, partial
from pathlib import Path
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

from .. import accounts
from ..clock import iso, now
from ..errors import AutorettoError, UsageError
from ..oauth import json_body, read_authorized_user, read_client_secrets, refresh_grant, retry_after
from ..retry import RetryPolicy
from .base import (
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
    find_marked,
)
from .http import LADDER, AccountPlatform, sign_in_tokens
from .signin import Attempt, Draft, Flag, SignIn
from .text import Copy, TextField, chars, clean, fit, utf8_bytes

log = logging.getLogger("autoretto.platforms.youtube")

NAME = "youtube"
TITLE = "YouTube"
SCOPE_UPLOAD = "https://www.googleapis.com/auth/youtube.upload"
SCOPE_READONLY = "https://www.googleapis.com/auth/youtube.readonly"
SCOPE_EDIT = "https://www.googleapis.com/auth/youtube.force-ssl"
PACIFIC = ZoneInfo("America/Los_Angeles")
WATCH_URL = "https://www.youtube.com/watch?v={}"
#: where a person removes the app's access to their Google account
GOOGLE_PERMISSIONS = "https://myaccount.google.com/permissions"

UPLOAD_CHUNK_QUANTUM = 256 * 1024  # YouTube wants chunks in multiples of 256 KiB

UPLOADS_USED = "the day's YouTube uploads are used; waiting for the Pacific day"
UNITS_USED = "the day's YouTube API quota is used; waiting for the Pacific day"
USED = {"insert": UPLOADS_USED, "units": UNITS_USED}
#: units of the Pacific day that `stats collect` never spends: enough for a few posts (an
#: upload with its thumbnail and checks costs 52)
UNITS_KEPT_FROM_STATS = 500
#: videos.list takes at most 50 ids per call
STATS_BATCH = 50
#: the counters `stats collect` reads, by their names in a video's `statistics`
COUNTERS = {"views": "viewCount", "likes": "likeCount", "comments": "commentCount"}

_LIMIT_REASONS = {"quotaExceeded", "uploadLimitExceeded", "dailyLimitExceeded"}
_BACKOFF_REASONS = {"rateLimitExceeded", "userRateLimitExceeded", "backendError", "internalError"}
_RECONNECT_REASONS = {
    "authError",
    "insufficientPermissions",
    "youtubeSignupRequired",
    "authenticatedUserAccountClosed",
    "authenticatedUserAccountSuspended",
}


# Every call is counted before it is made, per Google Cloud project, against the allowance of
# the day; "daily quotas reset at midnight Pacific Time", and videos.insert has its own bucket
# (https://developers.google.com/youtube/data/determine_quota_cost).
QUOTA = UsageLedger(NAME, PACIFIC)
pacific_day = QUOTA.day
quota_used = QUOTA.used


def project_of(client_id: str) -> str:
    """The quota is per Google Cloud project; a client id starts with the project number."""
    number = client_id.split("-", 1)[0]
    return f"project-{number}" if number.isdigit() else f"client-{client_id}"


# https://developers.google.com/youtube/v3/docs/videos#snippet: a title of 100 characters, a
# description of 5,000 bytes, neither with < or >; tags of 500 characters in all, the commas
# between them included, a tag with a space counted as if wrapped in quotation marks.
DESCRIPTION_MAX_BYTES = 5000
TAGS_MAX_CHARS = 500
TITLE_LIMITS = (("characters", chars, 100),)
DESCRIPTION_LIMITS = (("bytes", utf8_bytes, DESCRIPTION_MAX_BYTES),)


def _no_brackets(text: str) -> str:
    return clean(text).replace("<", "").replace(">", "")


def fit_title(text: str) -> str:
    return fit(" ".join(_no_brackets(text).split()), TITLE_LIMITS)


def fit_description(text: str) -> str:
    return fit(_no_brackets(text), DESCRIPTION_LIMITS)


def tags_length(tags: list[str]) -> int:
    """YouTube's count: the tags, the commas between them, quotes around spaced tags."""
    return sum(len(tag) + (2 if " " in tag else 0) for tag in tags) + max(0, len(tags) - 1)


def copy_tags(tags: list[str] | tuple[str, ...]) -> list[str]:
    """As many of `tags` as fit in 500 characters, in order: no angle brackets, commas or
    quotes, 100 characters each, no duplicates, no empty tags."""
    kept: list[str] = []
    seen: set[str] = set()
    for tag in tags:
        tag = " ".join(re.sub(r"[<>,\"]", " ", clean(str(tag))).split())[:100]
        if not tag or tag.lower() in seen or tags_length([*kept, tag]) > TAGS_MAX_CHARS:
            continue
        kept.append(tag)
        seen.add(tag.lower())
    return kept


def fit_tags(tags: list[str] | tuple[str, ...], *, reserved: list[str] = ()) -> list[str]:
    """`reserved` first (the marker), then as many of `tags` as fit (`copy_tags`)."""
    return copy_tags([*reserved, *tags])


def marker_tag(marker: str) -> str:
    """The tag that carries an attempt's marker (used as is when it is a plain token)."""
    if re.fullmatch(r"[A-Za-z0-9_.:-]{1,60}", marker):
        return marker
    return "autoretto-" + hashlib.sha256(marker.encode("utf-8")).hexdigest()[:16]


class YouTubeApi:
    """A googleapiclient service whose requests go through `send` (YouTubePlatform.send, the
    one request path); it is the `http` object the library calls, too (`request` returns an
    httplib2-style response and the body bytes)."""

    def __init__(self, settings: dict[str, Any], send: Callable[..., Any]):
        from googleapiclient.discovery import build

        self.send = send
        self.service = build(
            "youtube",
            "v3",
            http=self,
            static_discovery=True,
            cache_discovery=False,
            client_options={"api_endpoint": settings["api_base"].rstrip("/") + "/"},
        )

    def request(
        self,
        uri: str,
        method: str = "GET",
        body: Any = None,
        headers: dict[str, str] | None = None,
        **_ignored: Any,
    ) -> tuple[Any, bytes]:
        import httplib2

        if hasattr(body, "read"):
            body = body.read()  # a chunk slice of the video file
        response = self.send(method, uri, data=body, headers=headers)
        info = {
            key.lower(): value
            for key, value in response.headers.items()
            if key.lower() not in ("content-encoding", "transfer-encoding")
        }
        info["status"] = str(response.status_code)
        answer = httplib2.Response(info)
        answer.reason = response.reason or ""
        return answer, response.content


def fetch_channel(api: YouTubeApi) -> dict[str, str]:
    """channels.list(mine=true): the connected channel's id, title and uploads playlist."""
    answer = api.service.channels().list(part="snippet,contentDetails", mine=True).execute()
    items = answer.get("items") or []
    if not items:
        raise NeedsPerson(
            "this Google account has no YouTube channel; create one on youtube.com, then "
            "connect again with `autoretto connect youtube`"
        )
    channel = items[0]
    return {
        "id": channel["id"],
        "title": channel.get("snippet", {}).get("title", ""),
        "uploads": channel.get("contentDetails", {}).get("relatedPlaylists", {}).get("uploads", ""),
    }


class QuotaGone(LimitReached):
    """YouTube says a bucket of the day's quota is used up: `bucket` "insert" (the uploads'
    own), else None (the bucket the call spends from)."""

    def __init__(self, bucket: str | None) -> None:
        super().__init__(USED[bucket or "units"])
        self.bucket = bucket


class YouTubePlatform(AccountPlatform):
    name = NAME
    title = TITLE
    #: the Data API uploads videos; its community posts (where image carousels live) have no
    #: API resource (https://developers.google.com/youtube/v3/docs)
    carousel_note = "the YouTube Data API has no image posts (community posts have no API)"
    # YouTube Data API v3, with no announced end: listed by doctor; nothing to choose.
    api_version: ClassVar[str | None] = "v3"
    api_versions: ClassVar[dict[str, str | None]] = {"v3": None}
    api_version_source: ClassVar[str] = "https://developers.google.com/youtube/v3/revision_history"
    can_find_attempts = True
    text_fields: ClassVar[dict[str, TextField] | None] = {
        "title": TextField("title", TITLE_LIMITS, True),
        "description": TextField("description", DESCRIPTION_LIMITS, True),
    }
    ai_flag: ClassVar[str | None] = "contains_synthetic_media"
    counters = True
    names_episode = True
    # https://support.google.com/youtube/answer/9884579: timestamps listed in the description
    # become the video's chapters, the first at 0:00, at least three, each 10 s or longer
    shows_chapters = True
    chapter_minimum = (3, 10.0)
    # https://support.google.com/youtube/answer/71673: up to 15 minutes, up to 12 hours once
    # the account is verified
    longest_video_seconds = 12 * 3600.0
    unverified_longest_seconds = 15 * 60.0
    # disconnecting deletes our tokens only; the grant stays until the person removes it
    disconnect_note: ClassVar[str | None] = (
        f"Google still lists Autoretto until you remove it at {GOOGLE_PERMISSIONS}"
    )

    @classmethod
    def more_texts(cls, copy: Copy) -> dict[str, Any]:
        return {"tags": copy_tags(copy.tags)}

    @classmethod
    def account_warnings(cls, meta: dict[str, Any]) -> list[str]:
        from .notices import KEPT_PRIVATE_FIX

        kept = meta.get("kept_private")
        if not isinstance(kept, dict):
            return []
        return [
            f"youtube: video {kept.get('video_id')} (post {kept.get('post_id')}), uploaded "
            f"{kept.get('at')}, was asked public and YouTube keeps it private: {KEPT_PRIVATE_FIX}"
        ]

    @classmethod
    def text_problems(cls, texts: dict[str, Any]) -> list[str]:
        problems = super().text_problems(texts)
        length = tags_length(texts.get("tags", []))
        if length > TAGS_MAX_CHARS:
            problems.append(f"youtube tags are {length} characters (limit 500)")
        return problems

    def read_counters(self, ids: list[str]) -> Iterator[tuple[str, dict[str, int | None]]]:
        """(video id, {"views", "likes", "comments"}) of the channel's videos `ids` that YouTube
        still has (a counter the owner hid: None), by counted `videos.list` calls; LimitReached
        when the next would eat into the last `UNITS_KEPT_FROM_STATS` units of the day."""
        account = self.account()
        for start in range(0, len(ids), STATS_BATCH):
            if self._room(account, "units") - UNITS_KEPT_FROM_STATS < self.settings["list_cost"]:
                raise LimitReached(
                    f"YouTube stats wait for the Pacific day: the last {UNITS_KEPT_FROM_STATS} "
                    "units of the day's quota are kept for posting"
                )
            batch = ",".join(ids[start : start + STATS_BATCH])
            for item in self._list("videos", part="statistics", id=batch).get("items") or []:
                counters = item.get("statistics") or {}
                counts = {name: _counter(counters.get(key)) for name, key in COUNTERS.items()}
                yield str(item.get("id")), counts

    settings_defaults: ClassVar[dict[str, Any]] = {
        "api_base": "https://youtube.googleapis.com",
        "token_uri": "https://oauth2.googleapis.com/token",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "client_secrets": "client_secret.json",
        "privacy": "public",  # public | unlisted | private
        "category": "10",  # Music
        "made_for_kids": False,
        "notify_subscribers": True,
        "schedule_ahead": False,
        "thumbnail": True,
        "daily_uploads": 100,  # videos.insert's own bucket, calls per Pacific day
        "daily_units": 10000,  # every other call
        "list_cost": 1,  # channels.list, playlistItems.list, videos.list
        "thumbnail_cost": 50,
        "chunk_size": 8 * 1024 * 1024,
        "timeout": 60,
        "retries": None,  # retries of a passing failure; unset: [retry] attempts less one
        "verify_tries": 3,
        "find_pages": 4,
        "reply_cost": 50,  # comments.insert, in the shared daily units (issue 28)
    }
    address_settings = ("api_base", "token_uri", "auth_uri")
    setting_choices: ClassVar[dict[str, tuple[str, ...]]] = {
        "privacy": ("public", "unlisted", "private")
    }
    positive_settings = ("verify_tries", "find_pages")

    # Google's OAuth for installed apps: PKCE, a loopback redirect, access_type=offline and
    # prompt=consent so a refresh token always comes back
    # (https://developers.google.com/identity/protocols/oauth2/native-app)
    signin: ClassVar[SignIn] = SignIn(
        help="""Connect a YouTube channel once; cron posts to it from then on.

        Over SSH: run the printed `ssh -L` line on your own computer, then open the printed
        address.

        Or add --paste, and paste back the address the browser ends on.

        Example: autoretto connect youtube --client-secrets ~/client_secret.json --paste
        """,
        flags=(
            Flag(
                "--client-secrets",
                'Google\'s OAuth client JSON (a "Desktop app" client). Default: client_secrets '
                "of the youtube platform settings (client_secret.json in the home).",
                kind="path",
            ),
            Flag("--port", "Local port for Google's redirect (loopback).", "port", default=8765),
            Flag("--paste", "Paste the redirected address instead of an ssh tunnel.", "bool"),
            Flag(
                "--token-file",
                "Import Google's authorized-user JSON made on another machine.",
                kind="path",
            ),
            Flag(
                "--allow-edits",
                "Also allow changing videos already on YouTube (youtube.force-ssl scope).",
                kind="bool",
            ),
        ),
        pkce="S256",
        extra_query={"access_type": "offline", "prompt": "consent"},
        loopback=True,
        needs_browser=lambda given: given.get("token_file") is None,
    )

    @classmethod
    def read_client(cls, attempt: Attempt) -> None:
        """The app from Google's client JSON."""
        chosen = attempt.given.get("client_secrets")
        path = chosen or attempt.paths.resolve(attempt.settings["client_secrets"])
        attempt.client.id, attempt.client.secret = read_client_secrets(path)

    @classmethod
    def sign_in_scopes(cls, settings: dict[str, Any], given: dict[str, Any]) -> list[str]:
        # youtube.force-ssl is the one scope commentThreads.list and comments.insert take (the
        # discovery document's `scopes` of both), asked of every account since issue 28;
        # changing a video stays the creator's choice (`--allow-edits`, meta `edits`).
        return [SCOPE_UPLOAD, SCOPE_READONLY, SCOPE_EDIT]

    @classmethod
    def signed_in(cls, attempt: Attempt) -> Draft:
        """The tokens (from the sign-in, or the imported token file refreshed once), the
        channel from channels.list (charged to the project's units)."""
        settings, given, lines = attempt.settings, attempt.given, []
        token_file = given.get("token_file")
        if token_file is not None:
            tokens = read_authorized_user(token_file, default_token_uri=settings["token_uri"])
            try:
                tokens = accounts.merge_refresh(tokens, refresh_grant(tokens))
            except accounts.RefreshRefused as refused:
                raise AutorettoError(
                    f"{token_file}: Google refused this token ({refused.reason}); make a new one, "
                    "or connect with --paste"
                ) from None
            lines.append(f"{token_file} still holds the refresh token in clear: delete it now.")
        else:
            tokens = _signed_in_tokens(attempt)
        project = project_of(tokens["client_id"])
        units = settings["list_cost"], settings["daily_units"]
        if not QUOTA.charge(attempt.db, project, "units", *units):
            raise AutorettoError(f"{UNITS_USED}; connect again after midnight Pacific time")
        # channels.list with the brand-new tokens, never refreshed
        send = partial(cls.for_sign_in(attempt).send, token=tokens["access_token"])
        try:
            channel = fetch_channel(YouTubeApi(settings, send))
        except PlatformError as error:
            raise AutorettoError(
                f"YouTube did not show the connected channel: {error.reason}"
            ) from None
        lines.insert(0, f'Connected YouTube channel "{channel["title"]}" ({channel["id"]}).')
        granted = tokens.get("scopes")
        if isinstance(granted, list) and not set(granted) & COMMENT_SCOPES:
            lines.append(
                f"Google did not grant {SCOPE_EDIT}: comments cannot be read or answered until "
                "you connect again and leave every box ticked."
            )
        return Draft(
            account_id=channel["id"],
            name=channel["title"],
            tokens=tokens,
            meta={
                "uploads": channel["uploads"],
                "project": project,
                "scopes": tokens.get("scopes"),
                "edits": bool(given.get("allow_edits")),
            },
            lines=lines,
        )

    @classmethod
    def setting_problems(cls, settings: dict[str, Any]) -> list[tuple[str, str]]:
        found = []
        if not str(settings["category"]).isdigit():
            found.append(("category", 'must be a YouTube category id such as "10" (Music)'))
        chunk = settings["chunk_size"]
        if chunk <= 0 or chunk % UPLOAD_CHUNK_QUANTUM:
            found.append(("chunk_size", f"must be a positive multiple of {UPLOAD_CHUNK_QUANTUM}"))
        retries = settings["retries"]
        if retries is not None and (type(retries) is not int or not 0 <= retries < 20):
            found.append(("retries", "must be a whole number from 0 to 19"))
        return found

    # -- readiness -------------------------------------------------------------------------

    def limit_reason(self, request: PostRequest) -> str | None:
        account = self.account_row()
        if account is None:
            return None
        # A post whose bytes were sent by an earlier try needs no new videos.insert.
        handles = request.handles
        uploading = not (handles.get("session_uri") or handles.get("video_id"))
        if uploading and self._room(account, "insert") < 1:
            return UPLOADS_USED
        # playlistItems.list + videos.list to verify; the thumbnail when there is one.
        units = 2 * self.settings["list_cost"]
        if self.settings["thumbnail"] and request.episode.thumbnail:
            units += self.settings["thumbnail_cost"]
        return UNITS_USED if self._room(account, "units") < units else None

    def _room(self, account: accounts.Account, bucket: str) -> int:
        """What is left of the day's `bucket` for the account's project."""
        return self._allowance(bucket) - quota_used(self.db, self._project(account), bucket)

    @staticmethod
    def _project(account: accounts.Account) -> str:
        return account.meta.get("project") or f"account-{account.account_id}"

    # -- the API, with quota, retries and classification ------------------------------------

    @cached_property
    def _api(self) -> YouTubeApi:
        """The account's API client, over the one request path (its tokens refreshed under the
        account's lock when due or refused)."""
        self.account()
        return YouTubeApi(self.settings, self.send)

    def send(self, method: str, uri: str, **arguments: Any) -> Any:
        """One request of the library on the one request path. 308 is the resumable upload's
        "keep going", and a session that is gone (404/410 to a PUT of its bytes) is an answer
        too: the upload code decides what it means."""
        gone = (404, 410) if method == "PUT" and "/upload/" in uri else ()
        return self.call(method, uri, accept=(308, *gone), **arguments)

    def problem(self, response: Any) -> tuple[str, str]:
        """(errors[0].reason, message) of Google's error envelope
        (https://developers.google.com/youtube/v3/docs/errors); the token endpoint's own."""
        error = json_body(response).get("error")
        if not isinstance(error, dict):
            return super().problem(response)
        first = (error.get("errors") or [{}])[0]
        first = first if isinstance(first, dict) else {}
        words = error.get("message") or first.get("message") or ""
        return str(first.get("reason") or ""), str(words)[:300]

    def classify(self, response: Any, *, sends: bool = False) -> PlatformError:
        """PLATFORMS.md §1: Google's reasons first (a quota used up, a rate limit whatever its
        status, a channel that cannot post); then a 4xx the ladder does not name needs a
        person; the rest by the ladder (400 a refused video, 403 a person, 5xx passing)."""
        reason, status, said = self.problem(response)[0], response.status_code, self.said(response)
        if reason in _LIMIT_REASONS:
            return QuotaGone("insert" if reason == "uploadLimitExceeded" else None)
        if reason in _BACKOFF_REASONS:
            return PassingError(f"YouTube is busy ({said})", retry_after=retry_after(response))
        if reason in _RECONNECT_REASONS:
            return self.reconnect(f"YouTube refused the account ({said})")
        if 400 < status < 500 and status not in LADDER:
            return NeedsPerson(f"YouTube answered {status} ({said})")
        return super().classify(response, sends=sends)

    @contextmanager
    def _spending(self, bucket: str) -> Iterator[None]:
        """Calls that spend from `bucket`: when YouTube says a bucket is used up, the ledger
        has it full too, so no run tries again this Pacific day."""
        try:
            yield
        except QuotaGone as gone:
            bucket = gone.bucket or bucket
            if self._account is not None:
                QUOTA.fill(self.db, self._project(self._account), bucket, self._allowance(bucket))
            raise LimitReached(USED[bucket]) from None

    def _allowance(self, bucket: str) -> int:
        return self.settings["daily_uploads" if bucket == "insert" else "daily_units"]

    def _call(
        self, make: Callable[[YouTubeApi], Any], *, bucket: str = "units", cost: int | None = None
    ) -> Any:
        """Count, then make one API call; passing errors retried by the retry policy (each
        try is counted again: YouTube charges failed calls too)."""
        api = self._api
        project = self._project(self.account())
        spend = self.settings["list_cost"] if cost is None else cost

        def once() -> Any:
            if not QUOTA.charge(self.db, project, bucket, spend, self._allowance(bucket)):
                raise LimitReached(USED[bucket])
            with self._spending(bucket):
                return make(api)

        return self.retrying(once)

    def _list(self, resource: str, **query: Any) -> dict[str, Any]:
        """The answer of one `RESOURCE.list` call of `query`, counted at `list_cost` (`_call`)."""
        return self._call(lambda api: getattr(api.service, resource)().list(**query).execute())

    @property
    def retry_policy(self) -> RetryPolicy:
        """The run's `[retry]`, with as many tries as `retries` says when it is set."""
        retries = self.settings["retries"]
        policy = self.context.retry
        return policy if retries is None else replace(policy, attempts=retries + 1)

    # -- publish ------------------------------------------------------------------------------

    def _publish(self, request: PostRequest) -> Published:
        video = self.video_file(request.episode, "landscape")
        self.account()
        handles = dict(request.handles)
        video_id = handles.get("video_id")
        if video_id is None and handles.get("session_uri"):
            video_id = self._send(request, handles, video, offset=None)
        if video_id is None:
            video_id = self._upload(request, handles, video)
        return self._after_upload(request, handles, video_id)

    def _resource(self, request: PostRequest) -> dict[str, Any]:
        episode = request.episode
        settings = self.settings
        fitted = episode.texts.get(NAME)
        fitted = fitted if isinstance(fitted, dict) else {}
        title = fit_title(str(fitted.get("title") or episode.title))
        if not title:
            raise ContentRejected("the episode has no title for YouTube")
        status: dict[str, Any] = {
            "privacyStatus": settings["privacy"],
            "selfDeclaredMadeForKids": bool(settings["made_for_kids"]),
            "containsSyntheticMedia": bool(episode.ai_generated),
        }
        ahead = settings["schedule_ahead"] and request.publish_at > now()
        if ahead and settings["privacy"] == "public":
            status["privacyStatus"] = "private"
            status["publishAt"] = iso(request.publish_at)
        description = fit_description(str(fitted.get("description") or episode.description or ""))
        tags = list(fitted.get("tags") or episode.tags)
        snippet = {
            "title": title,
            "description": description,
            "tags": fit_tags(tags, reserved=[marker_tag(request.marker)]),
            "categoryId": str(settings["category"]),
        }
        return {"snippet": snippet, "status": status}

    def _insert_request(self, video: Path, body: dict[str, Any]) -> Any:
        from googleapiclient.http import MediaFileUpload

        media = MediaFileUpload(
            str(video),
            mimetype=mimetypes.guess_type(video.name)[0] or "video/mp4",
            chunksize=self.settings["chunk_size"],
            resumable=True,
        )
        return self._api.service.videos().insert(
            part="snippet,status",
            body=body,
            notifySubscribers=bool(self.settings["notify_subscribers"]),
            media_body=media,
        )

    def _upload(self, request: PostRequest, handles: dict[str, Any], video: Path) -> str:
        """Create a session, save it, send the bytes."""
        resource = self._resource(request)
        insert = self._insert_request(video, resource)
        size = video.stat().st_size

        def create_session(api: YouTubeApi) -> str:
            headers = dict(insert.headers)
            headers["X-Upload-Content-Type"] = insert.resumable.mimetype()
            headers["X-Upload-Content-Length"] = str(size)
            answer, _ = api.request(insert.uri, "POST", body=insert.body, headers=headers)
            if answer.status == 200 and "location" in answer:
                return answer["location"]
            raise PassingError(f"YouTube answered {answer.status} without an upload session")

        session_uri = self._call(create_session, bucket="insert", cost=1)
        handles.update(
            session_uri=session_uri,
            size=size,
            marker=marker_tag(request.marker),
            # private until publishAt on purpose: no lock can be told from that
            scheduled="publishAt" in resource["status"],
        )
        handles.pop("video_id", None)
        self.save(request, handles)  # before the first byte
        log.info("youtube: upload session created for post %s", request.post_id)
        found = self._send(request, handles, video, offset=0)
        if found is None:
            raise PassingError(
                "YouTube dropped the upload session before it finished; the next run starts a "
                "new one"
            )
        return found

    def _probe(self, handles: dict[str, Any]) -> tuple[str, Any]:
        """Ask the session where it stands: ("finished", id) | ("incomplete", offset) |
        ("gone", None). Network trouble raises PassingError."""
        asking = {"Content-Range": f"bytes */{handles['size']}", "Content-Length": "0"}
        with self._spending("insert"):
            answer, content = self._api.request(handles["session_uri"], "PUT", b"", headers=asking)
        if answer.status in (200, 201):
            try:
                return "finished", json.loads(content)["id"]
            except (ValueError, KeyError, TypeError):
                # The session says the video is made, but the answer that names it was
                # broken: it may be on the channel, which the next look asks by its marker.
                raise LostAnswer(
                    "YouTube said the upload is finished, but its answer named no video"
                ) from None
        if answer.status == 308:
            received = answer.get("range")
            return "incomplete", int(received.rsplit("-", 1)[1]) + 1 if received else 0
        if answer.status in (404, 410):
            return "gone", None
        raise PassingError(f"YouTube answered {answer.status} to the upload session's probe")

    def _send(
        self, request: PostRequest, handles: dict[str, Any], video: Path, *, offset: int | None
    ) -> str | None:
        """Send the bytes to the attempt's session from `offset` (None: from where the session
        says it stands). After a drop, wait as the retry policy says, probe the session and
        resume at its offset. Returns the video id, or None when the session is gone and the
        video is not on the channel."""
        at: dict[str, Any] = {"offset": offset, "last_chunk": False}

        def one_try() -> tuple[str, Any]:
            if at["offset"] is None:  # only the session knows where it stands
                state, value = self._probe(handles)
                if state != "incomplete":
                    return state, value
                log.info("youtube: resuming post %s at byte %s", request.post_id, value)
                at["offset"] = value
            insert = self._insert_request(video, {})
            insert.resumable_uri, insert.resumable_progress = handles["session_uri"], at["offset"]
            at["offset"] = None
            try:
                video_id = self._send_chunks(insert, request)
            except PassingError:
                # The last chunk may have landed; only the session can say.
                sent = insert.resumable_progress + insert.resumable.chunksize()
                at["last_chunk"] = sent >= handles["size"]
                raise
            return ("finished", video_id) if video_id else ("gone", None)

        try:
            state, value = self.retrying(one_try)
        except PassingError as error:
            if not self.retry_policy.waits_out(error.retry_after):
                # An answer that asks for longer than a run waits (a 429's Retry-After of an
                # hour): the chunk was refused, the session stays; a later try probes it
                # before sending anything.
                raise PassingError(
                    f"YouTube asks to wait {error.retry_after:.0f} s during the upload "
                    f"({error.reason}); a later run resumes the same upload session",
                    retry_after=error.retry_after,
                ) from None
            raise (LostAnswer if at["last_chunk"] else PassingError)(
                f"YouTube stopped answering during the upload ({error.reason}); the next try "
                "checks the upload session before sending anything"
            ) from None
        return value if state == "finished" else self._find_by_marker(request, handles)

    def _send_chunks(self, insert: Any, request: PostRequest) -> str | None:
        """The library's `next_chunk` until YouTube answers with the video: its id, or None
        when the session is gone (404/410)."""
        from googleapiclient.errors import HttpError

        body = None
        while body is None:
            with self._spending("insert"):
                try:
                    _, body = insert.next_chunk(num_retries=0)
                except HttpError as error:
                    if error.resp.status in (404, 410):
                        return None
                    raise
            request.heartbeat()
        return body["id"]

    def _after_upload(
        self, request: PostRequest, handles: dict[str, Any], video_id: str
    ) -> Published:
        """The bytes are up: thumbnail, then verify. From here on nothing is 'not posted'."""
        if handles.get("video_id") != video_id:
            handles["video_id"] = video_id
            self.save(request, handles)
        try:
            self._set_thumbnail(request, video_id)
            privacy = self._verify(video_id)
        except (LimitReached, PassingError, NeedsPerson) as error:
            raise LostAnswer(
                f"uploaded as video {video_id} but not verified yet ({error.reason}); "
                "the next run looks for it on the channel"
            ) from None
        self._note_privacy(request, handles, video_id, privacy)
        return Published(video_id, WATCH_URL.format(video_id))

    def _note_privacy(
        self, request: PostRequest, handles: dict[str, Any], video_id: str, privacy: str | None
    ) -> None:
        """Compare what YouTube did with what was asked. The videos resource page says uploads
        from unverified API projects created after 2020-07-28 are locked private; the discovery
        document's privacyStatus text does not: both outcomes happen, so the answer decides.
        A video asked public (or unlisted) and kept private is published but private: recorded
        on the attempt and the account for status, the report and doctor. A scheduled upload is
        private until its publishAt on purpose, so nothing can be told from it here."""
        asked = str(self.settings["privacy"])
        scheduled = bool(handles.get("scheduled"))
        if privacy is None or asked == "private" or privacy == asked or scheduled:
            return
        seen = iso(self.now)
        handles["kept_private"] = {"video_id": video_id, "privacy": privacy, "seen_at": seen}
        self.save(request, handles)
        kept = {"video_id": video_id, "post_id": request.post_id, "at": seen}
        if self._account is not None:
            accounts.update_meta(self.db, self._account, {"kept_private": kept})
        log.warning(
            "youtube: video %s was asked %s and YouTube keeps it %s", video_id, asked, privacy
        )

    def _set_thumbnail(self, request: PostRequest, video_id: str) -> None:
        thumbnail = request.episode.thumbnail
        if not (self.settings["thumbnail"] and thumbnail and Path(thumbnail).is_file()):
            return
        from googleapiclient.http import MediaFileUpload

        mimetype = mimetypes.guess_type(thumbnail)[0] or "image/png"

        def set_thumbnail(api: YouTubeApi) -> Any:
            media = MediaFileUpload(thumbnail, mimetype=mimetype)
            return api.service.thumbnails().set(videoId=video_id, media_body=media).execute()

        try:
            self._call(set_thumbnail, cost=self.settings["thumbnail_cost"])
        except (NeedsPerson, ContentRejected) as error:
            # The video is up; a channel without custom thumbnails (not phone-verified) keeps
            # YouTube's own frame. Worth a line in the log, not a failed post.
            log.warning("youtube: thumbnail of %s not set: %s", video_id, error.reason)

    def _uploads_playlist(self) -> str:
        account = self.account()
        uploads = account.meta.get("uploads")
        if not uploads:
            uploads = self._call(fetch_channel)["uploads"]
            accounts.update_meta(self.db, account, {"uploads": uploads})
        return uploads

    def _verify(self, video_id: str) -> str | None:
        """The video is in the channel's uploads list and YouTube did not reject it. Returns
        its `status.privacyStatus` as YouTube reports it (None when it did not say)."""
        items = self._list("videos", part="status", id=video_id).get("items") or []
        privacy = None
        if items:
            status = items[0].get("status", {})
            upload_status = status.get("uploadStatus")
            if upload_status in ("failed", "rejected", "deleted"):
                why = status.get("rejectionReason") or status.get("failureReason") or "no reason"
                raise ContentRejected(f"YouTube {upload_status} the video {video_id}: {why}")
            privacy = status.get("privacyStatus")
        for attempt in range(self.settings["verify_tries"]):
            if attempt:
                self.sleep(2.0**attempt)
            if any(video_id in ids for ids in self._uploads_pages()):
                return privacy
        raise PassingError(f"video {video_id} is not in the channel's uploads list yet")

    def _uploads_pages(self) -> Iterator[list[str]]:
        """The video ids of the channel's uploads, newest first, a page (50) at a time, at
        most `find_pages` pages; each page is counted before it is asked for."""
        listing = {"part": "snippet", "playlistId": self._uploads_playlist(), "maxResults": 50}
        token = None
        for _ in range(self.settings["find_pages"]):
            page = self._list("playlistItems", **listing, pageToken=token)
            yield [
                video
                for item in page.get("items") or []
                if (video := item.get("snippet", {}).get("resourceId", {}).get("videoId"))
            ]
            token = page.get("nextPageToken")
            if not token:
                return

    # -- finding an attempt ------------------------------------------------------------------------

    def _find_by_marker(self, request: PostRequest, handles: dict[str, Any]) -> str | None:
        """The id of the newest upload tagged with the attempt's marker (or the one its session
        was made with), else None. Tags are shown to the owner only: read with videos.list."""
        pages = (
            self._list("videos", part="snippet", id=",".join(ids), maxResults=50).get("items") or []
            for ids in self._uploads_pages()
            if ids
        )
        found = find_marked(
            pages,
            (marker_tag(request.marker), handles.get("marker")),
            lambda item: set(item.get("snippet", {}).get("tags") or []),
        )
        return None if found is None else found["id"]

    def _find_attempt(self, request: PostRequest) -> Published | None:
        self.account()
        handles = dict(request.handles)
        video_id = handles.get("video_id")
        if video_id is None and handles.get("session_uri"):
            state, value = self._probe(handles)
            video_id = value if state == "finished" else None
        if video_id is None:
            video_id = self._find_by_marker(request, handles)
        if video_id is None:
            return None
        self._note_privacy(request, handles, video_id, self._verify(video_id))
        return Published(video_id, WATCH_URL.format(video_id))

    # -- comments and replies (issue 28) -------------------------------------------------------
    # commentThreads.list reads a video's comments and comments.insert answers one; both need
    # the youtube.force-ssl scope (https://developers.google.com/youtube/v3/docs/comments/insert,
    # and the `scopes` of both methods in the discovery document).
    comments: ClassVar[str | None] = "reply"
    comment_scope: ClassVar[str] = SCOPE_EDIT
    # comments.insert refuses a text that is too long (commentTextTooLong) without naming the
    # number on https://developers.google.com/youtube/v3/docs/comments/insert#errors; 10,000
    # characters is the limit YouTube's comment box keeps (UNCONFIRMED on a Google page).
    reply_length: ClassVar[int] = 10000
    # A comment with a link is often held for review as likely spam
    # (https://support.google.com/youtube/answer/9483359, "Learn about comment settings";
    # UNCONFIRMED in those words): a reply carries none.
    reply_links: ClassVar[bool] = False
    reply_disclosure: ClassVar[str | None] = None
    # YouTube publishes no daily number of replies; each one costs 50 of the 10,000 units of the
    # project's day (https://developers.google.com/youtube/v3/determine_quota_cost): 50 replies
    # are a quarter of it, the rest stays for uploads and reads.
    replies_per_day: ClassVar[int] = 50

    def _read_comments(self, post_id: str, cursor: str | None) -> Iterator[CommentPage]:
        """The comments under video `post_id` published at or after `cursor` (the newest
        `publishedAt` an earlier read saw), newest threads first (`order=time`), a page of
        threads per commentThreads.list call, each counted (`list_cost`) before it is made and
        never out of the last `UNITS_KEPT_FROM_STATS` units. Paging stops at the first thread
        older than `cursor` (a new reply to a thread further down waits for that thread to
        come up again); the last page carries the new cursor, so a read cut short (quota, a
        failure) leaves the old one and is read again, stored once."""
        newest = cursor
        token: str | None = None
        while True:
            query = {
                "part": "snippet,replies",
                "videoId": post_id,
                "order": "time",
                "textFormat": "plainText",
                "maxResults": 100,
            }
            if token:
                query["pageToken"] = token
            answer = self._comment_call(
                lambda service, query=query: service.commentThreads().list(**query),
                cost=self.settings["list_cost"],
                empty_when_off=True,
            )
            found: list[Comment] = []
            older = False
            for thread in answer.get("items") or []:
                fresh = [
                    comment
                    for comment in self._thread_comments(post_id, thread)
                    if cursor is None or not _earlier(comment.published_at, cursor)
                ]
                if cursor is not None and not fresh:
                    older = True
                    break
                found.extend(fresh)
            for comment in found:
                if comment.published_at and (
                    newest is None or _earlier(newest, comment.published_at)
                ):
                    newest = comment.published_at
            token = answer.get("nextPageToken")
            last = older or not token
            yield CommentPage(tuple(found), cursor=newest if last else None)
            if last:
                return

    def _thread_comments(self, video_id: str, thread: dict[str, Any]) -> Iterator[Comment]:
        """The top-level comment of `thread` and its replies: the ones the thread carries, or
        every one by comments.list (counted) when it carries fewer than `totalReplyCount`."""
        snippet = thread.get("snippet") or {}
        top = snippet.get("topLevelComment") or {}
        thread_id = str(thread.get("id") or top.get("id") or "")
        if top:
            yield self._comment_of(video_id, thread_id, top)
        replies = (thread.get("replies") or {}).get("comments") or []
        if int(snippet.get("totalReplyCount") or 0) > len(replies):
            replies = [item for page in self._replies_pages(thread_id) for item in page]
        for reply in replies:
            yield self._comment_of(video_id, thread_id, reply)

    def _replies_pages(self, thread_id: str) -> Iterator[list[dict[str, Any]]]:
        """The replies under top-level comment `thread_id` by comments.list, a counted call a
        page (100), at most `find_pages` pages."""
        token = None
        for _ in range(self.settings["find_pages"]):
            query = {
                "part": "snippet",
                "parentId": thread_id,
                "textFormat": "plainText",
                "maxResults": 100,
            }
            if token:
                query["pageToken"] = token
            answer = self._comment_call(
                lambda service, query=query: service.comments().list(**query),
                cost=self.settings["list_cost"],
            )
            yield list(answer.get("items") or [])
            token = answer.get("nextPageToken")
            if not token:
                return

    def _comment_of(self, video_id: str, thread_id: str, item: dict[str, Any]) -> Comment:
        snippet = item.get("snippet") or {}
        author_id = str((snippet.get("authorChannelId") or {}).get("value") or "")
        comment_id = str(item.get("id") or "")
        parent = snippet.get("parentId")
        return Comment(
            id=comment_id,
            post_id=video_id,
            author=str(snippet.get("authorDisplayName") or author_id),
            text=str(snippet.get("textDisplay") or snippet.get("textOriginal") or ""),
            published_at=snippet.get("publishedAt"),
            author_id=author_id,
            parent_id=str(parent) if parent else None,
            mine=bool(author_id) and author_id == self.account().account_id,
            ref={"thread": thread_id, "video": video_id},
        )

    def _reply(self, request: ReplyRequest) -> Published:
        """comments.insert under the comment's thread (YouTube threads one level deep: a reply
        to a reply goes under its top-level comment), 50 units counted before it is made. The
        moment it is sent is saved on the attempt first; any answer but a clear refusal may
        hide a reply (LostAnswer), looked for by `find_reply` before another is sent."""
        comment = request.comment
        thread = _thread_of(comment)
        handles = dict(request.handles)
        handles["reply_sent"] = iso(self.now)
        request.save_handles(dict(handles))
        body = {"snippet": {"parentId": thread, "textOriginal": request.text}}
        try:
            made = self._comment_call(
                lambda service: service.comments().insert(part="snippet", body=body),
                cost=self.settings["reply_cost"],
                sends=True,
            )
        except (LostAnswer, PassingError) as error:
            if isinstance(error, PassingError) and not self.reached:
                raise  # the connection was never made: nothing went out
            raise LostAnswer(
                f"YouTube did not say whether the reply went out ({error.reason}); it is "
                "looked for before anything is sent again"
            ) from None
        except PlatformError:
            request.save_handles({k: v for k, v in handles.items() if k != "reply_sent"})
            raise
        reply_id = str(made.get("id") or "")
        if not reply_id:
            raise LostAnswer("YouTube answered the reply without its id; it may be there")
        return Published(reply_id, comment_url(comment.post_id, reply_id))

    def _find_reply(self, request: ReplyRequest) -> Published | None:
        """The account's reply of the same text under the comment's thread (comments.list,
        counted), else None."""
        comment = request.comment
        channel = self.account().account_id
        wanted = _same_text(request.text)
        for page in self._replies_pages(_thread_of(comment)):
            for item in page:
                snippet = item.get("snippet") or {}
                author = (snippet.get("authorChannelId") or {}).get("value")
                text = snippet.get("textOriginal") or snippet.get("textDisplay") or ""
                if author == channel and _same_text(str(text)) == wanted:
                    return Published(str(item["id"]), comment_url(comment.post_id, item["id"]))
        return None

    def _comment_call(
        self, make: Callable[[Any], Any], *, cost: int, sends: bool = False,
        empty_when_off: bool = False,
    ) -> dict[str, Any]:  # fmt: skip
        """One comments call: the force-ssl scope checked on the account's record, `cost`
        units counted before it is made and never out of the last `UNITS_KEPT_FROM_STATS` of
        the day (posting comes first), the request built by the library from the discovery
        document and sent on the one request path; its JSON answer, or the PlatformError it
        stands for (`_comment_refusal`). A read is retried as the retry policy says (each try
        counted: YouTube charges failed calls too); a reply (`sends`) never is."""
        account = self.account()
        granted = account.meta.get("scopes")
        if isinstance(granted, list) and not set(granted) & COMMENT_SCOPES:
            raise NeedsPerson(NO_COMMENT_SCOPE)
        project = self._project(account)

        def once() -> dict[str, Any]:
            if self._room(account, "units") - UNITS_KEPT_FROM_STATS < cost:
                raise LimitReached(COMMENTS_WAIT)
            if not QUOTA.charge(self.db, project, "units", cost, self._allowance("units")):
                raise LimitReached(UNITS_USED)
            built = make(self._api.service)
            response = self.call(
                built.method, built.uri, sends=sends, check=False, data=built.body,
                headers=dict(built.headers or {}),
            )  # fmt: skip
            if response.status_code < 300:
                return json_body(response)
            if empty_when_off and self.problem(response)[0] == "commentsDisabled":
                return {"items": []}  # comments turned off on the video: none to read
            raise self._comment_refusal(response, sends=sends)

        return once() if sends else self.retrying(once)

    def _comment_refusal(self, response: Any, *, sends: bool) -> PlatformError:
        """A comments call's refusal (https://developers.google.com/youtube/v3/docs/errors):
        the day's units gone (the ledger filled), a rate limit (a window to wait, no try
        spent), the force-ssl permission missing (named, the account left connected: uploads
        need no more), the comment or the video gone, a reply YouTube would not take; else
        what any YouTube call's refusal is."""
        reason, status, said = self.problem(response)[0], response.status_code, self.said(response)
        if reason in _LIMIT_REASONS:
            account = self.account()
            QUOTA.fill(self.db, self._project(account), "units", self._allowance("units"))
            return LimitReached(UNITS_USED)
        if status == 429 or reason in ("rateLimitExceeded", "userRateLimitExceeded"):
            wait = retry_after(response)
            return LimitReached(f"YouTube is rate limiting comments ({said})", retry_after=wait)
        if reason in ("insufficientPermissions", "forbidden"):
            return NeedsPerson(f"{NO_COMMENT_SCOPE} ({said})")
        if status == 404 or reason in _GONE_REASONS:
            return CommentGone(f"YouTube no longer has the comment or its video ({said})")
        if reason in _REPLY_REFUSED_REASONS or (sends and status == 400):
            return ContentRejected(f"YouTube would not take the reply ({said})")
        if sends and status >= 500:
            return LostAnswer(f"YouTube answered {status} to the reply; it may be there")
        return self.classify(response, sends=sends)


# -- connecting -------------------------------------------------------------------------------


def _signed_in_tokens(attempt: Attempt) -> accounts.Tokens:
    """The token bundle of a browser sign-in: it must hold a refresh token and the scopes
    posting needs (a person may untick one on the consent screen)."""
    if not attempt.answer.get("refresh_token"):
        raise UsageError(
            "Google sent no refresh token, so Autoretto could not post unattended; remove "
            f"Autoretto at {GOOGLE_PERMISSIONS} and connect again"
        )
    granted = attempt.granted()
    missing = [scope for scope in (SCOPE_UPLOAD, SCOPE_READONLY) if scope not in granted]
    if missing:
        raise AutorettoError(
            "Google did not grant "
            + ", ".join(s.rsplit("/", 1)[1] for s in missing)
            + "; connect again and leave every box ticked on the consent screen"
        )
    return sign_in_tokens(YouTubePlatform, attempt, scopes=granted)


def _counter(value: Any) -> int | None:
    """YouTube sends counters as decimal strings; a hidden one is absent."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# -- comments and replies (issue 28) ------------------------------------------------------------

#: scopes that let an app read and answer comments (the discovery document: youtube.force-ssl;
#: the whole-account youtube scope covers it too)
COMMENT_SCOPES = frozenset({SCOPE_EDIT, "https://www.googleapis.com/auth/youtube"})
NO_COMMENT_SCOPE = (
    f"YouTube comments need the {SCOPE_EDIT} permission, which this channel was connected "
    "without: connect again with `autoretto connect youtube` and leave every box ticked"
)
COMMENTS_WAIT = (
    f"YouTube comments wait for the Pacific day: the last {UNITS_KEPT_FROM_STATS} units of the "
    "day's quota are kept for posting"
)
#: https://developers.google.com/youtube/v3/docs/comments/insert#errors and commentThreads/list
_GONE_REASONS = {
    "parentCommentNotFound",
    "commentNotFound",
    "videoNotFound",
    "commentThreadNotFound",
}
_REPLY_REFUSED_REASONS = {
    "commentTextTooLong",
    "commentTextRequired",
    "invalidCommentMetadata",
    "operationNotSupported",
    "commentsDisabled",
    "ineligibleAccount",
    "processingFailure",
}
COMMENT_URL = "https://www.youtube.com/watch?v={}&lc={}"


def comment_url(video_id: str, comment_id: str) -> str:
    """The address that opens a video at one of its comments."""
    return COMMENT_URL.format(video_id, comment_id)


def _thread_of(comment: Comment) -> str:
    """The top-level comment a reply to `comment` goes under."""
    return str(comment.ref.get("thread") or comment.parent_id or comment.id)


def _same_text(text: str) -> str:
    return " ".join(text.split())


def _earlier(first: str | None, second: str) -> bool:
    """Is YouTube's time `first` before `second` (an unreadable or missing one is not)?"""
    from ..clock import from_iso

    try:
        return first is not None and from_iso(first) < from_iso(second)
    except ValueError:
        return False
