"""Post stats: the public counters of every published post, kept as a time series.

`collect` asks each platform that declares counters (`Platform.counters`, read through its
public `read_counters`) for those of its published posts and appends
them to `post_stats` (one row per post and reading, only when a counter moved: an old post
whose numbers stand still costs no row, and the series still answers "what was it then?"):

- YouTube: `videos.list?part=statistics`, 50 videos a call, each call counted in the same
  quota ledger as the uploads before it is made; the last `UNITS_KEPT_FROM_STATS` units of the
  Pacific day are left for posting;
- Bluesky: `app.bsky.feed.getPosts`, 25 posts a call: likes, reposts (quotes included), replies;
- Threads: `/{media-id}/insights`: views, likes, replies, reposts (needs the
  `threads_manage_insights` permission).

The folder and webhook platforms have no counters. A platform that refuses, rate limits past
the backoff, or is not connected is skipped for this run with a note; what it answered before
that is kept. Nothing here is fatal: the next run tries again.

`summary` reads the series back: per post its latest counters and their change over 24 hours
and 7 days, per channel the totals. It runs from cron at the installation's own minute of the
hour (`stats_minute`), drawn once from the installation's seed and stored, never :00.
"""

from __future__ import annotations

import logging
import time
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from .clock import from_iso, iso
from .ledger import meta
from .ledger import views as ledger
from .paths import CRON_ENVIRONMENT

if TYPE_CHECKING:
    from .config import Config
    from .ledger.store import Store as Database

log = logging.getLogger("autoretto.stats")

COUNTERS = ("views", "likes", "comments", "reposts", "replies")
#: the changes `summary` reports
SPANS = {"24h": timedelta(hours=24), "7d": timedelta(days=7)}


@dataclass
class CollectReport:
    """What one `stats collect` did."""

    at: datetime
    read: dict[str, int] = field(default_factory=dict)  # platform -> posts read
    stored: int = 0  # rows appended (posts whose counters moved, or first readings)
    gone: dict[str, int] = field(default_factory=dict)  # platform -> posts it no longer shows
    skipped: dict[str, str] = field(default_factory=dict)  # platform -> why not (all) read
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "at": iso(self.at),
            "read": self.read,
            "stored": self.stored,
            "gone": self.gone,
            "skipped": self.skipped,
            "seconds": round(self.seconds, 3),
        }


# -- the installation's minute ----------------------------------------------------------------


def stats_minute(db: Database) -> int:
    """The minute of the hour at which cron runs `stats collect` on this installation: drawn
    once from the installation's seed, stored in `meta`, 1 to 59 (never :00)."""
    from .engine.run import pace_seed
    from .pace import read_minute

    found = meta.get(db, "stats_minute")
    if found is not None:
        return int(found)
    minute = read_minute(pace_seed(db, create=True))
    meta.put_if_absent(db, "stats_minute", minute)
    return int(meta.get(db, "stats_minute"))


def crontab_line(minute: int) -> str:
    """The crontab line that collects the counters at `minute`, in crontab.example's shape."""
    return (
        f"{minute} * * * * {CRON_ENVIRONMENT} "
        'autoretto stats collect >> "$AUTORETTO_HOME/logs/cron.log" 2>&1'
    )


# -- collect ------------------------------------------------------------------------------


def collect(config: Config, db: Database, now: datetime) -> CollectReport:
    """Read the counters of every published post on the platforms that have them and append
    the ones that moved to `post_stats` at `now`. Never raises for a platform's trouble: the
    platform is skipped for this run and the report says why."""
    from .engine.run import Run
    from .platforms import REGISTRY, class_or_base
    from .platforms.base import PlatformError

    started = time.monotonic()
    report = CollectReport(now)
    published = ledger.published_with_platform_ids(db)
    by_platform: dict[str, dict[str, int]] = {}
    for post in published:
        by_platform.setdefault(post["platform"], {})[str(post["platform_post_id"])] = post["id"]
    looking = Run(config, db, "stats", record=False, now=now)
    latest = _latest(db, now)
    # in the registry's order; a platform unknown to it has no counters Autoretto reads
    order = [*(name for name in REGISTRY if name in by_platform), *sorted(by_platform)]
    for name in dict.fromkeys(order):
        wanted = by_platform[name]
        counters = class_or_base(name).counters
        if not counters:
            if counters is False:
                report.skipped[name] = "its counters are not read by Autoretto"
            continue
        platform = looking.platform(name)
        if not platform.is_connected():
            report.skipped[name] = f"{platform.title} is not connected"
            continue
        readings: dict[int, dict[str, int | None]] = {}
        try:
            for platform_id, read in platform.read_counters(list(wanted)):
                if platform_id in wanted:
                    readings[wanted[platform_id]] = read
        except PlatformError as error:
            report.skipped[name] = error.reason
            log.warning("stats: %s skipped for this run: %s", name, error.reason)
        report.read[name] = len(readings)
        if name not in report.skipped and len(readings) < len(wanted):
            report.gone[name] = len(wanted) - len(readings)
        report.stored += _append(db, readings, latest, now)
    meta.put(db, "stats_collected_at", int(now.timestamp()))
    report.seconds = time.monotonic() - started
    return report


def _append(
    db: Database,
    readings: dict[int, dict[str, int | None]],
    latest: dict[int, dict[str, Any]],
    now: datetime,
) -> int:
    """Append the readings that differ from the post's latest row; returns how many."""
    moved = []
    for post_id, counters in readings.items():
        values = tuple(counters.get(name) for name in COUNTERS)
        before = latest.get(post_id)
        if before is not None and tuple(before[name] for name in COUNTERS) == values:
            continue
        moved.append((post_id, iso(now), *values))
    if moved:
        ledger.record_readings(db, moved)
    return len(moved)


def _latest(
    db: Database, moment: datetime, post_ids: Iterable[int] | None = None
) -> dict[int, dict[str, Any]]:
    """Each post's last reading at or before `moment` (every post, or only `post_ids`)."""
    return ledger.latest_readings(db, iso(moment), None if post_ids is None else list(post_ids))


def last_collected(db: Database) -> datetime | None:
    found = meta.get(db, "stats_collected_at")
    if found is None:
        return None
    return datetime.fromtimestamp(int(found), UTC)


# -- summary ------------------------------------------------------------------------------


def summary(db: Database, channel: str | None = None, *, now: datetime) -> dict[str, Any]:
    """Per post (newest first) its latest counters and their change over 24 h and 7 days; per
    channel the totals of the same. A counter the platform does not have is None (in a total:
    when no post has it); a change is None where no reading is old enough to compare with (a
    post published inside the span counts from zero)."""
    posts = ledger.posts_with_readings(db, iso(now), channel)
    ids = [p["id"] for p in posts]
    latest = _latest(db, now, ids)
    earlier = {span: _latest(db, now - length, ids) for span, length in SPANS.items()}
    listed = []
    for post in posts:
        now_row = latest[post["id"]]
        entry = {
            "post_id": post["id"],
            "episode_id": post["episode_id"],
            "channel": post["channel"],
            "platform": post["platform"],
            "title": post["title"],
            "url": post["url"],
            "published_at": post["published_at"],
            "read_at": now_row["at"],
            **{name: now_row[name] for name in COUNTERS},
        }
        for span, length in SPANS.items():
            entry[f"change_{span}"] = _change(
                now_row, earlier[span].get(post["id"]), post["published_at"], now - length
            )
        listed.append(entry)
    return {
        "now": iso(now),
        "collected_at": iso(collected) if (collected := last_collected(db)) else None,
        "posts": listed,
        "channels": _totals(listed),
    }


def _change(
    current: dict[str, Any], before: dict[str, Any] | None, published_at: str | None, cut: datetime
) -> dict[str, int | None] | None:
    if before is None:
        if not published_at or from_iso(published_at) < cut:
            return None  # published before the span, first read inside it: unknown
        before = {}
    return {
        name: None if current[name] is None else current[name] - (before.get(name) or 0)
        for name in COUNTERS
    }


def _totals(posts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    channels: dict[str, dict[str, Any]] = {}
    for post in posts:
        total = channels.setdefault(
            post["channel"],
            {
                "channel": post["channel"],
                "posts": 0,
                **dict.fromkeys(COUNTERS),
                **{f"change_{span}": dict.fromkeys(COUNTERS) for span in SPANS},
            },
        )
        total["posts"] += 1
        for name in COUNTERS:
            total[name] = _plus(total[name], post[name])
            for span in SPANS:
                change = post[f"change_{span}"]
                if change is not None:
                    changes = total[f"change_{span}"]
                    changes[name] = _plus(changes[name], change[name])
    return sorted(channels.values(), key=lambda entry: entry["channel"])


def _plus(total: int | None, value: int | None) -> int | None:
    """A sum that stays None while no post has the counter (no views on Bluesky is not 0)."""
    return total if value is None else (total or 0) + value


def views_series(
    db: Database, starts: dict[int, datetime], *, until: datetime, points: int = 24
) -> dict[int, list[int]]:
    """Each post's views at `points` evenly spaced instants from its start (`starts`: post id ->
    instant, e.g. when it was published) to `until`: the last reading at or before each, 0
    before the first. For the report's sparklines; posts without a views reading are left out.
    """
    if not starts or points < 2:
        return {}
    instants: dict[datetime, list[str]] = {}
    for since in starts.values():
        if since not in instants:
            step = (until - since) / (points - 1)
            instants[since] = [iso(since + step * number) for number in range(points)]
    last = max(sample for samples in instants.values() for sample in samples)
    # Every reading of the posts up to the last instant, once: each instant takes the last
    # reading at or before it from these (its views, None when that reading has none).
    readings = ledger.views_readings(db, list(starts), last)
    series: dict[int, list[int | None]] = {}
    for post_id in sorted(starts):
        read_at, views = readings.get(post_id, ([], []))
        series[post_id] = [
            views[found - 1] if (found := bisect_right(read_at, instant)) else None
            for instant in sorted(instants[starts[post_id]])
        ]
    return {
        post_id: [value or 0 for value in values]
        for post_id, values in series.items()
        if any(value is not None for value in values)
    }
