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
from ..oauth import TokenEndpoint, json_body, retry_after
from .base import (
    CarouselSpec,
    Comment,
    CommentGone,
    CommentPage,
    ContentRejected,
    EpisodeView,
    LimitReached,
    LimitsView,
    LostAnswer,
    NeedsPerson,
    PassingError,
    PlatformError,
    PostRequest,
    Published,
    ReplyRequest,
    UsageLedger,
    carousel_view,
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

#: what the app's API access may be (`read_access`): "free" has no search, so no replies are
#: read (https://docs.x.com/x-api/getting-started/pricing: pay-per-use reads every endpoint)
READ_ACCESS = ("pay_per_use", "basic", "pro", "enterprise", "free")
#: posts read and replies made a UTC day (issue 28), counted before each call
USAGE = UsageLedger(NAME)

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
        # -- comments and replies (issue 28)
        "read_access": "pay_per_use",  # pay_per_use | basic | pro | enterprise | free (no search)
        "read_page": 100,  # replies asked a search call (10 to 100)
        "daily_reads": 500,  # posts read a UTC day at most ($0.005 each on pay-per-use)
        "reply_daily_cap": 20,  # replies a UTC day for the whole installation ($0.015 each)
    }
    address_settings = ("api_base", "auth_uri", "token_uri")
    setting_choices: ClassVar[dict[str, tuple[str, ...]]] = {
        "format": ("landscape", "vertical"),
        "read_access": READ_ACCESS,
    }
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
        return self._upload_media(request, handles, handles, video, "video/mp4", "tweet_video")

    def _upload_media(
        self,
        request: PostRequest,
        handles: dict[str, Any],
        kept: dict[str, Any],
        path: Path,
        media_type: str,
        category: str,
    ) -> str:
        """Upload `path` in chunks (initialize, append, finalize, then wait while X processes
        it) unless `kept` (the attempt's `handles`, or one card's part of them) holds a media id
        that is ready and has not expired; the id. `kept` is saved with `handles` before the
        first chunk goes."""
        expires = kept.get("media_expires_at")
        if kept.get("media_ready") and expires and from_iso(expires) > now():
            return kept["media_id"]
        size = path.stat().st_size
        answer = self.api(
            "POST",
            "/2/media/upload/initialize",
            json={"media_type": media_type, "total_bytes": size, "media_category": category},
        ).get("data", {})
        media_id = str(answer["id"])
        lifetime = int(answer.get("expires_after_secs") or 86400)
        kept.update(
            {
                "media_id": media_id,
                "media_key": answer.get("media_key") or f"7_{media_id}",
                "media_expires_at": iso(now() + timedelta(seconds=lifetime - 600)),
                "media_ready": False,
            }
        )
        self.save(request, handles)
        with open(path, "rb") as source:
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
        kept["media_ready"] = True
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

    # -- carousels (issue 29) -----------------------------------------------------------------

    #: up to 4 images in one post, each at most 5 MB ("Image: 5 MB",
    #: https://docs.x.com/x-api/media; POST /2/tweets takes 1 to 4 media.media_ids,
    #: https://docs.x.com/x-api/posts/create-post). X keeps alt text apart (POST
    #: /2/media/metadata), which Autoretto does not send: the post's text names the cards
    carousel = CarouselSpec(
        least=2,
        most=4,
        size=(1080, 1350),
        max_bytes=5 * 1024 * 1024,
        source="https://docs.x.com/x-api/posts/create-post",
    )

    def _publish_carousel(self, request: PostRequest) -> Published:
        try:
            published = self.retrying(lambda: self._send_carousel(request))
        except (NeedsPerson, ContentRejected) as error:
            release_credits(self.db, request.post_id, self.now, error.reason)
            raise
        charge_credits(self.db, request.post_id, self.now)
        return published

    def _send_carousel(self, request: PostRequest) -> Published:
        handles = self.handles(request)
        found = self.look(handles)  # an earlier try sent the create call and never heard back
        if found is not None:
            return found
        text, _ = post_text(carousel_view(request.episode))
        cards = handles.setdefault("cards", [{} for _ in request.images])
        media_ids = [
            self._upload_media(
                request, handles, cards[index], Path(image.path), image.mime, "tweet_image"
            )
            for index, image in enumerate(request.images)
        ]
        # the first card's media key identifies the post when its answer is lost (is_attempt)
        handles["media_key"] = cards[0]["media_key"]
        body = {"text": text, "media": {"media_ids": media_ids}}
        send = partial(self._create_post, handles, body)
        return self.create(request, handles, send, text=text, links_removed=0)

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

    # -- comments and replies (issue 28) -------------------------------------------------------
    # Replies to a post are the posts of its conversation, read by recent search with the
    # `conversation_id:` operator (https://docs.x.com/x-api/posts/search/integrate/overview;
    # https://developer.x.com/en/docs/twitter-api/conversation-id), which shows the last 7 days
    # only, 60 requests per 15 minutes with a user token
    # (https://docs.x.com/x-api/posts/search/migrate/overview) and $0.005 a post read on
    # pay-per-use (https://docs.x.com/x-api/getting-started/pricing). A reply is a post with
    # `reply.in_reply_to_tweet_id` ($0.015 a request; $0.200 with a link, same page).
    comments: ClassVar[str | None] = "reply"
    comments_note: ClassVar[str] = (
        "replies are read by recent search (the last 7 days, $0.005 a post read); an app "
        'whose access has no search (read_access = "free") answers none'
    )
    comment_scope: ClassVar[str] = "tweet.read tweet.write"
    reply_length: ClassVar[int] = TEXT_MAX_WEIGHT
    reply_links: ClassVar[bool] = False  # a link costs 13 times more, and is against our rule
    reply_disclosure: ClassVar[str | None] = None
    # X's own limit: 2,400 posts a day per account, replies included
    # (https://help.x.com/en/rules-and-policies/x-limits); replies cost credits, so far fewer
    replies_per_day: ClassVar[int] = 20

    def _read_comments(self, post_id: str, cursor: str | None) -> Iterator[CommentPage]:
        """The replies in post `post_id`'s conversation newer than `cursor` (the newest reply
        id an earlier read saw: `since_id`), newest first, a search call a page; before each
        call the posts it may return (`read_page`) are counted against `daily_reads` (what it
        did not return is given back after). The last page carries the new cursor, so a read
        cut short is read again, stored once."""
        self._can_read()
        account = self.account().account_id
        size = max(10, min(100, int(self.settings["read_page"])))
        newest = cursor
        token: str | None = None
        while True:
            params = {
                "query": f"conversation_id:{post_id}",
                "max_results": size,
                "tweet.fields": "created_at,conversation_id",
                "expansions": "author_id",
                "user.fields": "username,name",
            }
            if cursor:
                params["since_id"] = cursor
            if token:
                params["next_token"] = token
            answer = self._counted_search(account, params, size)
            users = {
                str(user.get("id")): user
                for user in (answer.get("includes") or {}).get("users") or []
            }
            # The search may list the post that began the conversation too: it is no comment.
            found = tuple(
                self._comment_of(post_id, item, users, account)
                for item in answer.get("data") or []
                if str(item.get("id")) != post_id
            )
            for comment in found:
                if newest is None or int(comment.id) > int(newest):
                    newest = comment.id
            token = (answer.get("meta") or {}).get("next_token")
            yield CommentPage(found, cursor=None if token else newest)
            if not token:
                return

    def _can_read(self) -> None:
        """LimitReached when this app's access reads no replies, or X is paused."""
        if self.settings["read_access"] == "free":
            raise LimitReached(
                'X: this app\'s access (read_access = "free") has no search, so replies are not '
                "read; buy credits (pay-per-use) and set read_access to read them"
            )
        self._not_paused()

    def _not_paused(self) -> None:
        if self.context.db is not None:
            until = paused_until(self.db, self.now)
            if until is not None:
                raise LimitReached(pause_reason(until, self.now))

    def _counted_search(self, account: str, params: dict[str, Any], size: int) -> dict:
        """One recent-search call, its posts counted before it is made (retried as the retry
        policy says, each try counted again)."""
        day = USAGE.day(self.now)

        def once() -> dict[str, Any]:
            if not USAGE.charge(self.db, account, "reads", size, self.settings["daily_reads"], day):
                raise LimitReached(
                    f"X: {self.settings['daily_reads']} posts read today (daily_reads); more "
                    "tomorrow (UTC)"
                )
            try:
                response = self.call(
                    "GET", self.url("/2/tweets/search/recent"), params=params, check=False
                )
            except PlatformError:
                USAGE.give_back(self.db, account, "reads", size, day)
                raise
            if response.status_code >= 300:
                USAGE.give_back(self.db, account, "reads", size, day)
                raise self._comment_refusal(response, reading=True)
            answer = json_body(response)
            returned = int((answer.get("meta") or {}).get("result_count") or 0)
            if returned < size:
                USAGE.give_back(self.db, account, "reads", size - returned, day)
            return answer

        return self.retrying(once)

    def _comment_of(
        self, post_id: str, item: dict[str, Any], users: dict[str, Any], account: str
    ) -> Comment:
        author_id = str(item.get("author_id") or "")
        user = users.get(author_id) or {}
        # A conversation is read flat: every reply in it is answered by its own id.
        return Comment(
            id=str(item["id"]),
            post_id=post_id,
            author="@" + str(user.get("username") or author_id),
            text=str(item.get("text") or ""),
            published_at=item.get("created_at"),
            author_id=author_id,
            mine=author_id == account,
            ref={"conversation": str(item.get("conversation_id") or post_id)},
        )

    def _reply(self, request: ReplyRequest) -> Published:
        """POST /2/tweets answering the comment, the installation's `reply_daily_cap` counted
        first; the moment it is sent saved on the attempt before it is made, so `find_reply`
        can look among the account's own posts since then after a lost answer."""
        self._not_paused()
        account = self.account().account_id
        day = USAGE.day(self.now)
        if not USAGE.charge(
            self.db, "installation", "replies", 1, self.settings["reply_daily_cap"], day
        ):
            raise LimitReached(
                f"X: {self.settings['reply_daily_cap']} replies today for the whole "
                "installation (reply_daily_cap); more tomorrow (UTC)"
            )
        handles = {**request.handles, "create_sent": iso(self.now), "account": account}
        request.save_handles(dict(handles))
        body = {"text": request.text, "reply": {"in_reply_to_tweet_id": request.comment.id}}
        try:
            response = self.call("POST", self.url("/2/tweets"), json=body, sends=True, check=False)
            if response.status_code >= 300:
                raise self._comment_refusal(response, reading=False)
        except LostAnswer:
            raise
        except ContentRejected as error:
            if "duplicate" in error.reason.lower():
                found = self._find_reply(request)
                if found is not None:
                    return found
            self._took_back(request, handles, day)
            raise
        except PlatformError:
            self._took_back(request, handles, day)
            raise
        made = str((json_body(response).get("data") or {}).get("id") or "")
        if not made:
            raise LostAnswer("X answered the reply without its id; it may have gone out")
        return self.made(made)

    def _took_back(self, request: ReplyRequest, handles: dict[str, Any], day: str) -> None:
        """The reply was refused, nothing made: its count given back, its moment dropped."""
        USAGE.give_back(self.db, "installation", "replies", 1, day)
        request.save_handles({k: v for k, v in handles.items() if k != "create_sent"})

    def _find_reply(self, request: ReplyRequest) -> Published | None:
        """The account's own post of the same text in the comment's conversation, among its
        newest `find_count` posts (an owned read, $0.001 a post: no search needed), else None.
        (X refuses the same text twice from an account, so the text names the reply.)"""
        # The newest `find_count` posts, not "since the moment it was sent": X dates a post by
        # its own clock, which need not agree with this one to the minute.
        answer = self.api(
            "GET",
            f"/2/users/{self.account().account_id}/tweets",
            params={
                "max_results": max(5, min(100, int(self.settings["find_count"]))),
                "tweet.fields": "created_at,conversation_id",
            },
        )
        wanted = _comparable(request.text)
        conversation = request.comment.ref.get("conversation") or request.comment.post_id
        for post in answer.get("data") or []:
            same_place = str(post.get("conversation_id") or "") == str(conversation)
            if same_place and _comparable(post.get("text", "")) == wanted:
                return self.made(str(post["id"]))
        return None

    def _comment_refusal(self, response: Any, *, reading: bool) -> PlatformError:
        """A refused search or reply: a rate limit is a window to wait (no try spent), a
        deleted post is gone, a missing permission names the scope (`comment_scope`), an app
        whose access has no search says so; else what any X refusal is (402 pauses X)."""
        status = response.status_code
        kind, words = self.problem(response)
        said = words or kind or f"HTTP {status}"
        if status == 429 and "usage-capped" not in kind and "UsageCapExceeded" not in kind:
            what = "reading replies" if reading else "replies"
            wait = retry_after(response)
            return LimitReached(f"X is rate limiting {what} ({said})", retry_after=wait)
        if status == 403 and ("deleted" in said.lower() or "not visible" in said.lower()):
            return CommentGone(f"X: the post answered was deleted ({said})")
        if status == 404 and not reading:
            return CommentGone(f"X: the post answered is gone ({said})")
        if status == 403 and ("client-forbidden" in kind or "not-enrolled" in said.lower()):
            return LimitReached(
                f"X: this app's access does not include {'search' if reading else 'replies'} "
                f"({said}); read_access says which access the app has"
            )
        if status == 403 and "duplicate" not in said.lower():
            need = "tweet.read" if reading else "tweet.write"
            return NeedsPerson(
                f"X refused {'reading replies' if reading else 'the reply'} ({said}); connect "
                f"again with `autoretto connect x` and grant {need}"
            )
        return self.classify(response, sends=not reading)


__all__ = ["XPlatform", "charge_credits", "limits_report", "release_credits", "reserve_credits"]
