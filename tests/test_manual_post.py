"""Posts a person makes: the TikTok and Pinterest screens driven with scripted answers, the
library's `post_by_hand` through the same never-twice guards, and the terminal-only commands."""

from __future__ import annotations

import re
from collections import deque
from datetime import timedelta

import pytest

from autoretto.commands.by_hand import Cancelled
from autoretto.errors import UsageError
from autoretto.manual_post import MANUAL_PLATFORMS, VideoFacts, post_by_hand
from autoretto.manual_post import screen as screen_of
from autoretto.platforms import REGISTRY
from autoretto.platforms.pinterest import PinterestChoices, PinterestPlatform, PinterestScreen
from autoretto.platforms.pinterest import choice_problems as pinterest_choice_problems
from autoretto.platforms.tiktok import CreatorInfo, TikTokChoices, TikTokPlatform, TikTokScreen
from tests.fakes import pinterest_server, tiktok_server
from tests.platforms.harness import Bench

# Each screen is its adapter's: what it reads (`screen`) and its questions (`ask_choices`).
tiktok_choices = TikTokPlatform.ask_choices
pinterest_choices = PinterestPlatform.ask_choices

CREATOR = CreatorInfo(
    nickname="Lofi Beats",
    username="lofi.beats",
    avatar_url="",
    privacy_level_options=("PUBLIC_TO_EVERYONE", "FOLLOWER_OF_CREATOR", "SELF_ONLY"),
    comment_disabled=False,
    duet_disabled=True,
    stitch_disabled=False,
    max_video_post_duration_sec=600,
)
VIDEO = VideoFacts("/media/rain.mp4", 42.0, 12_500_000, 1080, 1920)


class Person:
    """Answers the screen's questions from a script and keeps the transcript."""

    def __init__(self, *answers: str) -> None:
        self.answers = deque(answers)
        self.transcript: list[tuple[str, str, str]] = []

    def ask(self, question: str) -> str:
        self.transcript.append(("ask", question, ""))
        assert self.answers, f"unexpected question: {question}"
        return self.answers.popleft()

    def say(self, text: str, style: str = "") -> None:
        self.transcript.append(("say", text, style))

    def said(self, words: str) -> list[int]:
        return [i for i, (kind, text, _) in enumerate(self.transcript) if words in text]

    def questions(self) -> list[str]:
        return [text for kind, text, _ in self.transcript if kind == "ask"]


def tiktok_screen_for(*, audited: bool = True, duration: float = 42.0, **creator) -> TikTokScreen:
    info = CreatorInfo(**{**CREATOR.__dict__, **creator})
    return TikTokScreen(
        episode_id=7, episode_title="Rainy night", creator=info, audited=audited,
        video=VideoFacts(VIDEO.path, duration, VIDEO.size_bytes, 1080, 1920),
        default_title="Rainy night #lofi", is_aigc=True,
    )  # fmt: skip


# -- the TikTok screen ------------------------------------------------------------------------


def test_nothing_is_preselected_an_empty_privacy_answer_is_refused():
    person = Person("", "", "1", "", "", "", "y")  # title, privacy ×2, comments, stitch, disclose
    choices = tiktok_choices(tiktok_screen_for(), person.ask, person.say)
    assert choices.privacy_level == "PUBLIC_TO_EVERYONE"  # the person typed 1
    privacy_questions = [q for q in person.questions() if q.startswith("Privacy")]
    assert len(privacy_questions) == 2  # the empty answer was refused and asked again
    assert all("[" not in q for q in privacy_questions)  # no default offered
    assert person.said("nothing is chosen for you")
    assert (choices.allow_comment, choices.allow_duet, choices.allow_stitch) == (False,) * 3
    assert not choices.disclose_commercial and choices.music_confirmed
    assert choices.title == "Rainy night #lofi" and choices.is_aigc


def test_a_disabled_interaction_is_greyed_out_and_never_asked():
    person = Person("", "1", "y", "y", "", "y")
    choices = tiktok_choices(tiktok_screen_for(), person.ask, person.say)
    (duet,) = [line for line in person.transcript if "Allow Duet" in line[1]]
    assert duet[0] == "say" and duet[2] == "dim" and "turned off" in duet[1]
    assert not any("Duet" in q for q in person.questions())
    assert choices.allow_comment and choices.allow_stitch and not choices.allow_duet


def test_branded_content_cannot_be_private():
    # Unaudited: only "Only me" is offered; branded content is refused with TikTok's reason.
    person = Person("", "1", "n", "n", "y", "n", "y", "y", "y", "n", "y")
    choices = tiktok_choices(tiktok_screen_for(audited=False), person.ask, person.say)
    assert person.said("Branded content visibility cannot be set to private")
    assert choices.privacy_level == "SELF_ONLY"
    assert choices.disclose_commercial and choices.your_brand and not choices.branded_content


def test_disclosure_on_needs_a_brand_choice():
    person = Person("", "1", "", "", "y", "n", "n", "n", "y")
    choices = tiktok_choices(tiktok_screen_for(), person.ask, person.say)
    assert person.said('choose "Your brand" and/or "Branded content"')
    assert not choices.disclose_commercial


def test_the_music_declaration_comes_before_the_confirmation():
    person = Person("", "1", "", "", "y", "n", "y", "y")
    choices = tiktok_choices(tiktok_screen_for(), person.ask, person.say)
    declared = person.said("Music Usage Confirmation")
    confirm = person.said("Post to TikTok now?")
    assert declared and confirm and max(declared) < min(confirm)
    assert person.said("Branded Content Policy")  # branded content was chosen
    assert choices.branded_content and choices.privacy_level == "PUBLIC_TO_EVERYONE"


def test_the_screen_says_who_posts_what_and_that_unaudited_posts_are_private():
    person = Person("My own title", "1", "", "", "", "y")
    choices = tiktok_choices(tiktok_screen_for(audited=False), person.ask, person.say)
    assert person.said("Posting to TikTok as Lofi Beats (@lofi.beats)")
    assert person.said("42.0 s, 12.5 MB, 1080x1920")
    (notice,) = person.said("posts are private")
    assert notice < min(person.said("Who can see"))
    assert choices.title == "My own title"


def test_a_video_longer_than_the_creator_may_post_is_refused_before_any_question():
    person = Person()
    with pytest.raises(Cancelled, match="up to 600 s"):
        tiktok_choices(tiktok_screen_for(duration=700), person.ask, person.say)
    assert person.questions() == []


def test_saying_no_at_the_end_posts_nothing():
    person = Person("", "1", "", "", "", "n")
    with pytest.raises(Cancelled, match="nothing was posted"):
        tiktok_choices(tiktok_screen_for(), person.ask, person.say)


# -- the Pinterest screen ----------------------------------------------------------------------


def pinterest_screen_for() -> PinterestScreen:
    return PinterestScreen(
        episode_id=7, episode_title="Rainy night", account="lofibeats", sandbox=True,
        boards=[{"id": "b1", "name": "Lofi nights", "privacy": "PUBLIC"},
                {"id": "b2", "name": "Drafts", "privacy": "SECRET"}],
        video=VIDEO, default_title="Rainy night", default_description="A warm beat.",
        default_alt_text="Artwork for Rainy night", default_cover_seconds=14.0,
    )  # fmt: skip


def test_pinterest_board_must_be_chosen_and_defaults_are_kept():
    person = Person("", "2", "", "", "example.com", "https://example.com/r", "", "", "y")
    choices = pinterest_choices(pinterest_screen_for(), person.ask, person.say)
    assert person.said("nothing is chosen for you")
    assert person.said("Drafts (secret)") and person.said("visible only to you")
    assert person.said("must start with https://")
    assert choices == PinterestChoices(
        board_id="b2", board_name="Drafts", title="Rainy night", description="A warm beat.",
        link="https://example.com/r", alt_text="Artwork for Rainy night", cover_seconds=14.0,
    )  # fmt: skip


def test_pinterest_cover_frame_within_the_video():
    person = Person("1", "", "", "", "", "99", "2.5", "y")
    choices = pinterest_choices(pinterest_screen_for(), person.ask, person.say)
    assert person.said("from 0 to 42.0 seconds")
    assert choices.cover_seconds == 2.5 and choices.link == ""


@pytest.mark.parametrize("typed", ["nan", "inf", "-inf"])
def test_pinterest_cover_frame_is_a_number_not_nan_or_infinity(typed):
    # float() takes these words; Pinterest's key frame is a whole number of seconds, and
    # int(nan) would end the post in a traceback instead of a question asked again.
    person = Person("1", "", "", "", "", typed, "2.5", "y")
    choices = pinterest_choices(pinterest_screen_for(), person.ask, person.say)
    assert person.said("Type a number of seconds")
    assert choices.cover_seconds == 2.5


def test_pinterest_choices_refuse_a_cover_frame_that_is_not_a_number():
    for cover in (float("nan"), float("inf")):
        choices = PinterestChoices(board_id="b1", title="Rainy night", cover_seconds=cover)
        problems = pinterest_choice_problems(choices, duration=None)
        assert problems == ["the cover frame must be a number of seconds, e.g. 2.5"]


# -- the library: the same guards as a slot -----------------------------------------------------


@pytest.fixture
def tiktok(monkeypatch):
    # The config accepts [platforms.tiktok] once the lead wires MANUAL_PLATFORMS into it.
    monkeypatch.setitem(REGISTRY, "tiktok", TikTokPlatform)
    server = tiktok_server.start()
    yield server
    server.close()


@pytest.fixture
def pinterest(monkeypatch):
    monkeypatch.setitem(REGISTRY, "pinterest", PinterestPlatform)
    server = pinterest_server.start()
    yield server
    server.close()


def tiktok_bench(home, clip, fake, **settings) -> Bench:
    bench = Bench(home, "tiktok", settings=fake.settings(poll_tries=3, **settings), clip=clip)
    bench.connect(
        account_id=tiktok_server.OPEN_ID, name="@" + tiktok_server.USERNAME,
        tokens=fake.tokens(), meta={"username": tiktok_server.USERNAME},
    )  # fmt: skip
    return bench


PRIVATE = TikTokChoices(title="Rain", privacy_level="SELF_ONLY", music_confirmed=True)


def test_manual_platforms_stay_out_of_the_slot_registry():
    from autoretto.platforms import REGISTRY as slots

    assert set(MANUAL_PLATFORMS) == {"tiktok", "pinterest"}
    assert not set(MANUAL_PLATFORMS) & set(slots)


def test_the_tiktok_screen_reads_the_creator_and_the_video(home, clip, tiktok):
    bench = tiktok_bench(home, clip, tiktok)
    screen = screen_of(bench.config, bench.db, "tiktok", bench.episode_id)
    assert screen.creator.nickname == tiktok_server.NICKNAME
    assert screen.creator.duet_disabled and screen.creator.max_video_post_duration_sec == 600
    assert screen.video.resolution == "160x90" and 0.9 < screen.video.duration < 1.2
    assert screen.audited is False and screen.already is None


def test_a_second_press_never_posts_twice(home, clip, tiktok):
    bench = tiktok_bench(home, clip, tiktok)
    first = post_by_hand(bench.config, bench.db, "tiktok", bench.episode_id, PRIVATE)
    assert first.outcome == "posted" and first.sent
    again = post_by_hand(bench.config, bench.db, "tiktok", bench.episode_id, PRIVATE)
    assert again.outcome == "posted" and again.reason == "already on TikTok"
    assert tiktok.calls_to("/video/init/") == 1 and len(tiktok.published) == 1
    assert "already posted" in screen_of(bench.config, bench.db, "tiktok", bench.episode_id).already
    line = (home / "logs" / "run.log").read_text()
    assert "slot=by-hand platform=tiktok outcome=posted" in line


def test_a_press_after_a_lost_answer_asks_tiktok_first(home, clip, tiktok, monkeypatch):
    from autoretto import clock

    bench = tiktok_bench(home, clip, tiktok)
    tiktok.script["status"].extend(["drop"] * 3)
    first = post_by_hand(bench.config, bench.db, "tiktok", bench.episode_id, PRIVATE)
    assert first.outcome == "failed" and "may be live" in first.reason
    later = clock.now() + timedelta(minutes=2)
    monkeypatch.setattr(clock, "now", lambda: later)
    again = post_by_hand(bench.config, bench.db, "tiktok", bench.episode_id, PRIVATE)
    assert again.outcome == "posted" and "earlier attempt went out" in again.reason
    assert tiktok.calls_to("/video/init/") == 1


def test_choices_the_screen_would_refuse_are_refused_before_anything_is_recorded(
    home, clip, tiktok
):
    bench = tiktok_bench(home, clip, tiktok)
    branded = TikTokChoices(
        title="Rain", privacy_level="SELF_ONLY", disclose_commercial=True, branded_content=True,
        music_confirmed=True,
    )  # fmt: skip
    with pytest.raises(UsageError, match="cannot be set to private"):
        post_by_hand(bench.config, bench.db, "tiktok", bench.episode_id, branded, creator=CREATOR)
    assert bench.db.execute("SELECT COUNT(*) FROM posts").fetchone()[0] == 0
    assert tiktok.requests == []


def test_pinterest_is_off_until_approved(home, clip, pinterest):
    bench = Bench(
        home, "pinterest", settings=pinterest.settings(approved=False), clip=clip
    )  # fmt: skip
    choices = PinterestChoices(board_id=pinterest_server.BOARDS[0]["id"], title="Rain")
    with pytest.raises(UsageError, match="approved = true"):
        screen_of(bench.config, bench.db, "pinterest", bench.episode_id)
    with pytest.raises(UsageError, match="approved = true"):
        post_by_hand(bench.config, bench.db, "pinterest", bench.episode_id, choices)
    assert bench.db.execute("SELECT COUNT(*) FROM posts").fetchone()[0] == 0
    assert pinterest.requests == []


def test_a_pin_by_hand_lists_boards_then_pins_once(home, clip, pinterest):
    bench = Bench(home, "pinterest", settings=pinterest.settings(), clip=clip)
    bench.connect(
        account_id=pinterest_server.USER_ID, name=pinterest_server.USERNAME,
        tokens=pinterest.tokens(), meta={"username": pinterest_server.USERNAME, "sandbox": False},
    )  # fmt: skip
    screen = screen_of(bench.config, bench.db, "pinterest", bench.episode_id)
    assert [b["name"] for b in screen.boards] == ["Lofi nights", "Drafts"]
    assert screen.default_cover_seconds == pytest.approx(0.3, abs=0.05)
    person = Person("1", "", "", "", "", "", "y")
    choices = pinterest_choices(screen, person.ask, person.say)
    first = post_by_hand(bench.config, bench.db, "pinterest", bench.episode_id, choices)
    again = post_by_hand(bench.config, bench.db, "pinterest", bench.episode_id, choices)
    assert first.outcome == again.outcome == "posted"
    assert len(pinterest.pins) == 1


# -- the commands ----------------------------------------------------------------------------------


def _app():
    import typer

    from autoretto.commands.by_hand import register
    from autoretto.commands.connect import register as register_connect

    app = typer.Typer()
    register_connect(app)
    register(app)
    return app


@pytest.mark.parametrize("platform", ["tiktok", "pinterest"])
def test_the_posting_screens_refuse_to_run_without_a_terminal(home, platform):
    from typer.testing import CliRunner

    result = CliRunner().invoke(_app(), ["post", platform, "1"], input="y\n")
    assert result.exit_code == 2
    assert f"post {platform} needs a terminal" in result.output
    assert "Traceback" not in result.output


def test_post_tiktok_at_a_terminal_end_to_end(home, clip, tiktok, monkeypatch):
    from typer.testing import CliRunner

    import autoretto.commands.by_hand as by_hand

    bench = tiktok_bench(home, clip, tiktok)
    # CliRunner's stdin is no terminal; this test stands in for the person at one.
    monkeypatch.setattr(by_hand, "_needs_terminal", lambda what: None)
    answers = "\n".join(["", "1", "", "", "", "y"]) + "\n"
    result = CliRunner().invoke(_app(), ["post", "tiktok", str(bench.episode_id)], input=answers)
    assert result.exit_code == 0, result.output
    assert "Posting to TikTok as Lofi Beats" in result.output
    assert "Posted: https://www.tiktok.com/@lofi.beats" in result.output
    assert len(tiktok.published) == 1
    assert tiktok.inits[0].post_info["privacy_level"] == "SELF_ONLY"


def test_every_command_has_help():
    from typer.testing import CliRunner

    from autoretto.cli import app

    for args in (["post", "tiktok"], ["post", "pinterest"], ["connect", "tiktok"],
                 ["connect", "pinterest"]):  # fmt: skip
        result = CliRunner().invoke(app, [*args, "--help"])
        assert result.exit_code == 0, args
        assert re.search(r"Example:\s+autoretto", result.output), args
