"""What every command module shares: the one `open_home()`, the error edge, ids, words, and
`--json` output.

Every mistake a person can make on the command line ends the same way: one line on stderr that
names the command and the flag (or the file and the field) and what would fix it, and an exit
code from the one table (`errors.Exit`): 2 for a mistake in what was typed or configured, 1 for
trouble a person must look at (a full disk, a damaged database), 3 while posting is held.
Anything else that escapes is a bug and keeps its traceback.

Nothing a command prints carries a control character raw: a title, a reason or a file name
with an escape sequence in it is shown escaped (`printable`), never sent to the terminal.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from typer.core import TyperGroup

from .errors import AutorettoError, Exit, environment_problem, one_line, shown

if TYPE_CHECKING:
    from .config import Config, Paths
    from .ledger.store import Store as Database

try:  # typer 0.28 carries its own copy of click; older typers use click itself
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_errors

F = TypeVar("F", bound=Callable[..., Any])

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
ChannelOption = Annotated[
    str | None, typer.Option("--channel", "-c", help="Only this channel.", show_default=False)
]
NowOption = Annotated[
    str | None,
    typer.Option(
        "--now",
        help="Act as if it were this time (ISO-8601, e.g. 2026-11-29T10:05:00Z).",
        show_default=False,
    ),
]

#: `-h` is `--help` everywhere (subcommands inherit their parent's help option names)
HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}


def group(name: str, *, help: str, example: str | None = None, **options: Any) -> typer.Typer:
    """A typer app: the root, or a group of commands such as `episode`. Its help is plain text
    (no rich markup: a `[platforms.x]` in a help text is shown as it is written), `-h` works
    as `--help`, and without a command it shows its help. `help` ends with its example, or
    `example` gives it."""
    options.setdefault("add_completion", False)
    options.setdefault("no_args_is_help", True)
    return typer.Typer(
        name=name,
        help=help_text(help) if example is None else with_example(help, example),
        rich_markup_mode=None,
        context_settings=HELP_OPTIONS,
        pretty_exceptions_enable=False,
        **options,
    )


def with_example(help: str, *examples: str) -> str:
    """`help` and its examples, on lines of their own in `--help` (click's \\b keeps them as
    they are written)."""
    heading = "Example:" if len(examples) == 1 else "Examples:"
    lines = "".join(f"\n  {example}" for example in examples)
    return f"{help.strip()}\n\n\b\n{heading}{lines}"


def help_text(docstring: str | None) -> str:
    """A command's `--help` from its docstring, which ends with `Example: autoretto ...` (or
    `Examples:` and one command a line): the text, then the examples set apart."""
    import inspect

    text = inspect.cleandoc(docstring or "")
    found = re.search(r"\bExamples?:", text)
    if found is None:
        return text
    body, tail = text[: found.start()], text[found.end() :]
    if found[0] == "Examples:":
        examples = [line.strip() for line in tail.strip().splitlines() if line.strip()]
    else:
        examples = [" ".join(tail.split())]
    return with_example(body, *examples)


#: the sections of `autoretto --help`, in the order their first command was added
SECTIONS: dict[str, None] = {}


def command(app: typer.Typer, name: str, function: Callable[..., Any], section: str) -> None:
    """Add `function` to `app` as the command `name`, under `section` in `autoretto --help`:
    its docstring is its help (the example set apart), its mistakes go through the error
    edge (`handled`)."""
    SECTIONS.setdefault(section)
    app.command(name, help=help_text(function.__doc__), rich_help_panel=section)(handled(function))


#: SQLite's largest integer: no row id can be larger.
LARGEST_ID = 2**63 - 1


@dataclass(frozen=True)
class Home:
    """The home a command works in: its paths, its config and its database."""

    paths: Paths
    config: Config
    db: Database


def open_home(*, now: str | None = None) -> Home:
    """The current home (AUTORETTO_HOME), its config loaded and checked and its database open.

    `now` (a command's `--now`) sets the one clock first; a clock out of range (AUTORETTO_NOW
    too) stops here, before anything is read or written."""
    from . import clock
    from .config import load_config
    from .ledger.store import open_database
    from .platforms import FIELDS

    clock.set_now(now)
    clock.now()
    config = load_config(platforms=FIELDS)
    return Home(config.paths, config, open_database(config.paths.database, url=config.store_url))


def check_channel(config: Config, name: str | None, *, cadences: bool = False) -> None:
    """A `--channel` that names no channel (with `cadences`: nor a films cadence such as
    `lofi/films`) is a mistake, said with the names there are, never an empty listing."""
    if name is None:
        return
    names = [c.name for c in (config.cadences if cadences else config.channels)]
    if name not in names:
        from .errors import NotFound

        raise NotFound(
            f"--channel: no channel {shown(name)} in {config.path} "
            f"(channels: {', '.join(names) or 'none'})"
        )


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
            fail(problem, Exit.NEEDS_PERSON)

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


# -- what is printed ------------------------------------------------------------------------


def printable(text: str) -> str:
    """`text` with every control character but the line break escaped (`\\x1b`, `\\r`): an
    escape sequence in a title is shown, never obeyed by the terminal."""
    return "\n".join(one_line(line) for line in str(text).split("\n"))


def say(text: str = "", *, err: bool = False) -> None:
    """Print one line (or a few) of a command's output, control characters escaped."""
    typer.echo(printable(text), err=err)


def count(number: int, word: str, plural: str | None = None) -> str:
    """`1 channel`, `2 channels`: a number and its noun, agreeing."""
    return f"{number} {word if number == 1 else plural or word + 's'}"


def nothing_found(what: str, hint: str = "") -> None:
    """The words for an empty listing (exit 0): `nothing found: no posts (...)`."""
    say(f"nothing found: {what}" + (f" ({hint})" if hint else ""))


#: The width of a console that is no terminal: wide enough that no table is ever cut.
PIPED_WIDTH = 100_000


def console(*, err: bool = False) -> Any:
    """A rich console for tables and coloured lines (no guessing of numbers and dates).

    Piped to another program or a file, rich would fit a table to 80 columns and cut its cells
    ("2026-12-08T0…"); there, each line is as wide as what it holds (COLUMNS, when set, wins).
    """
    from rich.console import Console

    stream = sys.stderr if err else sys.stdout
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        terminal = False
    width = None if terminal or os.environ.get("COLUMNS") else PIPED_WIDTH
    return Console(highlight=False, stderr=err, width=width)


class TerminalProgress:
    """What `run-due` and `make` are doing, on a terminal: a line on stderr per channel and
    stage, and a bar while an episode is made (engine.RunProgress). Under cron, where stderr
    is no terminal, there is none: a run prints only its summary."""

    @classmethod
    def when_watched(cls) -> TerminalProgress | None:
        return cls() if sys.stderr.isatty() else None

    def __init__(self) -> None:
        self.console = console(err=True)
        self.bar: Any = None
        self.task: Any = None
        self.channel: str | None = None

    def stage(self, channel: str, what: str) -> None:
        self._end_bar()
        self.console.print(f"{channel}: {what}", markup=False, style="dim")

    def making(self, channel: str, stage: str, fraction: float) -> None:
        if self.bar is None or self.channel != channel:
            from rich.progress import Progress

            self._end_bar()
            self.bar = Progress(console=self.console, transient=True)
            self.bar.start()
            self.task = self.bar.add_task(channel, total=1.0)
            self.channel = channel
        self.bar.update(self.task, completed=fraction, description=f"{channel}: {stage}")

    def _end_bar(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = self.task = self.channel = None

    def close(self) -> None:
        self._end_bar()


def plain_table(**options: Any) -> Any:
    """A rich Table whose text cells are shown as they are: a title like "[/x]" is text, not
    markup (which rich would refuse with an error), and a control character is escaped."""
    return _plain_table_class()(**options)


@functools.cache
def _plain_table_class() -> type:
    from rich.table import Table
    from rich.text import Text

    class PlainTable(Table):
        def add_row(self, *cells: Any, **options: Any) -> None:
            super().add_row(
                *(Text(printable(cell)) if isinstance(cell, str) else cell for cell in cells),
                **options,
            )

    return PlainTable


#: C1 controls and DEL, which json.dumps leaves as they are with ensure_ascii=False
_RAW_CONTROLS = re.compile("[\x7f-\x9f]")


def print_json(value: Any) -> None:
    # Indented for a person at a terminal; compact for a script (and json's C encoder only
    # runs without indent, which matters for `status --json` over many channels).
    indent = 2 if sys.stdout.isatty() else None
    text = json.dumps(value, indent=indent, ensure_ascii=False, check_circular=False)
    if "\x7f" in text or not text.isascii():  # else none is there (two fast looks)
        text = _RAW_CONTROLS.sub(lambda found: f"\\u{ord(found[0]):04x}", text)
    typer.echo(text)


# -- parser mistakes -----------------------------------------------------------------------


class Commands(TyperGroup):
    """The root command: a parser mistake (an unknown flag, a missing argument, a value that is
    not a number) is one line naming the command and the flag, instead of click's box; its help
    lists the commands under their concept (the job, episodes, repair ...)."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        sections: dict[str, list[tuple[str, Any]]] = {}
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                section = getattr(command, "rich_help_panel", None) or "Commands"
                sections.setdefault(section, []).append((name, command))
        if not sections:
            return
        order = list(SECTIONS)
        sections = dict(
            sorted(
                sections.items(),
                key=lambda item: order.index(item[0]) if item[0] in order else len(order),
            )
        )
        longest = max(len(name) for found in sections.values() for name, _ in found)
        for section, found in sections.items():
            rows = [
                (name, command.get_short_help_str(formatter.width - 6 - longest))
                for name, command in found
            ]
            with formatter.section(section):
                formatter.write_dl(rows)

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
            sys.exit(Exit.NEEDS_PERSON)
        sys.exit(result if isinstance(result, int) else Exit.DONE)

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
