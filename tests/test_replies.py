"""Replies (issue 28) beyond the contract table: run-due's sessions at a person's pace, the
gates, the identity, `replies` on the command line, and the race of two cron runs and a
person's "send" over one approved reply."""

from __future__ import annotations

import itertools
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from autoretto import pace
from autoretto.clock import from_iso, iso, parse_instant
from autoretto.engine.run import pace_seed
from autoretto.platforms.bluesky import BlueskyPlatform
from autoretto.replies import approve, gate_problems, reply_identity
from tests.contract.replies import COMMENTED_AT, ROWS, ReplyHome, insert_comment
from tests.support import run_process, snapshot

BLUESKY = ROWS[0]
DAY = parse_instant("2026-11-30T00:00:00Z")


@pytest.fixture
def replies_home(home: Path, clip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("AUTORETTO_VAULT", "file")  # processes of their own open the vault too
    fake = BLUESKY.post_row.fake(tmp_path, monkeypatch)
    fake.start()
    try:
        yield ReplyHome(home, BLUESKY, fake, clip)
    finally:
        fake.close()


def more_comments(h: ReplyHome, count: int) -> list[int]:
    """`count` more comments under the post, each with a person's approved reply."""
    post = h.posting.post()
    ids = []
    for number in range(count):
        comment = h.row.add_comment(h.fake, post["platform_post_id"], f"Comment {number}")
        comment_id = insert_comment(
            h.posting.bench.db, post, h.fake.account()["account_id"], comment, COMMENTED_AT
        )
        reply = approve(
            h.posting.bench.db,
            comment_id,
            text=f"Thanks, listener {number}!",
            by="person",
            now=parse_instant(COMMENTED_AT),
        )
        ids.append(reply["id"])
    return ids


def sessions_of(h: ReplyHome, day) -> list[pace.ReplySession]:
    config = pace.PaceConfig(seed=pace_seed(h.posting.bench.db, create=False))
    account = h.fake.account()["account_id"]
    return pace.reply_sessions(config, "bluesky", account, day, ZoneInfo("UTC"))


# -- run-due's sessions ------------------------------------------------------------------------


def test_run_due_sends_replies_in_sessions_with_a_pause_after_each(replies_home: ReplyHome):
    h = replies_home
    ids = [h.reply_id, *more_comments(h, 7)]
    # cron's hourly run-due through the next day (the home's channel lives in UTC)
    for hour in range(0, 24):
        code, out, err = h.cli("run-due", "--json", now=iso(DAY + timedelta(hours=hour, minutes=5)))
        assert code == 0, (out, err)
    sent = {r["id"]: r for r in h.cli.json("replies")}
    published = [sent[i] for i in ids if sent[i]["state"] == "published"]
    assert h.copies() == len(published) and published, h.dump()  # never a second copy
    sessions = sessions_of(h, DAY.date())
    # every reply went out inside a session, never more than its size, a pause between two
    moments = sorted(from_iso(r["published_at"]) for r in published)
    for session in sessions:
        inside = [m for m in moments if session.start <= m < session.end]
        assert len(inside) <= session.size
        for earlier, later in itertools.pairwise(inside):
            assert later - earlier >= timedelta(seconds=20), (inside, session)
    assert all(any(s.start <= m < s.end for s in sessions) for m in moments), (moments, sessions)
    # as many as the day's sessions hold; the rest wait for tomorrow's
    assert len(published) == min(len(ids), sum(s.size for s in sessions))


def test_run_due_reports_its_replies_and_an_idle_one_reports_none(replies_home: ReplyHome):
    h = replies_home
    session = sessions_of(h, DAY.date())[0]
    report = h.cli.json("run-due", now=iso(session.start + timedelta(minutes=1)))
    assert report["replies"]["sent"] == [h.reply_id], report
    assert report["replies"]["results"][0]["state"] == "published"
    idle = h.cli.json("run-due", now=iso(session.start + timedelta(minutes=30)))
    assert idle["replies"] == {
        "sent": [],
        "published": [],
        "results": [],
        "next_session": {},
        "notes": [],
    }


def test_run_due_before_the_first_session_waits_for_it_within_the_cron_interval(
    replies_home: ReplyHome,
):
    h = replies_home
    session = sessions_of(h, DAY.date())[0]
    before = session.start - timedelta(minutes=30)
    report = h.cli.json("run-due", "--no-wait", now=iso(before))
    assert report["replies"]["sent"] == [] and h.copies() == 0
    assert report["replies"]["next_session"], report
    report = h.cli.json("run-due", now=iso(before))  # waits in-process (the test clock jumps)
    assert report["replies"]["sent"] == [h.reply_id], report
    assert h.copies() == 1


# -- a person's send, confirm, the listing -----------------------------------------------------


def test_replies_send_and_the_listing(replies_home: ReplyHome):
    h = replies_home
    (queued,) = h.cli.json("replies", "--state", "queued")
    assert queued["comment_text"] == "Love this one, thanks!"
    assert queued["comment_author"] == "fan.test"
    code, out, err = h.cli("replies", "send", "--no-wait", now="2026-11-29T13:00:00Z")
    assert code == 0, (out, err)
    assert f"reply {h.reply_id}: published" in out
    (reply,) = h.cli.json("replies")
    assert reply["state"] == "published" and reply["url"].startswith("https://bsky.app/")
    (made,) = h.fake.replies
    assert made["record"]["text"] == "Thank you for listening!"
    assert made["record"]["reply"]["parent"]["uri"] == h.comment["platform_comment_id"]
    code, out, err = h.cli("replies", "send", now="2026-11-29T13:05:00Z")
    assert (code, h.copies()) == (0, 1)
    assert out.startswith("nothing found: no reply to send")


def test_a_reply_the_platform_cannot_be_asked_about_waits_for_confirm(
    replies_home: ReplyHome, monkeypatch: pytest.MonkeyPatch
):
    h = replies_home
    h.fake.drop_after(h.row.reply_at)
    monkeypatch.setattr(BlueskyPlatform, "can_find_attempts", False)
    h.send("2026-11-29T13:00:00Z")
    h.send("2026-11-29T14:00:00Z")
    assert h.reply()["state"] == "may_be_live" and h.copies() == 1
    code, _out, err = h.cli("replies", "confirm", str(h.reply_id), "--live", "https://x.test/r")
    assert code == 0, err
    assert h.reply()["state"] == "published" and h.comment_state() == "answered"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("replies", "--state", "bogus"), '--state: "bogus" is not a reply state'),
        (("replies", "confirm", "99", "--not-live"), "no reply 99"),
        (("replies", "confirm", "1"), "say either --live URL or --not-live"),
        (("replies", "confirm", "1", "--not-live"), "reply 1 is queued; only a reply"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(replies_home: ReplyHome, args, words):
    h = replies_home
    before = snapshot(h.posting.bench.home)
    code, out, err = h.cli(*args)
    assert code == 2, (out, err)
    assert words in err and len(err.strip().splitlines()) == 1, err
    assert snapshot(h.posting.bench.home) == before


# -- gates and identity ------------------------------------------------------------------------


class _Strict(BlueskyPlatform):
    reply_length = 20
    reply_links = False
    reply_disclosure = "(AI-written)"


class _Channel:
    class pipeline:
        banned_terms = ("free download",)


def test_gate_problems_name_each_rule():
    assert gate_problems(BlueskyPlatform, "Thank you!", episode=None, channel_config=None,
                         drafted_by="person") == []  # fmt: skip
    found = gate_problems(
        _Strict,
        "Get the FREE download at https://x.test 👨‍👩‍👧",
        episode=None,
        channel_config=_Channel,
        drafted_by="assistant",
    )
    assert found == [
        "the reply contains the banned term 'free download'",
        "the reply is 41 characters; Bluesky takes 20",  # the family emoji is one
        "Bluesky takes no links in replies; remove the link",
        "Bluesky asks an AI-written reply to say so: add '(AI-written)'",
    ]
    # a family emoji is one character; a person's words carry no AI disclosure
    assert gate_problems(_Strict, "Thanks 👨‍👩‍👧👨‍👩‍👧", episode=None, channel_config=None,
                         drafted_by="person") == []  # fmt: skip


def test_a_reply_failing_its_gates_waits_for_a_person(replies_home: ReplyHome):
    h = replies_home
    (extra,) = more_comments(h, 1)
    from autoretto.ledger.store import execute

    execute(h.posting.bench.db, "UPDATE replies SET text = ? WHERE id = ?", ("x" * 301, extra))
    h.send("2026-11-29T13:00:00Z")
    (reply,) = [r for r in h.cli.json("replies") if r["id"] == extra]
    assert reply["state"] == "needs_person"
    assert "the reply is 301 characters; Bluesky takes 300" in reply["reason"]
    assert h.copies() == 1  # the other one went out


def test_a_reply_identity_is_its_text_platform_account_and_comment():
    base = reply_identity("Thanks!", "bluesky", "did:plc:me", "at://c/1")
    assert base == reply_identity("Thanks!", "bluesky", "did:plc:me", "at://c/1")
    others = {
        reply_identity("Thanks!!", "bluesky", "did:plc:me", "at://c/1"),
        reply_identity("Thanks!", "x", "did:plc:me", "at://c/1"),
        reply_identity("Thanks!", "bluesky", "did:plc:you", "at://c/1"),
        reply_identity("Thanks!", "bluesky", "did:plc:me", "at://c/2"),
    }
    assert base not in others and len(others) == 4


# -- the race ----------------------------------------------------------------------------------


SEND_NOW = (
    "import sys\n"
    "from autoretto.cli_support import open_home\n"
    "from autoretto.replies import send_now\n"
    "home = open_home()\n"
    "result = send_now(home.config, home.db, int(sys.argv[1]), who='page')\n"
    "print(result.outcome, result.state)\n"
)


@pytest.mark.parametrize("held", [False, True])
def test_two_run_dues_and_a_send_now_race_over_one_reply(replies_home: ReplyHome, held: bool):
    """Two cron runs and a person's "send" (the page's) start together over one approved reply,
    inside a session: exactly one reply on the platform. `held`: the first create is held at
    the platform (done, its answer not sent) until the two others have ended, so they meet the
    reply `sending` by a live run."""
    import os
    import time

    h = replies_home
    now = iso(sessions_of(h, DAY.date())[0].start + timedelta(minutes=1))
    if held:
        h.fake.hold(h.row.reply_at)
    processes = [
        run_process("run-due", "--no-wait", now=now, stdin=subprocess.DEVNULL),
        run_process("run-due", "--no-wait", now=now, stdin=subprocess.DEVNULL),
        subprocess.Popen(
            [sys.executable, "-c", SEND_NOW, str(h.reply_id)],
            env={**os.environ, "AUTORETTO_NOW": now},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ),
    ]
    try:
        if held:
            assert h.fake.holding.wait(90)
            deadline = time.monotonic() + 90
            while sum(p.poll() is not None for p in processes) < 2:
                assert time.monotonic() < deadline, "the other two did not end"
                time.sleep(0.1)
            h.fake.release()
        for process in processes:
            _, err = process.communicate(timeout=120)
            assert "Traceback" not in err, err
    finally:
        h.fake.release()
        for process in processes:
            if process.poll() is None:
                process.kill()
    assert h.copies() == 1, h.dump()
    assert h.reply()["state"] == "published"
    if held:  # one create for the post, one for the reply: the others never reached it
        assert h.posting.kinds().count(h.row.reply_at) == 2, h.dump()
    # and later runs send nothing more
    h.cli("run-due", now=iso(from_iso(now) + timedelta(hours=3)))
    assert h.copies() == 1


# -- a restored database -----------------------------------------------------------------------


@pytest.mark.parametrize("knew_the_comment", [True, False])
def test_a_restored_database_holds_replies_and_resume_writes_them_back(
    replies_home: ReplyHome, knew_the_comment: bool
):
    """A reply sent after the last backup: the restored copy holds every send; `resume` writes
    the journal's reply lines back (published again, its comment answered), and nothing is sent
    twice. A reply the restored copy never knew is made again from the journal."""
    import shutil
    import sqlite3

    h = replies_home
    home = h.posting.bench.home
    h.posting.bench.db.close()
    source, copy = sqlite3.connect(home / "autoretto.db"), sqlite3.connect(home.parent / "old.db")
    source.backup(copy)
    if not knew_the_comment:  # a backup older than the comment
        copy.execute("DELETE FROM replies")
        copy.execute("DELETE FROM comments")
        copy.commit()
    copy.close()
    source.close()
    h.send("2026-11-29T13:00:00Z")
    assert h.copies() == 1

    for suffix in ("", "-wal", "-shm"):
        (home / f"autoretto.db{suffix}").unlink(missing_ok=True)
    shutil.copy(home.parent / "old.db", home / "autoretto.db")
    code, out, err = h.cli("replies", "send", "--no-wait", now="2026-11-29T14:00:00Z")
    assert code == 3 and "held" in err, (out, err)
    assert [e["kind"] for e in h.cli.json("journal")["missing"]] == ["reply_attempt", "reply"]
    code, out, err = h.cli("resume", "--checked")
    assert code == 0, err
    (reply,) = h.cli.json("replies")
    assert reply["state"] == "published" and reply["url"], reply
    assert reply["text"] == "Thank you for listening!"
    # the comment is answered, made again from the journal when the copy never had it (then
    # collected again, it is the same row: stored once per platform id)
    with sqlite3.connect(home / "autoretto.db") as connection:
        comments = connection.execute("SELECT platform_comment_id, state FROM comments").fetchall()
    assert comments == [(h.comment["platform_comment_id"], "answered")]
    code, out, err = h.cli("replies", "send", "--no-wait", now="2026-11-29T15:00:00Z")
    assert code == 0, (out, err)
    assert h.copies() == 1


def test_a_revoked_account_tells_the_person_and_a_comment_collected_gone_is_never_answered(
    replies_home: ReplyHome,
):
    from autoretto.ledger.store import execute

    h = replies_home
    home = h.posting.bench.home
    with (home / "autoretto.toml").open("a") as config:
        config.write(f"\n[notify]\ncommand = \"sh -c 'cat >> {home}/events.jsonl'\"\n")
    (other,) = more_comments(h, 1)
    execute(h.posting.bench.db, "UPDATE comments SET state = 'gone' WHERE id = 2")
    h.fake.revoke()
    h.send("2026-11-29T13:00:00Z")
    states = {r["id"]: r["state"] for r in h.cli.json("replies")}
    assert states == {h.reply_id: "needs_person", other: "gone"}
    assert h.copies() == 0
    events = _events(home)
    told = [e for e in events if e["event"] == "reply_needs_person"]
    assert [e["reply_id"] for e in told] == [h.reply_id], events
    assert "reconnect" in told[0]["reason"]


def _events(home: Path) -> list[dict]:
    import json

    text = (home / "events.jsonl").read_text()
    decoder, found, at = json.JSONDecoder(), [], 0
    while at < len(text):
        if text[at].isspace():
            at += 1
            continue
        event, at = decoder.raw_decode(text, at)
        found.append(event)
    return found


def test_an_idle_run_due_asks_one_question_about_replies_and_imports_nothing_heavy(home: Path):
    from tests.support import channel_toml, run_command, write_config

    write_config(home, channel_toml("lofi"))
    run_command("init")
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "autoretto", "run-due", "--no-make", "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()}
    assert "autoretto.replies" in imported  # the hook ran
    assert not imported & {"regex", "requests", "autoretto.platforms.bluesky", "tenacity"}
    assert '"replies": {' in done.stdout


def test_the_daily_cap_of_replies_spends_no_try_and_the_next_day_sends(
    replies_home: ReplyHome, monkeypatch: pytest.MonkeyPatch
):
    h = replies_home
    monkeypatch.setattr(BlueskyPlatform, "replies_per_day", 1)
    (second,) = more_comments(h, 1)
    code, out, err = h.cli("replies", "send", "--no-wait", now="2026-11-29T13:00:00Z")
    assert code == 0, (out, err)
    assert "Bluesky: 1 reply today from this account, the cap" in out
    states = {r["id"]: (r["state"], r["attempts"]) for r in h.cli.json("replies")}
    assert states == {h.reply_id: ("published", 1), second: ("queued", 0)}
    assert h.copies() == 1
    h.send("2026-11-29T23:00:00Z")
    assert h.copies() == 1  # still the same UTC day
    h.send("2026-11-30T09:00:00Z")
    assert h.copies() == 2
