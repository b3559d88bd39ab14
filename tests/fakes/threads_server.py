"""A local stand-in for the Threads API: Instagram's container fake with Threads' names.

    with FakeGraph(THREADS) as fake:
        fake.faults.container_errors.append("INVALID_DURATION")

Creating a container makes the fake fetch the video from its `video_url` (the media host), as
Threads does; `status`/`error_message` describe the container; `threads_publish` publishes it;
`threads` lists the profile's posts; `threads_publishing_limit` is the live limit (250).
"""

from __future__ import annotations

from tests.fakes.instagram_server import APP_ID, APP_SECRET, FakeGraph, Faults, Flavour

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
    permalink="https://www.threads.com/@{username}/post/{shortcode}",
)


def fake_threads() -> FakeGraph:
    fake = FakeGraph(THREADS, user_id="25000000000000001", username="rainlofi")
    fake.faults.quota_total = 250
    return fake


__all__ = ["APP_ID", "APP_SECRET", "THREADS", "FakeGraph", "Faults", "fake_threads"]
