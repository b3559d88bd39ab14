"""`autoretto connect NAME`: one command per platform, built from its declared sign-in.

`register(app)` adds the `connect` group to the main app with one subcommand for every
registered platform that declares `signin` (platforms/signin.py): its own flags, its help, and
the common `--json`. The command parses, calls `signin.connect` and renders; a person's mistake
is one line on stderr and its exit code. No secret or token is ever printed.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import typer
import typer.main
from typer.core import TyperGroup

from ..cli_support import SECTIONS, group, handled, help_text, print_json
from ..errors import UsageError

SECTION = "Accounts"


def terminal() -> bool:
    """Whether a person can type a secret here (stdin is a terminal)."""
    return sys.stdin.isatty()


class _Terminal:
    """The person at the command (signin.Person): lines on stdout (stderr with --json)."""

    def __init__(self, *, json_output: bool) -> None:
        self.err = json_output

    def say(self, line: str) -> None:
        typer.echo(line, err=self.err)

    def ask(self, prompt: str) -> str:
        return typer.prompt(prompt, err=self.err)

    def secret(self, prompt: str, *, instead: str, optional: bool = False) -> str:
        what = prompt.split(" (")[0]
        if not terminal():
            raise UsageError(f"{what}: no terminal to type it on; give {instead} instead")
        extra: dict[str, Any] = {"default": "", "show_default": False} if optional else {}
        return typer.prompt(prompt, hide_input=True, err=True, **extra)


def _parameter(flag: Any) -> inspect.Parameter:
    """A typer option for a declared `signin.Flag`."""
    if flag.kind == "bool":
        kind, default = bool, typer.Option(False, flag.name, help=flag.help)
    elif flag.kind == "port":
        kind = int
        default = typer.Option(flag.default, flag.name, min=1, max=65535, help=flag.help)
    else:
        kind = Path if flag.kind == "path" else str
        default = typer.Option(
            ... if flag.required else None, flag.name, help=flag.help, show_default=False
        )
        if not flag.required:
            kind = kind | None  # type: ignore[assignment]
    return inspect.Parameter(
        flag.key, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind
    )


def _command(name: str, platform: Any) -> Any:
    """The `connect NAME` command of one platform."""

    def command(**given: Any) -> None:
        from ..config import load_config
        from ..ledger.store import open_database
        from ..paths import Paths, home_dir
        from ..platforms import FIELDS, signin
        from ..vault import Vault

        json_output = given.pop("json_output")
        paths = Paths(home_dir())
        config = load_config(paths, platforms=FIELDS)
        account, lines = signin.connect(
            platform,
            lambda: open_database(paths.database, url=config.store_url),
            paths,
            config.platforms.get(name),
            given,
            _Terminal(json_output=json_output),
        )
        if json_output:
            print_json(account.to_json())
            return
        for line in lines:
            typer.echo(line)
        place = Vault(paths.home).place()
        where = {"keyring": "the system keyring", "environment": "AUTORETTO_VAULT_KEY"}.get(
            place.kind, place.detail
        )
        typer.echo(f"Its tokens are sealed in the vault; the key is in {where}.")

    parameters = [_parameter(flag) for flag in platform.signin.flags]
    parameters.append(
        inspect.Parameter(
            "json_output",
            inspect.Parameter.KEYWORD_ONLY,
            default=typer.Option(False, "--json", help="Print the account as JSON for scripts."),
            annotation=bool,
        )
    )
    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in parameters}
    command.__doc__ = _help(platform)
    command.__name__ = f"connect_{name}"
    return command


def _help(platform: Any) -> str:
    """The platform's own help, with how the browser's answer and the secret come in said the
    same way for every platform, before its example."""
    spec = platform.signin
    text, _, example = inspect.cleandoc(spec.help).rpartition("\n\nExample:")
    how = []
    if spec.needs_browser({}) and not spec.loopback:
        how.append(
            f"Open the printed address on any computer, press {spec.button}, and paste back the "
            "address the browser ends on."
        )
    variable = spec.secret.variable(platform.settings_defaults) if spec.secret else None
    if variable:
        what = spec.secret.prompt.split(" (")[0]
        how.append(f"{what}: read from ${variable}, else asked for without echo at a terminal.")
    return "\n\n".join(part for part in (text, " ".join(how), "Example:" + example) if part)


def _signs_in(name: str) -> Any:
    """The class of platform `name` when it declares a sign-in, else None."""
    from ..platforms import platform_class

    try:
        platform = platform_class(name)
    except KeyError:
        return None
    return platform if getattr(platform, "signin", None) is not None else None


class _Commands(MutableMapping[str, Any]):
    """The `connect` group's commands by name: one per platform with a declared sign-in, built
    (and its adapter imported) only when it is run or listed, so other commands start fast."""

    def __init__(self) -> None:
        self._built: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            platform = _signs_in(name)
            if platform is None:
                raise KeyError(name)
            single = typer.Typer(add_completion=False, rich_markup_mode=None)
            function = _command(name, platform)
            single.command(name, help=help_text(function.__doc__))(handled(function))
            self._built[name] = typer.main.get_command(single)
            self._built[name].name = name
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        from ..platforms import MANUAL_PLATFORMS, REGISTRY

        return iter([name for name in (*REGISTRY, *MANUAL_PLATFORMS) if _signs_in(name)])

    def __len__(self) -> int:
        return len(list(iter(self)))


class _ConnectGroup(TyperGroup):
    """`connect NAME`, NAME any platform with a declared sign-in."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _Commands()  # type: ignore[assignment]

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # posting order, not sorted


def register(app: typer.Typer) -> typer.Typer:
    """Add the `connect` group: one subcommand per platform with a declared sign-in."""
    connect_app = group(
        "connect",
        help="Connect an account so Autoretto can post to it.",
        example="autoretto connect youtube --paste",
        cls=_ConnectGroup,
    )
    SECTIONS.setdefault(SECTION)
    app.add_typer(connect_app, name="connect", rich_help_panel=SECTION)
    return connect_app
