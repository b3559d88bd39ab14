"""`autoretto report`: the HTML of a seeded home, slot by slot, and the page in a real browser.

The seeded home has three channels in three time zones and a week of history with every kind
of decision, a slot due now, future slots, a paced post waiting for its moment, an open
incident, a post that needs a person and an account to reconnect. The browser test opens the
page in headless Chromium (Debian's `chromium`), keeps a screenshot under test-artifacts/ and
checks that the page loaded without a console message and shows every channel and slot state.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from autoretto.clock import iso, parse_instant
from autoretto.config import Paths, load_config
from autoretto.decisions import slot_state
from autoretto.engine.run import register_channels
from autoretto.ledger.store import open_database
from autoretto.platforms import FIELDS
from autoretto.report import STATES, render, sparkline

NOW = "2026-11-29T12:00:00Z"  # a Sunday
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
CHROMIUM = os.environ.get("AUTORETTO_CHROMIUM", "/usr/bin/chromium")

CONFIG = """
[[channels]]
name = "lofi"
timezone = "UTC"
slots = ["10:00", "18:00"]
catch_up_window = "6h"
platforms = ["youtube", "bluesky"]

[[channels]]
name = "jazz"
timezone = "Europe/Berlin"
slots = ["09:30"]
days = ["mon", "tue", "wed", "thu", "fri"]
catch_up_window = "2h"
platforms = ["bluesky"]

[[channels]]
name = "ambient"
timezone = "America/New_York"
slots = ["07:15"]
catch_up_window = "1h"
platforms = ["folder"]
approval = true

[platforms.folder]
path = "outbox"
"""

# What each past slot of the seeded week was decided, per platform: (outcome, reason).
LOFI = {
    "2026-11-22T10:00": {"youtube": ("posted", "published"), "bluesky": ("posted", "published")},
    "2026-11-22T18:00": {"youtube": ("missed", "found 9h after its time, outside the 6h window")},
    "2026-11-23T10:00": {
        "youtube": ("refused_by_limit", "the day's YouTube API quota is used"),
        "bluesky": ("posted", "published"),
    },
    "2026-11-23T18:00": {"youtube": ("posted", "published")},
    "2026-11-24T10:00": {
        "youtube": ("nothing_ready", "no ready episode this platform has not had")
    },
    "2026-11-24T18:00": {
        "youtube": ("failed", "YouTube could not be reached (ConnectTimeout)"),
        "bluesky": ("posted", "published"),
    },
    "2026-11-25T10:00": {"youtube": ("posted", "published")},
    "2026-11-25T18:00": {"bluesky": ("busy", "post 3 waits for its moment")},
    "2026-11-26T10:00": {"youtube": ("posted", "published")},
    "2026-11-26T18:00": {"youtube": ("posted", "published")},
    "2026-11-27T10:00": {"youtube": ("posted", "published")},
    "2026-11-27T18:00": {"youtube": ("posted", "published")},
    "2026-11-28T10:00": {"youtube": ("posted", "published")},
    "2026-11-28T18:00": {"youtube": ("posted", "published")},
}
JAZZ = {
    "2026-11-23T09:30": {"bluesky": ("posted", "published")},
    "2026-11-24T09:30": {"bluesky": ("posted", "published")},
    "2026-11-25T09:30": {"bluesky": ("refused_by_limit", "Bluesky: 10 posts today, the cap")},
    "2026-11-26T09:30": {"bluesky": ("failed", "Bluesky could not be reached (ConnectTimeout)")},
}
#: the states a seeded week shows: all but a films cadence's dry run
SHOWN_STATES = set(STATES) - {"dry_run"}
AMBIENT = {
    "2026-11-24T07:15": {"folder": ("posted", "written to the outbox")},
    "2026-11-25T07:15": {"folder": ("waiting_for_approval", "ready episodes wait for approve")},
    "2026-11-26T07:15": {"folder": ("waiting_for_approval", "ready episodes wait for approve")},
    "2026-11-27T07:15": {"folder": ("missed", "a later slot was due")},
}


# Past slots without a decision that are not missed: lofi's 10:00 today is inside its window,
# jazz's Friday post waits for its paced moment.
DUE = {("lofi", "2026-11-29T10:00"), ("jazz", "2026-11-27T09:30")}


def expected_states(config: Any, now: Any) -> dict[tuple[str, str], str]:
    """Every slot of the last and next 7 days (whole days in the channel's zone) with the state
    a person should see: a slot that went out on one platform is posted."""
    decided = {"lofi": LOFI, "jazz": JAZZ, "ambient": AMBIENT}
    expected = {}
    for channel in config.channels:
        first = channel.schedule.local_date(now - timedelta(days=7))
        last = channel.schedule.local_date(now + timedelta(days=7))
        for slot in channel.schedule.slots_between(
            now - timedelta(days=9), now + timedelta(days=9)
        ):
            if not first <= channel.schedule.local_date(slot.at) <= last:
                continue
            outcomes = decided[channel.name].get(slot.key)
            if outcomes:
                state = slot_state(o for o, _ in outcomes.values())
            elif slot.at > now:
                state = "future"
            else:
                state = "due" if (channel.name, slot.key) in DUE else "missed"
            expected[(channel.name, slot.key)] = state
    return expected


def seed(home: Path) -> tuple[Any, Any, Any]:
    """A home with the seeded week; returns (config, db, now)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "autoretto.toml").write_text(CONFIG, encoding="utf-8")
    config = load_config(Paths(home), platforms=FIELDS)
    db = open_database(config.paths.database)
    now = parse_instant(NOW)
    register_channels(config, db, now - timedelta(days=30))
    moment = iso(now - timedelta(days=8))
    episode_ids = []
    for number in range(12):
        episode_ids.append(
            db["episodes"]
            .insert(
                {
                    "channel": "lofi",
                    "state": "ready",
                    "title": f"Rain on glass <{number}> & friends",
                    "off_schedule": 0,
                    "created_at": moment,
                    "updated_at": moment,
                }
            )
            .last_pk
        )
    db["episodes"].insert(
        {
            "channel": "ambient",
            "state": "ready",
            "title": "Slow tide",
            "off_schedule": 0,
            "created_at": moment,
            "updated_at": moment,
        }
    )
    by_channel = {"lofi": LOFI, "jazz": JAZZ, "ambient": AMBIENT}
    schedules = {c.name: c.schedule for c in config.channels}
    next_episode = iter(episode_ids)
    for channel, slots in by_channel.items():
        for key, outcomes in slots.items():
            slot_at = next(
                s
                for s in schedules[channel].slots_between(now - timedelta(days=9), now)
                if s.key == key
            )
            releases = any(o == "posted" for o, _ in outcomes.values()) and channel == "lofi"
            episode = next(next_episode) if releases else None
            for platform, (outcome, reason) in outcomes.items():
                post_id = None
                if episode is not None and outcome == "posted":
                    post_id = _published_post(db, episode, platform, slot_at, key)
                db["decisions"].insert(
                    {
                        "channel": channel, "slot": key, "slot_at": slot_at.at_text,
                        "platform": platform, "outcome": outcome, "reason": reason,
                        "decided_at": slot_at.at_text, "post_id": post_id, "run_id": "seed",
                    }
                )  # fmt: skip
    # Friday's jazz slot: its Bluesky post waits for a paced moment (not yet decided).
    jazz_episode = db["episodes"].insert(
        {"channel": "jazz", "state": "ready", "title": "Blue hour", "off_schedule": 0,
         "created_at": moment, "updated_at": moment}
    ).last_pk  # fmt: skip
    db["posts"].insert(
        {"episode_id": jazz_episode, "channel": "jazz", "platform": "bluesky", "state": "queued",
         "attempts": 0, "slot": "2026-11-27T09:30", "slot_at": "2026-11-27T08:30:00Z",
         "not_before": "2026-11-29T12:40:00Z", "created_at": moment, "updated_at": moment}
    )  # fmt: skip
    # Trouble a person must see at the top.
    db["incidents"].insert(
        {"opened_at": "2026-11-29T11:00:00Z", "failures": 3, "last_failure_at": NOW,
         "reason": "YouTube is busy: Backend Error"}
    )  # fmt: skip
    db["posts"].insert(
        {"episode_id": episode_ids[-1], "channel": "lofi", "platform": "bluesky",
         "state": "needs_person", "attempts": 3, "reason": "3 failed attempts",
         "created_at": moment, "updated_at": moment}
    )  # fmt: skip
    db["accounts"].insert(
        {"platform": "threads", "label": "default", "account_id": "1", "name": "rainlofi",
         "state": "reconnect", "reason": "Threads refused the token (the token expired)"}
    )  # fmt: skip
    return config, db, now


def _published_post(db: Any, episode: int, platform: str, slot: Any, key: str) -> int:
    published = slot.at + timedelta(minutes=3)
    url = (
        f"https://www.youtube.com/watch?v=vid{episode}"
        if platform == "youtube"
        else f"https://bsky.app/profile/lofi.test/post/rk{episode}"
    )
    post_id = (
        db["posts"]
        .insert(
            {
                "episode_id": episode, "channel": "lofi", "platform": platform,
                "state": "published", "url": url, "platform_post_id": f"id{episode}{platform}",
                "attempts": 1, "slot": key, "created_at": iso(published),
                "updated_at": iso(published), "published_at": iso(published),
            }
        )
        .last_pk
    )  # fmt: skip
    if platform == "youtube":
        for hours, views in ((1, 10), (20, 180), (44, 420), (70, 515)):
            at = published + timedelta(hours=hours)
            if at <= parse_instant(NOW):
                db["post_stats"].insert(
                    {"post_id": post_id, "at": iso(at), "views": views * episode,
                     "likes": views // 10, "comments": 1}
                )  # fmt: skip
    return post_id


class Cells(HTMLParser):
    """(channel, slot) -> (state, tooltip) of every calendar cell; the channels in order."""

    def __init__(self) -> None:
        super().__init__()
        self.channel: str | None = None
        self.channels: list[str] = []
        self.cells: dict[tuple[str, str], tuple[str, str]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("data-channel"):
            self.channel = found["data-channel"]
            self.channels.append(self.channel)
        if found.get("data-slot"):
            assert self.channel is not None
            key = (self.channel, found["data-slot"] or "")
            assert key not in self.cells, f"slot {key} shown twice"
            self.cells[key] = (found["data-state"] or "", found.get("title") or "")


def parse(page: str) -> Cells:
    cells = Cells()
    cells.feed(page)
    return cells


@pytest.fixture
def seeded(home: Path) -> tuple[Any, Any, Any]:
    return seed(home)


def test_every_slot_of_the_seeded_week_has_its_state_and_why(seeded) -> None:
    config, db, now = seeded
    page = render(config, db, now, days=7)
    shown = parse(page)
    expected = expected_states(config, now)
    assert shown.channels == ["lofi", "jazz", "ambient"]
    assert {key: state for key, (state, _) in shown.cells.items()} == expected
    # Every kind of state is in the seeded week.
    assert set(expected.values()) == SHOWN_STATES
    # The tooltips say why, per platform; a slot that went out on one platform is posted.
    state, why = shown.cells[("lofi", "2026-11-24T18:00")]
    assert state == "posted"
    assert "youtube: failed - YouTube could not be reached (ConnectTimeout)" in why
    assert "bluesky: posted (post " in why
    assert (
        "refused by a limit - the day's YouTube API quota is used"
        in (shown.cells[("lofi", "2026-11-23T10:00")][1])
    )
    assert "due: the next run-due posts it" in shown.cells[("lofi", "2026-11-29T10:00")][1]
    assert "goes out at 2026-11-29T12:40:00Z" in shown.cells[("jazz", "2026-11-27T09:30")][1]
    future = shown.cells[("ambient", "2026-11-30T07:15")][1]
    assert "Mon 30 Nov 2026, 07:15 America/New_York (2026-11-30T12:15:00Z)" in future
    assert "future: in 1 d 0 h" in future and "1 ready episode waiting" in future


def test_what_needs_a_person_comes_first(seeded) -> None:
    config, db, now = seeded
    page = render(config, db, now, days=7)
    top = page[: page.index('data-channel="lofi"')]
    assert "Incident 1 open since 2026-11-29T11:00:00Z (3 failures)" in top
    assert "YouTube is busy: Backend Error" in top
    assert re.search(r"Post \d+ \(lofi, bluesky, .*\) needs a person: 3 failed attempts", top)
    assert "threads account rainlofi must be reconnected" in top


def test_releases_have_links_counters_and_a_sparkline(seeded) -> None:
    config, db, now = seeded
    page = render(config, db, now, days=7)
    lofi = page[page.index('data-channel="lofi"') : page.index('data-channel="jazz"')]
    assert 'href="https://www.youtube.com/watch?v=vid3"' in lofi
    assert 'href="https://bsky.app/profile/lofi.test/post/rk2"' in lofi
    assert 'vid1"' not in lofi  # episode 1 went out before the 7 days
    # Titles are text, never markup.
    assert "Rain on glass &lt;2&gt; &amp; friends" in lofi and "<2>" not in lofi
    assert lofi.count("<polyline") == 8  # the YouTube releases of the week
    # Episode 3 went out on Nov 23 at 18:03: 3 × 515 views after 70 hours.
    assert "<td class='num'>1,545<small" in lofi


def test_the_page_is_self_contained(seeded) -> None:
    config, db, now = seeded
    page = render(config, db, now, days=7)
    assert page.startswith("<!DOCTYPE html>")
    for outside in ("<script", "<link", " src=", "url(", "@import"):
        assert outside not in page, outside


def test_sparkline_draws_its_values() -> None:
    line = sparkline([0, 5, 10])
    points = re.search(r'<polyline points="([^"]+)"', line).group(1).split()
    ys = [float(p.split(",")[1]) for p in points]
    assert ys[0] > ys[1] > ys[2]  # rising views draw upwards
    assert "<svg" not in sparkline([7])


def test_report_command_writes_the_page_and_prints_its_path(seeded, home: Path) -> None:
    from autoretto.commands.insight import register

    app = typer.Typer()
    app.callback()(lambda: None)
    register(app)
    runner = CliRunner()
    result = runner.invoke(app, ["report", "--days", "3"], env={"AUTORETTO_NOW": NOW})
    assert result.exit_code == 0, result.output
    target = home / "report.html"
    assert result.stdout.strip() == str(target)
    assert 'data-slot="2026-11-26T18:00"' in target.read_text()
    assert 'data-slot="2026-11-26T10:00"' in target.read_text()  # the first day is whole
    assert 'data-slot="2026-11-25T18:00"' not in target.read_text()  # over 3 days back
    out = home / "elsewhere" / "r.html"
    result = runner.invoke(app, ["report", "--out", str(out)], env={"AUTORETTO_NOW": NOW})
    assert result.exit_code == 0 and out.is_file()


# -- in a real browser ------------------------------------------------------------------------


def _chromium() -> str:
    if os.environ.get("AUTORETTO_SKIP_BROWSER") == "1":
        pytest.skip("AUTORETTO_SKIP_BROWSER=1: the browser test is skipped on this machine")
    found = shutil.which(CHROMIUM) or shutil.which("chromium")
    if found is None:
        pytest.fail(
            f"headless Chromium is needed for the report's browser test and {CHROMIUM} is "
            "missing: `apt-get install -y chromium` (or set AUTORETTO_SKIP_BROWSER=1 on a "
            "machine without it)"
        )
    return found


def open_in_chromium(page: Path, screenshot: Path, profile: Path) -> tuple[str, list[str]]:
    """Load `page` in headless Chromium: (the DOM it built, its console messages)."""
    answer = subprocess.run(
        [
            _chromium(), "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--no-first-run", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
            "--hide-scrollbars", "--window-size=1360,1650", f"--screenshot={screenshot}",
            "--dump-dom", page.as_uri(),
        ],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert answer.returncode == 0, answer.stderr[-2000:]
    console = [line for line in answer.stderr.splitlines() if ":CONSOLE" in line]
    return answer.stdout, console


def test_the_console_check_sees_errors(tmp_path: Path) -> None:
    """The browser check below would catch a broken page (it is not blind)."""
    broken = tmp_path / "broken.html"
    broken.write_text("<!DOCTYPE html><p>x</p><script>notDefined()</script>", encoding="utf-8")
    _, console = open_in_chromium(broken, tmp_path / "broken.png", tmp_path / "profile")
    assert any("notDefined" in line for line in console), console


def test_the_report_in_a_real_browser(seeded, tmp_path: Path) -> None:
    from PIL import Image

    config, db, now = seeded
    page = tmp_path / "report.html"
    page.write_text(render(config, db, now, days=7), encoding="utf-8")
    ARTIFACTS.mkdir(exist_ok=True)
    screenshot = ARTIFACTS / "report.png"
    screenshot.unlink(missing_ok=True)
    dom, console = open_in_chromium(page, screenshot, tmp_path / "profile")
    assert console == [], console
    shown = parse(dom)
    assert shown.channels == ["lofi", "jazz", "ambient"]
    states = {state for state, _ in shown.cells.values()}
    assert states == SHOWN_STATES
    assert {key: s for key, (s, _) in shown.cells.items()} == expected_states(config, now)
    # The screenshot is the page drawn: the colours of posted, failed and missed slots are in it.
    image = Image.open(screenshot).convert("RGB")
    assert image.size == (1360, 1650)
    small = image.resize((680, 825))
    colours = {colour for _, colour in small.getcolors(maxcolors=680 * 825)}
    for colour in ((0x30, 0xA4, 0x6C), (0xE5, 0x48, 0x4D), (0x8B, 0x8D, 0x98)):
        assert any(sum(abs(a - b) for a, b in zip(colour, c, strict=True)) < 12 for c in colours)
