"""Review links in headless Chromium: used (watch, approve, hold that one episode and nothing
else), expired and forged; each checked in the database as well as on the page."""

from __future__ import annotations

from urllib.parse import urlsplit

from tests.support import outbox_sidecars
from tests.web.conftest import screenshot
from tests.web.test_buttons import make_home, state_of


def review_link(cli, server, episode_id: int, *args: str, now: str | None = None) -> str:
    """`autoretto review EP` run as the creator would, pointed at this test's server."""
    code, out, err = cli("review", str(episode_id), *args, now=now)
    assert code == 0, err
    printed = out.splitlines()[0]
    parts = urlsplit(printed)
    assert parts.path == f"/review/{episode_id}", printed
    return f"{server.url}{parts.path}?{parts.query}"


def test_a_review_link_lets_its_holder_watch_approve_and_hold_that_episode_only(
    home, cli, clip, served, browsers
):
    make_home(home, cli, clip, episodes=2, approval=True)
    server = served()
    link = review_link(cli, server, 1)
    page = browsers.open()  # a collaborator's browser: never signed in
    answer = page.goto(link)
    assert answer.status == 200
    assert page.inner_text("h2").startswith("lofi 0")
    assert "review link for episode 1" in page.inner_text("header")
    assert page.locator("video").count() == 1
    assert page.locator("button:has-text('Post now')").count() == 0
    assert page.locator("nav.top").count() == 0  # no way to the owner's pages
    html = page.content()
    assert "sig=" not in html and server.token not in html

    page.click("button:has-text('Approve')")
    page.wait_for_url(f"{server.url}/review/1")  # the clean address: the cookie carries on
    assert page.inner_text("#state") == "approved"
    assert state_of(cli, 1) == "approved"
    screenshot(page, "review-approved")
    page.click("button:has-text('Hold')")
    assert page.inner_text("#state") == "ready"
    assert state_of(cli, 1) == "ready"
    # The video plays from the review path only.
    video = page.request.get(f"{server.url}/review/1/media/landscape")
    assert video.status == 200 and video.headers["content-type"] == "video/mp4"

    # Nothing else opens for this browser: not the owner's pages, not another episode.
    for path in ("/", "/episodes/1", "/trouble", "/episodes/1/media/landscape", "/review/2"):
        assert page.goto(f"{server.url}{path}").status == 401, path
    assert "Open the review link" in page.inner_text("#refused")
    refused = page.request.post(f"{server.url}/review/2/approve", form={"csrf": "x"})
    assert refused.status == 401
    assert state_of(cli, 2) == "ready"
    assert outbox_sidecars(home) == [] and cli.json("posts") == []


def test_an_expired_review_link_is_refused(home, cli, clip, served, browsers):
    make_home(home, cli, clip, approval=True)
    server = served()
    # Made two hours before the server's clock, for one hour: it ended an hour ago.
    link = review_link(cli, server, 1, "--for", "1h", now="2026-11-29T10:00:00Z")
    page = browsers.open()
    answer = page.goto(link)
    assert answer.status == 403
    text = page.inner_text("#refused")
    assert "expired at 2026-11-29 11:00 UTC" in text
    assert page.locator("button").count() == 0
    screenshot(page, "review-expired")
    assert page.request.post(f"{server.url}/review/1/approve", form={"csrf": "x"}).status == 401
    assert state_of(cli, 1) == "ready"


def test_a_forged_review_link_is_refused(home, cli, clip, served, browsers):
    make_home(home, cli, clip, episodes=2, approval=True)
    server = served()
    link = review_link(cli, server, 1)
    page = browsers.open()
    base, _, query = link.partition("?")
    until, signature = (part.split("=", 1)[1] for part in query.split("&"))
    forgeries = [
        f"{server.url}/review/2?{query}",  # another episode with episode 1's signature
        f"{base}?until=20991231T000000Z&sig={signature}",  # a longer life
        f"{base}?until={until}&sig={signature[:-2]}AA",  # a changed signature
        f"{base}?until={until}&sig=",
    ]
    for forged in forgeries:
        answer = page.goto(forged)
        assert answer.status == 403, forged
        assert "not valid" in page.inner_text("#refused"), forged
        assert page.locator("button").count() == 0
    screenshot(page, "review-forged")
    assert [state_of(cli, n) for n in (1, 2)] == ["ready", "ready"]
