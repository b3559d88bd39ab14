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
import time

import pytest

from tests.fakes import webhook_server
from tests.forked import run_forked
from tests.support import channel_toml, outbox_sidecars, write_config

CHANNELS = ("lofi", "jazz", "rain")


@pytest.fixture
def fake():
    server = webhook_server.start()
    yield server
    server.close()


def setup(home, cli, clip, fake, *, channels=("lofi",), episodes=2, platforms=("webhook",),
          notify: str = "", slots=("10:00", "11:00", "12:00")) -> None:  # fmt: skip
    blocks = [
        channel_toml(name, slots=slots).replace(
            'platforms = ["folder"]', f"platforms = {json.dumps(platforms)}"
        )
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


@pytest.mark.usefixtures("store")  # on the SQLite file and on PostgreSQL
def test_lost_answer_is_found_not_sent_again(home, cli, clip, fake):
    setup(home, cli, clip, fake)
    fake.script.append("drop")  # the endpoint takes the post, then the connection drops
    code, _, _ = cli("run-due", now="2026-11-29T10:05:00Z")
    assert code == 1  # a post that may be live: a person looks (the next run looks too)
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
    # Each 5xx came after the request went out: the endpoint is asked before the next try.
    assert [r.method for r in fake.requests] == ["POST", "GET", "POST", "GET", "POST"]
    assert len(fake.publishes) == 1


def test_a_refusal_that_needs_a_person_is_not_retried_and_is_told(home, cli, clip, fake):
    setup(home, cli, clip, fake)
    fake.script.append("status:401")
    code, _, _ = cli("run-due", now="2026-11-29T10:05:00Z")
    assert code == 1  # the post waits for a person
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
    codes = [cli("run-due", now=f"2026-11-29T{hour}:05:00Z")[0] for hour in (10, 11, 12)]
    assert codes == [4, 4, 1]  # failed for now, twice; then it needs a person
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
    assert paths[-3:] == ["/ping/start", "/alerts", "/ping/fail"]  # a person must look
    alert = json.loads(dict(received)["/alerts"])
    assert alert["event"] == "post_needs_person"


def crash_points():
    return [
        "after_claim", "before_send", "in_flight", "after_send", "after_publish_recorded",
        "before_stamp",
    ]  # fmt: skip


@pytest.mark.parametrize("point", crash_points())
@pytest.mark.usefixtures("store")  # on the SQLite file and on PostgreSQL
def test_crash_matrix_one_publish_whatever_the_crash(home, cli, clip, fake, point):
    """kill -9 at each step; the next run after the stale time finishes the slot."""
    setup(home, cli, clip, fake)
    if point == "in_flight":
        fake.script.append("hold")
        victim = run_forked("run-due", now="2026-11-29T10:05:00Z")
        assert fake.holding.wait(timeout=60), victim.communicate()
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        fake.release()
    else:
        victim = run_forked(
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
    assert code == 3
    assert "POSTING IS HELD" in err
    assert len(fake.publishes) == 1
    assert [e["event"] for e in events(home)].count("posting_held") == 1
    status = cli.json("status", now="2026-11-29T11:06:00Z")
    assert "restored" in status["held"]
    code, _, err = cli("post-now", "lofi")
    assert code == 3 and "held" in err
    assert len(fake.publishes) == 1

    report = cli.json("journal")
    assert [e["kind"] for e in report["missing"]] == ["attempt", "publish", "stamp"]
    assert report["missing"][0]["episode_id"] == 1
    code, out, _ = cli("journal")
    assert "sent episode 1 (lofi) to webhook: it may be there" in out
    assert "published episode 1 (lofi) on webhook: https://videos.example/v1" in out

    code, _, err = cli("resume")
    assert code == 2 and "--checked" in err
    code, out, err = cli("resume", "--checked")
    assert code == 0, err
    assert "wrote 3 journal entries back" in out

    cli("run-due", now="2026-11-29T11:10:00Z")
    cli("run-due", now="2026-11-29T12:05:00Z")
    episodes_sent = [p.metadata["episode_id"] for p in fake.publishes]
    assert episodes_sent == [1, 2, 3], "an episode went out twice"


@pytest.mark.usefixtures("store")  # on the SQLite file and on PostgreSQL
def test_sixteen_processes_of_run_due_and_post_now_never_duplicate(home, cli, clip, fake):
    setup(home, cli, clip, fake, channels=CHANNELS, episodes=3, platforms=("webhook", "folder"))
    now = "2026-11-29T11:45:00Z"
    runs = [run_forked("run-due", now=now) for _ in range(12)]
    runs += [run_forked("post-now", name, now=now) for name in (*CHANNELS, "lofi")]
    for run in runs:
        run.communicate(timeout=180)
    per_post: dict[int, int] = {}
    for copy in fake.copies:
        per_post[copy["post_id"]] = per_post.get(copy["post_id"], 0) + 1
    assert per_post and max(per_post.values()) == 1, per_post
    for name in CHANNELS:
        sidecars = outbox_sidecars(home, name)
        assert len({s["post_id"] for s in sidecars}) == len(sidecars)
    decisions = cli.json("decisions")
    keys = [(d["channel"], d["slot"], d["platform"]) for d in decisions]
    assert len(keys) == len(set(keys))
    # Every due slot is decided, or waits (an answer the load made time out is asked about
    # only once the endpoint had the time to store it): none is lost.
    due = {(d["channel"], d["platform"]) for d in decisions if d["slot"].endswith("11:00")}
    waiting = cli.json("status", now=now)["waiting"]
    due |= {(w["channel"], w["platform"]) for w in waiting if w["slot"].endswith("11:00")}
    assert due == {(c, p) for c in CHANNELS for p in ("webhook", "folder")}
    for post in cli.json("posts"):
        assert post["state"] in ("published", "queued", "may_be_live"), post


@pytest.mark.usefixtures("store")  # on the SQLite file and on PostgreSQL
def test_a_stale_sending_post_is_looked_for_before_another_try(home, cli, clip, fake):
    """The 'sending' state is never picked up by another live run, only once it is stale."""
    setup(home, cli, clip, fake)
    fake.script.append("hold")
    victim = run_forked("run-due", now="2026-11-29T10:05:00Z")
    assert fake.holding.wait(timeout=60)
    # While the first run is alive (fresh heartbeat), a post-now leaves its post alone.
    code, out, _ = cli("post-now", "lofi", "--episode", "1", now="2026-11-29T10:06:00Z")
    assert code == 4 and "being sent by another run" in out
    fake.release()
    victim.communicate(timeout=60)
    assert victim.returncode == 0
    assert len(fake.publishes) == 1
    assert cli.json("posts")[0]["state"] == "published"


# -- never twice, proven from outside (issue 15) ---------------------------------------------


def copies_per_episode(fake) -> dict[str, int]:
    """What a person sees on the endpoint: copies of each episode, told apart by title."""
    counted: dict[str, int] = {}
    for copy in fake.copies:
        title = copy["metadata"]["title"]
        counted[title] = counted.get(title, 0) + 1
    return counted


def held_resumed_and_posted_once(cli, fake) -> None:
    """After a restore that forgot episode 0's publish: posting holds, a person resumes, and
    every episode then goes out exactly once."""
    code, _, err = cli("run-due", now="2026-11-29T11:05:00Z")
    assert code == 3 and "POSTING IS HELD" in err
    assert copies_per_episode(fake) == {"lofi 0": 1}
    code, _, err = cli("resume", "--checked")
    assert code == 0, err
    for moment in ("2026-11-29T11:10:00Z", "2026-11-29T12:05:00Z", "2026-11-30T10:05:00Z"):
        code, _, err = cli("run-due", now=moment)
        assert code == 0, err
    assert copies_per_episode(fake) == {"lofi 0": 1, "lofi 1": 1, "lofi 2": 1}


def journal_lines(path: str) -> list[str]:
    with open(path, encoding="utf-8") as reader:
        return reader.read().splitlines()


def restore_database(home, backup_file) -> None:
    for suffix in ("", "-wal", "-shm"):
        (home / f"autoretto.db{suffix}").unlink(missing_ok=True)
    shutil.copy(backup_file, home / "autoretto.db")


@pytest.mark.parametrize("honour", [True, False], ids=["key honoured", "key ignored"])
def test_an_endpoint_that_stores_then_answers_500_gets_one_copy(home, cli, clip, fake, honour):
    """Case 1: the endpoint takes the post and answers 500, every time it is asked to."""
    setup(home, cli, clip, fake, episodes=3)
    fake.honour_keys = honour
    fake.script.extend(["store:500"] * 3)
    for hour in (10, 11, 12):
        code, _, err = cli("run-due", now=f"2026-11-29T{hour}:05:00Z")
        assert code == 0, err
    assert copies_per_episode(fake) == {"lofi 0": 1, "lofi 1": 1, "lofi 2": 1}
    first = cli.json("posts")[0]
    assert (first["state"], first["url"]) == ("published", "https://videos.example/v1")
    # The 500 was asked about before anything else was sent: found, so no second POST.
    assert [r.method for r in fake.requests[:3]] == ["POST", "GET", "POST"]
    outcomes = [(d["slot"][-5:], d["outcome"]) for d in cli.json("decisions")]
    assert outcomes == [("10:00", "posted"), ("11:00", "posted"), ("12:00", "posted")]


@pytest.mark.parametrize("how", ["chunked", "gzip"])
def test_a_broken_answer_after_the_request_went_out_is_a_lost_answer(home, cli, clip, fake, how):
    """Case 2: 201 with a broken body; the client error came after the request went out."""
    setup(home, cli, clip, fake, episodes=2)
    fake.script.append(f"broken:{how}")
    code, _, err = cli("run-due", now="2026-11-29T10:05:00Z")
    assert code == 1, err  # may be live: a person looks (the next run looks too)
    (post,) = cli.json("posts")
    assert post["state"] == "may_be_live", post
    assert len(fake.publishes) == 1
    cli("run-due", now="2026-11-29T11:05:00Z")
    assert copies_per_episode(fake) == {"lofi 0": 1}
    assert [p["state"] for p in cli.json("posts")] == ["published"]
    cli("run-due", now="2026-11-29T12:05:00Z")
    assert copies_per_episode(fake) == {"lofi 0": 1, "lofi 1": 1}


def test_the_marker_is_the_posts_content_and_the_same_on_every_try(home, cli, clip, fake):
    """The Idempotency-Key is derived from what is posted and where, never from row ids."""
    setup(home, cli, clip, fake, episodes=1)
    fake.script.extend(["status:503", "status:503"])
    cli("run-due", now="2026-11-29T10:05:00Z")
    keys = {r.marker for r in fake.requests if r.method == "POST"}
    assert len(keys) == 1, keys
    (key,) = keys
    assert key.startswith("autoretto-") and "-1-" not in key  # no post id, no attempt number
    (copy,) = fake.copies
    assert copy["metadata"]["marker"] == key


def test_a_crash_between_the_publish_and_its_journal_line_then_a_restore(home, cli, clip, fake):
    """Case 4: the publish is committed, the process dies before its journal line, and the
    database is then put back from a copy made before that publish."""
    setup(home, cli, clip, fake, episodes=3)
    backup(home, home.parent / "before.db")
    victim = run_forked(
        "run-due", now="2026-11-29T10:05:00Z", env={"AUTORETTO_FAULT": "before_journal:kill"}
    )
    victim.communicate(timeout=60)
    assert victim.returncode == -signal.SIGKILL
    assert copies_per_episode(fake) == {"lofi 0": 1}
    restore_database(home, home.parent / "before.db")
    held_resumed_and_posted_once(cli, fake)


def test_a_crash_before_the_journal_line_is_noticed_and_the_line_written(home, cli, clip, fake):
    """The same crash without a restore: the next run writes the missing line; nothing holds."""
    setup(home, cli, clip, fake, episodes=2)
    victim = run_forked(
        "run-due", now="2026-11-29T10:05:00Z", env={"AUTORETTO_FAULT": "before_journal:kill"}
    )
    victim.communicate(timeout=60)
    assert victim.returncode == -signal.SIGKILL
    code, _, err = cli("run-due", now="2026-11-29T10:30:00Z")
    assert code == 0, err
    report = cli.json("journal")
    assert report["held"] is None
    assert report["journal_seq"] == report["database_seq"]
    kinds = [json.loads(line)["kind"] for line in journal_lines(report["journal"])]
    assert kinds.count("publish") == 1
    cli("run-due", now="2026-11-29T11:05:00Z")
    assert copies_per_episode(fake) == {"lofi 0": 1, "lofi 1": 1}


def test_confirm_while_held_is_refused_and_resume_writes_back_every_publish(home, cli, clip, fake):
    """Case 5: `confirm --live` on a restored database must not take a journal number."""
    setup(home, cli, clip, fake, episodes=3)
    fake.script.append("status:401")
    cli("run-due", now="2026-11-29T10:05:00Z")  # episode 1 needs a person
    first = cli.json("posts")[0]
    assert first["state"] == "needs_person"
    backup(home, home.parent / "ten.db")
    cli("run-due", now="2026-11-29T11:05:00Z")  # episode 2 goes out
    assert copies_per_episode(fake) == {"lofi 1": 1}
    restore_database(home, home.parent / "ten.db")

    code, _, err = cli("confirm", str(first["id"]), "--live", "https://videos.example/by-hand")
    assert code == 3 and "held" in err, err
    code, _, err = cli("resume", "--checked")
    assert code == 0, err
    code, out, err = cli("confirm", str(first["id"]), "--live", "https://videos.example/by-hand")
    assert code == 0 and "published" in out, err
    for hour in (12, 13):
        cli("run-due", now=f"2026-11-29T{hour}:05:00Z")
    cli("run-due", now="2026-11-30T10:05:00Z")
    assert copies_per_episode(fake) == {"lofi 1": 1, "lofi 2": 1}
    report = cli.json("journal")
    numbers = [json.loads(line)["seq"] for line in journal_lines(report["journal"])]
    assert numbers == sorted(set(numbers)), "a journal number was used twice"


def test_the_whole_home_restored_from_a_backup_holds_posting(home, cli, clip, fake):
    """Case 6: the most common restore there is; the journal is not in the home by default."""
    setup(home, cli, clip, fake, episodes=3)
    saved = home.parent / "home-backup"
    shutil.copytree(home, saved)
    cli("run-due", now="2026-11-29T10:05:00Z")
    assert copies_per_episode(fake) == {"lofi 0": 1}
    shutil.rmtree(home)
    shutil.copytree(saved, home)
    held_resumed_and_posted_once(cli, fake)


def test_after_a_restore_every_post_is_looked_for_before_its_first_send(home, cli, clip, fake):
    """The database is put back and the journal is lost with it: posting holds, and after
    `resume` a publish nobody remembers is found on the endpoint by its content."""
    setup(home, cli, clip, fake, episodes=3)
    cli("run-due", now="2026-11-29T10:05:00Z")
    backup(home, home.parent / "ten.db")
    cli("run-due", now="2026-11-29T11:05:00Z")
    assert copies_per_episode(fake) == {"lofi 0": 1, "lofi 1": 1}
    report = cli.json("journal")
    restore_database(home, home.parent / "ten.db")
    os.unlink(report["journal"])

    code, _, err = cli("run-due", now="2026-11-29T11:06:00Z")
    assert code == 3 and "POSTING IS HELD" in err and "journal" in err
    code, _, err = cli("resume", "--checked")
    assert code == 0, err
    looked = len([r for r in fake.requests if r.method == "GET"])
    cli("run-due", now="2026-11-29T12:05:00Z")
    cli("run-due", now="2026-11-30T10:05:00Z")
    assert copies_per_episode(fake) == {"lofi 0": 1, "lofi 1": 1, "lofi 2": 1}
    assert len([r for r in fake.requests if r.method == "GET"]) > looked


def test_a_folder_post_cannot_be_written_twice_even_when_nothing_can_tell(home, cli, clip):
    """The outbox file name is the post's identity: a database restored together with a
    journal kept beside it in the home (nothing notices the restore) still leaves one copy."""
    write_config(home, 'journal = "journal/publish.journal"\n', channel_toml())
    cli("init")
    code, _, err = cli("episode", "add", "lofi", str(clip), "--title", "Only one")
    assert code == 0, err
    cli("run-due", now="2026-11-29T09:00:00Z")
    saved = home.parent / "home-backup"
    shutil.copytree(home, saved)
    cli("run-due", now="2026-11-29T10:05:00Z")
    for name in ("autoretto.db", "autoretto.db-wal", "autoretto.db-shm", "journal"):
        target = home / name
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
        if (saved / name).is_dir():
            shutil.copytree(saved / name, target)
        elif (saved / name).exists():
            shutil.copy(saved / name, target)
    code, _, err = cli("run-due", now="2026-11-29T11:05:00Z")
    assert code == 0, err
    assert len(outbox_sidecars(home)) == 1
    (post,) = cli.json("posts")
    assert post["state"] == "published"


def test_a_slot_busy_with_a_post_now_waits_and_is_posted_once_the_platform_is_free(
    home, cli, clip, fake
):
    """A post-now on its way when cron serves the slot: the slot waits (shown in status),
    and is posted when the platform is free, inside its window."""
    setup(home, cli, clip, fake, episodes=3)
    fake.script.append("hold")
    pressed = run_forked("post-now", "lofi", now="2026-11-29T10:01:00Z")
    assert fake.holding.wait(timeout=60), pressed.communicate()
    code, out, err = cli("run-due", "--no-wait", now="2026-11-29T10:05:00Z")
    assert code == 0, err
    assert "lofi 2026-11-29T10:00 webhook: waiting" in out
    assert [d for d in cli.json("decisions") if d["platform"] == "webhook"] == []
    status = cli.json("status", now="2026-11-29T10:06:00Z")
    (waiting,) = status["waiting"]
    assert (waiting["slot"], waiting["platform"]) == ("2026-11-29T10:00", "webhook")
    assert "being sent" in waiting["reason"]
    assert status["channels"][0]["recent"][-1]["state"] == "waiting"

    fake.release()
    pressed.communicate(timeout=60)
    assert pressed.returncode == 0
    cli("run-due", "--no-wait", now="2026-11-29T10:20:00Z")
    (decision,) = [d for d in cli.json("decisions") if d["platform"] == "webhook"]
    assert (decision["slot"], decision["outcome"]) == ("2026-11-29T10:00", "posted")
    assert copies_per_episode(fake) == {"lofi 0": 1, "lofi 1": 1}
    assert cli.json("status", now="2026-11-29T10:21:00Z")["waiting"] == []


def test_a_slot_that_waits_until_its_window_closes_is_missed_with_the_reason(home, cli, clip, fake):
    setup(home, cli, clip, fake, episodes=3, slots=("10:00",))
    fake.script.append("hold")
    pressed = run_forked("post-now", "lofi", now="2026-11-29T10:01:00Z")
    assert fake.holding.wait(timeout=60), pressed.communicate()
    cli("run-due", "--no-wait", now="2026-11-29T10:05:00Z")
    # Still on its way at 12:30: the 10:00 slot's window closed at 12:00 while it waited.
    cli("run-due", "--no-wait", now="2026-11-29T12:30:00Z")
    fake.release()
    pressed.communicate(timeout=60)
    (ten,) = [d for d in cli.json("decisions") if d["slot"].endswith("10:00")]
    assert ten["outcome"] == "missed"
    assert "waited" in ten["reason"] and "2h catch-up window closed" in ten["reason"]
    assert cli.json("status", now="2026-11-29T12:31:00Z")["waiting"] == []
    assert max(copies_per_episode(fake).values()) == 1


def test_an_answer_that_timed_out_is_not_looked_for_before_the_endpoint_could_store_it(
    home, cli, clip, fake
):
    """The endpoint takes longer than the timeout to store the post: a look right away would
    find nothing and send a second copy."""
    setup(home, cli, clip, fake, episodes=2)
    (home / "autoretto.toml").write_text(
        (home / "autoretto.toml").read_text().replace("timeout = 10", "timeout = 1")
    )
    fake.script.append("slow:release")  # stored when the test lets the request finish
    code, _, err = cli("run-due", now="2026-11-29T10:05:00Z")
    assert code == 1, err  # may be live
    assert cli.json("posts")[0]["state"] == "may_be_live"
    (post,) = cli.json("posts")
    code, out, _ = cli("look", str(post["id"]), now="2026-11-29T10:05:30Z")  # too early to ask
    assert code == 4 and "asked about it from 2026-11-29T10:06:01Z" in out  # try again later
    assert "GET" not in [r.method for r in fake.requests]
    assert fake.copies == []  # the endpoint still works on the request the client gave up on
    fake.release()
    for _ in range(1000):  # the endpoint finishes storing it, in its own time
        if fake.copies:
            break
        time.sleep(0.005)
    cli("run-due", now="2026-11-29T11:05:00Z")
    assert [p["state"] for p in cli.json("posts")] == ["published"]
    assert copies_per_episode(fake) == {"lofi 0": 1}
    assert [r.method for r in fake.requests] == ["POST", "GET"]


def test_the_journal_lives_outside_the_home_and_doctor_says_where_it_is_weak(home, cli):
    write_config(home, channel_toml())
    cli("init")
    facts = cli.json("doctor")
    journal_path = facts["journal"]["path"]
    assert not journal_path.startswith(str(home))
    assert "/state/autoretto/" in journal_path and journal_path.endswith("publish.journal")
    # The tests' state folder sits on the same disk as the home: doctor says so, and it is a
    # warning, not a problem.
    assert any("same file system as the database" in w for w in facts["warnings"])
    assert facts["problems"] == []

    write_config(home, 'journal = "journal/publish.journal"\n', channel_toml())
    facts = cli.json("doctor")
    assert facts["journal"]["path"] == str(home / "journal" / "publish.journal")
    assert any("inside the home" in w for w in facts["warnings"])
    code, out, _ = cli("doctor")
    assert code == 0 and "warning   the publish journal" in out


def test_an_old_journal_in_the_home_is_taken_along_when_it_moves_out(home, cli, clip, fake):
    """An installation from before the move: its journal is copied to the new place once, so
    nothing holds and nothing is forgotten."""
    setup(home, cli, clip, fake, episodes=2)
    cli("run-due", now="2026-11-29T10:05:00Z")
    report = cli.json("journal")
    new_place = report["journal"]
    old_place = home / "journal" / "publish.journal"
    old_place.parent.mkdir()
    shutil.move(new_place, old_place)
    report = cli.json("journal")
    assert report["held"] is None and report["journal_seq"] == report["database_seq"] > 0
    assert os.path.exists(new_place) and old_place.exists()


def test_a_slot_that_waited_is_missed_once_a_later_slot_is_served_on_its_platform(
    home, cli, clip, fake
):
    """Only the most recent slot of a platform is ever filled: a waiting 10:00 does not go
    out after 11:00 did."""
    setup(home, cli, clip, fake, episodes=3)
    fake.script.append("hold")
    pressed = run_forked("post-now", "lofi", now="2026-11-29T10:01:00Z")
    assert fake.holding.wait(timeout=60), pressed.communicate()
    cli("run-due", "--no-wait", now="2026-11-29T10:05:00Z")
    assert [w["slot"] for w in cli.json("status", now="2026-11-29T10:06:00Z")["waiting"]] == [
        "2026-11-29T10:00"
    ]
    # 11:05: the post-now's run is still alive (its clock says 10:01): 11:00 waits too.
    code, _, err = cli("run-due", "--no-wait", now="2026-11-29T11:05:00Z")
    assert code == 0, err
    assert len(fake.publishes) == 1
    fake.release()
    pressed.communicate(timeout=60)
    code, _, err = cli("run-due", "--no-wait", now="2026-11-29T11:10:00Z")
    assert code == 0, err
    found = {d["slot"][-5:]: d for d in cli.json("decisions") if d["platform"] == "webhook"}
    assert found["11:00"]["outcome"] == "posted"
    assert found["10:00"]["outcome"] == "missed"
    assert "later slot 2026-11-29T11:00" in found["10:00"]["reason"]
    assert max(copies_per_episode(fake).values()) == 1
