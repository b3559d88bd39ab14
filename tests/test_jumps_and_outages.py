"""Never twice under a clock that jumps, a journal folder that was read-only for a while, an
endpoint that was down, and an error nobody expected (issue 24), with real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.fakes import webhook_server
from tests.forked import run_command_forked, run_forked
from tests.support import outbox_sidecars
from tests.test_guards import setup

#: Every test here runs on the home's SQLite file and on PostgreSQL (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("store")


@pytest.fixture
def fake():
    server = webhook_server.start()
    yield server
    server.close()


def decided(cli, slot: str) -> dict[str, dict]:
    return {d["platform"]: d for d in cli.json("decisions") if d["slot"] == slot}


# -- the clock jumps -----------------------------------------------------------------------------


def test_a_run_an_hour_ahead_never_sends_a_post_still_in_flight_again(home, cli, clip, fake):
    """The endpoint stores the post only when its request finishes; a second run whose clock is
    an hour ahead (NTP after a suspend, another host) starts while the first is still sending.
    It leaves the first run's claim alone: one copy, and the first run records it."""
    setup(home, cli, clip, fake)
    fake.script.append("slow:release")  # stored when the test lets the request finish
    first = run_forked("run-due", "--json", now="2026-11-29T10:05:00Z")
    assert fake.arrived.wait(timeout=60), first.communicate()
    code, out, err = run_command_forked("run-due", "--json", now="2026-11-29T11:05:00Z")
    second = json.loads(out)
    assert fake.copies == [], "the first run's request finished before the second run ended"
    fake.release()  # the endpoint finishes the first run's request, within its timeout
    out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    assert len(fake.copies) == 1, "the post in flight was sent a second time"
    assert second["sent"] == [] and code == 0
    assert json.loads(out)["sent"] == [1]
    assert decided(cli, "2026-11-29T10:00")["webhook"]["outcome"] == "posted"


def test_a_run_that_sent_says_so_in_its_summary_json_and_ping(home, cli, clip, fake, pings):
    """Every request that went out is counted: the summary, --json and the monitor's body."""
    received, base = pings
    setup(home, cli, clip, fake, notify=f'heartbeat_url = "{base}/ping"\n')
    fake.drop_after("publish")  # it went out; its answer is lost
    code, out, _ = run_command_forked("run-due", now="2026-11-29T10:05:00Z")
    assert len(fake.copies) == 1
    assert "sent: 1 request went out (posts 1)" in out
    assert code != 0, "a run whose post may be live never ends with a quiet 0"
    path, end = received[-1]  # the end ping of the 10:05 run
    assert path == "/ping/fail"
    assert "1 request sent" in end.splitlines()[0]


def test_a_dead_runs_post_is_looked_for_only_once_its_request_must_have_ended(
    home, cli, clip, fake
):
    """A run killed while the endpoint still works on its request: the next run takes the slot
    at once (the process is gone), but asks the endpoint about the post only once the request's
    timeout has passed on its own clock; until then the slot waits, and nothing is sent."""
    setup(home, cli, clip, fake)
    fake.script.append("slow:release")  # stored when the test lets the request finish
    victim = run_forked("run-due", now="2026-11-29T10:05:00Z")
    assert fake.arrived.wait(timeout=60), victim.communicate()
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()

    code, out, err = run_command_forked(
        "run-due", "--no-wait", "--json", now="2026-11-29T11:05:00Z"
    )
    report = json.loads(out)
    assert report["sent"] == [], "a post of a dead run was sent again before it could be looked for"
    (post,) = cli.json("posts")
    assert post["state"] == "may_be_live"
    assert [w["slot"] for w in report["waiting"]] == ["2026-11-29T11:00"]
    assert fake.copies == []  # the endpoint still works on the dead run's request

    # The endpoint finishes with the dead run's request and stores the post.
    fake.release()
    assert _wait_for(lambda: len(fake.copies) == 1)
    code, out, err = run_command_forked("run-due", "--no-wait", now="2026-11-29T11:06:00Z")
    assert code == 0, (out, err)
    assert len(fake.copies) == 1
    (post,) = cli.json("posts")
    assert post["state"] == "published"


def _wait_for(condition, seconds: float = 30) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def test_an_unexpected_error_after_the_request_is_a_lost_answer_at_once(
    home, cli, clip, fake, monkeypatch
):
    """A KeyError while reading an answer (after the request went out) leaves no post `sending`
    until a take-over: it may be live at once, and it is looked for before anything is sent."""
    from autoretto.platforms.webhook import WebhookPlatform

    setup(home, cli, clip, fake)

    def broken(self, answer):
        raise KeyError("id")

    with monkeypatch.context() as patched:
        patched.setattr(WebhookPlatform, "_published", broken)
        code, _, _ = cli("run-due", now="2026-11-29T10:05:00Z")
    assert code != 0
    (post,) = cli.json("posts")
    assert post["state"] == "may_be_live"
    assert "unexpected KeyError" in post["reason"]
    cli("run-due", now="2026-11-29T11:05:00Z")
    assert len(fake.copies) == 1  # found by its marker, not sent again
    assert cli.json("posts")[0]["state"] == "published"


# -- a failure before anything went out keeps the slot owed ------------------------------------


@contextmanager
def read_only(folder: Path):
    """`folder` cannot be written for a while: a read-only bind mount (root ignores modes), or
    its write bits taken away for any other user."""
    if os.geteuid() != 0:
        mode = folder.stat().st_mode
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(mode)
        return
    try:
        subprocess.run(["mount", "--bind", str(folder), str(folder)], check=True)
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.fail(f"needs `mount --bind` as root to make {folder} read-only: {error}")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True)
        yield
    finally:
        subprocess.run(["umount", str(folder)], check=False)


def test_a_slot_lost_to_a_read_only_journal_folder_is_posted_once_it_is_writable(
    home, cli, clip, fake
):
    setup(home, cli, clip, fake, episodes=3, platforms=("webhook", "folder"),
          slots=("10:00", "14:00"))  # fmt: skip
    code, _, err = cli("run-due", now="2026-11-29T10:05:00Z")
    assert code == 0, err
    journal = Path(cli.json("journal")["journal"])

    with read_only(journal.parent):
        code, out, err = run_command_forked("run-due", now="2026-11-29T14:05:00Z")
    assert code == 4, (out, err)  # failed for now: the next run tries again
    assert "nothing was sent" in out
    assert decided(cli, "2026-11-29T14:00") == {}
    waiting = cli.json("status", now="2026-11-29T14:06:00Z")["waiting"]
    assert {w["platform"] for w in waiting if w["slot"] == "2026-11-29T14:00"} == {
        "webhook", "folder",
    }  # fmt: skip
    assert len(fake.copies) == 1

    code, out, err = run_command_forked("run-due", now="2026-11-29T14:20:00Z")
    assert code == 0, (out, err)
    outcomes = {p: d["outcome"] for p, d in decided(cli, "2026-11-29T14:00").items()}
    assert outcomes == {"webhook": "posted", "folder": "posted"}
    assert len(fake.copies) == 2
    assert [s["slot"] for s in outbox_sidecars(home)] == ["2026-11-29T10:00", "2026-11-29T14:00"]


def test_a_slot_whose_folder_stays_read_only_is_missed_with_the_reason_when_its_window_closes(
    home, cli, clip, fake
):
    setup(home, cli, clip, fake, platforms=("folder",), slots=("10:00", "14:00"))
    cli("run-due", now="2026-11-29T10:05:00Z")
    journal = Path(cli.json("journal")["journal"])
    with read_only(journal.parent):
        code, out, err = run_command_forked("run-due", now="2026-11-29T14:05:00Z")
        assert code == 4, (out, err)
        # The journal is now behind the attempt the database numbered: posting holds.
        code, out, err = run_command_forked("run-due", now="2026-11-29T15:05:00Z")
        assert code == 3 and "cannot be written" in err, (out, err)
        assert decided(cli, "2026-11-29T14:00") == {}
    code, out, err = run_command_forked("run-due", now="2026-11-29T16:05:00Z")
    assert code == 0, (out, err)
    (decision,) = decided(cli, "2026-11-29T14:00").values()
    assert decision["outcome"] == "missed"
    assert "catch-up window closed" in decision["reason"]
    assert "could not be written" in decision["reason"]


def test_a_slot_whose_endpoint_was_down_is_posted_when_it_is_back(home, cli, clip, fake):
    setup(home, cli, clip, fake, slots=("10:00", "14:00"))
    cli("run-due", now="2026-11-29T10:05:00Z")
    fake.go_down()
    code, out, err = run_command_forked("run-due", now="2026-11-29T14:05:00Z")
    assert code == 4, (out, err)
    assert "could not be reached" in out and "nothing was sent" in out
    assert decided(cli, "2026-11-29T14:00") == {}
    fake.come_back()
    code, out, err = run_command_forked("run-due", now="2026-11-29T14:20:00Z")
    assert code == 0, (out, err)
    assert decided(cli, "2026-11-29T14:00")["webhook"]["outcome"] == "posted"
    assert len(fake.copies) == 2
    posts = cli.json("posts")
    assert [p["attempts"] for p in posts] == [1, 1]  # the refused connection was no try


def test_the_monitor_hears_fail_whatever_escapes_the_run(home, cli, clip, fake, pings, monkeypatch):
    """An exception out of the run itself (here from registering the channels) still sends the
    monitor its fail ping, as borgmatic's monitoring context does from its exit."""
    from autoretto.engine import run_due

    received, base = pings
    setup(home, cli, clip, fake, notify=f'heartbeat_url = "{base}/ping"\n')
    received.clear()

    def broken(*args, **kwargs):
        raise RuntimeError("a bug while registering the channels")

    with monkeypatch.context() as patched:
        patched.setattr(run_due, "register_channels", broken)
        with pytest.raises(RuntimeError):
            cli("run-due", now="2026-11-29T10:05:00Z")
    assert [path for path, _ in received] == ["/ping/start", "/ping/fail"]
