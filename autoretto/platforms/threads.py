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

import logging
from collections.abc import Iterator
from datetime import timedelta
from itertools import accumulate
from typing import Any, ClassVar

from ..oauth import json_body
from .base import (
    CarouselSpec,
    CommentGone,
    CommentPage,
    ContentRejected,
    EpisodeView,
    LimitReached,
    LostAnswer,
    NeedsPerson,
    PassingError,
    PlatformError,
    Published,
    ReplyRequest,
)
from .meta import (
    COMMENT_PAGE,
    CONTAINER_SETTINGS,
    GraphComments,
    GraphContainerPlatform,
    after_cursor,
    graph_body,
    graph_items,
    graph_signin,
    has_next,
    meta_error,
    same_text,
)
from .signin import SignIn
from .text import TextField, threads_length

NAME = "threads"
TITLE = "Threads"
TEXT_MAX = 500
log = logging.getLogger("autoretto.platforms.threads")
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


class ThreadsPlatform(GraphComments, GraphContainerPlatform):
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
    scopes = (
        "threads_basic",
        "threads_content_publish",
        "threads_manage_insights",
        "threads_read_replies",  # comments and replies (issue 28)
        "threads_manage_replies",
    )
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
        # comments and replies (issue 28): Graph calls per account and UTC day, and pages a
        # read of one post takes at most
        "comment_calls_per_day": 2000,
        "comment_pages": 10,
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

    # -- comments and replies (issue 28) ---------------------------------------------------
    # https://developers.facebook.com/documentation/threads/retrieve-and-manage-replies: reading
    # replies needs threads_read_replies, answering them threads_manage_replies; a profile may
    # publish 1,000 replies in a moving 24 hours, told by `threads_publishing_limit`'s
    # `reply_quota_usage` and `reply_config`.
    comments: ClassVar[str | None] = "reply"
    comment_scope: ClassVar[str] = "threads_read_replies and threads_manage_replies"
    # a reply is a Threads post: at most 500 characters
    # (https://developers.facebook.com/docs/threads/overview), links allowed (the first becomes
    # its preview: https://developers.facebook.com/docs/threads/posts)
    reply_length: ClassVar[int] = TEXT_MAX
    reply_links: ClassVar[bool] = True
    # Meta asks no AI disclosure of a text post (its "AI info" label is for media).
    reply_disclosure: ClassVar[str | None] = None
    # a tenth of the 1,000 replies a day Meta allows (page above)
    replies_per_day: ClassVar[int] = 100
    reply_fields: ClassVar[str] = "id,text,username,timestamp,replied_to,is_reply_owned_by_me"

    def _read_comments(self, post_id: str, cursor: str | None) -> Iterator[CommentPage]:
        """The replies under our post `post_id` at any depth, oldest first, after `cursor`
        (Graph's `after` cursor of the last page read): one counted
        `GET /{media-id}/conversation?reverse=false` a page, at most `comment_pages` a read.
        https://developers.facebook.com/documentation/threads/retrieve-and-manage-replies/replies-and-conversations"""
        for _ in range(self.settings["comment_pages"]):
            params: dict[str, Any] = {
                "fields": self.reply_fields,
                "reverse": "false",
                "limit": COMMENT_PAGE,
            }
            if cursor:
                params["after"] = cursor
            body = self.comment_read(f"{post_id}/conversation", **params)
            found = []
            for item in graph_items(body):
                answered = (
                    item.get("replied_to") if isinstance(item.get("replied_to"), dict) else {}
                )
                parent = str(answered.get("id") or "") or None
                found.append(self.comment_of(item, post_id, None if parent == post_id else parent))
            cursor = after_cursor(body) or cursor
            yield CommentPage(tuple(found), after_cursor(body))
            if not has_next(body):
                return

    def _reply(self, request: ReplyRequest) -> Published:
        """A reply is a Threads post of its own: a TEXT container with `reply_to_id`, saved on
        the attempt before `threads_publish` publishes it (as a post's container is), so a
        crash between the two publishes that container, never a second one
        (https://developers.facebook.com/documentation/threads/retrieve-and-manage-replies/create-replies)."""
        self.tokens()
        return self.retrying(lambda: self._reply_once(request))

    def _reply_once(self, request: ReplyRequest) -> Published:
        handles = self.reply_handles(request)
        if handles.get("reply_id"):
            return Published(str(handles["reply_id"]))
        container = handles.get("container_id")
        if container:
            state = self._reply_container(container)
            if state == "PUBLISHED":
                return self._published_reply(request)
            if state in ("FINISHED", "IN_PROGRESS"):
                return self._publish_reply(request, container)
            log.info("threads: reply container %s is %s; making a new one", container, state)
            handles = {k: v for k, v in handles.items() if k != "container_id"}
            self.save_reply(request, handles)
        self._check_reply_quota()
        body = self.comment_call(
            "POST",
            self._edge(self.container_edge),
            data={"media_type": "TEXT", "text": request.text, "reply_to_id": request.comment.id},
        )
        container = str(body.get("id") or "")
        if not container:
            raise PassingError("Threads answered without a container id for the reply")
        self.save_reply(request, {**handles, "container_id": container})  # before publishing
        return self._publish_reply(request, container)

    def _check_reply_quota(self) -> None:
        """LimitReached when the profile's 1,000 replies of the last 24 hours are used (read
        live before a new reply, as a post reads its publishing limit)."""
        try:
            body = self.comment_read(
                self._edge(self.limit_edge), fields="reply_quota_usage,reply_config"
            )
        except (LimitReached, NeedsPerson):
            raise
        except PlatformError as error:
            # The publish enforces the limit too; not knowing it is no reason to wait.
            log.warning("threads: could not read the reply limit: %s", error.reason)
            return
        data = body.get("data")
        entry = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else {}
        config = entry.get("reply_config") if isinstance(entry.get("reply_config"), dict) else {}
        total, used = config.get("quota_total"), int(entry.get("reply_quota_usage") or 0)
        if total is not None and used >= int(total):
            raise LimitReached(
                f"Threads' reply limit is used: {used} of {int(total)} replies in the last 24 hours"
            )

    def _reply_container(self, container: str) -> str:
        """The state of a reply's container (PUBLISHED, FINISHED, IN_PROGRESS, ERROR, EXPIRED),
        GONE when Threads no longer has it."""
        try:
            body = self.comment_read(container, fields=f"{self.state_field},{self.detail_field}")
        except (CommentGone, ContentRejected):
            return "GONE"
        return str(body.get(self.state_field) or "IN_PROGRESS").upper()

    def _publish_reply(self, request: ReplyRequest, container: str) -> Published:
        """The one step that makes the reply; a lost answer is settled by the container."""
        try:
            body = self.comment_call(
                "POST", self._edge(self.publish_edge), sends=True, data={"creation_id": container}
            )
        except (PassingError, LostAnswer) as error:
            try:
                state = self._reply_container(container)
            except PlatformError:
                state = "UNKNOWN"
            if state == "PUBLISHED":
                return self._published_reply(request)
            if state in ("FINISHED", "IN_PROGRESS") and isinstance(error, PassingError):
                raise  # refused before publishing (not ready yet): the next try publishes it
            raise LostAnswer(
                f"Threads did not confirm the reply ({error.reason}); its container {container} "
                "is checked before anything else"
            ) from None
        reply_id = str(body.get("id") or "")
        if not reply_id:
            raise LostAnswer("Threads published the reply without naming it; it may have gone out")
        self.save_reply(request, {**self.reply_handles(request), "reply_id": reply_id})
        log.info("threads: reply %s published as %s", request.reply_id, reply_id)
        return Published(reply_id)

    def _published_reply(self, request: ReplyRequest) -> Published:
        """The container is published: the reply it became, found under the comment."""
        found = self._reply_under_comment(request)
        if found is None:
            raise LostAnswer(
                "Threads shows the reply's container published but the reply is not listed "
                "yet; it is looked for again later"
            )
        self.save_reply(
            request, {**self.reply_handles(request), "reply_id": found.platform_post_id}
        )
        return found

    def _reply_under_comment(self, request: ReplyRequest) -> Published | None:
        """Our reply among the replies to its comment (`GET /{media-id}/replies`): its text,
        written by the profile."""
        cursor: str | None = None
        for _ in range(self.settings["comment_pages"]):
            params: dict[str, Any] = {"fields": self.reply_fields, "limit": COMMENT_PAGE}
            if cursor:
                params["after"] = cursor
            try:
                body = self.comment_read(f"{request.comment.id}/replies", **params)
            except CommentGone:
                return None  # the comment is gone, and every reply under it
            for item in graph_items(body):
                if self.is_mine(item) and same_text(item.get("text"), request.text):
                    return Published(str(item["id"]))
            cursor = after_cursor(body)
            if not has_next(body) or not cursor:
                return None
        return None

    def _find_reply(self, request: ReplyRequest) -> Published | None:
        """The reply of any attempt: its saved id, else its container's state (a container is
        published only through us), else its text under the comment."""
        self.tokens()
        handles = self.reply_handles(request)
        if handles.get("reply_id"):
            return Published(str(handles["reply_id"]))
        container = handles.get("container_id")
        if container:
            state = self._reply_container(container)
            if state == "PUBLISHED":
                return self._reply_under_comment(request)
            if state != "GONE":
                return None
        return self._reply_under_comment(request)


def _insight_value(entry: dict[str, Any]) -> int | None:
    """A metric's number: `values[0].value` for a post, `total_value.value` in some answers."""
    values = entry.get("values")
    if isinstance(values, list) and values and isinstance(values[0], dict):
        value = values[0].get("value")
    else:
        total = entry.get("total_value")
        value = total.get("value") if isinstance(total, dict) else None
    return value if isinstance(value, int) and value >= 0 else None
