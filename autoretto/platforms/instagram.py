"""Instagram Reels (Instagram API with Instagram Login), PLATFORMS.md §3.

Instagram publishes through Meta's container protocol, written once in meta.py
(`GraphContainerPlatform`, which explains the never-twice steps); this module names its edges
and fields and fits its caption: at most 2,200 characters and 30 hashtags, ending with a short
token of the attempt's marker (`marker_in_caption`). The live `content_publishing_limit` is
read before each post; `daily_cap` adds a cap of our own (0: only Meta's limit).
"""

from __future__ import annotations

import re
from itertools import count
from typing import Any, ClassVar

from ..errors import AutorettoError
from .base import CarouselSpec, EpisodeView
from .meta import CONTAINER_SETTINGS, GraphContainerPlatform, graph_signin, marker_token
from .signin import SignIn
from .text import HASHTAG, TextField, chars, hashtag_count, mention_count

NAME = "instagram"
TITLE = "Instagram"
CAPTION_MAX_CHARS = 2200
CAPTION_MAX_HASHTAGS = 30
PROFESSIONAL_TYPES = {"BUSINESS", "MEDIA_CREATOR", "CREATOR"}


def fit_caption(text: str, marker: str = "") -> str:
    """An Instagram caption: at most 30 hashtags (the first ones kept), at most 2,200 characters
    with the marker line, cut with an ellipsis where it must be."""
    counted = count(1)
    text = HASHTAG.sub(
        lambda found: found[0] if next(counted) <= CAPTION_MAX_HASHTAGS else "", text
    )
    text = re.sub(r"[ \t]+\n", "\n", re.sub(r"[ \t]{2,}", " ", text)).strip()
    suffix = f"\n\n{marker}" if marker else ""
    room = CAPTION_MAX_CHARS - len(suffix)
    if len(text) > room:
        text = text[: room - 1].rstrip() + "…"
    return text + suffix


class InstagramPlatform(GraphContainerPlatform):
    """Instagram Reels on a professional account: the episode's ≤ 90-second vertical edit."""

    name = NAME
    title = TITLE
    # https://developers.facebook.com/docs/instagram-platform/instagram-graph-api/reference/ig-user/media
    texts_title: ClassVar[str | None] = "Instagram Reels"
    text_fields: ClassVar[dict[str, TextField] | None] = {
        "caption": TextField(
            "description",
            (
                ("characters", chars, CAPTION_MAX_CHARS),
                ("hashtags", hashtag_count, CAPTION_MAX_HASHTAGS),
                ("@-mentions", mention_count, 20),
            ),
        ),
    }
    container_edge = "media"
    publish_edge = "media_publish"
    limit_edge = "content_publishing_limit"
    listing_edge = "media"
    text_param = "caption"
    state_field = "status_code"
    detail_field = "status"
    media_type = "REELS"
    refresh_grant = "ig_refresh_token"
    exchange_grant = "ig_exchange_token"
    scopes = ("instagram_business_basic", "instagram_business_content_publish")
    me_fields = "user_id,username,account_type"
    video_name = "reels"
    tags_as_hashtags = True
    #: a carousel of 2 to 10 items, each a JPEG of at most 8 MB between 4:5 and 1.91:1, made
    #: as item containers (image_url, is_carousel_item) then one CAROUSEL container with
    #: `children` ("Carousel posts" and "Image specifications",
    #: https://developers.facebook.com/docs/instagram-platform/content-publishing/); a
    #: carousel counts as one post toward the publishing limit
    carousel = CarouselSpec(
        least=2,
        most=10,
        size=(1080, 1350),
        max_bytes=8 * 1024 * 1024,
        source="https://developers.facebook.com/docs/instagram-platform/content-publishing/",
    )
    signin: ClassVar[SignIn] = graph_signin(
        TITLE, NAME, "an Instagram professional account (Business or Creator) for Reels"
    )
    settings_defaults: ClassVar[dict[str, Any]] = {
        **CONTAINER_SETTINGS,
        "api_base": "https://graph.instagram.com",
        "auth_uri": "https://www.instagram.com/oauth/authorize",
        "token_uri": "https://api.instagram.com/oauth/access_token",
        "app_secret_env": "INSTAGRAM_APP_SECRET",
        "share_to_feed": True,
        "daily_cap": 0,  # posts in the last 24 hours; 0 = only Meta's limit
        "wait_first": 10,  # seconds before the first look at a new container
        "wait_between": 15,
        "polls": 40,
    }

    def unsuitable_reason(self, episode: EpisodeView) -> str | None:
        if not episode.videos.get("reels"):
            return (
                "Instagram Reels need the episode's ≤ 90-second vertical edit, and this episode "
                "has none that passed its gates"
            )
        return None

    def fit_text(self, text: str, marker: str) -> str:
        return fit_caption(text, marker)

    def _extra_fields(self) -> dict[str, str]:
        return {"share_to_feed": "true" if self.settings["share_to_feed"] else "false"}

    @classmethod
    def account_of(cls, me: dict[str, Any]) -> dict[str, str]:
        """With Instagram Login a sign-in is one account: it must be a professional one."""
        kind = str(me.get("account_type") or "").upper()
        if kind and kind not in PROFESSIONAL_TYPES:
            raise AutorettoError(
                f'the Instagram account "{me.get("username")}" is a personal account; switch it '
                "to a professional (Business or Creator) account in the Instagram app, then "
                "connect again"
            )
        return {"id": str(me.get("user_id") or me.get("id")), "name": str(me["username"])}


__all__ = ["InstagramPlatform", "fit_caption", "marker_token"]
