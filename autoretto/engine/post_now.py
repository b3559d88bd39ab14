"""`post-now`: a ready episode posted now, outside the slots, through the same post records as
the slots, so a post-now and a slot can never both post one episode to one platform."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from .. import clock, pace
from ..clock import iso
from ..config import ChannelConfig, Config
from ..episodes import episode_view, next_episode_for, postable_episode
from ..errors import Exit, PostingHeld, UsageError
from ..posts import get_post, send_post
from ..runlog import append_line, decision_line
from .run import Run, outcome_exit, refuse_when_clock_apart, refuse_when_held, worst
from .run_due import serve_waits

if TYPE_CHECKING:
    from ..ledger.store import Store as Database


@dataclass(frozen=True)
class PostNowResult:
    platform: str
    outcome: str
    reason: str
    post_id: int | None
    url: str | None
    state: str | None = None  # the post's state after the try (None: no post was made)


def post_now(
    config: Config,
    db: Database,
    channel_name: str,
    *,
    episode_id: int | None = None,
    announce: Callable[[datetime], None] | None = None,
    sleep: Callable[[datetime], None] = clock.sleep_until,
) -> tuple[dict, list[PostNowResult]]:
    """Post a ready episode now, outside the slots, to the channel's platforms.

    It goes out 20 s to 2 min after the command (a human pace; `announce` hears when). Slots
    of the channel that waited while it was on its way are settled right after it.
    """
    channel = config.channel(channel_name)
    # A person's mistake is refused before the run starts: it leaves no run row behind.
    chosen = None if episode_id is None else postable_episode(db, channel.name, episode_id)
    refuse_when_clock_apart(db)  # before the run: it records nothing, sends nothing
    with Run(config, db, "post-now", make=False) as run:
        hold = refuse_when_held(run)
        if hold:
            raise PostingHeld(hold)
        platforms = run.platforms_for(channel)
        if not platforms:
            raise UsageError(f'channel "{channel.name}" has no connected platform to post to')
        episode = chosen or _oldest_unposted(db, channel, platforms)
        moment = pace.post_now_moment(run.pace, run.now, run.id)
        if announce is not None:
            announce(moment)
        sleep(moment)
        run.posting = replace(run.posting, now=clock.now())
        results = []
        for name in platforms:
            platform = run.platform(name)
            blocked = (
                (None if platform.is_connected() else f"{platform.title} is not connected")
                or platform.not_ready_reason()
                or platform.unsuitable_reason(episode_view(episode))
            )
            if blocked:
                results.append(PostNowResult(name, "failed", blocked, None, None))
                continue
            result = send_post(run.posting, platform, episode, publish_at=run.posting.now)
            append_line(
                config.paths.run_log,
                decision_line(
                    at=iso(clock.now()),
                    run_id=run.id,
                    channel=channel.name,
                    slot="post-now",
                    platform=name,
                    outcome=result.outcome,
                    reason=result.reason,
                    post_id=result.post_id,
                ),
            )
            state = get_post(db, result.post_id)["state"]
            results.append(
                PostNowResult(
                    name, result.outcome, result.reason, result.post_id, result.url, state
                )
            )
        serve_waits(run, [c for c in config.cadences if c.episode_channel == channel.name])
        return episode, results


def post_now_exit(results: list[PostNowResult]) -> Exit:
    """0 when every platform has the episode; else the code the worst of them asks for."""
    return worst([outcome_exit(r.outcome, r.state, asked=True) for r in results])


def _oldest_unposted(db: Database, channel: ChannelConfig, platforms: list[str]) -> dict:
    """The oldest ready episode that one of the platforms has not had."""
    chosen = None
    for name in platforms:
        found, _ = next_episode_for(db, channel, name, off_schedule=True)
        if found is not None and (chosen is None or found["id"] < chosen["id"]):
            chosen = found
    if chosen is None:
        raise UsageError(
            f'channel "{channel.name}" has no ready episode that its platforms have '
            "not had (see `autoretto episodes`)"
        )
    return chosen
