"""Threads (Threads API, PLATFORMS.md §6): a video post fetched from the media host.

Threads speaks Meta's container protocol, written once in meta.py (`GraphContainerPlatform`,
which explains the never-twice steps); this module names its edges and fields, Meta's advised
waits (about 30 s, then a check a minute for up to 5 minutes: `wait_first`, `wait_between`,
`polls`) and fits its text: at most 500 characters, where an emoji counts its UTF-8 bytes.
Besides the live `threads_publishing_limit` (250 a rolling 24 h), `daily_cap` is a cap of our
own. A post can take a while to show in the profile's listing, so an attempt whose answer was
lost is asked about 15 minutes later (`look_delay`).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from itertools import accumulate
from typing import Any, ClassVar

from ..oauth import json_body
from .base import CarouselSpec, EpisodeView, NeedsPerson, PassingError
from .meta import CONTAINER_SETTINGS, GraphContainerPlatform, graph_body, graph_signin, meta_error
from .signin import SignIn
from .text import TextField, threads_length

NAME = "threads"
TITLE = "Threads"
TEXT_MAX = 500
VIDEO_MAX_SECONDS = 300
#: what `/{media-id}/insights` is asked for
INSIGHT_METRICS = ("views", "likes", "replies", "reposts")


#: the one measure of a Threads text, the pipeline's and the adapter's
text_cost = threads_length


def fit_thread_text(text: str, marker: str = "") -> str:
    """The post text with the marker line, within 500, cut with an ellipsis where it must."""
    suffix = f"\n\n{marker}" if marker else ""
    room = TEXT_MAX - text_cost(suffix)
    text = text.strip()
    if text_cost(text) > room:
        room -= text_cost("…")
        # each character costs at least 1, so the costs so far rise: the first ones fit
        kept = sum(1 for cost in accumulate(map(text_cost, text)) if cost <= room)
        text = text[:kept].rstrip() + "…"
    return text + suffix


class ThreadsPlatform(GraphContainerPlatform):
    name = NAME
    title = TITLE
    text_fields: ClassVar[dict[str, TextField] | None] = {
        "text": TextField("short", (("characters", threads_length, TEXT_MAX),)),
    }
    counters = True

    look_delay = timedelta(minutes=15)
    # The Threads API has one version and no announced end:
    # https://developers.facebook.com/docs/threads/changelog
    api_version = "v1.0"
    api_versions: ClassVar[dict[str, str | None]] = {"v1.0": None}
    api_version_source = "https://developers.facebook.com/docs/threads/changelog"
    api_version_example = "v1.0"
    container_edge = "threads"
    publish_edge = "threads_publish"
    limit_edge = "threads_publishing_limit"
    listing_edge = "threads"
    text_param = "text"
    state_field = "status"
    detail_field = "error_message"
    media_type = "VIDEO"
    #: a carousel of 2 to 20 items, each an IMAGE item container (image_url,
    #: is_carousel_item, alt_text up to 1,000 characters) of at most 8 MB, then one CAROUSEL
    #: container with `children` ("Carousel posts" and "Media specifications",
    #: https://developers.facebook.com/docs/threads/posts)
    carousel = CarouselSpec(
        least=2,
        most=20,
        size=(1080, 1350),
        max_bytes=8 * 1024 * 1024,
        source="https://developers.facebook.com/docs/threads/posts",
        alt_text=True,
    )
    carousel_item_type = "IMAGE"
    carousel_alt_param = "alt_text"
    refresh_grant = "th_refresh_token"
    exchange_grant = "th_exchange_token"
    scopes = ("threads_basic", "threads_content_publish", "threads_manage_insights")
    who = "profile"
    signin: ClassVar[SignIn] = graph_signin(TITLE, NAME, "a Threads profile")
    settings_defaults: ClassVar[dict[str, Any]] = {
        **CONTAINER_SETTINGS,
        "api_base": "https://graph.threads.net",
        "auth_uri": "https://threads.net/oauth/authorize",
        "token_uri": "https://graph.threads.net/oauth/access_token",
        "app_secret_env": "THREADS_APP_SECRET",
        "format": "vertical",  # which of the episode's videos; the main one when missing
        "daily_cap": 25,  # posts a profile in the last 24 hours; 0 = only Meta's limit
        "wait_first": 30,
        "wait_between": 60,
        "polls": 5,
    }

    def unsuitable_reason(self, episode: EpisodeView) -> str | None:
        if not episode.videos:
            return "the episode has no video for Threads"
        if episode.duration and episode.duration > VIDEO_MAX_SECONDS:
            return (
                f"Threads takes videos of up to {VIDEO_MAX_SECONDS // 60} minutes; this episode "
                f"runs {int(episode.duration)} s"
            )
        return None

    def fit_text(self, text: str, marker: str) -> str:
        return fit_thread_text(text, marker)

    # -- public counters (`autoretto stats collect`) -------------------------------------------

    def read_counters(self, ids: list[str]) -> Iterator[tuple[str, dict[str, int | None]]]:
        """(media id, {"views", "likes", "replies", "reposts"}) of the posts `ids`, one
        `/{media-id}/insights` call each, passing trouble retried. A refusal names the
        `threads_manage_insights` permission it needs and, unlike a refused post, leaves the
        account as it is (posting does not need that permission)."""
        for media_id in ids:
            try:
                body = self.retrying(lambda media_id=media_id: self._insights(media_id))
            except NeedsPerson as refused:
                raise NeedsPerson(
                    f"{refused.reason}; Threads stats need the threads_manage_insights "
                    "permission (reconnect with `autoretto connect threads` and allow it)"
                ) from None
            counters: dict[str, int | None] = dict.fromkeys(INSIGHT_METRICS)
            for entry in body.get("data") or []:
                if isinstance(entry, dict) and entry.get("name") in counters:
                    counters[entry["name"]] = _insight_value(entry)
            yield media_id, counters

    def _insights(self, media_id: str) -> dict[str, Any]:
        """One insights read; its refusal is not the account's: nothing is marked."""
        answer = self.call(
            "GET",
            self.url(f"{media_id}/insights"),
            check=False,
            params={"metric": ",".join(INSIGHT_METRICS)},
        )
        if self.succeeded(answer):
            return graph_body(answer, TITLE)
        problem = meta_error(answer.status_code, json_body(answer), title=TITLE, platform=NAME)
        raise problem or PassingError(f"Threads answered HTTP {answer.status_code}")


def _insight_value(entry: dict[str, Any]) -> int | None:
    """A metric's number: `values[0].value` for a post, `total_value.value` in some answers."""
    values = entry.get("values")
    if isinstance(values, list) and values and isinstance(values[0], dict):
        value = values[0].get("value")
    else:
        total = entry.get("total_value")
        value = total.get("value") if isinstance(total, dict) else None
    return value if isinstance(value, int) and value >= 0 else None
