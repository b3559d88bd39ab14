"""`report` over 10 channels × 30 days: how long rendering the page takes.

Run by hand: python benchmarks/bench_report.py [--channels 10] [--days 30] [--repeat 5]

It builds a home whose channels each have three slots a day on YouTube and Bluesky, a year of
decided slots behind them, a published release on every slot of the last `days` days, and
their counters read every hour since they went out with the views moving at every reading (the
worst case for the series: nothing is skipped as unchanged). Then it times `report.render`
for the last and next `days` days, in-process, and prints the best and median of `--repeat`.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

NOW = datetime(2026, 11, 29, 12, 30, tzinfo=UTC)
PLATFORMS = ("youtube", "bluesky")


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def build_home(home: Path, channels: int, days: int) -> dict[str, int]:
    from autoretto.config import Paths, load_config
    from autoretto.engine.run import register_channels
    from autoretto.ledger.store import open_database
    from autoretto.platforms import FIELDS

    parts = [
        f'[[channels]]\nname = "channel-{n}"\ntimezone = "Europe/Berlin"\n'
        f'slots = ["09:10", "14:40", "20:05"]\ncatch_up_window = "2h"\n'
        f'platforms = ["youtube", "bluesky"]\n'
        for n in range(channels)
    ]
    home.mkdir(parents=True)
    (home / "autoretto.toml").write_text("\n".join(parts))
    config = load_config(Paths(home), platforms=FIELDS)
    db = open_database(config.paths.database)
    register_channels(config, db, NOW - timedelta(days=366))
    db.conn.close()

    connection = sqlite3.connect(home / "autoretto.db")
    connection.execute("PRAGMA synchronous = OFF")
    counts = {"decisions": 0, "posts": 0, "readings": 0}
    with connection:
        for channel in config.channels:
            history = channel.schedule.slots_between(NOW - timedelta(days=365), NOW)
            connection.executemany(
                "INSERT INTO decisions (channel, slot, slot_at, platform, outcome, reason,"
                " decided_at, run_id) VALUES (?, ?, ?, ?, 'posted', 'published', ?, 'bench')",
                [
                    (channel.name, s.key, s.at_text, platform, s.at_text)
                    for s in history
                    for platform in PLATFORMS
                ],
            )
            counts["decisions"] += len(history) * len(PLATFORMS)
            recent = [s for s in history if s.at >= NOW - timedelta(days=days)]
            for slot in recent:
                episode = connection.execute(
                    "INSERT INTO episodes (channel, state, title, off_schedule, created_at,"
                    " updated_at) VALUES (?, 'ready', ?, 0, ?, ?)",
                    (channel.name, f"Track at {slot.key}", slot.at_text, slot.at_text),
                ).lastrowid
                published = slot.at + timedelta(minutes=2)
                hours = int((NOW - published).total_seconds() // 3600)
                for platform in PLATFORMS:
                    post = connection.execute(
                        "INSERT INTO posts (episode_id, channel, platform, state, url,"
                        " platform_post_id, attempts, slot, created_at, updated_at,"
                        " published_at) VALUES (?, ?, ?, 'published', ?, ?, 1, ?, ?, ?, ?)",
                        (
                            episode, channel.name, platform,
                            f"https://example.test/{platform}/{episode}", f"id{episode}",
                            slot.key, iso(published), iso(published), iso(published),
                        ),
                    ).lastrowid  # fmt: skip
                    connection.executemany(
                        "INSERT INTO post_stats (post_id, at, views, likes, comments, reposts,"
                        " replies) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [
                            (
                                post,
                                iso(published + timedelta(hours=hour, minutes=1)),
                                None if platform == "bluesky" else 40 * hour + episode % 17,
                                hour // 3,
                                hour // 20 if platform == "youtube" else None,
                                None if platform == "youtube" else hour // 30,
                                None if platform == "youtube" else hour // 25,
                            )
                            for hour in range(1, hours + 1)
                        ],
                    )
                    counts["posts"] += 1
                    counts["readings"] += hours
    connection.close()
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=10)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()

    from autoretto.config import Paths, load_config
    from autoretto.ledger.store import open_database
    from autoretto.platforms import FIELDS
    from autoretto.report import render

    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        started = time.perf_counter()
        counts = build_home(home, options.channels, options.days)
        print(
            f"home: {options.channels} channels, {counts['decisions']:,} decisions, "
            f"{counts['posts']:,} published posts, {counts['readings']:,} counter readings "
            f"(built in {time.perf_counter() - started:.1f} s)"
        )
        config = load_config(Paths(home), platforms=FIELDS)
        db = open_database(config.paths.database)
        timings = []
        size = 0
        for _ in range(options.repeat):
            started = time.perf_counter()
            page = render(config, db, NOW, days=options.days)
            timings.append(time.perf_counter() - started)
            size = len(page.encode("utf-8"))
        cells = page.count("data-slot=")
        print(
            f"report --days {options.days}: best {min(timings):.3f} s, median "
            f"{statistics.median(timings):.3f} s over {options.repeat} renders; "
            f"{cells:,} slot cells, {page.count('<polyline'):,} sparklines, {size / 1024:.0f} KiB"
        )


if __name__ == "__main__":
    main()
