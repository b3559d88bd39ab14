"""Carousels (issue 29): each release's cards as a post of their own, at a minute of their own.

A channel opts in per platform (`carousels = ["instagram", "bluesky"]`). Once its video is
published on such a platform, `run-due` plans the release's carousel there: one carousel post
(posts.kind = "carousel", one per episode and platform for good), given a drawn moment 2 to 8
hours later, never on the slot's minute and never within minutes of the account's other posts
(pace.carousel_moment). When that moment has come, a run draws the cards at the platform's
size (pipeline/carousel.py) and sends them through the post state machine (posts.send_post,
kind "carousel"): the same guards, caps, content identity, journal and looks before a second
try as a video.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import clock, pace
from ..clock import from_iso, iso
from ..episodes import get_episode
from ..ledger import posts as ledger
from ..ledger.store import loads
from ..posts import account_moments, send_post

if TYPE_CHECKING:
    from ..platforms.base import CarouselImage, Platform
    from .run import Run

log = logging.getLogger("autoretto.carousels")

#: a release published longer ago than this when a run first sees it gets no carousel (the
#: channel opted in later, or the box was off for days)
PLAN_WITHIN = timedelta(hours=24)


def serve_carousels(run: Run) -> None:
    """Plan the carousels of the releases that went out, then send those whose moment came.
    Never raises for one platform's trouble: it is in the run's report."""
    channels = [c for c in run.config.channels if c.carousels]
    if not channels:
        return
    for channel in channels:
        for platform_name in channel.carousels:
            plan(run, channel.name, platform_name)
    by_name = {c.name: c for c in channels}
    for post in ledger.carousels_due(run.db, iso(clock.now())):
        channel = by_name.get(post["channel"])
        if channel is None or post["platform"] not in channel.carousels:
            continue  # opted out since: it waits, a person may opt in again
        send(run, post)


def plan(run: Run, channel: str, platform_name: str) -> None:
    """Give each of the channel's releases published on the platform lately its carousel post,
    at its drawn moment."""
    now = clock.now()
    for release in ledger.releases_without_carousel(
        run.db, channel=channel, platform=platform_name, since=iso(now - PLAN_WITHIN)
    ):
        released = from_iso(release["published_at"])
        slot_at = from_iso(release["slot_at"]) if release["slot_at"] else released
        others = tuple(
            account_moments(
                run.db,
                platform=platform_name,
                episode_id=release["episode_id"],
                start=released,
                end=released + pace.CAROUSEL_LATEST + timedelta(hours=1),
            )
        )
        moment = pace.carousel_moment(
            run.pace,
            channel=channel,
            platform=platform_name,
            episode_id=release["episode_id"],
            released_at=released,
            slot_at=slot_at,
            state=pace.AccountState(others=others),
        )
        if moment is None:
            run.report.notes.append(
                f"{channel}: no moment fits a carousel of episode {release['episode_id']} on "
                f"{platform_name} (the account posts too often that day)"
            )
            continue
        if ledger.plan_carousel(
            run.db,
            episode_id=release["episode_id"],
            channel=channel,
            platform=platform_name,
            moment=iso(moment),
            now=iso(now),
        ):
            run.report.carousels.append(
                {
                    "episode_id": release["episode_id"],
                    "channel": channel,
                    "platform": platform_name,
                    "planned_for": iso(moment),
                }
            )


def send(run: Run, post: dict[str, Any]) -> None:
    """Draw the cards at the platform's size and send the carousel once."""
    platform = run.platform(post["platform"])
    if platform.carousel is None:
        return
    if not platform.is_connected() or platform.not_ready_reason():
        return  # the platform's trouble is told by the run (health); the carousel waits
    episode = get_episode(run.db, post["episode_id"])
    try:
        images = cards_for(run, platform, episode)
    except OSError as error:
        run.report.notes.append(
            f"{post['channel']}: the carousel of episode {episode['id']} on {platform.title} "
            f"waits: its cards could not be drawn ({error})"
        )
        return
    run.stage(post["channel"], f"{platform.name}: sending the carousel of episode {episode['id']}")
    posting = replace(run.posting, now=clock.now())
    result = send_post(
        posting,
        platform,
        episode,
        publish_at=from_iso(post["not_before"]),
        kind="carousel",
        images=images,
    )
    run.report.carousels.append(
        {
            "episode_id": episode["id"],
            "channel": post["channel"],
            "platform": platform.name,
            "post_id": result.post_id,
            "outcome": result.outcome,
            "reason": result.reason,
            "url": result.url,
        }
    )
    if result.outcome == "failed" and not result.owed:
        run.report.errors.append(
            f"{post['channel']}: carousel on {platform.title}: {result.reason}"
        )


def cards_for(run: Run, platform: Platform, episode: dict[str, Any]) -> tuple[CarouselImage, ...]:
    """The episode's cards at `platform`'s size, drawn where this host keeps the episode."""
    from ..pipeline.carousel import CARDS, card_folder, draw_cards

    spec = platform.carousel
    assert spec is not None
    if run.posting.media is not None:
        from ..media import local_episode

        try:
            episode = local_episode(run.posting.media, run.db, episode)
        except Exception as error:  # the bucket away: the carousel waits
            raise OSError(str(error)) from None
    folder = run.config.paths.media / "episodes" / str(episode["id"])
    if episode.get("thumbnail"):
        folder = Path(episode["thumbnail"]).parent
    source = loads(episode.get("source"), {}) or {}
    words = source.get("lyrics") or (source.get("track_tags") or {}).get("lyrics") or ""
    return draw_cards(
        {**episode, "tags": loads(episode.get("tags"), [])},
        folder=card_folder(folder, spec.size, spec.max_bytes),
        size=spec.size,
        max_bytes=spec.max_bytes,
        count=min(spec.most, len(CARDS)),
        words=str(words).splitlines(),
    )
