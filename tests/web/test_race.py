"""Post now pressed twice, in two browsers, while cron's `run-due` (a real process) serves the
same episode's slot: one post per platform, as with two CLI runs."""

from __future__ import annotations

import time

from tests.support import outbox_sidecars, run_process
from tests.web.conftest import screenshot, sign_in
from tests.web.test_buttons import make_home, webhook_extra

OUTCOMES = "#decide .job.done, #decide .job.refused"
#: both presses listed, and neither still on its way (the page refreshes its list by polling:
#: a page whose own press was refused at once may still show the other's as going out)
BOTH_SETTLED = (
    "() => document.querySelectorAll('#jobs li[data-job]').length === 2"
    " && !document.querySelector('#jobs .job.starting, #jobs .job.waiting, #jobs .job.sending')"
)


def test_post_now_twice_in_two_browsers_while_run_due_runs(
    home, cli, clip, served, shared_browsers, fake
):
    make_home(home, cli, clip, platforms=("webhook", "folder"), extra=webhook_extra(fake))
    fake.script.append("hold")  # whoever sends first keeps the upload open a while
    server = served()
    pages = [shared_browsers.open(), shared_browsers.open()]
    for page in pages:
        sign_in(page, server)
        page.goto(f"{server.url}/episodes/1")

    # The 12:00 slot is due now: cron's run-due wants episode 1 too.
    cron = run_process("run-due", "--no-make")
    for page in pages:
        page.click("button:has-text('Post now')", no_wait_after=True)
    assert fake.holding.wait(timeout=60)
    deadline = time.monotonic() + 3  # let the others meet the upload in flight
    while time.monotonic() < deadline and cron.poll() is None:
        time.sleep(0.1)
    fake.release()
    out, err = cron.communicate(timeout=120)
    assert cron.returncode == 0, (out, err)
    for page in pages:
        page.wait_for_selector(OUTCOMES, timeout=60_000)
        page.wait_for_function(BOTH_SETTLED, timeout=60_000)
    screenshot(pages[0], "race-first-browser")
    screenshot(pages[1], "race-second-browser")

    # One upload reached the webhook, one video the outbox: nothing went out twice.
    assert len(fake.publishes) == 1
    assert [s["episode_id"] for s in outbox_sidecars(home)] == [1]
    posts = cli.json("posts")
    assert sorted((p["platform"], p["state"], p["attempts"]) for p in posts) == [
        ("folder", "published", 1),
        ("webhook", "published", 1),
    ]
    # The episode's page shows both presses, each with what became of it, in both browsers;
    # of the presses and cron, exactly one sent to each platform.
    said: dict[str, dict[str, str]] = {}
    for page in pages:
        for job in page.query_selector_all("#jobs li[data-job]"):
            said[job.get_attribute("data-job")] = {
                item.get_attribute("data-platform"): item.inner_text()
                for item in job.query_selector_all(".results li")
            }
    assert len(said) == 2, said
    decisions = cli.json("decisions")
    for platform in ("webhook", "folder"):
        senders = [job for job in said.values() if "published on" in job.get(platform, "")]
        senders += [
            d for d in decisions if d["platform"] == platform and "published on" in d["reason"]
        ]
        assert len(senders) == 1, (platform, said, decisions)
