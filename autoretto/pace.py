"""Human pace: when an automated write goes out, so that none of them looks like a bot's.

Pure functions of (config, state, now, seed): no I/O, no clock reads, no global randomness.
Every draw is hash-seeded from the installation's own seed and what it is for (a slot and a
platform, a post-now, the background reads), so a re-run computes the very same moment, and
no two installations share a pattern.

The rules (issue 7):

- a Bluesky post goes out at a random moment between a few minutes and under an hour after its
  slot, never within a few minutes of the account's posting minute the day before, and at
  least 25 minutes from the account's other posts (`slot_moment`, `bluesky_moment`);
- `post-now` goes out 20 s to 2 min after the command (`post_now_moment`);
- language twins (channels marked as twins of a family channel, sharing its slot time) post 7
  to 29 minutes after its minute (`twin_moment`);
- background reads run at a minute of the hour of the installation's own, never :00
  (`read_minute`, `next_read_at`);
- no draw falls outside the slot's catch-up window: when no moment fits every rule, the
  answer is None and the post waits for a later slot;
- `suggest_times` offers an off-the-hour time for each slot time on the hour (`config check`);
- replies to comments go out in sessions, as a person answers (issue 28): per platform account
  and local day 2 to 4 sessions between 09:00 and 22:00, at least 2 hours apart, each of 2 to 5
  replies with a pause of 20 s to 4 min after each, and never at the same minute of the hour as
  a session of the day before (`reply_sessions`, `reply_pause`).

How the engine uses it: `slot_moment` gives a post's `not_before`; `run-due` sends the posts
whose `not_before` has come (`is_due`) and, unless `--no-wait`, waits in-process for those due
before the next cron tick (`wait_for`), so an hourly cron still meets a moment 37 minutes after
the slot.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo


def _kept_on_time(platform: str) -> bool:
    return False


@dataclass(frozen=True)
class PaceConfig:
    """The pacing rules and the installation's own seed.

    `seed` is drawn once per installation and kept (the engine keeps it in the `meta` table);
    `twins` maps a twin channel to its family channel; `cron_interval` is how often cron runs
    `run-due` (config `cron_interval`, default 1h).
    """

    seed: int
    twins: Mapping[str, str] = field(default_factory=dict)
    cron_interval: timedelta = timedelta(hours=1)
    #: is a platform's slot post drawn a human moment after the slot (`Platform.paced`)? The
    #: others keep the creator's own time.
    paced: Callable[[str], bool] = _kept_on_time
    # Bluesky: between a few minutes and under an hour after the slot
    earliest_after_slot: timedelta = timedelta(minutes=4)
    latest_after_slot: timedelta = timedelta(minutes=57)
    # never within this of the account's posting minute the day before
    day_before_gap: timedelta = timedelta(minutes=5)
    # at least this far from the account's other posts
    other_posts_gap: timedelta = timedelta(minutes=25)
    # post-now
    post_now_earliest: timedelta = timedelta(seconds=20)
    post_now_latest: timedelta = timedelta(minutes=2)
    # language twins: this much after the family channel's minute
    twin_earliest: timedelta = timedelta(minutes=7)
    twin_latest: timedelta = timedelta(minutes=29)
    # replies (issue 28): sessions a day, their hours (local), their sizes, the pause after each
    reply_sessions: tuple[int, int] = (2, 4)
    reply_day: tuple[int, int] = (9, 22)  # sessions start from 09:00 and before 22:00
    reply_session_gap: timedelta = timedelta(hours=2)
    reply_session_size: tuple[int, int] = (2, 5)
    reply_pause_earliest: timedelta = timedelta(seconds=20)
    reply_pause_latest: timedelta = timedelta(minutes=4)


@dataclass(frozen=True)
class SlotJob:
    """One post of one slot: what its moment is drawn for."""

    channel: str
    platform: str
    slot_key: str  # the local wall-time key, e.g. 2026-11-29T10:00
    slot_at: datetime  # the slot instant (UTC, aware)
    window: timedelta  # the channel's catch-up window


@dataclass(frozen=True)
class AccountState:
    """What the account on that platform already did or will do, as moments (UTC, aware).

    `day_before`: its posting moments of the day before the slot (20–28 hours earlier is
    enough); `others`: its other posts near the slot, published or already given a moment
    (the post being drawn for excluded).
    """

    day_before: tuple[datetime, ...] = ()
    others: tuple[datetime, ...] = ()


# -- draws --------------------------------------------------------------------------------


def draw(seed: int, *purpose: object) -> random.Random:
    """A random generator fixed by the installation's seed and what the draw is for."""
    text = "\x1f".join([str(seed), *(str(part) for part in purpose)])
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


def _seconds(span: timedelta) -> int:
    return int(span.total_seconds())


# -- slot moments ---------------------------------------------------------------------------


def slot_moment(config: PaceConfig, job: SlotJob, state: AccountState) -> datetime | None:
    """The moment (`not_before`) of a slot's post on one platform.

    Given the rules, the job and the account's other moments; returns the slot instant itself
    for a platform that keeps the creator's time, the twin moment for a language twin, a drawn
    Bluesky moment for Bluesky; None when no moment inside the catch-up window fits every rule
    (the post then waits for a later slot).
    """
    if config.paced(job.platform):
        return bluesky_moment(config, job, state)
    if job.channel in config.twins:
        return twin_moment(config, job)
    return job.slot_at


def _fits(moment: datetime, config: PaceConfig, state: AccountState) -> bool:
    yesterday = moment - timedelta(days=1)
    if any(abs(yesterday - earlier) < config.day_before_gap for earlier in state.day_before):
        return False
    return all(abs(moment - other) >= config.other_posts_gap for other in state.others)


def bluesky_moment(config: PaceConfig, job: SlotJob, state: AccountState) -> datetime | None:
    """A random moment a few minutes to under an hour after the slot, inside the window.

    Given the rules, the job (slot, platform, window) and the account's moments; returns a
    whole-second UTC instant that is ≥ `earliest_after_slot` and ≤ `latest_after_slot` after
    the slot, no later than the end of the catch-up window, never within `day_before_gap` of
    the account's moment a day earlier, and at least `other_posts_gap` from its other posts.
    The same inputs always give the same moment; None when nothing fits.
    """
    low = _seconds(config.earliest_after_slot)
    high = min(_seconds(config.latest_after_slot), _seconds(job.window))
    if high < low:
        return None
    generator = draw(config.seed, "slot", job.channel, job.slot_key, job.platform)
    # A first draw is almost always free; when it is not, try the whole range in a
    # drawn order so that a free second is found whenever one exists.
    for _ in range(32):
        moment = job.slot_at + timedelta(seconds=generator.randint(low, high))
        if _fits(moment, config, state):
            return moment
    return _first_free(job.slot_at, low, high, generator, config, state)


def _first_free(
    start: datetime,
    low: int,
    high: int,
    generator: random.Random,
    config: PaceConfig,
    state: AccountState,
) -> datetime | None:
    # Every forbidden stretch is at least minutes long, so free stretches start at a range end
    # or at the edge of a forbidden stretch: checking those (and each minute) finds one if any.
    edges = {low, high, *range(low, high + 1, 60)}
    blockers = [(o, config.other_posts_gap) for o in state.others] + [
        (d + timedelta(days=1), config.day_before_gap) for d in state.day_before
    ]
    for center, gap in blockers:
        for edge in (center - gap, center + gap):
            offset = _seconds(edge - start)
            for candidate in (offset - 1, offset, offset + 1):
                if low <= candidate <= high:
                    edges.add(candidate)
    candidates = sorted(edges)
    generator.shuffle(candidates)
    for offset in candidates:
        moment = start + timedelta(seconds=offset)
        if _fits(moment, config, state):
            return moment
    return None


def twin_moment(config: PaceConfig, job: SlotJob) -> datetime | None:
    """A language twin's moment: 7 to 29 minutes after the family channel's slot minute.

    Given the rules and the twin's job (its slot shares the family's time); returns the slot
    instant plus a drawn offset, the same for every platform of that slot (a release goes out
    together), or None when the catch-up window is shorter than the earliest offset.
    """
    low = _seconds(config.twin_earliest)
    high = min(_seconds(config.twin_latest), _seconds(job.window))
    if high < low:
        return None
    family = config.twins.get(job.channel, "")
    generator = draw(config.seed, "twin", job.channel, family, job.slot_key)
    return job.slot_at + timedelta(seconds=generator.randint(low, high))


# -- carousels (issue 29) ---------------------------------------------------------------------

#: a carousel goes out this long after its release's video, drawn in between
CAROUSEL_EARLIEST = timedelta(hours=2)
CAROUSEL_LATEST = timedelta(hours=8)
#: and never within this of the slot's own minute of the hour
CAROUSEL_SLOT_MINUTE_GAP = 5


def carousel_moment(
    config: PaceConfig,
    *,
    channel: str,
    platform: str,
    episode_id: int,
    released_at: datetime,
    slot_at: datetime,
    state: AccountState,
) -> datetime | None:
    """When a release's carousel goes to `platform`: a drawn moment 2 to 8 hours after its video
    went out (`released_at`), never within `CAROUSEL_SLOT_MINUTE_GAP` minutes of the slot's
    minute of the hour (`slot_at`), and at least `other_posts_gap` from the account's other
    posts (`state.others`). The same inputs always give the same moment; None when nothing
    fits (every minute of the span is taken)."""
    low, high = _seconds(CAROUSEL_EARLIEST), _seconds(CAROUSEL_LATEST)
    generator = draw(config.seed, "carousel", channel, platform, episode_id)

    def fits(moment: datetime) -> bool:
        apart = abs(moment.minute - slot_at.minute)
        if min(apart, 60 - apart) < CAROUSEL_SLOT_MINUTE_GAP:
            return False
        return all(abs(moment - other) >= config.other_posts_gap for other in state.others)

    start = released_at.replace(microsecond=0)
    for _ in range(64):
        moment = start + timedelta(seconds=generator.randint(low, high))
        if fits(moment):
            return moment
    offsets = list(range(low, high + 1, 60))
    generator.shuffle(offsets)
    return next(
        (start + timedelta(seconds=o) for o in offsets if fits(start + timedelta(seconds=o))), None
    )


# -- post-now -------------------------------------------------------------------------------


def post_now_moment(config: PaceConfig, command_at: datetime, key: str) -> datetime:
    """When a `post-now` goes out: 20 s to 2 min after the command, not on the second.

    Given the rules, the command's instant and a key unique to that command (its run id);
    returns a whole-second instant in [command_at + 20 s, command_at + 2 min].
    """
    generator = draw(config.seed, "post-now", key)
    span = generator.randint(_seconds(config.post_now_earliest), _seconds(config.post_now_latest))
    return command_at + timedelta(seconds=span)


# -- run-due: what to send now, what to wait for ------------------------------------------


def is_due(not_before: datetime | None, now: datetime) -> bool:
    """Has a post's moment come? (A post without a moment is due at once.)"""
    return not_before is None or not_before <= now


def wait_for(
    config: PaceConfig, moments: Iterable[datetime | None], run_started: datetime, now: datetime
) -> list[datetime]:
    """The moments a `run-due` should wait for in-process, earliest first.

    Given the rules, the pending posts' `not_before`, the instant the run started (the cron
    tick) and now; returns those still ahead of now that fall before the next cron tick
    (`run_started + cron_interval`). A moment at or after the next tick is left to that run.
    """
    next_tick = run_started + config.cron_interval
    return sorted(m for m in moments if m is not None and now < m < next_tick)


# -- background reads -----------------------------------------------------------------------


def read_minute(seed: int) -> int:
    """The installation's own minute of the hour for background reads: 1 to 59, never :00."""
    return draw(seed, "reads").randint(1, 59)


def next_read_at(seed: int, now: datetime) -> datetime:
    """The first instant at or after `now` whose minute is the installation's read minute."""
    minute = read_minute(seed)
    moment = now.astimezone(UTC).replace(minute=minute, second=0, microsecond=0)
    if moment < now:
        moment += timedelta(hours=1)
    return moment


# -- config check ----------------------------------------------------------------------------


def suggest_times(slots: Sequence[str], seed: int = 0) -> dict[str, str]:
    """Off-the-hour suggestions for slot times on the hour, for `config check`.

    Given the slot times as written ("10:00"); returns {"10:00": "10:07", ...} for each time on
    the hour (same hour, minute 3 to 13, never a multiple of 5), and nothing for the others.
    """
    suggestions: dict[str, str] = {}
    used: set[str] = set(slots)
    for text in slots:
        hour, _, minute = text.partition(":")
        if minute != "00":
            continue
        choices = [m for m in range(3, 14) if m % 5 and f"{hour}:{m:02d}" not in used]
        if not choices:
            continue
        chosen = f"{hour}:{draw(seed, 'suggest', text).choice(choices):02d}"
        suggestions[text] = chosen
        used.add(chosen)
    return suggestions


# -- reply sessions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ReplySession:
    """One session of replies of one platform account: from `start` until `end` (the next
    session's start, or the end of the local day), at most `size` replies (UTC, aware)."""

    start: datetime
    end: datetime
    size: int


def reply_sessions(
    config: PaceConfig, platform: str, account: str, day: date, zone: tzinfo
) -> list[ReplySession]:
    """The reply sessions of (platform, account) on the local `day` in `zone`, in order.

    Given the rules and the seed; returns 2 to 4 sessions (`reply_sessions`) starting between
    09:00 and 22:00 local time, each at least `reply_session_gap` after the one before, each of
    2 to 5 replies. A day's session minutes are all odd or all even, the parity of the day
    (date.toordinal), so no session falls at the same minute of the hour as one of the day
    before. The same inputs always give the same sessions."""
    generator = draw(config.seed, "reply-sessions", platform, account, day.isoformat())
    count = generator.randint(*config.reply_sessions)
    first, last = config.reply_day
    # Whole hours at least gap + 1 apart, so a drawn minute (0-59) keeps the sessions at least
    # `reply_session_gap` apart whatever it is.
    step = int(config.reply_session_gap.total_seconds() // 3600) + 1
    slack = max(0, (last - 1 - first) - (count - 1) * step)
    offsets = sorted(generator.randint(0, slack) for _ in range(count))
    parity = day.toordinal() % 2
    starts = []
    for index, offset in enumerate(offsets):
        hour = first + offset + index * step
        minute = 2 * generator.randint(0, 29) + parity
        local = datetime.combine(day, time(hour, minute), tzinfo=zone)
        starts.append(local.astimezone(UTC))
    day_end = datetime.combine(day + timedelta(days=1), time(0), tzinfo=zone).astimezone(UTC)
    ends = [*starts[1:], day_end]
    return [
        ReplySession(start, end, generator.randint(*config.reply_session_size))
        for start, end in zip(starts, ends, strict=True)
    ]


def reply_pause(
    config: PaceConfig, platform: str, account: str, session: ReplySession, done: int
) -> timedelta:
    """The pause after the `done`-th reply of `session` (1 for the first): 20 s to 4 min,
    whole seconds, drawn for that very reply of that session."""
    return reply_pause_draw(config, platform, account, session.start.isoformat(), done)


def reply_pause_draw(
    config: PaceConfig, platform: str, account: str, key: str, done: int
) -> timedelta:
    """A pause of 20 s to 4 min after reply `done` of the session `key` (a session's start, or
    the run id of a person's own session)."""
    generator = draw(config.seed, "reply-pause", platform, account, key, done)
    low, high = _seconds(config.reply_pause_earliest), _seconds(config.reply_pause_latest)
    return timedelta(seconds=generator.randint(low, high))


def session_size(config: PaceConfig, platform: str, account: str, key: str) -> int:
    """How many replies a person's own session (`autoretto replies send`, `key` its run id)
    sends at most: 2 to 5, as a drawn session."""
    return draw(config.seed, "reply-session-size", platform, account, key).randint(
        *config.reply_session_size
    )
