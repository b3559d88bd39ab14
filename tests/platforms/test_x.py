"""X against a fake X API: the harness's table of cases, then the credit ledger, the 2-hour
pause for every channel, the caps, the text rule, the token rotation and `connect x`."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from autoretto.accounts import load_account, open_tokens
from autoretto.platforms import REGISTRY
from autoretto.platforms.x import XPlatform, limits_report, strip_links
from tests.fakes import x_server
from tests.fakes.x_server import USER_ID, USERNAME
from tests.platforms.harness import Bench, Case, run_case

JAZZ = """
[[channels]]
name = "jazz"
timezone = "UTC"
slots = ["10:00", "11:00", "12:00"]
platforms = ["x"]
"""


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    monkeypatch.setitem(REGISTRY, "x", XPlatform)


@pytest.fixture
def fake():
    server = x_server.start()
    yield server
    server.close()


def connected(home, clip, fake, *, expired=False, channel_extra="", **settings) -> Bench:
    bench = Bench(
        home, "x", settings=fake.settings(**settings), clip=clip, channel_extra=channel_extra
    )
    bench.connect(
        account_id=USER_ID,
        name="@" + USERNAME,
        tokens=fake.tokens(expired=expired),
        meta={"username": USERNAME},
    )
    return bench


def ledger(bench: Bench) -> dict[int, str]:
    return dict(bench.db.execute("SELECT post_id, state FROM credit_ledger").fetchall())


CASES = [
    Case("happy path"),
    Case(
        "video still processing for a few STATUS polls: waited for, then posted",
        arrange=lambda fake: setattr(fake, "processing_polls", 4),
    ),
    Case(
        "answer lost after the post was made: found in the own timeline, never posted twice",
        arrange=lambda fake: fake.script.append("drop"),
        state="may_be_live",
        outcome="failed",
        reason_has="may be live",
        then_look=True,
    ),
    Case(
        "5xx on the post: may be live, looked for, then posted once",
        arrange=lambda fake: fake.script.append("status:503"),
        state="may_be_live",
        outcome="failed",
        publishes=0,
        reason_has="may have gone out",
        then_look=True,
    ),
    Case(
        "rate limited twice: retried in the job",
        arrange=lambda fake: fake.script.extend(["status:429", "status:429"]),
    ),
    Case(
        "credits exhausted: a limit with the pause's end, no try spent",
        arrange=lambda fake: fake.script.append("credits"),
        state="queued",
        outcome="refused_by_limit",
        publishes=0,
        reason_has="X credits exhausted, paused until 12:05 UTC",
    ),
    Case(
        "access token refused mid-run: refreshed once, then posted",
        arrange=lambda fake: setattr(fake, "expire_next_access", True),
    ),
    Case(
        "account revoked: a person must reconnect",
        arrange=lambda fake: setattr(fake, "revoked", True),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="reconnect",
    ),
    Case(
        "duplicate text refused and not ours: the episode needs fixing",
        arrange=lambda fake: fake.script.append("duplicate"),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="duplicate",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_x_cases(home, clip, fake, case):
    bench = connected(home, clip, fake)
    run_case(bench, fake, case, lambda: len(fake.posts))


def test_the_upload_is_chunked_and_the_post_carries_the_media(home, clip, fake):
    bench = connected(home, clip, fake)
    result = bench.send()
    (post,) = fake.posts
    (media_id, media), *_ = fake.media.items()
    assert result.url == f"https://x.com/{USERNAME}/status/{post['id']}"
    assert post["media_keys"] == [f"7_{media_id}"]
    assert media["category"] == "tweet_video"
    assert len(media["chunks"]) == -(-clip.stat().st_size // 16384) > 1
    assert b"".join(media["chunks"][i] for i in sorted(media["chunks"])) == clip.read_bytes()
    kinds = [seen.kind for seen in fake.requests]
    assert kinds.index("finalize") < kinds.index("status") < kinds.index("create")


def test_the_text_never_carries_a_link(home, clip, fake):
    bench = connected(home, clip, fake)
    episode = bench.add_episode(
        clip, texts={"x": {"text": "New: Rainy night https://example.com/t?id=1 #lofi"}}
    )
    bench.send(episode_id=episode)
    (post,) = fake.posts
    assert post["text"] == "New: Rainy night #lofi"
    attempt = bench.db.execute("SELECT handles FROM post_attempts").fetchone()
    assert json.loads(attempt[0])["links_removed"] == 1
    assert strip_links("listen at www.example.org now") == ("listen at now", 1)


def test_credits_are_reserved_when_queued_and_charged_once_live(home, clip, fake):
    bench = connected(home, clip, fake)
    fake.script.append("drop")
    result = bench.send()
    assert ledger(bench) == {result.post_id: "reserved"}  # sent, but not known live
    report = limits_report(bench.db, bench.now)
    assert (report["reserved"], report["charged"]) == (1, 0)
    bench.look(result.post_id)
    assert ledger(bench) == {result.post_id: "charged"}
    report = limits_report(bench.db, bench.now)
    assert (report["reserved"], report["charged"]) == (0, 1)
    assert report["charged_usd"] == pytest.approx(0.015)
    assert report["channels"]["lofi"]["charged"] == 1


def test_credits_are_released_when_a_post_fails_for_good(home, clip, fake):
    bench = connected(home, clip, fake)
    fake.script.append("duplicate")
    result = bench.send()
    assert bench.post(result.post_id)["state"] == "needs_person"
    assert ledger(bench) == {result.post_id: "released"}
    assert limits_report(bench.db, bench.now)["reserved"] == 0


def test_credits_exhausted_pause_x_for_every_channel_for_two_hours(home, clip, fake):
    bench = connected(home, clip, fake, channel_extra=JAZZ)
    jazz = bench.add_episode(clip, title="Blue hour", channel="jazz")
    fake.script.append("credits")
    first = bench.send()
    assert first.outcome == "refused_by_limit"
    creates = fake.count("create")
    # Another channel, an hour later: refused without asking X at all.
    second = bench.send(episode_id=jazz, after=timedelta(hours=1))
    assert second.outcome == "refused_by_limit"
    assert second.reason == "X credits exhausted, paused until 12:05 UTC"
    assert fake.count("create") == creates and fake.count("initialize") == 1
    report = limits_report(bench.db, bench.now + timedelta(hours=1))
    assert report["paused"] and report["paused_until"] == "2026-11-29T12:05:00Z"
    # Two hours on, both go out.
    assert bench.send(after=timedelta(hours=2, minutes=1)).outcome == "posted"
    assert bench.send(episode_id=jazz, after=timedelta(hours=2, minutes=2)).outcome == "posted"
    assert len(fake.posts) == 2
    assert not limits_report(bench.db, bench.now + timedelta(hours=3))["paused"]


def test_daily_caps_for_the_installation_and_per_channel(home, clip, fake):
    bench = connected(
        home, clip, fake, channel_extra=JAZZ, daily_cap=3, channel_daily_cap=2,
        channel_caps={"jazz": 1},
    )  # fmt: skip
    lofi = [bench.episode_id] + [bench.add_episode(clip, title=t) for t in ("Two", "Three")]
    jazz = [bench.add_episode(clip, title=f"Jazz {n}", channel="jazz") for n in range(2)]
    outcomes = [bench.send(episode_id=e).outcome for e in lofi]
    assert outcomes == ["posted", "posted", "refused_by_limit"]
    assert bench.send(episode_id=jazz[0]).outcome == "posted"
    refused = bench.send(episode_id=jazz[1])
    assert refused.outcome == "refused_by_limit"
    assert "whole installation" in refused.reason
    assert len(fake.posts) == 3
    report = limits_report(bench.db, bench.now, bench.config.platforms["x"])
    assert report["channels"]["jazz"] == {"reserved": 0, "charged": 1, "cap": 1}
    # The next UTC day the caps start again.
    assert bench.send(episode_id=lofi[2], after=timedelta(days=1)).outcome == "posted"


def test_channel_cap_names_the_channel(home, clip, fake):
    bench = connected(home, clip, fake, channel_daily_cap=1)
    second = bench.add_episode(clip, title="Second")
    bench.send()
    refused = bench.send(episode_id=second)
    assert refused.reason.startswith("X: 1 posts today on channel lofi")


def test_a_rotated_refresh_token_is_saved_before_anything_else(home, clip, fake):
    bench = connected(home, clip, fake, expired=True)
    before = open_tokens(bench.db, home, load_account(bench.db, "x"))
    assert bench.send().outcome == "posted"
    after = open_tokens(bench.db, home, load_account(bench.db, "x"))
    assert fake.count("token") == 1
    assert before["refresh_token"] in fake.used_refresh_tokens
    assert after["refresh_token"] in fake.refresh_tokens  # the new one, still unused
    # A second run reuses the fresh access token: the single-use refresh token is not spent.
    bench.send(episode_id=bench.add_episode(clip, title="Next"))
    assert fake.count("token") == 1


def test_connect_x_with_pkce_and_offline_access(home, fake):
    from autoretto.ledger.store import open_database
    from tests.support import SignInPerson, sign_in

    home.mkdir(parents=True, exist_ok=True)
    db = open_database(home / "autoretto.db")
    said: list[str] = []
    settings = {
        "api_base": fake.url,
        "token_uri": fake.token_uri,
        "auth_uri": fake.url + "/i/oauth2/authorize",
    }
    person = SignInPerson(said, ask=lambda prompt: fake.consent(said[1]), secret="")
    account = sign_in("x", db, home, settings, person, client_id=x_server.CLIENT_ID)
    assert account.account_id == USER_ID and account.name == "@" + USERNAME
    tokens = open_tokens(db, home, account)
    assert tokens["refresh_token"] in fake.refresh_tokens
    assert not any(tokens["access_token"] in line for line in said)
    assert tokens["access_token"].encode() not in (home / "autoretto.db").read_bytes()


def test_limits_command_shows_the_ledger(home, clip, fake):
    from typer.testing import CliRunner

    from tests.platforms.test_bluesky import _cli

    bench = connected(home, clip, fake)
    fake.script.append("credits")
    bench.send()
    result = CliRunner().invoke(
        _cli(), ["limits", "--json"], env={"AUTORETTO_NOW": "2026-11-29T11:00:00Z"}
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)["x"]
    assert report["paused"] and report["pause_reason"].endswith("12:05 UTC")
    assert report["reserved"] == 1  # queued, waiting out the pause
    assert json.loads(result.stdout)["bluesky"]["account"] is None
    shown = CliRunner().invoke(_cli(), ["limits"], env={"AUTORETTO_NOW": "2026-11-29T11:00:00Z"})
    assert "X credits exhausted, paused until 12:05 UTC" in shown.stdout


# -- video limits by the account's tier ----------------------------------------------------------


def test_a_video_too_long_for_the_tier_is_rejected_before_any_byte(home, clip, fake):
    """X takes 140 seconds from a standard account: a 200-second episode needs a shorter edit,
    and nothing is uploaded for X to refuse at the end."""
    fake.video_seconds = 200.0
    bench = connected(home, clip, fake)
    long_one = bench.add_episode(clip, title="Long night", duration=200.0)
    result = bench.send(episode_id=long_one)

    assert result.outcome == "failed"
    assert bench.post(result.post_id)["state"] == "needs_person"
    assert "up to 2 min 20 s" in result.reason and "shorter edit" in result.reason, result.reason
    assert "refused:" not in result.reason  # a refusal of the content, not of the account
    assert fake.count("initialize") == 0 and fake.count("append") == 0 and fake.posts == []
    assert ledger(bench) == {result.post_id: "released"}


def test_a_premium_account_posts_the_longer_video(home, clip, fake):
    fake.video_seconds, fake.account_tier = 200.0, "premium"
    bench = connected(home, clip, fake, account_tier="premium")
    long_one = bench.add_episode(clip, title="Long night", duration=200.0)
    assert bench.send(episode_id=long_one).outcome == "posted"
    assert len(fake.posts) == 1


# -- X's OpenAPI description -------------------------------------------------------------------


def test_the_fake_holds_requests_to_xs_description():
    from tests.fakes.x_contract import body_problem, segment_problem

    good = {"media_type": "video/mp4", "total_bytes": 10, "media_category": "tweet_video"}
    assert body_problem("initialize", good) is None
    assert "command" in body_problem("initialize", {**good, "command": "INIT"})
    assert "total_bytes" in body_problem("initialize", {**good, "total_bytes": "10"})
    assert "media_category" in body_problem("initialize", {**good, "media_category": "video"})
    assert body_problem("create", {"text": "hi", "media": {"media_ids": ["1"]}}) is None
    assert "media.media_ids" in body_problem("create", {"text": "hi", "media": {"media_ids": [1]}})
    assert segment_problem({"segment_index": b"0", "media": b"x"}) is None
    assert "segment_index" in segment_problem({"segment_index": b"first", "media": b"x"})


def test_a_post_the_description_refuses_is_a_rejected_post(home, clip, fake, monkeypatch):
    """A media id sent as a number breaks `CreatePostsMedia.media_ids` (strings): X refuses
    the post with 400 and the adapter reads it as a post to fix, not a passing failure."""
    original = XPlatform._ready_media

    def numeric_id(self, request, handles, video):
        return int(original(self, request, handles, video))

    monkeypatch.setattr(XPlatform, "_ready_media", numeric_id)
    bench = connected(home, clip, fake)
    result = bench.send()
    assert bench.post(result.post_id)["state"] == "needs_person"
    assert "media_ids" in result.reason and fake.posts == []


def test_a_create_call_that_times_out_is_found_not_posted_again(home, clip, fake):
    """X makes the post but answers after the client's timeout (1 s): the post may be live;
    the later look finds it on the timeline by the attempt's media key, and posts nothing."""
    settings = fake.settings
    fake.settings = lambda **extra: settings(**extra).replace("timeout = 30", "timeout = 1")
    bench = connected(home, clip, fake)
    fake.hold("create")
    try:
        result = bench.send()
    finally:
        fake.release()
    assert "ReadTimeout" in (result.reason or "") and len(fake.posts) == 1, result
    assert bench.post(result.post_id)["state"] == "may_be_live"
    again = bench.look(result.post_id)
    assert again.outcome == "posted" and not again.sent, again
    assert bench.post(result.post_id)["state"] == "published" and len(fake.posts) == 1
