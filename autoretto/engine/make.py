"""`make`: episodes made now with a channel's pipeline, in a run of their own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..config import Config
from .run import Run, RunProgress

if TYPE_CHECKING:
    from ..ledger.store import Store as Database


def make_episodes(
    config: Config,
    db: Database,
    channel_name: str,
    *,
    count: int = 1,
    progress: RunProgress | None = None,
) -> Iterator[dict]:
    """Make `count` episodes for the channel, one after the other (an interrupted make of the
    channel is resumed first), yielding each episode's row as it is done, `ready` or
    `rejected`. Raises AutorettoError when the pipeline cannot go on (NotFound for a channel
    that is not in the config); PostingHeld while posting is held."""
    from ..produce import make_for_channel

    channel = config.channel(channel_name)
    with Run(config, db, "make", progress=progress) as run:
        for number in range(count):
            run.stage(channel.name, f"making episode {number + 1} of {count}")
            yield make_for_channel(
                config,
                db,
                channel,
                run_id=run.id,
                now=run.now,
                progress=run.making(channel.name),
            )
