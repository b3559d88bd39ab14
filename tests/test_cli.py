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

import json
import os
from pathlib import Path
from typing import Any

import pytest
import typer.main

from autoretto.cli import app
from tests.support import Cli, channel_toml, write_config

HERE = Path(__file__).resolve().parent
INTERFACE = HERE / "cli_interface.json"
JSON_KEYS = HERE / "cli_json_keys.json"
WRITE = os.environ.get("AUTORETTO_WRITE_SNAPSHOT") == "1"
LEFT_OUT = ("autoretto connect",)  # replaced by one spec-driven `connect NAME` (issue 13)


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
        "config check": ("config", "check"),
        "review": ("review", "1"),
        "post-now": ("post-now", "lofi", "--episode", "2"),
        "episode add": ("episode", "add", "lofi", str(cli.clip), "--title", "Third"),
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
