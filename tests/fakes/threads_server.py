"""A local stand-in for the Threads API: Instagram's container fake with Threads' names.

    with fake_threads() as fake:
        fake.container_errors.append("INVALID_DURATION")
        fake.drop_after("publish")

Creating a container makes the fake fetch the video from its `video_url` (the media host), as
Threads does; `status`/`error_message` describe the container; `threads_publish` publishes it;
`threads` lists the profile's posts; `threads_publishing_limit` is the live limit (250).
"""

from __future__ import annotations

from typing import Any

from tests.fakes.instagram_server import APP_ID, APP_SECRET, FakeGraph, Flavour, names

THREADS = Flavour(
    name="threads",
    container_edge="threads",
    publish_edge="threads_publish",
    limit_edge="threads_publishing_limit",
    listing_edge="threads",
    text_param="text",
    state_field="status",
    detail_field="error_message",
    media_type="VIDEO",
    refresh_grant="th_refresh_token",
    exchange_grant="th_exchange_token",
    download_failed="FAILED_DOWNLOADING_VIDEO",
    # the container error codes of https://developers.facebook.com/docs/threads/troubleshooting
    invalid_video="INVALID_DURATION",
    permalink="https://www.threads.com/@{username}/post/{shortcode}",
    # the parameters of POST /{threads-user-id}/threads:
    # https://developers.facebook.com/docs/threads/reference/publishing
    container_params=names(
        "access_token allowlisted_country_codes alt_text auto_publish_text children "
        "enable_reply_approvals gif_attachment image_url is_carousel_item "
        "is_spoiler_media link_attachment location_id media_type poll_attachment "
        "quote_post_id reply_control reply_to_id text text_attachment text_entities "
        "topic_tag video_url"
    ),
    # an IMAGE item of a carousel, up to 20 items (https://developers.facebook.com/docs/threads/posts)
    item_media_type="IMAGE",
    carousel_most=20,
)


def fake_threads() -> FakeGraph:
    fake = FakeGraph(THREADS, user_id="25000000000000001", username="rainlofi")
    fake.quota_total = 250
    return fake


class FakeThreadsInsights(FakeGraph):
    """The Threads fake plus `GET /{media-id}/insights?metric=…` (views, likes, replies,
    reposts, quotes), answered as Meta does: one `{name, period, values: [{value}]}` each.
    `insights_denied` answers as Meta does without `threads_manage_insights` (code 10)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.insights: dict[str, dict[str, int]] = {}
        self.insights_denied = False

    def _route(self, call: Any, method: str, path: str, params: dict[str, str]) -> None:
        segments = [s for s in path.split("/") if s]
        if method != "GET" or len(segments) != 2 or segments[1] != "insights":
            return super()._route(call, method, path, params)
        call.begin("insights", path=path, params=params)
        if call.refused() or not self._authorized(call):
            return None
        if self.insights_denied:
            return self._error(
                call, 403, 10, "Application does not have permission for this action"
            )
        known = self.insights.get(segments[0])
        if known is None:
            return self._error(call, 400, 100, "Object does not exist", subcode=33)
        data = [
            {
                "name": name,
                "period": "lifetime",
                "values": [{"value": known.get(name, 0)}],
                "id": f"{segments[0]}/insights/{name}/lifetime",
            }
            for name in params.get("metric", "").split(",")
            if name
        ]
        return call.answer(200, {"data": data})


def fake_threads_insights() -> FakeThreadsInsights:
    fake = FakeThreadsInsights(THREADS, user_id="25000000000000001", username="rainlofi")
    fake.quota_total = 250
    return fake


__all__ = [
    "APP_ID",
    "APP_SECRET",
    "THREADS",
    "FakeGraph",
    "FakeThreadsInsights",
    "fake_threads",
    "fake_threads_insights",
]
