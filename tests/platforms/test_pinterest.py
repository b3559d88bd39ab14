"""Pinterest against a fake API v5: the harness's table of cases, then the multipart upload,
the marker look-up, trial access and the sandbox, tokens and `connect pinterest`."""

from __future__ import annotations

from datetime import timedelta

import pytest

from autoretto.accounts import load_account, open_tokens
from autoretto.platforms import REGISTRY
from autoretto.platforms.pinterest import PinterestChoices, PinterestPlatform
from tests.fakes import pinterest_server
from tests.fakes.pinterest_server import APP_SECRET, BOARDS, UPLOAD_FIELDS, USER_ID, USERNAME
from tests.platforms.harness import Bench, Case, run_case

BOARD = BOARDS[0]["id"]
CHOSEN = PinterestChoices(
    board_id=BOARD,
    title="Rainy night",
    description="A warm lofi beat for a rainy night.",
    link="https://example.com/rainy-night",
    alt_text="Artwork for Rainy night",
    cover_seconds=0.5,
)


class ChosenPinterest(PinterestPlatform):
    """The adapter as `post pinterest` builds it: with the person's choices for this post."""

    def __init__(self, context, *, choices=None):
        super().__init__(context, choices=choices or CHOSEN)


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    # The harness builds platforms from REGISTRY; Pinterest is never on a slot otherwise.
    monkeypatch.setitem(REGISTRY, "pinterest", ChosenPinterest)


@pytest.fixture
def fake():
    server = pinterest_server.start()
    yield server
    server.close()


def connected(home, clip, fake, *, expired=False, sandbox=False, **settings) -> Bench:
    bench = Bench(home, "pinterest", settings=fake.settings(sandbox=sandbox, **settings), clip=clip)
    bench.connect(
        account_id=USER_ID,
        name=USERNAME,
        tokens=fake.tokens(expired=expired),
        meta={"username": USERNAME, "sandbox": sandbox},
    )
    return bench


def _script(name: str, *words: str):
    return lambda fake: fake.script[name].extend(words)


CASES = [
    Case("happy path"),
    Case(
        "media processing for a few polls: waited for, then pinned",
        arrange=lambda fake: setattr(fake, "polls_before_done", 3),
    ),
    Case(
        "answer lost after the Pin was made: found on the board by its marker, never twice",
        arrange=_script("pin", "drop"),
        state="may_be_live",
        outcome="failed",
        reason_has="may be live",
        then_look=True,
    ),
    Case(
        "create errs 503 and made nothing: may be live; the look finds nothing, pins once",
        arrange=_script("pin", "status:503"),
        state="may_be_live",
        outcome="failed",
        publishes=0,
        then_look=True,
    ),
    Case(
        "rate limited on create: retried in the job after looking at the board",
        arrange=_script("pin", "status:429"),
    ),
    Case(
        "media processing fails: a new media is registered and pinned",
        arrange=_script("media", "failed"),
    ),
    Case(
        "the upload host errs once: uploaded again",
        arrange=_script("upload", "status:500"),
    ),
    Case(
        "access token expired mid-run: refreshed once, then pinned",
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
        "trial access on the production host: code 29, a person must switch to the sandbox",
        arrange=lambda fake: setattr(fake, "trial", True),
        state="needs_person",
        outcome="failed",
        publishes=0,
        reason_has="sandbox = true",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_pinterest_cases(home, clip, fake, case):
    bench = connected(home, clip, fake)
    run_case(bench, fake, case, lambda: len(fake.pins))


def test_the_pin_carries_the_choices_cover_and_marker(home, clip, fake):
    bench = connected(home, clip, fake)
    result = bench.send()
    (pin,) = fake.pins.values()
    assert result.url == f"https://www.pinterest.com/pin/{pin['id']}/"
    assert (pin["board_id"], pin["title"], pin["link"]) == (BOARD, CHOSEN.title, CHOSEN.link)
    attempt = bench.db.execute("SELECT marker, handles FROM post_attempts").fetchone()
    assert pin["alt_text"] == CHOSEN.alt_text
    # The description, a field v5 takes and gives back, ends with the attempt's marker.
    assert pin["description"] == f"{CHOSEN.description}\n\n{attempt[0]}"
    source = pin["media_source"]
    # An integer of seconds, as PinMediaSourceVideoID declares (the choice was 0.5 s).
    assert source["source_type"] == "video_id" and source["cover_image_key_frame_time"] == 1
    # Media registered first, then the upload with every presigned field and the file last.
    assert fake.uploads == [[*UPLOAD_FIELDS, "file"]]
    order = [(s.method, s.path) for s in fake.requests if s.host != "upload"]
    assert order.index(("POST", "/v5/media")) < order.index(("POST", "/v5/pins"))


def test_the_media_id_is_saved_before_the_upload(home, clip, fake):
    import json

    bench = connected(home, clip, fake)
    fake.script["upload"].extend(["status:500"] * 3)
    result = bench.send()
    assert result.outcome == "failed"
    handles = json.loads(bench.db.execute("SELECT handles FROM post_attempts").fetchone()[0])
    assert handles["media_id"] in fake.media
    assert not fake.pins


def test_the_sandbox_host_takes_trial_pins(home, clip, fake):
    fake.trial = True
    bench = connected(home, clip, fake, sandbox=True)
    assert bench.send().outcome == "posted"
    (pin,) = fake.pins.values()
    assert pin["host"] == "sandbox"
    assert {s.host for s in fake.requests} == {"sandbox", "upload"}  # production never called


def test_not_approved_is_refused_with_a_plain_reason(home, clip, fake):
    bench = connected(home, clip, fake, approved=False)
    platform = bench.platform()
    assert "approved = true" in platform.not_ready_reason()
    result = bench.send()
    assert result.outcome == "failed" and "approved" in result.reason
    assert fake.requests == []


def test_a_retry_looks_at_the_board_before_creating_again(home, clip, fake):
    bench = connected(home, clip, fake)
    fake.script["pin"].append("status:503")
    first = bench.send()
    assert bench.post(first.post_id)["state"] == "may_be_live"
    fake.requests.clear()
    again = bench.send(after=timedelta(minutes=1))
    assert again.outcome == "posted"
    calls = [(s.method, s.path) for s in fake.requests]
    assert calls.index(("GET", f"/v5/boards/{BOARD}/pins")) < calls.index(("POST", "/v5/pins"))
    assert len(fake.pins) == 1


def test_boards_are_listed_from_the_account(home, clip, fake):
    bench = connected(home, clip, fake)
    boards = bench.platform().list_boards()
    assert [b["name"] for b in boards] == ["Lofi nights", "Drafts"]


def test_a_rotated_refresh_token_is_saved_and_the_old_one_refused(home, clip, fake):
    bench = connected(home, clip, fake, expired=True)
    before = open_tokens(bench.db, home, load_account(bench.db, "pinterest"))
    assert bench.send().outcome == "posted"
    after = open_tokens(bench.db, home, load_account(bench.db, "pinterest"))
    assert after["refresh_token"] != before["refresh_token"]
    assert after["refresh_token"] in fake.refresh_tokens
    assert before["refresh_token"] not in fake.refresh_tokens
    assert load_account(bench.db, "pinterest").meta["refresh_expires_at"] > "2027"
    database = (home / "autoretto.db").read_bytes()
    assert after["refresh_token"].encode() not in database
    assert APP_SECRET.encode() not in database


def test_connect_pinterest_with_continuous_refresh(home, fake):
    from autoretto.ledger.store import open_database
    from tests.support import SignInPerson, sign_in

    home.mkdir(parents=True, exist_ok=True)
    db = open_database(home / "autoretto.db")
    said: list[str] = []
    settings = {
        "api_base": fake.url + "/prod",
        "token_uri": fake.url + "/prod/v5/oauth/token",
        "auth_uri": fake.url + "/oauth/",
    }
    person = SignInPerson(said, ask=lambda prompt: fake.consent(said[1]), secret=APP_SECRET)
    account = sign_in("pinterest", db, home, settings, person, app_id=pinterest_server.APP_ID)
    assert account.account_id == USER_ID and account.name == USERNAME
    assert account.meta["sandbox"] is False
    tokens = open_tokens(db, home, account)
    assert tokens["refresh_token"] in fake.refresh_tokens
    assert tokens["access_token"].encode() not in (home / "autoretto.db").read_bytes()


def test_connect_pinterest_sandbox_with_a_pasted_token(home, fake):
    from autoretto.ledger.store import open_database
    from tests.support import SignInPerson, sign_in

    home.mkdir(parents=True, exist_ok=True)
    db = open_database(home / "autoretto.db")
    token = fake.issue()["access_token"]
    settings = {"sandbox": True, "sandbox_base": fake.url + "/sandbox"}
    person = SignInPerson([], ask=input, secret=token)
    account = sign_in("pinterest", db, home, settings, person, sandbox_token=True)
    assert account.meta["sandbox"] is True
    assert [s.host for s in fake.requests] == ["sandbox"]


# -- the v5 description ------------------------------------------------------------------------


def test_connect_asks_for_every_scope_the_calls_declare(home, fake, clip):
    from tests.fakes.pinterest_contract import SCOPES as DECLARED
    from tests.support import SignInPerson, sign_in

    bench = Bench(home, "pinterest", settings=fake.settings(), clip=clip)
    said: list[str] = []
    person = SignInPerson(said, ask=lambda prompt: fake.consent(said[1]), secret=APP_SECRET)
    sign_in(
        "pinterest", bench.db, home, bench.config.platforms["pinterest"], person,
        app_id=pinterest_server.APP_ID,
    )  # fmt: skip
    assert set().union(*DECLARED.values()) <= set(fake.asked_scopes)
    assert bench.send().outcome == "posted"  # POST /v5/pins wants boards:write too


def test_a_sign_in_without_a_declared_scope_needs_a_person(home, clip, fake):
    """A token from an older connect (no boards:write): Pinterest refuses the Pin; a person
    must connect again, nothing is retried."""
    fake.granted = frozenset({"boards:read", "pins:read", "pins:write", "user_accounts:read"})
    bench = connected(home, clip, fake)
    result = bench.send()
    assert bench.post(result.post_id)["state"] == "needs_person"
    assert "boards:write" in result.reason, result.reason
    assert fake.pins == {}


def test_the_earlier_pin_is_found_by_the_marker_in_its_description(home, clip, fake):
    """The create's answer is lost; the board's Pins carry only the fields of the Pin schema,
    and the look finds the Pin by the marker at the end of its description."""
    fake.script["pin"].append("drop")
    bench = connected(home, clip, fake)
    result = bench.send()
    assert bench.post(result.post_id)["state"] == "may_be_live"
    again = bench.look(result.post_id)
    assert bench.post(result.post_id)["state"] == "published", again
    assert len(fake.pins) == 1
    assert fake.calls_to("GET", "/pins") >= 1 and fake.calls_to("POST", "/v5/pins") == 1


def test_a_look_past_an_older_pin_without_an_offset_finds_nothing_and_pins_once(home, clip, fake):
    """The board holds an earlier Pin, dated as the fake dates Pins (no UTC offset); the create
    call of the next post errs 503. The look reads that Pin as older than the attempt, so it
    ends there and pins the post once."""
    bench = connected(home, clip, fake)
    assert bench.send().outcome == "posted"
    (earlier,) = fake.pins.values()
    earlier["created_at"] = "2026-11-28T09:00:00"
    second = bench.add_episode(clip, title="Second")
    fake.script["pin"].append("status:503")
    result = bench.send(episode_id=second)
    assert bench.post(result.post_id)["state"] == "may_be_live"
    looked = bench.look(result.post_id)
    assert looked.outcome == "posted", looked
    assert bench.post(result.post_id)["state"] == "published"
    assert len(fake.pins) == 2  # the earlier Pin and this one, once
