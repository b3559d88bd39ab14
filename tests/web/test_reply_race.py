"""Send now pressed on the page's inbox while two cron runs (real processes) run the reply
session that holds the same approved draft: one reply on the platform (issue 28)."""

from __future__ import annotations

import subprocess
import time
from datetime import timedelta

from autoretto.clock import iso
from tests.contract.replies import ROWS, ReplyHome
from tests.support import run_process
from tests.test_replies import DAY, sessions_of
from tests.web.conftest import screenshot, sign_in

(BLUESKY,) = [row for row in ROWS if row.name == "bluesky"]


def test_two_run_dues_and_the_page_s_send_now_race_over_one_draft(
    home, clip, tmp_path, monkeypatch, served, browsers
):
    monkeypatch.setenv("AUTORETTO_VAULT", "file")  # the page and the runs open the vault too
    fake = BLUESKY.post_row.fake(tmp_path, monkeypatch)
    fake.start()
    try:
        h = ReplyHome(home, BLUESKY, fake, clip)
        # inside the day's first reply session: cron's runs want this reply too
        now = iso(sessions_of(h, DAY.date())[0].start + timedelta(minutes=1))
        server = served(env={"AUTORETTO_NOW": now})
        page = browsers.open()
        sign_in(page, server)
        page.goto(f"{server.url}/inbox?state=approved")
        button = page.locator(f"#comment-{h.comment_id} button[value=send]")
        assert button.count() == 1

        fake.hold(BLUESKY.reply_at)  # whoever creates the reply first keeps the call open
        crons = [
            run_process("run-due", "--no-wait", now=now, stdin=subprocess.DEVNULL) for _ in range(2)
        ]
        button.click(no_wait_after=True)
        assert fake.holding.wait(timeout=90)
        deadline = time.monotonic() + 3  # let the others meet the reply on its way
        while time.monotonic() < deadline and any(c.poll() is None for c in crons):
            time.sleep(0.1)
        fake.release()
        for cron in crons:
            out, err = cron.communicate(timeout=120)
            assert "Traceback" not in err, (out, err)
        page.wait_for_selector("p.flash", timeout=60_000)
        screenshot(page, "reply-race")

        assert h.copies() == 1, h.dump()
        assert h.reply()["state"] == "published", h.dump()
        assert h.comment_state() == "answered"
        # one create for the episode's post, one for the reply: nobody else reached the PDS
        assert h.posting.kinds().count(BLUESKY.reply_at) == 2, h.dump()
        h.cli("run-due", now=iso(DAY + timedelta(days=1, hours=12)))
        assert h.copies() == 1
    finally:
        fake.release()
        fake.close()
