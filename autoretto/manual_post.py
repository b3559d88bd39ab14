"""Posts a person makes at a terminal (the library side of `post NAME`).

Some platforms are never on a slot (their rules ask that a person makes each post), so they
are not in the slot registry; `MANUAL_PLATFORMS` lists them. A post made by hand still goes
through the same post records and never-twice guards as everything else: `post_by_hand` opens a
`Run` and calls `send_post`, so a second press after a success answers that the post is already
there, a press after a lost answer first asks the platform about the last attempt, and two
terminals pressing at once cannot both send.

`screen` reads what a platform's posting screen shows (its adapter's `screen`); the person's
answers travel to the adapter as a choices object (the class's `choices_type`) given to the
platform instance built for that one post; the adapter saves them in the attempt's handles with
its own handles, so the post record shows what was chosen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import AutorettoError, PostingHeld, UsageError
from .platforms import MANUAL_PLATFORMS as _MANUAL
from .questions import VideoFacts

if TYPE_CHECKING:
    from .config import Config
    from .ledger.store import Store as Database
    from .platforms.base import Platform
    from .posts import PostResult

# The table itself lives with the slot registry (loaded lazily); re-exported here.
MANUAL_PLATFORMS = _MANUAL


def manual_platform(
    config: Config,
    db: Database,
    name: str,
    *,
    choices: Any = None,
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
    from .ledger.posts import find_post

    post = find_post(db, episode_id, platform)
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


def screen(config: Config, db: Database, name: str, episode_id: int) -> Any:
    """Read what the posting screen of the platform `name` shows before the person chooses:
    the video's facts, how an earlier post of the episode stands, and what the platform says
    of the account (its adapter's `screen`). Raises AutorettoError in plain words."""
    from .episodes import episode_view
    from .media import Media, local_episode
    from .platforms.base import PlatformError

    # media in a bucket: the video's facts from this host's copy (BucketError is one line)
    episode = local_episode(Media.of(config), db, _postable_episode(db, episode_id))
    platform = manual_platform(config, db, name)
    blocked = platform.not_ready_reason()
    if blocked:
        raise UsageError(blocked)
    view = episode_view(episode)
    unsuitable = platform.unsuitable_reason(view)
    if unsuitable:
        raise UsageError(unsuitable)
    video = video_facts(str(platform.video_path(view)), view.duration)
    try:
        return platform.screen(view, video, _already(db, episode_id, name))
    except PlatformError as error:  # a read for the screen: nothing was posted
        raise AutorettoError(error.reason) from None


def post_by_hand(
    config: Config,
    db: Database,
    platform_name: str,
    episode_id: int,
    choices: Any,
    *,
    creator: Any = None,
) -> PostResult:
    """Post `episode_id` to a hand-made platform with the person's `choices`, once.

    Goes through `send_post` like a slot: an episode already posted there is not posted again,
    a post that may be live is looked for first, a limit met uses no try. `creator` is what the
    screen showed of the account, where it shows one: the choices are checked against it
    before anything is recorded (the adapter checks them again against a fresh one). Raises
    AutorettoError in plain words when nothing could be tried.
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


__all__ = ["MANUAL_PLATFORMS", "VideoFacts", "manual_platform", "post_by_hand", "screen"]
