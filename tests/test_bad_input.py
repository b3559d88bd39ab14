"""Bad input: one clear line naming the file, channel and field; exit 2; nothing written."""

from __future__ import annotations

import json
import logging
import subprocess
import warnings

import pytest

from tests.support import channel_toml, run_command, run_process, snapshot, write_config

GOOD = channel_toml()


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (GOOD.replace('"UTC"', '"Europe/Berln"'),
         'channel "lofi": timezone: unknown time zone "Europe/Berln"'),
        (GOOD.replace('"10:00"', '"25:00"'), 'channel "lofi": slots: "25:00" is not a time of day'),
        (GOOD + GOOD, 'channel "lofi": name: this name is used by two channels'),
        (GOOD.replace('["folder"]', '["myspace"]'),
         'channel "lofi": platforms: unknown platform "myspace"'),
        (GOOD.replace('["folder"]', '["tiktok"]'),
         'channel "lofi": platforms: "tiktok" is never posted on a slot'),
        (GOOD.replace('"2h"', '"two hours"'),
         'channel "lofi": catch_up_window: "two hours" is not a duration'),
        (GOOD + "colour = 'blue'\n", 'channel "lofi": colour: unknown key'),
        (GOOD.replace('name = "lofi"', 'name = "Lo Fi"'), 'channel "Lo Fi": name:'),
        (GOOD.replace("approval = false", 'approval = "yes"'),
         'channel "lofi": approval: must be true or false'),
        (GOOD + "[channels.pipeline]\naudio = 'gramophone'\n", 'channel "lofi": pipeline.audio'),
        ("stale_after = 'soon'\n" + GOOD, "stale_after:"),
        (GOOD + "[platforms.folder]\npath = 3\n", None),  # TOML itself: a table defined twice
        ("[[channels]\n", "not valid TOML"),
    ],
)  # fmt: skip
def test_bad_config_is_one_line_exit_2_and_nothing_written(home, cli, config, expected):
    write_config(home, GOOD)
    cli("init")
    cli("run-due", now="2026-11-29T09:00:00Z")
    (home / "autoretto.toml").write_text(config)
    before = snapshot(home)
    for command in (("config", "check"), ("run-due",), ("status",)):
        code, out, err = cli(*command, now="2026-11-29T10:05:00Z")
        assert code == 2, (command, out, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert str(home / "autoretto.toml") in lines[0]
        if expected:
            assert expected in lines[0]
        assert "Traceback" not in err
    assert snapshot(home) == before


def test_the_good_config_checks(home, cli):
    write_config(home, GOOD)
    code, out, err = cli("config", "check")
    assert code == 0, err
    assert "ok (lofi)" in out
    # Slots on the hour get an off-the-hour suggestion (posts on :00 look like a bot's).
    suggestions = cli.json("config", "check")["suggestions"]["lofi"]
    assert set(suggestions) == {"10:00", "11:00", "12:00"}
    assert all(not t.endswith(":00") for t in suggestions.values())


def test_no_home_says_run_init(home, cli):
    code, _, err = cli("status")
    assert code == 2
    assert "run `autoretto init`" in err
    assert not home.exists()


def test_unreadable_database_is_a_plain_error(home, cli):
    write_config(home, GOOD)
    (home / "autoretto.db").mkdir()  # a directory where the database file should be
    code, _, err = cli("run-due", now="2026-11-29T10:05:00Z")
    assert code == 1
    assert "cannot open the database" in err
    assert len(err.strip().splitlines()) == 1


def test_database_folder_gone(home, cli, monkeypatch):
    from autoretto.errors import StoreError
    from autoretto.ledger.store import open_database

    with pytest.raises(StoreError, match="the database folder does not exist"):
        open_database(home / "nowhere" / "autoretto.db")


def test_a_file_that_is_not_a_video_is_refused(home, cli, tmp_path):
    write_config(home, GOOD)
    cli("init")
    fake = tmp_path / "song.mp4"
    fake.write_text("this is not a video")
    before = snapshot(home)
    code, _, err = cli("episode", "add", "lofi", str(fake), "--title", "Nope")
    assert code == 2
    assert str(fake) in err
    assert len(err.strip().splitlines()) == 1
    assert cli.json("episodes") == []
    assert snapshot(home) == before


def test_an_audio_file_shorter_than_the_channel_takes_is_refused_first(home, cli, tmp_path):
    # An audio file is made into an episode (tests/test_episode_add.py); one the duration
    # gate would reject is refused before any episode is written.
    from autoretto.ffmpeg import run_ffmpeg

    write_config(home, GOOD)
    cli("init")
    audio = tmp_path / "tone.m4a"
    run_ffmpeg(["-y", "-f", "lavfi", "-i", "sine=duration=1", "-c:a", "aac", str(audio)])
    before = snapshot(home)
    code, _, err = cli("episode", "add", "lofi", str(audio), "--title", "Nope")
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert f"{audio}: 1" in err and "min_seconds" in err
    assert cli.json("episodes") == []
    assert snapshot(home) == before


def test_unknown_channel_and_episode(home, cli, clip):
    write_config(home, GOOD)
    cli("init")
    code, _, err = cli("episode", "add", "jazz", str(clip), "--title", "x")
    assert code == 2 and 'no channel "jazz"' in err
    code, _, err = cli("approve", "42")
    assert code == 2 and "no episode 42" in err
    code, _, err = cli("run-due", "--now", "yesterday")
    assert code == 2 and "--now" in err


# -- one line, the right exit code, nothing changed: real processes, and in this process the cases
# that vary only the input (`in_process`) ---------------------------------------------------------

WEBHOOK = '\n[platforms.webhook]\nurl = "http://127.0.0.1:9/hook"\n'
FILMS = '[channels.films]\nslots = ["20:00"]\n'
HUGE = '"99999999999d"'


def prepared_home(home, cli, config: str | None = None) -> dict[str, str]:
    """A home that has run once (its database holds a channel), then `config` written if given;
    the snapshot of everything before the bad input."""
    write_config(home, GOOD)
    cli("init")
    cli("run-due", now="2026-11-29T09:00:00Z")
    if config is not None:
        (home / "autoretto.toml").write_text(config, encoding="utf-8")
    return snapshot(home)


def in_process(cli, caplog, *args: str, now: str | None = None) -> tuple[int, str, str]:
    """`autoretto ARGS` in this process (tests/support.Cli: the app `autoretto` itself runs, with
    no exception caught), its stderr with what a process of its own would also write there:
    every warning logged (`autoretto` logs WARNING and above to stderr; cli.main) and every
    Python warning (printed to stderr there; here pytest would keep them for its summary). A
    process of its own starts in ~0.3 s whatever its input; the cases below that vary only the
    input run here, and real processes are kept where the process is the point."""
    caplog.clear()
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        code, out, err = cli(*args, now=now)
    logged = [r for r in caplog.records if r.levelno >= logging.WARNING]
    err += "".join(f"{r.levelname} {r.name}: {r.getMessage()}\n" for r in logged)
    return code, out, err + "".join(f"{w.category.__name__}: {w.message}\n" for w in warned)


def assert_one_line(code: int, err: str, *, exit_code: int = 2) -> str:
    assert code == exit_code, err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


BAD_CONFIGS = [
    # every duration field: an overflow is a plain mistake, not a traceback
    (f"stale_after = {HUGE}\n" + GOOD, "stale_after:"),
    (f"make_budget = {HUGE}\n" + GOOD, "make_budget:"),
    (f"cron_interval = {HUGE}\n" + GOOD, "cron_interval:"),
    (GOOD.replace('"2h"', HUGE), 'channel "lofi": catch_up_window:'),
    (GOOD + FILMS + f"catch_up_window = {HUGE}\n", 'channel "lofi": films.catch_up_window:'),
    (f"[retry]\nfirst_wait = {HUGE}\n" + GOOD, "retry.first_wait:"),
    (f"[retry]\nmax_wait = {HUGE}\n" + GOOD, "retry.max_wait:"),
    (GOOD + f"\n[platforms.facebook]\npoll_wait = {HUGE}\n", "platforms.facebook.poll_wait:"),
    (GOOD + f"\n[platforms.linkedin]\npoll_wait = {HUGE}\n", "platforms.linkedin.poll_wait:"),
    (GOOD.replace('"2h"', '"²h"'), 'channel "lofi": catch_up_window: "²h" is not a duration'),
    (GOOD.replace('"2h"', '"0s"'), 'channel "lofi": catch_up_window:'),
    # a run that beats every 20 s must not be taken for dead after 1 s
    ('stale_after = "1s"\n' + GOOD, "stale_after: must be at least 2m"),
    ('stale_after = "0s"\n' + GOOD, "stale_after: must be at least 2m"),
    # every number has a range
    (GOOD + WEBHOOK + "timeout = 0\n", "platforms.webhook.timeout: must be more than 0"),
    (GOOD + WEBHOOK + "timeout = inf\n", "platforms.webhook.timeout:"),
    (GOOD + WEBHOOK + "timeout = 1e300\n", "platforms.webhook.timeout:"),
    (GOOD + "\n[platforms.bluesky]\ntimeout = nan\n", "platforms.bluesky.timeout:"),
    # an endpoint with no host, or a port that is no number, is a mistake to fix, not an hourly
    # "could not be reached"
    (GOOD + '\n[platforms.webhook]\nurl = "https://"\n', "platforms.webhook.url: give the"),
    (GOOD + '\n[platforms.webhook]\nurl = "http://h:x/"\n', "platforms.webhook.url: give the"),
    (GOOD + '\n[platforms.webhook]\nurl = "http://a b/"\n', "platforms.webhook.url: give the"),
    (GOOD + '\n[platforms.webhook]\nurl = "http://[::1/"\n', "platforms.webhook.url: give the"),
    # every platform address goes through the same check: one line, not a traceback
    (GOOD + '\n[platforms.linkedin]\napi_base = "https://[::1/"\n', "platforms.linkedin.api_base:"),
    (GOOD + "\n[platforms.x]\ndaily_cap = 99999999999999999999\n", "platforms.x.daily_cap:"),
    (GOOD.replace("approval = false", "ready_ahead = 100000"), 'channel "lofi": ready_ahead:'),
    (
        GOOD.replace('"lofi"', '"' + "a" * 300 + '"'),
        "name: each channel needs a name of 1 to 40 characters",
    ),
    (GOOD.replace('name = "lofi"', 'name = "lofi\\n"'), 'channel "lofi\\n": name:'),
    # an empty folder path would make the home itself the outbox
    (GOOD + '[platforms.folder]\npath = ""\n', "platforms.folder.path: must not be empty"),
    ('journal = "a\\u0000b"\n' + GOOD, "journal:"),
    ('[notify]\ncommand = "notify-me \'unclosed"\n' + GOOD, "notify.command:"),
    ('[notify]\nwebhook = "https://ntfy.sh/a b"\n' + GOOD, "notify.webhook:"),
    ("[providers.suno]\ntimeout = 1e300\n" + GOOD, "providers.suno.timeout:"),
]


@pytest.mark.parametrize(("config", "expected"), BAD_CONFIGS)
def test_a_bad_config_is_refused_in_one_line_by_each_command(home, cli, caplog, config, expected):
    """Each bad value in this process (`in_process`: what differs from one value to the next is
    the config's reading, not the process); the three commands as real processes on a bad
    config: test_config_check_names_every_problem_at_once and the tests after it."""
    before = prepared_home(home, cli, config)
    for command in (("config", "check"), ("run-due",), ("status",)):
        code, _, err = in_process(cli, caplog, *command, now="2026-11-29T10:05:00Z")
        line = assert_one_line(code, err)
        assert line.startswith(f"autoretto: {home / 'autoretto.toml'}: "), line
        assert expected in line, line
    assert snapshot(home) == before


def test_config_check_names_every_problem_at_once(home, cli):
    # Three problems in three parts of the file: a channel, a platform table, [retry].
    config = (
        "[retry]\nattempts = 99\n\n"
        + GOOD.replace('"UTC"', '"Europe/Berln"')
        + '\n[platforms.webhook]\nurl = "http://127.0.0.1:9/hook"\ntimeout = 0\n'
    )
    before = prepared_home(home, cli, config)
    path = home / "autoretto.toml"
    code, out, err = run_command("config", "check", now="2026-11-29T10:05:00Z")
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 3, err
    assert all(line.startswith(f"autoretto: {path}: ") for line in lines), err
    assert any('channel "lofi": timezone: unknown time zone' in line for line in lines), err
    assert any("platforms.webhook.timeout: must be more than 0" in line for line in lines), err
    assert any("retry.attempts: must be a whole number" in line for line in lines), err

    code, out, err = run_command("config", "check", "--json", now="2026-11-29T10:05:00Z")
    assert code == 2, err
    answer = json.loads(out)
    assert answer["ok"] is False
    found = {(p["channel"], p["field"]) for p in answer["problems"]}
    assert found == {
        ("lofi", "timezone"),
        (None, "platforms.webhook.timeout"),
        (None, "retry.attempts"),
    }
    assert all(p["file"] == str(path) and p["message"] for p in answer["problems"])

    # A command that cannot run says one line: the first problem, and how many more there are.
    for command in (("run-due",), ("status",)):
        code, _, err = run_command(*command, now="2026-11-29T10:05:00Z")
        line = assert_one_line(code, err)
        assert "(and 2 more; `autoretto config check` lists them)" in line, line
    assert snapshot(home) == before


def test_config_check_names_every_problem_of_one_channel(home, cli):
    """Issue 27, friction 8: two wrong fields of one channel were one line (the first); each
    field is checked on its own, and so is its films cadence."""
    config = (
        GOOD.replace('"10:00"', '"25:00"').replace('"2h"', '"2 hours"')
        + "colour = 'blue'\n"
        + "[channels.films]\nslots = ['9:61']\ndays = ['someday']\n"
    )
    before = prepared_home(home, cli, config)
    code, _, err = run_command("config", "check", now="2026-11-29T10:05:00Z")
    assert code == 2, err
    fields = ["slots", "catch_up_window", "colour", "films.slots", "films.days"]
    said = f'autoretto: {home / "autoretto.toml"}: channel "lofi": '
    lines = err.strip().splitlines()
    assert all(line.startswith(said) for line in lines), err
    assert sorted(line[len(said) :].split(": ")[0] for line in lines) == sorted(fields), err
    assert '"25:00" is not a time of day' in err and '"2 hours" is not a duration' in err
    answer = json.loads(run_command("config", "check", "--json")[1])
    assert sorted(p["field"] for p in answer["problems"]) == sorted(fields)
    assert snapshot(home) == before


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        (
            GOOD + "[channels.pipeline]\naudio = 'gramophone'\nfps = 29\ncrf = 'high'\n",
            {
                ("lofi", "pipeline.audio"): "must be one of synth, folder, suno, not 'gramophone'",
                ("lofi", "pipeline.fps"): "must be one of 24, 25, 30, 50, 60",
                ("lofi", "pipeline.crf"): "must be a number, not 'high'",
            },
        ),
        (
            GOOD + '[platforms.webhook]\nurl = "http://127.0.0.1:9/hook"\ntimeout = 0\n'
            "colour = 'blue'\nformat = 7\n",
            {
                (None, "platforms.webhook.timeout"): "must be more than 0",
                (None, "platforms.webhook.colour"): "unknown key (allowed: format, timeout,",
                (None, "platforms.webhook.format"): "must be a str",
            },
        ),
        (
            '[notify]\ncommand = "notify-send \'unclosed"\nwebhook = "https://ntfy.sh/a b"\n'
            "colour = 'blue'\n" + GOOD,
            {
                (None, "notify.command"): "is not a command line (No closing quotation)",
                (None, "notify.webhook"): "must be an http(s) URL without spaces",
                (None, "notify.colour"): "unknown key (allowed: command, heartbeat_url, webhook)",
            },
        ),
        (
            "[retry]\nattempts = 99\nfirst_wait = 'soon'\ncolour = 'blue'\n" + GOOD,
            {
                (None, "retry.attempts"): "must be a whole number from 1 to 20",
                (None, "retry.first_wait"): '"soon" is not a duration',
                (None, "colour"): "unknown key (allowed: attempts, first_wait, max_wait)",
            },
        ),
        (
            "[media]\nkeep = 30\ncolour = 'blue'\n" + GOOD,
            {
                (None, "media.keep"): 'write a duration like "30d", or "forever"',
                (None, "media.colour"): "unknown key; known keys: keep, url",
            },
        ),
        (
            "[providers.suno]\ntimeout = 0\nbase_url = 'suno.local'\n"
            "[providers.gemini]\ntext_model_ends = 'soon'\nattempts = 0\n" + GOOD,
            {
                (None, "providers.suno.timeout"): "must be more than 0 and at most 86400",
                (None, "providers.suno.base_url"): "must start with http:// or https://",
                (None, "providers.gemini.text_model_ends"): 'must be a date like "2027-05-07"',
                (None, "providers.gemini.attempts"): "must be between 1 and 20",
            },
        ),
        # each platform's own checks beside the common ones (issue 27, friction 8)
        (
            GOOD + '[platforms.webhook]\nurl = "ftp://example.com/hook"\ntimeout = 0\n',
            {
                (None, "platforms.webhook.url"): "give the endpoint as an http(s) URL with a host",
                (None, "platforms.webhook.timeout"): "must be more than 0",
            },
        ),
        (
            GOOD + "[platforms.youtube]\ntimeout = 0\ncategory = 'music'\nchunk_size = 100\n"
            "retries = 50\n",
            {
                (None, "platforms.youtube.timeout"): "must be more than 0",
                (None, "platforms.youtube.category"): "must be a YouTube category id",
                (None, "platforms.youtube.chunk_size"): "must be a positive multiple of 262144",
                (None, "platforms.youtube.retries"): "must be a whole number from 0 to 19",
            },
        ),
        (
            GOOD + "[platforms.x]\ntimeout = 0\naccount_tier = 'gold'\nchunk_size = 100\n"
            "channel_caps = {lofi = -1}\n",
            {
                (None, "platforms.x.timeout"): "must be more than 0",
                (None, "platforms.x.account_tier"): 'must be "standard" or "premium"',
                (None, "platforms.x.chunk_size"): "must be between 16 KiB and 5 MiB",
                (None, "platforms.x.channel_caps"): "give each channel a whole number",
            },
        ),
        (
            GOOD + "[platforms.tiktok]\ntimeout = 0\nchunk_size = 100\n",
            {
                (None, "platforms.tiktok.timeout"): "must be more than 0",
                (None, "platforms.tiktok.chunk_size"): "must be between 5 MB and 64 MB",
            },
        ),
        (
            GOOD + "[platforms.bluesky]\ntimeout = 0\nvideo_service_did = 'video.bsky.app'\n"
            "langs = [1]\n",
            {
                (None, "platforms.bluesky.timeout"): "must be more than 0",
                (None, "platforms.bluesky.video_service_did"): "must be a DID such as",
                (None, "platforms.bluesky.langs"): "list language codes such as",
            },
        ),
        (
            GOOD + "[platforms.linkedin]\ntimeout = 0\nextra_scopes = [1]\n",
            {
                (None, "platforms.linkedin.timeout"): "must be more than 0",
                (None, "platforms.linkedin.extra_scopes"): "must be a list of scope names",
            },
        ),
        (
            GOOD + "[platforms.instagram]\ntimeout = 0\n"
            "[platforms.instagram.media_host]\nkind = 'ftp'\n",
            {
                (None, "platforms.instagram.timeout"): "must be more than 0",
                (None, "platforms.instagram.media_host.kind"): 'must be "self"',
            },
        ),
        (
            "[store]\nurl = 'mysql://db/autoretto'\ncolour = 'blue'\n" + GOOD,
            {
                (None, "store.url"): 'write a PostgreSQL URL like "postgresql://',
                (None, "store.colour"): "unknown key; known keys: url",
            },
        ),
        (
            "[media_host]\nkind = 'self'\npublic_url = 'ftp://media.example.com'\n"
            "bind = 'nowhere'\nexpires_minutes = 0\nbucket = 'b'\n" + GOOD,
            {
                (None, "media_host.public_url"): "give the public base address",
                (None, "media_host.bind"): 'write it as "ADDRESS:PORT"',
                (None, "media_host.expires_minutes"): "must be a whole number of minutes",
                (None, "media_host.bucket"): "unknown key for kind = 'self'",
            },
        ),
    ],
    ids=[
        "pipeline", "platform", "notify", "retry", "media", "providers",
        "webhook", "youtube", "x", "tiktok", "bluesky", "linkedin", "instagram",
        "store", "media_host",
    ],
)  # fmt: skip
def test_config_check_names_every_wrong_field_of_a_table(home, cli, caplog, table, expected):
    """Issue 27, friction 8: the pipeline, platform, [notify], [retry], [media], [providers],
    [store] and [media_host] tables named only their first wrong field (and a platform's own
    checks ran only once the common ones passed); now each is its own line, the command still
    refused and nothing written. `config check` is a real process; its --json and `run-due` run
    in this process (`in_process`)."""
    before = prepared_home(home, cli, table)
    path = home / "autoretto.toml"
    code, _, err = run_command("config", "check", now="2026-11-29T10:05:00Z")
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == len(expected), err
    for (channel, field), message in expected.items():
        where = f"autoretto: {path}: " + (f'channel "{channel}": ' if channel else "")
        assert any(line.startswith(f"{where}{field}: {message}") for line in lines), (field, err)
    code, out, _ = in_process(cli, caplog, "config", "check", "--json", now="2026-11-29T10:05:00Z")
    assert code == 2
    found = {(p["channel"], p["field"]) for p in json.loads(out)["problems"]}
    assert found == set(expected)
    code, _, err = in_process(cli, caplog, "run-due", now="2026-11-29T10:05:00Z")
    line = assert_one_line(code, err)
    assert f"(and {len(expected) - 1} more; `autoretto config check` lists them)" in line, line
    assert snapshot(home) == before


def test_a_config_that_is_a_directory_is_one_line(home, cli):
    write_config(home, GOOD)
    cli("init")
    (home / "autoretto.toml").unlink()
    (home / "autoretto.toml").mkdir()
    before = snapshot(home)
    code, _, err = run_command("run-due", now="2026-11-29T10:05:00Z")
    line = assert_one_line(code, err)
    assert f"{home / 'autoretto.toml'}: is a directory, not the config file" in line
    assert snapshot(home) == before


def test_a_channel_name_with_a_newline_is_never_echoed_raw(home, cli):
    before = prepared_home(home, cli)
    code, _, err = run_command("status", "--channel", "lofi\nlofi", now="2026-11-29T10:05:00Z")
    line = assert_one_line(code, err)
    assert 'no channel "lofi\\nlofi"' in line
    code, _, err = run_command("run-due", "--channel", "\x1b[31mred", now="2026-11-29T10:05:00Z")
    line = assert_one_line(code, err)
    assert "\x1b" not in line and '"\\x1b[31mred"' in line
    assert snapshot(home) == before


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("run-due", "--now", "0001-01-01T00:00:00Z"), "--now: 0001-01-01T00:00:00Z is out of"),
        (("run-due", "--now", "9999-12-31T23:59:59Z"), "--now: 9999-12-31T23:59:59Z is out of"),
        (("run-due", "--now", "9999-12-31T23:59:59-01:00"), "--now:"),
        (("status", "--now", "0001-01-01T00:30:00+01:00"), "--now:"),
        (("run-due", "--now", ""), "--now: empty"),
        (("run-due", "--now", "  "), "--now: empty"),
        (("status", "--now", ""), "--now: empty"),
        (("decisions", "--since", "0001-01-01T00:00:00Z"), "--since:"),
        (("posts", "--state", "bogus"), '--state: "bogus" is not a post state; use one of queued,'),
        (("post-now", "lofi", "--episode", "99"), "no episode 99"),
        (("post-now", "lofi", "--episode", "99999999999999999999"), "--episode"),
        (("confirm", "99", "--not-live"), "no post 99"),
        (("confirm", "99", "--live", "https://example.com/p/1"), "no post 99"),
        (("look", "99"), "no post 99"),
        (("look", "99999999999999999999"), "POST_ID"),
        (("approve", "99999999999999999999"), "EPISODE_ID"),
        (("hold", "0"), "EPISODE_ID: 0 is not an id"),
        (("episode", "show", "99999999999999999999"), "EPISODE_ID"),
        (("translate", "99999999999999999999", "--to", "de"), "EPISODE_ID"),
        (("make", "lofi", "--count", "99999999999999999999"), "--count"),
        (("compile", "lofi", "--last", "0"), "--last"),
        (("report", "--days", "99999999999999999999"), "--days"),
    ],
)  # fmt: skip
def test_bad_arguments_are_one_line_and_change_nothing(home, cli, caplog, args, expected):
    """In this process (`in_process`); a parser mistake in a real process:
    test_a_parser_mistake_is_one_line_naming_the_flag_for_every_command."""
    before = prepared_home(home, cli)
    code, _, err = in_process(cli, caplog, *args)
    line = assert_one_line(code, err)
    assert line.startswith("autoretto"), line
    assert expected in line, line
    assert snapshot(home) == before  # no `crashed` run row, nothing else


def every_command() -> list[tuple[str, ...]]:
    """The path of every command of the app, groups included (`("episode", "add")`, ...)."""
    import typer.main

    from autoretto.cli import app

    found: list[tuple[str, ...]] = []

    def walk(command, path: tuple[str, ...]) -> None:
        found.append(path)
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


#: commands whose parser mistake is also made in a real process: the app itself, a command, a
#: group, and a command of each of two groups
IN_REAL_PROCESSES = [(), ("status",), ("episode",), ("episode", "add"), ("connect", "youtube")]


def test_a_parser_mistake_is_one_line_naming_the_flag_for_every_command(home, cli, caplog):
    """Every command in this process (`in_process`), and a few of them (`IN_REAL_PROCESSES`) in
    real processes too, which must say exactly what this process said."""
    commands = every_command()
    assert set(IN_REAL_PROCESSES) <= set(commands)
    runs = [
        (path, run_process(*path, "--no-such-flag", stdin=subprocess.DEVNULL))
        for path in IN_REAL_PROCESSES
    ]
    said = {}
    for path in commands:
        code, out, err = in_process(cli, caplog, *path, "--no-such-flag")
        line = assert_one_line(code, err)
        shown = " ".join(("autoretto", *path))
        assert line.startswith(f"{shown}: "), line
        assert "--no-such-flag" in line, line
        assert f"`{shown} --help`" in line, line
        assert "╭" not in err and out == "", (path, out, err)
        said[path] = (code, out, err)
    for path, process in runs:
        out, err = process.communicate(timeout=120)
        assert (process.returncode, out, err) == said[path], path
    assert not home.exists()  # nothing was created either


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("make",), "autoretto make: missing the argument CHANNEL"),
        (("frobnicate",), "autoretto: no such command \"frobnicate\""),
        (("status", "--channel"), "autoretto status: --channel needs a value"),
        (("make", "lofi", "-n", "zero"), 'autoretto make: --count: "zero" is not a whole number'),
        (("episode", "add", "lofi"), "autoretto episode add: missing the argument VIDEO"),
    ],
)  # fmt: skip
def test_parser_mistakes_say_what_to_fix(home, cli, caplog, args, expected):
    code, out, err = in_process(cli, caplog, *args)  # real processes: the test above
    line = assert_one_line(code, err)
    assert line.startswith(expected), line
    assert out == ""


# -- files that are not what they claim ------------------------------------------------------


def test_a_still_image_is_not_an_episode(home, cli, tmp_path):
    from PIL import Image

    before = prepared_home(home, cli)
    image = tmp_path / "cover.png"
    Image.new("RGB", (320, 180), (200, 40, 40)).save(image)
    renamed = tmp_path / "cover.mp4"
    renamed.write_bytes(image.read_bytes())
    for still in (image, renamed):
        code, _, err = run_command("episode", "add", "lofi", str(still), "--title", "Still")
        line = assert_one_line(code, err)
        assert str(still) in line and "still image" in line, line
    assert cli.json("episodes") == []
    assert snapshot(home) == before


def test_an_empty_database_file_is_refused_not_made_afresh(home, cli):
    write_config(home, GOOD)
    cli("init")
    (home / "autoretto.db").write_bytes(b"")  # cut short, and its write-ahead log gone with it
    for leftover in ("autoretto.db-wal", "autoretto.db-shm"):
        (home / leftover).unlink(missing_ok=True)
    for command in (("status",), ("run-due",)):
        code, _, err = run_command(*command, now="2026-11-29T10:05:00Z")
        line = assert_one_line(code, err, exit_code=1)
        assert f"{home / 'autoretto.db'}: the database is empty (0 bytes)" in line, line
    assert (home / "autoretto.db").stat().st_size == 0
    assert not (home / "autoretto.db-wal").exists()


def test_a_damaged_database_is_one_line(home, cli, clip):
    import sqlite3

    write_config(home, GOOD)
    cli("init")
    for number in range(3):
        cli("episode", "add", "lofi", str(clip), "--title", f"episode {number}")
    cli("run-due", now="2026-11-29T09:00:00Z")
    database = home / "autoretto.db"
    connection = sqlite3.connect(database)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = connection.execute("PRAGMA page_size").fetchone()[0]
    (root,) = connection.execute(
        "SELECT rootpage FROM sqlite_master WHERE name = 'episodes'"
    ).fetchone()
    connection.close()
    data = bytearray(database.read_bytes())
    start = (root - 1) * page_size
    data[start : start + page_size] = b"\xa5" * page_size  # the table's root page is garbage
    database.write_bytes(bytes(data))
    damaged = database.read_bytes()
    for command in (("status",), ("run-due",), ("episodes",), ("episode", "show", "3")):
        code, _, err = run_command(*command, now="2026-11-29T10:05:00Z")
        line = assert_one_line(code, err, exit_code=1)
        assert f"{database}: the database is damaged" in line, line
        assert "restore it from a backup" in line, line
    assert database.read_bytes() == damaged


def test_another_programs_database_is_refused_untouched(home, cli):
    import sqlite3

    write_config(home, GOOD)
    home.joinpath("autoretto.db").unlink(missing_ok=True)
    connection = sqlite3.connect(home / "autoretto.db")
    connection.execute("CREATE TABLE contacts (name TEXT, phone TEXT)")
    connection.execute("INSERT INTO contacts VALUES ('Ann', '555')")
    connection.commit()
    connection.close()
    original = (home / "autoretto.db").read_bytes()
    for command in (("status",), ("run-due",), ("init",)):
        code, _, err = run_command(*command, now="2026-11-29T10:05:00Z")
        line = assert_one_line(code, err, exit_code=1)
        assert "is not an Autoretto database" in line and "contacts" in line, line
    assert (home / "autoretto.db").read_bytes() == original  # still in rollback-journal mode
    assert not (home / "autoretto.db-wal").exists()
