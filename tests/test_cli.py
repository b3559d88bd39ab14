"""The command line as one tool: its public interface kept, help everywhere, one exit-code
table, filters that cannot match, the same words for the same things.

The interface snapshots (tests/cli_interface.json: every command's parameters; and
tests/cli_json_keys.json: the keys of every `--json` answer in a seeded home) were taken from
the command line before its modules were regrouped; a command, flag or key that goes missing
or changes fails here. New ones may be added: write the snapshots again with
`AUTORETTO_WRITE_SNAPSHOT=1 python3 -m pytest tests/test_cli.py -k snapshot` and review the
diff. The `connect` group is left out: its commands are being replaced by one `connect NAME`.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main

from autoretto.cli import app
from tests.support import Cli, channel_toml, run_command, snapshot, write_config

HERE = Path(__file__).resolve().parent
INTERFACE = HERE / "cli_interface.json"
JSON_KEYS = HERE / "cli_json_keys.json"
WRITE = os.environ.get("AUTORETTO_WRITE_SNAPSHOT") == "1"
LEFT_OUT = ("autoretto connect",)  # replaced by one spec-driven `connect NAME` (issue 13)


@functools.cache
def every_command() -> dict[str, Any]:
    """`autoretto episode add` -> its click command, groups included, in a stable order."""
    found: dict[str, Any] = {}

    def walk(command: Any, path: list[str]) -> None:
        found[" ".join(path)] = command
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), ["autoretto"])
    return found


def interface() -> dict[str, list[dict[str, Any]]]:
    """Every command's parameters (help left out) as data: names, flags, types, defaults."""
    described = {}
    for path, command in every_command().items():
        if path.startswith(LEFT_OUT):
            continue
        params = []
        for param in command.params:
            if param.name == "help":
                continue
            entry = {
                "name": param.name,
                "kind": param.param_type_name,
                "opts": list(param.opts),
                "secondary_opts": list(getattr(param, "secondary_opts", [])),
                "type": param.type.name,
                "required": param.required,
                "default": param.default
                if isinstance(param.default, str | int | float | bool | None)
                else repr(param.default),
                "is_flag": bool(getattr(param, "is_flag", False)),
                "multiple": param.multiple,
                "nargs": param.nargs,
            }
            for bound in ("min", "max"):
                if hasattr(param.type, bound):
                    entry[bound] = getattr(param.type, bound)
            params.append(entry)
        described[path] = params
    return described


def key_paths(value: Any, prefix: str = "") -> set[str]:
    """Every key path of a JSON value: `a.b` for objects, `a[]` for the items of a list."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else key
            found.add(path)
            found |= key_paths(item, path)
    elif isinstance(value, list):
        for item in value:
            found |= key_paths(item, f"{prefix}[]")
    return found


def compare(snapshot: Path, now: dict[str, Any]) -> None:
    if WRITE:
        snapshot.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    before = json.loads(snapshot.read_text(encoding="utf-8"))
    for name, kept in before.items():
        assert name in now, f"{name} is gone"
        if isinstance(kept, list) and kept and isinstance(kept[0], str):
            missing = sorted(set(kept) - set(now[name]))
            assert not missing, f"{name}: keys gone: {missing}"
        else:
            assert now[name][: len(kept)] == kept or all(k in now[name] for k in kept), (
                f"{name}: its parameters changed:\n{json.dumps(kept)}\n{json.dumps(now[name])}"
            )


def test_snapshot_every_command_keeps_its_parameters() -> None:
    compare(INTERFACE, interface())


SEEDED = channel_toml("lofi", window="2h") + '\n[channels.films]\nslots = ["20:00"]\n'


@pytest.fixture
def seeded(home: Path, cli: Cli, clip: Path) -> Cli:
    """A home with a posted episode, a ready one, a film and their decisions."""
    write_config(home, SEEDED)
    assert cli("init")[0] == 0
    assert cli("run-due", "--now", "2026-11-29T09:00:00Z")[0] == 0  # the channel is seen
    for title in ("Rainy night", "Second"):
        assert cli("episode", "add", "lofi", str(clip), "--title", title)[0] == 0
    assert cli("film", "add", "lofi", str(clip), "--title", "A film")[0] == 0
    return cli


def json_answers(cli: Cli) -> dict[str, Any]:
    """The `--json` answer of every command that gives one, in the seeded home."""
    asked = {
        "run-due": ("run-due", "--now", "2026-11-29T10:05:00Z"),
        "status": ("status",),
        "decisions": ("decisions",),
        "posts": ("posts",),
        "episodes": ("episodes",),
        "episode show": ("episode", "show", "1"),
        "films": ("films",),
        "prune": ("prune", "--dry-run"),
        "incidents": ("incidents", "--all"),
        "journal": ("journal",),
        "accounts": ("accounts",),
        "limits": ("limits",),
        "stats": ("stats",),
        "stats minute": ("stats", "minute"),
        "stats collect": ("stats", "collect"),
        "inbox": ("inbox",),
        "inbox collect": ("inbox", "collect"),
        "config check": ("config", "check"),
        "review": ("review", "1"),
        "post-now": ("post-now", "lofi", "--episode", "2"),
        "episode add": ("episode", "add", "lofi", str(cli.clip), "--title", "Third"),
        "queue": ("queue",),
        "episode edit": ("episode", "edit", "4", "--title", "Third, renamed"),
        "episode edits": ("episode", "edits", "4"),
        "replies": ("replies",),
        "replies send": ("replies", "send", "--no-wait"),
    }
    answers = {}
    for name, args in asked.items():
        code, out, err = cli(*args, "--json")
        assert code == 0, (name, err)
        answers[name] = json.loads(out)
    code, out, err = cli("doctor", "--json")
    answers["doctor"] = json.loads(out)
    return answers


def test_snapshot_every_json_answer_keeps_its_keys(seeded: Cli, clip: Path) -> None:
    seeded.clip = clip
    answers = json_answers(seeded)
    compare(JSON_KEYS, {name: sorted(key_paths(value)) for name, value in answers.items()})


# -- help everywhere ---------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return text.replace("\b", " ").split()


@pytest.mark.parametrize("path", sorted(every_command()))
def test_help_renders_whole_with_an_example_and_h_is_help(cli: Cli, path: str) -> None:
    """`-h` is `--help`; the help keeps every word of the command's text and of its options'
    (a `[platforms.x]` is not eaten as markup) and ends with an example to copy."""
    command = every_command()[path]
    words = path.split()[1:]
    code, long_help, err = cli(*words, "--help")
    assert code == 0, err
    code, short_help, err = cli(*words, "-h")
    assert code == 0, err
    assert short_help == long_help
    shown = " ".join(long_help.split())
    for word in _words(command.help or ""):
        assert word in shown, f"{path}: {word!r} of its help is not shown"
    for param in command.params:
        for word in _words(getattr(param, "help", None) or ""):
            assert word in shown, f"{path} {param.name}: {word!r} of its help is not shown"
    example = re.search(r"Examples?:\n\s+(?:[A-Z_]+=\S+ )*(autoretto .+)\n", long_help)
    assert example, f"{path}: no example"
    assert example[1].startswith(path), (path, example[1])


# -- filters that cannot match, empty listings -----------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("status", "--channel", "nope"),
        ("decisions", "--channel", "nope"),
        ("posts", "--channel", "nope"),
        ("episodes", "--channel", "nope"),
        ("films", "--channel", "nope"),
        ("run-due", "--channel", "nope"),
        ("queue", "--channel", "nope"),
    ],
)
def test_an_unknown_channel_is_a_mistake_naming_the_channels(home: Path, cli: Cli, args) -> None:
    write_config(home, channel_toml("lofi"), channel_toml("jazz"))
    assert cli("init")[0] == 0
    before = snapshot(home)
    code, out, err = cli(*args)
    assert code == 2, (args, out, err)
    assert err.startswith(f'autoretto: --channel: no channel "nope" in {home}')
    assert "(channels: lofi, jazz)" in err and "Traceback" not in err
    assert len(err.splitlines()) == 1
    assert snapshot(home) == before


def test_a_post_state_that_cannot_match_names_the_states(home: Path, cli: Cli) -> None:
    write_config(home, channel_toml("lofi"))
    assert cli("init")[0] == 0
    code, out, err = cli("posts", "--state", "bogus")
    assert (code, out) == (2, "")
    assert err.strip() == (
        'autoretto: --state: "bogus" is not a post state; use one of queued, sending, '
        "published, may_be_live, failed, needs_person"
    )


@pytest.mark.parametrize(
    "args, words",
    [
        (("posts",), "nothing found: no post yet"),
        (("posts", "--state", "failed"), "nothing found: no failed post"),
        (("decisions", "--channel", "lofi"), "nothing found: no decision"),
        (("episodes",), "nothing found: no episode yet"),
        (("films",), "nothing found"),
        (("incidents",), "nothing found"),
        (("inbox",), "nothing found: no comments"),
    ],
)
def test_an_empty_listing_says_nothing_found_in_words(home: Path, cli: Cli, args, words) -> None:
    write_config(home, channel_toml("lofi"))
    assert cli("init")[0] == 0
    code, out, err = cli(*args)
    assert code == 0, err
    assert out.startswith(words), out


# -- one exit-code table -----------------------------------------------------------------------


def test_the_readme_has_the_exit_code_table_the_commands_use() -> None:
    from autoretto.errors import Exit

    readme = (HERE.parent / "README.md").read_text(encoding="utf-8")
    table = dict(re.findall(r"^\| (\d) \| (.+?) \|$", readme, re.MULTILINE))
    assert sorted(int(code) for code in table) == sorted(int(e) for e in Exit)


def test_run_due_exit_codes_done_and_a_failed_post(home: Path, cli: Cli, clip: Path) -> None:
    from tests.fakes import webhook_server

    fake = webhook_server.start()
    try:
        write_config(
            home,
            channel_toml("lofi").replace('["folder"]', '["webhook"]'),
            extra=f'\n[platforms.webhook]\nurl = "{fake.url}"\ntimeout = 10\n'
            '\n[retry]\nattempts = 3\nfirst_wait = "0s"\n',
        )
        assert cli("init")[0] == 0
        for title in ("One", "Two"):
            assert cli("episode", "add", "lofi", str(clip), "--title", title)[0] == 0
        assert cli("run-due", now="2026-11-29T09:00:00Z")[0] == 0  # nothing due: done
        code, out, err = cli("run-due", now="2026-11-29T10:05:00Z")
        assert code == 0, (out, err)  # a due slot served
        # The endpoint is down (503, before anything is stored): the post failed for now.
        fake.script.extend(["status:503"] * 3)
        code, out, err = cli("run-due", now="2026-11-29T11:05:00Z")
        assert code == 4, (out, err)
        assert "lofi 2026-11-29T11:00 webhook: failed" in out
        assert cli.json("posts")[-1]["state"] == "failed"
    finally:
        fake.close()


def test_posting_held_is_exit_3_for_run_due_post_now_and_doctor(seeded: Cli, home: Path) -> None:
    backup = home.parent / "before.db"
    shutil.copy(home / "autoretto.db", backup)
    assert seeded("run-due", now="2026-11-29T10:05:00Z")[0] == 0  # a publish, journalled
    for suffix in ("", "-wal", "-shm"):
        (home / f"autoretto.db{suffix}").unlink(missing_ok=True)
    shutil.copy(backup, home / "autoretto.db")  # the backup knows nothing of it
    code, out, err = seeded("run-due", now="2026-11-29T11:05:00Z")
    assert code == 3 and "POSTING IS HELD" in err, (out, err)
    code, _, err = seeded("post-now", "lofi")
    assert code == 3 and "autoretto resume" in err, err
    code, out, _ = seeded("doctor")
    assert code == 3 and "posting is held" in out
    assert seeded("run-due", "--dry-run", now="2026-11-29T11:05:00Z")[0] == 3


# -- doctor --------------------------------------------------------------------------------------


def test_doctor_tells_a_missing_config_from_an_invalid_one(home: Path, cli: Cli) -> None:
    home.mkdir()
    code, out, _ = cli("doctor", "--json")
    facts = json.loads(out)
    assert code == 2 and facts["config"]["state"] == "missing"
    code, out, _ = cli("doctor")
    assert code == 2 and "no config; run `autoretto init`" in out
    write_config(home, channel_toml("lofi").replace('"2h"', '"two hours"'))
    assert cli("init")[0] == 2
    code, out, _ = cli("doctor", "--json")
    facts = json.loads(out)
    assert code == 2 and facts["config"]["state"] == "invalid"
    assert "catch_up_window" in facts["config"]["error"]
    code, out, _ = cli("doctor")
    assert "the config is invalid" in out and "catch_up_window" in out
    assert "no config" not in out


# -- run-due --dry-run -------------------------------------------------------------------------


def test_dry_run_says_what_it_would_claim_and_post_and_changes_nothing(
    seeded: Cli, home: Path
) -> None:
    before = snapshot(home)
    code, out, err = run_command("run-due", "--dry-run", now="2026-11-29T10:05:00Z")
    assert code == 0, err
    assert "nothing is changed, nothing is sent" in out
    assert "lofi 2026-11-29T10:00: would claim slot 2026-11-29T10:00 (UTC" in out
    assert re.search(r"lofi 2026-11-29T10:00 folder: would post episode 1\b", out), out
    assert snapshot(home) == before  # the database's rows and every other file
    assert not (home / "outbox").exists() or not any((home / "outbox").rglob("*"))
    code, out, _ = run_command("run-due", "--dry-run", "--json", now="2026-11-29T10:05:00Z")
    would = json.loads(out)["would"]
    assert [(w["action"], w["platform"]) for w in would][:2] == [
        ("claim", None),
        ("post", "folder"),
    ]
    assert snapshot(home) == before
    # The run it described does what it said.
    assert run_command("run-due", now="2026-11-29T10:05:00Z")[0] == 0
    assert [p["episode_id"] for p in seeded.json("posts")] == [1]


# -- on a terminal, under cron ---------------------------------------------------------------


def _run_due_with_stderr_on_a_terminal(now: str) -> tuple[int, str, str]:
    import pty
    import subprocess
    import sys

    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "autoretto", "run-due"],
        env={**os.environ, "AUTORETTO_NOW": now, "COLUMNS": "120"},
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower,
    )  # fmt: skip
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        seen += chunk
    out = process.stdout.read().decode()
    process.wait(timeout=60)
    os.close(leader)
    return process.returncode, out, seen.decode(errors="replace")


def test_run_due_on_a_terminal_shows_each_step_and_under_cron_only_its_summary(
    seeded: Cli, home: Path
) -> None:
    code, out, terminal = _run_due_with_stderr_on_a_terminal("2026-11-29T10:05:00Z")
    assert code == 0, terminal
    assert "lofi: slot 2026-11-29T10:00 (UTC) is due: claimed it" in terminal
    assert "lofi: folder: sending episode 1" in terminal
    assert "lofi 2026-11-29T10:00 folder: posted (post 1)" in out
    # Under cron (no terminal): the summary on stdout, nothing on stderr.
    code, out, err = run_command("run-due", now="2026-11-29T11:05:00Z")
    assert code == 0, err
    assert err == ""
    assert out.splitlines() == [
        line for line in out.splitlines() if line.startswith(("lofi ", "made ", "note: ", "sent: "))
    ]
    assert "lofi 2026-11-29T11:00 folder: posted (post 2)" in out


# -- words ---------------------------------------------------------------------------------------


def test_plurals_agree(home: Path, cli: Cli) -> None:
    write_config(home, channel_toml("lofi"))
    assert cli("init")[0] == 0
    # (the last line: a first run notes that the channel has no episode for its slots)
    assert (
        cli("run-due", now="2026-11-29T09:00:00Z")[1].strip().splitlines()[-1]
        == "nothing due (1 channel checked)"
    )
    write_config(home, channel_toml("lofi"), channel_toml("jazz"))
    assert cli("run-due", now="2026-11-29T09:01:00Z")[1].strip().splitlines()[-1] == (
        "nothing due (2 channels checked)"
    )


def test_control_characters_in_a_title_are_never_printed_raw(seeded: Cli, clip: Path) -> None:
    title = "Bad\x1b[31mred\x07\rtitle"
    code, _, err = seeded("episode", "add", "lofi", str(clip), "--title", title)
    assert code == 0, err
    episode = next(e["id"] for e in seeded.json("episodes") if e["title"] == title)
    for args in (("episodes",), ("episode", "show", str(episode)), ("episodes", "--json")):
        code, out, err = seeded(*args)
        assert code == 0, err
        assert "\x1b" not in out and "\x07" not in out and "\r" not in out, args
        assert "Bad\\x1b[31mred" in out or "Bad\\u001b[31mred" in out, args


def test_limits_shows_every_platform_that_declares_a_limits_report(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `autoretto limits` shows comes from the platform classes: a platform that declares
    a limits report is listed under its registry name in --json and in words, beside X's
    ledger and Bluesky's count, without a change to the command."""
    from typer.testing import CliRunner

    from autoretto.platforms import REGISTRY
    from autoretto.platforms.base import LimitsView
    from autoretto.platforms.folder import FolderPlatform

    class CappedOutbox(FolderPlatform):
        name = "capped"
        title = "Capped outbox"

        @classmethod
        def limits_report(cls, db: Any, moment: Any, settings: Any) -> dict[str, Any]:
            return {"platform": cls.name, "posts": 2, "daily_cap": 5, "day": str(moment.date())}

        @classmethod
        def limits_view(cls, report: dict[str, Any]) -> LimitsView:
            return LimitsView((f"Capped: {report['posts']} of {report['daily_cap']} today",))

    monkeypatch.setitem(REGISTRY, "capped", CappedOutbox)
    write_config(home, channel_toml())
    runner = CliRunner()
    answer = runner.invoke(app, ["limits", "--json"])
    assert answer.exit_code == 0, answer.output
    reports = json.loads(answer.stdout)
    assert reports["capped"] == {
        "platform": "capped",
        "posts": 2,
        "daily_cap": 5,
        "day": "2026-11-29",
    }
    assert reports["x"]["paused"] is False and reports["bluesky"]["account"] is None
    shown = runner.invoke(app, ["limits"])
    assert shown.exit_code == 0, shown.output
    assert "Capped: 2 of 5 today" in shown.stdout
    assert "X: posting (no pause)" in shown.stdout


def test_times_not_in_utc_name_their_zone(home: Path, cli: Cli) -> None:
    write_config(home, channel_toml("lofi", timezone="Europe/Berlin"))
    assert cli("init")[0] == 0
    assert cli("run-due", now="2026-11-29T08:00:00Z")[0] == 0
    out = cli("run-due", now="2026-11-29T09:05:00Z")[1]  # 10:05 in Berlin
    assert "lofi 2026-11-29T10:00 (Europe/Berlin) folder: nothing_ready" in out
    for listing in ("decisions", "status"):
        code, out, err = run_command(listing, env={"COLUMNS": "160"})
        assert code == 0, err
        assert "Europe/Berlin" in out, listing


def test_one_vocabulary_for_slot_states(seeded: Cli, home: Path) -> None:
    """`status`, `decisions`, the report and the README name a slot's state with the same
    words (decisions.SLOT_STATES); a posted slot is `posted` in each."""
    from autoretto.decisions import SLOT_STATES

    assert seeded("run-due", now="2026-11-29T10:05:00Z")[0] == 0
    assert seeded("run-due", now="2026-11-29T12:05:00Z")[0] == 0  # 11:00 missed, 12:00 posted
    decided = {d["slot"]: d["outcome"] for d in seeded.json("decisions") if d["channel"] == "lofi"}
    answer = seeded.json("status", now="2026-11-29T12:10:00Z")
    lofi = next(c for c in answer["channels"] if c["channel"] == "lofi")
    recent = {s["slot"]: s["slot_state"] for s in lofi["recent"]}
    assert recent["2026-11-29T12:00"] == decided["2026-11-29T12:00"] == "posted"
    assert recent["2026-11-29T11:00"] == decided["2026-11-29T11:00"] == "missed"
    assert set(recent.values()) | {s["slot_state"] for s in lofi["upcoming"]} <= set(SLOT_STATES)
    # `state` keeps the values scripts have read since the first version
    assert {s["slot"]: s["state"] for s in lofi["recent"]}["2026-11-29T12:00"] == "filled"
    assert seeded("report", now="2026-11-29T12:10:00Z")[0] == 0
    page = (home / "report.html").read_text(encoding="utf-8")
    assert 'data-slot="2026-11-29T12:00" data-state="posted"' in page
    readme = (HERE.parent / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Slot states") :].split("\n## ")[0]
    for state in SLOT_STATES:
        assert f"`{state}`" in section, state
    assert "filled" not in section[section.index("| state |") :]  # the words' table


def test_status_shows_the_current_schedules_slots_past_an_edited_one(home: Path, cli: Cli) -> None:
    """A slot time removed by an edit keeps its rows and decisions; `status` reads each
    channel's shown slots as one range of keys and shows only the current schedule's."""
    write_config(home, channel_toml("lofi", slots=("10:00", "10:30", "11:00", "12:00")))
    assert cli("init")[0] == 0
    for moment in ("2026-11-29T09:05:00Z", "2026-11-29T10:05:00Z", "2026-11-29T10:35:00Z"):
        assert cli("run-due", now=moment)[0] == 0
    write_config(home, channel_toml("lofi", slots=("10:00", "11:00", "12:00")))
    for moment in ("2026-11-29T11:05:00Z", "2026-11-29T12:05:00Z"):
        assert cli("run-due", now=moment)[0] == 0
    decided = {d["slot"]: d["outcome"] for d in cli.json("decisions")}
    assert decided["2026-11-29T10:30"] == "nothing_ready"  # on record, no longer scheduled
    lofi = cli.json("status", now="2026-11-29T12:10:00Z")["channels"][0]
    recent = {s["slot"]: s["slot_state"] for s in lofi["recent"]}
    assert list(recent) == ["2026-11-29T10:00", "2026-11-29T11:00", "2026-11-29T12:00"]
    assert recent == {slot: decided[slot] for slot in recent}


def test_a_command_is_run_from_an_app_of_that_command_alone():
    """`autoretto status` builds click's tree for `status` only (the whole tree costs more than
    status's own work); no command, the root's help or a misspelt name get the whole app."""
    from autoretto.cli import app, only_the_command

    whole = len(app.registered_commands) + len(app.registered_groups)
    status = only_the_command(app, ["-v", "status", "--json"])
    assert [c.name or c.callback.__name__ for c in status.registered_commands] == ["status"]
    assert status.registered_groups == []
    episode = only_the_command(app, ["episode", "add", "lofi"])
    assert [g.name for g in episode.registered_groups] == ["episode"]
    assert episode.registered_commands == []
    run_due = only_the_command(app, ["run-due", "--dry-run"])
    assert [c.callback.__name__ for c in run_due.registered_commands] == ["run_due"]
    for words in ([], ["--help"], ["statuss"]):
        assert only_the_command(app, words) is app
    assert len(app.registered_commands) + len(app.registered_groups) == whole


def test_json_output_escapes_del_and_c1_controls(capsys) -> None:
    """`--json` leaves text as it is (ensure_ascii off) except DEL and the C1 controls, which
    a terminal would act on: those are written as \\u escapes, in ASCII text and in other."""
    from autoretto.cli_support import print_json

    for value, shown in (
        ({"reason": "a\x7fb"}, '{"reason": "a\\u007fb"}'),
        ({"reason": "é\x85\x9f"}, '{"reason": "é\\u0085\\u009f"}'),
        ({"reason": "plain é"}, '{"reason": "plain é"}'),
    ):
        print_json(value)
        assert capsys.readouterr().out == shown + "\n"
        assert json.loads(shown) == value


def test_a_table_piped_to_another_program_is_never_cut(home: Path, cli: Cli, clip: Path) -> None:
    """Issue 27, friction 8: piped (no terminal), rich fitted tables to 80 columns and cut
    their cells ("2026-12-08T0…"); a script reading `autoretto posts | grep` gets whole cells."""
    write_config(home, channel_toml("lofi"))
    assert cli("init")[0] == 0
    assert cli("episode", "add", "lofi", str(clip), "--title", "One")[0] == 0
    assert cli("run-due", now="2026-11-29T09:00:00Z")[0] == 0
    assert cli("run-due", now="2026-11-29T10:05:00Z")[0] == 0
    (post,) = cli.json("posts")
    environment = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    for args, whole in (
        (("posts",), post["url"]),
        (("decisions",), "2026-11-29T10:00"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "autoretto", *args],
            env=environment, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert whole in done.stdout and "…" not in done.stdout, done.stdout
        assert max(len(line) for line in done.stdout.splitlines()) > 80  # it did not fit
