"""Facebook Reels against a local fake Graph API + rupload, as a table of cases run by the harness,
plus the checks a table does not fit: the upload order, resuming across runs, the marker
listing, the cap, the reels edit, settings, and the headless connect flow."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
import typer
from typer.testing import CliRunner

from autoretto.accounts import load_account
from autoretto.clock import iso
from autoretto.config import Paths
from autoretto.episodes import episode_view, get_episode, next_episode_for
from autoretto.errors import ConfigError
from autoretto.ledger.store import dumps, row
from autoretto.platforms import REGISTRY
from autoretto.platforms.base import (
    EpisodeView,
    Failure,
    PlatformContext,
    PostRequest,
    Published,
    RetryPolicy,
)
from autoretto.platforms.facebook import FacebookPlatform, reel_state
from tests.fakes.facebook_server import (
    APP_ID,
    APP_SECRET,
    OTHER_PAGE_ID,
    PAGE_ID,
    PAGE_TOKEN,
    FakeFacebook,
)
from tests.platforms.harness import Bench, Case, run_case

RECONNECT = "reconnect with `autoretto connect facebook`"


@dataclass
class World:
    fake: FakeFacebook
    bench: Bench


def published_reels(world: World, count: int, *, hours_ago: float = 1.0) -> None:
    """`count` reels this home published on Facebook `hours_ago`."""
    at = world.bench.now - timedelta(hours=hours_ago)
    for number in range(count):
        episode = world.bench.add_episode(Path(__file__), title=f"old {number}")
        world.bench.db["posts"].insert(
            {
                "episode_id": episode,
                "channel": "lofi",
                "platform": "facebook",
                "state": "published",
                "attempts": 1,
                "created_at": iso(at),
                "updated_at": iso(at),
                "published_at": iso(at),
            }
        )


CASES = [
    Case("happy path", extra={"calls": {"start": 1, "finish": 1}}),
    Case(
        "processing takes several polls",
        arrange=lambda w: setattr(w.fake, "processing_polls", 3),
        extra={"calls": {"start": 1, "finish": 1, "status": 4}},
    ),
    Case(
        "5xx on start twice: retried inside the job",
        arrange=lambda w: w.fake.script["start"].extend(["status:500", "status:503"]),
        extra={"calls": {"start": 3, "finish": 1}},
    ),
    Case(
        "upload dropped half way: resumed at the byte Facebook has, same video",
        arrange=lambda w: w.fake.script["upload"].append("half"),
        extra={"calls": {"start": 1, "upload": 2, "finish": 1}, "resumed": True},
    ),
    Case(
        "rupload OffsetInvalidError: resumed from the status",
        arrange=lambda w: w.fake.script["upload"].append("offset"),
        extra={"calls": {"start": 1, "upload": 2, "finish": 1}},
    ),
    Case(
        "Video API 6000 on finish: passing, finished again on the same video",
        arrange=lambda w: w.fake.script["finish"].append("code:6000"),
        extra={"calls": {"start": 1, "finish": 2}},
    ),
    Case(
        "answer to finish lost: the status settles it in the same try, no second reel",
        arrange=lambda w: w.fake.script["finish"].append("drop"),
        extra={"calls": {"start": 1, "finish": 1}},
    ),
    Case(
        "answer lost and the status unreadable: may be live, the look finds it",
        arrange=lambda w: (
            w.fake.script["finish"].append("drop"),
            w.fake.script["status"].extend(["status:503"] * 4),
        ),
        state="may_be_live",
        outcome="failed",
        reason_has="may be live",
        then_look=True,
    ),
    Case(
        "still processing when the polls run out: may be live, published once in the end",
        arrange=lambda w: setattr(w.fake, "processing_polls", 6),
        state="may_be_live",
        outcome="failed",
        reason_has="not seen published",
        then_look=True,
    ),
    Case(
        "processing fails (invalid video): the episode needs fixing",
        arrange=lambda w: setattr(w.fake, "processing_error", "INVALID_VIDEO: unsupported codec"),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="INVALID_VIDEO",
    ),
    Case(
        "file too large (1363023): rejected, no retry",
        arrange=lambda w: w.fake.script["start"].append("code:1363023"),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="refused the video file",
        extra={"calls": {"start": 1, "upload": 0}},
    ),
    Case(
        "token refused (190): account marked reconnect, a person must connect again",
        arrange=lambda w: setattr(w.fake, "revoked", True),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has=RECONNECT,
        extra={"account_state": "reconnect", "calls": {"start": 1, "upload": 0}},
    ),
    Case(
        "permission missing (200): needs a person, account stays connected",
        arrange=lambda w: w.fake.script["start"].append("code:200"),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="permission is missing",
        extra={"account_state": "connected"},
    ),
    Case(
        "throttled (code 4): refused by limit, no try used",
        arrange=lambda w: w.fake.script["start"].append("code:4"),
        state="queued",
        outcome="refused_by_limit",
        publishes=0,
        reason_has="rate limit",
        extra={"attempts": 0},
    ),
    Case(
        "30 reels in the last 24 hours: refused by limit before any call",
        arrange=lambda w: published_reels(w, 30, hours_ago=23),
        state="queued",
        outcome="refused_by_limit",
        publishes=0,
        reason_has="at most 30 reels per Page in 24 hours",
        extra={"attempts": 0, "no_requests": True},
    ),
    Case(
        "30 reels, but more than 24 hours ago: the window rolls on",
        arrange=lambda w: published_reels(w, 30, hours_ago=25),
    ),
]


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(REGISTRY, "facebook", FacebookPlatform)
    monkeypatch.setenv("AUTORETTO_VAULT", "file")


@pytest.fixture
def fake(registered: None) -> FakeFacebook:
    with FakeFacebook() as server:
        yield server


def bench_for(home: Path, clip: Path, fake: FakeFacebook, extra: str = "") -> Bench:
    bench = Bench(
        home, "facebook", settings=fake.settings() + "poll_tries = 4\n" + extra, clip=clip
    )
    bench.connect(
        account_id=PAGE_ID,
        name="Lofi Nights",
        tokens={"access_token": PAGE_TOKEN, "expires_at": None},
        meta={"page_id": PAGE_ID},
    )
    return bench


@pytest.mark.parametrize("case", CASES, ids=str)
def test_facebook_cases(home: Path, clip: Path, fake: FakeFacebook, case: Case) -> None:
    bench = bench_for(home, clip, fake)
    world = World(fake, bench)
    run_case(bench, world, case, lambda: len(fake.published))
    post = row(bench.db, "SELECT * FROM posts WHERE episode_id = ?", (bench.episode_id,))
    for kind, number in case.extra.get("calls", {}).items():
        assert fake.count(kind) == number, (case.name, kind, fake.kinds())
    if "account_state" in case.extra:
        assert load_account(bench.db, "facebook").state == case.extra["account_state"]
    if "attempts" in case.extra:
        assert post["attempts"] == case.extra["attempts"], post
    if case.extra.get("no_requests"):
        assert fake.requests == []
    if case.extra.get("resumed"):
        uploads = [r for r in fake.requests if r["kind"] == "upload"]
        assert uploads[0]["offset"] == 0 and 0 < uploads[1]["offset"] < clip.stat().st_size
    if case.state == "published":
        (reel,) = fake.published
        assert bytes(reel.received) == clip.read_bytes()
        assert post["url"] == f"https://www.facebook.com/reel/{reel.video_id}"
    # The Page token travels in the Authorization header only, never in an address.
    assert not any(r["query_has_secret"] for r in fake.requests)
    assert PAGE_TOKEN.encode() not in (home / "autoretto.db").read_bytes()


# -- the order of things, and resuming across runs ---------------------------------------------


class Run:
    """A platform instance and an attempt's saved handles, as the engine keeps them."""

    def __init__(self, bench: Bench, fake: FakeFacebook, *, attempts: int = 3, **settings: Any):
        table = {**bench.config.platforms["facebook"], **settings}
        self.platform = FacebookPlatform(
            PlatformContext(
                "facebook", table, bench.config.paths, bench.db, bench.now,
                RetryPolicy(attempts=attempts, first_wait=0.0),
            )
        )  # fmt: skip
        self.fake = fake
        self.saved: list[dict[str, Any]] = []

    def request(
        self, clip: Path, *, handles: dict | None = None, marker: str = "autoretto-1-1-aa"
    ) -> PostRequest:
        episode = EpisodeView(
            id=1,
            channel="lofi",
            title="Rainy night",
            description="A warm lofi beat. #lofi",
            tags=("lofi",),
            videos={"reels": str(clip)},
            texts={"facebook": {"title": "Rainy night (reel)", "description": "Short and warm."}},
        )

        def save(new: dict[str, Any]) -> None:
            self.saved.append({**new, "_uploads_before": self.fake.count("upload")})

        return PostRequest(
            post_id=1, attempt=1, marker=marker, channel="lofi", platform="facebook",
            episode=episode, publish_at=episode_now(), handles=handles or {}, save_handles=save,
        )  # fmt: skip


def episode_now():
    from autoretto.clock import parse_instant

    return parse_instant("2026-11-29T10:05:00Z")


def handles_of(run: Run) -> dict[str, Any]:
    return {k: v for k, v in run.saved[-1].items() if not k.startswith("_")}


def test_video_id_saved_before_the_bytes_and_the_copy_carries_the_marker(
    home: Path, clip: Path, fake: FakeFacebook
) -> None:
    run = Run(bench_for(home, clip, fake), fake)
    outcome = run.platform.publish(run.request(clip))

    assert isinstance(outcome, Published), outcome
    assert run.saved[0]["video_id"] == outcome.platform_post_id
    assert run.saved[0]["_uploads_before"] == 0  # saved before any byte went out
    assert fake.kinds() == ["start", "upload", "finish", "status"]
    (reel,) = fake.published
    assert reel.title == "Rainy night (reel)"  # the episode's own Facebook copy
    assert reel.description == "Short and warm.\n\nautoretto-1-1-aa"
    upload = next(r for r in fake.requests if r["kind"] == "upload")
    assert upload["auth_scheme"] == "OAuth"  # rupload wants "OAuth", not "Bearer"
    assert upload["file_size"] == clip.stat().st_size


def test_a_broken_upload_resumes_in_the_next_run_on_the_same_video(
    home: Path, clip: Path, fake: FakeFacebook
) -> None:
    bench = bench_for(home, clip, fake)
    fake.script["upload"].append("half")
    first = Run(bench, fake, attempts=1, resumes=0)
    outcome = first.platform.publish(first.request(clip))
    assert isinstance(outcome, Failure) and outcome.kind == "passing", outcome
    assert fake.published == []

    second = Run(bench, fake)
    outcome = second.platform.publish(second.request(clip, handles=handles_of(first)))
    assert isinstance(outcome, Published), outcome
    assert fake.count("start") == 1  # the same video, not a new one
    offsets = [r["offset"] for r in fake.requests if r["kind"] == "upload"]
    assert offsets[0] == 0 and offsets[1] > 0
    assert bytes(fake.published[0].received) == clip.read_bytes()


def test_a_new_attempt_keeps_the_first_marker(home: Path, clip: Path, fake: FakeFacebook) -> None:
    bench = bench_for(home, clip, fake)
    fake.script["finish"].extend(["status:500"] * 3)
    first = Run(bench, fake)
    assert first.platform.publish(first.request(clip, marker="autoretto-1-1-aa")).kind == "passing"
    second = Run(bench, fake)
    outcome = second.platform.publish(
        second.request(clip, handles=handles_of(first), marker="autoretto-1-2-bb")
    )
    assert isinstance(outcome, Published)
    assert fake.published[0].description.endswith("autoretto-1-1-aa")


# -- finding an attempt ------------------------------------------------------------------------


def test_find_attempt_lists_the_page_and_matches_the_marker(
    home: Path, clip: Path, fake: FakeFacebook
) -> None:
    run = Run(bench_for(home, clip, fake), fake)
    fake.add_reel("somebody else's reel\n\nautoretto-9-1-zz")
    assert run.platform.find_attempt(run.request(clip, marker="autoretto-1-1-aa")) is None
    mine = fake.add_reel("Rainy night\n\nautoretto-1-1-aa")
    found = run.platform.find_attempt(run.request(clip, marker="autoretto-1-1-aa"))
    assert found == Published(mine, f"https://www.facebook.com/reel/{mine}")
    assert fake.count("list") == 2


def test_find_attempt_of_an_unfinished_video_is_absent(
    home: Path, clip: Path, fake: FakeFacebook
) -> None:
    bench = bench_for(home, clip, fake)
    fake.script["finish"].append("status:500")
    first = Run(bench, fake, attempts=1)
    assert first.platform.publish(first.request(clip)).kind == "passing"
    assert first.platform.find_attempt(first.request(clip, handles=handles_of(first))) is None
    assert fake.count("list") == 0  # the saved video answered


def test_reel_state_reads_the_phases() -> None:
    assert reel_state({"publishing_phase": {"status": "complete"}}) == "published"
    assert reel_state({"video_status": "upload_failed"}) == "gone"
    assert reel_state({"processing_phase": {"status": "error"}}) == "failed"
    assert reel_state({"publishing_phase": {"status": "in_progress"}}) == "publishing"
    assert reel_state({"uploading_phase": {"status": "complete"}}) == "uploaded"
    assert reel_state({"uploading_phase": {"status": "in_progress"}}) == "uploading"


# -- the reels edit, the cap, the token --------------------------------------------------------


def test_an_episode_without_a_reels_edit_is_skipped(
    home: Path, clip: Path, fake: FakeFacebook
) -> None:
    bench = bench_for(home, clip, fake)
    bench.db["episodes"].update(bench.episode_id, {"videos": dumps({"landscape": str(clip)})})
    platform = bench.platform()
    view = episode_view(get_episode(bench.db, bench.episode_id))
    assert "vertical edit of 90 seconds or less" in platform.unsuitable_reason(view)

    channel = bench.config.channels[0]
    unsuitable = lambda e: platform.unsuitable_reason(episode_view(e))  # noqa: E731
    episode, why = next_episode_for(bench.db, channel, "facebook", unsuitable=unsuitable)
    assert episode is None and why.startswith("nothing_ready: episode 1:")
    with_reels = bench.add_episode(clip, title="Second")
    episode, _ = next_episode_for(bench.db, channel, "facebook", unsuitable=unsuitable)
    assert episode["id"] == with_reels
    assert fake.requests == [] and bench.db["posts"].count == 0  # no try used


def test_the_cap_is_configurable_and_counts_posts_on_their_way(
    home: Path, clip: Path, fake: FakeFacebook
) -> None:
    bench = bench_for(home, clip, fake, extra="daily_cap = 2\n")
    world = World(fake, bench)
    published_reels(world, 1)
    bench.db["posts"].update(1, {"state": "may_be_live"})
    published_reels(world, 1)
    result = bench.send()
    assert result.outcome == "refused_by_limit" and "at most 2 reels" in result.reason
    assert fake.requests == []


def test_token_expiry_is_exposed_for_warnings(home: Path, clip: Path, fake: FakeFacebook) -> None:
    bench = bench_for(home, clip, fake)
    assert bench.platform().token_expires_at() is None  # a Page token does not expire
    bench.connect(
        account_id=PAGE_ID, name="Lofi Nights", tokens={"access_token": PAGE_TOKEN},
        meta={"token_expires_at": "2027-01-28T10:00:00Z"},
    )  # fmt: skip
    assert iso(bench.platform().token_expires_at()) == "2027-01-28T10:00:00Z"


def test_a_reconnect_account_sends_nothing(home: Path, clip: Path, fake: FakeFacebook) -> None:
    bench = bench_for(home, clip, fake)
    fake.revoked = True
    bench.send()
    platform = bench.platform()
    assert not platform.is_connected()
    assert RECONNECT in platform.not_ready_reason()
    fake.requests.clear()
    second = bench.add_episode(clip, title="Second")
    assert bench.send(episode_id=second).outcome == "failed"
    assert fake.requests == []


def test_settings_are_checked(home: Path, registered: None) -> None:
    paths = Paths(home)
    for table in (
        {"graph_base": "http://graph.example.com"},
        {"poll_wait": "soon"},
        {"daily_cap": -1},
        {"graph_version": "23"},
    ):
        with pytest.raises(ConfigError, match=r"platforms\.facebook"):
            FacebookPlatform.parse_settings(table, path=paths.config, paths=paths)


# -- connect facebook (headless paste flow) ----------------------------------------------------


class Person:
    """Reads what the command prints, opens the consent address, presses Allow, pastes back."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, answers: dict[str, str]) -> None:
        self.lines: list[str] = []
        self.answers = answers
        self._echo = typer.echo
        monkeypatch.setattr(typer, "echo", self.echo)
        monkeypatch.setattr(typer, "prompt", self.prompt)

    def echo(self, message: Any = "", *args: Any, **kwargs: Any) -> None:
        self.lines.append(str(message))
        self._echo(message, *args, **kwargs)

    def prompt(self, text: str, *args: Any, **kwargs: Any) -> str:
        if text == "Address":
            consent = next(line for line in reversed(self.lines) if line.startswith("http"))
            answer = requests.get(consent, allow_redirects=False, timeout=5)
            return answer.headers["Location"]
        return self.answers[text]


def connect_cli(*args: str) -> Any:
    from autoretto.commands.connect import register

    app = typer.Typer()
    register(app)
    return CliRunner().invoke(app, ["connect", *args], catch_exceptions=False)


def test_connect_facebook_paste_flow(
    home: Path, clip: Path, fake: FakeFacebook, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    Bench(home, "facebook", settings=fake.settings(), clip=clip)
    (home / "facebook_client.json").write_text(
        f'{{"client_id": "{APP_ID}", "client_secret": "{APP_SECRET}"}}'
    )
    person = Person(monkeypatch, {"Post to Page number": "2"})
    result = connect_cli("facebook")

    assert result.exit_code == 0, result.output
    assert f'Connected the Facebook Page "Other Page" ({OTHER_PAGE_ID})' in result.output
    assert APP_SECRET not in result.output and "EAA" not in result.output
    consent = next(line for line in person.lines if line.startswith("http"))
    assert "pages_manage_posts" in consent and "redirect_uri=https%3A%2F%2Flocalhost%2F" in consent
    grants = [r["grant"] for r in fake.requests if r["kind"] == "token"]
    assert grants == ["authorization_code", "fb_exchange_token"]
    from autoretto.ledger.store import open_database

    db = open_database(home / "autoretto.db")
    account = load_account(db, "facebook")
    assert account.account_id == OTHER_PAGE_ID and account.state == "connected"
    assert account.meta["user_token_expires_at"] is not None
    assert b"EAAPage" not in (home / "autoretto.db").read_bytes()  # sealed


def test_connect_facebook_with_page_option_and_bad_paste(
    home: Path, clip: Path, fake: FakeFacebook, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    Bench(home, "facebook", settings=fake.settings(), clip=clip)
    secret = tmp_path / "secret"
    secret.write_text(APP_SECRET + "\n")
    Person(monkeypatch, {})
    result = connect_cli(
        "facebook", "--client-id", APP_ID, "--client-secret-file", str(secret), "--page", PAGE_ID
    )
    assert result.exit_code == 0, result.output
    assert f"({PAGE_ID})" in result.output

    monkeypatch.setattr(typer, "prompt", lambda text, **kw: "https://localhost/?state=x&code=y")
    result = connect_cli("facebook", "--client-id", APP_ID, "--client-secret-file", str(secret))
    assert result.exit_code == 2
    assert "another sign-in attempt" in result.output
    assert APP_SECRET not in result.output


def test_connect_facebook_without_a_client_says_what_to_do(
    home: Path, clip: Path, fake: FakeFacebook
) -> None:
    Bench(home, "facebook", settings=fake.settings(), clip=clip)
    result = connect_cli("facebook")
    assert result.exit_code == 2
    assert "facebook_client.json" in result.output and "--client-id" in result.output


# -- API versions ------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["code12", "path"])
def test_a_graph_version_that_is_not_served_needs_a_person(
    home: Path, clip: Path, fake: FakeFacebook, shape: str
) -> None:
    fake.unknown_version_shape = shape
    bench = bench_for(home, clip, fake, extra='api_version = "v99.0"\n')
    result = bench.send()

    assert bench.post(result.post_id)["state"] == "needs_person"
    for words in ("v99.0", "no longer serves", "upgrade Autoretto", "api_version"):
        assert words in result.reason, result.reason
    assert fake.count("unknown_version") == 1  # asked once, never retried
    assert fake.count("start") == 0 and fake.published == []


def test_an_expired_graph_version_is_answered_by_the_oldest_one_served(
    home: Path, clip: Path, fake: FakeFacebook
) -> None:
    """v20.0 was served until 2026-09-24; Meta then answers its calls with the oldest version
    still served, so posting goes on (and `doctor` says the version ended)."""
    bench = bench_for(home, clip, fake, extra='api_version = "v20.0"\n')
    assert bench.send().outcome == "posted"
    assert set(fake.versions_served) == {"v21.0"}


# -- reading a video's status ------------------------------------------------------------------


def test_a_refused_status_read_is_no_proof_the_video_is_gone(
    home: Path, clip: Path, fake: FakeFacebook
) -> None:
    """A 400 that does not say "does not exist" (here code 100, a bad parameter) leaves the
    earlier video in place: nothing new is started, the next try asks again."""
    bench = bench_for(home, clip, fake)
    fake.script["upload"].append("half")
    first = Run(bench, fake, attempts=1, resumes=0)
    assert first.platform.publish(first.request(clip)).kind == "passing"

    fake.script["status"].extend(["status:400"] * 3)
    second = Run(bench, fake)
    outcome = second.platform.publish(second.request(clip, handles=handles_of(first)))
    assert isinstance(outcome, Failure) and outcome.kind == "passing", outcome
    assert fake.count("start") == 1 and fake.published == []

    third = Run(bench, fake)
    outcome = third.platform.publish(third.request(clip, handles=handles_of(first)))
    assert isinstance(outcome, Published), outcome
    assert fake.count("start") == 1 and len(fake.published) == 1


def test_a_status_read_that_says_the_video_does_not_exist_starts_anew(
    home: Path, clip: Path, fake: FakeFacebook
) -> None:
    bench = bench_for(home, clip, fake)
    run = Run(bench, fake)
    handles = {"video_id": "123456", "size": clip.stat().st_size, "marker": "autoretto-1-1-aa"}
    outcome = run.platform.publish(run.request(clip, handles=handles))
    assert isinstance(outcome, Published), outcome
    assert fake.count("start") == 1 and len(fake.published) == 1
