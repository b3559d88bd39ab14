"""What goes out next: each channel's coming slots and the episode each platform takes on each.

A slot takes, per platform, the first episode in line that the platform has not had and can take
(`episodes.next_episode_for`, which `run_due.choose` calls). The queue reads the same line
(`episodes.in_line_for`, with each platform's own `unsuitable_reason`), so the k-th coming slot
shows the k-th episode each platform can take: what run-due will post if nothing changes
meanwhile (a new episode made, an approval, a hold, a move). Read-only: no run row, no claim.

The order of the line is the episodes' ids (oldest first) unless `episode move` or `episode
swap` (editing.py) gave an episode another place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..episodes import episode_view, in_line_for
from ..ledger import claims
from ..ledger.views import channels_by_name
from ..slots import Slot, take
from .run import Run, cadences
from .run_due import due_of

if TYPE_CHECKING:
    from ..config import ChannelConfig, Config
    from ..ledger.store import Store as Database

#: coming slots shown per channel, unless asked otherwise
COMING = 10


@dataclass
class QueueEntry:
    """One coming slot of a channel: per platform, the episode it takes (None: none) and why
    none."""

    slot: Slot
    episodes: dict[str, dict | None] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    due: bool = False  # the slot's time has come: the next run posts it

    @property
    def episode(self) -> dict | None:
        """The episode the slot's first platform that takes one takes (usually all of them)."""
        return next((found for found in self.episodes.values() if found), None)

    @property
    def alike(self) -> bool:
        """Whether every platform takes the same episode on this slot."""
        return len({(found or {}).get("id") for found in self.episodes.values()}) <= 1

    def json(self) -> dict[str, Any]:
        return {
            "slot": self.slot.key,
            "at": self.slot.at_text,
            "due": self.due,
            "episode_id": (self.episode or {}).get("id"),
            "platforms": {
                name: {
                    "episode_id": (found or {}).get("id"),
                    "reason": self.reasons.get(name, ""),
                }
                for name, found in self.episodes.items()
            },
        }


def coming_queue(
    config: Config,
    db: Database,
    now: datetime,
    *,
    count: int = COMING,
    only_channel: str | None = None,
) -> dict[str, list[QueueEntry]]:
    """Each cadence's (channel's, and its films') next `count` slots as of `now`, each with the
    episode each of its platforms takes, by cadence name."""
    run = Run(config, db, "queue", record=False, make=False, now=now)
    known = channels_by_name(db)
    return {
        channel.name: _channel_queue(run, channel, known.get(channel.name), now, count)
        for channel in cadences(config, only_channel)
    }


def _channel_queue(
    run: Run, channel: ChannelConfig, channel_row: dict | None, now: datetime, count: int
) -> list[QueueEntry]:
    db = run.db
    platforms = run.platforms_for(channel)
    slots: list[tuple[Slot, bool]] = []
    due = due_of(db, channel, channel_row, now).due
    if due is not None and not any(
        claims.is_decided(db, channel.name, due.key, name) for name in platforms
    ):
        slots.append((due, True))
    slots += [(slot, False) for slot in take(channel.schedule.walk_forward(now), count)]
    slots = slots[:count]
    entries = [QueueEntry(slot, due=is_due) for slot, is_due in slots]
    for name in platforms:
        platform = run.platform(name)
        if not platform.is_connected():
            for entry in entries:
                entry.episodes[name] = None
                entry.reasons[name] = f"not connected: run `autoretto connect {name}`"
            continue
        line = [
            candidate
            for candidate, refusal in in_line_for(
                db,
                channel,
                name,
                unsuitable=lambda episode, taker=platform: taker.unsuitable_reason(
                    episode_view(episode)
                ),
            )
            if refusal is None
        ]
        for index, entry in enumerate(entries):
            found = line[index] if index < len(line) else None
            entry.episodes[name] = found
            if found is None:
                entry.reasons[name] = (
                    "nothing approved yet: approve a ready episode"
                    if channel.approval
                    else "nothing ready yet: one is made when it is due"
                    if channel.produces
                    else "nothing ready yet: make or import an episode"
                )
    return entries
