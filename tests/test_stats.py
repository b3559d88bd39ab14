"""`autoretto stats collect` against fake YouTube, Bluesky and Threads, and `autoretto stats`.

What a creator checks: the counters land per post; YouTube is read 50 videos a call and every
call is in the quota ledger; a platform that refuses or rate limits is skipped with a note and
the run still exits 0; the changes over 24 hours and 7 days add up.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from autoretto.accounts import load_account, save_account
from autoretto.clock import iso, parse_instant
from autoretto.config import Paths, load_config
from autoretto.ledger.store import open_database
from autoretto.platforms import FIELDS
from autoretto.platforms.youtube import YouTubePlatform, project_of, quota_used
from autoretto.stats import crontab_line, stats_minute, summary
from tests.fakes import bluesky_server
from tests.fakes.bluesky_server import DID, HANDLE
from tests.fakes.threads_server import fake_threads_insights
from tests.fakes.youtube_server import (
    CLIENT_ID,
    FakeYouTube,
    Tls,
    connect_account,
    make_tls,
    tls_environment,
)

NOW = "2026-11-29T18:36:00Z"
#: The YouTube quota day of NOW: 10:36 in Los Angeles. The ledger is read for this day, never
#: for "today", so the tests give the same answer on any date.
QUOTA_DAY = "2026-11-29"


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    return make_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def youtube(tls: Tls, monkeypatch: pytest.MonkeyPatch):
    tls_environment(monkeypatch, tls)
    monkeypatch.setattr(YouTubePlatform, "sleep", staticmethod(lambda seconds: None))
    with FakeYouTube(tls) as fake:
        yield fake


@pytest.fixture
def bluesky():
    fake = bluesky_server.start()
    yield fake
    fake.close()


def cli() -> typer.Typer:
    from autoretto.commands.insight import register

    app = typer.Typer()
    app.callback()(lambda: None)
    register(app)
    return app


def run(*args: str, now: str = NOW) -> tuple[int, Any, str]:
    """`autoretto ARGS --json` in-process: (exit code, parsed output, stderr)."""
    result = CliRunner().invoke(cli(), [*args, "--json"], env={"AUTORETTO_NOW": now})
    parsed = json.loads(result.stdout) if result.exit_code == 0 else None
    return result.exit_code, parsed, result.stderr


class Home:
    """A home whose channel `lofi` has published posts on the platforms a test connects."""

    def __init__(self, home: Path, *, platforms: str = "") -> None:
        home.mkdir(parents=True, exist_ok=True)
        (home / "autoretto.toml").write_text(
            '[[channels]]\nname = "lofi"\ntimezone = "UTC"\nslots = ["10:00"]\n'
            'platforms = ["youtube", "threads", "bluesky", "folder"]\n\n'
            '[[channels]]\nname = "jazz"\ntimezone = "UTC"\nslots = ["11:00"]\n\n'
            '[retry]\nattempts = 3\nfirst_wait = "0s"\n\n'
            '[platforms.folder]\npath = "outbox"\n' + platforms,
            encoding="utf-8",
        )
        self.home = home
        self.config = load_config(Paths(home), platforms=FIELDS)
        self.db = open_database(self.config.paths.database)

    def publish(
        self, platform: str, platform_id: str, *, channel: str = "lofi", at: str = NOW
    ) -> int:
        episode = (
            self.db["episodes"]
            .insert(
                {"channel": channel, "state": "ready", "title": f"Track {platform_id}",
                 "off_schedule": 0, "created_at": at, "updated_at": at}
            )
            .last_pk
        )  # fmt: skip
        return (
            self.db["posts"]
            .insert(
                {"episode_id": episode, "channel": channel, "platform": platform,
                 "state": "published", "platform_post_id": platform_id, "attempts": 1,
                 "url": f"https://example.test/{platform}/{platform_id}",
                 "created_at": at, "updated_at": at, "published_at": at}
            )
            .last_pk
        )  # fmt: skip

    def stats(self) -> dict[int, dict[str, Any]]:
        """post id -> its latest stored reading."""
        found = {}
        for entry in self.db.execute(
            "SELECT post_id, at, views, likes, comments, reposts, replies FROM post_stats"
            " ORDER BY at"
        ).fetchall():
            found[entry[0]] = dict(
                zip(
                    ("at", "views", "likes", "comments", "reposts", "replies"),
                    entry[1:],
                    strict=True,
                )
            )
        return found

    def rows(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM post_stats").fetchone()[0]


def youtube_home(home: Path, youtube: FakeYouTube, **settings: Any) -> Home:
    table = {"api_base": youtube.url, "token_uri": youtube.token_uri, **settings}
    lines = "".join(f"{key} = {json.dumps(value)}\n" for key, value in table.items())
    bench = Home(home, platforms="\n[platforms.youtube]\n" + lines)
    connect_account(bench.db, home, youtube)
    return bench


def test_youtube_120_posts_are_read_in_3_calls_counted_in_the_quota_ledger(
    home: Path, youtube: FakeYouTube
) -> None:
    bench = youtube_home(home, youtube)
    posts = {}
    for number in range(120):
        video = youtube.add_video(tags=[], title=f"Track {number}")
        youtube.set_statistics(video, views=1000 + number, likes=number, comments=number % 7)
        posts[bench.publish("youtube", video)] = number
    bench.publish("folder", "outbox/lofi/1.json")  # the folder has no counters: not asked

    code, report, err = run("stats", "collect")

    assert code == 0, err
    assert youtube.count("videos") == 3
    assert quota_used(bench.db, project_of(CLIENT_ID), "units", QUOTA_DAY) == 3
    assert report["read"] == {"youtube": 120}
    assert report["stored"] == 120 and report["skipped"] == {}
    stored = bench.stats()
    for post_id, number in posts.items():
        assert stored[post_id]["views"] == 1000 + number
        assert stored[post_id]["likes"] == number
        assert stored[post_id]["comments"] == number % 7
        assert stored[post_id]["reposts"] is None and stored[post_id]["at"] == NOW


def test_counters_that_stand_still_cost_no_row_and_moved_ones_do(
    home: Path, youtube: FakeYouTube
) -> None:
    bench = youtube_home(home, youtube)
    still, moving = youtube.add_video(tags=[]), youtube.add_video(tags=[])
    youtube.set_statistics(still, views=5, likes=1, comments=0)
    youtube.set_statistics(moving, views=5, likes=1, comments=0)
    bench.publish("youtube", still)
    moving_post = bench.publish("youtube", moving)
    assert run("stats", "collect")[1]["stored"] == 2
    youtube.set_statistics(moving, views=9, likes=1, comments=0)
    later = "2026-11-29T19:36:00Z"
    assert run("stats", "collect", now=later)[1]["stored"] == 1
    assert bench.rows() == 3
    assert bench.stats()[moving_post] == {
        "at": later, "views": 9, "likes": 1, "comments": 0, "reposts": None, "replies": None
    }  # fmt: skip


def test_youtube_leaves_the_last_units_of_the_day_for_posting(
    home: Path, youtube: FakeYouTube
) -> None:
    # 502 units a day, 500 kept for posting: two calls' worth for stats.
    bench = youtube_home(home, youtube, daily_units=502)
    for _ in range(120):
        bench.publish("youtube", youtube.add_video(tags=[]))

    code, report, _ = run("stats", "collect")

    assert code == 0
    assert youtube.count("videos") == 2
    assert report["read"] == {"youtube": 100}
    assert "kept for posting" in report["skipped"]["youtube"]
    assert quota_used(bench.db, project_of(CLIENT_ID), "units", QUOTA_DAY) == 2


def test_youtube_busy_is_retried_and_each_try_counted(home: Path, youtube: FakeYouTube) -> None:
    bench = youtube_home(home, youtube)
    for _ in range(60):
        bench.publish("youtube", youtube.add_video(tags=[]))
    youtube.fail_next("*", 503)

    code, report, _ = run("stats", "collect")

    assert code == 0 and report["read"] == {"youtube": 60}
    assert youtube.count("videos") == 3  # the 503, its retry, the second batch
    assert quota_used(bench.db, project_of(CLIENT_ID), "units", QUOTA_DAY) == 3


def test_youtube_out_of_quota_is_skipped_with_a_note_never_fatal(
    home: Path, youtube: FakeYouTube
) -> None:
    bench = youtube_home(home, youtube)
    bench.publish("youtube", youtube.add_video(tags=[]))
    youtube.script["videos"].append("quota")

    code, report, _ = run("stats", "collect")

    assert code == 0
    assert "quota is used" in report["skipped"]["youtube"]
    assert bench.rows() == 0
    # The ledger now knows the day is spent: the next run asks YouTube nothing.
    calls = youtube.count("videos")
    run("stats", "collect")
    assert youtube.count("videos") == calls
    assert load_account(bench.db, "youtube").state == "connected"


def bluesky_home(home: Path, fake: Any) -> Home:
    bench = Home(home, platforms="\n[platforms.bluesky]\n" + fake.settings())
    save_account(
        bench.db, home, platform="bluesky", account_id=DID, name="@" + HANDLE,
        tokens=fake.tokens(), meta={"handle": HANDLE, "pds": fake.pds_url},
    )  # fmt: skip
    return bench


def test_bluesky_likes_reposts_and_replies_25_posts_a_call(home: Path, bluesky: Any) -> None:
    bench = bluesky_home(home, bluesky)
    posts = {}
    for number in range(30):
        rkey = f"3lk{number:04d}"
        bluesky.counters[rkey] = {"likes": number, "reposts": 2, "quotes": 1, "replies": 3}
        posts[bench.publish("bluesky", rkey)] = number
    gone = bench.publish("bluesky", "3lkdeleted")  # deleted on Bluesky since

    code, report, err = run("stats", "collect")

    assert code == 0, err
    assert bluesky.count("app.bsky.feed.getPosts") == 2
    assert report["read"] == {"bluesky": 30} and report["gone"] == {"bluesky": 1}
    stored = bench.stats()
    for post_id, number in posts.items():
        assert stored[post_id]["likes"] == number
        assert stored[post_id]["reposts"] == 3  # reposts and quotes
        assert stored[post_id]["replies"] == 3
        assert stored[post_id]["views"] is None
    assert gone not in stored


def test_bluesky_rate_limited_past_the_backoff_is_skipped_youtube_still_read(
    home: Path, bluesky: Any, youtube: FakeYouTube
) -> None:
    table = f'api_base = "{youtube.url}"\ntoken_uri = "{youtube.token_uri}"\n'
    bench = Home(
        home,
        platforms=f"\n[platforms.youtube]\n{table}\n[platforms.bluesky]\n{bluesky.settings()}",
    )
    connect_account(bench.db, home, youtube)
    save_account(
        bench.db, home, platform="bluesky", account_id=DID, name="@" + HANDLE,
        tokens=bluesky.tokens(), meta={"handle": HANDLE, "pds": bluesky.pds_url},
    )  # fmt: skip
    video = youtube.add_video(tags=[])
    youtube.set_statistics(video, views=42, likes=4, comments=1)
    watched = bench.publish("youtube", video)
    bench.publish("bluesky", "3lkaaaa")
    # A short wait is waited out; an hour-long Retry-After is left to the next run.
    bluesky.get_posts_script.extend(["status:429:1", "status:429:3600"])

    code, report, _ = run("stats", "collect")

    assert code == 0
    assert bluesky.count("app.bsky.feed.getPosts") == 2
    assert "Bluesky is rate limiting" in report["skipped"]["bluesky"]
    assert report["read"] == {"youtube": 1, "bluesky": 0}
    assert bench.stats()[watched]["views"] == 42
    assert load_account(bench.db, "bluesky").state == "connected"


def threads_home(home: Path, fake: Any) -> Home:
    bench = Home(
        home,
        platforms=f'\n[platforms.threads]\napi_base = "{fake.url}"\n'
        f'token_uri = "{fake.url}/oauth/access_token"\n',
    )
    token = fake.issue_token()
    expires_at = iso(parse_instant(NOW) + timedelta(days=60))
    save_account(
        bench.db, home, platform="threads", account_id=fake.user_id, name=fake.username,
        tokens={"access_token": token, "refresh_token": token, "expires_at": expires_at},
        meta={"username": fake.username, "token_expires_at": expires_at},
    )  # fmt: skip
    return bench


@pytest.fixture
def threads(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("AUTORETTO_VAULT", "file")
    with fake_threads_insights() as fake:
        yield fake


def test_threads_views_likes_replies_reposts(home: Path, threads: Any) -> None:
    bench = threads_home(home, threads)
    threads.insights["18000000000000001"] = {"views": 900, "likes": 30, "replies": 4, "reposts": 2}
    post = bench.publish("threads", "18000000000000001")

    code, report, err = run("stats", "collect")

    assert code == 0, err
    assert report["read"] == {"threads": 1}
    assert bench.stats()[post] == {
        "at": NOW, "views": 900, "likes": 30, "comments": None, "reposts": 2, "replies": 4
    }  # fmt: skip


def test_threads_without_the_insights_permission_says_so_and_keeps_the_account(
    home: Path, threads: Any
) -> None:
    bench = threads_home(home, threads)
    bench.publish("threads", "18000000000000001")
    threads.insights_denied = True

    code, report, _ = run("stats", "collect")

    assert code == 0
    assert "threads_manage_insights" in report["skipped"]["threads"]
    # Posting does not need that permission: the account stays usable for posts.
    assert load_account(bench.db, "threads").state == "connected"


def test_a_platform_that_is_not_connected_is_skipped_with_a_note(home: Path) -> None:
    bench = Home(home)
    bench.publish("bluesky", "3lkaaaa")
    code, report, _ = run("stats", "collect")
    assert code == 0
    assert report["skipped"] == {"bluesky": "Bluesky is not connected"}


# -- summary: latest counters and their change ------------------------------------------------


def test_changes_over_24_hours_and_7_days_per_post_and_per_channel(home: Path) -> None:
    bench = Home(home)
    old = bench.publish("youtube", "vidold", at="2026-11-10T10:00:00Z")
    new = bench.publish("youtube", "vidnew", at="2026-11-28T10:00:00Z")
    late = bench.publish("youtube", "vidlate", at="2026-11-01T10:00:00Z")  # read only lately
    jazz = bench.publish("bluesky", "3lkjazz", channel="jazz", at="2026-11-20T10:00:00Z")
    readings = [
        (old, "2026-11-20T18:36:00Z", 100, 10),
        (old, "2026-11-22T18:36:00Z", 150, 12),  # 7 days before NOW
        (old, "2026-11-28T17:36:00Z", 400, 20),  # just over 24 h before NOW
        (old, "2026-11-29T18:36:00Z", 460, 21),
        (new, "2026-11-28T11:36:00Z", 50, 2),
        (new, "2026-11-29T18:36:00Z", 80, 5),
        (late, "2026-11-29T18:36:00Z", 7, 1),
        (old, "2026-11-30T18:36:00Z", 999, 99),  # after NOW: not seen
    ]
    for post_id, at, views, likes in readings:
        bench.db["post_stats"].insert(
            {"post_id": post_id, "at": at, "views": views, "likes": likes, "comments": 0}
        )
    bench.db["post_stats"].insert(
        {"post_id": jazz, "at": "2026-11-29T18:36:00Z", "likes": 6, "reposts": 1, "replies": 2}
    )

    code, found, _ = run("stats")

    assert code == 0
    posts = {p["post_id"]: p for p in found["posts"]}
    assert [p["post_id"] for p in found["posts"]] == [new, jazz, old, late]  # newest first
    assert posts[old]["views"] == 460 and posts[old]["read_at"] == NOW
    assert posts[old]["change_24h"]["views"] == 60
    assert posts[old]["change_7d"]["views"] == 310
    assert posts[old]["change_7d"]["likes"] == 9
    assert posts[new]["change_24h"]["views"] == 30
    assert posts[new]["change_7d"]["views"] == 80  # published inside the span: from zero
    assert posts[late]["change_24h"] is None  # nothing read that long ago
    assert posts[jazz]["views"] is None and posts[jazz]["change_7d"] is None
    channels = {c["channel"]: c for c in found["channels"]}
    assert channels["lofi"]["posts"] == 3
    assert channels["lofi"]["views"] == 460 + 80 + 7
    assert channels["lofi"]["change_7d"]["views"] == 310 + 80
    assert channels["jazz"]["replies"] == 2 and channels["jazz"]["views"] is None

    code, only_jazz, _ = run("stats", "--channel", "jazz")
    assert code == 0 and [p["post_id"] for p in only_jazz["posts"]] == [jazz]
    # A day later the 24-hour change of the old post is measured from NOW's reading.
    later = summary(bench.db, "lofi", now=parse_instant("2026-11-30T18:36:00Z"))
    assert {p["post_id"]: p for p in later["posts"]}[old]["change_24h"]["views"] == 999 - 460


def test_stats_names_a_channel_that_does_not_exist(home: Path) -> None:
    Home(home)
    result = CliRunner().invoke(cli(), ["stats", "--channel", "nope"], env={"AUTORETTO_NOW": NOW})
    assert result.exit_code == 2
    assert 'no channel "nope"' in result.stderr


def test_the_stats_minute_is_the_installations_own_and_kept(home: Path) -> None:
    bench = Home(home)
    minute = stats_minute(bench.db)
    assert 1 <= minute <= 59
    assert stats_minute(bench.db) == minute
    code, shown, _ = run("stats", "minute")
    assert code == 0 and shown == {"minute": minute, "crontab": crontab_line(minute)}
    assert shown["crontab"].startswith(f"{minute} * * * * export PATH=")
    assert 'autoretto stats collect >> "$AUTORETTO_HOME/logs/cron.log" 2>&1' in shown["crontab"]
    # Another installation draws its own seed, so (almost always) its own minute.
    minutes = set()
    for number in range(8):
        other = open_database(home / f"other-{number}.db")
        minutes.add(stats_minute(other))
    assert len(minutes) > 1
