"""The never-twice figure: crash points × rounds and racing processes, counted at the platform.

Run from the repository root: python benchmarks/reliability.py [--rounds 3] [--processes 16]

Each round, for every crash point, a fresh home posts one slot through the webhook platform to
a fake endpoint that records every request; a `run-due` is SIGKILLed at that point (or, for
`in_flight`, killed while its request is held open by the endpoint), and a later run inside the
slot's window finishes the job. Then N `run-due` and `post-now` processes race over three
channels. It prints what the endpoint saw: publish requests, duplicates (must be 0), and slots
lost inside their window (must be 0).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes import webhook_server

POINTS = ["after_claim", "before_send", "in_flight", "after_send", "after_publish_recorded",
          "before_stamp"]  # fmt: skip
CHANNELS = ["lofi", "jazz", "rain"]


def autoretto(home: Path, *args: str, now: str, fault: str | None = None) -> subprocess.Popen:
    env = dict(os.environ, AUTORETTO_HOME=str(home), AUTORETTO_NOW=now)
    env.pop("AUTORETTO_FAULT", None)
    if fault:
        env["AUTORETTO_FAULT"] = fault
    return subprocess.Popen(
        [sys.executable, "-m", "autoretto", *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def run(home: Path, *args: str, now: str = "2026-11-29T09:00:00Z") -> str:
    process = autoretto(home, *args, now=now)
    out, err = process.communicate(timeout=300)
    if process.returncode not in (0, 1):
        raise SystemExit(f"autoretto {' '.join(args)} failed: {err}")
    return out


def make_home(root: Path, name: str, fake_url: str, clip: Path, channels: list[str]) -> Path:
    home = root / name
    home.mkdir()
    blocks = [
        f'[[channels]]\nname = "{c}"\ntimezone = "UTC"\nslots = ["10:00", "11:00", "12:00"]\n'
        f'catch_up_window = "2h"\nplatforms = ["webhook", "folder"]\n'
        for c in channels
    ]
    (home / "autoretto.toml").write_text(
        "\n".join(blocks)
        + f'\n[platforms.webhook]\nurl = "{fake_url}"\ntimeout = 10\n'
        + '\n[platforms.folder]\npath = "outbox"\n\n[retry]\nfirst_wait = "0s"\n'
    )
    run(home, "init")
    for channel in channels:
        for number in range(3):
            run(home, "episode", "add", channel, str(clip), "--title", f"{channel} {number}")
    run(home, "run-due")  # first sight of the schedules at 09:00
    return home


def decisions(home: Path) -> list[dict]:
    return json.loads(run(home, "decisions", "--json"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--processes", type=int, default=16)
    options = parser.parse_args()

    from autoretto.ffmpeg import run_ffmpeg

    started = time.perf_counter()
    fake = webhook_server.start()
    totals = Counter()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        clip = root / "clip.mp4"
        run_ffmpeg(
            ["-y", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30:duration=1",
             "-f", "lavfi", "-i", "sine=duration=1", "-c:v", "libx264", "-preset", "ultrafast",
             "-pix_fmt", "yuv420p", "-c:a", "aac", "-t", "1", str(clip)]
        )  # fmt: skip
        for number in range(options.rounds):
            for point in POINTS:
                fake.stored.clear()
                fake.requests.clear()
                fake.held.clear()
                fake.holding.clear()
                home = make_home(root, f"r{number}-{point}", fake.url, clip, ["lofi"])
                if point == "in_flight":
                    fake.script.append("hold")
                    victim = autoretto(home, "run-due", now="2026-11-29T10:05:00Z")
                    fake.holding.wait(timeout=60)
                    os.kill(victim.pid, signal.SIGKILL)
                    victim.wait()
                    fake.release()
                else:
                    victim = autoretto(
                        home, "run-due", now="2026-11-29T10:05:00Z", fault=f"{point}:kill"
                    )
                    victim.communicate(timeout=120)
                totals["runs killed"] += victim.returncode == -signal.SIGKILL
                run(home, "run-due", now="2026-11-29T10:25:00Z")
                publishes = Counter(p["post_id"] for p in fake.stored.values())
                totals["crash trials"] += 1
                totals["publish requests"] += sum(1 for r in fake.requests if r.method == "POST")
                totals["duplicates"] += sum(n - 1 for n in publishes.values())
                posted = {
                    d["platform"]
                    for d in decisions(home)
                    if d["slot"] == "2026-11-29T10:00" and d["outcome"] == "posted"
                }
                totals["slots lost in window"] += len({"webhook", "folder"} - posted)

            fake.stored.clear()
            fake.requests.clear()
            home = make_home(root, f"r{number}-race", fake.url, clip, CHANNELS)
            racers = [
                autoretto(home, "run-due", now="2026-11-29T11:45:00Z")
                for _ in range(options.processes - len(CHANNELS))
            ] + [autoretto(home, "post-now", c, now="2026-11-29T11:45:00Z") for c in CHANNELS]
            for racer in racers:
                racer.communicate(timeout=300)
            totals["racing processes"] += len(racers)
            publishes = Counter(p["post_id"] for p in fake.stored.values())
            totals["publish requests"] += sum(1 for r in fake.requests if r.method == "POST")
            totals["duplicates"] += sum(n - 1 for n in publishes.values())
            sidecars = [json.loads(p.read_text()) for p in (home / "outbox").rglob("*.json")]
            folder_posts = Counter(s["post_id"] for s in sidecars)
            totals["duplicates"] += sum(n - 1 for n in folder_posts.values())
            decided = {
                (d["channel"], d["platform"])
                for d in decisions(home)
                if d["slot"].endswith("11:00")
            }
            totals["slots lost in window"] += 2 * len(CHANNELS) - len(decided)
    fake.close()

    print(f"rounds: {options.rounds}, crash points: {len(POINTS)} ({', '.join(POINTS)})")
    for key in ("crash trials", "runs killed", "racing processes", "publish requests",
                "duplicates", "slots lost in window"):  # fmt: skip
        print(f"{key:22} {totals[key]}")
    print(f"took {time.perf_counter() - started:.0f} s")
    if totals["duplicates"] or totals["slots lost in window"]:
        raise SystemExit("FAILED: a duplicate or a lost slot")


if __name__ == "__main__":
    main()
