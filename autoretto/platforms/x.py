"""X (API v2): a video post paid from prepaid credits, never twice, never with a link.

Connect once (`autoretto connect x`): OAuth 2.0 with PKCE and `offline.access`. Refresh
tokens are single-use: the rotated one is saved under the account's lock (accounts.fresh_tokens),
since reusing an old one breaks the whole token family.

A post (PLATFORMS.md §5): chunked media upload (`/2/media/upload/initialize`, `/{id}/append`
per chunk, `/{id}/finalize`, then `GET /2/media/upload?command=STATUS` while X processes it),
then `POST /2/tweets` with the media id. Links are stripped from the text (and the log says
so): a link costs about 13 times more and is against our rule.

Credits (the `credit_ledger` table): reserved when a post is queued (`limit_reason` at the
latest), charged once it is live, released when it fails for good. The daily caps (`daily_cap`
for the installation, `channel_daily_cap` / `channel_caps` per channel) count what is reserved
and what was charged that UTC day. HTTP 402 (prepaid credits exhausted) pauses X for every
channel for `pause_minutes` instead of failing post after post.

Never twice: X has no idempotency key. The media key and the text are saved on the attempt
before the create call; after a lost answer the account's own recent posts (owned reads) are
listed and matched by that media key or text, on the next slot at least 15 minutes after.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..clock import from_iso, iso, now
from ..errors import AutorettoError
from ..ledger import accounts as ledger
from ..oauth import TokenEndpoint, json_body
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
)
from .http import CreatesOnce, problem_of, sign_in_tokens
from .signin import Attempt, Draft, Flag, Secret, SignIn
from .text import TextField, fit, x_weighted

if TYPE_CHECKING:
    from ..ledger.store import Store as Database

log = logging.getLogger("autoretto.platforms.x")

NAME = "x"
TITLE = "X"
SCOPES = ("tweet.read", "tweet.write", "users.read", "offline.access", "media.write")
POST_URL = "https://x.com/{}/status/{}"
PROFILE_URL = "https://x.com/{}"
TEXT_MAX_WEIGHT = 280
TEXT_LIMITS = (("weighted characters", x_weighted, TEXT_MAX_WEIGHT),)
# What X takes for `tweet_video`, by the posting account's tier (limits follow the account,
# not the API plan). standard: "Duration must be between 0.5 seconds and 140 seconds", "File
# size must not exceed 512 mb" (xdevplatform/docs x-api/media/quickstart/best-practices.mdx).
# premium: 125 minutes and 16 GB as PLATFORMS.md relays the same page's newer revision
# (UNCONFIRMED on the page snapshot here; third-party pages say 10 minutes). POST /2/tweets
# re-checks and answers 403 "not allowed to post a video longer than ...".
VIDEO_LIMITS: dict[str, tuple[float, int]] = {
    "standard": (140.0, 512 * 1024 * 1024),
    "premium": (125 * 60.0, 16 * 1024**3),
}
VIDEO_MIN_SECONDS = 0.5
MICROS = 1_000_000

_URL = re.compile(r"(?:https?://|www\.)\S+", re.IGNORECASE)
_BARE_DOMAIN = re.compile(r"\b[\w-]+(?:\.[\w-]+)*\.(?:com|net|org|io|co|fm|app|ly|me|tv|gg)\b/?\S*")


# -- text --------------------------------------------------------------------------------------


def strip_links(text: str) -> tuple[str, int]:
    """`text` without its links (and bare domains); returns (text, how many were removed)."""
    text, links = _URL.subn("", text)
    text, domains = _BARE_DOMAIN.subn("", text)
    text = re.sub(r"[ \t]+\n", "\n", re.sub(r"[ \t]{2,}", " ", text))
    return re.sub(r"\n{3,}", "\n\n", text).strip(), links + domains


def post_text(episode: EpisodeView) -> tuple[str, int]:
    """(the post's text without links, within 280 weighted characters; links removed)."""
    fitted = episode.texts.get(NAME)
    if isinstance(fitted, dict):
        fitted = str(fitted.get("text") or "")
    if not (isinstance(fitted, str) and fitted):
        fitted = "\n\n".join(p for p in (episode.title.strip(), episode.description.strip()) if p)
    text, removed = strip_links(fitted)
    return fit(text, TEXT_LIMITS), removed


def _comparable(text: str) -> str:
    # X appends the media's t.co link to a post's text and may rewrite whitespace.
    return " ".join(strip_links(text)[0].split())


# -- the credit ledger and the pause -------------------------------------------------------------


def _today(moment: datetime) -> dict[str, str]:
    """The UTC day of `moment`: its `start` and `end` instants (the credits counted against a
    day are every open reservation and every post charged that day)."""
    start = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return {"start": iso(start), "end": iso(start + timedelta(days=1))}


def reconcile(db: Database, moment: datetime) -> None:
    """Bring reservations up to date with their posts: a post that went live is charged (a
    person's `confirm --live` included), one that needs a person is released."""
    ledger.reconcile_credits(db, NAME, iso(moment))


def reserve_credits(
    db: Database, settings: dict[str, Any], *, post_id: int, channel: str, account: str,
    moment: datetime,
) -> str | None:  # fmt: skip
    """Reserve a queued post's credits; the cap it would exceed in plain words, else None.

    Idempotent: a post already reserved or charged keeps its row. One IMMEDIATE transaction,
    so two runs never both take the last post of a day.
    """
    settings = {**XPlatform.settings_defaults, **settings}
    credits = round(float(settings["post_cost"]) * MICROS)
    reached = ledger.reserve_credits(
        db,
        platform=NAME,
        post_id=post_id,
        channel=channel,
        account=account,
        credits=credits,
        **_today(moment),
        daily_cap=settings["daily_cap"],
        channel_cap=channel_cap(settings, channel),
        now=iso(moment),
    )
    if reached is None:
        return None
    which, counted = reached
    if which == "installation":
        return (
            f"X: {counted} posts today for the whole installation, the daily cap "
            "(daily_cap); more tomorrow (UTC)"
        )
    return f"X: {counted} posts today on channel {channel}, its daily cap; more tomorrow (UTC)"


def channel_cap(settings: dict[str, Any], channel: str) -> int:
    caps = settings.get("channel_caps") or {}
    return int(caps.get(channel, settings["channel_daily_cap"]))


def charge_credits(db: Database, post_id: int, moment: datetime) -> None:
    """The post is live: its reservation becomes a charge (a row is made if it had none)."""
    ledger.charge_credits(db, NAME, post_id, iso(moment))


def release_credits(db: Database, post_id: int, moment: datetime, reason: str) -> None:
    """The post failed for good: its reservation is given back."""
    ledger.release_credits(db, post_id, iso(moment), reason[:300])


def paused_until(db: Database, moment: datetime) -> datetime | None:
    """The end of X's pause when one is on at `moment`, else None."""
    found = ledger.find_pause(db, NAME)
    if found is None:
        return None
    until = from_iso(found["paused_until"])
    return until if until > moment else None


def pause(db: Database, moment: datetime, minutes: int, reason: str) -> datetime:
    """Pause X posting for every channel until `moment + minutes`; returns the end."""
    until = moment + timedelta(minutes=minutes)
    ledger.pause_platform(db, NAME, iso(until), reason, iso(moment))
    return until


def pause_reason(until: datetime, moment: datetime) -> str:
    when = f"{until:%H:%M}" if until.date() == moment.date() else f"{until:%Y-%m-%d %H:%M}"
    return f"X credits exhausted, paused until {when} UTC"


def limits_report(db: Database, moment: datetime, settings: dict[str, Any] | None = None) -> dict:
    """What `autoretto limits` shows of X: the pause, the caps, and the ledger of the UTC day
    of `moment` (reserved now, charged today) in posts and in credits (USD)."""
    settings = {**XPlatform.settings_defaults, **(settings or {})}
    reconcile(db, moment)
    day = _today(moment)
    until = paused_until(db, moment)
    pause_row = ledger.find_pause(db, NAME)
    per_channel: dict[str, dict[str, Any]] = {}
    totals = {"reserved": 0, "charged": 0, "reserved_credits": 0, "charged_credits": 0}
    for entry in ledger.credits_of_day(db, NAME, day["start"], day["end"]):
        channel = per_channel.setdefault(
            entry["channel"],
            {"reserved": 0, "charged": 0, "cap": channel_cap(settings, entry["channel"])},
        )
        channel[entry["state"]] = entry["posts"]
        totals[entry["state"]] += entry["posts"]
        totals[entry["state"] + "_credits"] += entry["credits"] or 0
    return {
        "platform": NAME,
        "day": day["start"][:10],
        "paused": until is not None,
        "paused_until": iso(until) if until else None,
        "pause_reason": pause_reason(until, moment) if until else None,
        "last_pause": pause_row["reason"] if pause_row else None,
        "daily_cap": settings["daily_cap"],
        "channel_daily_cap": settings["channel_daily_cap"],
        "reserved": totals["reserved"],
        "charged": totals["charged"],
        "reserved_usd": totals["reserved_credits"] / MICROS,
        "charged_usd": totals["charged_credits"] / MICROS,
        "post_cost_usd": float(settings["post_cost"]),
        "channels": dict(sorted(per_channel.items())),
    }


def _span(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    if not minutes:
        return f"{rest} seconds"
    return f"{minutes} min {rest} s" if rest else f"{minutes} minutes"


# -- the platform --------------------------------------------------------------------------------


class XPlatform(CreatesOnce):
    name = NAME
    title = TITLE
    text_fields: ClassVar[dict[str, TextField] | None] = {"text": TextField("short", TEXT_LIMITS)}
    # X API v2 (the /2/ paths), with no announced end: listed by doctor; nothing to choose.
    api_version: ClassVar[str | None] = "2"
    api_versions: ClassVar[dict[str, str | None]] = {"2": None}
    api_version_source: ClassVar[str] = "https://docs.x.com/x-api/introduction"
    profile_url: ClassVar[str | None] = PROFILE_URL
    #: the automatic look happens on the next slot at least 15 minutes after the attempt
    look_delay: ClassVar[timedelta] = timedelta(minutes=15)
    settings_defaults: ClassVar[dict[str, Any]] = {
        "api_base": "https://api.x.com",
        "auth_uri": "https://x.com/i/oauth2/authorize",
        "token_uri": "https://api.x.com/2/oauth2/token",
        "client_id": "",
        "client_secret_env": "X_CLIENT_SECRET",
        "redirect_uri": "http://127.0.0.1:8765/callback",
        "post_cost": 0.015,  # USD per post created (pay-per-use price; check the console)
        "daily_cap": 20,  # posts a UTC day for the whole installation
        "channel_daily_cap": 5,  # posts a UTC day per channel
        "channel_caps": {},  # per-channel caps, e.g. {lofi = 3}
        "pause_minutes": 120,
        "format": "landscape",
        "account_tier": "standard",  # standard | premium (X Premium / verified): video limits
        "chunk_size": 4 * 1024 * 1024,
        "timeout": 60.0,
        "poll_wait": 5.0,  # at most this long between STATUS polls (X's check_after_secs)
        "poll_tries": 60,
        "find_count": 25,  # own recent posts listed when looking for an attempt
    }
    address_settings = ("api_base", "auth_uri", "token_uri")
    setting_choices: ClassVar[dict[str, tuple[str, ...]]] = {"format": ("landscape", "vertical")}
    positive_settings = ("poll_tries", "find_count")

    #: the token endpoint takes the client id in the form, and HTTP Basic for a confidential
    #: client (https://docs.x.com/fundamentals/authentication/oauth-2-0/user-access-token)
    token_endpoint = TokenEndpoint(auth="basic_if_secret")

    # OAuth 2.0 with PKCE (S256): https://docs.x.com/fundamentals/authentication/oauth-2-0/authorization-code
    signin: ClassVar[SignIn] = SignIn(
        help="""Connect an X account (OAuth 2.0 with PKCE); cron posts to it from then on.

        A public client has no secret: leave it empty (or set the variable to nothing).

        Example: autoretto connect x --client-id abc123
        """,
        flags=(
            Flag(
                "--client-id",
                "Your X app's OAuth 2.0 client id. Default: client_id of [platforms.x].",
            ),
        ),
        id_key="client_id",
        id_missing="give the OAuth 2.0 client id of your X app (--client-id, or client_id in "
        "[platforms.x]); find it in the developer console under Keys and tokens",
        secret=Secret(
            "Client secret (empty for a public client)",
            env_setting="client_secret_env",
            optional=True,
        ),
        scopes=SCOPES,
        pkce="S256",
        button="Authorize app",
    )

    @classmethod
    def signed_in(cls, attempt: Attempt) -> Draft:
        """The tokens kept with the app's id (X refreshes with it), the user from /2/users/me."""
        missing = (
            ", so Autoretto could not post unattended; give the app the offline.access scope "
            "and connect again"
        )
        tokens = sign_in_tokens(cls, attempt, missing=missing)
        url = cls.for_sign_in(attempt).url("/2/users/me")
        what = "show the signed-in account"
        user = cls.sign_in_call(attempt, "GET", url, what=what, token=tokens["access_token"])
        user = user.get("data") or {}
        if not user.get("id"):
            raise AutorettoError(f"X did not {what}")
        name = "@" + str(user.get("username") or user["id"])
        return Draft(
            account_id=str(user["id"]),
            name=name,
            tokens=tokens,
            meta={"username": user.get("username"), "scopes": attempt.granted()},
            lines=[f"Connected X account {name} ({user['id']})."],
        )

    limits_report = staticmethod(limits_report)

    @classmethod
    def limits_view(cls, report: dict[str, Any]) -> LimitsView:
        paused = bool(report["paused"])
        return LimitsView(
            (
                report["pause_reason"] if paused else "X: posting (no pause)",
                f"Today ({report['day']} UTC): {report['charged']} charged "
                f"(${report['charged_usd']:.3f}), {report['reserved']} reserved "
                f"(${report['reserved_usd']:.3f}); installation cap "
                f"{report['daily_cap'] or 'none'}, channel cap "
                f"{report['channel_daily_cap'] or 'none'}",
            ),
            stopped=paused,
            columns=("channel", "charged", "reserved", "cap"),
            rows=tuple(
                (name, str(entry["charged"]), str(entry["reserved"]), str(entry["cap"]))
                for name, entry in report["channels"].items()
            ),
        )

    @classmethod
    def setting_problems(cls, settings: dict[str, Any]) -> list[tuple[str, str]]:
        found = []
        caps = settings["channel_caps"]
        if not all(isinstance(v, int) and v >= 0 for v in caps.values()):
            found.append(("channel_caps", "give each channel a whole number, e.g. {lofi = 3}"))
        if settings["account_tier"] not in VIDEO_LIMITS:
            found.append(("account_tier", 'must be "standard" or "premium" (X Premium, verified)'))
        if settings["chunk_size"] < 16 * 1024 or settings["chunk_size"] > 5 * 1024 * 1024:
            found.append(("chunk_size", "must be between 16 KiB and 5 MiB"))
        return found

    # -- readiness ----------------------------------------------------------------------------

    def video_problem(self, video: Path, duration: float | None) -> str | None:
        """Why X would refuse this video from this account's tier; None when it fits."""
        tier = self.settings["account_tier"]
        longest, largest = VIDEO_LIMITS[tier]
        who = "an X Premium account" if tier == "premium" else "a standard X account"
        if duration is not None and duration > longest:
            return (
                f"X takes videos of up to {_span(longest)} from {who}; this episode runs "
                f"{_span(duration)}: give it a shorter edit (or set account_tier = "
                '"premium" in [platforms.x] if the account has X Premium)'
            )
        if duration is not None and duration < VIDEO_MIN_SECONDS:
            return f"X takes videos of {VIDEO_MIN_SECONDS} seconds or more; this one is shorter"
        size = video.stat().st_size
        if size > largest:
            return (
                f"X takes video files of up to {largest // 1024**2} MB from {who}; this one is "
                f"{size // 1024**2} MB"
            )
        return None

    def limit_reason(self, request: PostRequest) -> str | None:
        if self.context.db is None:
            return None
        moment = self.now
        until = paused_until(self.db, moment)
        if until is not None:
            return pause_reason(until, moment)
        account = self.account_row()
        if account is None:
            return None
        reconcile(self.db, moment)
        return reserve_credits(
            self.db, self.settings, post_id=request.post_id, channel=request.channel,
            account=account.account_id, moment=moment,
        )  # fmt: skip

    # -- calls --------------------------------------------------------------------------------

    def problem(self, response: Any) -> tuple[str, str]:
        """(kind, words) of an X problem answer: its `type` or `title`, and its `detail` (else
        its title, else the first of its `errors`)."""
        body = json_body(response)
        kind = str(body.get("type") or body.get("title") or "")
        words = body.get("detail") or body.get("title")
        return kind, str(words)[:300] if words else problem_of({"errors": body.get("errors")})[1]

    def classify(self, response: Any, *, sends: bool = False) -> PlatformError:
        status = response.status_code
        kind, words = self.problem(response)
        said = words or kind or f"HTTP {status}"
        if status == 402 or "credits" in kind.lower():
            moment = self.now
            until = pause(self.db, moment, self.settings["pause_minutes"], said)
            log.warning("x: credits exhausted; X posting paused until %s", iso(until))
            return LimitReached(pause_reason(until, moment))
        if status == 429 and ("usage-capped" in kind or "UsageCapExceeded" in kind):
            return LimitReached(f"X: the app's usage cap is reached ({said})")
        if status == 403 and "duplicate" in said.lower():
            return ContentRejected(f"X refused a duplicate: {said}")
        if status == 403 and "longer than" in said.lower():
            return ContentRejected(f"X refused the video's length: {said}; give it a shorter edit")
        return super().classify(response, sends=sends)

    # -- publish ------------------------------------------------------------------------------

    def _publish(self, request: PostRequest) -> Published:
        try:
            published = self.retrying(lambda: self._send(request))
        except (NeedsPerson, ContentRejected) as error:
            release_credits(self.db, request.post_id, self.now, error.reason)
            raise
        charge_credits(self.db, request.post_id, self.now)
        return published

    def _send(self, request: PostRequest) -> Published:
        episode = request.episode
        video = self.video_file(episode)
        if problem := self.video_problem(video, episode.duration):
            raise ContentRejected(problem)
        handles = self.handles(request)
        found = self.look(handles)  # an earlier try sent the create call and never heard back
        if found is not None:
            return found
        text, links = post_text(episode)
        if links:
            log.warning(
                "x: post %s: %d link(s) removed from the text (X posts carry no links)",
                request.post_id,
                links,
            )
        if not text:
            raise ContentRejected("the episode has no text for X once its links are removed")
        media_id = self._ready_media(request, handles, video)
        body: dict[str, Any] = {"text": text, "media": {"media_ids": [media_id]}}
        if episode.ai_generated:
            # POST /2/tweets `made_with_ai`: "Disclose that the tweet contains AI-generated
            # media" (X's OpenAPI, https://docs.x.com/x-api/posts/create-post; xdk's
            # CreatePostsRequest)
            body["made_with_ai"] = True
        # the media key and the text are on record before the call
        send = partial(self._create_post, handles, body)
        return self.create(request, handles, send, text=text, links_removed=links)

    def _create_post(self, handles: dict[str, Any], body: dict[str, Any]) -> str:
        """POST /2/tweets; the new post's id (that of our own post when X calls it a
        duplicate of one it has)."""
        try:
            answer = self.api("POST", "/2/tweets", json=body, sends=True)
        except ContentRejected as error:
            found = self.look(handles) if "duplicate" in error.reason.lower() else None
            if found is None:
                raise
            return found.platform_post_id
        return str(answer.get("data", {}).get("id") or "")

    def post_url(self, post_id: str) -> str:
        account = self._account
        username = account.meta.get("username") if account else None
        return POST_URL.format(username or "i/web", post_id)

    def _ready_media(self, request: PostRequest, handles: dict[str, Any], video: Path) -> str:
        """A processed media id: the earlier try's while it has not expired, else a new one."""
        expires = handles.get("media_expires_at")
        if handles.get("media_ready") and expires and from_iso(expires) > now():
            return handles["media_id"]
        size = video.stat().st_size
        answer = self.api(
            "POST",
            "/2/media/upload/initialize",
            json={"media_type": "video/mp4", "total_bytes": size, "media_category": "tweet_video"},
        ).get("data", {})
        media_id = str(answer["id"])
        lifetime = int(answer.get("expires_after_secs") or 86400)
        handles.update(
            {
                "media_id": media_id,
                "media_key": answer.get("media_key") or f"7_{media_id}",
                "media_expires_at": iso(now() + timedelta(seconds=lifetime - 600)),
                "media_ready": False,
            }
        )
        self.save(request, handles)
        with open(video, "rb") as source:
            chunks = iter(partial(source.read, self.settings["chunk_size"]), b"")
            for index, chunk in enumerate(chunks):
                self.api(
                    "POST",
                    f"/2/media/upload/{media_id}/append",
                    data={"segment_index": str(index)},
                    files={"media": ("chunk", chunk, "application/octet-stream")},
                )
                request.heartbeat()
        info = self.api("POST", f"/2/media/upload/{media_id}/finalize").get("data", {})
        self._wait_processed(request, media_id, info.get("processing_info"))
        handles["media_ready"] = True
        self.save(request, handles)
        return media_id

    def _wait_processed(
        self, request: PostRequest, media_id: str, processing: dict[str, Any] | None
    ) -> None:
        for _ in range(int(self.settings["poll_tries"])):
            processing = processing or {}
            state = processing.get("state", "succeeded")
            if state == "succeeded":
                return
            if state == "failed":
                error = processing.get("error") or {}
                said = error.get("message") or error.get("name") or "no reason given"
                raise ContentRejected(f"X could not process the video ({said})")
            wait = float(processing.get("check_after_secs") or 1)
            self.sleep(min(wait, self.settings["poll_wait"]))
            request.heartbeat()
            params = {"command": "STATUS", "media_id": media_id}
            status = self.api("GET", "/2/media/upload", params=params)
            processing = status.get("data", {}).get("processing_info")
        raise PassingError("X is still processing the video; the next run tries again")

    # -- finding an attempt -------------------------------------------------------------------

    def _find_attempt(self, request: PostRequest) -> Published | None:
        found = super()._find_attempt(request)
        if found is not None:
            charge_credits(self.db, request.post_id, self.now)  # a no-op once charged
        return found

    def recent_posts(self, handles: dict[str, Any], since: datetime) -> Iterator[list[dict]]:
        """The account's own posts since the create call (an owned read), one page."""
        answer = self.api(
            "GET",
            f"/2/users/{self.account().account_id}/tweets",
            params={
                "start_time": iso(since),
                "max_results": max(5, min(100, int(self.settings["find_count"]))),
                "tweet.fields": "created_at,attachments",
                "expansions": "attachments.media_keys",
            },
        )
        yield answer.get("data") or []

    def is_attempt(self, post: dict[str, Any], handles: dict[str, Any]) -> bool:
        """The attempt's media key among the post's, else its very text."""
        key = handles.get("media_key")
        if key and key in ((post.get("attachments") or {}).get("media_keys") or []):
            return True
        text = _comparable(handles.get("text") or "")
        return bool(text) and _comparable(post.get("text", "")) == text


__all__ = ["XPlatform", "charge_credits", "limits_report", "release_credits", "reserve_credits"]
