"""The page's calendar: a week or a month of each channel's slots, each with its episode.

A slot's state is the report's (report.channel_view: the words of `status` and `decisions`). Its
episode is the one its posts carry once it went out (or is on its way), and for a coming slot the
one the queue says it takes (engine/queue.py: the same choice as run-due). Read-only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..episodes import episode_json, list_episodes
from ..ledger.episodes import episodes_of_slots
from ..ledger.views import channels_by_name, ready_counts_by_kind
from ..report import STATES, channel_view

if TYPE_CHECKING:
    from ..config import Config
    from ..engine.queue import QueueEntry
    from ..ledger.store import Store as Database

VIEWS = ("week", "month")
#: coming slots the queue shows per channel
QUEUE_LENGTH = 10
#: the most coming slots looked up for one calendar (a month of six slots a day)
MOST_COMING = 200


@dataclass
class Card:
    """One slot in the calendar: its time, state, and the episode it posted or will post."""

    key: str
    wall: str  # HH:MM, local
    state: str
    words: str  # the state as `status` says it
    lines: list[str]  # why, line by line (the report's tooltip)
    episode: dict[str, Any] | None = None
    coming: bool = False


@dataclass
class Day:
    date: date
    today: bool
    in_range: bool  # False: a day of the month before or after, shown to fill its week
    cards: list[Card] = field(default_factory=list)


@dataclass
class ChannelCalendar:
    name: str
    timezone: str
    ready: int
    next_slot: str | None
    weeks: list[list[Day]]
    queue: list[QueueEntry]


def span(view: str, anchor: date) -> tuple[date, date]:
    """The first and last local date a `view` shows: a week is seven days from `anchor` (today
    first, what is coming next to it); a month is the weeks, Monday to Sunday, that hold the
    month of `anchor`."""
    if view == "week":
        return anchor, anchor + timedelta(days=6)
    start = anchor.replace(day=1)
    end = (start + timedelta(days=32)).replace(day=1) - timedelta(days=1)
    return start - timedelta(days=start.weekday()), end + timedelta(days=6 - end.weekday())


def moved(view: str, anchor: date, steps: int) -> date:
    """The anchor of the week or month `steps` before (negative) or after `anchor`."""
    if view == "week":
        return anchor + timedelta(days=7 * steps)
    month = anchor.year * 12 + anchor.month - 1 + steps
    return date(month // 12, month % 12 + 1, 1)


def calendars(
    config: Config, db: Database, now: datetime, *, view: str, day: date | None
) -> list[ChannelCalendar]:
    """Each cadence's calendar for the week or month around `day` (today in the channel's zone
    when None), with its queue of coming slots."""
    from ..engine.queue import coming_queue

    if view not in VIEWS:
        raise ValueError(view)
    known = channels_by_name(db)
    ready = ready_counts_by_kind(db)
    episodes = {e["id"]: _shown(e) for e in map(episode_json, list_episodes(db))}
    queues = coming_queue(config, db, now, count=MOST_COMING)
    found = []
    for channel in config.cadences:
        anchor = day or channel.schedule.local_date(now)
        first, last = span(view, anchor)
        calendar = channel_view(
            db, channel, known.get(channel.name), ready, now, 0, between=(first, last)
        )
        owner = getattr(channel, "episode_channel", channel.name)
        first_key, last_key = f"{first.isoformat()}T00:00", f"{last.isoformat()}T23:59"
        went = episodes_of_slots(db, owner, first_key, last_key)
        queue = queues.get(channel.name, [])
        coming = {entry.slot.key: entry for entry in queue}
        today = channel.schedule.local_date(now)
        weeks: list[list[Day]] = []
        for offset in range((last - first).days + 1):
            current = first + timedelta(days=offset)
            if not weeks or (view == "month" and current.weekday() == 0):
                weeks.append([])
            in_range = view == "week" or current.month == anchor.month
            shown = Day(current, current == today, in_range)
            for wall in calendar.times:
                cell = calendar.cells.get((current, wall))
                if cell is None:
                    continue
                entry = coming.get(cell.slot.key)
                episode_id = went.get(cell.slot.key)
                if episode_id is None and entry is not None and entry.episode is not None:
                    episode_id = entry.episode["id"]
                shown.cards.append(
                    Card(
                        cell.slot.key,
                        wall,
                        cell.state,
                        STATES.get(cell.state, cell.state),
                        cell.lines,
                        episodes.get(episode_id) if episode_id is not None else None,
                        coming=entry is not None,
                    )
                )
            weeks[-1].append(shown)
        next_slot = queue[0].slot.key.replace("T", " ") if queue else None
        found.append(
            ChannelCalendar(
                channel.name,
                channel.timezone,
                calendar.ready,
                next_slot,
                weeks,
                queue[:QUEUE_LENGTH],
            )
        )
    return found


def _shown(episode: dict[str, Any]) -> dict[str, Any]:
    """What a card shows of an episode."""
    return {
        "id": episode["id"],
        "title": episode["title"] or f"Episode {episode['id']}",
        "state": episode["state"],
        "thumbnail": bool(episode["thumbnail"]),
    }
