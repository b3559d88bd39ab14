"""Editing an episode before it goes out (autoretto/editing.py), without the page: the text gates
run again, a platform whose post exists keeps its text, every change is recorded; and moving or
swapping episodes in line changes which coming slot takes which, as run-due then posts them."""

from __future__ import annotations

import sqlite3

import pytest

from tests.support import channel_toml, outbox_sidecars, run_sql, write_config

PIPELINE = '\nready_ahead = 0\n\n[channels.pipeline]\nbanned_terms = ["forbidden"]\n'


def make_home(home, cli, clip, *, episodes=2, platforms='["folder", "bluesky"]') -> None:
    channel = channel_toml("lofi", slots=("10:00", "19:00")).replace(
        'platforms = ["folder"]', f"platforms = {platforms}"
    )
    write_config(home, channel + PIPELINE)
    assert cli("init")[0] == 0
    for number in range(episodes):
        code, _, err = cli("episode", "add", "lofi", str(clip), "--title", f"Track {number + 1}")
        assert code == 0, err
    cli("run-due", now="2026-11-29T09:00:00Z")  # the channel is seen; nothing is due


def edits_in_database(home) -> list[tuple]:
    with sqlite3.connect(home / "autoretto.db") as connection:
        return connection.execute(
            "SELECT episode_id, who, platform, field, old, new FROM episode_edits ORDER BY seq"
        ).fetchall()


def test_an_edit_changes_the_copy_reruns_the_gates_and_is_recorded(home, cli, clip):
    make_home(home, cli, clip)
    code, _, err = cli(
        "episode", "edit", "1", "--title", "Night drive",
        "--text", "bluesky.text=Night drive, out now",
    )  # fmt: skip
    assert code == 0, err
    shown = cli.json("episode", "show", "1")
    assert shown["title"] == "Night drive"
    assert shown["texts"]["bluesky"]["text"] == "Night drive, out now"
    gates = {gate["name"]: gate["passed"] for gate in shown["gates"]}
    assert gates == {"text_limits": True, "banned_terms": True, "ai_disclosure": True}
    recorded = edits_in_database(home)
    assert (1, recorded[0][1], None, "title", "Track 1", "Night drive") in recorded
    assert any(r[2:4] == ("bluesky", "text") and r[5] == "Night drive, out now" for r in recorded)
    assert recorded[0][1].startswith("cli:")
    history = cli.json("episode", "edits", "1")
    assert [(e["platform"], e["field"]) for e in history] == [(None, "title"), ("bluesky", "text")]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--text", "bluesky.text=" + "word " * 80], "text_limits gate refuses"),
        (["--title", "A forbidden song"], "banned_terms gate refuses"),
        (["--text", "bluesky.text=   "], "bluesky text is empty"),
        (["--title", ""], "--title: give a title"),
        (["--text", "youtube.title=Hi"], "does not post to youtube"),
        (["--text", "bluesky.nothing=Hi"], "has no text field 'nothing'"),
        (["--text", "bluesky-text"], "write PLATFORM.FIELD=TEXT"),
    ],
)
def test_the_gates_refuse_bad_text_and_nothing_changes(home, cli, clip, args, words):
    make_home(home, cli, clip, episodes=1)
    before = cli.json("episode", "show", "1")
    code, _, err = cli("episode", "edit", "1", *args)
    assert code != 0
    assert words in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert cli.json("episode", "show", "1") == before
    assert edits_in_database(home) == []


def test_a_platform_whose_post_was_sent_keeps_its_text(home, cli, clip):
    make_home(home, cli, clip, episodes=2, platforms='["folder"]')
    assert cli("run-due", now="2026-11-29T10:00:30Z")[0] == 0
    assert cli("run-due", now="2026-11-29T10:05:00Z")[0] == 0
    [posted] = [p for p in cli.json("posts") if p["episode_id"] == 1]
    assert posted["state"] == "published"
    before = cli.json("episode", "show", "1")
    # The folder's text of episode 1 cannot change: its post is published.
    code, _, err = cli("episode", "edit", "1", "--text", "folder.title=Changed")
    assert code != 0 and "is published" in err and "never changed" in err, err
    assert cli.json("episode", "show", "1")["texts"] == before["texts"]
    assert [s["title"] for s in outbox_sidecars(home)] == [posted_title(home)]
    assert edits_in_database(home) == []
    # Episode 2, not sent anywhere yet, is edited.
    assert cli("episode", "edit", "2", "--title", "Second, renamed")[0] == 0


def posted_title(home) -> str:
    return outbox_sidecars(home)[0]["title"]


def test_a_title_edit_waits_while_a_post_is_on_its_way(home, cli, clip):
    make_home(home, cli, clip, episodes=1, platforms='["folder"]')
    assert cli("run-due", now="2026-11-29T10:00:30Z")[0] == 0
    # Its try failed after the request went out, say: it is tried again, with the copy it has.
    run_sql(home, "UPDATE posts SET state = 'failed'")
    [post] = cli.json("posts")
    code, _, err = cli("episode", "edit", "1", "--title", "Too late")
    assert code != 0 and f"post {post['id']} (folder)" in err, err
    assert cli.json("episode", "show", "1")["title"] == "Track 1"


def test_move_and_swap_change_which_slot_takes_which_episode(home, cli, clip):
    make_home(home, cli, clip, episodes=3, platforms='["folder"]')
    queue = cli.json("queue")["lofi"]
    assert [e["episode_id"] for e in queue[:3]] == [1, 2, 3]
    # Episode 3 onto the first coming slot: 1 and 2 move one place along.
    first_slot = queue[0]["slot"]
    answer = cli.json("episode", "move", "3", "--slot", first_slot)
    assert answer["line"] == [3, 1, 2]
    assert [e["episode_id"] for e in cli.json("queue")["lofi"][:3]] == [3, 1, 2]
    answer = cli.json("episode", "swap", "1", "2")
    assert answer["line"] == [3, 2, 1]
    # run-due posts what the queue said.
    assert cli("run-due", now="2026-11-29T10:00:30Z")[0] == 0
    assert cli("run-due", now="2026-11-29T10:05:00Z")[0] == 0
    assert [p["episode_id"] for p in cli.json("posts")] == [3]
    # A posted episode is out of line: it cannot be moved; a new episode queues last.
    code, _, err = cli("episode", "move", "3", "--place", "1")
    assert code != 0 and "not waiting in line" in err
    assert cli("episode", "add", "lofi", str(clip), "--title", "Track 4")[0] == 0
    assert [e["episode_id"] for e in cli.json("queue")["lofi"][:3]] == [2, 1, 4]


def test_bad_moves_are_refused_in_one_line(home, cli, clip):
    make_home(home, cli, clip, episodes=2, platforms='["folder"]')
    for args, words in (
        (["episode", "move", "1", "--slot", "2030-01-01T10:00"], "not one of the coming slots"),
        (["episode", "move", "1", "--place", "9"], "place 1 to 2"),
        (["episode", "move", "1"], "give one of --slot or --place"),
        (["episode", "swap", "1", "1"], "two different episodes"),
        (["episode", "swap", "1", "99"], "no episode 99"),
    ):
        code, _, err = cli(*args)
        assert code != 0 and words in err, (args, err)
    assert [e["episode_id"] for e in cli.json("queue")["lofi"][:2]] == [1, 2]
