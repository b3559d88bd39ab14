"""Posts a person makes at a terminal: TikTok and Pinterest (the library side of `post NAME`).

These platforms are never on a slot (their rules ask that a person makes each post), so they
are not in the slot registry; `MANUAL_PLATFORMS` lists them. A post made by hand still goes
through the same post records and never-twice guards as everything else: `post_by_hand` opens a
`Run` and calls `send_post`, so a second press after a success answers "already on TikTok", a
press after a lost answer first asks the platform about the last attempt, and two terminals
pressing at once cannot both send.

The person's answers travel to the adapter as a choices object (`TikTokChoices`,
`PinterestChoices`) given to the platform instance built for that one post; the adapter saves
them in the attempt's handles with its own handles, so the post record shows what was chosen.

The screens read what they show through `tiktok_screen` and `pinterest_screen`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import AutorettoError, PostingHeld, UsageError
from .platforms import MANUAL_PLATFORMS as _MANUAL
from .platforms.pinterest import PinterestChoices, PinterestPlatform
from .platforms.tiktok import CreatorInfo, TikTokChoices, TikTokPlatform

if TYPE_CHECKING:
    from sqlite_utils import Database

    from .config import Config
    from .platforms.base import Platform
    from .posts import PostResult

# The table itself lives with the slot registry (loaded lazily); re-exported here.
MANUAL_PLATFORMS = _MANUAL

Choices = TikTokChoices | PinterestChoices


@dataclass(frozen=True)
class VideoFacts:
    """What the preview shows of the video that will be sent."""

    path: str
    duration: float | None
    size_bytes: int
    width: int | None
    height: int | None

    @property
    def resolution(self) -> str:
        return f"{self.width}x{self.height}" if self.width and self.height else "unknown"

    @property
    def size_text(self) -> str:
        return f"{self.size_bytes / 1_000_000:.1f} MB"


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
class PinterestScreen:
    """Everything the Pinterest posting screen shows before the person chooses."""

    episode_id: int
    episode_title: str
    account: str
    sandbox: bool
    boards: list[dict[str, Any]]
    video: VideoFacts
    default_title: str
    default_description: str
    default_alt_text: str
    default_cover_seconds: float
    already: str | None = None
    notes: list[str] = field(default_factory=list)


def manual_platform(
    config: Config,
    db: Database,
    name: str,
    *,
    choices: Choices | None = None,
    now: Any = None,
) -> Platform:
    """The adapter of a hand-made platform, built with the person's choices for one post."""
    from .platforms.base import PlatformContext

    if name not in MANUAL_PLATFORMS:
        known = ", ".join(MANUAL_PLATFORMS)
        raise UsageError(f'"{name}" is not posted by hand (those are: {known})')
    cls = MANUAL_PLATFORMS[name]
    settings = config.platforms.get(name)
    if settings is None:
        settings = cls.parse_settings({}, path=config.path, paths=config.paths)
    context = PlatformContext(name, settings, config.paths, db, now, config.retry)
    return cls(context, choices=choices)  # type: ignore[call-arg]


def _postable_episode(db: Database, episode_id: int) -> dict:
    from .episodes import POSTABLE_STATES, get_episode

    episode = get_episode(db, episode_id)
    if episode["state"] not in POSTABLE_STATES:
        raise UsageError(
            f"episode {episode_id} is {episode['state']}; only a ready or approved episode "
            "is posted"
        )
    return episode


def _already(db: Database, episode_id: int, platform: str) -> str | None:
    """How an earlier post of this episode to `platform` stands, when there is one."""
    from .store import row

    post = row(
        db,
        "SELECT id, state, url FROM posts WHERE episode_id = ? AND platform = ?",
        (episode_id, platform),
    )
    if post is None or post["state"] in ("queued", "failed"):
        return None
    if post["state"] == "published":
        return f"already posted: {post['url'] or 'post ' + str(post['id'])}"
    return f"post {post['id']} is {post['state']}"


def video_facts(path: str, duration: float | None) -> VideoFacts:
    """Duration, size and resolution of the video (read with ffmpeg; what is unreadable is
    left unknown rather than stopping the screen)."""
    import os

    from .errors import MediaError

    if not os.path.isfile(path):
        raise UsageError(f"the episode's video {path} is missing")
    width = height = None
    try:
        from .ffmpeg import probe

        info = probe(path)
        duration = info.duration or duration
        if info.video is not None:
            width, height = info.video.width, info.video.height
    except (MediaError, OSError):
        pass
    return VideoFacts(path, duration, os.path.getsize(path), width, height)


def _ask_platform(call: Any) -> Any:
    """A read for a screen: a platform's refusal in plain words (nothing was posted)."""
    from .platforms.base import PlatformError

    try:
        return call()
    except PlatformError as error:
        raise AutorettoError(error.reason) from None


def tiktok_screen(config: Config, db: Database, episode_id: int) -> TikTokScreen:
    """Read what the TikTok screen shows: the creator (creator_info, fetched as the screen
    opens), the video's facts, the default title. Raises AutorettoError in plain words."""
    from .episodes import episode_view

    episode = _postable_episode(db, episode_id)
    platform = manual_platform(config, db, TikTokPlatform.name)
    assert isinstance(platform, TikTokPlatform)
    blocked = platform.not_ready_reason()
    if blocked:
        raise UsageError(blocked)
    view = episode_view(episode)
    unsuitable = platform.unsuitable_reason(view)
    if unsuitable:
        raise UsageError(unsuitable)
    creator = _ask_platform(platform.creator_info)
    fitted = view.texts.get(platform.name) or {}
    return TikTokScreen(
        episode_id=episode_id,
        episode_title=view.title,
        creator=creator,
        audited=bool(platform.settings["audited"]),
        video=video_facts(str(platform.video_path(view)), view.duration),
        default_title=str(fitted.get("title") or view.title),
        is_aigc=bool(fitted.get("is_aigc", view.ai_generated)),
        already=_already(db, episode_id, platform.name),
    )


def pinterest_screen(config: Config, db: Database, episode_id: int) -> PinterestScreen:
    """Read what the Pinterest screen shows: the account's boards, the video's facts, the
    default texts and cover frame. Raises AutorettoError in plain words."""
    from .episodes import episode_view

    episode = _postable_episode(db, episode_id)
    platform = manual_platform(config, db, PinterestPlatform.name)
    assert isinstance(platform, PinterestPlatform)
    blocked = platform.not_ready_reason()
    if blocked:
        raise UsageError(blocked)
    view = episode_view(episode)
    unsuitable = platform.unsuitable_reason(view)
    if unsuitable:
        raise UsageError(unsuitable)
    boards = _ask_platform(platform.list_boards)
    if not boards:
        raise UsageError("this Pinterest account has no board; make one on pinterest.com first")
    facts = video_facts(str(platform.video_path(view)), view.duration)
    fitted = view.texts.get(platform.name) or {}
    account = platform.account_row()
    return PinterestScreen(
        episode_id=episode_id,
        episode_title=view.title,
        account=account.name if account else "",
        sandbox=bool(platform.settings["sandbox"]),
        boards=boards,
        video=facts,
        default_title=str(fitted.get("title") or view.title)[:100],
        default_description=str(fitted.get("description") or view.description)[:800],
        default_alt_text=str(fitted.get("alt_text") or f"Artwork for {view.title}")[:500],
        default_cover_seconds=default_cover(facts.duration),
        already=_already(db, episode_id, platform.name),
    )


def default_cover(duration: float | None) -> float:
    """The cover frame offered first: a third into the video (past any fade-in), in tenths."""
    if not duration or duration <= 0:
        return 0.0
    return round(duration / 3, 1)


def post_by_hand(
    config: Config,
    db: Database,
    platform_name: str,
    episode_id: int,
    choices: Choices,
    *,
    creator: CreatorInfo | None = None,
) -> PostResult:
    """Post `episode_id` to a hand-made platform with the person's `choices`, once.

    Goes through `send_post` like a slot: an episode already posted there is not posted again,
    a post that may be live is looked for first, a limit met uses no try. `creator` is the
    creator_info the TikTok screen showed: the choices are checked against it before anything
    is recorded (the adapter checks them again against a fresh one). Raises AutorettoError in
    plain words when nothing could be tried.
    """
    from .clock import iso
    from .clock import now as clock_now
    from .engine.run import Run, refuse_when_held
    from .episodes import episode_view
    from .posts import send_post
    from .runlog import append_line, decision_line

    episode = _postable_episode(db, episode_id)
    view = episode_view(episode)
    checking = manual_platform(config, db, platform_name)
    expected = type(checking).choices_type
    if expected is None or not isinstance(choices, expected):
        raise UsageError(f"{platform_name} takes {getattr(expected, '__name__', 'no choices')}")
    problems = checking.choice_problems(choices, duration=view.duration, creator=creator)
    if problems:
        raise UsageError("; ".join(problems))
    with Run(config, db, f"post-{platform_name}") as run:
        hold = refuse_when_held(run)
        if hold:
            raise PostingHeld(hold)
        platform = manual_platform(config, db, platform_name, choices=choices, now=run.now)
        blocked = platform.not_ready_reason() or platform.unsuitable_reason(view)
        if blocked:
            raise UsageError(blocked)
        result = send_post(run.posting, platform, episode, publish_at=run.now)
        append_line(
            config.paths.run_log,
            decision_line(
                at=iso(clock_now()),
                run_id=run.id,
                channel=episode["channel"],
                slot="by-hand",
                platform=platform_name,
                outcome=result.outcome,
                reason=result.reason,
                post_id=result.post_id,
            ),
        )
        return result


__all__ = [
    "MANUAL_PLATFORMS",
    "PinterestScreen",
    "TikTokScreen",
    "manual_platform",
    "pinterest_screen",
    "post_by_hand",
    "tiktok_screen",
]
