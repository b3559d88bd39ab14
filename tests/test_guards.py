"""Once and only once (issue 4): lost answers, retries, refusals, crashes, restores, races.

The platform is the webhook adapter talking to a fake endpoint on 127.0.0.1 that records every
request; "publishes" are the requests the endpoint took, whatever it answered.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.fakes import webhook_server
from tests.support import channel_toml, outbox_sidecars, run_process, write_config

CHANNELS = ("lofi", "jazz", "rain")


@pytest.fixture
def fake():
    server = webhook_server.start()
    yield server
    server.close()


@pytest.fixture
def pings():
    """A recorder for the notifier's webhook and heartbeat: list of (path, body)."""
    received: list[tuple[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
            received.append((self.path, body))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    received_url = f"http://127.0.0.1:{server.server_address[1]}"
    yield received, received_url
    server.shutdown()
    server.server_close()


def setup(home, cli, clip, fake, *, channels=("lofi",), episodes=2, platforms=("webhook",),
          notify: str = "") -> None:  # fmt: skip
    blocks = [
        channel_toml(name).replace('platforms = ["folder"]', f"platforms = {json.dumps(platforms)}")
        for name in channels
    ]
    extra = (
        f'\n[platforms.webhook]\nurl = "{fake.url}"\ntimeout = 10\n'
        '\n[retry]\nattempts = 3\nfirst_wait = "0s"\n'
        f"\n[notify]\ncommand = \"sh -c 'cat >> {home}/events.jsonl; "
        f"echo >> {home}/events.jsonl'\"\n"
        f"{notify}"
    )
    write_config(home, *blocks, extra=extra)
    code, _, err = cli("init")
    assert code == 0, err
    for name in channels:
        for number in range(episodes):
            code, _, err = cli("episode", "add", name, str(clip), "--title", f"{name} {number}")
            assert code == 0, err
    cli("run-due", now="2026-11-29T09:00:00Z")


def events(home) -> list[dict]:
    path = home / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_lost_answer_is_found_not_sent_again(home, cli, clip, fake):
    setup(home, cli, clip, fake)
    fake.script.append("drop")  # the endpoint takes the post, then the connection drops
    code, _, _ = cli("run-due", now="2026-11-29T10:05:00Z")
    assert code == 0
    (post,) = cli.json("posts")
    assert post["state"] == "may_be_live"
    assert len(fake.publishes) == 1

    code, _, err = cli("run-due", now="2026-11-29T11:05:00Z")
    assert code == 0, err
    (post,) = cli.json("posts")
    assert post["state"] == "published"
    assert post["url"] == "https://videos.example/v1"
    assert len(fake.publishes) == 1, "a second publish request was sent"
    assert [r.method for r in fake.requests] == ["POST", "GET"]
    outcomes = [(d["slot"][-5:], d["outcome"]) for d in cli.json("decisions")]
    assert outcomes == [("10:00", "failed"), ("11:00", "posted")]


def test_look_by_hand_finds_the_lost_answer(home, cli, clip, fake):
    setup(home, cli, clip, fake)
    fake.script.append("drop")
    cli("run-due", now="2026-11-29T10:05:00Z")
    (post,) = cli.json("posts")
    code, out, err = cli("look", str(post["id"]), now="2026-11-29T10:20:00Z")
    assert code == 0, err
    assert "found on Webhook" in out
    assert len(fake.publishes) == 1
    assert cli.json("posts")[0]["state"] == "published"


def test_passing_errors_are_retried_inside_the_job(home, cli, clip, fake):
    setup(home, cli, clip, fake)
    fake.script.extend(["status:503", "status:503"])
    code, _, err = cli("run-due", now="2026-11-29T10:05:00Z")
    assert code == 0, err
    (post,) = cli.json("posts")
    assert (post["state"], post["attempts"]) == ("published", 1)
    assert [r.method for r in fake.requests] == ["POST", "POST", "POST"]
    assert len(fake.publishes) == 1


def test_a_refusal_that_needs_a_person_is_not_retried_and_is_told(home, cli, clip, fake):
    setup(home, cli, clip, fake)
    fake.script.append("status:401")
    code, _, _ = cli("run-due", now="2026-11-29T10:05:00Z")
    assert code == 0  # the run did its job; the post waits for a person
    (post,) = cli.json("posts")
    assert post["state"] == "needs_person"
    assert "HTTP 401" in post["reason"]
    assert len(fake.requests) == 1
    told = [e for e in events(home) if e["event"] == "post_needs_person"]
    assert told and told[0]["post_id"] == post["id"]
    # No later slot keeps trying it: the next episode goes instead.
    cli("run-due", now="2026-11-29T11:05:00Z")
    assert [p["state"] for p in cli.json("posts")] == ["needs_person", "published"]
    # A person fixed it and says it is not live: it is sent on the next slot.
    code, out, _ = cli("confirm", str(post["id"]), "--not-live")
    assert code == 0 and "queued" in out
    cli("run-due", now="2026-11-29T12:05:00Z")
    assert [p["state"] for p in cli.json("posts")] == ["published", "published"]


def test_three_failures_in_a_row_need_a_person_and_open_one_incident(home, cli, clip, fake):
    setup(home, cli, clip, fake, episodes=2)
    fake.script.extend(["status:500"] * 9)  # attempts = 3 per run: each run fails once
    for hour in (10, 11, 12):
        code, _, _ = cli("run-due", now=f"2026-11-29T{hour}:05:00Z")
        assert code == 0
    first, *_ = cli.json("posts")
    assert (first["state"], first["attempts"]) == ("needs_person", 3)
    (incident,) = cli.json("incidents")
    assert incident["closed_at"] is None
    assert [e["event"] for e in events(home)].count("incident_opened") == 1
    cli("run-due", now="2026-11-30T10:05:00Z")  # the next episode goes out: it closes
    assert cli.json("incidents") == []
    (closed,) = cli.json("incidents", "--all")
    assert closed["closed_at"] == "2026-11-30T10:05:00Z"


def test_heartbeat_pings_and_webhook_notifications(home, cli, clip, fake, pings):
    received, base = pings
    setup(
        home, cli, clip, fake,
        notify=f'webhook = "{base}/alerts"\nheartbeat_url = "{base}/ping"\n',
    )  # fmt: skip
    fake.script.append("status:403")
    cli("run-due", now="2026-11-29T10:05:00Z")
    paths = [path for path, _ in received]
    assert paths[-3:] == ["/ping/start", "/alerts", "/ping"]
    alert = json.loads(dict(received)["/alerts"])
    assert alert["event"] == "post_needs_person"


def crash_points():
    return [
        "after_claim", "before_send", "in_flight", "after_send", "after_publish_recorded",
        "before_stamp",
    ]  # fmt: skip


@pytest.mark.parametrize("point", crash_points())
def test_crash_matrix_one_publish_whatever_the_crash(home, cli, clip, fake, point):
    """kill -9 at each step; the next run after the stale time finishes the slot."""
    setup(home, cli, clip, fake)
    if point == "in_flight":
        fake.script.append("hold")
        victim = run_process("run-due", now="2026-11-29T10:05:00Z")
        assert fake.holding.wait(timeout=60), victim.communicate()
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        fake.release()
    else:
        victim = run_process(
            "run-due", now="2026-11-29T10:05:00Z", env={"AUTORETTO_FAULT": f"{point}:kill"}
        )
        victim.communicate(timeout=60)
    assert victim.returncode == -signal.SIGKILL

    code, _, err = cli("run-due", now="2026-11-29T10:25:00Z")
    assert code == 0, err
    assert len(fake.publishes) == 1, f"{point}: {len(fake.publishes)} publishes"
    (decision,) = cli.json("decisions")
    assert (decision["slot"], decision["outcome"]) == ("2026-11-29T10:00", "posted")
    posts = cli.json("posts")
    assert [(p["episode_id"], p["state"]) for p in posts] == [(1, "published")]
    status = cli.json("status", now="2026-11-29T10:26:00Z")["channels"][0]
    assert status["stamp"] == "2026-11-29T10:00:00Z" and status["claim"] is None
    # And nothing more happens for that slot.
    cli("run-due", now="2026-11-29T10:40:00Z")
    assert len(fake.publishes) == 1


def backup(home, target) -> None:
    source = sqlite3.connect(home / "autoretto.db")
    copy = sqlite3.connect(target)
    source.backup(copy)
    copy.close()
    source.close()


def test_a_restored_database_holds_posting_until_resume(home, cli, clip, fake):
    setup(home, cli, clip, fake, episodes=3)
    backup(home, home.parent / "last-week.db")
    cli("run-due", now="2026-11-29T10:05:00Z")
    assert len(fake.publishes) == 1

    # Put last week's copy back.
    for suffix in ("", "-wal", "-shm"):
        (home / f"autoretto.db{suffix}").unlink(missing_ok=True)
    shutil.copy(home.parent / "last-week.db", home / "autoretto.db")

    code, out, err = cli("run-due", now="2026-11-29T11:05:00Z")
    assert code == 1
    assert "POSTING IS HELD" in err
    assert len(fake.publishes) == 1
    assert [e["event"] for e in events(home)].count("posting_held") == 1
    status = cli.json("status", now="2026-11-29T11:06:00Z")
    assert "restored" in status["held"]
    code, _, err = cli("post-now", "lofi")
    assert code == 1 and "held" in err
    assert len(fake.publishes) == 1

    report = cli.json("journal")
    assert [e["kind"] for e in report["missing"]] == ["publish", "stamp"]
    assert report["missing"][0]["episode_id"] == 1

    code, _, err = cli("resume")
    assert code == 2 and "--checked" in err
    code, out, err = cli("resume", "--checked")
    assert code == 0, err
    assert "wrote 2 journal entries back" in out

    cli("run-due", now="2026-11-29T11:10:00Z")
    cli("run-due", now="2026-11-29T12:05:00Z")
    episodes_sent = [p.metadata["episode_id"] for p in fake.publishes]
    assert episodes_sent == [1, 2, 3], "an episode went out twice"


def test_sixteen_processes_of_run_due_and_post_now_never_duplicate(home, cli, clip, fake):
    setup(home, cli, clip, fake, channels=CHANNELS, episodes=3, platforms=("webhook", "folder"))
    now = "2026-11-29T11:45:00Z"
    runs = [run_process("run-due", now=now) for _ in range(12)]
    runs += [run_process("post-now", name, now=now) for name in (*CHANNELS, "lofi")]
    for run in runs:
        run.communicate(timeout=180)
    per_post: dict[int, int] = {}
    for stored in fake.stored.values():
        per_post[stored["post_id"]] = per_post.get(stored["post_id"], 0) + 1
    assert per_post and max(per_post.values()) == 1, per_post
    for name in CHANNELS:
        sidecars = outbox_sidecars(home, name)
        assert len({s["post_id"] for s in sidecars}) == len(sidecars)
    decisions = cli.json("decisions")
    keys = [(d["channel"], d["slot"], d["platform"]) for d in decisions]
    assert len(keys) == len(set(keys))
    due = {(d["channel"], d["platform"]) for d in decisions if d["slot"].endswith("11:00")}
    assert due == {(c, p) for c in CHANNELS for p in ("webhook", "folder")}
    for post in cli.json("posts"):
        assert post["state"] in ("published", "queued"), post


def test_a_stale_sending_post_is_looked_for_before_another_try(home, cli, clip, fake):
    """The 'sending' state is never picked up by another live run, only once it is stale."""
    setup(home, cli, clip, fake)
    fake.script.append("hold")
    victim = run_process("run-due", now="2026-11-29T10:05:00Z")
    assert fake.holding.wait(timeout=60)
    # While the first run is alive (fresh heartbeat), a post-now leaves its post alone.
    code, out, _ = cli("post-now", "lofi", "--episode", "1", now="2026-11-29T10:06:00Z")
    assert code == 1 and "being sent by another run" in out
    fake.release()
    victim.communicate(timeout=60)
    assert victim.returncode == 0
    assert len(fake.publishes) == 1
    assert cli.json("posts")[0]["state"] == "published"
