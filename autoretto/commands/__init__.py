"""The commands of `autoretto`, one module per concept; `register(app)` adds them all, in the
order `autoretto --help` lists their sections."""

from __future__ import annotations

import typer

from . import (
    accounts,
    by_hand,
    episodes,
    inbox,
    insight,
    job,
    page,
    repair,
    replies,
    setup,
    store,
)


def register(app: typer.Typer) -> None:
    concepts = (job, episodes, repair, accounts, by_hand, insight, inbox, replies, page, setup)
    for concept in (*concepts, store):
        concept.register(app)
