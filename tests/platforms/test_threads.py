"""Threads against a local fake of the Threads API, through the real media host."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from autoretto.accounts import load_account, open_tokens
from autoretto.platforms import REGISTRY
from autoretto.platforms.instagram import marker_token
from autoretto.platforms.threads import TEXT_MAX, ThreadsPlatform, fit_thread_text, text_cost
from tests.fakes.threads_server import APP_ID, APP_SECRET, FakeGraph, fake_threads
from tests.platforms.harness import Bench, Case, run_case
from tests.platforms.test_instagram import (
    check_a_post_in_flight_counts,
    connect,
    free_port,
    host_settings,
    lose_the_publish_and_the_container,
)
from tests.support import SignInPerson, sign_in


def settings_for(fake: FakeGraph, port: int, extra: str = "") -> str:
    return (
        f'api_base = "{fake.url}"\n'
        f'token_uri = "{fake.url}/oauth/access_token"\n'
        f'app_id = "{APP_ID}"\n'
        "wait_first = 0\nwait_between = 0\n" + extra + host_settings("threads", port)
    )


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(REGISTRY, "threads", ThreadsPlatform)
    monkeypatch.setenv("AUTORETTO_VAULT", "file")


@pytest.fixture
def fake():
    with fake_threads() as server:
        yield server


@pytest.fixture
def bench(home: Path, clip: Path, fake: FakeGraph) -> Bench:
    bench = Bench(home, "threads", settings=settings_for(fake, free_port()), clip=clip)
    connect(bench, fake)
    return bench


def _state(**changes: Any):
    """Set Meta's own state on the fake (processing, container errors, the live limit)."""

    def arrange(fake: FakeGraph) -> None:
        for key, value in changes.items():
            setattr(fake, key, value)

    return arrange


CASES = [
    Case("happy path", extra={"containers": 1}),
    Case(
        "processing takes several polls (within the five)",
        arrange=_state(processing_polls=3),
        extra={"containers": 1},
    ),
    Case(
        "processing outlasts the polls: left for a later slot, the container kept",
        arrange=_state(processing_polls=9),
        state="failed",
        outcome="failed",
        publishes=0,
        reason_has="still processing",
        extra={"containers": 1},
    ),
    Case(
        "FAILED_PROCESSING_VIDEO: a new container, published",
        arrange=_state(container_errors=["FAILED_PROCESSING_VIDEO"]),
        extra={"containers": 2},
    ),
    Case(
        "INVALID_ASPEC_RATIO: the episode is rejected",
        arrange=_state(container_errors=["INVALID_ASPEC_RATIO"]),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="INVALID_ASPEC_RATIO",
        extra={"containers": 1},
    ),
    Case(
        "the answer to the publish is lost: the container shows PUBLISHED, no second publish",
        arrange=lambda fake: fake.drop_after("publish"),
        extra={"containers": 1},
    ),
    Case(
        "the answer is lost and the container cannot be asked: may be live, then found",
        arrange=lose_the_publish_and_the_container,
        state="may_be_live",
        outcome="failed",
        reason_has="may be live",
        then_look=True,
        extra={"containers": 1},
    ),
    Case(
        "token refused (190): the account is marked reconnect",
        arrange=lambda fake: fake.revoke(),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="autoretto connect threads",
        extra={"containers": 0, "account": "reconnect"},
    ),
    Case(
        "Threads' own limit is used (250 of 250): refused by limit, no try spent",
        arrange=_state(quota_usage=250),
        state="queued",
        outcome="refused_by_limit",
        publishes=0,
        reason_has="250 of 250",
        extra={"containers": 0, "attempts": 0},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_threads_cases(bench: Bench, fake: FakeGraph, clip: Path, case: Case) -> None:
    run_case(bench, fake, case, lambda: len(fake.publishes))
    assert fake.count("create") == case.extra["containers"], fake.kinds()
    if "account" in case.extra:
        assert load_account(bench.db, "threads").state == case.extra["account"]
    if "attempts" in case.extra:
        assert bench.db.execute("SELECT attempts FROM posts").fetchone()[0] == 0
    for fetch in fake.fetches:
        assert fetch == {"status": 200, "bytes": clip.stat().st_size}
    for container in fake.containers.values():
        with pytest.raises(requests.ConnectionError):
            requests.get(container.video_url, timeout=5)


def test_a_lost_answer_is_asked_about_after_15_minutes(bench: Bench, fake: FakeGraph) -> None:
    lose_the_publish_and_the_container(fake)
    result = bench.send()
    assert bench.post(result.post_id)["state"] == "may_be_live"
    early = bench.look(result.post_id, after=timedelta(minutes=10))
    assert early.outcome == "busy" and "asked about it from" in early.reason
    assert bench.post(result.post_id)["state"] == "may_be_live"
    later = bench.look(result.post_id, after=timedelta(minutes=16))
    assert later.outcome == "posted" and bench.post(result.post_id)["state"] == "published"
    assert len(fake.publishes) == 1


def test_the_configured_daily_cap_refuses_without_a_try(
    home: Path, clip: Path, fake: FakeGraph
) -> None:
    bench = Bench(
        home, "threads", settings=settings_for(fake, free_port(), "daily_cap = 1\n"), clip=clip
    )
    connect(bench, fake)
    assert bench.send().outcome == "posted"
    second = bench.add_episode(clip, title="Second")
    result = bench.send(episode_id=second, after=timedelta(hours=1))
    assert result.outcome == "refused_by_limit"
    assert "1 of 1 posts in the last 24 hours" in result.reason and "daily_cap" in result.reason
    assert bench.post(result.post_id)["attempts"] == 0
    assert len(fake.publishes) == 1


def test_the_text_fits_500_with_the_marker(bench: Bench, fake: FakeGraph, clip: Path) -> None:
    long_words = "rain on the window 🌧️ " * 60
    episode_id = bench.add_episode(clip, title="Long night", texts={"threads": long_words})
    result = bench.send(episode_id=episode_id)
    assert result.outcome == "posted"
    (published,) = fake.publishes
    attempt = bench.db.execute(
        "SELECT marker FROM post_attempts WHERE post_id = ?", (result.post_id,)
    ).fetchone()
    assert published["text"].endswith("…\n\n" + marker_token(attempt[0]))
    assert text_cost(published["text"]) <= TEXT_MAX
    assert published["permalink"].startswith("https://www.threads.com/@rainlofi/post/")


def test_text_cost_counts_emoji_bytes() -> None:
    assert text_cost("abc") == 3
    assert text_cost("é") == 1
    assert text_cost("🌧") == 4
    fitted = fit_thread_text("🌧" * 200, "ar0123456789")
    assert text_cost(fitted) <= TEXT_MAX and fitted.endswith("…\n\nar0123456789")
    assert fit_thread_text("short", "") == "short"


def test_the_long_lived_token_is_refreshed_with_th_refresh_token(
    home: Path, clip: Path, fake: FakeGraph
) -> None:
    bench = Bench(home, "threads", settings=settings_for(fake, free_port()), clip=clip)
    old = connect(bench, fake, days_left=20)
    assert bench.send().outcome == "posted"
    (refresh,) = [r for r in fake.requests if r["kind"] == "refresh"]
    assert refresh["grant_type"] == "th_refresh_token"
    tokens = open_tokens(bench.db, home, load_account(bench.db, "threads"))
    assert tokens["access_token"] != old
    assert bench.platform().token_expires_at() is not None


def test_an_expired_token_needs_a_person_without_calling_threads(
    home: Path, clip: Path, fake: FakeGraph
) -> None:
    bench = Bench(home, "threads", settings=settings_for(fake, free_port()), clip=clip)
    connect(bench, fake, days_left=-1)
    result = bench.send()
    assert bench.post(result.post_id)["state"] == "needs_person"
    account = load_account(bench.db, "threads")
    assert account.state == "reconnect" and "expired" in account.reason
    assert fake.count("refresh") == 0 and fake.count("create") == 0


def test_connect_threads_stores_the_long_lived_token(home: Path, fake: FakeGraph) -> None:
    from autoretto.ledger.store import open_database

    home.mkdir(parents=True, exist_ok=True)
    db = open_database(home / "autoretto.db")
    said: list[str] = []

    def ask(prompt: str) -> str:
        address = next(line for line in said if line.startswith(fake.url))
        query = parse_qs(urlsplit(address).query)
        assert query["scope"] == [
            "threads_basic,threads_content_publish,threads_manage_insights,"
            "threads_read_replies,threads_manage_replies"
        ]
        return f"https://localhost/?code={fake.authorize()}&state={query['state'][0]}"

    account = sign_in(
        "threads",
        db,
        home,
        {
            "api_base": fake.url,
            "token_uri": fake.url + "/oauth/access_token",
            "auth_uri": fake.url + "/oauth/authorize",
        },
        SignInPerson(said, ask=ask, secret=APP_SECRET),
        app_id=APP_ID,
        account="rainlofi",
    )
    assert account.account_id == fake.user_id and account.name == "rainlofi"
    assert [r["grant_type"] for r in fake.requests if r["kind"] == "exchange"] == [
        "th_exchange_token"
    ]
    tokens = open_tokens(db, home, account)
    assert tokens["access_token"] in fake.tokens
    assert not any(tokens["access_token"] in line or APP_SECRET in line for line in said)


def test_a_threads_version_that_is_not_served_needs_a_person(
    home: Path, clip: Path, fake: FakeGraph
) -> None:
    """The Threads API serves v1.0; a version it does not serve is a person's fix (upgrade or
    set api_version), never a passing retry that spends a try each slot."""
    bench = Bench(
        home,
        "threads",
        settings=settings_for(fake, free_port(), 'api_version = "v9.0"\n'),
        clip=clip,
    )
    connect(bench, fake)
    result = bench.send()

    assert bench.post(result.post_id)["state"] == "needs_person"
    assert "v9.0" in result.reason and "api_version" in result.reason, result.reason
    assert fake.posts == [] and fake.containers == {}
    bench.send(after=timedelta(hours=1))
    assert fake.containers == {}


def test_a_post_in_flight_counts_against_the_daily_cap(
    home: Path, clip: Path, fake: FakeGraph
) -> None:
    """As on Facebook and LinkedIn, a post that may be live counts against `daily_cap`."""
    settings = settings_for(fake, free_port(), "daily_cap = 1\n")
    bench = Bench(home, "threads", settings=settings, clip=clip)
    connect(bench, fake)
    check_a_post_in_flight_counts(bench, fake, clip)


@pytest.mark.parametrize("text", ["—" * 200, "…" * 170, "雨の夜" * 60, "🌧" * 120, "a" * 500])
def test_the_pipeline_and_the_post_measure_a_text_alike(text: str) -> None:
    # The pipeline refuses what the adapter would cut, and passes what it would send whole.
    too_long = text_cost(text) > TEXT_MAX
    assert bool(ThreadsPlatform.text_problems({"text": text})) == too_long
    assert (fit_thread_text(text) != text) == too_long
