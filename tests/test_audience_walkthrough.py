"""The README's walk from a comment to a reply (issue 28), command by command: the offline
assistant, the folder and webhook platforms, and Bluesky (its fake on 127.0.0.1)."""

from __future__ import annotations

from autoretto.accounts import save_account
from autoretto.config import Paths, load_config
from autoretto.ledger.store import open_database
from autoretto.platforms import FIELDS
from tests.fakes import bluesky_server, webhook_server
from tests.fakes.bluesky_server import DID, HANDLE

CONFIG = """
[[channels]]
name = "lofi"
timezone = "UTC"
slots = ["10:00"]
platforms = ["folder", "webhook", "bluesky"]

[platforms.folder]
path = "outbox"

[platforms.webhook]
{webhook}
[platforms.bluesky]
{bluesky}
"""


def test_from_a_comment_to_a_reply_sent_in_a_session(home, cli, clip, monkeypatch):
    monkeypatch.setenv("AUTORETTO_VAULT", "file")
    bluesky, webhook = bluesky_server.start(), webhook_server.start()
    try:
        home.mkdir(parents=True, exist_ok=True)
        (home / "autoretto.toml").write_text(
            CONFIG.format(webhook=webhook.settings(), bluesky=bluesky.settings()),
            encoding="utf-8",
        )
        cli("init")
        config = load_config(Paths(home), platforms=FIELDS)
        save_account(
            open_database(config.paths.database),
            home,
            platform="bluesky",
            account_id=DID,
            name="@" + HANDLE,
            tokens=bluesky.tokens(),
            meta={"handle": HANDLE, "pds": bluesky.pds_url},
        )  # fmt: skip  (what `autoretto connect bluesky` keeps)
        code, _, err = cli("episode", "add", "lofi", str(clip), "--title", "Rain on Glass")
        assert code == 0, err

        # `autoretto run-due`: the episode goes out on its slot (Bluesky's a while after it)
        cli("run-due", now="2026-11-29T09:00:00Z")
        for moment in ("2026-11-29T10:05:00Z", "2026-11-29T11:05:00Z"):
            cli("run-due", "--no-wait", now=moment)
        (post,) = [p for p in cli.json("posts") if p["platform"] == "bluesky"]
        assert post["state"] == "published"
        assert {p["platform"] for p in cli.json("posts")} == {"folder", "webhook", "bluesky"}

        # someone answers the post on Bluesky
        bluesky.add_comment(
            post["platform_post_id"], "this is beautiful, thank you", handle="ana.test",
            at="2026-11-29T11:30:00.000Z",
        )  # fmt: skip

        # `autoretto inbox collect`: read bluesky 1; 1 new comment, 1 drafted
        collected = cli.json("inbox", "collect", now="2026-11-29T11:40:00Z")
        assert collected["read"] == {"bluesky": 1}
        assert collected["drafted"] == 1 and collected["held"] == 0
        assert {"folder", "webhook"} <= set(collected["cannot_read"])

        # `autoretto inbox`: the comment, drafted, with the assistant's draft
        (comment,) = cli.json("inbox", now="2026-11-29T11:41:00Z")
        assert comment["author"].endswith("ana.test") and comment["state"] == "drafted"
        assert comment["draft"] and comment["draft_by"]

        # `autoretto inbox edit 1 --text ...`, then `autoretto inbox approve 1`
        words = "Thank you, Ana! More on Friday."
        code, _, err = cli(
            "inbox", "edit", str(comment["id"]), "--text", words, now="2026-11-29T11:42:00Z"
        )
        assert code == 0, err
        code, _, err = cli("inbox", "approve", str(comment["id"]), now="2026-11-29T11:43:00Z")
        assert code == 0, err
        assert bluesky.replies == []

        # `autoretto run-due` (cron) runs the reply session whose moment has come
        report = cli.json("run-due", "--no-wait", now="2026-11-29T11:45:00Z")
        session = next(iter(report["replies"]["next_session"].values()), None)
        if not report["replies"]["published"]:
            assert session is not None, report["replies"]
            cli.json("run-due", "--no-wait", now=session)
        (sent,) = bluesky.replies
        assert sent["record"]["text"] == "Thank you, Ana! More on Friday."
        assert sent["record"]["reply"]["parent"]["uri"].startswith("at://")

        # `autoretto inbox show 1`: reply 1: published https://bsky.app/profile/…
        code, out, err = cli("inbox", "show", str(comment["id"]))
        assert code == 0, err
        assert "published https://bsky.app/profile/" in out
        assert cli.json("inbox", "--state", "answered")[0]["reply_state"] == "published"
    finally:
        bluesky.close()
        webhook.close()
