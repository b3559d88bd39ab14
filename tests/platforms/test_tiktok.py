"""TikTok against a fake Content Posting API: the harness's table of cases, then the chunk
rules, the privacy rules, the never-twice checks on a next try, tokens and `connect tiktok`."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoretto.accounts import load_account, open_tokens
from autoretto.platforms import REGISTRY
from autoretto.platforms.base import ContentRejected
from autoretto.platforms.tiktok import (
    MB,
    TikTokChoices,
    TikTokPlatform,
    chunk_plan,
)
from tests.fakes import tiktok_server
from tests.fakes.tiktok_server import CLIENT_SECRET, OPEN_ID, USERNAME, chunk_problem
from tests.platforms.harness import Bench, Case, run_case

PRIVATE = TikTokChoices(title="Rainy night #lofi", privacy_level="SELF_ONLY", music_confirmed=True)


class ChosenTikTok(TikTokPlatform):
    """The adapter as `post tiktok` builds it: with the person's choices for this post."""

    chosen = PRIVATE

    def __init__(self, context, *, choices=None):
        super().__init__(context, choices=choices or self.chosen)


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    # The harness builds platforms from REGISTRY; TikTok is never on a slot otherwise.
    monkeypatch.setitem(REGISTRY, "tiktok", ChosenTikTok)
    monkeypatch.setattr(ChosenTikTok, "chosen", PRIVATE)


@pytest.fixture
def fake():
    server = tiktok_server.start()
    yield server
    server.close()


def connected(home, clip, fake, *, expired=False, **settings) -> Bench:
    settings.setdefault("poll_tries", 3)
    bench = Bench(home, "tiktok", settings=fake.settings(**settings), clip=clip)
    bench.connect(
        account_id=OPEN_ID,
        name="@" + USERNAME,
        tokens=fake.tokens(expired=expired),
        meta={"username": USERNAME},
    )
    return bench


def _script(endpoint: str, *words: str):
    return lambda fake: fake.script[endpoint].extend(words)


CASES = [
    Case("happy path: private until audited"),
    Case(
        "TikTok processes for a few polls: waited for, then posted",
        arrange=lambda fake: setattr(fake, "polls_before_done", 2),
    ),
    Case(
        "the only chunk's answer is lost: sent again, one publish",
        arrange=_script("upload", "drop"),
    ),
    Case(
        "status unreachable after the bytes: may be live; the look finds it complete",
        arrange=_script("status", "drop", "drop", "drop"),
        state="may_be_live",
        outcome="failed",
        reason_has="may be live",
        then_look=True,
    ),
    Case(
        "init errs twice: retried in the job, the publish id asked about first",
        arrange=_script("init", "status:500", "status:503"),
    ),
    Case(
        "init answer lost: nothing can publish without the bytes, so a new init is safe",
        arrange=_script("init", "drop"),
    ),
    Case(
        "spam_risk_too_many_posts at creator_info: the account waits, no try spent",
        arrange=_script("creator", "spam"),
        state="queued",
        outcome="refused_by_limit",
        publishes=0,
        reason_has="posted as much as it may today",
    ),
    Case(
        "rate limited at init: the account waits, no try spent",
        arrange=_script("init", "rate"),
        state="queued",
        outcome="refused_by_limit",
        publishes=0,
        reason_has="rate limiting",
    ),
    Case(
        "access token expired mid-run: refreshed once, then posted",
        arrange=lambda fake: setattr(fake, "expire_next_access", True),
    ),
    Case(
        "tokens revoked: the account needs reconnecting",
        arrange=lambda fake: setattr(fake, "revoked", True),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="reconnect",
    ),
    Case(
        "unaudited app, public account: a person must make it private",
        arrange=_script("init", "unaudited"),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="set the TikTok account to private",
    ),
    Case(
        "TikTok fails the publish for its format: the episode needs fixing",
        arrange=lambda fake: setattr(fake, "fail_reason", "file_format_check_failed"),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="file_format_check_failed",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_tiktok_cases(home, clip, fake, case):
    bench = connected(home, clip, fake)
    run_case(bench, fake, case, lambda: len(fake.published))


def test_the_post_carries_the_choices_and_is_private_until_audited(home, clip, fake, monkeypatch):
    chosen = TikTokChoices(
        title="Rain", privacy_level="PUBLIC_TO_EVERYONE", allow_comment=True, allow_duet=True,
        music_confirmed=True, is_aigc=True,
    )  # fmt: skip
    monkeypatch.setattr(ChosenTikTok, "chosen", chosen)
    bench = connected(home, clip, fake)
    result = bench.send()
    (publish,) = fake.inits
    info = publish.post_info
    assert info["privacy_level"] == "SELF_ONLY"  # forced: the app is not audited
    assert info["disable_comment"] is False
    assert info["disable_duet"] is True  # the creator turned Duet off: it stays off
    assert info["disable_stitch"] is True  # not ticked
    assert info["is_aigc"] is True and info["title"] == "Rain"
    assert not info["brand_content_toggle"] and not info["brand_organic_toggle"]
    # creator_info is asked first, then init, then the bytes, then the status.
    paths = fake.paths()
    assert paths.index("/v2/post/publish/creator_info/query/") < paths.index(
        "/v2/post/publish/video/init/"
    )
    # A private post has no public id: the profile is where it shows.
    assert result.url == f"https://www.tiktok.com/@{USERNAME}"
    post = bench.post(result.post_id)
    assert post["platform_post_id"] == publish.publish_id


def test_audited_posts_with_the_chosen_privacy_and_links_the_video(home, clip, fake, monkeypatch):
    monkeypatch.setattr(
        ChosenTikTok,
        "chosen",
        TikTokChoices(title="Rain", privacy_level="PUBLIC_TO_EVERYONE", music_confirmed=True),
    )
    bench = connected(home, clip, fake, audited=True)
    result = bench.send()
    (publish,) = fake.published
    assert publish.post_info["privacy_level"] == "PUBLIC_TO_EVERYONE"
    assert result.url == f"https://www.tiktok.com/@{USERNAME}/video/{publish.post_id}"


def test_branded_content_is_never_sent_private(home, clip, fake, monkeypatch):
    monkeypatch.setattr(
        ChosenTikTok,
        "chosen",
        TikTokChoices(
            title="Rain",
            privacy_level="SELF_ONLY",
            disclose_commercial=True,
            branded_content=True,
            music_confirmed=True,
        ),
    )
    bench = connected(home, clip, fake)
    result = bench.send()
    assert result.outcome == "failed" and "cannot be set to private" in result.reason
    assert fake.calls_to("/video/init/") == 0


def test_the_publish_id_is_saved_before_the_first_byte(home, clip, fake):
    bench = connected(home, clip, fake)
    seen_at_upload = []

    def look_at_the_record(publish):
        # The fake serves from its own thread: read the record through a connection of its own.
        connection = sqlite3.connect(home / "autoretto.db")
        try:
            found = connection.execute("SELECT handles FROM post_attempts").fetchone()
        finally:
            connection.close()
        seen_at_upload.append(json.loads(found[0]).get("publish_id"))

    fake.on_upload = look_at_the_record
    bench.send()
    (publish,) = fake.inits
    assert seen_at_upload == [publish.publish_id]


def test_a_next_try_asks_about_the_last_publish_before_a_new_init(home, clip, fake):
    bench = connected(home, clip, fake)
    # Every send of the chunk is refused: the job gives up, the post waits for a next try.
    fake.script["upload"].extend(["status:400"] * 3)
    first = bench.send()
    assert bench.post(first.post_id)["state"] == "failed", first
    inits_before = fake.calls_to("/video/init/")
    fake.requests.clear()
    second = bench.send(after=timedelta(hours=1))
    assert second.outcome == "posted"
    paths = fake.paths()
    # The earlier publish is asked about first; its upload never finished, so a new one is made.
    assert paths[0] == "/v2/post/publish/status/fetch/"
    assert fake.calls_to("/video/init/") == 1 and inits_before >= 1
    assert len(fake.published) == 1


def test_a_press_after_a_lost_answer_never_inits_again(home, clip, fake):
    bench = connected(home, clip, fake)
    fake.script["status"].extend(["drop"] * 3)
    first = bench.send()
    assert bench.post(first.post_id)["state"] == "may_be_live"
    again = bench.send(after=timedelta(minutes=1))
    assert again.outcome == "posted" and "earlier attempt went out" in again.reason
    assert fake.calls_to("/video/init/") == 1
    assert len(fake.published) == 1


def test_a_spam_wait_refuses_later_presses_without_asking_tiktok(home, clip, fake):
    bench = connected(home, clip, fake)
    fake.script["creator"].append("spam")
    assert bench.send().outcome == "refused_by_limit"
    asked = len(fake.requests)
    later = bench.send(after=timedelta(hours=2))
    assert later.outcome == "refused_by_limit" and "wait until" in later.reason
    assert len(fake.requests) == asked  # the account waits: TikTok is not asked again
    assert bench.send(after=timedelta(hours=25)).outcome == "posted"


def test_a_large_file_goes_in_chunks_by_the_rules(home, clip, fake, tmp_path):
    big = tmp_path / "big.mp4"
    big.write_bytes(clip.read_bytes() + bytes(12 * MB - clip.stat().st_size))
    bench = connected(home, clip, fake, chunk_size=5 * MB)
    episode = bench.add_episode(big, title="Big")
    assert bench.send(episode_id=episode).outcome == "posted"
    (publish,) = fake.published
    assert publish.source_info == {
        "source": "FILE_UPLOAD", "video_size": 12 * MB, "chunk_size": 5 * MB,
        "total_chunk_count": 2,
    }  # fmt: skip
    assert publish.chunks == [
        f"bytes 0-{5 * MB - 1}/{12 * MB}",
        f"bytes {5 * MB}-{12 * MB - 1}/{12 * MB}",  # the last chunk takes the remainder
    ]
    assert bytes(publish.received) == big.read_bytes()


@pytest.mark.parametrize(
    ("size", "chunk", "count", "last"),
    [
        (1 * MB, 10 * MB, 1, 1 * MB),  # under 5 MB: whole
        (5 * MB, 10 * MB, 1, 5 * MB),
        (63 * MB, 64 * MB, 1, 63 * MB),
        (64 * MB + 1, 64 * MB, 2, 32 * MB + 1),  # over 64 MB: never one chunk
        (100 * MB, 64 * MB, 2, 50 * MB),
        (200 * MB + 7, 10 * MB, 20, 10 * MB + 7),
        (6000 * MB, 5 * MB, 1000, 6 * MB),  # 1000 chunks at most: the chunks grow
    ],
)
def test_chunk_plans_follow_tiktoks_rules(size, chunk, count, last):
    plan = chunk_plan(size, chunk)
    assert plan.total_chunk_count == count
    assert plan.total_chunk_count == size // plan.chunk_size or size < 5 * MB
    first, final = plan.ranges[-1]
    assert final - first + 1 == last <= 128 * MB
    assert plan.ranges[0][0] == 0 and final == size - 1
    assert all(b[0] == a[1] + 1 for a, b in zip(plan.ranges, plan.ranges[1:], strict=False))


@settings(max_examples=400, deadline=None)
@given(
    size=st.integers(min_value=1, max_value=64_000 * MB),
    chunk=st.integers(min_value=1, max_value=512 * MB),
)
def test_every_plan_keeps_the_rules_whatever_the_chunk_size(size, chunk):
    """The fake's rules (TikTok's media transfer guide) hold for every plan, even for a
    chunk_size a person never should have set."""
    try:
        plan = chunk_plan(size, chunk)
    except ContentRejected:
        assert size > 1000 * 64 * MB
        return
    source = {
        "source": "FILE_UPLOAD",
        "video_size": size,
        "chunk_size": plan.chunk_size,
        "total_chunk_count": plan.total_chunk_count,
    }
    assert chunk_problem(source) is None, (size, chunk, source)
    assert plan.ranges[-1][1] == size - 1


def test_a_file_just_over_64_mb_goes_in_two_chunks_through_the_fake(home, clip, fake, tmp_path):
    size = 64 * MB + 1
    big = tmp_path / "big.mp4"
    big.write_bytes(clip.read_bytes() + bytes(size - clip.stat().st_size))
    bench = connected(home, clip, fake, chunk_size=64 * MB)
    episode = bench.add_episode(big, title="Big")
    assert bench.send(episode_id=episode).outcome == "posted", fake.requests[-1:]
    (publish,) = fake.published
    assert publish.source_info["total_chunk_count"] == 2
    assert len(publish.chunks) == 2 and bytes(publish.received) == big.read_bytes()


def test_an_empty_file_is_refused():
    with pytest.raises(ContentRejected):
        chunk_plan(0, 10 * MB)


def test_a_rotated_refresh_token_is_saved_and_the_old_one_refused(home, clip, fake):
    bench = connected(home, clip, fake, expired=True)
    before = open_tokens(bench.db, home, load_account(bench.db, "tiktok"))
    assert bench.send().outcome == "posted"
    after = open_tokens(bench.db, home, load_account(bench.db, "tiktok"))
    assert after["refresh_token"] != before["refresh_token"]
    assert after["refresh_token"] in fake.refresh_tokens
    assert before["refresh_token"] not in fake.refresh_tokens
    assert load_account(bench.db, "tiktok").meta["refresh_expires_at"] > "2027"
    database = (home / "autoretto.db").read_bytes()
    assert after["refresh_token"].encode() not in database  # sealed, never in clear
    assert CLIENT_SECRET.encode() not in database


def test_connect_tiktok_with_hex_pkce(home, fake):
    from autoretto.ledger.store import open_database
    from tests.support import SignInPerson, sign_in

    home.mkdir(parents=True, exist_ok=True)
    db = open_database(home / "autoretto.db")
    said: list[str] = []
    settings = {
        "api_base": fake.url,
        "token_uri": fake.url + "/v2/oauth/token/",
        "auth_uri": fake.url + "/v2/auth/authorize/",
    }
    person = SignInPerson(said, ask=lambda prompt: fake.consent(said[1]), secret=CLIENT_SECRET)
    account = sign_in("tiktok", db, home, settings, person, client_key=tiktok_server.CLIENT_KEY)
    assert account.account_id == OPEN_ID and account.name == "@" + USERNAME
    assert account.meta["nickname"] == tiktok_server.NICKNAME
    tokens = open_tokens(db, home, account)
    assert tokens["refresh_token"] in fake.refresh_tokens
    assert tokens["scopes"] == ["user.info.basic", "video.publish"]
    assert not any(tokens["access_token"] in line for line in said)
    assert tokens["access_token"].encode() not in (home / "autoretto.db").read_bytes()


def test_config_check_refuses_a_chunk_size_outside_the_rules(home, cli):
    from tests.support import channel_toml, write_config

    write_config(home, channel_toml(), extra="[platforms.tiktok]\nchunk_size = 100000000\n")
    code, _, err = cli("config", "check")
    assert code == 2
    assert "platforms.tiktok.chunk_size" in err and "5 MB and 64 MB" in err
