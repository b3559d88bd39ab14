"""Fuzzing the two doors a person's input comes in by: the config file and the command line.

Hypothesis puts strange values (huge and non-finite numbers, odd durations, control characters,
lists and tables where a text belongs) into the fields of a good config, and strange arguments
after every command. Whatever it finds, the answer is an exit code and, for a mistake, one
line: never a traceback, and a refused command changes nothing in the home.

Bounded: 250 examples in all, on a fixed seed, run in-process (a real process each would take
minutes); the cases in test_bad_input.py run the same paths as real processes.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from autoretto.cli import app, only_the_command
from tests.conftest import TEST_NOW
from tests.support import snapshot

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,  # the same examples on every run: a failure is a failure, not luck
)


# -- writing TOML ------------------------------------------------------------------------------


def toml_text(value: str) -> str:
    escaped = []
    for character in value:
        if character in '"\\':
            escaped.append("\\" + character)
        elif ord(character) < 0x20 or 0x7F <= ord(character) <= 0x9F:
            escaped.append(f"\\u{ord(character):04x}")
        else:
            escaped.append(character)
    return '"' + "".join(escaped) + '"'


def toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else toml_text(key)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return toml_text(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items())
        return "{" + inner + "}"
    raise TypeError(value)


def toml_document(config: dict[str, Any]) -> str:
    """The config as TOML: scalars first, then its tables; `channels` as [[channels]]."""
    lines: list[str] = []

    def table(header: str, body: dict[str, Any]) -> None:
        scalars = {k: v for k, v in body.items() if not _is_table(v)}
        lines.append(header)
        lines.extend(f"{toml_key(k)} = {toml_value(v)}" for k, v in scalars.items())
        lines.append("")
        for key, sub in body.items():
            if _is_table(sub):
                name = header.strip("[]")
                table(f"[{name}.{toml_key(key)}]", sub)

    for key, value in config.items():
        if not _is_table(value) and key != "channels":
            lines.append(f"{toml_key(key)} = {toml_value(value)}")
    lines.append("")
    for key, value in config.items():
        if key == "channels" and isinstance(value, list):
            for channel in value:
                if isinstance(channel, dict):
                    table("[[channels]]", channel)
        elif _is_table(value):
            table(f"[{toml_key(key)}]", value)
    return "\n".join(lines) + "\n"


def _is_table(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and all(isinstance(k, str) for k in value)


# -- the config --------------------------------------------------------------------------------


def good_config() -> dict[str, Any]:
    return {
        "stale_after": "15m",
        "channels": [
            {
                "name": "lofi",
                "timezone": "Europe/Berlin",
                "slots": ["10:00", "18:30"],
                "catch_up_window": "2h",
                "platforms": ["folder", "webhook"],
                "approval": False,
                "ready_ahead": 1,
            }
        ],
        "platforms": {
            "folder": {"path": "outbox"},
            "webhook": {"url": "http://127.0.0.1:9/hook", "timeout": 30},
        },
    }


D, N, T, L = "duration", "number", "text", "list"
FIELDS = {
    ("stale_after",): D,
    ("make_budget",): D,
    ("cron_interval",): D,
    ("journal",): T,
    ("retry", "attempts"): N,
    ("retry", "first_wait"): D,
    ("retry", "max_wait"): D,
    ("notify", "command"): T,
    ("notify", "webhook"): T,
    ("notify", "heartbeat_url"): T,
    ("media_host", "kind"): T,
    ("media_host", "bind"): T,
    ("media_host", "public_url"): T,
    ("media_host", "expires_minutes"): N,
    ("media_host", "max_fetches"): N,
    ("providers", "suno", "base_url"): T,
    ("providers", "suno", "timeout"): N,
    ("providers", "gemini", "attempts"): N,
    ("channels", 0, "name"): T,
    ("channels", 0, "timezone"): T,
    ("channels", 0, "slots"): L,
    ("channels", 0, "days"): L,
    ("channels", 0, "catch_up_window"): D,
    ("channels", 0, "platforms"): L,
    ("channels", 0, "approval"): T,
    ("channels", 0, "ready_ahead"): N,
    ("channels", 0, "twin_of"): T,
    ("channels", 0, "films", "slots"): L,
    ("channels", 0, "films", "catch_up_window"): D,
    ("channels", 0, "pipeline", "audio"): T,
    ("channels", 0, "pipeline", "min_seconds"): N,
    ("channels", 0, "pipeline", "max_seconds"): N,
    ("channels", 0, "pipeline", "fps"): N,
    ("channels", 0, "pipeline", "folder"): T,
    ("channels", 0, "pipeline", "title_template"): T,
    ("channels", 0, "pipeline", "tags"): L,
    ("platforms", "folder", "path"): T,
    ("platforms", "folder", "format"): T,
    ("platforms", "webhook", "url"): T,
    ("platforms", "webhook", "timeout"): N,
    ("platforms", "webhook", "token_env"): T,
    ("platforms", "youtube", "chunk_size"): N,
    ("platforms", "x", "daily_cap"): N,
    ("platforms", "x", "channel_caps"): N,
    ("platforms", "bluesky", "poll_wait"): N,
    ("platforms", "facebook", "poll_wait"): D,
    ("platforms", "linkedin", "version"): T,
    ("platforms", "instagram", "media_host"): T,
}

durations = st.one_of(
    st.sampled_from(
        ["99999999999d", "²h", "0s", "1s", "-1m", "1.5h", "10 m", "10M", "366d", "367d", "", "d"]
    ),
    st.from_regex(r"[0-9]{1,13}[smhdx]", fullmatch=True),
)
numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1, 2**63, 2**64, 1e300, float("inf"), float("nan")]),
)
texts = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["", " ", "\n", "lofi\n", "\x1b[31m", "/", "../..", "a" * 300, "[/x]"]),
    st.sampled_from(["http://127.0.0.1:9/x y", "https://", "0.0.0.0:99999", "\u0000", "{x}"]),
)
scalars = st.one_of(texts, numbers, st.booleans(), durations)
anything = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=6), children, max_size=2)
    ),
    max_leaves=5,
)
# Mostly the kind of value the field takes, made strange; sometimes anything at all.
BY_KIND = {
    D: durations,
    N: numbers,
    T: texts,
    L: st.lists(st.one_of(texts, durations, numbers), max_size=3),
}
mutation = st.sampled_from(sorted(FIELDS, key=str)).flatmap(
    lambda path: st.tuples(
        st.just(path), st.one_of(BY_KIND[FIELDS[path]], BY_KIND[FIELDS[path]], anything)
    )
)


def put(config: dict[str, Any], path: tuple, value: Any) -> None:
    where: Any = config
    for step in path[:-1]:
        if isinstance(step, int):
            where = where[step]
        else:
            where = where.setdefault(step, {})
            if not isinstance(where, dict):
                return
    where[path[-1]] = value


runner = CliRunner()


def invoke(*args: str):
    # env: AUTORETTO_NOW is set for the call and put back after (a `--now` sets it in-process).
    # the app of the command alone, as `autoretto` itself runs it (cli.run)
    return runner.invoke(
        only_the_command(app, list(args)),
        list(args),
        env={"AUTORETTO_NOW": TEST_NOW},
        catch_exceptions=True,
    )


def assert_no_traceback(result, what: str) -> None:
    error = result.exception
    assert error is None or isinstance(error, SystemExit), (what, repr(error), result.output)
    assert "Traceback" not in result.output, (what, result.output)


@settings(FUZZ, max_examples=100)  # each example runs three commands
@given(mutations=st.lists(mutation, min_size=1, max_size=3))
def test_no_config_gives_a_traceback(monkeypatch, mutations):
    config = good_config()
    for path, value in mutations:
        put(config, path, value)
    text = toml_document(config)
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        home.mkdir()
        (home / "autoretto.toml").write_text(text, encoding="utf-8")
        monkeypatch.setenv("AUTORETTO_HOME", str(home))
        before = snapshot(home)
        result = invoke("config", "check")
        assert_no_traceback(result, text)
        assert result.exit_code in (0, 2), (text, result.output)
        commands = [("status",)]
        touched = {step for path, _ in mutations for step in path}
        if result.exit_code == 2:
            # `config check` names every problem, one line each
            lines = result.stderr.strip().splitlines()
            assert lines and all(line.startswith("autoretto: ") for line in lines), text
            commands.append(("run-due",))
        elif not touched & {"pipeline", "notify"}:
            # (a make takes seconds; a notify URL must not be pinged from a test)
            commands.append(("run-due", "--no-make", "--no-wait"))
        for command in commands:
            ran = invoke(*command)
            assert_no_traceback(ran, f"{command} with\n{text}")
            if result.exit_code == 2:
                assert ran.exit_code == 2, (command, text, ran.output)
        if result.exit_code == 2:
            assert snapshot(home) == before, text


# -- the command line --------------------------------------------------------------------------

SKIPPED = (
    ("connect",),  # they wait for a browser's answer or for a password on a terminal
    ("post",),
    ("serve",),  # serves until stopped
    ("make",),  # a good make takes seconds; its arguments are fuzzed by test_bad_input
    ("compile",),
    ("report",),  # `--out ANYTHING` would write wherever a random path points
)


def commands() -> list[tuple[tuple[str, ...], list[str]]]:
    """(path, its option names) for every command worth fuzzing."""
    import typer.main

    found = []

    def walk(command, path: tuple[str, ...]) -> None:
        subcommands = getattr(command, "commands", {})
        if not subcommands and not any(path[: len(skip)] == skip for skip in SKIPPED):
            names = [name for param in command.params for name in getattr(param, "opts", [])]
            found.append((path, [name for name in names if name.startswith("-")]))
        for name, sub in subcommands.items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


COMMANDS = commands()
words = st.one_of(
    st.text(alphabet=st.characters(exclude_characters="\x00"), max_size=20),
    st.sampled_from(
        [
            "",
            " ",
            "lofi",
            "1",
            "0",
            "-1",
            "99999999999999999999",
            "2026-11-29T10:05:00Z",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59-01:00",
            "bogus",
            "--json",
            "--",
            "-",
            "[/x]",
            "lofi\nlofi",
        ]
    ),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
)


@pytest.fixture
def fuzz_home(home, cli, clip, tmp_path, monkeypatch):
    from tests.support import channel_toml, write_config

    monkeypatch.chdir(tmp_path)  # a relative path among the arguments lands here, not in the repo

    write_config(home, channel_toml())
    cli("init")
    cli("episode", "add", "lofi", str(clip), "--title", "One")
    cli("run-due", now="2026-11-29T09:00:00Z")
    return home


@FUZZ
@given(data=st.data())
def test_no_arguments_give_a_traceback(fuzz_home, data):
    path, options = data.draw(st.sampled_from(COMMANDS), label="command")
    pieces = st.one_of(words, st.sampled_from(options)) if options else words
    args = data.draw(st.lists(pieces, max_size=4), label="arguments")
    before = snapshot(fuzz_home)
    result = invoke(*path, *args)
    assert_no_traceback(result, (path, args))
    assert result.exit_code in (0, 1, 2), (path, args, result.output)
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("autoretto"), (path, args, result.stderr)
        assert snapshot(fuzz_home) == before, (path, args)
