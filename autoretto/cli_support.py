"""What every command module shares: the error edge and `--json` output."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from .errors import AutorettoError

F = TypeVar("F", bound=Callable[..., Any])

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


def handled(function: F) -> F:
    """Turn AutorettoError into one plain line on stderr and the error's exit code."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except AutorettoError as error:
            typer.echo(f"autoretto: {error}", err=True)
            raise typer.Exit(error.exit_code) from None

    return wrapper  # type: ignore[return-value]


def print_json(value: Any) -> None:
    # Indented for a person at a terminal; compact for a script (and json's C encoder only
    # runs without indent, which matters for `status --json` over many channels).
    indent = 2 if sys.stdout.isatty() else None
    typer.echo(json.dumps(value, indent=indent, ensure_ascii=False))
