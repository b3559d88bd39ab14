"""Instagram Reels (Instagram API with Instagram Login), PLATFORMS.md §3.

Instagram publishes through Meta's container protocol, written once in meta.py
(`GraphContainerPlatform`, which explains the never-twice steps); this module names its edges
and fields and fits its caption: at most 2,200 characters and 30 hashtags, ending with a short
token of the attempt's marker (`marker_in_caption`). The live `content_publishing_limit` is
read before each post; `daily_cap` adds a cap of our own (0: only Meta's limit).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import count
from typing import Any, ClassVar

from ..errors import AutorettoError
from .base import (
    CarouselSpec,
    Comment,
    CommentGone,
    CommentPage,
    EpisodeView,
    LostAnswer,
    Published,
    ReplyRequest,
)
from .meta import (
    COMMENT_PAGE,
    CONTAINER_SETTINGS,
    GraphComments,
    GraphContainerPlatform,
    after_cursor,
    graph_items,
    graph_signin,
    has_next,
    marker_token,
    moment_cursor,
    reached_known,
    same_text,
)
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


class InstagramPlatform(GraphComments, GraphContainerPlatform):
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
    scopes = (
        "instagram_business_basic",
        "instagram_business_content_publish",
        "instagram_business_manage_comments",  # comments and replies (issue 28)
    )
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
        # comments and replies (issue 28): Graph calls per account and UTC day, and pages a
        # read of one post takes at most
        "comment_calls_per_day": 2000,
        "comment_pages": 10,
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

    # -- comments and replies (issue 28) ---------------------------------------------------
    # https://developers.facebook.com/docs/instagram-platform/comment-moderation: GET
    # /{ig-media-id}/comments, GET and POST /{ig-comment-id}/replies, with Instagram Login under
    # the instagram_business_manage_comments permission
    # (https://developers.facebook.com/docs/instagram-platform/instagram-graph-api/reference/ig-media/comments).
    comments: ClassVar[str | None] = "reply"
    comment_scope: ClassVar[str] = "instagram_business_manage_comments"
    # Meta publishes no longest comment; tools built on the API document 2,196-2,200 characters
    # (https://docs.upload-post.com/resources/character-limits/): a reply keeps well below.
    reply_length: ClassVar[int] = 2000
    # Instagram shows a link in a comment as plain text (UNCONFIRMED on a Meta page) and a reply
    # with one reads as spam: Autoretto's replies carry none.
    reply_links: ClassVar[bool] = False
    # Meta asks no AI disclosure of a text comment: no page of its Instagram Platform asks one
    # (its "AI info" label is for photos and videos).
    reply_disclosure: ClassVar[str | None] = None
    # Meta publishes no cap on comment replies today, only the rate limits of calls
    # (https://developers.facebook.com/docs/graph-api/overview/rate-limiting); its older
    # Instagram API capped comment writes at 60 an hour per user. 50 a day is a person's pace,
    # far below both.
    replies_per_day: ClassVar[int] = 50

    def _read_comments(self, post_id: str, cursor: str | None) -> Iterator[CommentPage]:
        """The comments under our Reel `post_id`, each with the replies under it, newer than the
        time `cursor` (the newest comment the last read kept; None: all): one counted
        `GET /{ig-media-id}/comments` a page, Graph's `after` cursor to the next, at most
        `comment_pages` pages. Meta's page does not say in which order it lists comments (tools
        built on the API say newest first), so a read starts at the first page and stops where
        it meets the comments it read before when they come newest first, else at the last
        page. The cursor moves only on the read's last page, so a read cut short (a limit) is
        done again from the same place; comments are stored once whatever the overlap."""
        known = moment_cursor(cursor)
        newest, after = known, None
        fields = "id,text,username,timestamp,from{id,username}"
        pages = self.settings["comment_pages"]
        for number in range(pages):
            params: dict[str, Any] = {
                "fields": f"{fields},replies{{{fields}}}",
                "limit": COMMENT_PAGE,
            }
            if after:
                params["after"] = after
            body = self.comment_read(f"{post_id}/comments", **params)
            found: list[Comment] = []
            times: list[str] = []
            for item in graph_items(body):
                comment = self.comment_of(item, post_id, None)
                found.append(comment)
                times += [comment.published_at] if comment.published_at else []
                nested = item.get("replies") if isinstance(item.get("replies"), dict) else {}
                for reply in graph_items(nested):
                    found.append(self.comment_of(reply, post_id, item["id"]))
            newest = max([t for t in (newest, *times) if t], default=None)
            after = after_cursor(body)
            last = (
                not has_next(body) or not after or number == pages - 1
                or reached_known(times, known)
            )  # fmt: skip
            yield CommentPage(tuple(found), newest if last else None)
            if last:
                return

    def _thread_of(self, comment: Comment) -> str:
        """The top-level comment a reply goes under: Instagram takes replies only there ("replies
        to a reply will be added to the top-level comment",
        https://developers.facebook.com/docs/instagram-platform/instagram-graph-api/reference/ig-comment/replies)."""
        return comment.parent_id or comment.id

    def _reply(self, request: ReplyRequest) -> Published:
        """`POST /{ig-comment-id}/replies` with the reply as `message`: one call, never retried
        inside the job once it may have gone out (a lost answer is looked for first)."""
        self.tokens()
        handles = self.reply_handles(request)
        if handles.get("reply_id"):
            return Published(str(handles["reply_id"]))
        target = self._thread_of(request.comment)
        body = self.comment_call(
            "POST", f"{target}/replies", sends=True, data={"message": request.text}
        )
        reply_id = str(body.get("id") or "")
        if not reply_id:
            raise LostAnswer("Instagram took the reply without naming it; it may have gone out")
        self.save_reply(request, {**handles, "reply_id": reply_id})
        return Published(reply_id)

    def _find_reply(self, request: ReplyRequest) -> Published | None:
        """The reply under its comment with the reply's text, written by the account; None
        when there is none (or the comment is gone, and the reply with it)."""
        self.tokens()
        handles = self.reply_handles(request)
        if handles.get("reply_id"):
            return Published(str(handles["reply_id"]))
        target = self._thread_of(request.comment)
        fields = "id,text,username,timestamp,from{id,username}"
        cursor: str | None = None
        for _ in range(self.settings["comment_pages"]):
            params: dict[str, Any] = {"fields": fields, "limit": COMMENT_PAGE}
            if cursor:
                params["after"] = cursor
            try:
                body = self.comment_read(f"{target}/replies", **params)
            except CommentGone:
                return None
            for item in graph_items(body):
                if self.is_mine(item) and same_text(item.get("text"), request.text):
                    return Published(str(item["id"]))
            cursor = after_cursor(body)
            if not has_next(body) or not cursor:
                return None
        return None


__all__ = ["InstagramPlatform", "fit_caption", "marker_token"]
