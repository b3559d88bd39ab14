"""The inbox (issue 28): `autoretto inbox collect` against the fake Bluesky, the assistant's
drafts (offline templates, and Gemini's fake), and a person's approve / edit / ignore.

What a creator checks: each comment lands once however often the thread is read, a read
continues where the last stopped, a rate limit waits without an error, a refused permission
names what to reconnect, platforms that cannot be read are listed, spam / abuse / a question
the assistant cannot answer are held for the person, and a mistake on the command line is one
line that changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from autoretto.accounts import save_account
from autoretto.config import Paths, load_config
from autoretto.ledger.store import execute, open_database, row, rows, transaction
from autoretto.platforms import FIELDS
from tests.fakes import bluesky_server
from tests.fakes.bluesky_server import DID, HANDLE
from tests.fakes.gemini_server import FakeGemini
from tests.support import snapshot

NOW = "2026-11-29T12:36:00Z"
LATER = "2026-11-29T13:36:00Z"


@pytest.fixture
def bluesky():
    fake = bluesky_server.start()
    yield fake
    fake.close()


class Inbox:
    """A home whose channel `lofi` posts to Bluesky (the fake) and the folder, with published
    posts made by `publish`."""

    def __init__(self, home: Path, fake: Any, *, channel: str = "", extra: str = "") -> None:
        home.mkdir(parents=True, exist_ok=True)
        (home / "autoretto.toml").write_text(
            '[[channels]]\nname = "lofi"\ntimezone = "UTC"\nslots = ["10:00"]\n'
            'platforms = ["bluesky", "folder"]\n' + channel + "\n"
            '[retry]\nattempts = 2\nfirst_wait = "0s"\n\n'
            '[platforms.folder]\npath = "outbox"\n\n'
            "[platforms.bluesky]\n" + fake.settings() + extra,
            encoding="utf-8",
        )
        self.home = home
        self.fake = fake
        self.config = load_config(Paths(home), platforms=FIELDS)
        self.db = open_database(self.config.paths.database, url=self.config.store_url)
        save_account(
            self.db, home, platform="bluesky", account_id=DID, name="@" + HANDLE,
            tokens=fake.tokens(), meta={"handle": HANDLE, "pds": fake.pds_url},
        )  # fmt: skip

    def publish(self, rkey: str, *, platform: str = "bluesky", title: str = "Rain on Glass") -> int:
        at = "2026-11-29T10:00:00Z"
        with transaction(self.db):
            execute(
                self.db,
                "INSERT INTO episodes (channel, state, title, off_schedule, created_at,"
                " updated_at) VALUES ('lofi', 'ready', ?, 0, ?, ?)",
                (title, at, at),
            )
            episode = row(self.db, "SELECT MAX(id) AS id FROM episodes")["id"]
            execute(
                self.db,
                "INSERT INTO posts (episode_id, channel, platform, state, platform_post_id,"
                " attempts, url, created_at, updated_at, published_at) VALUES (?, 'lofi', ?,"
                " 'published', ?, 1, ?, ?, ?, ?)",
                (episode, platform, rkey, f"https://bsky.app/profile/{HANDLE}/post/{rkey}",
                 at, at, at),
            )  # fmt: skip
        return episode

    def comments(self) -> list[dict[str, Any]]:
        return rows(
            self.db,
            "SELECT id, platform_comment_id, author, text, state, category, draft, draft_by,"
            " reason, parent_id FROM comments ORDER BY id",
        )

    def by_text(self, text: str) -> dict[str, Any]:
        return next(entry for entry in self.comments() if entry["text"] == text)


def rows_of(db: Any) -> list[dict[str, Any]]:
    return rows(db, "SELECT * FROM comments ORDER BY id")


# -- collect --------------------------------------------------------------------------------


def test_each_comment_is_stored_once_and_the_next_read_continues(home, cli, bluesky, store):
    bench = Inbox(home, bluesky)
    bench.publish("3lkrain")
    first = bluesky.add_comment("3lkrain", "Love this one!", at="2026-11-29T10:30:00.000Z")
    bluesky.add_comment("3lkrain", "thank you for this", handle="ana.bsky.social",
                        at="2026-11-29T11:00:00.000Z")  # fmt: skip
    bluesky.add_comment("3lkrain", "same here", parent=first, at="2026-11-29T11:00:00.000Z")

    report = cli.json("inbox", "collect", now=NOW)

    assert report["read"] == {"bluesky": 3} and report["stored"] == 3
    assert report["drafted"] == 3 and report["held"] == 0 and report["skipped"] == {}
    stored = bench.comments()
    assert sorted(entry["text"] for entry in stored) == [
        "Love this one!", "same here", "thank you for this"
    ]  # fmt: skip
    assert bench.by_text("same here")["parent_id"] == first
    assert bench.by_text("Love this one!")["parent_id"] is None
    # The thread was asked for with the lexicon's parameters (the fake checks them).
    asked = [seen for seen in bluesky.requests if seen.method == "app.bsky.feed.getPostThread"]
    assert asked[0].query["uri"] == f"at://{DID}/app.bsky.feed.post/3lkrain"

    # A new reply: the next read continues from the newest seen; the older one is not read.
    bluesky.add_comment("3lkrain", "so calm", at="2026-11-29T12:50:00.000Z")
    again = cli.json("inbox", "collect", now=LATER)
    assert again["stored"] == 1 and again["read"] == {"bluesky": 3}  # two at 11:00, the new
    assert len(bench.comments()) == 4
    # Overlap on every read: still stored once.
    third = cli.json("inbox", "collect", now=LATER)
    assert third["stored"] == 0 and third["read"] == {"bluesky": 1}
    assert len(bench.comments()) == 4
    cursors = rows(bench.db, "SELECT cursor FROM comment_cursors")
    assert cursors == [{"cursor": "2026-11-29T12:50:00.000Z"}]


def test_our_own_replies_in_the_thread_are_mine_never_drafted_for(home, cli, bluesky):
    bench = Inbox(home, bluesky)
    bench.publish("3lkrain")
    asked = bluesky.add_comment("3lkrain", "what is this track called?")
    bluesky.records["3lkmine0000aa"] = {
        "uri": f"at://{DID}/app.bsky.feed.post/3lkmine0000aa",
        "cid": "bafyreimine",
        "record": {
            "$type": "app.bsky.feed.post", "text": "It's Rain on Glass!",
            "createdAt": "2026-11-29T11:30:00.000Z",
            "reply": {"root": {"uri": bluesky.post_uri("3lkrain"), "cid": "bafyreiroot"},
                      "parent": {"uri": asked, "cid": "bafyreiasked"}},
        },
    }  # fmt: skip

    report = cli.json("inbox", "collect", now=NOW)

    assert report["stored"] == 1  # the comment; ours is kept but is no new comment
    mine = bench.by_text("It's Rain on Glass!")
    assert mine["state"] == "mine" and mine["draft"] is None and mine["parent_id"] == asked


def test_a_comment_deleted_before_it_was_answered_is_gone(home, cli, bluesky):
    bench = Inbox(home, bluesky)
    bench.publish("3lkrain")
    deleted = bluesky.add_comment("3lkrain", "nice one")
    kept = bluesky.add_comment("3lkrain", "lovely")
    assert cli.json("inbox", "collect", now=NOW)["stored"] == 2
    cli.json("inbox", "approve", str(bench.by_text("lovely")["id"]))
    bluesky.delete_comment(deleted)
    bluesky.delete_comment(kept)  # approved: its reply learns it when it is sent
    report = cli.json("inbox", "collect", now=LATER)
    assert report["gone"] == 1
    assert bench.by_text("nice one")["state"] == "gone"
    assert bench.by_text("lovely")["state"] == "approved"


def test_a_deleted_comment_is_left_out_and_a_deleted_post_reads_nothing(home, cli, bluesky):
    bench = Inbox(home, bluesky)
    bench.publish("3lkrain")
    bench.publish("3lkgone")  # deleted on Bluesky since: getPostThread answers NotFound
    kept = bluesky.add_comment("3lkrain", "nice")
    bluesky.delete_comment(bluesky.add_comment("3lkrain", "spam spam"))
    report = cli.json("inbox", "collect", now=NOW)
    assert report["read"] == {"bluesky": 1} and report["skipped"] == {}
    assert [entry["platform_comment_id"] for entry in bench.comments()] == [kept]


def test_a_rate_limit_waits_for_the_next_window_keeping_what_was_read(home, cli, bluesky):
    bench = Inbox(home, bluesky)
    bench.publish("3lkaaaa")
    bench.publish("3lkbbbb")
    bluesky.add_comment("3lkaaaa", "first post, lovely")
    bluesky.add_comment("3lkbbbb", "second post, lovely")
    bluesky.thread_script.extend(["ok", "status:429:3600"])

    code, out, err = cli("inbox", "collect", "--json", now=NOW)

    assert code == 0, err
    report = json.loads(out)
    assert "waits for its next window" in report["skipped"]["bluesky"]
    assert "rate limiting" in report["skipped"]["bluesky"]
    assert [entry["text"] for entry in bench.comments()] == ["first post, lovely"]
    # The account is not touched, and the next window reads the rest.
    assert row(bench.db, "SELECT state FROM accounts")["state"] == "connected"
    later = cli.json("inbox", "collect", now=LATER)
    assert later["stored"] == 1 and later["skipped"] == {}


def test_a_revoked_permission_names_what_to_reconnect_once(home, cli, bluesky, pings):
    received, url = pings
    bench = Inbox(home, bluesky, extra=f'\n[notify]\nwebhook = "{url}/notify"\n')
    bench.publish("3lkrain")
    bluesky.add_comment("3lkrain", "lovely")
    bluesky.revoke()

    code, out, err = cli("inbox", "collect", "--json", now=NOW)

    assert code == 0, err
    report = json.loads(out)
    skipped = report["skipped"]["bluesky"]
    assert "transition:generic" in skipped and "autoretto connect bluesky" in skipped
    events = [json.loads(body) for path, body in received if path == "/notify"]
    assert [event["event"] for event in events] == ["comments_reconnect"]
    assert events[0]["platform"] == "bluesky" and "transition:generic" in events[0]["scope"]
    # The page's and `status`'s list of troubles names it until a read succeeds.
    from autoretto.clock import parse_instant
    from autoretto.health import platform_trouble

    troubles = platform_trouble(bench.config, bench.db, parse_instant(NOW))
    lines = [t.line for t in troubles if t.kind == "comments"]
    assert lines and "bluesky cannot read its comments" in lines[0]
    assert "autoretto connect bluesky" in lines[0]
    # Told once: the next collect does not tell again.
    cli("inbox", "collect", now=LATER)
    assert len([1 for path, _ in received if path == "/notify"]) == 1
    # Connected again: the next read succeeds, the comment lands and the trouble is gone.
    bluesky.revoked = False
    save_account(
        bench.db, home, platform="bluesky", account_id=DID, name="@" + HANDLE,
        tokens=bluesky.tokens(), meta={"handle": HANDLE, "pds": bluesky.pds_url},
    )  # fmt: skip
    assert cli.json("inbox", "collect", now=LATER)["stored"] == 1
    troubles = platform_trouble(bench.config, bench.db, parse_instant(LATER))
    assert [t for t in troubles if t.kind == "comments"] == []


def test_platforms_that_cannot_be_read_are_listed_with_why(home, cli, bluesky):
    bench = Inbox(home, bluesky)
    bench.publish("outbox/lofi/1.json", platform="folder")
    report = cli.json("inbox", "collect", now=NOW)
    assert (
        report["cannot_read"]["folder"]
        == "Folder outbox has no comments: it only delivers the post"
    )
    assert "bluesky" not in report["cannot_read"]
    code, out, _ = cli("inbox", "collect", now=NOW)
    assert code == 0 and "note: folder cannot read comments" in out


def test_a_platform_not_connected_is_skipped_with_a_note(home, cli, bluesky):
    bench = Inbox(home, bluesky)
    bench.publish("3lkrain")
    with transaction(bench.db):
        execute(bench.db, "DELETE FROM accounts")
    report = cli.json("inbox", "collect", now=NOW)
    assert report["skipped"] == {"bluesky": "Bluesky is not connected"}
    assert bluesky.count("app.bsky.feed.getPostThread") == 0


# -- drafts, offline ------------------------------------------------------------------------

OFFLINE = {
    "thank you so much for this": ("drafted", "thanks"),
    "This is beautiful 🔥": ("drafted", "praise"),
    "what's the name of this track?": ("drafted", "question"),
    "check out my channel https://spam.example/x": ("held", "spam"),
    "you are an idiot and this is trash": ("held", "abuse"),
    "will you tour in Spain next year?": ("held", "question"),
}


def test_offline_drafts_fill_templates_and_hold_spam_abuse_and_hard_questions(home, cli, bluesky):
    bench = Inbox(home, bluesky)
    bench.publish("3lkrain", title="Rain on Glass")
    for text in OFFLINE:
        bluesky.add_comment("3lkrain", text, handle="ana.bsky.social")

    report = cli.json("inbox", "collect", now=NOW)

    assert report["drafted"] == 3 and report["held"] == 3
    for text, (state, category) in OFFLINE.items():
        found = bench.by_text(text)
        assert (found["state"], found["category"]) == (state, category), text
        if state == "held":
            assert found["draft"] is None
            assert found["reason"] in ("spam", "abuse", "a question the assistant cannot answer")
        else:
            assert found["draft"] and found["draft_by"] == "template"
            assert "ana" in found["draft"]  # the author, by name
    assert "Rain on Glass" in bench.by_text("what's the name of this track?")["draft"]
    assert bench.by_text("will you tour in Spain next year?")["reason"] == (
        "a question the assistant cannot answer"
    )
    listed = cli.json("inbox", "--state", "held")
    assert {entry["text"] for entry in listed} == {
        text for text, (state, _) in OFFLINE.items() if state == "held"
    }


def test_offline_drafts_vary_from_comment_to_comment(home, cli, bluesky):
    bench = Inbox(home, bluesky)
    bench.publish("3lkrain")
    for number in range(12):
        bluesky.add_comment("3lkrain", f"thanks {number}", handle="ana.test")
    cli.json("inbox", "collect", now=NOW)
    drafts = {entry["draft"] for entry in bench.comments()}
    assert len(drafts) >= 3


# -- drafts, Gemini -------------------------------------------------------------------------

GEMINI_PIPELINE = '\n[channels.pipeline]\naudio = "synth"\ncopy = "gemini"\n'
VOICE = 'reply_voice = "dry, kind, lowercase"\nreply_rules = ["never promise release dates"]\n'


@pytest.fixture
def gemini(monkeypatch):
    answers = {
        "love it": {"category": "praise", "answerable": True, "reply": "thank you, ana"},
        "buy followers at": {"category": "spam", "answerable": False, "reply": "no"},
        "you are awful": {"category": "abuse", "answerable": False, "reply": ""},
        "when is the album": {"category": "question", "answerable": False, "reply": ""},
    }

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        prompt = body["contents"][0]["parts"][0]["text"]
        comment = prompt.split("<<<COMMENT", 1)[1]
        return next(value for key, value in answers.items() if key in comment)

    with FakeGemini(api_key="test-gemini-key") as fake:
        fake.answer_for = answer
        monkeypatch.setenv("GEMINI_API_KEY", "test-gemini-key")
        yield fake


def test_gemini_drafts_with_the_channel_voice_and_a_json_schema(home, cli, bluesky, gemini):
    bench = Inbox(
        home, bluesky, channel=VOICE + GEMINI_PIPELINE,
        extra=f'\n[providers.gemini]\nbase_url = "{gemini.url}"\ntext_model = "gemini-test"\n',
    )  # fmt: skip
    bench.publish("3lkrain", title="Rain on Glass")
    for text in ("love it", "buy followers at cheap.example", "you are awful",
                 "when is the album out?"):  # fmt: skip
        bluesky.add_comment("3lkrain", text, handle="ana.test")

    report = cli.json("inbox", "collect", now=NOW)

    assert report["drafted"] == 1 and report["held"] == 3
    praised = bench.by_text("love it")
    assert praised["state"] == "drafted" and praised["draft"] == "thank you, ana"
    assert praised["draft_by"] == "gemini:gemini-test"
    assert bench.by_text("buy followers at cheap.example")["reason"] == "spam"
    assert bench.by_text("buy followers at cheap.example")["draft"] is None
    assert bench.by_text("you are awful")["reason"] == "abuse"
    assert bench.by_text("when is the album out?")["reason"] == (
        "a question the assistant cannot answer"
    )
    _, body, _ = gemini.requests[0]
    prompt = body["contents"][0]["parts"][0]["text"]
    assert "dry, kind, lowercase" in prompt and "never promise release dates" in prompt
    assert "Rain on Glass" in prompt and "300 characters" in prompt
    schema = body["generationConfig"]["responseSchema"]
    assert set(schema["properties"]) == {"category", "answerable", "reply"}
    assert body["generationConfig"]["responseMimeType"] == "application/json"


def test_a_comment_gemini_will_not_touch_is_held_for_the_person(home, cli, bluesky, gemini):
    bench = Inbox(
        home, bluesky, channel=GEMINI_PIPELINE,
        extra=f'\n[providers.gemini]\nbase_url = "{gemini.url}"\ntext_model = "gemini-test"\n',
    )  # fmt: skip
    bench.publish("3lkrain")
    bluesky.add_comment("3lkrain", "love it")
    gemini.finishes.append("SAFETY")  # its safety filter stops the answer
    report = cli.json("inbox", "collect", now=NOW)
    assert report["held"] == 1 and report["drafted"] == 0
    held = bench.by_text("love it")
    assert held["state"] == "held" and held["draft"] is None
    assert held["reason"] == "Gemini would not answer it (SAFETY): read it yourself"


def test_gemini_without_a_key_leaves_comments_new_for_the_next_run(
    home, cli, bluesky, gemini, monkeypatch
):
    bench = Inbox(
        home, bluesky, channel=GEMINI_PIPELINE,
        extra=f'\n[providers.gemini]\nbase_url = "{gemini.url}"\ntext_model = "gemini-test"\n',
    )  # fmt: skip
    bench.publish("3lkrain")
    bluesky.add_comment("3lkrain", "love it")
    monkeypatch.delenv("GEMINI_API_KEY")
    report = cli.json("inbox", "collect", now=NOW)
    assert report["stored"] == 1 and report["drafted"] == 0
    assert any("GEMINI_API_KEY" in note for note in report["notes"])
    assert bench.by_text("love it")["state"] == "new" and gemini.requests == []
    monkeypatch.setenv("GEMINI_API_KEY", "test-gemini-key")
    assert cli.json("inbox", "collect", now=LATER)["drafted"] == 1
    assert bench.by_text("love it")["state"] == "drafted"


# -- approved by rule -------------------------------------------------------------------------


def replies_of(db: Any) -> list[dict[str, Any]]:
    return rows(db, "SELECT comment_id, text, state, approved_by FROM replies ORDER BY id")


@pytest.mark.parametrize("auto_reply", [True, False])
def test_auto_reply_approves_thanks_and_praise_that_pass_the_gates(
    home, cli, bluesky, monkeypatch, auto_reply
):
    from autoretto import replies

    asked = []

    def gate_problems(platform_cls, text, *, episode, channel_config, drafted_by):
        asked.append((platform_cls.name, text, drafted_by))
        return ["too long"] if "bad" in text else []

    monkeypatch.setattr(replies, "gate_problems", gate_problems, raising=False)
    bench = Inbox(home, bluesky, channel=f"auto_reply = {str(auto_reply).lower()}\n")
    bench.publish("3lkrain")
    bluesky.add_comment("3lkrain", "thank you!", handle="ana.test")
    bluesky.add_comment("3lkrain", "hello there", handle="ben.test")  # other: a person's
    bluesky.add_comment("3lkrain", "check out my promo", handle="spam.test")

    report = cli.json("inbox", "collect", now=NOW)

    thanked = bench.by_text("thank you!")
    if auto_reply:
        assert report["approved_by_rule"] == 1 and thanked["state"] == "approved"
        assert replies_of(bench.db) == [
            {"comment_id": thanked["id"], "text": thanked["draft"], "state": "queued",
             "approved_by": "rule"}
        ]  # fmt: skip
        assert asked == [("bluesky", thanked["draft"], "template")]
    else:
        assert report["approved_by_rule"] == 0 and thanked["state"] == "drafted"
        assert replies_of(bench.db) == [] and asked == []
    assert bench.by_text("hello there")["state"] == "drafted"
    assert bench.by_text("check out my promo")["state"] == "held"


def test_auto_reply_without_the_gates_approves_nothing(home, cli, bluesky, monkeypatch):
    from autoretto import replies

    monkeypatch.delattr(replies, "gate_problems", raising=False)
    bench = Inbox(home, bluesky, channel="auto_reply = true\n")
    bench.publish("3lkrain")
    bluesky.add_comment("3lkrain", "thank you!")
    report = cli.json("inbox", "collect", now=NOW)
    assert report["approved_by_rule"] == 0 and replies_of(bench.db) == []


# -- the person's side ------------------------------------------------------------------------


@pytest.fixture
def collected(home, cli, bluesky) -> Inbox:
    bench = Inbox(home, bluesky)
    bench.publish("3lkrain", title="Rain on Glass")
    bluesky.add_comment("3lkrain", "thank you for this", handle="ana.test",
                        at="2026-11-29T11:00:00.000Z")  # fmt: skip
    bluesky.add_comment("3lkrain", "will you tour in Spain?", handle="ben.test",
                        at="2026-11-29T10:40:00.000Z")  # fmt: skip
    bluesky.add_comment("3lkrain", "so lovely", handle="cy.test", at="2026-11-29T11:20:00.000Z")
    cli.json("inbox", "collect", now=NOW)
    return bench


def test_the_inbox_lists_newest_first_with_filters(collected, cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # a table as wide as its words, on any terminal
    listed = cli.json("inbox")
    assert [entry["author"] for entry in listed] == ["@cy.test", "@ana.test", "@ben.test"]
    assert {entry["state"] for entry in listed} == {"drafted", "held"}
    assert all(entry["episode_title"] == "Rain on Glass" for entry in listed)
    assert cli.json("inbox", "--episode", "1", "--state", "drafted")[0]["state"] == "drafted"
    assert cli.json("inbox", "--episode", "2") == []
    code, out, _ = cli("inbox")
    assert code == 0 and "thank you for this" in out and "Rain on Glass" in out
    shown = cli.json("inbox", "show", str(collected.by_text("so lovely")["id"]))
    assert shown["text"] == "so lovely" and shown["draft"]


def test_approve_edit_and_ignore(store, collected, cli):
    thanked = collected.by_text("thank you for this")
    question = collected.by_text("will you tour in Spain?")
    lovely = collected.by_text("so lovely")

    reply = cli.json("inbox", "approve", str(thanked["id"]))
    assert reply["state"] == "queued" and reply["text"] == thanked["draft"]
    assert reply["approved_by"] == "person"
    assert collected.by_text("thank you for this")["state"] == "approved"

    # A held question, answered in the person's own words.
    own = cli.json("inbox", "approve", str(question["id"]), "--text", "Not this year, sorry!")
    assert own["text"] == "Not this year, sorry!"

    # An approved reply not yet tried takes an edit.
    edited = cli.json("inbox", "edit", str(thanked["id"]), "--text", "Thanks, Ana!")
    assert edited["state"] == "approved" and edited["draft"] == "Thanks, Ana!"
    texts = {r["comment_id"]: r["text"] for r in replies_of(collected.db)}
    assert texts[thanked["id"]] == "Thanks, Ana!"

    # Approving it again with other words, before it is tried, changes the reply too.
    cli.json("inbox", "approve", str(thanked["id"]), "--text", "Thank you, Ana!")
    texts = {r["comment_id"]: r["text"] for r in replies_of(collected.db)}
    assert texts[thanked["id"]] == "Thank you, Ana!"
    assert collected.by_text("thank you for this")["draft"] == "Thank you, Ana!"
    assert len(replies_of(collected.db)) == 2  # still one reply per comment

    # A draft edited before approval stays a draft, written by the person.
    changed = cli.json("inbox", "edit", str(lovely["id"]), "--text", "glad you like it")
    assert (changed["state"], changed["draft_by"]) == ("drafted", "person")

    assert cli.json("inbox", "ignore", str(lovely["id"]))["state"] == "ignored"
    assert cli.json("inbox", "--state", "ignored")[0]["id"] == lovely["id"]


def test_draft_again(collected, cli):
    lovely = collected.by_text("so lovely")
    again = cli.json("inbox", "draft", str(lovely["id"]))
    assert again["state"] == "drafted" and again["draft"] and again["draft_by"] == "template"


BAD = [
    (("inbox", "approve", "999"), "no comment 999"),
    (("inbox", "show", "999"), "no comment 999"),
    (("inbox", "approve", "0"), "is not an id"),
    (("inbox", "approve", "{held}"), "has no draft: give the reply with --text"),
    (("inbox", "approve", "{drafted}", "--text", "   "), "--text: the reply is empty"),
    (("inbox", "edit", "{drafted}", "--text", ""), "--text: the draft is empty"),
    (("inbox", "edit", "{drafted}"), "--text"),
    (("inbox", "ignore", "{approved}"), "cannot be ignored"),
    (("inbox", "draft", "{approved}"), "only a new, drafted or held comment"),
    (("inbox", "--state", "someday"), "--state: give one of new, drafted"),
    (("inbox", "--channel", "jazz"), 'no channel "jazz"'),
]


@pytest.mark.parametrize(("args", "words"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_mistake_is_one_line_and_changes_nothing(collected, cli, home, args, words):
    approved = collected.by_text("so lovely")["id"]
    cli.json("inbox", "approve", str(approved))
    ids = {
        "held": collected.by_text("will you tour in Spain?")["id"],
        "drafted": collected.by_text("thank you for this")["id"],
        "approved": approved,
    }
    before = (rows_of(collected.db), replies_of(collected.db), snapshot(home))

    code, out, err = cli(*(part.format(**ids) for part in args))

    assert code == 2, (out, err)
    assert words in err, err
    assert len(err.strip().splitlines()) == 1 or "Usage:" in err
    assert (rows_of(collected.db), replies_of(collected.db), snapshot(home)) == before


def test_an_approved_reply_already_on_its_way_keeps_its_text(collected, cli):
    thanked = collected.by_text("thank you for this")
    reply = cli.json("inbox", "approve", str(thanked["id"]))
    with transaction(collected.db):
        execute(collected.db, "UPDATE replies SET state = 'sending', attempts = 1 WHERE id = ?",
                (reply["id"],))  # fmt: skip
    before = (rows_of(collected.db), replies_of(collected.db))
    code, _, err = cli("inbox", "edit", str(thanked["id"]), "--text", "other words")
    assert code == 2 and "already sending" in err
    code, _, err = cli("inbox", "approve", str(thanked["id"]), "--text", "other words")
    assert code == 2 and "already sending" in err
    assert (rows_of(collected.db), replies_of(collected.db)) == before
