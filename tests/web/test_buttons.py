"""The page's buttons in headless Chromium, each checked in the database and the outbox too:
Approve, Hold, Post now (when it goes out, then going out), It is live / It is not there, and
I have checked, resume."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from datetime import timedelta

from autoretto.clock import parse_instant
from tests.conftest import TEST_NOW
from tests.support import channel_toml, outbox_sidecars, write_config
from tests.web.conftest import screenshot, sign_in


def make_home(home, cli, clip, *, episodes=1, approval=False, channels=("lofi",),
              platforms=("folder",), extra="") -> None:  # fmt: skip
    blocks = [
        channel_toml(name, approval=approval).replace(
            'platforms = ["folder"]', f"platforms = {json.dumps(list(platforms))}"
        )
        for name in channels
    ]
    write_config(home, *blocks, extra=extra)
    assert cli("init")[0] == 0
    for name in channels:
        for number in range(episodes):
            code, _, err = cli("episode", "add", name, str(clip), "--title", f"{name} {number}")
            assert code == 0, err
    cli("run-due", now="2026-11-29T09:00:00Z")  # the channels are seen; nothing is due


def webhook_extra(fake) -> str:
    return f'\n[platforms.webhook]\nurl = "{fake.url}"\ntimeout = 10\n\n[retry]\nattempts = 1\n'


def state_of(cli, episode_id: int) -> str:
    return cli.json("episode", "show", str(episode_id))["state"]


def test_approve_and_hold(home, cli, clip, served, shared_browsers):
    make_home(home, cli, clip, approval=True)
    server = served()
    page = shared_browsers.open()
    sign_in(page, server)
    page.click("a[href='/episodes/1']")
    assert page.inner_text("#state") == "ready"
    assert "posts only approved episodes" in page.inner_text("#decide")
    assert page.locator("video").count() == 1

    page.click("button:has-text('Approve')")
    page.wait_for_url(f"{server.url}/episodes/1")
    assert page.inner_text("#state") == "approved"
    assert "Episode 1 is approved" in page.inner_text("main")
    assert state_of(cli, 1) == "approved"
    screenshot(page, "approved")

    page.click("button:has-text('Hold')")
    assert page.inner_text("#state") == "ready"
    assert state_of(cli, 1) == "ready"
    # Neither button posts: the outbox is empty and there is no post record.
    assert outbox_sidecars(home) == [] and cli.json("posts") == []

    page.click("button:has-text('Sign out')")
    page.wait_for_url(f"{server.url}/login")
    assert page.goto(f"{server.url}/episodes/1").status == 401


def test_post_now_says_when_then_shows_it_going_out(home, cli, clip, served, shared_browsers, fake):
    make_home(home, cli, clip, platforms=("webhook", "folder"), extra=webhook_extra(fake))
    fake.script.append("hold")  # the webhook keeps the upload open until released
    server = served()
    page = shared_browsers.open()
    sign_in(page, server)
    page.goto(f"{server.url}/episodes/1")
    page.click("button:has-text('Post now')")
    page.wait_for_url(f"{server.url}/episodes/1")

    # The page says when it goes out: 20 s to 2 min after the press, on the server's clock.
    said = re.search(r"goes out at (\d\d:\d\d:\d\d) UTC", page.inner_text("main"))
    assert said, page.inner_text("main")
    moment = parse_instant(f"{TEST_NOW[:10]}T{said.group(1)}Z")
    assert timedelta(seconds=20) <= moment - parse_instant(TEST_NOW) <= timedelta(minutes=2)
    assert fake.holding.wait(timeout=30)
    page.wait_for_selector("#decide .job.sending")  # going out now, without a reload
    page.wait_for_selector("#posts tr[data-platform='webhook'][data-state='sending']")
    screenshot(page, "post-now-going-out")
    assert [p["state"] for p in cli.json("posts")] == ["sending"]

    fake.release()
    # The page refreshes itself (live.js) and shows each platform's outcome.
    page.wait_for_selector("#decide .job.done", timeout=30_000)
    outcomes = {
        item.get_attribute("data-platform"): item.get_attribute("data-outcome")
        for item in page.query_selector_all("#decide .results li")
    }
    assert outcomes == {"webhook": "posted", "folder": "posted"}
    assert page.query_selector("#posts a[href='https://videos.example/v1']")
    screenshot(page, "post-now-done")

    posts = {p["platform"]: p for p in cli.json("posts")}
    assert {name: p["state"] for name, p in posts.items()} == {
        "webhook": "published",
        "folder": "published",
    }
    assert posts["webhook"]["url"] == "https://videos.example/v1"
    assert len(fake.publishes) == 1
    sidecars = outbox_sidecars(home)
    assert [(s["episode_id"], s["slot"]) for s in sidecars] == [(1, None)]
    assert parse_instant(sidecars[0]["publish_at"]) == moment


def test_post_now_stopped_after_its_request_went_out_says_it_may_be_live(
    home, cli, clip, served, shared_browsers, fake
):
    """The upload reached the platform, then the disk filled before the answer was written
    down: the post stays `sending`, and the page must not say "not posted, nothing is lost"."""
    make_home(home, cli, clip, platforms=("webhook",), extra=webhook_extra(fake))
    # The error a full disk gives, right after the request went out (tests/test_full_disk.py
    # injects it the same way where no small file system can be mounted).
    server = served(env={"AUTORETTO_FAULT": "after_send:enospc"})
    page = shared_browsers.open()
    sign_in(page, server)
    page.goto(f"{server.url}/episodes/1")
    page.click("button:has-text('Post now')")
    page.wait_for_selector(
        "#decide .job.done, #decide .job.refused, #decide .job.unsure", timeout=30_000
    )
    said = " ".join(page.inner_text("#decide").split())
    screenshot(page, "post-now-may-be-live")
    assert "may be live on webhook" in said, said
    assert "the next run looks for it" in said, said
    assert "not posted" not in said and "nothing is lost" not in said, said
    # What the page says is what is true: the endpoint has it, the post is in doubt.
    assert len(fake.publishes) == 1
    assert [p["state"] for p in cli.json("posts")] == ["sending"]


def test_a_post_that_may_be_live_is_settled_live_or_not(
    home, cli, clip, served, shared_browsers, fake
):
    make_home(home, cli, clip, channels=("lofi", "jazz"), platforms=("webhook",),
              extra=webhook_extra(fake))  # fmt: skip
    fake.script.extend(["drop", "drop"])  # each upload goes in, and its answer is lost
    cli("run-due", now="2026-11-29T10:05:00Z")
    assert [p["state"] for p in cli.json("posts")] == ["may_be_live", "may_be_live"]
    server = served()
    page = shared_browsers.open()
    sign_in(page, server)
    assert "may be live" in page.inner_text("#attention")
    page.click("a[href='/trouble']")
    first, second = page.locator("article.post").all()
    assert "lofi 0" in first.inner_text() and "jazz 0" in second.inner_text()
    screenshot(page, "may-be-live")

    first.locator("input[name=url]").fill("https://videos.example/v1")
    first.locator("button:has-text('It is live (paste the link)')").click()
    page.wait_for_url(f"{server.url}/trouble")
    assert "Post 1 (webhook) is published" in page.inner_text("main")
    page.locator("#post-2 button:has-text('It is not there')").click()
    page.wait_for_url(f"{server.url}/trouble")
    assert "Post 2 (webhook) is failed" in page.inner_text("main")
    assert page.locator("article.post").count() == 0
    screenshot(page, "settled")

    posts = {p["id"]: p for p in cli.json("posts")}
    assert (posts[1]["state"], posts[1]["url"]) == ("published", "https://videos.example/v1")
    assert (posts[2]["state"], posts[2]["reason"]) == (
        "failed",
        "a person confirmed it is not live",
    )
    assert len(fake.publishes) == 2  # settling sent nothing
    # "Not there" lets it go out on the next slot; "live" is never sent again. The endpoint
    # can be asked, so the next slot asks it first: it does have post 2 (its answer was only
    # lost), so post 2 is published without a second copy.
    cli("run-due", now="2026-11-29T11:05:00Z")
    assert [p.metadata["post_id"] for p in fake.publishes] == [1, 2]
    assert {p["id"]: p["state"] for p in cli.json("posts")} == {1: "published", 2: "published"}


def test_post_now_is_held_after_a_restore_until_resume(home, cli, clip, served, shared_browsers):
    make_home(home, cli, clip, episodes=3)
    backup = home.parent / "last-week.db"
    source, target = sqlite3.connect(home / "autoretto.db"), sqlite3.connect(backup)
    source.backup(target)
    source.close()
    target.close()
    cli("run-due", now="2026-11-29T10:05:00Z")  # episode 1 goes out on the 10:00 slot
    for suffix in ("", "-wal", "-shm"):
        (home / f"autoretto.db{suffix}").unlink(missing_ok=True)
    shutil.copy(backup, home / "autoretto.db")  # last week's copy is put back

    server = served()
    page = shared_browsers.open()
    sign_in(page, server)
    assert "Posting is held" in page.inner_text("#attention")
    page.goto(f"{server.url}/episodes/1")
    page.click("button:has-text('Post now')")
    assert "not posted: the database knows publishes up to #0" in page.inner_text("#decide")
    assert len(outbox_sidecars(home)) == 1  # nothing went out while held

    page.goto(f"{server.url}/trouble")
    missing = page.inner_text("#restore table")
    assert "episode 1 (lofi) published on folder" in missing
    assert "the stamp of lofi moved to 2026-11-29T10:00" in missing
    screenshot(page, "restore-hold")
    page.click("button:has-text('I have checked, resume')")
    page.wait_for_url(f"{server.url}/trouble")
    # The attempt (journaled before its request went out), the publish, the stamp.
    assert "Wrote 3 journal entries back; posting resumes." in page.inner_text("main")
    assert "Posting is not held" in page.inner_text("#restore")
    assert cli.json("journal")["held"] is None
    assert [(p["episode_id"], p["state"]) for p in cli.json("posts")] == [(1, "published")]

    # After the resume, the next slot posts episode 2: episode 1 is never posted again.
    cli("run-due", now="2026-11-29T11:05:00Z")
    assert [s["episode_id"] for s in outbox_sidecars(home)] == [1, 2]
    page.goto(f"{server.url}/")
    cell = page.locator("section[data-channel='lofi'] .slotcard[data-slot='2026-11-29T11:00']")
    assert cell.get_attribute("data-state") == "posted"
    assert cell.get_attribute("data-episode") == "2"  # the episode that slot posted


def test_needs_you_shows_incidents_accounts_to_reconnect_and_the_limits(
    home, cli, clip, served, shared_browsers, fake, monkeypatch
):
    from autoretto.accounts import mark_reconnect, save_account
    from autoretto.ledger.store import open_database

    monkeypatch.setenv("AUTORETTO_VAULT", "file")
    make_home(home, cli, clip, channels=("lofi", "jazz", "rain"), platforms=("webhook",),
              extra=webhook_extra(fake))  # fmt: skip
    fake.script.extend(["status:500"] * 3)  # three failed posts within two hours
    cli("run-due", now="2026-11-29T10:05:00Z")
    db = open_database(home / "autoretto.db")
    save_account(
        db, home, platform="bluesky", account_id="did:plc:test", name="@lofi.bsky.social",
        tokens={"access_token": "a-secret-access-token"}, meta={"handle": "lofi.bsky.social"},
    )  # fmt: skip
    mark_reconnect(db, "bluesky", "Bluesky refused the session (ExpiredToken)")
    db.conn.close()

    server = served()
    page = shared_browsers.open()
    sign_in(page, server)
    page.click("a[href='/trouble']")
    assert (
        "Incident 1, open since 2026-11-29 10:05:00Z (3 failures): Webhook answered HTTP 500"
        in page.inner_text("#incidents")
    )
    accounts = page.inner_text("#accounts")
    assert "bluesky account @lofi.bsky.social must be reconnected" in accounts
    assert "Run autoretto connect bluesky --handle H on the server" in accounts
    screenshot(page, "needs-you")
    for path in ("/", "/trouble", "/episodes/1"):
        page.goto(f"{server.url}{path}")
        html = page.content()
        assert server.token not in html and "a-secret-access-token" not in html, path
    page.click("a[href='/limits']")
    assert "X: posting (no pause)" in page.inner_text("#limits-x")
    assert "@lofi.bsky.social: 0 of" in page.inner_text("#limits-bluesky")
    assert cli.json("incidents")[0]["failures"] == 3  # the page read what the command reads
