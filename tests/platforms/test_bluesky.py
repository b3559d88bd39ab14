"""Bluesky against a fake PDS and video service: the harness's table of cases, then the text
rules (graphemes, facets), the session, and `autoretto connect bluesky`."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from autoretto.accounts import load_account, open_tokens
from autoretto.platforms import REGISTRY
from autoretto.platforms.bluesky import (
    TEXT_MAX_GRAPHEMES,
    BlueskyPlatform,
    facets,
    fit_text,
    grapheme_count,
    graphemes,
    is_tid,
    limits_report,
    new_tid,
    posts_today,
)
from tests.fakes import bluesky_server
from tests.fakes.bluesky_server import APP_PASSWORD, DID, HANDLE
from tests.platforms.harness import Bench, Case, run_case


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    monkeypatch.setitem(REGISTRY, "bluesky", BlueskyPlatform)


@pytest.fixture
def fake():
    server = bluesky_server.start()
    yield server
    server.close()


def connected(home, clip, fake, *, expired=False, **settings) -> Bench:
    bench = Bench(home, "bluesky", settings=fake.settings(**settings), clip=clip)
    bench.connect(
        account_id=DID,
        name="@" + HANDLE,
        tokens=fake.tokens(expired=expired),
        meta={"handle": HANDLE, "pds": fake.pds_url},
    )
    return bench


def _cannot_upload(fake):
    fake.can_upload = False
    fake.upload_message = "You have reached the daily video limit"


CASES = [
    Case("happy path"),
    Case(
        "video job still processing for a few polls: waited for, then posted",
        arrange=lambda fake: setattr(fake, "polls_before_done", 4),
    ),
    Case(
        "answer lost after the record was made: found by its key, never posted twice",
        arrange=lambda fake: fake.script.append("drop"),
        state="may_be_live",
        outcome="failed",
        reason_has="may be live",
        then_look=True,
    ),
    Case(
        "PDS errs twice on create: retried in the job, the key asked for first",
        arrange=lambda fake: fake.script.extend(["status:502", "status:503"]),
    ),
    Case(
        "access token expired mid-run: refreshed once, then posted",
        arrange=lambda fake: setattr(fake, "expire_next_access", True),
    ),
    Case(
        "canUpload false: a limit in Bluesky's words, nothing sent, no try spent",
        arrange=_cannot_upload,
        state="queued",
        outcome="refused_by_limit",
        publishes=0,
        reason_has="daily video limit",
    ),
    Case(
        "session revoked: the account needs reconnecting",
        arrange=lambda fake: setattr(fake, "revoked", True),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="reconnect",
    ),
    Case(
        "post refused as content: the episode needs fixing, nothing posted",
        arrange=lambda fake: fake.script.append("status:400"),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="Bluesky refused the post",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bluesky_cases(home, clip, fake, case):
    bench = connected(home, clip, fake)
    run_case(bench, fake, case, lambda: len(fake.records))


def test_the_post_carries_text_facets_and_the_video_with_its_aspect_ratio(home, clip, fake):
    bench = connected(home, clip, fake, langs=["en"])
    result = bench.send()
    (rkey,) = fake.records
    record = fake.records[rkey]["record"]
    assert result.url == f"https://bsky.app/profile/{HANDLE}/post/{rkey}"
    assert is_tid(rkey)
    assert record["text"].startswith("Rainy night\n\nA warm lofi beat")
    assert record["embed"]["$type"] == "app.bsky.embed.video"
    assert record["embed"]["aspectRatio"] == {"width": 160, "height": 90}
    assert record["embed"]["video"]["mimeType"] == "video/mp4"
    assert record["langs"] == ["en"]
    tags = [f["features"][0]["tag"] for f in record.get("facets", [])]
    assert tags == ["lofi", "rain"]  # "#lofi" of the description, "#rain" added from the tags
    # Limits first, then the upload, then the record; the upload token names the PDS host.
    methods = fake.methods()
    assert methods.index("app.bsky.video.getUploadLimits") < methods.index(
        "app.bsky.video.uploadVideo"
    )
    assert "did:web:127.0.0.1|com.atproto.repo.uploadBlob" in fake.service_tokens.values()
    assert fake.count("com.atproto.server.createSession") == 0  # never a login per post


def test_the_record_key_is_saved_before_the_create_call(home, clip, fake):
    bench = connected(home, clip, fake)
    fake.script.append("drop")
    result = bench.send()
    attempt = bench.db.execute(
        "SELECT handles FROM post_attempts WHERE post_id = ?", (result.post_id,)
    ).fetchone()
    (rkey,) = fake.records
    assert json.loads(attempt[0])["rkey"] == rkey
    # Too early to ask: the look waits 15 minutes after the attempt.
    early = bench.look(result.post_id, after=timedelta(minutes=5))
    assert early.outcome == "busy" and fake.count("com.atproto.repo.getRecord") == 0


def test_a_rotated_refresh_token_is_saved_and_the_old_one_never_used_again(home, clip, fake):
    bench = connected(home, clip, fake, expired=True)
    before = open_tokens(bench.db, home, load_account(bench.db, "bluesky"))
    bench.send()
    after = open_tokens(bench.db, home, load_account(bench.db, "bluesky"))
    assert fake.count("com.atproto.server.refreshSession") == 1
    assert after["refresh_token"] != before["refresh_token"]
    assert after["refresh_token"] in fake.refresh_tokens
    assert before["refresh_token"] not in fake.refresh_tokens  # rotated away at the PDS
    assert len(fake.records) == 1
    # The next post in a later run reuses the fresh session: no refresh, no login.
    second = bench.add_episode(clip, title="Next")
    bench.send(episode_id=second)
    assert fake.count("com.atproto.server.refreshSession") == 1
    assert fake.count("com.atproto.server.createSession") == 0


def test_daily_cap_per_account(home, clip, fake):
    bench = connected(home, clip, fake, daily_cap=2)
    second = bench.add_episode(clip, title="Second")
    third = bench.add_episode(clip, title="Third")
    assert bench.send().outcome == "posted"
    assert bench.send(episode_id=second).outcome == "posted"
    refused = bench.send(episode_id=third)
    assert refused.outcome == "refused_by_limit"
    assert "2 posts today" in refused.reason and "daily cap" in refused.reason
    assert bench.post(refused.post_id)["state"] == "queued"
    assert len(fake.records) == 2
    assert posts_today(bench.db, DID, "2026-11-29") == 2
    shown = limits_report(bench.db, bench.now, bench.config.platforms["bluesky"])
    assert (shown["account"], shown["posts"], shown["daily_cap"]) == ("@" + HANDLE, 2, 2)
    # A new UTC day, a new allowance.
    assert bench.send(episode_id=third, after=timedelta(days=1)).outcome == "posted"


def test_the_same_video_again_is_already_known_and_still_yields_its_blob(home, clip, fake):
    bench = connected(home, clip, fake)
    second = bench.add_episode(clip, title="Same clip, other post")
    bench.send()
    bench.send(episode_id=second)
    assert len(fake.records) == 2
    blobs = [r["record"]["embed"]["video"] for r in fake.records.values()]
    assert blobs[0] == blobs[1]


# -- text ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("hello", 5),
        ("e\u0301", 1),  # e + combining acute
        ("👨‍👩‍👧‍👦", 1),  # a family: ZWJ sequence
        ("👍🏽", 1),  # skin tone
        ("🇩🇪🇫🇷", 2),  # two flags
        ("🇩🇪🇫", 2),  # a flag and a lone indicator
        ("\r\n", 1),
        ("한국어", 3),  # precomposed Hangul
        ("\u1100\u1161\u11a8", 1),  # conjoining jamo: one syllable
        ("1\ufe0f\u20e3", 1),  # keycap
        ("🏳️‍🌈", 1),  # rainbow flag
        ("नमस्ते", 3),  # Devanagari: स्ते is one conjunct cluster (Unicode 15.1)
        ("क्षि", 1),  # a conjunct with its vowel sign
    ],
)
def test_graphemes_are_counted_as_people_see_them(text, count):
    assert grapheme_count(text) == count
    assert "".join(graphemes(text)) == text


def test_a_long_text_is_cut_to_300_graphemes_at_a_word():
    text = "rain on glass 🌧️ " * 60
    fitted = fit_text(text)
    assert grapheme_count(fitted) <= TEXT_MAX_GRAPHEMES
    assert fitted.endswith("…")
    assert fitted[:-1].rstrip().endswith(("glass", "🌧️", "rain", "on"))


def test_facets_use_utf8_byte_offsets():
    text = "Nachtmusik für dich 🌙 #lofi https://example.com/track?id=1. #régen"
    found = facets(text)
    encoded = text.encode("utf-8")
    spans = {
        encoded[f["index"]["byteStart"] : f["index"]["byteEnd"]].decode(): f["features"][0]
        for f in found
    }
    assert spans["#lofi"] == {"$type": "app.bsky.richtext.facet#tag", "tag": "lofi"}
    assert spans["https://example.com/track?id=1"]["uri"] == "https://example.com/track?id=1"
    assert spans["#régen"]["tag"] == "régen"


def test_record_keys_are_tids_that_sort_by_time():
    from datetime import UTC, datetime, timedelta

    early = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
    keys = [new_tid(early + timedelta(seconds=s)) for s in (0, 2, 4)]
    assert all(is_tid(k) and len(k) == 13 for k in keys)
    assert keys == sorted(keys)


# -- connect ----------------------------------------------------------------------------------


def _cli():
    from autoretto.cli import app

    return app


@pytest.fixture
def at_a_terminal(monkeypatch):
    """CliRunner's stdin is no terminal; these tests stand in for the person at one."""
    monkeypatch.setattr("autoretto.commands.connect.terminal", lambda: True)


def test_connect_bluesky_keeps_the_session_never_the_app_password(home, fake, at_a_terminal):
    from typer.testing import CliRunner

    home.mkdir(parents=True, exist_ok=True)
    (home / "autoretto.toml").write_text(
        '[[channels]]\nname = "lofi"\ntimezone = "UTC"\nslots = ["10:07"]\n'
        f'platforms = ["bluesky"]\n\n[platforms.bluesky]\n{fake.settings()}'
    )
    result = CliRunner().invoke(
        _cli(), ["connect", "bluesky", "--handle", "@" + HANDLE], input=APP_PASSWORD + "\n"
    )
    assert result.exit_code == 0, result.output
    assert APP_PASSWORD not in result.output
    assert f"@{HANDLE}" in result.output
    database = (home / "autoretto.db").read_bytes()
    assert APP_PASSWORD.encode() not in database
    assert fake.count("com.atproto.server.createSession") == 1
    from autoretto.ledger.store import open_database

    db = open_database(home / "autoretto.db")
    account = load_account(db, "bluesky")
    assert account.account_id == DID and account.meta["pds"] == fake.pds_url
    tokens = open_tokens(db, home, account)
    assert tokens["refresh_token"] in fake.refresh_tokens
    for token in (tokens["access_token"], tokens["refresh_token"]):
        assert token.encode() not in database


def test_connect_bluesky_with_a_wrong_password_says_so_and_stores_nothing(
    home, fake, at_a_terminal
):
    from typer.testing import CliRunner

    home.mkdir(parents=True, exist_ok=True)
    (home / "autoretto.toml").write_text(
        '[[channels]]\nname = "lofi"\ntimezone = "UTC"\nslots = ["10:07"]\n'
        f'platforms = ["bluesky"]\n\n[platforms.bluesky]\n{fake.settings()}'
    )
    result = CliRunner().invoke(
        _cli(), ["connect", "bluesky", "--handle", HANDLE], input="wxyz-wxyz-wxyz-wxyz\n"
    )
    assert result.exit_code == 2
    assert "did not accept" in result.output
    assert "wxyz-wxyz" not in result.output


# -- what the video service answers --------------------------------------------------------


@pytest.mark.parametrize("status", [400, 200])
def test_an_unconfirmed_email_needs_a_person_and_is_not_a_rejected_episode(
    home, clip, fake, status
):
    fake.email_confirmed, fake.unconfirmed_status = False, status
    bench = connected(home, clip, fake)
    result = bench.send()

    assert bench.post(result.post_id)["state"] == "needs_person"
    assert "confirm the account's email" in result.reason, result.reason
    assert "refused the post" not in result.reason
    assert fake.count("app.bsky.video.getJobStatus") == 0  # never asked with an empty job id
    assert fake.records == {}


@pytest.mark.parametrize("blob_in_answer", [False, True], ids=["via getJobStatus", "in answer"])
def test_already_exists_as_an_http_error_still_yields_the_blob(home, clip, fake, blob_in_answer):
    fake.already_exists_blob = blob_in_answer
    bench = connected(home, clip, fake)
    second = bench.add_episode(clip, title="Same clip, other post")
    assert bench.send().outcome == "posted"
    assert bench.send(episode_id=second).outcome == "posted"

    blobs = [r["record"]["embed"]["video"] for r in fake.records.values()]
    assert len(blobs) == 2 and blobs[0] == blobs[1]
    asked = [r.query.get("jobId") for r in fake.requests if r.method.endswith("getJobStatus")]
    assert all(asked), asked


@pytest.mark.parametrize(
    "nsid",
    ["com.atproto.server.getServiceAuth", "app.bsky.video.getUploadLimits"],
)
def test_an_answer_cut_short_before_the_post_is_passing_not_a_lost_answer(home, clip, fake, nsid):
    # Nothing is posted before createRecord: a 200 whose body is not JSON is asked again in the
    # job, not a post that "may be live" waiting for a person's confirm.
    fake.script[nsid].append("garbled")
    bench = connected(home, clip, fake)
    result = bench.send()

    assert result.outcome == "posted", result.reason
    assert bench.post(result.post_id)["state"] == "published"
    assert len(fake.records) == 1
    assert fake.count(nsid) >= 2


# -- the lexicons ------------------------------------------------------------------------------


def test_a_record_the_lexicons_refuse_is_a_rejected_post(home, clip, fake):
    """The fake checks createRecord against the lexicons (atproto's models, strict formats):
    `langs` must be language codes, so "english" is refused and the post needs fixing."""
    bench = connected(home, clip, fake, langs=["english"])
    result = bench.send()
    assert bench.post(result.post_id)["state"] == "needs_person"
    assert "Bluesky refused the post" in result.reason and "language" in result.reason
    assert fake.records == {}


def test_the_lexicons_take_what_the_adapter_sends(home, clip, fake):
    from tests.fakes.bluesky_server import lexicon_problem

    bench = connected(home, clip, fake, langs=["en"])
    assert bench.send().outcome == "posted"
    (stored,) = fake.records.values()
    assert (
        lexicon_problem(
            {"repo": DID, "collection": "app.bsky.feed.post", "record": stored["record"]}
        )
        is None
    )
    assert "graphemes" in lexicon_problem(
        {"repo": DID, "collection": "app.bsky.feed.post",
         "record": {**stored["record"], "text": "é" * 301}}
    )  # fmt: skip
