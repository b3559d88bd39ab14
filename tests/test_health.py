"""A platform that cannot post, and a stock about to run out, seen where a person looks.

Issue 27: with `youtube` in a channel's platforms and no account connected, `config check` said
ok, `doctor` exited 0, `status`, the report and the page said nothing while every `run-due`
exited 1; a channel about to run out of tracks showed "0 ready" only once it had. Each test
walks the command line (typer's runner), the report's HTML and the page (Starlette's test
client) as a person would, and the notifier's events.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autoretto.config import Paths, load_config
from autoretto.ledger.episodes import add_episode
from autoretto.ledger.store import open_database
from autoretto.platforms import FIELDS
from tests.fakes import webhook_server
from tests.support import write_config

FIX = "`autoretto connect youtube`"
NOT_CONNECTED = "mine: youtube cannot post: YouTube is not connected; fix: " + FIX


def channel(
    platforms: list[str], *, slots: tuple[str, ...] = ("13:00",), pipeline: str = ""
) -> str:
    return (
        '[[channels]]\nname = "mine"\ntimezone = "America/Chicago"\n'
        f'slots = {json.dumps(list(slots))}\ncatch_up_window = "2h"\n'
        f"platforms = {json.dumps(platforms)}\n{pipeline}"
    )


def notifier(home: Path) -> str:
    """A [notify] command that appends each event to events.jsonl, a line each."""
    script = home.parent / "tell.py"
    script.write_text(
        "import sys\n"
        f"with open({str(home / 'events.jsonl')!r}, 'a') as out:\n"
        "    out.write(sys.stdin.read() + '\\n')\n"
    )
    return f'\n[notify]\ncommand = "{sys.executable} {script}"\n'


def events(home: Path, kind: str) -> list[dict]:
    path = home / "events.jsonl"
    if not path.exists():
        return []
    found = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [event for event in found if event["event"] == kind]


def page(home: Path, path: str) -> str:
    """`path` of the page, signed in as its owner (Starlette's test client, no server), at
    the test's AUTORETTO_NOW."""
    from starlette.testclient import TestClient

    from autoretto.web.app import create_app

    config = load_config(Paths(home), platforms=FIELDS)
    with TestClient(create_app(config, login_token="owner-token")) as client:
        assert client.get("/login?token=owner-token").status_code == 200
        answer = client.get(path)
        assert answer.status_code == 200, answer.text
        return answer.text


def report(home: Path, cli, now: str | None = None) -> str:
    code, _, err = cli("report", now=now)
    assert code == 0, err
    return (home / "report.html").read_text(encoding="utf-8")


# -- a platform that cannot post ------------------------------------------------------------------


@pytest.fixture
def unconnected(home: Path, cli, clip: Path) -> Path:
    """A channel posting to the folder and to YouTube, which was never connected; three
    episodes; the channel seen by a first run."""
    write_config(home, channel(["folder", "youtube"]), extra=notifier(home))
    assert cli("init")[0] == 0
    for number in range(3):
        code, _, err = cli("episode", "add", "mine", str(clip), "--title", f"song {number}")
        assert code == 0, err
    assert cli("run-due", now="2026-11-29T09:00:00Z")[0] == 0
    return home


def test_config_check_warns_of_a_platform_that_is_not_connected_and_stays_ok(unconnected, cli):
    code, out, err = cli("config", "check")
    assert code == 0, err
    assert f"warning: {NOT_CONNECTED}" in out
    found = cli.json("config", "check")
    assert found["ok"] is True
    assert [(t["platform"], t["kind"], t["fix"]) for t in found["trouble"]] == [
        ("youtube", "not_connected", "autoretto connect youtube")
    ]


def test_doctor_names_it_and_exits_non_zero(unconnected, cli):
    code, out, _ = cli("doctor")
    assert code == 1
    assert f"problem   {NOT_CONNECTED}" in out
    code, out, _ = cli("doctor", "--json")
    assert code == 1 and NOT_CONNECTED in json.loads(out)["problems"]


def test_status_report_page_and_notifier_name_it_with_its_fix(unconnected, cli):
    slot = "2026-11-29T19:05:00Z"  # 13:05 in Chicago
    code, out, _ = cli("run-due", now=slot)
    assert code == 1 and "YouTube is not connected" in out
    (trouble,) = cli.json("status", now=slot)["trouble"]
    assert trouble["kind"] == "not_connected" and trouble["fix"] == "autoretto connect youtube"
    code, out, _ = cli("status", now=slot)
    assert code == 0 and NOT_CONNECTED in " ".join(out.split())
    # The report and the page: no more "Nothing needs you".
    html = report(unconnected, cli)
    attention = html[: html.index('<nav class="cards">')]
    assert NOT_CONNECTED in attention and "Nothing needs you" not in attention
    home_page = page(unconnected, "/")
    assert NOT_CONNECTED in home_page and "Nothing needs you" not in home_page
    needs_you = page(unconnected, "/trouble")
    platforms = needs_you[needs_you.index('id="platforms"') :]
    assert "youtube cannot post: YouTube is not connected" in platforms
    assert "<code>autoretto connect youtube</code>" in platforms
    # The notifier hears it once, not on every run that fails the same way.
    cli("run-due", now="2026-11-30T19:05:00Z")
    told = events(unconnected, "platform_trouble")
    assert [(e["channel"], e["platform"], e["kind"], e["fix"]) for e in told] == [
        ("mine", "youtube", "not_connected", "autoretto connect youtube")
    ]


@pytest.fixture
def fake():
    server = webhook_server.start()
    yield server
    server.close()


def test_a_platform_that_fails_slot_after_slot_is_trouble_before_any_incident(
    home: Path, cli, clip: Path, fake
):
    """A daily slot whose webhook answers 500 every time: three failed slots, never three
    failures within two hours (no incident), and yet a person is told."""
    extra = f'\n[platforms.webhook]\nurl = "{fake.url}"\ntimeout = 10\n\n[retry]\nattempts = 1\n'
    write_config(home, channel(["webhook"]), extra=extra + notifier(home))
    assert cli("init")[0] == 0
    for number in range(3):
        assert cli("episode", "add", "mine", str(clip), "--title", f"song {number}")[0] == 0
    cli("run-due", now="2026-11-29T09:00:00Z")
    fake.script.extend(["status:500"] * 3)
    for day in ("2026-11-29", "2026-11-30"):
        cli("run-due", now=f"{day}T19:05:00Z")
    assert cli.json("status", now="2026-11-30T20:00:00Z")["trouble"] == []  # two: not yet
    cli("run-due", now="2026-12-01T19:05:00Z")
    assert cli.json("incidents") == []  # a day apart: no incident ever opens
    (trouble,) = cli.json("status", now="2026-12-01T20:00:00Z")["trouble"]
    assert (trouble["platform"], trouble["kind"], trouble["failed_slots"]) == (
        "webhook",
        "failing",
        3,
    )
    assert trouble["since"] == "2026-11-29T19:00:00Z"
    assert trouble["fix"] == "autoretto decisions --channel mine"
    code, out, _ = cli("doctor", now="2026-12-01T20:00:00Z")
    assert code == 1 and "mine: webhook failed its last 3 slots (since 2026-11-29T19:00:00Z)" in out
    assert len(events(home, "platform_trouble")) == 1


# -- the stock ----------------------------------------------------------------------------------

BEFORE_THE_SLOTS = "2026-12-07T02:00:00Z"  # Sun 6 Dec, 20:00 in Chicago


@pytest.fixture
def running_out(home: Path, cli) -> Path:
    """A channel whose folder source has two tracks, one already made into a ready episode: the
    two coming slots (Mon 7 and Tue 8 Dec, 19:00 Chicago time) are covered, the third is not.
    The tracks are not audio at all: counting them must not read them."""
    pipeline = '[channels.pipeline]\naudio = "folder"\nfolder = "tracks"\n'
    write_config(
        home, channel(["folder"], slots=("19:00",), pipeline=pipeline), extra=notifier(home)
    )
    assert cli("init")[0] == 0
    tracks = home / "tracks"
    tracks.mkdir()
    for name in ("neon-drive.mp3", "late-bus.ogg", "cover.jpg", ".hidden.mp3"):
        (tracks / name).write_bytes(b"not audio")
    db = open_database(home / "autoretto.db")
    add_episode(
        db,
        {
            "channel": "mine", "state": "ready", "title": "Neon drive", "tags": "[]",
            "texts": "{}", "videos": "{}", "gates": "[]", "ai_generated": 0, "off_schedule": 0,
            "source": json.dumps({"track": str((tracks / "neon-drive.mp3").resolve())}),
            "created_at": "2026-12-01T00:00:00Z", "updated_at": "2026-12-01T00:00:00Z",
        },
    )  # fmt: skip
    db.conn.close()
    return home


RUNS_OUT = "mine: 1 ready + 1 unused track; runs out after the slot of Tue 8 Dec 19:00"


def test_status_forecasts_when_the_stock_runs_out_in_the_channels_time(running_out, cli):
    found = cli.json("status", now=BEFORE_THE_SLOTS)
    (entry,) = found["channels"]
    stock = entry["stock"]
    assert (stock["ready"], stock["unused_tracks"], stock["slots_covered"]) == (1, 1, 2)
    assert stock["runs_out_after"] == {
        "slot": "2026-12-08T19:00",
        "slot_at": "2026-12-09T01:00:00Z",
        "shown": "Tue 8 Dec 19:00",
    }
    assert stock["low"] is True
    assert stock["fix"] == f"add tracks to {running_out / 'tracks'}"
    code, out, _ = cli("status", now=BEFORE_THE_SLOTS)
    shown = " ".join(out.split())
    assert code == 0 and f"stock low: {RUNS_OUT}" in shown


def test_the_forecast_reads_no_audio_and_loads_no_pipeline(running_out):
    """`status` over a folder source stays quick: the tracks (not even audio here) are counted
    from the folder's listing; no stage of the pipeline (its settings are the config's), nor
    numpy, nor ffmpeg is loaded."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "autoretto", "status"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "AUTORETTO_NOW": BEFORE_THE_SLOTS},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "stock low: mine: 1 ready + 1 unused track" in " ".join(done.stdout.split())
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()}
    assert "autoretto.health" in imported  # the import log is read
    heavy = {"numpy", "librosa", "soundfile", "imageio_ffmpeg", "autoretto.ffmpeg"}
    stages = {f"autoretto.pipeline.{name}" for name in ("audio", "make", "beats", "render")}
    assert not imported & (heavy | stages), imported & (heavy | stages)


def test_doctor_report_page_and_notifier_warn_of_a_low_stock(running_out, cli, monkeypatch):
    out = cli("doctor", now=BEFORE_THE_SLOTS)[1]
    assert f"warning   stock low: {RUNS_OUT}" in " ".join(out.split("\n"))
    html = report(running_out, cli, BEFORE_THE_SLOTS)
    attention = html[: html.index('<nav class="cards">')]
    assert f"Stock low: {RUNS_OUT}" in attention
    assert "runs out after the slot of Tue 8 Dec 19:00" in html[html.index('<nav class="cards">') :]
    monkeypatch.setenv("AUTORETTO_NOW", BEFORE_THE_SLOTS)
    needs_you = page(running_out, "/trouble")
    stock = needs_you[needs_you.index('id="platforms"') : needs_you.index('id="maybe-live"')]
    assert "the stock runs out after the slot of Tue 8 Dec 19:00 (America/Chicago)" in stock
    # Told once while it stays low; told again when it is low again after a restock.
    for _ in range(2):
        assert cli("run-due", "--no-make", now=BEFORE_THE_SLOTS)[0] == 0
    (told,) = events(running_out, "stock_low")
    assert told["channel"] == "mine" and told["runs_out_after"]["shown"] == "Tue 8 Dec 19:00"
    for name in ("a.mp3", "b.flac"):
        (running_out / "tracks" / name).write_bytes(b"not audio")
    cli("run-due", "--no-make", now=BEFORE_THE_SLOTS)
    assert cli.json("status", now=BEFORE_THE_SLOTS)["channels"][0]["stock"]["low"] is False
    (running_out / "tracks" / "a.mp3").unlink()
    (running_out / "tracks" / "b.flac").unlink()
    cli("run-due", "--no-make", now=BEFORE_THE_SLOTS)
    assert len(events(running_out, "stock_low")) == 2


def test_a_source_that_makes_its_own_tracks_never_runs_out(home: Path, cli):
    write_config(home, channel(["folder"], pipeline='[channels.pipeline]\naudio = "synth"\n'))
    assert cli("init")[0] == 0
    (entry,) = cli.json("status")["channels"]
    assert entry["stock"]["slots_covered"] is None and entry["stock"]["low"] is False
    assert "stock low" not in cli("doctor")[1]
