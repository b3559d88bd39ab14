"""The cron monitor's heartbeat: `/start`, then success or `/fail` with the run's summary as
the body, never a secret; against a fake monitor that answers as healthchecks.io does."""

from __future__ import annotations

import pytest

from autoretto.notify import SUMMARY_LINES, run_summary
from tests.fakes import monitor_server
from tests.support import channel_toml, write_config

SECRET = "s3cr3t-hook-token-42"


@pytest.fixture
def monitor():
    fake = monitor_server.start()
    yield fake
    fake.close()


def test_a_run_that_needs_a_person_pings_fail_with_its_summary_and_no_secret(
    home, cli, monitor, monkeypatch
):
    # A secret that ends up inside an error message (here: in a folder's name).
    monkeypatch.setenv("AUTORETTO_HOOK_TOKEN", SECRET)
    channel = channel_toml("lofi", slots=("10:00",))
    pipeline = f'\n[channels.pipeline]\naudio = "folder"\nfolder = "tracks-{SECRET}"\n'
    notify = f'\n[notify]\nheartbeat_url = "{monitor.url}"\n'
    write_config(home, channel + pipeline, extra=notify)
    code, _, err = cli("run-due", now="2026-11-29T09:00:00Z")
    assert code == 1 and "making an episode failed" in err

    assert [p.kind for p in monitor.pings] == ["start", "fail"] and not monitor.refused
    start, fail = monitor.pings
    assert start.body == ""
    assert fail.method == "POST" and fail.content_type == "text/plain; charset=utf-8"
    lines = fail.body.splitlines()
    assert lines[0].startswith("autoretto run-due ")
    assert lines[0].endswith("at 2026-11-29T09:00:00Z: 1 channel checked, 0 decisions, 1 error")
    assert lines[-1].startswith("error: lofi: making an episode failed: the audio folder ")
    assert "tracks-*** of channel 'lofi' does not exist" in lines[-1]
    assert SECRET not in fail.body and monitor_server.CHECK not in fail.body


def test_a_good_run_pings_success_with_what_it_did(home, cli, clip, monitor):
    channel = channel_toml("lofi", slots=("10:00",))
    write_config(home, channel, extra=f'\n[notify]\nheartbeat_url = "{monitor.url}/"\n')
    cli("init")
    code, _, err = cli("episode", "add", "lofi", str(clip), "--title", "Rainy night")
    assert code == 0, err
    cli("run-due", now="2026-11-29T09:00:00Z")
    code, _, err = cli("run-due", now="2026-11-29T10:05:00Z")
    assert code == 0, err

    assert [p.kind for p in monitor.pings] == ["start", "success"] * 2
    body = monitor.pings[-1].body
    assert body.splitlines()[0].endswith(
        ": 1 channel checked, 1 decision, 0 errors, 1 request sent"
    )
    assert "lofi 2026-11-29T10:00 folder: posted (post 1)" in body


def test_the_summary_keeps_the_last_lines_masks_secrets_and_prints_no_escapes(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "AIzaSyTHE-KEY-ITSELF")
    decisions = [
        {
            "channel": "lofi",
            "slot": f"2026-11-{day:02d}T10:00",
            "platform": "youtube",
            "outcome": "failed",
            "reason": "\x1b[31mred\x1b[0m title\nwith a line break",
            "post_id": day,
        }
        for day in range(1, 31)
    ]
    report = {
        "run_id": "abc123",
        "now": "2026-11-30T10:05:00Z",
        "channels": 2,
        "decisions": decisions,
        "made": [],
        "notes": [f"note {n}" for n in range(30)],
        "held": None,
        "errors": [
            "jazz: ConnectionError: HTTPSConnectionPool(host='graph.example', port=443): Max "
            "retries exceeded with url: /v24.0/me?access_token=EAAB-the-token&fields=id",
            "jazz: gemini answered 400 for key AIzaSyTHE-KEY-ITSELF",
        ],
    }
    text = run_summary(report)
    lines = text.splitlines()
    assert len(lines) == 1 + SUMMARY_LINES
    assert lines[0] == (
        "autoretto run-due abc123 at 2026-11-30T10:05:00Z: 2 channels checked, 30 decisions,"
        " 2 errors"
    )
    assert lines[1] == "(23 earlier lines: see logs/run.log)"  # 62 lines, the last 39 kept
    assert lines[-2].endswith("/v24.0/me?access_token=***&fields=id")
    assert lines[-1] == "error: jazz: gemini answered 400 for key ***"
    assert "EAAB-the-token" not in text and "THE-KEY-ITSELF" not in text
    assert "\x1b" not in text
    assert "lofi 2026-11-30T10:00 youtube: failed (post 30) - red title with a line break" in text
