"""LinkedIn against a local fake Videos API + Posts API, as a table of cases run by the harness,
plus the checks a table does not fit: what is saved before the bytes, resuming the missing parts
across runs, the duplicate answer, the escaping, the cap, and the headless connect flow."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from autoretto.accounts import load_account
from autoretto.clock import iso, parse_instant
from autoretto.config import Paths
from autoretto.errors import ConfigError
from autoretto.ledger.store import dumps, open_database, row
from autoretto.platforms import REGISTRY
from autoretto.platforms.base import (
    EpisodeView,
    Failure,
    PlatformContext,
    PostRequest,
    Published,
    RetryPolicy,
)
from autoretto.platforms.linkedin import LinkedInPlatform, escape_little_text
from autoretto.posts import Posting, confirm
from tests.fakes.linkedin_server import (
    CLIENT_ID,
    CLIENT_SECRET,
    MEMBER_URN,
    ORGANIZATION_URN,
    FakeLinkedIn,
)
from tests.platforms.harness import Bench, Case, run_case
from tests.platforms.test_facebook import Person, connect_cli

RECONNECT = "reconnect with `autoretto connect linkedin`"


@dataclass
class World:
    fake: FakeLinkedIn
    bench: Bench


def published_posts(world: World, count: int, *, hours_ago: float) -> None:
    at = world.bench.now - timedelta(hours=hours_ago)
    for number in range(count):
        episode = world.bench.add_episode(Path(__file__), title=f"old {number}")
        world.bench.db["posts"].insert(
            {
                "episode_id": episode,
                "channel": "lofi",
                "platform": "linkedin",
                "state": "published",
                "attempts": 1,
                "created_at": iso(at),
                "updated_at": iso(at),
                "published_at": iso(at),
            }
        )


def expire_sign_in(world: World) -> None:
    world.bench.db["accounts"].update(
        ("linkedin", "default"),
        {"meta": dumps({"author": MEMBER_URN, "token_expires_at": "2026-11-01T00:00:00Z"})},
    )


PARTS = 4  # the clip in 16 KiB parts

CASES = [
    Case(
        "happy path",
        extra={"calls": {"initialize": 1, "part": PARTS, "finalize": 1, "post": 1}},
    ),
    Case(
        "processing takes several polls",
        arrange=lambda w: setattr(w.fake, "processing_polls", 3),
        extra={"calls": {"initialize": 1, "video": 4, "post": 1}},
    ),
    Case(
        "a part fails with 5xx: only that part is sent again",
        arrange=lambda w: w.fake.script["part"].extend(["work", "status:502"]),
        extra={"calls": {"initialize": 1, "part": PARTS + 1, "finalize": 1}},
    ),
    Case(
        "a part's connection drops: resumed from the missing parts",
        arrange=lambda w: w.fake.script["part"].extend(["work", "work", "hangup"]),
        extra={"calls": {"initialize": 1, "part": PARTS + 1, "finalize": 1}},
    ),
    Case(
        "an upload link is refused (expired): a new upload",
        arrange=lambda w: w.fake.script["part"].append("status:403"),
        extra={"calls": {"initialize": 2, "finalize": 1, "post": 1}},
    ),
    Case(
        "the answer to finalize is lost: the video says it was finalized",
        arrange=lambda w: w.fake.script["finalize"].append("drop"),
        extra={"calls": {"initialize": 1, "finalize": 1, "post": 1}},
    ),
    Case(
        "processing fails (invalid video): the episode needs fixing",
        arrange=lambda w: setattr(w.fake, "processing_failure", "INVALID_VIDEO_FORMAT"),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="INVALID_VIDEO_FORMAT",
        extra={"calls": {"post": 0}},
    ),
    Case(
        "answer to the post lost: may be live, the look finds it by its marker",
        arrange=lambda w: w.fake.script["post"].append("drop"),
        state="may_be_live",
        outcome="failed",
        reason_has="may be live",
        then_look=True,
    ),
    Case(
        "HTTP 500 to the post: may be live; the look finds nothing and it is sent once",
        arrange=lambda w: w.fake.script["post"].append("status:500"),
        state="may_be_live",
        outcome="failed",
        publishes=0,
        then_look=True,
    ),
    Case(
        "token refused (401): account marked reconnect",
        arrange=lambda w: setattr(w.fake, "revoked", True),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has=RECONNECT,
        extra={"account_state": "reconnect", "calls": {"initialize": 1, "part": 0}},
    ),
    Case(
        "permission or role missing (403): needs a person, account stays connected",
        arrange=lambda w: w.fake.script["initialize"].append("status:403"),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="needs the permission",
        extra={"account_state": "connected"},
    ),
    Case(
        "429 without Retry-After: the day's limit, no try used",
        arrange=lambda w: w.fake.script["initialize"].append("status:429"),
        state="queued",
        outcome="refused_by_limit",
        publishes=0,
        reason_has="resets at midnight UTC",
        extra={"attempts": 0},
    ),
    Case(
        "429 with a short Retry-After: waited out, published",
        arrange=lambda w: w.fake.rate_limit("post", retry_after=0),
        extra={"calls": {"post": 2}},
    ),
    Case(
        "daily cap of 10 reached: refused by limit before any call",
        arrange=lambda w: published_posts(w, 10, hours_ago=2),
        state="queued",
        outcome="refused_by_limit",
        publishes=0,
        reason_has="daily cap of 10 posts",
        extra={"attempts": 0, "no_requests": True},
    ),
    Case(
        "10 posts yesterday (UTC): today is a new day",
        arrange=lambda w: published_posts(w, 10, hours_ago=11),
    ),
    Case(
        "the 60-day sign-in expired: reconnect, nothing sent",
        arrange=expire_sign_in,
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="sign-in expired",
        extra={"account_state": "reconnect", "no_requests": True},
    ),
]


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(REGISTRY, "linkedin", LinkedInPlatform)
    monkeypatch.setenv("AUTORETTO_VAULT", "file")


@pytest.fixture
def fake(registered: None) -> FakeLinkedIn:
    with FakeLinkedIn() as server:
        yield server


#: An app granted the restricted r_member_social too, so LinkedIn can be asked for posts.
READING = "openid,profile,w_member_social,r_member_social"


def bench_for(
    home: Path, clip: Path, fake: FakeLinkedIn, extra: str = "", *, scopes: str = READING
) -> Bench:
    bench = Bench(
        home, "linkedin", settings=fake.settings() + "poll_tries = 5\n" + extra, clip=clip
    )
    bench.connect(
        account_id=MEMBER_URN,
        name="Rae Lofi",
        tokens={"access_token": fake.issue_token(scopes), "expires_at": "2027-01-28T10:00:00Z"},
        meta={"author": MEMBER_URN, "token_expires_at": "2027-01-28T10:00:00Z"},
    )
    return bench


@pytest.mark.parametrize("case", CASES, ids=str)
def test_linkedin_cases(home: Path, clip: Path, fake: FakeLinkedIn, case: Case) -> None:
    bench = bench_for(home, clip, fake)
    run_case(bench, World(fake, bench), case, lambda: len(fake.posts))
    post = row(bench.db, "SELECT * FROM posts WHERE episode_id = ?", (bench.episode_id,))
    for kind, number in case.extra.get("calls", {}).items():
        assert fake.count(kind) == number, (case.name, kind, [r["kind"] for r in fake.requests])
    if "account_state" in case.extra:
        assert load_account(bench.db, "linkedin").state == case.extra["account_state"]
    if "attempts" in case.extra:
        assert post["attempts"] == case.extra["attempts"], post
    if case.extra.get("no_requests"):
        assert fake.requests == []
    if case.state == "published":
        (published,) = fake.posts
        video = fake.videos[published.video]
        assert b"".join(video.received[n] for n in range(len(video.parts))) == clip.read_bytes()
        assert post["url"] == f"https://www.linkedin.com/feed/update/{published.urn}/"
    for request in fake.requests:
        if request["kind"] not in ("part",):
            assert request["version"] == "202607" and request["restli"] == "2.0.0", request


# -- what is saved, and resuming across runs ---------------------------------------------------


class Run:
    def __init__(self, bench: Bench, fake: FakeLinkedIn, *, attempts: int = 3, **settings: Any):
        table = {**bench.config.platforms["linkedin"], **settings}
        self.platform = LinkedInPlatform(
            PlatformContext(
                "linkedin", table, bench.config.paths, bench.db, bench.now,
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
            description="A warm beat (slowed) for #lofi fans_of_rain @home",
            tags=("lofi",),
            videos={"landscape": str(clip)},
        )

        def save(new: dict[str, Any]) -> None:
            self.saved.append({**new, "_parts_before": self.fake.count("part")})

        return PostRequest(
            post_id=1, attempt=1, marker=marker, channel="lofi", platform="linkedin",
            episode=episode, publish_at=parse_instant("2026-11-29T10:05:00Z"),
            handles=handles or {}, save_handles=save,
        )  # fmt: skip


def handles_of(run: Run) -> dict[str, Any]:
    return {k: v for k, v in run.saved[-1].items() if not k.startswith("_")}


def test_the_upload_is_on_record_before_the_bytes_and_each_etag_after_its_part(
    home: Path, clip: Path, fake: FakeLinkedIn
) -> None:
    run = Run(bench_for(home, clip, fake), fake)
    outcome = run.platform.publish(run.request(clip))

    assert isinstance(outcome, Published), outcome
    first = run.saved[0]
    assert first["_parts_before"] == 0
    assert first["video"].startswith("urn:li:video:") and first["upload_token"]
    assert len(first["instructions"]) == PARTS and first["etags"] == [None] * PARTS
    for number in range(1, PARTS + 1):  # saved right after each part
        assert sum(e is not None for e in run.saved[number]["etags"]) == number
        assert run.saved[number]["_parts_before"] == number
    finalize = fake.of_kind("finalize")[0]["json"]["finalizeUploadRequest"]
    assert finalize["uploadedPartIds"] == run.saved[PARTS]["etags"]
    assert run.saved[-1]["post"] == outcome.platform_post_id


def test_the_commentary_is_escaped_and_ends_with_the_marker(
    home: Path, clip: Path, fake: FakeLinkedIn
) -> None:
    run = Run(bench_for(home, clip, fake), fake)
    run.platform.publish(run.request(clip))
    (post,) = fake.posts
    assert post.commentary == (
        "A warm beat \\(slowed\\) for \\#lofi fans\\_of\\_rain \\@home\n\nautoretto-1-1-aa"
    )
    assert post.author == MEMBER_URN and post.title == "Rainy night"
    assert post.body["visibility"] == "PUBLIC" and post.body["lifecycleState"] == "PUBLISHED"


def test_escape_little_text_escapes_every_reserved_character() -> None:
    assert escape_little_text("(x)[y]{z}<a>@b|c#d*e_f~g\\h") == (
        "\\(x\\)\\[y\\]\\{z\\}\\<a\\>\\@b\\|c\\#d\\*e\\_f\\~g\\\\h"
    )
    assert escape_little_text("plain words, 100% fine!") == "plain words, 100% fine!"


def test_a_broken_upload_sends_only_the_missing_parts_in_the_next_run(
    home: Path, clip: Path, fake: FakeLinkedIn
) -> None:
    bench = bench_for(home, clip, fake)
    fake.script["part"].extend(["work", "work", "hangup"])
    first = Run(bench, fake, attempts=1)
    outcome = first.platform.publish(first.request(clip))
    assert isinstance(outcome, Failure) and outcome.kind == "passing", outcome

    second = Run(bench, fake)
    outcome = second.platform.publish(second.request(clip, handles=handles_of(first)))
    assert isinstance(outcome, Published), outcome
    assert fake.count("initialize") == 1
    assert [r["part"] for r in fake.of_kind("part")] == [0, 1, 2, 2, 3]


def test_a_repeat_is_answered_with_the_earlier_post(
    home: Path, clip: Path, fake: FakeLinkedIn
) -> None:
    """Even when a person wrongly says a lost post is not live, the repeat is not posted: the
    commentary carries the first marker, and LinkedIn names the earlier post."""
    # The app has no r_member_social: LinkedIn cannot be asked.
    bench = bench_for(home, clip, fake, scopes="openid,profile,w_member_social")
    fake.script["post"].append("drop")
    first = bench.send()
    assert bench.post(first.post_id)["state"] == "may_be_live"

    looked = bench.look(first.post_id)
    assert looked.outcome == "busy" and "cannot look" in looked.reason
    assert len(fake.posts) == 1

    posting = Posting(
        db=bench.db, run_id="person", now=bench.now, stale_after=timedelta(minutes=15),
        journal=bench.config.journal, notify=bench.posting(bench.now).notify,
    )  # fmt: skip
    confirm(posting, first.post_id, live_url=None)
    again = bench.look(first.post_id, after=timedelta(hours=1))
    assert again.outcome == "posted", again
    post = bench.post(first.post_id)
    assert post["state"] == "published" and post["platform_post_id"] == fake.posts[0].urn
    assert len(fake.posts) == 1 and fake.count("post") == 2


def test_find_attempt_matches_the_marker_only(home: Path, clip: Path, fake: FakeLinkedIn) -> None:
    run = Run(bench_for(home, clip, fake), fake)
    fake.add_post("another post\n\nautoretto-7-1-zz")
    fake.add_post("not mine\n\nautoretto-1-1-aa", author="urn:li:person:someoneelse")
    assert run.platform.find_attempt(run.request(clip)) is None
    mine = fake.add_post("Rainy night\n\nautoretto-1-1-aa")
    found = run.platform.find_attempt(run.request(clip))
    assert found == Published(mine, f"https://www.linkedin.com/feed/update/{mine}/")
    listing = fake.of_kind("list")[-1]["query"]
    assert listing["q"] == "author" and listing["author"] == MEMBER_URN


def test_posting_as_an_organisation(home: Path, clip: Path, fake: FakeLinkedIn) -> None:
    bench = bench_for(home, clip, fake)
    token = fake.issue_token("openid,profile,w_member_social,w_organization_social")
    bench.connect(
        account_id=ORGANIZATION_URN, name="Lofi Label", tokens={"access_token": token},
        meta={"author": ORGANIZATION_URN, "member": MEMBER_URN},
    )  # fmt: skip
    assert bench.send().outcome == "posted"
    init = fake.of_kind("initialize")[0]["json"]["initializeUploadRequest"]
    assert init["owner"] == ORGANIZATION_URN and fake.posts[0].author == ORGANIZATION_URN


def test_the_version_header_is_configurable(home: Path, clip: Path, fake: FakeLinkedIn) -> None:
    bench = bench_for(home, clip, fake, extra='version = "202604"\n')
    assert bench.send().outcome == "posted"
    assert {r["version"] for r in fake.requests if r["kind"] != "part"} == {"202604"}


def test_token_expiry_is_exposed_and_warned(home: Path, clip: Path, fake: FakeLinkedIn) -> None:
    bench = bench_for(home, clip, fake)
    platform = bench.platform()
    assert iso(platform.token_expires_at()) == "2027-01-28T10:00:00Z"
    assert platform.not_ready_reason() is None
    late = bench.platform(parse_instant("2027-01-29T00:00:00Z"))
    assert "sign-in expired at 2027-01-28T10:00:00Z" in late.not_ready_reason()


def test_settings_are_checked(home: Path, registered: None) -> None:
    paths = Paths(home)
    for table in (
        {"api_base": "http://api.example.com"},
        {"version": "2025-11"},
        {"visibility": "FRIENDS"},
        {"poll_wait": "x"},
    ):
        with pytest.raises(ConfigError, match=r"platforms\.linkedin"):
            LinkedInPlatform.parse_settings(table, path=paths.config, paths=paths)


# -- connect linkedin (headless paste flow) --------------------------------------------------------


def test_connect_linkedin_paste_flow(
    home: Path, clip: Path, fake: FakeLinkedIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUTORETTO_NOW", "2026-11-29T10:05:00Z")
    Bench(home, "linkedin", settings=fake.settings(), clip=clip)
    (home / "linkedin_client.json").write_text(
        f'{{"client_id": "{CLIENT_ID}", "client_secret": "{CLIENT_SECRET}"}}'
    )
    person = Person(monkeypatch, {})
    result = connect_cli("linkedin")

    assert result.exit_code == 0, result.output
    assert f'posting as "Rae Lofi" ({MEMBER_URN})' in result.output
    assert "connect again before 2027-01-28T10:04:59Z" in result.output  # 60 days on
    assert CLIENT_SECRET not in result.output and "AQV" not in result.output
    consent = next(line for line in person.lines if line.startswith("http"))
    assert "w_member_social" in consent and "openid" in consent
    db = open_database(home / "autoretto.db")
    account = load_account(db, "linkedin")
    assert account.meta["author"] == MEMBER_URN and account.meta["token_expires_at"]
    assert b"AQVfake" not in (home / "autoretto.db").read_bytes()
    assert CLIENT_SECRET.encode() not in (home / "autoretto.db").read_bytes()

    bench = Bench(home, "linkedin", settings=fake.settings(), clip=clip)
    assert bench.send().outcome == "posted"  # the stored sign-in posts


def test_connect_linkedin_as_an_organisation(
    home: Path, clip: Path, fake: FakeLinkedIn, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    Bench(home, "linkedin", settings=fake.settings(), clip=clip)
    secret = tmp_path / "secret"
    secret.write_text(CLIENT_SECRET)
    fake.granted = "openid,profile,w_member_social,w_organization_social"
    person = Person(monkeypatch, {})
    base = ["linkedin", "--client-id", CLIENT_ID, "--client-secret-file", str(secret)]
    result = connect_cli(*base, "--organization", ORGANIZATION_URN)

    assert result.exit_code == 0, result.output
    consent = next(line for line in person.lines if line.startswith("http"))
    assert "w_organization_social" in consent
    account = load_account(open_database(home / "autoretto.db"), "linkedin")
    assert account.account_id == ORGANIZATION_URN and account.meta["member"] == MEMBER_URN

    requests_before = len(fake.requests)
    result = connect_cli(*base, "--organization", "acme")
    assert result.exit_code == 2 and "not an organisation URN" in result.output
    assert len(fake.requests) == requests_before  # refused before any sign-in


# -- API versions ------------------------------------------------------------------------------


def test_a_sunset_linkedin_version_needs_a_person_and_is_not_retried(
    home: Path, clip: Path, fake: FakeLinkedIn
) -> None:
    """202511 was sunset on 2026-11-16: LinkedIn answers 426 NONEXISTENT_VERSION to it."""
    bench = bench_for(home, clip, fake, extra='api_version = "202511"\n')
    result = bench.send()

    assert bench.post(result.post_id)["state"] == "needs_person"
    assert result.outcome == "failed"
    for words in ("202511", "2026-11-16", "upgrade Autoretto", "api_version"):
        assert words in result.reason, result.reason
    assert fake.count("initialize") == 1 and fake.count("part") == 0 and fake.posts == []
    assert load_account(bench.db, "linkedin").state == "connected"


def test_the_older_version_key_is_still_honoured(
    home: Path, clip: Path, fake: FakeLinkedIn
) -> None:
    bench = bench_for(home, clip, fake, extra='version = "202602"\n')
    assert bench.send().outcome == "posted"
    assert {r["version"] for r in fake.requests if r["kind"] != "part"} == {"202602"}


def test_a_version_that_is_no_version_is_refused_by_config_check(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    with pytest.raises(ConfigError, match=r"platforms\.linkedin\.api_version.*202607"):
        LinkedInPlatform.parse_settings(
            {"api_version": "2026-03"}, path=home / "autoretto.toml", paths=Paths(home)
        )


def test_a_token_without_the_posting_permission_is_refused_and_needs_a_person(
    home: Path, clip: Path, fake: FakeLinkedIn
) -> None:
    """LinkedIn answers 403 ACCESS_DENIED to a call the token's scopes do not cover (uploading
    needs w_member_social): a person must reconnect with the permission, nothing is retried."""
    bench = bench_for(home, clip, fake, scopes="openid,profile")
    result = bench.send()

    assert result.outcome == "failed"
    assert bench.post(result.post_id)["state"] == "needs_person", result.reason
    assert fake.count("initialize") == 1 and fake.count("part") == 0 and fake.posts == []
    bench.send(after=timedelta(hours=1))
    assert fake.count("initialize") == 1


def test_without_the_read_permission_a_lost_post_waits_for_a_person(
    home: Path, clip: Path, fake: FakeLinkedIn
) -> None:
    """Reading posts needs the restricted r_member_social: without it the look says it cannot
    ask, and the post stays may-be-live for `confirm` instead of being sent again."""
    bench = bench_for(home, clip, fake, scopes="openid,profile,w_member_social")
    fake.script["post"].append("drop")
    first = bench.send()
    assert bench.post(first.post_id)["state"] == "may_be_live"

    looked = bench.look(first.post_id)

    assert looked.outcome == "busy" and "cannot look" in looked.reason
    assert bench.post(first.post_id)["state"] == "may_be_live"
    assert len(fake.posts) == 1 and fake.count("post") == 1


def test_the_token_goes_to_linkedin_hosts_only(home: Path, clip: Path, fake: FakeLinkedIn) -> None:
    # An upload link is signed by LinkedIn; the account's token is added only for LinkedIn's
    # own hosts (and the configured API host), never for a host that merely ends the same way.
    platform = Run(bench_for(home, clip, fake), fake).platform
    assert platform._trusted(f"{fake.url}/upload/0/1")  # the API host (this fake)
    assert platform._trusted("https://www.linkedin.com/dms/uploads/1")
    assert platform._trusted("https://linkedin.com/upload")
    assert not platform._trusted("https://evillinkedin.com/upload")
    assert not platform._trusted("https://linkedin.com.example.net/upload")
