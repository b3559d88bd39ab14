"""The shared shape of every platform (ARCHITECTURE.md §5, STYLE.md rule 3).

A platform module holds one `Platform` subclass that writes only its protocol steps:
`_publish` (send one post) and, where the platform can be asked, `_find_attempt` (is this
very attempt already on the account?). The base class owns the template around them: it turns
every way a call can end into one of a few outcome values, so the engine never sees a raw
HTTP exception and a network error never escapes a platform; it retries what may be retried
(`retrying`), keeps an attempt's handles across the tries of one job (`handles`, `save`) and
knows the clock of the run (`now`). HTTP platforms take the one signed-in request path of
http.py.

Limits are class attributes. Modules must import fast: heavy libraries (googleapiclient,
requests) are imported inside the methods that use them.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from ..errors import ConfigError, ConfigProblems
from ..ledger import accounts as ledger
from ..retry import RetryPolicy
from .text import Copy, TextField, clean, fit
from .web import good_base_url

if TYPE_CHECKING:
    from ..ledger.store import Store as Database
    from ..paths import Paths

log = logging.getLogger("autoretto.platforms")

T = TypeVar("T")


@dataclass(frozen=True)
class EpisodeView:
    """What a platform may read of an episode."""

    id: int
    channel: str
    title: str
    description: str
    tags: tuple[str, ...]
    videos: dict[str, str]  # format -> absolute path ("landscape", "vertical", "reels")
    thumbnail: str | None = None
    duration: float | None = None
    texts: dict[str, Any] = field(default_factory=dict)  # platform -> fitted text
    ai_generated: bool = False
    #: local path -> `s3://` URL of the same file in the media bucket (`[media] url`), for a
    #: media host that can hand out a link to it instead of uploading a copy
    stored: dict[str, str] = field(default_factory=dict)

    @property
    def main_video(self) -> str:
        named = [name for name in ("landscape", "vertical") if name in self.videos]
        return self.videos[named[0]] if named else next(iter(self.videos.values()))


@dataclass(frozen=True)
class CarouselImage:
    """One card of a carousel (issue 29): a picture file drawn to the platform's size, and the
    words that describe it to a person who cannot see it (alt text)."""

    path: str
    alt: str
    width: int
    height: int
    mime: str = "image/jpeg"


@dataclass(frozen=True)
class CarouselSpec:
    """How a platform takes a carousel: how many cards (at least, at most), their size in
    pixels, the largest file it takes, and the page these facts come from."""

    least: int
    most: int
    size: tuple[int, int]
    max_bytes: int
    source: str
    #: it shows each card's alt text
    alt_text: bool = False


def carousel_view(episode: EpisodeView) -> EpisodeView:
    """The episode as a carousel's text reads it: its title, then words of the carousel's own
    and the first paragraph of the description, none of the texts fitted for the video's post.
    A carousel's text is never the video post's (X refuses a post that repeats one)."""
    first = episode.description.strip().split("\n\n", 1)[0].strip()
    words = "The release in cards: artwork, credits, words and waveform."
    return replace(episode, description="\n\n".join(p for p in (words, first) if p), texts={})


@dataclass(frozen=True)
class PostRequest:
    """One attempt at one post.

    `marker` is the post's identity (derived from its content, the platform and the account,
    the same for every attempt of the post) and travels with it to the platform (in a sidecar,
    a description, a record key) so that `find_attempt` can recognise it later, even after the
    database that sent it was restored from an older copy. `handles` are
    durable platform handles saved by an earlier attempt of the same post (an upload session,
    a container id); `save_handles` must be called before each irreversible step so a crash
    right after it leaves enough behind to resume or check instead of starting over.
    """

    post_id: int
    attempt: int
    marker: str
    channel: str
    platform: str
    episode: EpisodeView
    publish_at: datetime  # the slot instant, or the moment of a post-now
    slot: str | None = None  # local slot key, None for post-now
    slot_at: str | None = None
    handles: dict[str, Any] = field(default_factory=dict)
    save_handles: Callable[[dict[str, Any]], None] = lambda handles: None
    heartbeat: Callable[[], None] = lambda: None
    #: "video", or "carousel": the episode's cards (`images`) as one post (issue 29)
    kind: str = "video"
    images: tuple[CarouselImage, ...] = ()


@dataclass(frozen=True)
class Published:
    platform_post_id: str
    url: str | None = None


FailureKind = Literal["passing", "needs_person", "limit", "rejected", "lost_answer", "gone"]


@dataclass(frozen=True)
class Failure:
    """A post that did not (knowingly) go out.

    kind:
    - passing: may work later (timeout before sending, 5xx, 429); `retry_after` in seconds;
    - needs_person: the account must be reconnected or a permission granted; never retried;
    - limit: a cap or quota is used up; no try is spent;
    - rejected: the platform refused this content (fix the episode);
    - lost_answer: the request went out and the answer was lost: it may be live;
    - gone: what a reply answers was deleted meanwhile (recorded so, never retried).

    `sent` is False only when nothing at all reached the platform (the connection was never
    made): the slot is tried again by a later run inside its window, not decided now.
    """

    kind: FailureKind
    reason: str
    retry_after: float | None = None
    sent: bool = True


Outcome = Published | Failure


@dataclass(frozen=True)
class Comment:
    """One comment under one of our published posts (or a reply in its thread), as the platform
    shows it (issue 28). Stored once per (platform, account, `id`) whatever the overlap of
    reads."""

    id: str  # the platform's id of the comment
    post_id: str  # the platform id of our post it is under (posts.platform_post_id)
    author: str  # the name or handle the platform shows
    text: str
    published_at: str | None = None  # ISO-8601 UTC ending in Z, as the platform dated it
    author_id: str = ""  # the platform's id of the author ("" when it gives none)
    parent_id: str | None = None  # the comment it answers; None: written under the post itself
    #: written by the connected account itself (our own replies): stored, never drafted for
    mine: bool = False
    #: what a reply needs to thread under it, beyond `id` (Bluesky: the root's and the
    #: comment's uri and cid); JSON-able
    ref: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CommentPage:
    """One call's worth of a post's new comments. `cursor`: where the next read of this post
    continues (kept once this page's comments are stored); None: keep the one there was."""

    comments: tuple[Comment, ...]
    cursor: str | None = None
    #: the platform ids of comments the platform shows as deleted (a reply to them is `gone`)
    gone: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReplyRequest:
    """One attempt at one reply (autoretto/replies.py), the reply's `PostRequest`.

    `marker` is the reply's identity (a digest of its text, the comment it answers and the
    account), the same on every attempt; `find_reply` recognises the reply by it or by what it
    is made of (its text under that comment, from the account)."""

    reply_id: int
    attempt: int
    marker: str
    channel: str
    platform: str
    comment: Comment  # the comment answered, as stored
    text: str  # the reply's text, gated (autoretto/replies.py)
    handles: dict[str, Any] = field(default_factory=dict)
    save_handles: Callable[[dict[str, Any]], None] = lambda handles: None
    heartbeat: Callable[[], None] = lambda: None


class PlatformError(Exception):
    """Raised inside a platform's protocol steps; the base turns it into a `Failure`."""

    kind: FailureKind = "passing"

    def __init__(self, reason: str, *, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class PassingError(PlatformError):
    kind = "passing"


class NeedsPerson(PlatformError):
    kind = "needs_person"


class LimitReached(PlatformError):
    kind = "limit"


class ContentRejected(PlatformError):
    kind = "rejected"


class LostAnswer(PlatformError):
    kind = "lost_answer"


class CommentGone(PlatformError):
    """The comment a reply answers (or the post under it) was deleted meanwhile."""

    kind = "gone"


class CannotAsk(Exception):
    """This platform offers no way to find an attempt: a person must confirm."""


@dataclass(frozen=True)
class LimitsView:
    """A platform's limits as `autoretto limits` and the page show them: sentences, the first
    one a stop (shown as a warning) when `stopped`, and an optional table."""

    lines: tuple[str, ...]
    stopped: bool = False
    columns: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class PlatformContext:
    """What a platform instance is built with for one run."""

    name: str
    settings: Any  # the parsed [platforms.NAME] table
    paths: Paths
    db: Database | None = None
    now: datetime | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)


class Platform:
    """Base of every platform. Subclasses set the class attributes and write the `_` methods."""

    name: ClassVar[str]
    title: ClassVar[str]  # how people call it, e.g. "YouTube"
    can_find_attempts: ClassVar[bool] = False
    #: settings keys with their defaults; `parse_settings` refuses any other key
    settings_defaults: ClassVar[dict[str, Any]] = {}
    #: True for platforms that need `autoretto connect NAME` before they can post
    needs_account: ClassVar[bool] = True
    #: True where every request of a post goes through one path that notes whether it
    #: reached the platform (`reached`); elsewhere every failed post counts as sent
    counts_requests: ClassVar[bool] = False
    #: did any request of the post being published reach the platform (a connection made)?
    reached: bool = True
    #: how long after a lost answer `find_attempt` asks (a post takes a while to be listed)
    look_delay: ClassVar[timedelta] = timedelta(0)
    #: the API version spoken when `[platforms.NAME] api_version` names none (versions.py)
    api_version: ClassVar[str | None] = None
    #: version -> first day it is no longer served (ISO date; None: no end announced), as the
    #: page at `api_version_source` publishes it
    api_versions: ClassVar[dict[str, str | None]] = {}
    api_version_source: ClassVar[str] = ""
    #: what a version looks like (`config check`), and how to write one
    api_version_pattern: ClassVar[str] = r".+"
    api_version_example: ClassVar[str] = ""
    #: older settings keys that named the version before `api_version` did (still honoured)
    api_version_aliases: ClassVar[tuple[str, ...]] = ()

    #: the texts a post carries, fitted to the platform's limits (field -> TextField, see
    #: text.py); {}: the episode's whole copy as it is; None: no texts of its own
    text_fields: ClassVar[dict[str, TextField] | None] = None
    #: what the sheet of ready-to-post texts calls it (None: its title)
    texts_title: ClassVar[str | None] = None
    #: the text field holding the AI-content flag the platform asks for (None: it asks none)
    ai_flag: ClassVar[str | None] = None

    #: slot posts are drawn a human moment after the slot (autoretto.pace), not at its time
    paced: ClassVar[bool] = False
    #: `stats collect` reads its posts' counters (`read_counters`); False: it has counters
    #: Autoretto does not read; None: it has none (an outbox)
    counters: ClassVar[bool | None] = False

    #: how it takes a carousel of the episode's cards (issue 29); None: it takes none
    #: (`carousel_note` says why)
    carousel: ClassVar[CarouselSpec | None] = None
    carousel_note: ClassVar[str] = "it has no carousel posts"

    #: what it does with the comments under our posts (issue 28): None: it has none (an
    #: outbox); "none": it has comments Autoretto does not read (`comments_note` says why);
    #: "read": `read_comments`; "reply": `read_comments` and `reply`
    comments: ClassVar[str | None] = None
    comments_note: ClassVar[str] = ""
    #: the permission (scope) reading and answering comments needs, named when it is refused
    comment_scope: ClassVar[str] = ""
    #: a reply's limits: its longest text (graphemes), whether it may carry a link, the words
    #: of the AI disclosure the platform asks of an AI-written reply (None: it asks none)
    reply_length: ClassVar[int] = 0
    reply_links: ClassVar[bool] = True
    reply_disclosure: ClassVar[str | None] = None
    #: replies Autoretto sends per account and day at most, kept below the platform's own limit
    #: (the module says where that limit is published)
    replies_per_day: ClassVar[int] = 0

    #: a platform posted by hand (MANUAL_PLATFORMS, `autoretto post NAME EPISODE`): the type of
    #: the person's answers it is built with for one post (`Platform(context, choices=...)`)
    choices_type: ClassVar[type | None] = None
    #: the account's page (`{}`: its handle), where a person looks for a post that may be live
    profile_url: ClassVar[str | None] = None
    #: its fitted title is the episode's own title (the title of the video's page)
    names_episode: ClassVar[bool] = False
    #: its description carries a compilation's chapter list whole (the player makes chapters of
    #: it): a compilation whose list does not fit is refused for it
    shows_chapters: ClassVar[bool] = False
    #: the player makes chapters only of at least this many, each at least this many seconds
    chapter_minimum: ClassVar[tuple[int, float]] = (0, 0.0)
    #: the longest video it takes (seconds), and from an account not verified; None: none
    #: declared (a compilation is then bound by the pipeline's own)
    longest_video_seconds: ClassVar[float | None] = None
    unverified_longest_seconds: ClassVar[float | None] = None
    #: what `autoretto disconnect NAME` adds once our copy is gone (the app is still listed)
    disconnect_note: ClassVar[str | None] = None

    #: how waits (between polls, before a retry) are spent; tests replace it
    sleep: Callable[[float], None] = staticmethod(time.sleep)

    def __init__(self, context: PlatformContext) -> None:
        self.context = context
        # A platform built without its [platforms.NAME] table still has every default.
        settings = context.settings
        if settings is None or isinstance(settings, dict):
            settings = {**self.settings_defaults, **(settings or {})}
        self.settings = settings
        # The handles of this run's attempts in flight: a retry inside the job must see what
        # the try before it saved (a record key, an upload), not what the attempt began with.
        self._in_flight: dict[tuple[int, int], dict[str, Any]] = {}

    # -- texts ---------------------------------------------------------------------------

    @classmethod
    def fit_texts(cls, copy: Copy) -> dict[str, Any]:
        """The texts of a post made from `copy`, each fitted to the platform's limits."""
        if not cls.text_fields:
            return {
                "title": copy.title,
                "description": "".join(copy.source("description")),
                "tags": list(copy.tags),
            }
        texts: dict[str, Any] = {name: spec.fitted(copy) for name, spec in cls.text_fields.items()}
        texts.update(cls.more_texts(copy))
        if cls.ai_flag:
            texts[cls.ai_flag] = copy.ai_generated
        return texts

    @classmethod
    def more_texts(cls, copy: Copy) -> dict[str, Any]:
        """Fields of a post besides its texts (YouTube's tags, say)."""
        return {}

    @classmethod
    def text_problems(cls, texts: dict[str, Any]) -> list[str]:
        """Every way `texts` break the platform's limits, in plain words (empty = fine)."""
        return [
            problem
            for name, spec in (cls.text_fields or {}).items()
            for problem in spec.problems(cls.name, name, texts.get(name))
        ]

    def read_counters(self, ids: list[str]) -> Iterator[tuple[str, dict[str, int | None]]]:
        """(platform id, {"views", "likes", "comments", "reposts", "replies"}) of each of `ids`
        it still shows."""
        raise NotImplementedError

    # -- comments and replies (issue 28) ----------------------------------------------------

    def read_comments(self, post_id: str, cursor: str | None) -> Iterator[CommentPage]:
        """The comments under our post `post_id` that came after `cursor` (None: from the
        start), a page per call, each call counted against the platform's quota and caps before
        it is made (LimitReached when none is left: what was read stays read). Raises
        PlatformError (NeedsPerson naming `comment_scope` when the permission is gone)."""
        if self.comments not in ("read", "reply"):
            raise LimitReached(f"{self.title}: its comments are not read by Autoretto")
        return self._read_comments(post_id, cursor)

    def reply(self, request: ReplyRequest) -> Outcome:
        """Send one reply under `request.comment`. Never raises for anything the platform or
        the network did: the same outcomes as `publish` (CommentGone's kind "gone" when the
        comment was deleted meanwhile)."""
        self.reached = not self.counts_requests
        try:
            return self._reply(request)
        except PlatformError as error:
            return Failure(error.kind, error.reason, error.retry_after, self.reached)
        except OSError as error:
            log.warning("%s: %s", self.name, error)
            return Failure(
                "lost_answer", f"{self.title}: {_plain(error)}; the reply may have gone out"
            )
        except Exception as error:
            log.exception("%s: unexpected error while replying", self.name)
            return Failure(
                "lost_answer",
                f"{self.title}: unexpected {type(error).__name__} ({_plain(error)}); the reply "
                "may have gone out",
            )

    def find_reply(self, request: ReplyRequest) -> Published | None:
        """This reply on the platform (any attempt of it), else None; CannotAsk where the
        platform cannot be asked."""
        if not self.can_find_attempts:
            raise CannotAsk(f"{self.title} cannot be asked whether a reply went out")
        return self._find_reply(request)

    def _read_comments(self, post_id: str, cursor: str | None) -> Iterator[CommentPage]:
        raise NotImplementedError

    def _reply(self, request: ReplyRequest) -> Published:
        raise NotImplementedError

    def _find_reply(self, request: ReplyRequest) -> Published | None:
        raise CannotAsk(f"{self.title} cannot be asked whether a reply went out")

    # -- a post made by hand ---------------------------------------------------------------

    def choice_problems(
        self, choices: Any, *, duration: float | None, creator: Any = None
    ) -> list[str]:
        """Every way a person's `choices` break the platform's rules for a video of `duration`
        seconds, in plain words; `creator`: what the posting screen showed of the account."""
        return []

    @classmethod
    def limits_report(
        cls, db: Database, moment: datetime, settings: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """The platform's entry in `autoretto limits --json` at `moment`; None: no limits."""
        return None

    @classmethod
    def limits_view(cls, report: dict[str, Any]) -> LimitsView:
        """`report` (from `limits_report`) in plain sentences, for the terminal and the page."""
        return LimitsView(())

    @classmethod
    def account_warnings(cls, meta: dict[str, Any]) -> list[str]:
        """Warnings `doctor` shows about the connected account whose meta is `meta` (what the
        platform did to the last post, say)."""
        return []

    # -- translations on a published post (a class in the registry's EDITORS) ----------------

    @classmethod
    def localization_refusal(cls, db: Database) -> str | None:
        """Why nothing on the platform may be changed, or None when the creator allowed it (read
        from the database only)."""
        return f"{cls.title} takes no translations"

    @classmethod
    def localize(
        cls,
        config: Any,
        db: Database,
        post_id: str,
        localizations: dict[str, dict[str, str]],
        *,
        default_language: str | None,
        now: datetime,
    ) -> Any:
        """Set `localizations` (language -> {title, description}) on the published post
        `post_id` (its platform id); an outcome with `languages`, `changed` and `reason`.
        Raises PlatformError when the platform says no."""
        raise NotImplementedError

    # -- declared setting rules: parse_settings checks them for every adapter ------------
    # (Numbers are already refused below 0 and timeouts at 0, by _setting_problem.)

    #: settings that are API addresses: https://, plain http:// only to this machine
    address_settings: ClassVar[tuple[str, ...]] = ()
    #: settings that must be one of a few words (the first is not necessarily the default)
    setting_choices: ClassVar[dict[str, tuple[str, ...]]] = {}
    #: counts that must be more than 0 (a number of polls, of pages, of tries)
    positive_settings: ClassVar[tuple[str, ...]] = ()
    #: settings written as a duration ("10s", "2m")
    duration_settings: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def declared_problem(cls, settings: dict[str, Any]) -> tuple[str, str] | None:
        """(key, what is wrong) of the first setting that breaks a declared rule, else None."""
        return next(iter(cls.declared_problems(settings)), None)

    @classmethod
    def declared_problems(cls, settings: dict[str, Any]) -> list[tuple[str, str]]:
        """(key, what is wrong) of each setting that breaks a declared rule."""
        from ..clock import parse_duration

        found = []
        for key in cls.address_settings:
            if not good_base_url(str(settings[key])):
                found.append(
                    (key, "must be an https:// address (http:// only for 127.0.0.1 or localhost)")
                )
        for key, words in cls.setting_choices.items():
            if settings[key] not in words:
                quoted = [f'"{word}"' for word in words]
                found.append((key, f"must be {', '.join(quoted[:-1])} or {quoted[-1]}"))
        for key in cls.positive_settings:
            if settings[key] <= 0:
                found.append((key, "must be more than 0"))
        for key in cls.duration_settings:
            try:
                parse_duration(settings[key])
            except ValueError as error:
                found.append((key, str(error)))
        return found

    @classmethod
    def setting_problems(cls, settings: dict[str, Any]) -> list[tuple[str, str]]:
        """(key, what is wrong) of each setting that breaks one of the adapter's own rules;
        adapters with rules beyond the declared ones override this. `settings` holds the
        default of a key whose value was refused (its first problem is the one named)."""
        return []

    # -- configuration -------------------------------------------------------------------

    @classmethod
    def setting_error(cls, path: Path, key: str, message: str) -> ConfigError:
        """The one-line error for a bad `[platforms.NAME] key`."""
        return ConfigError(path, message, field=f"platforms.{cls.name}.{key}")

    @classmethod
    def parse_settings(cls, table: dict[str, Any], *, path: Path, paths: Paths) -> Any:
        """Validate `[platforms.NAME]`; returns a dict of settings (defaults filled in).
        Each key is checked on its own (the common checks, the declared rules, then the
        adapter's `setting_problems`): ConfigProblems names every one that is wrong (its first
        problem), so that `config check` lists them all."""
        settings = dict(cls.settings_defaults)
        wrong: dict[str, str] = {}  # key -> what is wrong with it, in the table's order
        for key, value in table.items():
            if key not in cls.settings_defaults:
                allowed = ", ".join(sorted(cls.settings_defaults)) or "none"
                wrong[key] = f"unknown key (allowed: {allowed})"
                continue
            default = cls.settings_defaults[key]
            if isinstance(default, float) and type(value) is int:
                value = float(value)  # `poll_wait = 0` for a setting whose default is 0.5
            if default is not None and not isinstance(value, type(default)):
                wrong[key] = f"must be a {type(default).__name__}"
                continue
            problem = _setting_problem(key, value, default)
            if problem:
                wrong[key] = problem
                continue
            settings[key] = value
        for key, problem in [*cls.declared_problems(settings), *cls.setting_problems(settings)]:
            wrong.setdefault(key, problem)  # a key already wrong holds its default here
        if "api_version" in settings:
            version = cls.version_from(settings)
            keys = ("api_version", *cls.api_version_aliases)
            if not re.fullmatch(cls.api_version_pattern, version) and not wrong.keys() & set(keys):
                key = next((key for key in keys if table.get(key)), "api_version")
                wrong[key] = f'write the API version like "{cls.api_version_example}"'
        if wrong:
            raise ConfigProblems(
                [cls.setting_error(path, key, problem) for key, problem in wrong.items()]
            )
        return settings

    @classmethod
    def version_from(cls, settings: Any) -> str:
        """The API version of `settings`: `api_version`, else an alias, else the class's."""
        table = settings if isinstance(settings, dict) else {}
        for key in ("api_version", *cls.api_version_aliases):
            if table.get(key):
                return str(table[key])
        return str(cls.api_version or "")

    @classmethod
    def version_ends(cls, version: str) -> tuple[date | None, bool]:
        """(first day `version` is no longer served or None, whether that day is an estimate)."""
        ends = cls.api_versions.get(version)
        return (date.fromisoformat(ends) if ends else None), False

    @property
    def speaks_version(self) -> str:
        """The API version this instance sends."""
        return self.version_from(self.settings)

    # -- what the run knows --------------------------------------------------------------

    @property
    def now(self) -> datetime:
        """The moment of the run (its `--now`), else the clock's."""
        from ..clock import now

        return self.context.now or now()

    @property
    def home(self) -> Path:
        return self.context.paths.home

    def video_path(self, episode: EpisodeView, name: str | None = None) -> Path:
        """The render this platform sends: `name`, else the `format` setting's, else the main."""
        wanted = name or self.settings.get("format") or ""
        return Path(episode.videos.get(wanted) or episode.main_video)

    def video_file(self, episode: EpisodeView, name: str | None = None) -> Path:
        """The render this platform sends (`video_path`); ContentRejected when it is missing."""
        video = self.video_path(episode, name)
        if not video.is_file():
            raise ContentRejected(f"the episode's video {video} is missing")
        return video

    def handles(self, request: PostRequest) -> dict[str, Any]:
        """This attempt's handles saved so far in this run, else a copy of the ones it began
        with (change it, then `save` it)."""
        return self._in_flight.setdefault((request.post_id, request.attempt), dict(request.handles))

    def save(self, request: PostRequest, handles: dict[str, Any]) -> None:
        """Keep `handles` for the job's next try and on the attempt's record (before the
        irreversible step they make safe)."""
        self._in_flight[(request.post_id, request.attempt)] = handles
        request.save_handles(dict(handles))

    def first_marker(self, request: PostRequest) -> str:
        """The marker a post keeps on every try once it was sent with one (saved on the
        handles), else this attempt's."""
        return self.handles(request).get("marker") or request.marker

    # -- readiness -----------------------------------------------------------------------

    def is_connected(self) -> bool:
        """Can this platform post at all (an account connected and usable, or no need)?"""
        return not self.needs_account

    def account_key(self) -> str:
        """Where on the platform a post lands (the account, the endpoint, the folder): part of
        a post's identity, so the same episode to two accounts is two posts."""
        return ""

    def token_expires_at(self) -> datetime | None:
        """When the account's sign-in stops working and cannot be refreshed (a person must
        reconnect before then); None: never."""
        return None

    def not_ready_reason(self) -> str | None:
        """Why nothing may be sent now (e.g. the account needs reconnecting), else None."""
        return None

    def unsuitable_reason(self, episode: EpisodeView) -> str | None:
        """Why this episode cannot go to this platform at all (Reels need a ≤ 90-second vertical
        edit); a slot then takes the oldest suitable episode instead, and no try is spent."""
        return None

    def limit_reason(self, request: PostRequest) -> str | None:
        """The cap this post would exceed, in plain words; None when it fits."""
        return None

    # -- the template ------------------------------------------------------------------

    def publish(self, request: PostRequest) -> Outcome:
        """Send one post. Never raises for anything the platform or the network did."""
        self.reached = not self.counts_requests
        try:
            if request.kind == "carousel":
                return self._publish_carousel(request)
            return self._publish(request)
        except PlatformError as error:
            return Failure(error.kind, error.reason, error.retry_after, self.reached)
        except OSError as error:
            # A network or file error that the platform did not classify. Nothing says it came
            # before the request went out, and any error after that is a lost answer: the
            # post may be live, and it is looked for before anything is sent again.
            log.warning("%s: %s", self.name, error)
            return Failure(
                "lost_answer", f"{self.title}: {_plain(error)}; the post may have gone out"
            )
        except Exception as error:
            # A bug of ours or an answer of a shape nobody expected (a KeyError reading it):
            # nothing says it came before the request went out, so it is a lost answer at
            # once, looked for before any retry, as yt-dlp's extractor template wraps whatever
            # a site raises. The traceback goes to the log for the bug report.
            log.exception("%s: unexpected error while posting", self.name)
            return Failure(
                "lost_answer",
                f"{self.title}: unexpected {type(error).__name__} ({_plain(error)}); the post "
                "may have gone out",
            )

    @property
    def request_timeout(self) -> timedelta:
        """The longest one request of a post waits for its answer (`timeout`, where the
        platform has one): a post whose run went away is asked about no sooner than this after
        it was found so (posts.take_back_from_gone_run)."""
        return timedelta(seconds=float(self.settings.get("timeout") or 0))

    def find_attempt(self, request: PostRequest) -> Published | None:
        """This very attempt on the platform, else None; CannotAsk where it cannot be asked."""
        if not self.can_find_attempts:
            raise CannotAsk(f"{self.title} cannot be asked whether a post went out")
        return self._find_attempt(request)

    @property
    def retry_policy(self) -> RetryPolicy:
        """How this platform's passing failures are retried: the run's `[retry]`."""
        return self.context.retry

    def retrying(self, call: Callable[[], T]) -> T:
        """Run `call`, retrying a PassingError (raised only where repeating is safe: nothing
        went out, or the protocol resumes) with exponential backoff and jitter, through `sleep`.
        Retry-After is honoured up to `max_wait`; a longer one ends the job's tries (a later
        slot takes the post)."""
        from tenacity import Retrying, retry_if_exception, stop_after_attempt

        policy = self.retry_policy

        def worth_waiting_for(error: BaseException) -> bool:
            return isinstance(error, PassingError) and policy.waits_out(error.retry_after)

        def wait(state: Any) -> float:
            error = state.outcome.exception() if state.outcome else None
            return policy.wait(state.attempt_number, getattr(error, "retry_after", None))

        for attempt in Retrying(
            stop=stop_after_attempt(max(1, policy.attempts)),
            wait=wait,
            retry=retry_if_exception(worth_waiting_for),
            sleep=lambda seconds: self.sleep(seconds) if seconds > 0 else None,
            reraise=True,
        ):
            with attempt:
                result = call()
        return result

    def _publish(self, request: PostRequest) -> Published:
        raise NotImplementedError

    def _publish_carousel(self, request: PostRequest) -> Published:
        raise ContentRejected(f"{self.title} takes no carousel: {self.carousel_note}")

    def _find_attempt(self, request: PostRequest) -> Published | None:
        raise NotImplementedError


#: No count, size or wait of any platform is larger; a bigger number is a typo (and one too
#: big for SQLite or a socket timeout would crash where it is used, not here).
LARGEST_SETTING = 10**9
LONGEST_TIMEOUT = 3600  # seconds, for `timeout` and every `*_timeout`


def _setting_problem(key: str, value: Any, default: Any) -> str | None:
    """What is wrong with `key = value` on any platform (numbers finite and in range, texts
    without control characters, a setting with a default not emptied); None if nothing."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if key == "timeout" or key.endswith("_timeout"):
            if not (math.isfinite(value) and 0 < value <= LONGEST_TIMEOUT):
                return f"must be more than 0 and at most {LONGEST_TIMEOUT} seconds"
        elif not (math.isfinite(value) and 0 <= value <= LARGEST_SETTING):
            return f"must be a number from 0 to {LARGEST_SETTING}"
    elif isinstance(value, str):
        if not value.isprintable():
            return "must not hold control characters (a newline, a tab, ...)"
        if isinstance(default, str) and default and not value.strip():
            return f'must not be empty (default: "{default}")'
    return None


def _plain(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text.splitlines()[0][:300]


# --- shared by facebook, instagram, threads, linkedin ---


def first_found(
    pages: Iterator[list[T]] | list[list[T]],
    matches: Callable[[T], bool],
    *,
    older: Callable[[list[T]], bool] | None = None,
) -> T | None:
    """The first item of an account's listing (`pages`, newest first) that `matches`; None when
    none does, or once a page is all `older` than the attempt (the next ones are older still)."""
    for page in pages:
        for item in page:
            if matches(item):
                return item
        if older is not None and page and older(page):
            return None
    return None


def find_marked(
    pages: Iterator[list[T]] | list[list[T]],
    markers: tuple[str | None, ...] | list[str | None] | set[str],
    text_of: Callable[[T], str | set[str]],
) -> T | None:
    """The first item of `pages` whose `text_of` (a text, or a set of words where a marker must
    be a word of its own) carries one of an attempt's `markers`."""
    wanted = [marker for marker in markers if marker]
    return first_found(pages, lambda item: any(marker in text_of(item) for marker in wanted))


def posts_toward_cap(db: Database, platform: str, since: datetime, post_id: int) -> int:
    """How many of `platform`'s posts count against a cap from `since` on: the ones published
    since then, and every one on its way (`sending`, or `may_be_live` after a lost answer: it
    may be live already), except post `post_id` itself (the post being decided on)."""
    from ..clock import iso

    return ledger.count_posts_toward_cap(db, platform, iso(since), post_id)


def marked_texts(
    platform: type[Platform], episode: EpisodeView, marker: str, body: str, *, fallback: str = ""
) -> tuple[str, str]:
    """(title, `body`) of a post: the episode's copy for `platform` where the pipeline made one,
    else its title and description (else `fallback`), each fitted to the `text_fields` of the
    same names; the body ends with the attempt's `marker`, kept whole."""
    limits = platform.text_fields or {}
    copy = episode.texts.get(platform.name)
    copy = copy if isinstance(copy, dict) else {}
    title = fit(clean(str(copy.get("title") or episode.title)), limits["title"].limits)
    text = clean(str(copy.get(body) or episode.description or fallback))
    return title, fit(text, limits[body].limits, keep_end=f"\n\n{marker}" if text else marker)


def video_to_send(platform: Platform, episode: EpisodeView, name: str | None = None) -> Path:
    """The render `platform` sends (`video_file`); ContentRejected when the episode does not
    suit it or the file is missing."""
    reason = platform.unsuitable_reason(episode)
    if reason:
        raise ContentRejected(reason)
    return platform.video_file(episode, name)


# --- shared by x, pinterest, tiktok ---


class Choices:
    """A person's answers on a by-hand posting screen (a dataclass, `choices_type`), kept on
    the attempt's record as `to_json` gives them."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# --- shared by youtube, bluesky ---


@dataclass(frozen=True)
class UsageLedger:
    """A platform's daily allowances, counted in the `usage` table: what an account (or an
    API project) spent of each `bucket` on a day. `zone` is where the platform's day turns
    (YouTube's quota day is the Pacific one, Bluesky's cap counts UTC days); `day` defaults to
    today's. Every change is one statement, so two runs never both spend the last unit."""

    platform: str
    zone: Any = None  # a tzinfo; None: UTC

    def day(self, moment: datetime | None = None) -> str:
        """The platform's day (ISO date) of `moment`, else of the clock's now."""
        from ..clock import now

        return (moment or now()).astimezone(self.zone or UTC).date().isoformat()

    def used(self, db: Database, account: str, bucket: str, day: str | None = None) -> int:
        return ledger.usage_used(db, self.platform, account, bucket, day or self.day())

    def charge(
        self, db: Database, account: str, bucket: str, cost: int, allowance: int,
        day: str | None = None,
    ) -> bool:  # fmt: skip
        """Count `cost` against the day's `bucket` when it still fits in `allowance`; False
        (nothing counted) when it does not."""
        return ledger.charge_usage(
            db, self.platform, account, bucket, day or self.day(), cost, allowance
        )

    def fill(
        self, db: Database, account: str, bucket: str, allowance: int, day: str | None = None
    ) -> None:
        """The platform says the bucket is empty: record it used up, so no run tries again
        before the platform's day turns."""
        ledger.fill_usage(db, self.platform, account, bucket, day or self.day(), allowance)

    def give_back(
        self, db: Database, account: str, bucket: str, cost: int = 1, day: str | None = None
    ) -> None:
        """Uncount `cost` (the call it was counted for was refused: nothing was spent)."""
        ledger.give_back_usage(db, self.platform, account, bucket, day or self.day(), cost)
