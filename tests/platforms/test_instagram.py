"""Instagram Reels against a local fake of Meta's container API, through the real media host.

The fake fetches the video from the media host link it is given, as Instagram does, so every
case also shows the link working once and dying with its attempt.
"""

from __future__ import annotations

import socket
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
import typer
from typer.testing import CliRunner

from autoretto.accounts import load_account, open_tokens
from autoretto.clock import iso, now
from autoretto.commands.connect import register
from autoretto.episodes import episode_view, get_episode
from autoretto.errors import AutorettoError
from autoretto.ledger.store import open_database
from autoretto.platforms import REGISTRY
from autoretto.platforms.base import PostRequest, RetryPolicy
from autoretto.platforms.instagram import (
    CAPTION_MAX_CHARS,
    InstagramPlatform,
    fit_caption,
    marker_token,
)
from autoretto.posts import send_post
from tests.fakes.instagram_server import APP_ID, APP_SECRET, INSTAGRAM, FakeGraph
from tests.platforms.harness import Bench, Case, run_case
from tests.support import SignInPerson, sign_in


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def host_settings(name: str, port: int, extra: str = "") -> str:
    return (
        f"\n[platforms.{name}.media_host]\n"
        'kind = "self"\n'
        f'bind = "127.0.0.1:{port}"\n'
        f'public_url = "http://127.0.0.1:{port}"\n' + extra
    )


def settings_for(fake: FakeGraph, port: int, extra: str = "") -> str:
    return (
        f'api_base = "{fake.url}"\n'
        f'token_uri = "{fake.url}/oauth/access_token"\n'
        f'auth_uri = "{fake.url}/oauth/authorize"\n'
        f'app_id = "{APP_ID}"\n'
        "wait_first = 0\nwait_between = 0\npolls = 6\n" + extra + host_settings("instagram", port)
    )


def connect(bench: Bench, fake: FakeGraph, *, days_left: float = 60) -> str:
    token = fake.issue_token()
    expires_at = iso(now() + timedelta(days=days_left))
    bench.connect(
        account_id=fake.user_id,
        name=fake.username,
        tokens={"access_token": token, "refresh_token": token, "expires_at": expires_at},
        meta={"username": fake.username, "token_expires_at": expires_at},
    )
    return token


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(REGISTRY, "instagram", InstagramPlatform)
    monkeypatch.setenv("AUTORETTO_VAULT", "file")


@pytest.fixture
def fake():
    with FakeGraph(INSTAGRAM) as server:
        yield server


@pytest.fixture
def bench(home: Path, clip: Path, fake: FakeGraph) -> Bench:
    bench = Bench(home, "instagram", settings=settings_for(fake, free_port()), clip=clip)
    connect(bench, fake)
    return bench


def _state(**changes: Any):
    """Set Meta's own state on the fake (processing, container errors, the live limit)."""

    def arrange(fake: FakeGraph) -> None:
        for key, value in changes.items():
            setattr(fake, key, value)

    return arrange


def lose_the_publish_and_the_container(fake: FakeGraph) -> None:
    """The next publish goes through but its answer is lost, and the three reads of the
    container after it (every try of one look) are cut: the post may be live."""
    fake.drop_after("publish")
    fake.script["object"].extend(["ok", "hangup", "hangup", "hangup"])  # the first read: FINISHED


CASES = [
    Case("happy path", extra={"containers": 1}),
    Case(
        "processing takes several polls",
        arrange=_state(processing_polls=4),
        extra={"containers": 1},
    ),
    Case(
        "a container errors on a passing error: a new container, published",
        arrange=_state(container_errors=["Error: unknown upload error (2207053)"]),
        extra={"containers": 2},
    ),
    Case(
        "a container refuses the video (INVALID_*): the episode is rejected",
        arrange=lambda fake: fake.refuse_next("create"),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="refused the video",
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
        "the publish is refused for a moment: the same container is published on the retry",
        arrange=lambda fake: fake.fail_next("publish", 503),
        extra={"containers": 1},
    ),
    Case(
        "Meta asks to try again (400, subcode 2207003): retried inside the job",
        arrange=lambda fake: fake.graph_error_next("create", -2, 2207003),
        extra={"containers": 2},
    ),
    Case(
        "5xx twice while making the container: retried inside the job",
        arrange=lambda fake: fake.fail_next("*", 500, times=2),
        extra={"containers": 1},
    ),
    Case(
        "token refused (190): the account is marked reconnect, a person must look",
        arrange=lambda fake: fake.revoke(),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="autoretto connect instagram",
        extra={"containers": 0, "account": "reconnect"},
    ),
    Case(
        "the live publishing limit is used: refused by limit, no try spent",
        arrange=_state(quota_usage=50, quota_total=50),
        state="queued",
        outcome="refused_by_limit",
        publishes=0,
        reason_has="50 of 50",
        extra={"containers": 0, "attempts": 0},
    ),
    Case(
        "the limit is met at publish time: refused by limit, no try spent",
        arrange=lambda fake: fake.graph_error_next("publish", 9, 2207042),
        state="queued",
        outcome="refused_by_limit",
        publishes=0,
        reason_has="publishing limit",
        extra={"containers": 1, "attempts": 0},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_instagram_cases(bench: Bench, fake: FakeGraph, clip: Path, case: Case) -> None:
    run_case(bench, fake, case, lambda: len(fake.publishes))
    assert fake.count("create") == case.extra["containers"], fake.kinds()
    if "account" in case.extra:
        assert load_account(bench.db, "instagram").state == case.extra["account"]
    if "attempts" in case.extra:
        post = bench.db.execute("SELECT attempts FROM posts").fetchone()
        assert post[0] == case.extra["attempts"]
    for fetch in fake.fetches:  # each container fetched the whole video from the media host
        assert fetch == {"status": 200, "bytes": clip.stat().st_size}
    for container in fake.containers.values():  # no link outlives its attempt
        with pytest.raises(requests.ConnectionError):
            requests.get(container.video_url, timeout=5)


def test_the_post_carries_the_caption_the_marker_and_a_permalink(
    bench: Bench, fake: FakeGraph
) -> None:
    result = bench.send()
    post = bench.post(result.post_id)
    (published,) = fake.publishes
    assert post["platform_post_id"] == published["id"]
    assert post["url"] == published["permalink"]
    assert post["url"].startswith("https://www.instagram.com/reel/")
    (container,) = fake.containers.values()
    assert container.fields["media_type"] == "REELS"
    assert container.fields["share_to_feed"] == "true"
    caption = published["caption"]
    assert caption.startswith("Rainy night\n\nA warm lofi beat")
    assert "#lofi" in caption and "#rain" in caption
    attempt = bench.db.execute("SELECT marker, handles FROM post_attempts").fetchone()
    assert caption.endswith(marker_token(attempt[0]))
    assert container.id in attempt[1]  # the container id was saved with the attempt


def test_a_retry_with_a_saved_finished_container_publishes_it_without_a_new_one(
    bench: Bench, fake: FakeGraph
) -> None:
    # One try in the job: the publish fails for a moment and the post waits for a later slot.
    fake.fail_next("publish", 503)
    platform = bench.platform()
    single = InstagramPlatform(
        replace(platform.context, retry=RetryPolicy(attempts=1, first_wait=0.0))
    )
    first = send_post(
        bench.posting(bench.now),
        single,
        get_episode(bench.db, bench.episode_id),
        publish_at=bench.now,
        slot="2026-11-29T10:00",
    )
    assert bench.post(first.post_id)["state"] == "failed"
    assert fake.count("create") == 1 and not fake.publishes
    second = bench.send(after=timedelta(hours=1))
    assert bench.post(second.post_id)["state"] == "published"
    assert fake.count("create") == 1, "the saved FINISHED container was published"
    assert len(fake.publishes) == 1


def test_find_attempt_matches_the_marker_in_the_recent_posts(bench: Bench, fake: FakeGraph) -> None:
    marker = "autoretto-7-1-abcd1234"
    fake.add_post(f"Rainy night\n\n{marker_token(marker)}")
    fake.add_post("something else")
    platform = bench.platform()
    request = PostRequest(
        post_id=7,
        attempt=1,
        marker=marker,
        channel="lofi",
        platform="instagram",
        episode=None,  # type: ignore[arg-type]
        publish_at=bench.now,
    )
    found = platform.find_attempt(request)
    assert found is not None and found.url.startswith("https://www.instagram.com/reel/")
    other = PostRequest(**{**request.__dict__, "marker": "autoretto-7-2-ffff0000"})
    assert platform.find_attempt(other) is None


def test_an_episode_without_a_reels_edit_is_unsuitable(bench: Bench, clip: Path) -> None:
    episode_id = bench.add_episode(clip, title="Long one", videos={"reels": None})
    reason = bench.platform().unsuitable_reason(episode_view(get_episode(bench.db, episode_id)))
    assert reason and "90-second" in reason


def test_a_token_a_day_old_is_refreshed_once_and_saved_sealed(
    home: Path, clip: Path, fake: FakeGraph
) -> None:
    bench = Bench(home, "instagram", settings=settings_for(fake, free_port()), clip=clip)
    old = connect(bench, fake, days_left=45)
    result = bench.send()
    assert bench.post(result.post_id)["state"] == "published"
    assert fake.count("refresh") == 1
    account = load_account(bench.db, "instagram")
    tokens = open_tokens(bench.db, home, account)
    assert tokens["access_token"] != old and tokens["refresh_token"] == tokens["access_token"]
    expires = bench.platform().token_expires_at()
    assert expires is not None and expires > now() + timedelta(days=59)
    assert account.meta["token_expires_at"] == tokens["expires_at"]
    raw = (home / "autoretto.db").read_bytes()
    assert tokens["access_token"].encode() not in raw and old.encode() not in raw
    bench.add_episode(clip, title="Second")
    bench.platform().limit_reason(None)  # type: ignore[arg-type]
    assert fake.count("refresh") == 1, "a fresh token is not refreshed again"


def test_a_refused_refresh_marks_the_account_reconnect(
    home: Path, clip: Path, fake: FakeGraph
) -> None:
    bench = Bench(home, "instagram", settings=settings_for(fake, free_port()), clip=clip)
    connect(bench, fake, days_left=30)
    fake.revoke()
    result = bench.send()
    assert bench.post(result.post_id)["state"] == "needs_person"
    account = load_account(bench.db, "instagram")
    assert account.state == "reconnect" and "connect instagram" in account.reason
    assert not fake.publishes


def test_a_failed_refresh_with_time_left_still_posts(
    home: Path, clip: Path, fake: FakeGraph
) -> None:
    bench = Bench(home, "instagram", settings=settings_for(fake, free_port()), clip=clip)
    connect(bench, fake, days_left=30)
    fake.fail_next("refresh", 500, times=5)
    result = bench.send()
    assert bench.post(result.post_id)["state"] == "published"
    assert load_account(bench.db, "instagram").state == "connected"


def test_without_a_media_host_instagram_is_not_ready(
    home: Path, clip: Path, fake: FakeGraph
) -> None:
    bench = Bench(home, "instagram", settings=f'api_base = "{fake.url}"\n', clip=clip)
    connect(bench, fake)
    assert "[media_host]" in (bench.platform().not_ready_reason() or "")


def test_caption_keeps_30_hashtags_and_2200_characters() -> None:
    text = "Title\n\n" + " ".join(f"#tag{n}" for n in range(40)) + "\n\n" + "word " * 600
    caption = fit_caption(text, "ar0123456789")
    assert len(caption) <= CAPTION_MAX_CHARS
    assert caption.count("#") == 30 and "#tag29" in caption and "#tag30" not in caption
    assert caption.endswith("…\n\nar0123456789")
    assert fit_caption("short #one", "") == "short #one"


def test_connect_instagram_from_a_pasted_address(home: Path, fake: FakeGraph, monkeypatch) -> None:

    Bench(home, "instagram", settings=settings_for(fake, free_port()), clip=Path("/dev/null"))
    monkeypatch.setenv("INSTAGRAM_APP_SECRET", APP_SECRET)
    app = typer.Typer()
    register(app)

    class Person:
        """Reads the printed address, presses Allow, pastes where the browser went."""

        def __init__(self) -> None:
            self.lines: list[str] = []

    person = Person()
    real_echo = typer.echo

    def echo(message: Any = "", *args: Any, **kwargs: Any) -> None:
        person.lines.append(str(message))
        real_echo(message, *args, **kwargs)

    def prompt(text: str, *args: Any, **kwargs: Any) -> str:
        address = next(line for line in person.lines if line.startswith(fake.url + "/oauth/"))
        query = parse_qs(urlsplit(address).query)
        assert query["scope"] == [
            "instagram_business_basic,instagram_business_content_publish,"
            "instagram_business_manage_comments"
        ]
        return f"{query['redirect_uri'][0]}?code={fake.authorize()}&state={query['state'][0]}#_"

    monkeypatch.setattr(typer, "echo", echo)
    monkeypatch.setattr(typer, "prompt", prompt)
    result = CliRunner().invoke(app, ["connect", "instagram"])
    assert result.exit_code == 0, result.output
    assert 'Connected Instagram account "rainlofi"' in result.output
    db = open_database(home / "autoretto.db")
    account = load_account(db, "instagram")
    assert account.account_id == fake.user_id and account.state == "connected"
    tokens = open_tokens(db, home, account)
    assert tokens["access_token"] in fake.tokens
    assert tokens["access_token"] not in result.output and APP_SECRET not in result.output
    assert fake.kinds()[:3] == ["code_exchange", "exchange", "me"]


def test_connect_refuses_a_personal_account(home: Path, monkeypatch) -> None:
    with FakeGraph(INSTAGRAM, account_type="PERSONAL") as fake:
        monkeypatch.setenv("AUTORETTO_VAULT", "file")
        home.mkdir(parents=True, exist_ok=True)
        db = open_database(home / "autoretto.db")
        said: list[str] = []

        def ask(prompt: str) -> str:
            state = parse_state(said)
            return f"https://localhost/?code={fake.authorize()}&state={state}"

        with pytest.raises(AutorettoError, match="personal account"):
            sign_in(
                "instagram",
                db,
                home,
                {
                    "api_base": fake.url,
                    "token_uri": fake.url + "/oauth/access_token",
                    "app_id": APP_ID,
                },
                SignInPerson(said, ask=ask, secret=APP_SECRET),
            )
        assert load_account(db, "instagram") is None


def parse_state(lines: list[str]) -> str:
    address = next(line for line in lines if "state=" in line)
    return parse_qs(urlsplit(address).query)["state"][0]


def test_the_person_picks_the_account_from_a_numbered_list() -> None:
    from autoretto.errors import UsageError
    from autoretto.platforms.signin import choose
    from tests.support import SignInPerson

    def choose_account(candidates, wanted, *, say, ask, title):
        return choose(candidates, wanted, person=SignInPerson(said, ask=ask), title=title)

    candidates = [{"id": "1", "name": "rainlofi"}, {"id": "2", "name": "sunlofi"}]
    said: list[str] = []
    chosen = choose_account(candidates, None, say=said.append, ask=lambda _: "2", title="IG")
    assert chosen["name"] == "sunlofi"
    assert "  1. rainlofi (1)" in said and "  2. sunlofi (2)" in said
    assert (
        choose_account(candidates, "@rainlofi", say=said.append, ask=None, title="IG")["id"] == "1"
    )
    with pytest.raises(UsageError, match="not one of"):
        choose_account(candidates, "3", say=said.append, ask=None, title="IG")
    with pytest.raises(UsageError, match="1 to 2"):
        choose_account(candidates, None, say=said.append, ask=lambda _: "7", title="IG")


def test_a_graph_version_that_is_not_served_needs_a_person(
    home: Path, clip: Path, fake: FakeGraph
) -> None:
    bench = Bench(
        home,
        "instagram",
        settings=settings_for(fake, free_port(), 'api_version = "v99.0"\n'),
        clip=clip,
    )
    connect(bench, fake)
    result = bench.send()

    assert bench.post(result.post_id)["state"] == "needs_person"
    assert "v99.0" in result.reason and "api_version" in result.reason, result.reason
    assert fake.posts == [] and fake.containers == {}


def check_a_post_in_flight_counts(bench: Bench, fake: FakeGraph, clip: Path) -> None:
    """With `daily_cap = 1`: a first post whose answer was lost (it may be live) keeps a
    second one from going out, as a published one would; no try is spent on the second."""
    lose_the_publish_and_the_container(fake)
    first = bench.send()
    assert bench.post(first.post_id)["state"] == "may_be_live"
    second = bench.add_episode(clip, title="Second")
    result = bench.send(episode_id=second, after=timedelta(hours=1))
    assert result.outcome == "refused_by_limit", result
    assert "1 of 1 posts in the last 24 hours" in result.reason and "daily_cap" in result.reason
    assert bench.post(result.post_id)["attempts"] == 0
    assert fake.count("create") == 1 and len(fake.publishes) == 1


def test_a_post_in_flight_counts_against_the_daily_cap(
    home: Path, clip: Path, fake: FakeGraph
) -> None:
    """A post whose answer was lost may be live: it counts against `daily_cap` as a published
    one does, so the posts in flight never take Instagram past the cap."""
    settings = settings_for(fake, free_port(), "daily_cap = 1\n")
    bench = Bench(home, "instagram", settings=settings, clip=clip)
    connect(bench, fake)
    check_a_post_in_flight_counts(bench, fake, clip)


def test_the_caption_keeps_the_hashtags_the_cap_counts() -> None:
    # "##rain" is a hashtag "#rain" to the cap's count; the caption keeps the first 30 of those
    # and drops the rest, so a caption the adapter makes never breaks the cap it is checked by.
    text = "Rain at night " + " ".join(f"##tag{n}" for n in range(40))
    caption = fit_caption(text, "ar0123456789")
    assert InstagramPlatform.text_problems({"caption": caption}) == []
    assert caption.count("#tag") == 30 and "#tag29" in caption and "#tag30" not in caption
