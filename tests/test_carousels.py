"""Carousels (issue 29): a release's cards as a post of their own, planned at a minute of their
own, sent once through the post state machine, whatever crashes."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoretto import pace
from tests.support import run_command, write_config

CHANNEL = """
[[channels]]
name = "lofi"
timezone = "UTC"
slots = ["10:00"]
catch_up_window = "2h"
platforms = ["folder"]
carousels = {carousels}
"""

SLOT_RUN = "2026-11-29T10:01:00Z"
#: past every moment a carousel of the 10:00 release may be drawn for (2 to 8 hours after it)
LATER = "2026-11-29T18:30:00Z"


def carousel_files(home: Path) -> tuple[list[dict], list[Path]]:
    """The outbox's carousel sidecars and their card files."""
    folder = home / "outbox" / "lofi"
    sidecars = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    carousels = [s for s in sidecars if s.get("kind") == "carousel"]
    cards = [folder / card["file"] for s in carousels for card in s["cards"]]
    return carousels, cards


@pytest.fixture
def released(home, cli, clip):
    """A channel opted in to carousels on the folder outbox, its 10:00 release posted."""
    write_config(home, CHANNEL.format(carousels='["folder"]'))
    cli("init")
    code, _, err = cli("episode", "add", "lofi", str(clip), "--title", "Night Drive")
    assert code == 0, err
    cli("run-due", now="2026-11-29T09:00:00Z")  # the channel is seen before its slot
    report = cli.json("run-due", now=SLOT_RUN)
    assert [d["outcome"] for d in report["decisions"]] == ["posted"]
    (planned,) = report["carousels"]
    return planned


def test_a_release_s_carousel_is_planned_hours_later_off_the_slot_minute(released):
    moment = datetime.fromisoformat(released["planned_for"])
    slot = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
    assert timedelta(hours=2) <= moment - slot <= timedelta(hours=8, minutes=1)
    assert min(moment.minute, 60 - moment.minute) >= pace.CAROUSEL_SLOT_MINUTE_GAP
    assert released["platform"] == "folder" and released["episode_id"] == 1


def test_the_carousel_goes_out_once_with_its_cards_and_alt_texts(home, cli, released):
    before = cli.json("run-due", now="2026-11-29T11:30:00Z")  # its moment has not come
    assert before["carousels"] == []
    assert carousel_files(home) == ([], [])

    report = cli.json("run-due", now=LATER)
    (sent,) = report["carousels"]
    assert sent["outcome"] == "posted"
    (sidecar,), cards = carousel_files(home)
    assert sidecar["title"] == "Night Drive" and sidecar["episode_id"] == 1
    assert [c["alt"] for c in sidecar["cards"]] == [
        "Artwork for Night Drive",
        "Night Drive: title and credits card (lofi)",
        "Night Drive: lyrics and details card",
        "The waveform of Night Drive, start to end",
    ]
    from PIL import Image

    for card in cards:  # decoded, not taken from the drawer's word
        with Image.open(card) as image:
            assert image.format == "JPEG" and image.size == (1080, 1350)
    # the waveform of a 440 Hz sine is drawn across the card's middle, not left blank
    with Image.open(cards[3]) as waveform:
        middle = waveform.convert("L").crop((200, 600, 880, 750))
        assert sum(middle.histogram()[200:]) > 0.5 * middle.width * middle.height

    again = cli.json("run-due", now="2026-11-29T20:00:00Z")
    assert again["carousels"] == []
    assert len(carousel_files(home)[0]) == 1
    posts = {(p["platform"], p["state"]) for p in cli.json("posts")}
    assert posts == {("folder", "published")}  # the video's and the carousel's, both once
    assert len(cli.json("posts")) == 2


@pytest.mark.parametrize(
    "point", ["before_send", "after_send", "before_journal", "after_publish_recorded"]
)
def test_a_run_killed_while_sending_a_carousel_leaves_exactly_one(home, released, point):
    code, _, _ = run_command("run-due", now=LATER, env={"AUTORETTO_FAULT": f"{point}:kill"})
    assert code == -9
    # the killed run's claim on the post is let go only once its beat has stood still
    for later in ("2026-11-29T19:00:00Z", "2026-11-29T19:30:00Z", "2026-11-29T20:30:00Z"):
        code, _out, err = run_command("run-due", now=later)
        assert code in (0, 4), err
    carousels, cards = carousel_files(home)
    assert len(carousels) == 1 and len(cards) == 4
    connection = sqlite3.connect(home / "autoretto.db")
    states = connection.execute("SELECT kind, state FROM posts ORDER BY id").fetchall()
    assert states == [("video", "published"), ("carousel", "published")]


def test_a_channel_not_opted_in_gets_no_carousel(home, cli, clip):
    write_config(home, CHANNEL.format(carousels="[]"))
    cli("init")
    cli("episode", "add", "lofi", str(clip), "--title", "Plain")
    cli("run-due", now="2026-11-29T09:00:00Z")
    assert cli.json("run-due", now=SLOT_RUN)["carousels"] == []
    assert cli.json("run-due", now=LATER)["carousels"] == []
    assert carousel_files(home) == ([], [])


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ('["webhook"]', "carousels: webhook takes no carousel"),
        ('["myspace"]', "carousels"),
        ('"folder"', "carousels: list platform names"),
    ],
)
def test_a_wrong_carousels_setting_is_one_line_naming_the_field(home, cli, value, said):
    write_config(home, CHANNEL.format(carousels=value))
    code, _out, err = cli("config", "check")
    assert code != 0
    assert said in err
    assert not (home / "autoretto.db").exists()


@settings(max_examples=200, deadline=None)
@given(
    released=st.datetimes(
        min_value=datetime(2026, 1, 1), max_value=datetime(2040, 1, 1), timezones=st.just(UTC)
    ),
    slot_minute=st.integers(0, 59),
    others=st.lists(st.integers(0, 10 * 3600), max_size=6),
    seed=st.integers(0, 2**32),
)
def test_a_carousel_moment_keeps_every_rule(released, slot_minute, others, seed):
    config = pace.PaceConfig(seed=seed)
    slot_at = released.replace(minute=slot_minute, second=0, microsecond=0)
    around = tuple(released + timedelta(seconds=o) for o in others)
    moment = pace.carousel_moment(
        config,
        channel="lofi",
        platform="instagram",
        episode_id=7,
        released_at=released,
        slot_at=slot_at,
        state=pace.AccountState(others=around),
    )
    if moment is None:  # six posts an hour apart can leave no minute: then it says so
        return
    start = released.replace(microsecond=0)
    assert pace.CAROUSEL_EARLIEST <= moment - start <= pace.CAROUSEL_LATEST
    apart = abs(moment.minute - slot_minute)
    assert min(apart, 60 - apart) >= pace.CAROUSEL_SLOT_MINUTE_GAP
    assert all(abs(moment - other) >= config.other_posts_gap for other in around)
    again = pace.carousel_moment(
        config,
        channel="lofi",
        platform="instagram",
        episode_id=7,
        released_at=released,
        slot_at=slot_at,
        state=pace.AccountState(others=around),
    )
    assert again == moment


def test_a_database_restored_from_before_the_carousel_never_sends_it_again(home, cli, released):
    import shutil

    connection = sqlite3.connect(home / "autoretto.db")
    backup = sqlite3.connect(home.parent / "before-the-carousel.db")
    connection.backup(backup)
    backup.close()
    connection.close()
    assert cli.json("run-due", now=LATER)["carousels"][0]["outcome"] == "posted"

    for suffix in ("", "-wal", "-shm"):  # last night's copy put back
        (home / f"autoretto.db{suffix}").unlink(missing_ok=True)
    shutil.copy(home.parent / "before-the-carousel.db", home / "autoretto.db")
    code, _, err = cli("run-due", now="2026-11-29T19:00:00Z")
    assert code == 3 and "POSTING IS HELD" in err
    code, _, err = cli("resume", "--checked")
    assert code == 0, err

    posts = {(p["kind"], p["state"]) for p in cli.json("posts")}
    assert posts == {("video", "published"), ("carousel", "published")}
    for later in ("2026-11-29T19:30:00Z", "2026-11-29T21:00:00Z"):
        cli("run-due", now=later)
    assert len(carousel_files(home)[0]) == 1
