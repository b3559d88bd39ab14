"""What every command module shares: the error edge, ids, and `--json` output.

Every mistake a person can make on the command line ends the same way: one line on stderr that
names the command and the flag (or the file and the field) and what would fix it, and an exit
code: 2 for a mistake in what was typed or configured, 1 for trouble a person must look at (a
full disk, a damaged database). Anything else that escapes is a bug and keeps its traceback.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
from typer.core import TyperGroup

from .errors import AutorettoError, environment_problem, one_line, shown

try:  # typer 0.28 carries its own copy of click; older typers use click itself
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_errors

F = TypeVar("F", bound=Callable[..., Any])

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]

#: SQLite's largest integer: no row id can be larger.
LARGEST_ID = 2**63 - 1


def handled(function: F) -> F:
    """Turn AutorettoError (and a full disk, a read-only or failing one) into one plain line on
    stderr and its exit code."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except AutorettoError as error:
            fail(str(error), error.exit_code)
        except OSError as error:
            problem = environment_problem(error)
            if problem is None:
                raise
            fail(problem, 1)

    return wrapper  # type: ignore[return-value]


def fail(message: str, code: int) -> None:
    """Print `autoretto: MESSAGE` as one line on stderr and end the command with `code`."""
    typer.echo(f"autoretto: {one_line(message)}", err=True)
    raise typer.Exit(code)


def _check_id(value: int | None) -> int | None:
    if value is not None and not 1 <= value <= LARGEST_ID:
        raise typer.BadParameter(f"{value} is not an id (ids are whole numbers from 1)")
    return value


def id_argument(help: str) -> Any:
    """A positional id (an episode, a post): a whole number SQLite can hold."""
    return typer.Argument(help=help, callback=_check_id)


def id_option(*names: str, help: str) -> Any:
    return typer.Option(*names, help=help, callback=_check_id, show_default=False)


def plain_table(**options: Any) -> Any:
    """A rich Table whose text cells are shown as they are: a title like "[/x]" is text, not
    markup (which rich would refuse with an error)."""
    return _plain_table_class()(**options)


@functools.cache
def _plain_table_class() -> type:
    from rich.table import Table
    from rich.text import Text

    class PlainTable(Table):
        def add_row(self, *cells: Any, **options: Any) -> None:
            super().add_row(
                *(Text(cell) if isinstance(cell, str) else cell for cell in cells), **options
            )

    return PlainTable


def print_json(value: Any) -> None:
    # Indented for a person at a terminal; compact for a script (and json's C encoder only
    # runs without indent, which matters for `status --json` over many channels).
    indent = 2 if sys.stdout.isatty() else None
    typer.echo(json.dumps(value, indent=indent, ensure_ascii=False))


# -- parser mistakes -----------------------------------------------------------------------


class Commands(TyperGroup):
    """The root command: a parser mistake (an unknown flag, a missing argument, a value that is
    not a number) is one line naming the command and the flag, instead of click's box."""

    def main(self, args: Any = None, *more: Any, standalone_mode: bool = True, **extra: Any) -> Any:
        extra.setdefault("prog_name", "autoretto")
        if not standalone_mode:
            return super().main(args, *more, standalone_mode=False, **extra)
        try:
            result = super().main(args, *more, standalone_mode=False, **extra)
        except click_errors.ClickException as error:
            if type(error).__name__ == "NoArgsIsHelpError":  # `autoretto episode`: help shown
                sys.exit(error.exit_code)
            words = list(sys.argv[1:] if args is None else args)
            typer.echo(parser_line(error, self.command_path_of(words)), err=True)
            sys.exit(error.exit_code)
        except typer.Abort:
            typer.echo("autoretto: stopped (no answer was given)", err=True)
            sys.exit(1)
        sys.exit(result if isinstance(result, int) else 0)

    def command_path_of(self, words: list[str]) -> str:
        """`autoretto episode add` for `episode add lofi --bad`: the commands named in `words`
        (for the errors that click raises without saying which command was parsing)."""
        path, command = ["autoretto"], self
        for word in words:
            if word.startswith("-"):
                continue
            found = getattr(command, "commands", {}).get(word)
            if found is None:
                break
            path.append(word)
            command = found
        return " ".join(path)


def parser_line(error: Exception, command: str = "autoretto") -> str:
    """One line for a click parser error: `autoretto make: --count: ...; see ...--help`."""
    context = getattr(error, "ctx", None)
    if context is not None:
        command = " ".join(["autoretto", *context.command_path.split()[1:]])
    message = _parser_message(error)
    return one_line(f"{command}: {message}; see `{command} --help`")


def _parameter_name(parameter: Any) -> str:
    if parameter is None:
        return "a value"
    if getattr(parameter, "param_type_name", "") == "argument":
        return (parameter.name or "value").upper()
    long_names = [name for name in parameter.opts if name.startswith("--")]
    return (long_names or parameter.opts)[0]


def _parser_message(error: Exception) -> str:
    if isinstance(error, click_errors.NoSuchOption):
        guesses = getattr(error, "possibilities", None) or ()
        hint = f" (did you mean {', '.join(sorted(guesses))}?)" if guesses else ""
        return f"no such option {error.option_name}{hint}"
    if isinstance(error, click_errors.MissingParameter):
        kind = error.param_type or getattr(error.param, "param_type_name", "option")
        return f"missing the {kind} {_parameter_name(error.param)}"
    if isinstance(error, click_errors.BadOptionUsage) and "requires an argument" in str(
        error.message
    ):
        return f"{error.option_name} needs a value"
    if isinstance(error, click_errors.BadParameter):
        text = _plain(str(error.message))
        not_a_number = re.fullmatch(r"'(.*)' is not a valid (int|float)\w*( range)?", text)
        if not_a_number:
            kind = "whole number" if not_a_number[2] == "int" else "number"
            text = f"{shown(not_a_number[1])} is not a {kind}"
        return f"{_parameter_name(error.param)}: {text}"
    found = re.fullmatch(r"No such command '(.*)'\.", str(getattr(error, "message", "")))
    if found:
        return f"no such command {shown(found[1])}"
    return _plain(error.format_message() if hasattr(error, "format_message") else str(error))


def _plain(text: str) -> str:
    """click's sentence as part of ours: first letter small, no final full stop."""
    text = text.strip().rstrip(".")
    return text[:1].lower() + text[1:]
