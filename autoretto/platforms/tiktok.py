"""TikTok (Content Posting API): a direct post that a person makes, never twice.

TikTok asks that a person makes each post from a screen showing who posts, what, and to whom
(PLATFORMS.md §8), so TikTok is never on a slot: `autoretto post tiktok EPISODE` shows the screen
(`screen`, `ask_choices`) and the person's answers are the `TikTokChoices` given to the instance
for that one post (`TikTokPlatform(context, choices=...)`), kept in the attempt's handles too.

A post:

1. `creator_info/query`: the privacy options, what the creator disabled, the longest video they
   may post, and `spam_risk_too_many_posts` when the day's posts are used up.
2. `video/init` with the post's info and a FILE_UPLOAD source sized by the chunk rules; its
   `publish_id` is saved on the attempt (`save_handles`) at once, before any byte is sent.
3. The chunks are PUT in order to the returned `upload_url`, each with its `Content-Range`; a
   chunk whose answer is lost is sent again (the same range overwrites).
4. `status/fetch` is polled until PUBLISH_COMPLETE (or SEND_TO_USER_INBOX).

Never twice: every later try of the same post, and `_find_attempt`, first asks `status/fetch`
about the last attempt's `publish_id` before any new init. Complete means published; FAILED, or
an upload whose final chunk was never sent (it can never finish: only Autoretto holds the upload
address), means a new init is safe; anything still processing is waited for, never posted again.

Limits: `spam_risk_too_many_posts` makes the account wait a day, a rate limit the time TikTok
names (a minute by default); both are recorded on the account, refuse further posts until then,
and use no try. Until `[platforms.tiktok] audited = true`, every post is private (`SELF_ONLY`),
whatever was chosen: TikTok's rule for unaudited apps.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar

from .. import accounts
from ..clock import from_iso, iso, now
from ..errors import UsageError
from ..oauth import TokenEndpoint, json_body, retry_after
from ..questions import (
    Ask,
    Cancelled,
    Say,
    VideoFacts,
    ask_number,
    ask_text,
    ask_yes_no,
    show_video,
)
from .base import (
    Choices,
    ContentRejected,
    EpisodeView,
    LimitReached,
    LostAnswer,
    NeedsPerson,
    PassingError,
    PlatformError,
    PostRequest,
    Published,
)
from .http import ByHand, sign_in_tokens
from .signin import Attempt, Draft, Flag, Secret, SignIn
from .text import TextField, utf16_units

log = logging.getLogger("autoretto.platforms.tiktok")

VIDEO_URL = "https://www.tiktok.com/@{}/video/{}"
PROFILE_URL = "https://www.tiktok.com/@{}"

PRIVATE = "SELF_ONLY"
TITLE_MAX_UTF16 = 2200
#: what the creator may turn off (`X_disabled`) and the person allow (`allow_X`), as TikTok's
#: screen names it
INTERACTIONS = {"comment": "comments", "duet": "Duet", "stitch": "Stitch"}

MB = 1024 * 1024
MIN_CHUNK = 5 * MB  # a file under this goes whole
MAX_CHUNK = 64 * MB  # a file over this must be chunked
MAX_CHUNKS = 1000

DONE = ("PUBLISH_COMPLETE", "SEND_TO_USER_INBOX")
PROCESSING = ("PROCESSING_UPLOAD", "PROCESSING_DOWNLOAD")
CONTENT_TYPES = {".mp4": "video/mp4", ".mov": "video/quicktime", ".webm": "video/webm"}
JSON_BODY = {"Content-Type": "application/json; charset=UTF-8"}
PUBLISH_API = "/v2/post/publish/"  # + creator_info/query/, video/init/, status/fetch/

MUSIC_DECLARATION = "By posting, you agree to TikTok's Music Usage Confirmation."
BRANDED_DECLARATION = (
    "By posting, you agree to TikTok's Branded Content Policy and Music Usage Confirmation."
)
BRANDED_NOT_PRIVATE = "Branded content visibility cannot be set to private (only me)."

_RECONNECT_CODES = {"access_token_invalid", "scope_not_authorized", "scope_permission_missed"}
_FAIL_REASON_LIMIT = {"spam_risk_too_many_posts", "spam_risk_too_many_pending_share"}
_FAIL_REASON_PERSON = {"auth_removed", "spam_risk_user_banned_from_posting", "publish_cancelled"}
_FAIL_REASON_PASSING = {"internal", "internal_error", "video_pull_failed", "file_upload_failed"}


# -- what the creator may do, what the person chose ---------------------------------------------


@dataclass(frozen=True)
class CreatorInfo:
    """`creator_info/query`: who posts, and what TikTok lets them choose."""

    nickname: str
    username: str
    avatar_url: str
    privacy_level_options: tuple[str, ...]
    comment_disabled: bool
    duet_disabled: bool
    stitch_disabled: bool
    max_video_post_duration_sec: int | None

    @classmethod
    def from_answer(cls, data: dict[str, Any]) -> CreatorInfo:
        longest = data.get("max_video_post_duration_sec")
        return cls(
            nickname=str(data.get("creator_nickname") or ""),
            username=str(data.get("creator_username") or ""),
            avatar_url=str(data.get("creator_avatar_url") or ""),
            privacy_level_options=tuple(str(o) for o in data.get("privacy_level_options") or ()),
            comment_disabled=bool(data.get("comment_disabled")),
            duet_disabled=bool(data.get("duet_disabled")),
            stitch_disabled=bool(data.get("stitch_disabled")),
            max_video_post_duration_sec=int(longest) if longest else None,
        )

    def too_long(self, seconds: float | None) -> str | None:
        """Why this creator may not post a video of `seconds`; None when they may."""
        most = self.max_video_post_duration_sec
        if seconds and most and seconds > most:
            return f"the video is {seconds:.0f} s; this creator may post videos of up to {most} s"
        return None


@dataclass(frozen=True)
class TikTokScreen:
    """Everything the TikTok posting screen shows before the person chooses."""

    episode_id: int
    episode_title: str
    creator: CreatorInfo
    audited: bool
    video: VideoFacts
    default_title: str
    is_aigc: bool
    already: str | None = None  # the post's URL or state when it was posted before


@dataclass(frozen=True)
class TikTokChoices(Choices):
    """What the person chose on the posting screen; no default posts: `privacy_level` is empty
    until one is picked, comments, Duet and Stitch are off unless ticked. `your_brand`
    (brand_organic_toggle) and `branded_content` (brand_content_toggle) need
    `disclose_commercial`; `music_confirmed`: the person agreed to the declaration."""

    title: str
    privacy_level: str = ""
    allow_comment: bool = False
    allow_duet: bool = False
    allow_stitch: bool = False
    disclose_commercial: bool = False
    your_brand: bool = False
    branded_content: bool = False
    music_confirmed: bool = False
    cover_timestamp_ms: int = 0
    is_aigc: bool = False

    def problems(
        self, creator: CreatorInfo, *, audited: bool, duration: float | None, strict: bool = True
    ) -> list[str]:
        """Every way these choices break TikTok's rules for `creator`, in plain words (empty:
        fine). `strict=False` is the adapter's check at posting time: what it enforces itself
        (private until audited, off what the creator turned off) is not a problem there."""
        problems = []
        if not self.title.strip():
            problems.append("give the post a title")
        elif utf16_units(self.title) > TITLE_MAX_UTF16:
            problems.append(f"the title is longer than TikTok's {TITLE_MAX_UTF16} characters")
        if not self.privacy_level:
            problems.append("choose who can see the post (nothing is chosen for you)")
        elif self.privacy_level not in creator.privacy_level_options:
            offered = ", ".join(creator.privacy_level_options) or "none"
            problems.append(
                f"{self.privacy_level} is not offered for this account (offered: {offered})"
            )
        elif strict and not audited and self.privacy_level != PRIVATE:
            problems.append("until the app is audited (audited = true), TikTok posts are private")
        for key, what in INTERACTIONS.items():
            if strict and getattr(self, f"allow_{key}") and getattr(creator, f"{key}_disabled"):
                problems.append(f"{what} are turned off in this creator's TikTok settings")
        brands = self.your_brand or self.branded_content
        if self.disclose_commercial and not brands:
            problems.append(
                'with commercial content disclosed, choose "Your brand" and/or "Branded content"'
            )
        if brands and not self.disclose_commercial:
            problems.append("brand choices need the commercial content disclosure turned on")
        if self.branded_content and (not audited or self.privacy_level == PRIVATE):
            problems.append(BRANDED_NOT_PRIVATE)  # unaudited, every post is private
        if not self.music_confirmed:
            problems.append("the Music Usage Confirmation must be agreed to before posting")
        if too_long := creator.too_long(duration):
            problems.append(too_long)
        return problems

    def post_info(self, creator: CreatorInfo, *, audited: bool, ai_generated: bool) -> dict:
        """The `post_info` of the init call. What the creator disabled stays disabled."""
        return {
            "title": self.title,
            "privacy_level": self.privacy_level if audited else PRIVATE,
            "disable_comment": creator.comment_disabled or not self.allow_comment,
            "disable_duet": creator.duet_disabled or not self.allow_duet,
            "disable_stitch": creator.stitch_disabled or not self.allow_stitch,
            "video_cover_timestamp_ms": max(0, int(self.cover_timestamp_ms)),
            "brand_content_toggle": self.disclose_commercial and self.branded_content,
            "brand_organic_toggle": self.disclose_commercial and self.your_brand,
            "is_aigc": bool(self.is_aigc or ai_generated),
        }


# -- the posting screen's questions ---------------------------------------------------------

PRIVACY_LABELS = {
    "PUBLIC_TO_EVERYONE": "Everyone",
    "MUTUAL_FOLLOW_FRIENDS": "Friends (followers you follow back)",
    "FOLLOWER_OF_CREATOR": "Followers",
    "SELF_ONLY": "Only me (private)",
}


def choose_privacy(creator: CreatorInfo, ask: Ask, say: Say, *, audited: bool) -> str:
    """The privacy, from the creator's `privacy_level_options`, nothing preselected. Until the
    app is audited only "Only me" is offered (TikTok makes every such post private)."""
    options = list(creator.privacy_level_options)
    if not audited:
        if PRIVATE not in options:
            raise Cancelled("this TikTok account offers no private option, and posts stay private")
        options = [PRIVATE]
    if not options:
        raise Cancelled("TikTok offers no privacy option for this account now")
    say("Who can see this post?")
    chosen = ask_number(ask, say, "Privacy", [PRIVACY_LABELS.get(o, o) for o in options])
    return options[chosen]


def choose_interactions(creator: CreatorInfo, ask: Ask, say: Say) -> dict[str, bool]:
    """`allow_comment`, `allow_duet`, `allow_stitch`: each off unless ticked; not offered where
    the creator turned it off in TikTok."""
    allowed = {}
    for key, what in INTERACTIONS.items():
        disabled = getattr(creator, f"{key}_disabled")
        if disabled:
            say(f"  Allow {what}: off (turned off in your TikTok settings)", style="dim")
        allowed[f"allow_{key}"] = not disabled and ask_yes_no(ask, say, f"Allow {what}?")
    return allowed


def choose_disclosure(ask: Ask, say: Say, *, privacy: str) -> dict[str, bool]:
    """`disclose_commercial`, `your_brand`, `branded_content` ({}: not disclosed). When on, at
    least one of the two must be chosen, and branded content cannot be private."""
    while True:
        if not ask_yes_no(
            ask, say, "Disclose commercial content (promotes a brand, product or service)?"
        ):
            return {}
        your_brand = ask_yes_no(ask, say, '  "Your brand" (you promote yourself or your business)?')
        branded = ask_yes_no(ask, say, '  "Branded content" (a paid partnership with a brand)?')
        if not (your_brand or branded):
            say(
                'With disclosure on, choose "Your brand" and/or "Branded content" '
                "(or turn disclosure off).",
                style="yellow",
            )
            continue
        if branded and privacy == PRIVATE:
            say(f"Refused: {BRANDED_NOT_PRIVATE}", style="yellow")
            continue
        if branded:
            say('Your post will be labelled "Paid partnership".')
        elif your_brand:
            say('Your post will be labelled "Promotional content".')
        return {"disclose_commercial": True, "your_brand": your_brand, "branded_content": branded}


# -- chunks --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkPlan:
    size: int
    chunk_size: int
    ranges: tuple[tuple[int, int], ...]  # (first, last) byte of each chunk, inclusive

    @property
    def total_chunk_count(self) -> int:
        return len(self.ranges)

    @property
    def source_info(self) -> dict[str, Any]:
        """The init call's `source_info` for this plan."""
        return {
            "source": "FILE_UPLOAD",
            "video_size": self.size,
            "chunk_size": self.chunk_size,
            "total_chunk_count": self.total_chunk_count,
        }


def chunk_plan(size: int, chunk_size: int) -> ChunkPlan:
    """The chunks of a `size`-byte file by TikTok's rules, whatever `chunk_size` asks for
    (https://developers.tiktok.com/doc/content-posting-api-media-transfer-guide, "Chunk
    restrictions"): a file under 5 MB goes whole; chunks are 5-64 MB and sent in order;
    `total_chunk_count = floor(size / chunk_size)`, so the last chunk takes the remainder (up
    to 128 MB); a file over 64 MB goes in more than one chunk; 1 to 1000 chunks.

    Raises ContentRejected for an empty file or one too large for 1000 chunks.
    """
    if size <= 0:
        raise ContentRejected("the video file is empty")
    if size < MIN_CHUNK:
        return ChunkPlan(size, size, ((0, size - 1),))
    chunk_size = max(MIN_CHUNK, min(chunk_size, MAX_CHUNK, size))
    if size > MAX_CHUNK:
        # One chunk of all of it would be a chunk over 64 MB: at least two (each over 32 MB).
        chunk_size = min(chunk_size, size // 2)
    if size // chunk_size > MAX_CHUNKS:
        chunk_size = -(-size // MAX_CHUNKS)
        if chunk_size > MAX_CHUNK:
            raise ContentRejected("the video is too large for TikTok (over 1000 chunks of 64 MB)")
    count = size // chunk_size
    ranges = [(index * chunk_size, (index + 1) * chunk_size - 1) for index in range(count)]
    ranges[-1] = (ranges[-1][0], size - 1)
    return ChunkPlan(size, chunk_size, tuple(ranges))


# -- the platform ----------------------------------------------------------------------------------


class TikTokPlatform(ByHand):
    name = "tiktok"
    title = "TikTok"
    carousel_note = "it is posted by hand (`autoretto post tiktok`), never on a slot"
    text_fields: ClassVar[dict[str, TextField] | None] = {
        "title": TextField("short", (("UTF-16 units", utf16_units, TITLE_MAX_UTF16),)),
    }
    ai_flag: ClassVar[str | None] = "is_aigc"
    choices_type: ClassVar[type | None] = TikTokChoices
    # -- comments and replies (issue 28) ---------------------------------------------------
    comments: ClassVar[str | None] = "none"
    comments_note: ClassVar[str] = (
        "TikTok's APIs for creators (Content Posting, Display) give no comments; only its "
        "Research API does, to approved non-profit researchers "
        "(https://developers.tiktok.com/doc/about-research-api/): answer them in the TikTok app"
    )
    profile_url: ClassVar[str | None] = PROFILE_URL
    # Content Posting API v2 (the /v2/ paths), no announced end: listed by doctor.
    api_version: ClassVar[str | None] = "v2"
    api_versions: ClassVar[dict[str, str | None]] = {"v2": None}
    api_version_source: ClassVar[str] = (
        "https://developers.tiktok.com/doc/content-posting-api-reference-direct-post"
    )
    can_find_attempts = True
    settings_defaults: ClassVar[dict[str, Any]] = {
        "api_base": "https://open.tiktokapis.com",
        "auth_uri": "https://www.tiktok.com/v2/auth/authorize/",
        "token_uri": "https://open.tiktokapis.com/v2/oauth/token/",
        "client_key": "",
        "client_secret_env": "TIKTOK_CLIENT_SECRET",
        "redirect_uri": "http://127.0.0.1:8765/callback/",
        "pkce": "hex",  # TikTok's desktop flow wants the challenge hex-encoded; or "base64url"
        "audited": False,  # until TikTok audits the app, every post is private (SELF_ONLY)
        "format": "vertical",
        "chunk_size": 10 * MB,
        "timeout": 60.0,
        "upload_timeout": 300.0,
        "chunk_tries": 3,  # sends of one chunk before the upload is given up
        "poll_wait": 5.0,  # seconds between status fetches
        "poll_tries": 60,
        "spam_wait_hours": 24.0,  # how long `spam_risk_too_many_posts` makes the account wait
        "rate_wait_seconds": 60.0,  # a rate limit without Retry-After
    }
    address_settings = ("api_base", "auth_uri", "token_uri")
    setting_choices: ClassVar[dict[str, tuple[str, ...]]] = {
        "format": ("vertical", "landscape"),
        "pkce": ("hex", "base64url"),
    }
    positive_settings = ("poll_tries", "chunk_tries")

    #: the token endpoint takes the app's key and secret in the form
    #: (https://developers.tiktok.com/doc/oauth-user-access-token-management)
    token_endpoint = TokenEndpoint("client_key", auth="form")

    # Login Kit for desktop, PKCE in hex: https://developers.tiktok.com/doc/login-kit-desktop
    signin: ClassVar[SignIn] = SignIn(
        help="""Connect a TikTok account (Login Kit with PKCE) for `autoretto post tiktok`.

        The app needs Direct Post (video.publish).

        Example: autoretto connect tiktok --client-key abc123
        """,
        flags=(
            Flag(
                "--client-key",
                "Your TikTok app's client key. Default: client_key of [platforms.tiktok].",
            ),
        ),
        id_key="client_key",
        id_missing="give your TikTok app's client key (--client-key, or client_key in "
        "[platforms.tiktok]); find it on developers.tiktok.com under Manage apps",
        secret=Secret("Client secret", env_setting="client_secret_env"),
        scopes=("user.info.basic", "video.publish"),
        pkce="S256",
        pkce_setting="pkce",
        id_param="client_key",
        scope_separator=",",
        button="Authorize",
    )

    @classmethod
    def signed_in(cls, attempt: Attempt) -> Draft:
        """The tokens with the app's key and secret (for refreshing), the creator looked up
        with `creator_info`."""
        granted = attempt.granted()
        if "video.publish" not in granted:
            raise UsageError(
                "TikTok did not grant video.publish (Direct Post); enable Direct Post for the "
                "app, then connect again and allow posting"
            )
        tokens = sign_in_tokens(cls, attempt)
        url = cls.for_sign_in(attempt).url(PUBLISH_API + "creator_info/query/")
        what, token = "show the signed-in creator", tokens["access_token"]
        found = cls.sign_in_call(attempt, "POST", url, what=what, token=token, json={})
        creator = CreatorInfo.from_answer(found.get("data") or {})
        name = "@" + (creator.username or creator.nickname)
        lines = [f"Connected TikTok account {name}.", "Post with `autoretto post tiktok EPISODE`."]
        if not attempt.settings.get("audited", False):
            lines.append("Until the app is audited (audited = true), TikTok posts are private.")
        return Draft(
            account_id=str(attempt.answer.get("open_id") or creator.username),
            name=name,
            tokens=tokens,
            meta={
                "username": creator.username,
                "nickname": creator.nickname,
                "scopes": granted,
                "refresh_expires_at": attempt.ends("refresh_expires_in"),
            },
            lines=lines,
        )

    def choice_problems(
        self, choices: Any, *, duration: float | None, creator: Any = None
    ) -> list[str]:
        """Checked against the creator the screen showed; without one only the Music Usage
        Confirmation is checked here (the adapter checks the rest against a fresh one)."""
        if creator is None:
            return [] if choices.music_confirmed else ["the Music Usage Confirmation is needed"]
        return choices.problems(creator, audited=bool(self.settings["audited"]), duration=duration)

    def screen(self, view: EpisodeView, video: VideoFacts, already: str | None) -> TikTokScreen:
        """Who posts (creator_info, asked as the screen opens), the video, the default title."""
        fitted = view.texts.get(self.name) or {}
        return TikTokScreen(
            episode_id=view.id,
            episode_title=view.title,
            creator=self.creator_info(),
            audited=bool(self.settings["audited"]),
            video=video,
            default_title=str(fitted.get("title") or view.title),
            is_aigc=bool(fitted.get("is_aigc", view.ai_generated)),
            already=already,
        )

    @classmethod
    def ask_choices(cls, screen: TikTokScreen, ask: Ask, say: Say) -> TikTokChoices:
        """The TikTok screen's questions, in TikTok's order; the person's choices. Raises
        Cancelled when the person declines or the video cannot be posted by this creator."""
        creator, duration = screen.creator, screen.video.duration
        handle = f" (@{creator.username})" if creator.username else ""
        say(f"Posting to TikTok as {creator.nickname or 'your account'}{handle}", style="bold")
        say(f'Episode {screen.episode_id}: "{screen.episode_title}"')
        show_video(screen, say)
        if too_long := creator.too_long(duration):
            raise Cancelled(too_long)
        if screen.already:
            say(f"Note: {screen.already}", style="yellow")
        if not screen.audited:
            say(
                "Until the app is audited by TikTok, posts are private: only you will see this "
                "one.",
                style="bold yellow",
            )
        while True:
            title = ask_text(ask, say, "Title", screen.default_title, limit=10_000, required=True)
            if utf16_units(title) <= TITLE_MAX_UTF16:
                break
            say(f"The title is longer than TikTok's {TITLE_MAX_UTF16} characters.", style="yellow")
        privacy = choose_privacy(creator, ask, say, audited=screen.audited)
        allowed = choose_interactions(creator, ask, say)
        disclosed = choose_disclosure(ask, say, privacy=privacy)
        if screen.is_aigc:
            say("The post is labelled AI-generated content.")
        say("After posting, TikTok takes a few minutes to process the video before it appears.")
        branded = disclosed.get("branded_content")
        say(BRANDED_DECLARATION if branded else MUSIC_DECLARATION, style="bold")
        if not ask_yes_no(ask, say, "Post to TikTok now?"):
            raise Cancelled("nothing was posted")
        choices = TikTokChoices(
            title, privacy, **allowed, **disclosed, music_confirmed=True, is_aigc=screen.is_aigc
        )
        problems = choices.problems(creator, audited=screen.audited, duration=duration)
        if problems:
            raise Cancelled("; ".join(problems))
        return choices

    @classmethod
    def setting_problems(cls, settings: dict[str, Any]) -> list[tuple[str, str]]:
        if not MIN_CHUNK <= settings["chunk_size"] <= MAX_CHUNK:
            return [("chunk_size", "must be between 5 MB and 64 MB (5242880 to 67108864)")]
        return []

    # -- readiness -------------------------------------------------------------------------------

    def unsuitable_reason(self, episode: EpisodeView) -> str | None:
        missing = super().unsuitable_reason(episode)
        if missing is None and self.video_path(episode).suffix.lower() not in CONTENT_TYPES:
            return "TikTok takes MP4, MOV or WebM videos"
        return missing

    def limit_reason(self, request: PostRequest) -> str | None:
        """Why the account waits (a TikTok limit met earlier), while it does; else None."""
        account = self.account_row()
        meta = account.meta if account else {}
        until = meta.get("wait_until")
        if until and from_iso(until) > self.now:
            reason = meta.get("wait_reason") or "TikTok asked this account to wait"
            return f"{reason}; TikTok posts wait until {from_iso(until):%Y-%m-%d %H:%M} UTC"
        return None

    def _wait(self, reason: str, seconds: float | None = None) -> LimitReached:
        """Record that the account waits `seconds` (None: `spam_wait_hours`, the daily cap's
        wait); the LimitReached to raise."""
        if seconds is None:
            seconds = self.settings["spam_wait_hours"] * 3600
        until = self.now + timedelta(seconds=seconds)
        account = self.account_row()  # fresh: its meta is merged, not replaced
        if account is not None:
            accounts.update_meta(
                self.db, account, {"wait_until": iso(until), "wait_reason": reason}
            )
        return LimitReached(f"{reason}; TikTok posts wait until {until:%Y-%m-%d %H:%M} UTC")

    # -- calls -------------------------------------------------------------------------------------

    def _api(self, operation: str, body: dict[str, Any], *, rate_limit_waits: bool = True) -> dict:
        """One POST of a publish `operation` as the account; returns `data`. No call here
        publishes (init without bytes, queries, status), so any of them may be repeated.
        `rate_limit_waits`: a rate limit makes the account wait (a limit), else it is a passing
        failure (a poll that can simply ask again)."""
        url = self.url(f"{PUBLISH_API}{operation}/")
        response = self.call("POST", url, check=False, json=body, headers=JSON_BODY)
        if self.succeeded(response):
            return json_body(response).get("data") or {}
        raise self.classify(response, rate_limit_waits=rate_limit_waits)

    def succeeded(self, response: Any) -> bool:
        return response.status_code < 300 and self.problem(response)[0] in ("", "ok")

    def token_refused(self, response: Any) -> bool:
        return self.problem(response)[0] == "access_token_invalid"

    def classify(
        self, response: Any, *, sends: bool = False, rate_limit_waits: bool = True
    ) -> PlatformError:
        code = self.problem(response)[0]
        said = self.said(response)
        if code == "spam_risk_too_many_posts":
            return self._wait("TikTok says this account has posted as much as it may today")
        if code == "rate_limit_exceeded" or response.status_code == 429:
            wait = retry_after(response) or self.settings["rate_wait_seconds"]
            if rate_limit_waits:
                return self._wait("TikTok is rate limiting this account", wait)
            return PassingError(f"TikTok is rate limiting ({said})", retry_after=wait)
        if code in _RECONNECT_CODES:
            return self.reconnect(f"TikTok refused the account ({said})")
        if code == "spam_risk_user_banned_from_posting":
            return NeedsPerson(f"TikTok has banned this account from posting for now ({said})")
        if code.startswith("unaudited_client"):
            return NeedsPerson(
                "TikTok lets an unaudited app post only to private accounts: set the TikTok "
                f"account to private, or have the app audited ({said})"
            )
        if code == "internal_error":
            return PassingError(f"TikTok is erring ({said})")
        return super().classify(response, sends=sends)

    def creator_info(self) -> CreatorInfo:
        """`creator_info/query`: what the screen shows and the post must respect."""
        return CreatorInfo.from_answer(self._api("creator_info/query", {}))

    def fetch_status(self, publish_id: str) -> dict[str, Any]:
        """`status/fetch` of one publish; an unknown publish id answers {"status": "UNKNOWN"}."""
        try:
            return self._api("status/fetch", {"publish_id": publish_id}, rate_limit_waits=False)
        except ContentRejected as error:
            if "invalid_publish_id" in error.reason or "not_found" in error.reason:
                return {"status": "UNKNOWN"}
            raise

    # -- publish -----------------------------------------------------------------------------------

    def _send(self, request: PostRequest, choices: TikTokChoices) -> Published:
        episode = request.episode
        video = self.video_file(episode)
        handles = self.handles(request)
        found = self._last_publish(request, handles)
        if found is not None:
            return found
        creator = self.creator_info()
        audited = bool(self.settings["audited"])
        problems = choices.problems(
            creator, audited=audited, duration=episode.duration, strict=False
        )
        if problems:
            raise ContentRejected("TikTok: " + "; ".join(problems))
        plan = chunk_plan(video.stat().st_size, self.settings["chunk_size"])
        info = choices.post_info(creator, audited=audited, ai_generated=episode.ai_generated)
        data = self._api("video/init", {"post_info": info, "source_info": plan.source_info})
        publish_id, upload_url = data.get("publish_id"), data.get("upload_url")
        if not publish_id or not upload_url:
            raise PassingError("TikTok answered the init without a publish id or upload address")
        earlier = [*handles.get("earlier_publish_ids", [])]
        if handles.get("publish_id"):
            earlier.append(handles["publish_id"])
        handles = {
            "publish_id": publish_id,
            "upload_url": upload_url,
            "size": plan.size,
            "final_chunk_sent": False,
            "privacy_level": info["privacy_level"],
            "choices": choices.to_json(),
            "username": creator.username,
            "init_at": iso(now()),
            "earlier_publish_ids": earlier,
        }
        self.save(request, handles)  # the publish id is on record before any byte
        log.info("tiktok: post %s initialised as %s", request.post_id, publish_id)
        self._upload(request, handles, video, plan)
        return self._wait_for_publish(request, handles)

    def _last_publish(
        self, request: PostRequest, handles: dict[str, Any], *, wait: bool = True
    ) -> Published | None:
        """Ask TikTok about the last attempt's publish (before any new init): the post when it
        is done, None when it is not and never will be (a new init is safe); one still
        processing is waited for (`wait`), else a passing failure."""
        if not handles.get("publish_id"):
            return None  # the publish id is saved before any byte: nothing was sent
        status = self.fetch_status(handles["publish_id"])
        state = str(status.get("status") or "")
        if state in DONE:
            return self._published(handles, status)
        if state in PROCESSING and _upload_may_finish(handles, status):
            if wait:
                return self._wait_for_publish(request, handles)
            raise PassingError(f"TikTok is still processing publish {handles['publish_id']}")
        log.info(
            "tiktok: post %s: earlier publish %s is %s (%s); nothing of it is live",
            request.post_id, handles["publish_id"], state or "unknown",
            status.get("fail_reason") or "its upload never finished",
        )  # fmt: skip
        return None

    def _upload(
        self, request: PostRequest, handles: dict[str, Any], video: Path, plan: ChunkPlan
    ) -> None:
        """PUT the chunks in order; a chunk whose answer is lost is sent again (the same range
        overwrites). The upload address carries its own signature: no token goes there."""
        content_type = CONTENT_TYPES.get(video.suffix.lower(), "video/mp4")
        last = plan.total_chunk_count - 1
        with open(video, "rb") as source:
            for index, (first, final) in enumerate(plan.ranges):
                source.seek(first)
                chunk = source.read(final - first + 1)
                if index == last:
                    handles["final_chunk_sent"] = True
                    self.save(request, handles)  # from here the upload may finish
                for sent in range(1, int(self.settings["chunk_tries"]) + 1):
                    try:
                        response = self.call(
                            "PUT",
                            handles["upload_url"],
                            signed=False,
                            check=False,
                            data=chunk,
                            headers={
                                "Content-Type": content_type,
                                "Content-Length": str(len(chunk)),
                                "Content-Range": f"bytes {first}-{final}/{plan.size}",
                            },
                            timeout=self.settings["upload_timeout"],
                        )
                    except PassingError as error:
                        if sent < self.settings["chunk_tries"]:
                            continue
                        if index == last:
                            return  # the last chunk may have landed: the status will tell
                        raise PassingError(
                            f"the upload to TikTok broke off at chunk {index + 1} of "
                            f"{plan.total_chunk_count} ({error.reason})"
                        ) from None
                    if response.status_code in (200, 201, 206):
                        break
                    if response.status_code >= 500 and sent < self.settings["chunk_tries"]:
                        continue
                    if index == last:
                        # Refused in so many words: the last chunk did not land either.
                        handles["final_chunk_sent"] = False
                        self.save(request, handles)
                    if response.status_code == 429:
                        # A rate limit read as the API's is (Retry-After, else
                        # rate_wait_seconds): the media transfer guide lists no 429 for the
                        # upload address, the rate-limit page names no Retry-After
                        # (https://developers.tiktok.com/doc/content-posting-api-media-transfer-guide,
                        # https://developers.tiktok.com/doc/tiktok-api-v2-rate-limit)
                        raise self.classify(response, rate_limit_waits=False)
                    raise PassingError(
                        f"TikTok refused chunk {index + 1} of {plan.total_chunk_count} "
                        f"(HTTP {response.status_code}); the next try starts a new upload"
                    )
                request.heartbeat()

    def _wait_for_publish(self, request: PostRequest, handles: dict[str, Any]) -> Published:
        """Poll the publish status. The bytes are up: from here a failure to hear back is a
        lost answer (the post may go live), never a plain failure."""
        publish_id = handles["publish_id"]
        state = "unknown"
        for attempt in range(int(self.settings["poll_tries"])):
            if attempt:
                self.sleep(self.settings["poll_wait"])
            try:
                status = self.fetch_status(publish_id)
            except PassingError:
                continue
            except (NeedsPerson, ContentRejected, LimitReached) as error:
                raise LostAnswer(
                    f"TikTok took publish {publish_id} but its status could not be read "
                    f"({error.reason})"
                ) from None
            state = str(status.get("status") or "")
            if state in DONE:
                return self._published(handles, status)
            if state == "FAILED":
                raise self._failed(str(status.get("fail_reason") or "no reason given"))
            if state in PROCESSING and not _upload_may_finish(handles, status):
                # The last chunk's answer was lost and it did not land: this publish can never
                # finish, so the next try may start a new one.
                raise PassingError(f"the upload of publish {publish_id} did not finish")
            request.heartbeat()
        raise LostAnswer(
            f"TikTok is still processing publish {publish_id} ({state}; moderation can take a "
            "while); TikTok is asked about it before anything is posted again"
        )

    def _failed(self, reason: str) -> PlatformError:
        if reason in _FAIL_REASON_LIMIT:
            return self._wait(f"TikTok refused the post for now ({reason})")
        if reason in _FAIL_REASON_PERSON:
            return NeedsPerson(f"TikTok did not publish the video ({reason})")
        if reason in _FAIL_REASON_PASSING:
            return PassingError(
                f"TikTok could not take the video ({reason}); it can be tried again"
            )
        return ContentRejected(f"TikTok did not publish the video ({reason})")

    def _published(self, handles: dict[str, Any], status: dict[str, Any]) -> Published:
        username = handles.get("username") or (
            self._account.meta.get("username") if self._account else ""
        )
        ids = status.get("publicaly_available_post_id") or status.get("publicly_available_post_id")
        if ids:
            post_id = str(ids[0])
            return Published(post_id, VIDEO_URL.format(username, post_id) if username else None)
        # A private post has no public id: the publish id names it, the profile shows it.
        return Published(handles["publish_id"], PROFILE_URL.format(username) if username else None)

    # -- finding an attempt ------------------------------------------------------------------------

    def _find_attempt(self, request: PostRequest) -> Published | None:
        return self._last_publish(request, dict(request.handles), wait=False)


def _upload_may_finish(handles: dict[str, Any], status: dict[str, Any]) -> bool:
    """Can this publish still go live? Not when its final chunk was never sent (only
    Autoretto holds the upload address), nor when TikTok counts fewer bytes than the file has."""
    if not handles.get("final_chunk_sent"):
        return False
    uploaded, size = status.get("uploaded_bytes"), handles.get("size")
    if status.get("status") == "PROCESSING_UPLOAD" and uploaded is not None and size:
        return int(uploaded) >= int(size)
    return True
