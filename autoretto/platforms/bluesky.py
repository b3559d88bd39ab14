"""Bluesky (AT Protocol): a video post through the video service, never twice, 10 a day.

Connected once with an app password (`autoretto connect bluesky --handle H`): the rate-limited
`com.atproto.server.createSession` is called that one time, never per post, and only the
session's tokens are kept, sealed in the vault. `com.atproto.server.refreshSession` rotates the
refresh token too: the new one is saved before the account's lock is released
(accounts.fresh_tokens).

A post (PLATFORMS.md §7):

1. `app.bsky.video.getUploadLimits` on the video service (service auth token for it):
   `canUpload: false` is a limit, named in Bluesky's own words; nothing is sent.
2. A service auth token for `com.atproto.repo.uploadBlob` with the PDS as audience, then the
   raw video to the video service's `app.bsky.video.uploadVideo`, then its job polled with
   `getJobStatus` until it holds the blob. `already_exists` (this very video was processed
   before) still carries the blob, so the blob is looked for whatever the answer.
3. The record key, a TID derived from the post's identity (`record_key`), is saved on the
   attempt (`save_handles`) before `com.atproto.repo.createRecord`; any later try of the same
   post, from any copy of the database, first asks `com.atproto.repo.getRecord` for that
   key, and a record there is the post.

Text: ≤ 300 graphemes (counted as grapheme clusters, so a family emoji is one) and ≤ 3000
bytes; links and hashtags become facets with UTF-8 byte offsets; the video embed carries its
aspect ratio. At most `daily_cap` posts a day (UTC) per account, counted in `usage`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
import secrets
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

from .. import accounts
from ..clock import now
from ..errors import AutorettoError, UsageError
from ..oauth import json_body, retry_after
from .base import (
    ContentRejected,
    EpisodeView,
    LimitReached,
    LimitsView,
    NeedsPerson,
    PassingError,
    PlatformError,
    PostRequest,
    Published,
    UsageLedger,
)
from .http import AccountPlatform, SignInRefused, refresh_request
from .signin import Attempt, Draft, Flag, Secret, SignIn
from .text import TextField, chars, utf8_bytes
from .web import good_base_url

if TYPE_CHECKING:
    from ..ledger.store import Store as Database

log = logging.getLogger("autoretto.platforms.bluesky")

NAME = "bluesky"
POST_COLLECTION = "app.bsky.feed.post"
POST_URL = "https://bsky.app/profile/{}/post/{}"

TEXT_MAX_GRAPHEMES = 300
TEXT_MAX_BYTES = 3000
# graphemes are counted as code points, never fewer: a fitted text is always within
_TEXT_LIMITS = (("graphemes", chars, TEXT_MAX_GRAPHEMES), ("bytes", utf8_bytes, TEXT_MAX_BYTES))
TAG_MAX_GRAPHEMES = 64
# app.bsky.embed.video's `video` blob: "maxSize": 300000000, "May be up to 300mb, formerly
# limited to 100mb" (https://github.com/bluesky-social/atproto/blob/main/lexicons/app/bsky/
# embed/video.json, raised in bluesky-social/atproto#5373, August 2026)
VIDEO_MAX_BYTES = 300_000_000
VIDEO_MAX_SECONDS = 180.0
#: app.bsky.feed.getPosts takes at most 25 post URIs per call
STATS_BATCH = 25

_NEEDS_PERSON_ERRORS = {
    "InvalidToken",
    "AuthenticationRequired",
    "AuthFactorTokenRequired",
    "AccountTakedown",
    "AccountDeactivated",
}
# bsky-docs docs/tutorials/video.mdx: uploading video needs a confirmed email.
UNCONFIRMED_EMAIL = (
    "Bluesky takes videos only from accounts whose email is confirmed: confirm the account's "
    "email in the Bluesky app (Settings › Account), and the post goes out on a later slot"
)
_REFRESH_REFUSED = {"ExpiredToken", "InvalidToken", "AccountTakedown", "AuthenticationRequired"}


# -- graphemes ------------------------------------------------------------------------------
#
# Bluesky's limit is in extended grapheme clusters (UAX #29), counted by the `regex` module's
# `\X`, which follows the current Unicode rules (the Indic conjunct rule of 15.1 included).


def graphemes(text: str) -> list[str]:
    """`text` split into user-perceived characters (extended grapheme clusters)."""
    import regex

    return regex.findall(r"\X", text)


def grapheme_count(text: str) -> int:
    return len(graphemes(text))


# -- text and facets -------------------------------------------------------------------------

_URL = re.compile(r"https?://[^\s<>\"]+")
_HASHTAG = re.compile(r"(?<![\w#&])#([^\s#\u200b\ufeff!-/:-@\[-^`{-~]+)")
_TRAILING = ".,;:!?)]}'\""


def fit_text(text: str) -> str:
    """`text` within 300 graphemes and 3000 bytes, cut at a word with "…" when too long."""
    text = text.strip()
    clusters = graphemes(text)
    if len(clusters) <= TEXT_MAX_GRAPHEMES and len(text.encode("utf-8")) <= TEXT_MAX_BYTES:
        return text
    kept = clusters[: TEXT_MAX_GRAPHEMES - 1]
    while len("".join(kept).encode("utf-8")) > TEXT_MAX_BYTES - 3:
        kept.pop()
    cut = "".join(kept)
    space = max(cut.rfind(" "), cut.rfind("\n"))
    if space > len(cut) // 2:
        cut = cut[:space]  # never leave half a word, a half link or half a hashtag
    return cut.rstrip() + "…"


def _facet(text: str, start: int, end: int, kind: str, **feature: str) -> dict[str, Any]:
    """The facet of `kind` ("link", "tag") over text[start:end], its offsets in UTF-8 bytes."""
    prefix = len(text[:start].encode("utf-8"))
    return {
        "index": {"byteStart": prefix, "byteEnd": prefix + len(text[start:end].encode("utf-8"))},
        "features": [{"$type": f"app.bsky.richtext.facet#{kind}", **feature}],
    }


def facets(text: str) -> list[dict[str, Any]]:
    """Links and hashtags of `text` as `app.bsky.richtext.facet`s (UTF-8 byte offsets)."""
    found: list[dict[str, Any]] = []
    taken: list[tuple[int, int]] = []
    for match in _URL.finditer(text):
        start, end = match.span()
        while end > start and text[end - 1] in _TRAILING:
            end -= 1
        taken.append((start, end))
        found.append(_facet(text, start, end, "link", uri=text[start:end]))
    for match in _HASHTAG.finditer(text):
        start, end = match.span()
        tag = match.group(1)
        while tag and tag[-1] in _TRAILING:
            tag, end = tag[:-1], end - 1
        if not tag or tag.isdigit() or grapheme_count(tag) > TAG_MAX_GRAPHEMES:
            continue
        if any(low <= start < high for low, high in taken):
            continue  # a "#" inside a link is the link's
        found.append(_facet(text, start, end, "tag", tag=tag))
    return sorted(found, key=lambda facet: facet["index"]["byteStart"])


def post_text(episode: EpisodeView) -> str:
    """The post's text: the episode's fitted Bluesky text, else its title, description and
    tags as hashtags; always within Bluesky's limits."""
    fitted = episode.texts.get(NAME)
    fitted = fitted.get("text") if isinstance(fitted, dict) else fitted
    if fitted:
        return fit_text(str(fitted))
    parts = [episode.title.strip(), episode.description.strip()]
    text = "\n\n".join(part for part in parts if part)
    words = [re.sub(r"\W", "", tag) for tag in episode.tags]
    missing = ["#" + word for word in words if word and "#" + word.lower() not in text.lower()]
    if missing:
        text += "\n\n" + " ".join(missing)
    return fit_text(text)


# -- record keys -----------------------------------------------------------------------------

_TID_ALPHABET = "234567abcdefghijklmnopqrstuvwxyz"


def _tid(micros: int, clock_id: int) -> str:
    """A TID: a 64-bit integer, top bit 0, 53 bits of microseconds since 1970 and 10 bits of
    clock id, written as 13 base32-sortable characters (https://atproto.com/specs/tid)."""
    value = (micros << 10) | clock_id
    return "".join(_TID_ALPHABET[(value >> shift) & 31] for shift in range(60, -1, -5))


def new_tid(moment: datetime) -> str:
    """A fresh TID of `moment` with a random clock id (the form post record keys take)."""
    micros = int(moment.timestamp()) * 1_000_000 + secrets.randbelow(1_000_000)
    return _tid(micros, secrets.randbelow(1024))


# Derived record keys fall between 2023-01-01 and mid-2027 (2**47 microseconds later).
_DERIVED_TID_START = 1_672_531_200_000_000


def record_key(marker: str) -> str:
    """The post's record key, fixed by its marker (the post's identity): every attempt, from
    any copy of the database, creates the very same record, so a second copy cannot exist.
    Post records take TID keys (PLATFORMS.md §7); "these keys can be specified by the end user
    and could have any value" (https://atproto.com/specs/record-key). Both parts of the TID
    come from the marker's digest, the time kept in a plausible range."""
    digest = int.from_bytes(hashlib.sha256(marker.encode("utf-8")).digest()[:8], "big")
    return _tid(_DERIVED_TID_START + (digest >> 17) % (1 << 47), digest & 1023)


def is_tid(text: str) -> bool:
    return bool(re.fullmatch(r"[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}", text))


def _jwt_expiry(token: str) -> int | None:
    """The `exp` claim of a JWT (seconds since 1970), read without verifying; None if absent."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return int(claims["exp"])
    except (IndexError, ValueError, KeyError, TypeError):
        return None


def _session_answer(answer: dict[str, Any]) -> dict[str, Any]:
    """A createSession/refreshSession answer in the shape accounts.merge_refresh takes."""
    expiry = _jwt_expiry(answer["accessJwt"])
    seconds = None if expiry is None else max(0, expiry - int(now().timestamp()))
    return {
        "access_token": answer["accessJwt"],
        "refresh_token": answer["refreshJwt"],
        "expires_in": seconds,
    }


POSTS = UsageLedger(NAME)  # `daily_cap` posts per account and UTC day, the bucket "posts"


def posts_today(db: Database, account: str, day: str) -> int:
    return POSTS.used(db, account, "posts", day)


class BlueskyPlatform(AccountPlatform):
    connect_arguments = " --handle H"
    name = NAME
    title = "Bluesky"
    text_fields: ClassVar[dict[str, TextField] | None] = {"text": TextField("short", _TEXT_LIMITS)}
    paced = True  # a bot posts on the minute; a person a while after (pace.py)
    counters = True
    profile_url = "https://bsky.app/profile/{}"

    @classmethod
    def limits_report(
        cls, db: Database, moment: datetime, settings: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Posts on `moment`'s UTC day against the daily cap (`account` None: none connected)."""
        account = accounts.load_account(db, NAME)
        if account is None:
            return {"platform": NAME, "account": None}
        day = POSTS.day(moment)
        return {
            "platform": NAME,
            "account": account.name,
            "day": day,
            "posts": posts_today(db, account.account_id, day),
            "daily_cap": {**cls.settings_defaults, **(settings or {})}["daily_cap"],
        }

    @classmethod
    def limits_view(cls, report: dict[str, Any]) -> LimitsView:
        if not report["account"]:
            return LimitsView(("No Bluesky account connected",))
        posts = f"{report['posts']} of {report['daily_cap']} posts today ({report['day']} UTC)"
        return LimitsView((f"Bluesky {report['account']}: {posts}",))

    # an app password opens one session (com.atproto.server.createSession); only the session's
    # tokens are kept: https://docs.bsky.app/docs/api/com-atproto-server-create-session
    signin: ClassVar[SignIn] = SignIn(
        help="""Connect a Bluesky account with an app password; cron posts to it from then on.

        Make an app password in Bluesky: Settings › Privacy and security › App passwords. It is
        used once to open a session and never stored: Autoretto keeps only the session's tokens,
        sealed in the vault.

        Example: autoretto connect bluesky --handle lofi.bsky.social
        """,
        flags=(Flag("--handle", "Your Bluesky handle, e.g. lofi.bsky.social.", required=True),),
        secret=Secret("App password", env="BLUESKY_APP_PASSWORD"),
        needs_browser=lambda given: False,
    )

    @classmethod
    def check_sign_in(cls, attempt: Attempt) -> None:
        attempt.given["handle"] = str(attempt.given.get("handle") or "").strip().lstrip("@")
        if not attempt.given["handle"]:
            raise UsageError("give your Bluesky handle, e.g. --handle lofi.bsky.social")

    @classmethod
    def signed_in(cls, attempt: Attempt) -> Draft:
        """One createSession with the app password; the session's tokens, never the password."""
        settings, handle = attempt.settings, attempt.given["handle"]
        url = settings["pds"].rstrip("/") + "/xrpc/com.atproto.server.createSession"
        password = {"identifier": handle, "password": attempt.client.secret}
        try:
            answer = cls.sign_in_call(attempt, "POST", url, what="open a session", json=password)
        except SignInRefused as refused:
            if refused.status == 401 or refused.code == "AuthenticationRequired":
                raise UsageError(
                    f"Bluesky did not accept @{handle} with that app password; check both, or "
                    "make a new app password in Settings › Privacy and security › App passwords"
                ) from None
            if refused.code == "AuthFactorTokenRequired":
                raise UsageError(
                    "Bluesky asks for an email code: that is the account password, not an app "
                    "password; make an app password and use it instead"
                ) from None
            raise
        pds = _pds_endpoint(answer.get("didDoc")) or settings["pds"].rstrip("/")
        tokens = accounts.merge_refresh({"pds": pds, "did": answer["did"]}, _session_answer(answer))
        handle = answer.get("handle") or handle
        meta = {"handle": handle, "pds": pds, "email_confirmed": answer.get("emailConfirmed")}
        lines = [
            f"Connected Bluesky account @{handle} ({answer['did']}).",
            "Autoretto keeps the session, not the app password; revoke it any time in Bluesky.",
        ]
        if answer.get("emailConfirmed") is False:
            lines.append(
                "Bluesky takes videos only from accounts with a confirmed email: confirm yours."
            )
        return Draft(
            account_id=answer["did"], name="@" + handle, tokens=tokens, meta=meta, lines=lines
        )

    can_find_attempts = True
    #: the automatic look happens on the next slot at least 15 minutes after the attempt
    look_delay: ClassVar[timedelta] = timedelta(minutes=15)
    settings_defaults: ClassVar[dict[str, Any]] = {
        "pds": "https://bsky.social",
        "video_service": "https://video.bsky.app",
        "video_service_did": "did:web:video.bsky.app",
        "daily_cap": 10,
        "format": "vertical",  # which of the episode's renders: vertical | landscape
        "langs": [],  # e.g. ["en"]
        "timeout": 60.0,
        "upload_timeout": 300.0,
        "poll_wait": 3.0,  # seconds between job-status polls
        "poll_tries": 100,
    }
    address_settings = ("pds", "video_service")
    setting_choices: ClassVar[dict[str, tuple[str, ...]]] = {"format": ("vertical", "landscape")}
    positive_settings = ("poll_tries",)

    #: a repeated createRecord cannot make a second post (its record key is fixed by the
    #: post), so a 5xx to it is passing, and the next try asks for the key first
    statuses: ClassVar[dict[int, str]] = {500: "passing"}

    @classmethod
    def setting_problems(cls, settings: dict[str, Any]) -> list[tuple[str, str]]:
        found = []
        if not settings["video_service_did"].startswith("did:"):
            found.append(("video_service_did", 'must be a DID such as "did:web:video.bsky.app"'))
        if not all(isinstance(lang, str) for lang in settings["langs"]):
            found.append(("langs", 'list language codes such as ["en"]'))
        return found

    # -- readiness -------------------------------------------------------------------------

    def unsuitable_reason(self, episode: EpisodeView) -> str | None:
        if episode.duration is not None and episode.duration > VIDEO_MAX_SECONDS:
            minutes = episode.duration / 60
            return f"Bluesky takes videos of up to 3 minutes; this one is {minutes:.1f} minutes"
        video = self.video_path(episode)
        if video.is_file() and video.stat().st_size > VIDEO_MAX_BYTES:
            return "Bluesky takes videos of up to 300 MB (300,000,000 bytes); this one is larger"
        return None

    def limit_reason(self, request: PostRequest) -> str | None:
        account = self.account_row()
        if account is None or request.handles.get("counted_day"):
            return None  # or an earlier try counted it already: finishing it costs no post
        cap = self.settings["daily_cap"]
        if posts_today(self.db, account.account_id, POSTS.day(self.now)) >= cap:
            return _cap_reason(account, cap)
        return None

    # -- the session ------------------------------------------------------------------------

    def refresh(self, tokens: accounts.Tokens) -> dict[str, Any]:
        """A refreshSession with the refresh token, answered as merge_refresh takes it (the
        refresh token rotates too); else RefreshRefused / RefreshFailed."""
        response = refresh_request(
            "the Bluesky server",
            "POST",
            tokens["pds"].rstrip("/") + "/xrpc/com.atproto.server.refreshSession",
            headers={"Authorization": f"Bearer {tokens['refresh_token']}"},
            timeout=self.settings["timeout"],
        )
        if response.status_code == 200:
            try:
                return _session_answer(response.json())
            except (ValueError, KeyError, TypeError):
                raise accounts.RefreshFailed("Bluesky answered a refresh without tokens") from None
        error, message = self.problem(response)
        if response.status_code in (400, 401) and error in _REFRESH_REFUSED:
            raise accounts.RefreshRefused(f"{error}: {message}" if message else error)
        raise accounts.RefreshFailed(
            f"Bluesky answered {response.status_code} to a session refresh"
            + (f" ({error})" if error else ""),
            retry_after=retry_after(response),
        )

    def token_refused(self, response: Any) -> bool:
        return self.problem(response)[0] == "ExpiredToken"

    def _pds(self) -> str:
        return (self.tokens().get("pds") or self.settings["pds"]).rstrip("/")

    def classify(self, response: Any, *, sends: bool = False) -> PlatformError:
        if self.problem(response)[0] in _NEEDS_PERSON_ERRORS:
            return self.reconnect(f"Bluesky refused the account ({self.said(response)})")
        return super().classify(response, sends=sends)

    # -- public counters (`autoretto stats collect`) ---------------------------------------

    def read_counters(self, ids: list[str]) -> Iterator[tuple[str, dict[str, int | None]]]:
        """(record key, {"likes", "reposts", "replies"}) of the account's posts `ids` that
        Bluesky still shows, quotes counted as reposts: 25 per `app.bsky.feed.getPosts` call
        (the most it takes), passing trouble retried as a post's is."""
        url = self._pds() + "/xrpc/app.bsky.feed.getPosts"
        did = self.account().account_id
        for start in range(0, len(ids), STATS_BATCH):
            batch = ids[start : start + STATS_BATCH]
            uris = [("uris", f"at://{did}/{POST_COLLECTION}/{rkey}") for rkey in batch]
            response = self.retrying(lambda uris=uris: self.call("GET", url, params=uris))
            for post in json_body(response).get("posts") or []:
                if not isinstance(post, dict) or not post.get("uri"):
                    continue
                reposts = _count(post.get("repostCount"))
                if reposts is not None:
                    reposts += _count(post.get("quoteCount")) or 0
                likes, replies = _count(post.get("likeCount")), _count(post.get("replyCount"))
                rkey = str(post["uri"]).rsplit("/", 1)[-1]
                yield rkey, {"likes": likes, "reposts": reposts, "replies": replies}

    # -- publish ------------------------------------------------------------------------------

    def _publish(self, request: PostRequest) -> Published:
        return self.retrying(lambda: self._send(request))

    def _send(self, request: PostRequest) -> Published:
        video = self.video_file(request.episode)
        handles = self.handles(request)
        if handles.get("rkey"):
            # An earlier try chose this key and may have created the record: ask first.
            found = self._get_record(handles["rkey"])
            if found is not None:
                return found
        blob = handles.get("blob")
        if blob is None:
            self._check_upload_limits()
            blob = self._upload_video(request, video)
        return self._create(request, handles, blob, video)

    def _check_upload_limits(self) -> None:
        method = "app.bsky.video.getUploadLimits"
        token = self._service_token(self.settings["video_service_did"], method)
        answer = self._read(self.call("GET", self._video_url(method), token=token), method)
        if not answer.get("canUpload", False):
            said = answer.get("message") or answer.get("error") or "no reason given"
            raise LimitReached(f"Bluesky takes no more videos from this account today ({said})")

    def _service_token(self, audience: str, method: str) -> str:
        expires = int((now() + timedelta(minutes=30)).timestamp())
        url = self._pds() + "/xrpc/com.atproto.server.getServiceAuth"
        params = {"aud": audience, "lxm": method, "exp": expires}
        token = self._read(self.call("GET", url, params=params), "getServiceAuth").get("token")
        if not token:
            raise PassingError("Bluesky gave no service token (getServiceAuth)")
        return str(token)

    @staticmethod
    def _read(response: Any, method: str) -> dict[str, Any]:
        """The JSON of an answer that comes before the post is made: one cut short (not JSON)
        is passing, since nothing was posted yet (not a lost answer)."""
        body = json_body(response)
        if not body:
            raise PassingError(f"Bluesky answered {method} with no JSON; the next try asks again")
        return body

    def _video_url(self, method: str) -> str:
        return self.settings["video_service"].rstrip("/") + "/xrpc/" + method

    def _upload_video(self, request: PostRequest, video: Path) -> dict[str, Any]:
        """Send the video to the video service and wait for its blob. (An upload is no post:
        sending it again costs nothing but time.)"""
        host = urlsplit(self._pds()).hostname or ""
        service_token = self._service_token(f"did:web:{host}", "com.atproto.repo.uploadBlob")
        with open(video, "rb") as body:
            response = self.call(
                "POST",
                self._video_url("app.bsky.video.uploadVideo"),
                token=service_token,
                check=False,
                params={"did": self.account().account_id, "name": f"{request.marker}.mp4"},
                data=body,
                headers={"Content-Type": "video/mp4", "Content-Length": str(video.stat().st_size)},
                timeout=self.settings["upload_timeout"],
            )
        # The answer comes flat ({jobId, state, blob?, error?}) or, for some errors, wrapped in
        # jobStatus (bluesky-social/atproto#3097); both are read.
        body = json_body(response)
        status = body.get("jobStatus") if isinstance(body.get("jobStatus"), dict) else body
        blob = status.get("blob") or body.get("blob")
        if blob:
            return blob  # processed (or already_exists carrying the blob)
        error = str(status.get("error") or body.get("error") or "")
        if error == "unconfirmed_email":
            raise NeedsPerson(UNCONFIRMED_EMAIL)
        job_id = str(status.get("jobId") or "")
        if not job_id:
            if response.status_code >= 300:
                raise self.classify(response)
            raise PassingError("Bluesky took the video without naming its processing job")
        # A new job, or already_exists as an HTTP error naming the earlier job: its blob comes
        # through getJobStatus (bsky-docs docs/tutorials/video.mdx).
        request.heartbeat()
        return self._wait_for_job(request, service_token, job_id)

    def _wait_for_job(self, request: PostRequest, service_token: str, job_id: str) -> dict:
        url = self._video_url("app.bsky.video.getJobStatus")
        for attempt in range(int(self.settings["poll_tries"])):
            if attempt:
                self.sleep(self.settings["poll_wait"])
            found = self.call("GET", url, token=service_token, params={"jobId": job_id})
            answer = self._read(found, "getJobStatus")
            status = answer.get("jobStatus", {})
            if status.get("blob"):
                return status["blob"]
            # the video service's word for a job that failed for good (a done one holds the blob)
            if status.get("state") == "JOB_STATE_FAILED":
                said = status.get("error") or status.get("message") or "no reason given"
                raise PassingError(f"Bluesky could not process the video ({said})")
            request.heartbeat()
        raise PassingError("Bluesky is still processing the video; the next run tries again")

    def _record(self, request: PostRequest, blob: dict[str, Any], video: Path) -> dict[str, Any]:
        text = post_text(request.episode)
        width, height = aspect_ratio(video, self.settings["format"])
        record: dict[str, Any] = {
            "$type": POST_COLLECTION,
            "text": text,
            "createdAt": now().strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "embed": {
                "$type": "app.bsky.embed.video",
                "video": blob,
                "aspectRatio": {"width": width, "height": height},
                "alt": request.episode.title[:1000],
            },
        }
        found = facets(text)
        if found:
            record["facets"] = found
        if self.settings["langs"]:
            record["langs"] = list(self.settings["langs"])[:3]
        return record

    def _create(
        self, request: PostRequest, handles: dict[str, Any], blob: dict[str, Any], video: Path
    ) -> Published:
        account = self.account()
        did = account.account_id
        url = self._pds() + "/xrpc/com.atproto.repo.createRecord"
        rkey = handles.get("rkey") or record_key(request.marker)
        day, cap = handles.get("counted_day"), self.settings["daily_cap"]
        if not day:
            day = POSTS.day(self.now)
            if not POSTS.charge(self.db, did, "posts", 1, cap, day):
                raise LimitReached(_cap_reason(account, cap))
        handles.update({"rkey": rkey, "blob": blob, "counted_day": day, "did": did})
        self.save(request, handles)  # the key is on record before the create call
        body = {
            "repo": did,
            "collection": POST_COLLECTION,
            "rkey": rkey,
            "record": self._record(request, blob, video),
        }
        try:
            response = self.call("POST", url, json=body, sends=True)
        except (ContentRejected, NeedsPerson, LimitReached) as refused:
            if isinstance(refused, ContentRejected):
                found = self._get_record(rkey)  # "already exists" means it is there
                if found is not None:
                    return found
                if "blob" in refused.reason.lower():
                    handles.pop("blob", None)  # the blob was collected; upload again next try
            # Nothing was posted: the post is given back to the day's count.
            POSTS.give_back(self.db, did, "posts", day=day)
            handles.pop("counted_day", None)
            self.save(request, handles)
            raise
        uri = json_body(response).get("uri") or f"at://{did}/{POST_COLLECTION}/{rkey}"
        log.info("bluesky: post %s created as %s", request.post_id, uri)
        return Published(rkey, self._post_url(rkey))

    def _post_url(self, rkey: str) -> str:
        account = self.account()
        return POST_URL.format(account.meta.get("handle") or account.account_id, rkey)

    def _get_record(self, rkey: str) -> Published | None:
        """The post record with this key, or None when the repo has none (RecordNotFound)."""
        params = {"repo": self.account().account_id, "collection": POST_COLLECTION, "rkey": rkey}
        try:
            self.call("GET", self._pds() + "/xrpc/com.atproto.repo.getRecord", params=params)
        except ContentRejected as error:
            if "RecordNotFound" in error.reason or "not found" in error.reason.lower():
                return None
            raise
        return Published(rkey, self._post_url(rkey))

    def _find_attempt(self, request: PostRequest) -> Published | None:
        return self._get_record(request.handles.get("rkey") or record_key(request.marker))


def _cap_reason(account: accounts.Account, cap: int) -> str:
    who = account.meta.get("handle") or account.account_id
    return f"Bluesky: {cap} posts today from @{who}, the daily cap (daily_cap); more tomorrow (UTC)"


def aspect_ratio(video: Path, video_format: str) -> tuple[int, int]:
    """The video's width and height (read with ffmpeg); the format's usual size if unreadable."""
    try:
        from ..ffmpeg import probe

        stream = probe(video).video
        if stream is not None and stream.width > 0 and stream.height > 0:
            return stream.width, stream.height
    except (ImportError, AutorettoError, OSError) as error:
        log.warning("bluesky: size of %s unknown (%s)", video.name, error)
    return (1080, 1920) if video_format == "vertical" else (1920, 1080)


# -- connecting ------------------------------------------------------------------------------


def _pds_endpoint(did_document: Any) -> str | None:
    """The account's own PDS from its DID document (a bsky.social account lives on another
    host, and the video service wants that host as the upload token's audience)."""
    services = did_document.get("service") if isinstance(did_document, dict) else None
    for service in services or []:
        if isinstance(service, dict) and str(service.get("id", "")).endswith("#atproto_pds"):
            endpoint = service.get("serviceEndpoint")
            if isinstance(endpoint, str) and good_base_url(endpoint):
                return endpoint.rstrip("/")
    return None


limits_report = BlueskyPlatform.limits_report


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and value >= 0 else None
