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

A reply to a comment (issue 28) is a post record whose `reply` holds strong refs to the thread's
root and to the comment, under a record key derived from the reply's identity, so it too is
made once and found by `getRecord`; a comment Bluesky no longer shows (`app.bsky.feed.getPosts`)
is gone, and the reply with it.

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
    CarouselSpec,
    Comment,
    CommentGone,
    CommentPage,
    ContentRejected,
    EpisodeView,
    LimitReached,
    LimitsView,
    NeedsPerson,
    PassingError,
    PlatformError,
    PostRequest,
    Published,
    ReplyRequest,
    UsageLedger,
    carousel_view,
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
    # The audience (issue 28): the replies under our posts are read from the post's thread
    # (app.bsky.feed.getPostThread) and answered as replies (app.bsky.feed.post with `reply`).
    comments = "reply"
    comments_note = "replies in the post's thread; answered as replies from the account"
    # An app password session reads threads and creates posts; it needs no other grant
    # (https://docs.bsky.app/docs/advanced-guides/oauth-client#scopes: the session of an app
    # password has the scope transition:generic, "everything but DMs").
    comment_scope = "an app password session (scope transition:generic)"
    # A reply is a post record: text of at most 300 graphemes
    # (https://github.com/bluesky-social/atproto/blob/main/lexicons/app/bsky/feed/post.json),
    # links as facets; Bluesky asks no AI disclosure of a reply.
    reply_length = TEXT_MAX_GRAPHEMES
    reply_links = True
    # Bluesky's own limit on writes is 5000 points an hour and 35000 a day, a created record 3
    # points (https://docs.bsky.app/docs/advanced-guides/rate-limits); a person answers far
    # fewer: 50 replies a day per account.
    replies_per_day = 50
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

    # -- comments: reading the replies under our posts (issue 28, `autoretto inbox collect`) --
    #
    # A Bluesky "comment" is a reply in the post's thread, read with app.bsky.feed.getPostThread
    # (https://docs.bsky.app/docs/api/app-bsky-feed-get-post-thread): one call gives the whole
    # tree down to `depth` levels. It has no cursor of its own, so the cursor kept is the newest
    # `indexedAt` seen: the next read yields only replies indexed at or after it (the one at the
    # same instant again, which the inbox stores once).

    def _read_comments(self, post_id: str, cursor: str | None) -> Iterator[CommentPage]:
        did = self.account().account_id
        root_uri = f"at://{did}/{POST_COLLECTION}/{post_id}"
        url = self._pds() + "/xrpc/app.bsky.feed.getPostThread"
        params = {"uri": root_uri, "depth": THREAD_DEPTH, "parentHeight": 0}
        thread = self.retrying(lambda: self._thread(url, params))
        if thread is None:
            return  # the post was deleted: no comments to read any more
        root = thread.get("post") or {}
        root_ref = {"uri": root.get("uri") or root_uri, "cid": root.get("cid")}
        found: list[Comment] = []
        newest = cursor
        gone = tuple(_deleted_replies(thread))
        for reply, parent_uri in _thread_replies(thread):
            indexed = str(reply.get("indexedAt") or "")
            if cursor is not None and indexed < cursor:
                continue
            comment = _comment(reply, post_id, parent_uri, root_ref, did)
            if comment is None:
                continue
            found.append(comment)
            newest = max(newest or indexed, indexed)
        yield CommentPage(tuple(found), newest, gone)

    def _thread(self, url: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The thread of the post, or None when Bluesky no longer has the post. A rate limit
        is LimitReached: the inbox waits for the next window (what was read stays stored)."""
        response = self.call("GET", url, params=params, check=False)
        if response.status_code < 300:
            return json_body(response).get("thread") or None
        code = self.problem(response)[0]
        if code == "NotFound":
            return None
        if response.status_code == 429:
            # https://docs.bsky.app/docs/advanced-guides/rate-limits
            raise LimitReached(
                f"Bluesky is rate limiting reads ({self.said(response)})",
                retry_after=retry_after(response),
            )
        error = self.classify(response)
        if isinstance(error, NeedsPerson):
            raise NeedsPerson(f"{error.reason} (reading comments needs {self.comment_scope})")
        raise error

    # -- replies (issue 28) ---------------------------------------------------------------
    #
    # A reply is an app.bsky.feed.post record whose `reply` holds strong refs (uri + cid) to the
    # thread's root and to the comment answered
    # (https://docs.bsky.app/docs/advanced-guides/posts#replies), made with
    # com.atproto.repo.createRecord under a record key derived from the reply's marker, as a
    # post's is: a second create of the same reply is refused by the PDS, and getRecord of
    # that key finds it from any copy of the database.
    #
    # The limits these replies keep: the PDS's write limit is 5000 points an hour and 35000 a
    # day per account, a create costing 3 (https://docs.bsky.app/docs/advanced-guides/rate-limits),
    # and the same 300 graphemes as a post (lexicons/app/bsky/feed/post.json).
    # (The class's comment attributes are set with its other facts, above.)

    def _reply(self, request: ReplyRequest) -> Published:
        try:
            return self.retrying(lambda: self._send_reply(request))
        except _RateLimited as limited:  # longer than a run waits: nothing was created
            raise LimitReached(limited.reason, retry_after=limited.retry_after) from None

    def _send_reply(self, request: ReplyRequest) -> Published:
        handles = request.handles  # kept across the tries of this run, and on record
        rkey = handles.get("rkey") or record_key(request.marker)
        if handles.get("rkey"):
            # An earlier try chose this key and may have created the record: ask first.
            found = self._get_record(rkey)
            if found is not None:
                return found
        root, parent = _reply_refs(request.comment)
        if not self._still_there(parent["uri"]):
            raise CommentGone(f"Bluesky no longer shows the comment {parent['uri']}")
        did = self.account().account_id
        handles.update({"rkey": rkey, "did": did})
        request.save_handles(dict(handles))  # the key is on record before the create call
        record: dict[str, Any] = {
            "$type": POST_COLLECTION,
            "text": request.text,
            "createdAt": now().strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "reply": {"root": root, "parent": parent},
        }
        found_facets = facets(request.text)
        if found_facets:
            record["facets"] = found_facets
        if self.settings["langs"]:
            record["langs"] = list(self.settings["langs"])[:3]
        body = {"repo": did, "collection": POST_COLLECTION, "rkey": rkey, "record": record}
        url = self._pds() + "/xrpc/com.atproto.repo.createRecord"
        try:
            response = self.call("POST", url, json=body, sends=True, accept=(429,))
        except ContentRejected:
            found = self._get_record(rkey)  # "already exists" means it is there
            if found is not None:
                return found
            raise
        if response.status_code == 429:  # a write refused for the rate limit made nothing
            said = self.said(response)
            wait = retry_after(response)
            raise _RateLimited(f"Bluesky is rate limiting replies ({said})", retry_after=wait)
        log.info("bluesky: reply %s created as %s", request.reply_id, rkey)
        return Published(rkey, self._post_url(rkey))

    def _still_there(self, uri: str) -> bool:
        """Does Bluesky still show the post `uri` (app.bsky.feed.getPosts leaves out a deleted
        one: https://docs.bsky.app/docs/api/app-bsky-feed-get-posts)?"""
        response = self.call(
            "GET", self._pds() + "/xrpc/app.bsky.feed.getPosts", params=[("uris", uri)]
        )
        shown = json_body(response).get("posts") or []
        return any(isinstance(post, dict) and post.get("uri") == uri for post in shown)

    def _find_reply(self, request: ReplyRequest) -> Published | None:
        return self._get_record(request.handles.get("rkey") or record_key(request.marker))

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
        width, height = aspect_ratio(video, self.settings["format"])
        embed = {
            "$type": "app.bsky.embed.video",
            "video": blob,
            "aspectRatio": {"width": width, "height": height},
            "alt": request.episode.title[:1000],
        }
        return self._post_record(request, embed, request.episode)

    def _create(
        self,
        request: PostRequest,
        handles: dict[str, Any],
        blob: dict[str, Any],
        video: Path | None,
        *,
        embed: dict[str, Any] | None = None,
    ) -> Published:
        """Create the post record under the key the marker gives (charged to the day's cap
        first): the video's (`blob` of `video`), or a carousel's (`embed`: its images, whose
        blobs are `blob["blobs"]`)."""
        account = self.account()
        did = account.account_id
        url = self._pds() + "/xrpc/com.atproto.repo.createRecord"
        rkey = handles.get("rkey") or record_key(request.marker)
        day, cap = handles.get("counted_day"), self.settings["daily_cap"]
        if not day:
            day = POSTS.day(self.now)
            if not POSTS.charge(self.db, did, "posts", 1, cap, day):
                raise LimitReached(_cap_reason(account, cap))
        media = {"blob": blob} if embed is None else {"blobs": blob["blobs"]}
        handles.update({"rkey": rkey, **media, "counted_day": day, "did": did})
        self.save(request, handles)  # the key is on record before the create call
        if embed is None:
            assert video is not None
            record = self._record(request, blob, video)
        else:
            record = self._post_record(request, embed, carousel_view(request.episode))
        body = {"repo": did, "collection": POST_COLLECTION, "rkey": rkey, "record": record}
        try:
            response = self.call("POST", url, json=body, sends=True)
        except (ContentRejected, NeedsPerson, LimitReached) as refused:
            if isinstance(refused, ContentRejected):
                found = self._get_record(rkey)  # "already exists" means it is there
                if found is not None:
                    return found
                if "blob" in refused.reason.lower():
                    handles.pop("blob", None)  # the blob was collected; upload again next try
                    handles.pop("blobs", None)
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

    # -- carousels (issue 29) -----------------------------------------------------------------

    #: up to 4 images in one post, each a blob of at most 1,000,000 bytes with its alt text
    #: (lexicons/app/bsky/embed/images.json: images maxLength 4, image maxSize 1000000, alt
    #: required); 4:5 portrait cards, whose aspectRatio is given so the app draws no crop
    carousel = CarouselSpec(
        least=1,
        most=4,
        size=(1080, 1350),
        max_bytes=1_000_000,
        source="https://github.com/bluesky-social/atproto/blob/main/lexicons/app/bsky/embed/images.json",
        alt_text=True,
    )

    def _publish_carousel(self, request: PostRequest) -> Published:
        return self.retrying(lambda: self._send_carousel(request))

    def _send_carousel(self, request: PostRequest) -> Published:
        handles = self.handles(request)
        if handles.get("rkey"):
            found = self._get_record(handles["rkey"])  # an earlier try may have made it
            if found is not None:
                return found
        blobs = handles.get("blobs")
        if not blobs or len(blobs) != len(request.images):
            # Uploads are no post: a blob no record names is collected by the PDS.
            blobs = [self._upload_image(image) for image in request.images]
        embed = {
            "$type": "app.bsky.embed.images",
            "images": [
                {
                    "image": blob,
                    "alt": image.alt[:1000],
                    "aspectRatio": {"width": image.width, "height": image.height},
                }
                for blob, image in zip(blobs, request.images, strict=True)
            ],
        }
        return self._create(request, handles, {"blobs": blobs}, None, embed=embed)

    def _upload_image(self, image: Any) -> dict[str, Any]:
        """One card as a blob (com.atproto.repo.uploadBlob: the bytes as the body, their MIME
        type as Content-Type; the answer is `{"blob": ...}`)."""
        path = Path(image.path)
        if path.stat().st_size > 1_000_000:
            raise ContentRejected(f"the card {path.name} is over Bluesky's 1,000,000 bytes")
        response = self.call(
            "POST",
            self._pds() + "/xrpc/com.atproto.repo.uploadBlob",
            data=path.read_bytes(),
            headers={"Content-Type": image.mime},
        )
        blob = self._read(response, "uploadBlob").get("blob")
        if not isinstance(blob, dict):
            raise PassingError("Bluesky took the card without answering its blob")
        return blob

    def _post_record(
        self, request: PostRequest, embed: dict[str, Any], episode: EpisodeView
    ) -> dict[str, Any]:
        """The app.bsky.feed.post record of `episode`'s text with `embed` (its video, or a
        carousel's images)."""
        text = post_text(episode)
        record: dict[str, Any] = {
            "$type": POST_COLLECTION,
            "text": text,
            "createdAt": now().strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "embed": embed,
        }
        found = facets(text)
        if found:
            record["facets"] = found
        if self.settings["langs"]:
            record["langs"] = list(self.settings["langs"])[:3]
        return record


class _RateLimited(PassingError):
    """A reply's createRecord answered 429: waited out when short (retrying), else a limit."""


def _reply_refs(comment: Comment) -> tuple[dict[str, str], dict[str, str]]:
    """The strong refs (uri, cid) of the thread's root (our post) and of the comment a reply
    answers, from the comment's `ref` as it was stored ({"uri", "cid", "root": {"uri", "cid"}},
    or {"parent", "root"}); a `ref` without a root makes the comment the thread's root.
    ContentRejected (a person looks) when the comment's own uri or cid is missing."""
    ref = comment.ref or {}
    parent = ref.get("parent") or {"uri": ref.get("uri") or comment.id, "cid": ref.get("cid")}
    root = ref.get("root") or parent
    for name, strong in (("parent", parent), ("root", root)):
        if not (isinstance(strong, dict) and strong.get("uri") and strong.get("cid")):
            raise ContentRejected(
                f"the comment {comment.id} was stored without its {name}'s uri and cid; collect "
                "the comments again"
            )
    return (
        {"uri": str(root["uri"]), "cid": str(root["cid"])},
        {"uri": str(parent["uri"]), "cid": str(parent["cid"])},
    )


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


# -- comments (issue 28) ------------------------------------------------------------------------

#: how deep a thread is read: replies to replies to this many levels (getPostThread takes 0 to
#: 1000: https://docs.bsky.app/docs/api/app-bsky-feed-get-post-thread)
THREAD_DEPTH = 20
_THREAD_VIEW = "app.bsky.feed.defs#threadViewPost"


def _thread_replies(thread: dict[str, Any]) -> Iterator[tuple[dict[str, Any], str]]:
    """(postView, the uri of the post it answers) of every reply in the tree, depth first;
    deleted and blocked ones (notFoundPost, blockedPost) and what is under them left out."""
    waiting = [thread]
    while waiting:
        node = waiting.pop()
        parent_uri = str((node.get("post") or {}).get("uri") or "")
        children = [
            child
            for child in node.get("replies") or []
            if isinstance(child, dict)
            and isinstance(child.get("post"), dict)
            and child.get("$type", _THREAD_VIEW) == _THREAD_VIEW
        ]
        for child in children:
            yield child["post"], parent_uri
        waiting.extend(reversed(children))


def _deleted_replies(thread: dict[str, Any]) -> Iterator[str]:
    """The at-uris of the replies the thread shows deleted (app.bsky.feed.defs#notFoundPost)."""
    waiting = [thread]
    while waiting:
        node = waiting.pop()
        for child in node.get("replies") or []:
            if not isinstance(child, dict):
                continue
            if child.get("$type") == "app.bsky.feed.defs#notFoundPost" and child.get("uri"):
                yield str(child["uri"])
            elif isinstance(child.get("post"), dict):
                waiting.append(child)


def _comment(
    view: dict[str, Any], post_id: str, parent_uri: str, root: dict[str, Any], did: str
) -> Comment | None:
    """A reply's postView as a Comment: its id is its at-uri; `ref` holds what a reply to it
    needs (the thread's root and the reply itself as parent: app.bsky.feed.post#replyRef)."""
    uri, cid = view.get("uri"), view.get("cid")
    if not uri or not cid:
        return None
    author = view.get("author") or {}
    record = view.get("record") or {}
    return Comment(
        id=str(uri),
        post_id=post_id,
        author="@" + str(author.get("handle") or author.get("did") or "unknown"),
        author_id=str(author.get("did") or ""),
        text=str(record.get("text") or ""),
        published_at=_instant(record.get("createdAt")) or _instant(view.get("indexedAt")),
        parent_id=None if parent_uri == root.get("uri") else parent_uri,
        mine=author.get("did") == did,
        ref={"root": root, "parent": {"uri": str(uri), "cid": str(cid)}},
    )


def _instant(value: Any) -> str | None:
    """An atproto datetime as the ledger keeps instants (UTC, seconds, Z); None if unreadable."""
    from ..clock import iso

    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return iso(moment) if moment.tzinfo else None
