"""`autoretto store copy`: move the home's store into PostgreSQL, for more than one host."""

from __future__ import annotations

from typing import Annotated

import typer

from ..cli_support import JsonOption, command, group, print_json, say

SECTION = "The home"


def store_copy(
    to: Annotated[
        str,
        typer.Option(
            "--to",
            help="The empty PostgreSQL database to copy into: postgresql://USER:PASSWORD@HOST/DB",
            show_default=False,
        ),
    ],
    json_output: JsonOption = False,
) -> None:
    """Copy the home's SQLite store into an empty PostgreSQL database.

    Posting holds while it copies; every row goes across with its id, so the journal's
    numbering, the posts and the decisions carry over. The SQLite file is then marked as moved:
    a run that still points at it refuses to start. Then set [store] url in autoretto.toml (or
    AUTORETTO_DATABASE_URL) to the same URL.

    Example: autoretto store copy --to postgresql://autoretto:secret@db.lan/autoretto
    """
    from ..config import load_config
    from ..errors import UsageError
    from ..ledger.copy import copy_store
    from ..ledger.postgres import is_url
    from ..paths import Paths, home_dir
    from ..platforms import FIELDS

    if not is_url(to):
        raise UsageError(
            "store copy --to: give a PostgreSQL URL like postgresql://USER:PASSWORD@HOST/DB"
        )
    paths = Paths(home_dir())
    load_config(paths, platforms=FIELDS)  # a home whose config is wrong is not copied
    report = copy_store(paths.database, to)
    if json_output:
        print_json(report)
        return
    rows = sum(report["tables"].values())
    say(f"copied {rows} rows of {len(report['tables'])} tables to {report['to']}")
    say(
        f'now set [store] url = "{report["to"]}" in autoretto.toml (with its password) or '
        "AUTORETTO_DATABASE_URL; the SQLite file will not be posted from again"
    )


def register(app: typer.Typer) -> None:
    store_app = group(
        "store",
        help="Where the home's state lives: the SQLite file, or PostgreSQL for several hosts.",
        example="autoretto store copy --to postgresql://autoretto@db.lan/autoretto",
    )
    command(store_app, "copy", store_copy, SECTION)
    app.add_typer(store_app, name="store", rich_help_panel=SECTION)
