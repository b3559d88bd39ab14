"""Threads (Threads API): a video post fetched from the media host, never twice.

Threads speaks Instagram's container protocol (PLATFORMS.md §6), so the class derives from
`GraphContainerPlatform` (instagram.py, which explains the never-twice steps) and only names
its edges and fields:

- container: `POST /{user}/threads` with `media_type=VIDEO`, `video_url`, `text`;
- processing: Meta advises waiting about 30 s, then checking `status` (with `error_message`)
  once a minute for up to 5 minutes (`wait_first`, `wait_between`, `polls`);
- publish: `POST /{user}/threads_publish?creation_id=…`; the permalink from `GET /{id}`;
- limits: the live `threads_publishing_limit` (250 a rolling 24 h at Meta) and a cap of our own,
  `daily_cap` (default 25 a profile in the last 24 hours, counted from Autoretto's posts,
  the ones on their way included);
- text: at most 500 characters, where an emoji counts its UTF-8 bytes.

A post can take a while to show in the profile's listing, so an attempt whose answer was lost
is asked about 15 minutes later (`look_delay`).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any, ClassVar

from ..oauth import json_body
from .base import EpisodeView, NeedsPerson, PassingError
from .meta import GraphContainerPlatform, graph_body, graph_signin, meta_error
from .signin import SignIn
from .text import TextField, threads_length

NAME = "threads"
TITLE = "Threads"
TEXT_MAX = 500
VIDEO_MAX_SECONDS = 300
#: what `/{media-id}/insights` is asked for
INSIGHT_METRICS = ("views", "likes", "replies", "reposts")


def text_cost(text: str) -> int:
    """What Threads counts against its 500: one a character, an emoji's (and other symbol's)
    UTF-8 bytes."""
    return sum(len(char.encode("utf-8")) if ord(char) >= 0x2000 else 1 for char in text)


def fit_thread_text(text: str, marker: str = "", *, limit: int = TEXT_MAX) -> str:
    """The post text with the marker line, within `limit`, cut with an ellipsis where it must."""
    suffix = f"\n\n{marker}" if marker else ""
    room = limit - text_cost(suffix)
    text = text.strip()
    if text_cost(text) > room:
        room -= text_cost("…")
        kept, used = [], 0
        for char in text:
            used += text_cost(char)
            if used > room:
                break
            kept.append(char)
        text = "".join(kept).rstrip() + "…"
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
    api_version: ClassVar[str | None] = "v1.0"
    api_versions: ClassVar[dict[str, str | None]] = {"v1.0": None}
    api_version_source: ClassVar[str] = "https://developers.facebook.com/docs/threads/changelog"
    api_version_pattern: ClassVar[str] = r"v[0-9]+\.[0-9]+"
    api_version_example: ClassVar[str] = "v1.0"
    container_edge = "threads"
    publish_edge = "threads_publish"
    limit_edge = "threads_publishing_limit"
    listing_edge = "threads"
    text_param = "text"
    state_field = "status"
    detail_field = "error_message"
    media_type = "VIDEO"
    refresh_grant = "th_refresh_token"
    exchange_grant = "th_exchange_token"
    scopes = ("threads_basic", "threads_content_publish", "threads_manage_insights")
    who = "profile"
    signin: ClassVar[SignIn] = graph_signin(TITLE, NAME, "THREADS_APP_SECRET", "a Threads profile")
    settings_defaults: ClassVar[dict[str, Any]] = {
        "api_base": "https://graph.threads.net",
        "api_version": "",  # empty: the one declared above
        "auth_uri": "https://threads.net/oauth/authorize",
        "token_uri": "https://graph.threads.net/oauth/access_token",
        "app_id": "",
        "app_secret_env": "THREADS_APP_SECRET",
        "redirect_uri": "https://localhost/",
        "format": "vertical",  # which of the episode's videos; the main one when missing
        "daily_cap": 25,  # posts a profile in the last 24 hours; 0 = only Meta's limit
        "marker_in_caption": True,
        "wait_first": 30,
        "wait_between": 60,
        "polls": 5,
        "containers_per_try": 2,
        "timeout": 60,
        "find_limit": 50,
        "media_host": None,  # a [platforms.threads.media_host] table, else the [media_host]
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
        """The counters of the profile's posts `ids` (media ids), one `/{media-id}/insights`
        call each: (media id, {"views", "likes", "replies", "reposts"}).

        Passing trouble is retried with the platform's backoff; what is left raises the
        PlatformError a post would get. Reading needs the `threads_manage_insights`
        permission: a refusal says so and, unlike a refused post, leaves the account as it is
        (posting does not need that permission).
        """
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
