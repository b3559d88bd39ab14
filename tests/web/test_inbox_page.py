"""The page's inbox (issue 28) through the real Starlette app (`app.build` with every route,
Starlette's TestClient, signed in as the owner): the comments waiting for a person with their
author, words, episode and draft, and the buttons Approve, Ignore and Send now."""

from __future__ import annotations

import re
from typing import Any

import pytest
from starlette.testclient import TestClient

from autoretto.config import load_config
from autoretto.ledger.store import rows
from autoretto.platforms import FIELDS
from autoretto.web import app as web
from tests.fakes import bluesky_server
from tests.test_inbox import NOW, Inbox

TOKEN = "test-sign-in-token"


@pytest.fixture
def bluesky():
    fake = bluesky_server.start()
    yield fake
    fake.close()


@pytest.fixture
def bench(home, cli, bluesky) -> Inbox:
    bench = Inbox(home, bluesky)
    bench.publish("3lkrain", title="Rain on Glass")
    bluesky.add_comment("3lkrain", "thank you for this", handle="ana.test",
                        at="2026-11-29T11:00:00.000Z")  # fmt: skip
    bluesky.add_comment("3lkrain", "buy followers at cheap.example", handle="spam.test",
                        at="2026-11-29T11:10:00.000Z")  # fmt: skip
    bluesky.add_comment("3lkrain", "<script>alert(1)</script> lovely", handle="cy.test",
                        at="2026-11-29T11:20:00.000Z")  # fmt: skip
    cli.json("inbox", "collect", now=NOW)
    return bench


def owner(home) -> TestClient:
    page = web.Page.of(load_config(platforms=FIELDS), login_token=TOKEN)
    client = TestClient(web.build(page), base_url="http://127.0.0.1:8780")
    assert client.get(f"/login?token={TOKEN}").status_code == 200
    return client


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, html[:2000]
    return found.group(1)


def articles(html: str) -> dict[int, str]:
    """comment id -> its state, as the page marks each comment."""
    return {
        int(number): state
        for number, state in re.findall(r'data-comment="(\d+)" data-state="(\w+)"', html)
    }


def replies_of(db: Any) -> list[dict[str, Any]]:
    return rows(db, "SELECT comment_id, text, state, approved_by FROM replies ORDER BY id")


def test_the_inbox_shows_what_waits_for_a_person(bench, home):
    client = owner(home)
    answer = client.get("/inbox")
    assert answer.status_code == 200
    html = answer.text
    thanked = bench.by_text("thank you for this")
    spam = bench.by_text("buy followers at cheap.example")
    assert articles(html) == {thanked["id"]: "drafted", spam["id"]: "held", 3: "drafted"}
    # Newest first: cy's, then the spam, then ana's.
    assert [int(n) for n in re.findall(r'data-comment="(\d+)"', html)] == [3, spam["id"], 1]
    assert "@ana.test on bluesky" in html and "Rain on Glass" in html
    assert f'<textarea name="text" rows="3" cols="60">{thanked["draft"]}</textarea>' in html
    assert "Held for you: spam." in html
    # A comment's words are shown, never obeyed.
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html
    assert 'href="/inbox" aria-current="page"' in html  # beside the calendar, in the nav

    held = client.get("/inbox?state=held").text
    assert articles(held) == {spam["id"]: "held"}
    assert articles(client.get("/inbox?channel=lofi&state=ignored").text) == {}
    bad = client.get("/inbox?state=someday")
    assert bad.status_code == 400 and "state: give one of" in bad.text
    unknown = client.get("/inbox?channel=jazz")
    assert unknown.status_code == 400 and "no channel" in unknown.text


def test_a_stranger_sees_no_inbox(bench):
    stranger = TestClient(web.build(web.Page.of(load_config(platforms=FIELDS), login_token=TOKEN)),
                          base_url="http://127.0.0.1:8780")  # fmt: skip
    answer = stranger.get("/inbox")
    assert answer.status_code == 401 and "thank you for this" not in answer.text


def test_approve_with_the_person_s_words_queues_the_reply(bench, home):
    client = owner(home)
    csrf = csrf_of(client.get("/inbox").text)
    thanked = bench.by_text("thank you for this")
    answer = client.post(
        f"/inbox/{thanked['id']}/approve",
        data={"csrf": csrf, "text": "Thanks, Ana!", "state": "waiting"},
        follow_redirects=False,
    )
    assert answer.status_code == 303 and answer.headers["location"] == "/inbox?state=waiting"
    assert replies_of(bench.db) == [
        {"comment_id": thanked["id"], "text": "Thanks, Ana!", "state": "queued",
         "approved_by": "person"}
    ]  # fmt: skip
    shown = client.get("/inbox?state=approved").text
    assert "the reply is queued" in shown and articles(shown) == {thanked["id"]: "approved"}
    # Approving a held comment with nothing written is refused in words, nothing changed.
    spam = bench.by_text("buy followers at cheap.example")
    refused = client.post(f"/inbox/{spam['id']}/approve", data={"csrf": csrf, "text": ""})
    assert refused.status_code == 200 and "has no draft" in refused.text
    assert bench.by_text("buy followers at cheap.example")["state"] == "held"
    assert len(replies_of(bench.db)) == 1


def test_ignore_and_the_csrf_rule(bench, home):
    client = owner(home)
    csrf = csrf_of(client.get("/inbox").text)
    spam = bench.by_text("buy followers at cheap.example")
    refused = client.post(f"/inbox/{spam['id']}/ignore", data={"csrf": "not-it"})
    assert refused.status_code == 403
    assert bench.by_text("buy followers at cheap.example")["state"] == "held"
    done = client.post(f"/inbox/{spam['id']}/ignore", data={"csrf": csrf})
    assert done.status_code == 200 and f"Comment {spam['id']} is ignored." in done.text
    assert bench.by_text("buy followers at cheap.example")["state"] == "ignored"
    assert spam["id"] not in articles(done.text)  # no longer waiting


def test_send_now_approves_then_sends_through_the_replies_guards(bench, home, bluesky):
    client = owner(home)
    csrf = csrf_of(client.get("/inbox").text)
    thanked = bench.by_text("thank you for this")
    answer = client.post(f"/inbox/{thanked['id']}/send", data={"csrf": csrf, "text": "Thanks!"})
    assert answer.status_code == 200
    sent = replies_of(bench.db)
    assert [(r["comment_id"], r["text"]) for r in sent] == [(thanked["id"], "Thanks!")]
    assert sent[0]["state"] == "published", answer.text
    answers = [r for r in bluesky.records.values() if r["record"].get("reply")]
    assert [r["record"]["text"] for r in answers] == ["Thanks!"]


def test_a_person_edits_and_approves_a_draft_in_the_browser(bench, served, browsers):
    from tests.web.conftest import screenshot, sign_in

    server = served()
    page = browsers.open()
    sign_in(page, server)
    page.click("nav.top a[href='/inbox']")
    page.wait_for_url(f"{server.url}/inbox")
    thanked = bench.by_text("thank you for this")
    article = page.locator(f"#comment-{thanked['id']}")
    assert article.locator("textarea[name=text]").input_value() == thanked["draft"]
    article.locator("textarea[name=text]").fill("Thank you, Ana! More on Friday.")
    screenshot(page, "inbox")
    article.locator("button[value=approve]").click()
    page.wait_for_selector("p.flash.ok")
    assert "the reply is queued" in page.locator("p.flash.ok").inner_text()
    assert replies_of(bench.db) == [
        {"comment_id": thanked["id"], "text": "Thank you, Ana! More on Friday.",
         "state": "queued", "approved_by": "person"}
    ]  # fmt: skip
    # No longer waiting for the person: the default view leaves it out.
    assert page.locator(f"#comment-{thanked['id']}").count() == 0
