"""What cannot go on by itself: platforms that cannot post, and stocks about to run out.

`platform_trouble` names, per channel and platform, why that platform cannot post (its account
is not connected, the platform refused it, or its last slots all failed) with the one command
that fixes it. `stock_forecast` counts, per channel, what its coming slots can take: ready
episodes no platform has had, plus the tracks of its folder source not used yet, and says after
which slot (in the channel's own time) the stock runs out. Both are read-only and cheap: a few
statements whatever the number of channels, and a folder source is counted by listing its
folder (no audio file is opened). `config check`, `doctor`, `status`, the report, the page and
the notifier (`tell_trouble`, once per new trouble) all show these same answers.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .ledger import meta
from .ledger import views as ledger
from .ledger.episodes import unposted_ready_counts

if TYPE_CHECKING:
    from .config import ChannelConfig, Config
    from .ledger.store import Store as Database
    from .slots import Slot

#: a platform whose latest decided slots of a channel all failed, this many of them, is trouble
FAILED_SLOTS = 3
#: fewer coming slots than this covered by the stock is a warning
SLOTS_TO_COVER = 3
#: the coming slots walked at most to say when a stock runs out (a bigger stock is "plenty")
FORECAST_HORIZON = 1000
#: the notifier's memory (`meta`): a key for each trouble it has told, so each is told once
TOLD_PREFIX = "told:trouble:"
# The audio files the folder source takes (pipeline/audio.py AUDIO_EXTENSIONS; not imported,
# so that `status` loads no part of the pipeline).
TRACK_EXTENSIONS = (".mp3", ".wav", ".flac", ".m4a", ".ogg", ".opus", ".aif", ".aiff")
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_COMMAND = re.compile(r"`(autoretto [^`]+)`")


@dataclass(frozen=True)
class Trouble:
    """A platform of a channel that cannot post: `kind` is not_connected, refused (the
    platform refused the account: a person must connect it again) or failing (its last
    `failed_slots` slots failed, the first at `since`), or whose comments cannot be read
    (`comments`: the permission `comment_scope` was refused; `autoretto inbox collect` found
    it); `fix` is the command that fixes it."""

    channel: str
    platform: str
    kind: str
    reason: str
    fix: str
    failed_slots: int = 0
    since: str | None = None

    @property
    def key(self) -> str:
        return f"platform:{self.kind}:{self.channel}:{self.platform}"

    @property
    def line(self) -> str:
        """One line for a person: what, why, and the command."""
        if self.kind == "failing":
            what = f"{self.platform} failed its last {self.failed_slots} slots (since {self.since})"
        elif self.kind == "comments":
            what = f"{self.platform} cannot read its comments"
        else:
            what = f"{self.platform} cannot post"
        return f"{self.channel}: {what}: {self.reason}; fix: `{self.fix}`"

    def to_json(self) -> dict[str, Any]:
        return {
            "channel": self.channel,
            "platform": self.platform,
            "kind": self.kind,
            "reason": self.reason,
            "fix": self.fix,
            "failed_slots": self.failed_slots,
            "since": self.since,
            "line": self.line,
        }


@dataclass(frozen=True)
class Stock:
    """What a channel's coming slots can take: `ready` episodes no platform has had and
    `tracks` (its folder source's unused tracks; None: no folder source), so `covered` slots
    (None: no end, a source that makes its own tracks such as the synthesiser or Suno);
    `runs_out_after` is the last covered slot, `next_slot` the first coming one (None: the
    schedule has no coming slot)."""

    channel: str
    timezone: str
    ready: int
    tracks: int | None
    covered: int | None
    runs_out_after: Slot | None
    next_slot: Slot | None
    fix: str

    @property
    def key(self) -> str:
        return f"stock:{self.channel}"

    @property
    def low(self) -> bool:
        """Fewer than SLOTS_TO_COVER coming slots have something to post."""
        return (
            self.covered is not None
            and self.covered < SLOTS_TO_COVER
            and self.next_slot is not None
        )

    @property
    def runs_out(self) -> str:
        """When the stock runs out, in words: "after the slot of Tue 8 Dec 19:00", "before the
        next slot (Mon 7 Dec 13:00)", "never (…)", "not within 1000 slots"."""
        if self.covered is None:
            return "never (its audio source makes new tracks)"
        if self.next_slot is None:
            return "no coming slot"
        if self.runs_out_after is None:
            return (
                f"before the next slot ({slot_words(self.next_slot)})"
                if self.covered == 0
                else f"not within {FORECAST_HORIZON} slots"
            )
        return f"after the slot of {slot_words(self.runs_out_after)}"

    @property
    def line(self) -> str:
        """One line for a person: the stock, when it runs out, and (when low) what to do."""
        tracks = "" if self.tracks is None else f" + {_count(self.tracks, 'unused track')}"
        text = f"{self.channel}: {self.ready} ready{tracks}; runs out {self.runs_out}"
        return f"{text}: {self.fix}" if self.low else text

    def to_json(self) -> dict[str, Any]:
        def slot(found: Slot | None) -> dict[str, str] | None:
            if found is None:
                return None
            return {"slot": found.key, "slot_at": found.at_text, "shown": slot_words(found)}

        return {
            "channel": self.channel,
            "timezone": self.timezone,
            "ready": self.ready,
            "unused_tracks": self.tracks,
            "slots_covered": self.covered,
            "runs_out_after": slot(self.runs_out_after),
            "next_slot": slot(self.next_slot),
            "low": self.low,
            "fix": self.fix if self.low else None,
            "line": self.line,
        }


def slot_words(slot: Slot) -> str:
    """A slot as a person reads it, in its channel's own time: "Tue 8 Dec 19:00"."""
    local = datetime.strptime(slot.key[:16], "%Y-%m-%dT%H:%M")
    # English names whatever the process's locale (strftime's %a and %b follow it).
    return f"{DAYS[local.weekday()]} {local.day} {MONTHS[local.month - 1]} {local:%H:%M}"


def _count(number: int, word: str) -> str:
    return f"{number} {word}" if number == 1 else f"{number} {word}s"


# -- platforms -------------------------------------------------------------------------------


def platform_trouble(config: Config, db: Database, now: datetime) -> list[Trouble]:
    """Every (channel, platform) that cannot post at `now`, at most one each: not connected,
    refused, or failing (its decisions of the channel's latest FAILED_SLOTS decided slots all
    failed, the newest after the account was last connected). A channel with no `platforms`
    list posts to its connected platforms: only a failing one of those can be trouble.

    Only the channels' last few slots are read (one range of the decisions' index each, in
    one statement), never their whole history."""
    from .accounts import DEFAULT_LABEL, list_accounts
    from .platforms import REGISTRY

    accounts = {a.platform: a for a in list_accounts(db) if a.label == DEFAULT_LABEL}
    failing = _failing(config, db, now)
    found = []
    for cadence in config.cadences:
        names = cadence.platforms
        if names is None:
            names = tuple(p for (c, p) in failing if c == cadence.name)
        for name in names:
            if name not in REGISTRY:
                continue
            cls = REGISTRY[name]
            connect = f"autoretto connect {name}{getattr(cls, 'connect_arguments', '')}"
            account = accounts.get(name) if cls.needs_account else None
            if cls.needs_account and account is None:
                reason = f"{cls.title} is not connected"
                found.append(Trouble(cadence.name, name, "not_connected", reason, connect))
                continue
            if account is not None and account.state != "connected":
                reason = account.reason or f"{cls.title} refused the sign-in"
                found.append(Trouble(cadence.name, name, "refused", reason, connect))
                continue
            failed = failing.get((cadence.name, name))
            if failed is None:
                continue
            if account is not None and account.connected_at > failed[-1]["decided_at"]:
                continue  # connected again since its last failure: the next slot will tell
            reason = failed[-1]["reason"] or "no reason recorded"
            named = _COMMAND.search(reason)
            fix = named[1] if named else f"autoretto decisions --channel {cadence.episode_channel}"
            since = failed[0]["slot_at"]
            found.append(Trouble(cadence.name, name, "failing", reason, fix, len(failed), since))
    return found + _comment_trouble(config, db)


def _comment_trouble(config: Config, db: Database) -> list[Trouble]:
    """Per channel that posts to it, each platform whose comments `inbox collect` could not
    read for a refused permission (comments.TROUBLE_PREFIX), until a read succeeds again."""
    from .comments import comment_troubles

    found = []
    for name, facts in comment_troubles(db).items():
        for channel in config.channels:
            if channel.platforms is None or name in channel.platforms:
                reason = str(facts.get("reason") or "the platform refused reading comments")
                scope = facts.get("scope")
                if scope:
                    reason += f" (reading comments needs {scope})"
                fix = str(facts.get("fix") or f"autoretto connect {name}")
                found.append(Trouble(channel.name, name, "comments", reason, fix))
    return found


def _failing(config: Config, db: Database, now: datetime) -> dict[tuple[str, str], list[dict]]:
    """(cadence, platform) -> its failed decisions, oldest first, when the platform's
    decisions of the cadence's latest FAILED_SLOTS decided slots all failed. The slot just
    past may wait for its run: one slot more than FAILED_SLOTS is looked at."""
    from .slots import take

    # Channels that share a schedule share its last slots: walked once each.
    walked = {
        schedule: take(schedule.walk_back(now), FAILED_SLOTS + 1)
        for schedule in {cadence.schedule for cadence in config.cadences}
    }
    spans = {}
    for cadence in config.cadences:
        slots = walked[cadence.schedule]
        if slots:
            spans[cadence.name] = (slots[-1].key, slots[0].key)  # newest first
    by_pair: dict[tuple[str, str], list[dict]] = {}
    for decision in ledger.recent_decisions(db, spans) if spans else []:
        by_pair.setdefault((decision["channel"], decision["platform"]), []).append(decision)
    failing = {}
    for pair, decided in by_pair.items():
        latest = sorted(decided, key=lambda d: d["slot_at"])[-FAILED_SLOTS:]
        if len(latest) == FAILED_SLOTS and all(d["outcome"] == "failed" for d in latest):
            failing[pair] = latest
    return failing


def home_trouble(config: Config, now: datetime) -> list[Trouble]:
    """`platform_trouble` of the home's store, for `config check`: none while the home has no
    database yet (`init` makes it) or when it cannot be opened (`doctor` says why)."""
    from .errors import StoreError
    from .ledger.store import open_database, store_url

    url = store_url(config.store_url)
    if url is None and not config.paths.database.exists():
        return []
    try:
        db = open_database(config.paths.database, create=False, url=url)
    except StoreError:
        return []
    try:
        return platform_trouble(config, db, now)
    finally:
        db.conn.close()


# -- stock -----------------------------------------------------------------------------------


def stock_forecast(
    config: Config, db: Database, now: datetime, *, only_channel: str | None = None
) -> list[Stock]:
    """Each channel's stock against its coming slots (its films cadence is left out: films
    are the creator's own, one by one). One read for the ready counts, one for the tracks used
    by the channels with a folder source, and one listing of each such folder."""
    channels = [c for c in config.channels if only_channel in (None, c.name)]
    ready = unposted_ready_counts(db)
    folders = {c.name: Path(c.pipeline.folder) for c in channels if _from_folder(c)}
    used = ledger.episode_tracks(db, sorted(folders)) if folders else {}
    coming: dict[Any, list[Slot]] = {}
    found = []
    for channel in channels:
        stocked = ready.get(channel.name, 0)
        tracks: int | None = None
        covered: int | None = None  # a source that makes its own tracks: no end
        fix = ""
        if channel.name in folders:
            tracks = _unused_tracks(folders[channel.name], used.get(channel.name, set()))
            covered = stocked + tracks
            fix = f"add tracks to {folders[channel.name]}"
        elif not channel.produces:  # fed by `episode add` alone
            covered = stocked
            fix = f"add episodes with `autoretto episode add {channel.name} FILE`"
        wanted = min(covered or 1, FORECAST_HORIZON)
        walked = coming.get(channel.schedule, [])
        if len(walked) < wanted:  # channels that share a schedule walk it once
            walked = coming[channel.schedule] = list(
                islice(channel.schedule.walk_forward(now), wanted)
            )
        last = None
        if covered and covered <= FORECAST_HORIZON and len(walked) >= covered:
            last = walked[covered - 1]
        found.append(
            Stock(
                channel=channel.name,
                timezone=channel.timezone,
                ready=stocked,
                tracks=tracks,
                covered=covered,
                runs_out_after=last,
                next_slot=walked[0] if walked else None,
                fix=fix,
            )
        )
    return found


def _from_folder(channel: ChannelConfig) -> bool:
    return channel.produces and getattr(channel.pipeline, "audio", None) == "folder"


def _unused_tracks(folder: Path, used: set[str]) -> int:
    """The tracks in `folder` that no episode took, counted from the folder's listing alone
    (pipeline/audio.py pick_folder_track takes them: the same files, the same resolved
    paths). A folder that is not there has none."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    base = folder.resolve()
    unused = 0
    for entry in entries:
        if entry.name.startswith(".") or not entry.name.lower().endswith(TRACK_EXTENSIONS):
            continue
        if not entry.is_file():
            continue
        # Only a link costs a resolve: a plain file's resolved path is the folder's and its name.
        path = Path(entry.path).resolve() if entry.is_symlink() else base / entry.name
        if str(path) not in used:
            unused += 1
    return unused


# -- the notifier ----------------------------------------------------------------------------


def tell_trouble(
    config: Config,
    db: Database,
    now: datetime,
    tell: Callable[..., None],
    notes: list[str],
) -> None:
    """Tell the notifier each new trouble once (`platform_trouble` as event `platform_trouble`,
    a low stock as `stock_low`), and add its line to the run's notes when told. What was told
    is remembered in `meta`; a trouble that went away is forgotten, so it is told again if it
    comes back."""
    current: dict[str, tuple[str, dict[str, Any]]] = {
        trouble.key: ("platform_trouble", trouble.to_json())
        for trouble in platform_trouble(config, db, now)
        if trouble.kind != "comments"  # told by `inbox collect` itself (comments_reconnect)
    }
    for stock in stock_forecast(config, db, now):
        if stock.low:
            current[stock.key] = ("stock_low", stock.to_json())
    told = set(meta.starting_with(db, TOLD_PREFIX))
    for key, (event, facts) in current.items():
        if TOLD_PREFIX + key in told:
            continue
        tell(event, **facts)
        notes.append(facts["line"])
        meta.put(db, TOLD_PREFIX + key, 1)
    for key in told - {TOLD_PREFIX + key for key in current}:
        meta.forget(db, key)
