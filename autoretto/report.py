"""`autoretto report`: one self-contained HTML page of what went out, when, where, how it did,
and what comes next.

The page has no server, no script and no external asset (inline CSS and SVG), so it opens from
disk, from a mail attachment or a file share the same. From the top:

1. what needs a person: posting held after a restore, platforms that cannot post (health.py:
   not connected, failing slot after slot) with the command that fixes each, open incidents,
   posts that need a person or may be live, accounts to reconnect, stocks that cover fewer than
   three coming slots (or a line saying nothing does);
2. per channel (and films cadence) a calendar of the last and next N days (whole days in the
   channel's zone): one cell per slot, named in the words of `status` and `decisions`
   (ledger.claims.SlotState: a slot that went out on a platform is posted, whatever its other
   platforms had), its tooltip saying why per platform; beside it, the list of what went wrong
   (each platform's decision that was not a post, each slot missed), each linked to its cell;
3. per channel its releases of the last N days: the platform links of each, its latest
   counters (`autoretto stats collect`) and a views sparkline.

`gather` reads everything from the database in a few queries per channel; `render` writes the
page. Read-only.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any

from .clock import from_iso, iso
from .decisions import OLD_OUTCOMES, slot_state
from .ledger import views as ledger
from .ledger.accounts import accounts_to_reconnect
from .ledger.claims import SlotState
from .slots import Slot, due_rule

if TYPE_CHECKING:
    from pathlib import Path

    from .config import ChannelConfig, Config
    from .ledger.store import Store as Database

#: states that only some slots have: shown in the legend when present
_RARE = (SlotState.UNSEEN, SlotState.EMPTY)
#: how a slot's state is named (the words of `status` and `decisions`), in the legend's order
STATES: dict[str, str] = {state: state.words for state in SlotState if state not in _RARE}
#: states that only some slots have: shown in the legend when present
EXTRA_STATES: dict[str, str] = {
    **{state: state.words for state in _RARE},
    "other": "other",
}
#: the states of a platform or a slot where nothing went wrong (so far)
WENT_WELL = (
    SlotState.POSTED,
    SlotState.WAITING,
    SlotState.DUE,
    SlotState.FUTURE,
    SlotState.UNSEEN,
)
SPARK_POINTS = 24
LINK_SCHEMES = ("https://", "http://")


@dataclass
class Cell:
    slot: Slot
    state: str
    lines: list[str]  # the tooltip, line by line
    wrong: list[str] = field(default_factory=list)  # what went wrong, a line per platform


@dataclass
class Release:
    episode_id: int
    title: str
    published_at: str
    links: list[tuple[str, str | None]]  # (platform, url)
    counters: dict[str, int | None]
    views_24h: int | None
    series: list[int]


@dataclass
class ChannelView:
    name: str
    timezone: str
    times: list[str]  # HH:MM rows of the calendar
    dates: list[date]  # columns
    cells: dict[tuple[date, str], Cell]
    counts: dict[str, int]
    next_slot: Cell | None
    ready: int
    releases: list[Release] = field(default_factory=list)
    #: when the stock of ready episodes and unused tracks runs out (health.Stock.runs_out);
    #: None for a films cadence
    runs_out: str | None = None


@dataclass
class Attention:
    level: str  # stop | warn
    text: str


@dataclass
class ReportData:
    now: datetime
    days: int
    attention: list[Attention]
    channels: list[ChannelView]
    collected_at: datetime | None


# -- gathering --------------------------------------------------------------------------------


def gather(config: Config, db: Database, now: datetime, *, days: int) -> ReportData:
    """Everything the page shows, read from the database as of `now`."""
    from .stats import last_collected

    known = ledger.channels_by_name(db)
    ready = ledger.ready_counts_by_kind(db)
    # A channel's films cadence (`[channels.films]`) has slots of its own: its own calendar.
    cadences = getattr(config, "cadences", config.channels)
    channels = [
        channel_view(db, cadence, known.get(cadence.name), ready, now, days) for cadence in cadences
    ]
    by_name = {view.name: view for view in channels}
    for channel in config.channels:
        by_name[channel.name].releases = _releases(db, channel.name, now, days)
    from .health import stock_forecast
    from .platforms.notices import platform_warnings

    stocks = stock_forecast(config, db, now)
    for stock in stocks:
        by_name[stock.channel].runs_out = stock.runs_out
    attention = (
        _attention(config, db, now)
        + [Attention("warn", f"Stock low: {s.line}") for s in stocks if s.low]
        + [Attention("warn", w["reason"]) for w in platform_warnings(config, db, now)]
    )
    return ReportData(now, days, attention, channels, last_collected(db))


def _attention(config: Config, db: Database, now: datetime) -> list[Attention]:
    from .health import platform_trouble
    from .journal import restore_hold
    from .ledger.runs import list_incidents

    found = []
    hold = restore_hold(db, config.journal)
    if hold is not None:
        found.append(Attention("stop", f"Posting is held: {hold.reason}"))
    # A refused account is named below, with the accounts to reconnect.
    found += [
        Attention("stop", trouble.line)
        for trouble in platform_trouble(config, db, now)
        if trouble.kind != "refused"
    ]
    for incident in list_incidents(db, open_only=True):
        found.append(
            Attention(
                "stop",
                f"Incident {incident['id']} open since {incident['opened_at']} "
                f"({incident['failures']} failures): {incident['reason']}",
            )
        )
    for post in ledger.posts_needing_person_titled(db):
        what = "may be live" if post["state"] == "may_be_live" else "needs a person"
        hint = (
            f"`autoretto look {post['id']}` or `autoretto confirm {post['id']}`"
            if post["state"] == "may_be_live"
            else f"see `autoretto posts --state {post['state']}`"
        )
        found.append(
            Attention(
                "warn",
                f"Post {post['id']} ({post['channel']}, {post['platform']}, "
                f"“{post['title']}”) {what}: {post['reason'] or 'no reason recorded'}; {hint}",
            )
        )
    for account in accounts_to_reconnect(db):
        found.append(
            Attention(
                "warn",
                f"{account['platform']} account {account['name'] or account['label']} must be "
                f"reconnected: {account['reason'] or 'refused'}; fix: "
                f"`{_connect_command(account['platform'])}`",
            )
        )
    return found


def _connect_command(platform: str) -> str:
    from .platforms import REGISTRY

    arguments = getattr(REGISTRY[platform], "connect_arguments", "") if platform in REGISTRY else ""
    return f"autoretto connect {platform}{arguments}"


def channel_view(
    db: Database,
    channel: ChannelConfig,
    channel_row: dict[str, Any] | None,
    ready_counts: dict[tuple[str, str], int],
    now: datetime,
    days: int,
    *,
    between: tuple[date, date] | None = None,
) -> ChannelView:
    """The channel's calendar of the last and next `days` days, or of the local dates
    `between` (first, last) when given (the page's week and month)."""
    schedule = channel.schedule
    # Whole days in the channel's zone, so that the first and the last column hold every slot
    # of their day.
    first, last = between or (
        schedule.local_date(now - timedelta(days=days)),
        schedule.local_date(now + timedelta(days=days)),
    )
    start = datetime.combine(first, time(0), schedule.zone)
    end = datetime.combine(last + timedelta(days=1), time(0), schedule.zone) - timedelta(
        microseconds=1
    )
    slots = schedule.slots_between(start, end)
    owner = getattr(channel, "episode_channel", channel.name)
    ready = ready_counts.get((owner, getattr(channel, "kind", "episode")), 0)
    decided: dict[str, list[dict[str, Any]]] = {}
    recorded: dict[str, str] = {}
    paced: dict[str, list[dict[str, Any]]] = {}
    waiting: dict[str, list[dict[str, Any]]] = {}
    if slots:
        first_key, last_key = slots[0].key, slots[-1].key
        for decision in ledger.decisions_between(db, channel.name, first_key, last_key):
            decided.setdefault(decision["slot"], []).append(decision)
        recorded = ledger.slot_states_between(db, channel.name, iso(start), iso(end))
        for post in ledger.paced_posts_between(db, owner, first_key, last_key):
            paced.setdefault(post["slot"], []).append(post)
        for wait in ledger.waits_between(db, channel.name, first_key, last_key):
            waiting.setdefault(wait["slot"], []).append(wait)

    seen_at = from_iso(channel_row["schedule_seen_at"]) if channel_row else now
    if channel_row and channel_row["schedule_fingerprint"] != channel.schedule_fingerprint:
        seen_at = now  # the next run sees the edited schedule as new
    stamps = (channel_row or {}).get("last_release_at"), (channel_row or {}).get("decided_through")
    marks = [m for m in stamps if m]
    due = due_rule(
        schedule,
        window=channel.catch_up_window,
        now=now,
        seen_at=seen_at,
        decided_through=from_iso(max(marks)) if marks else None,
        missed_limit=len(slots) + 1,
    )
    missed_now = {s.key for s in due.missed}
    cells: dict[tuple[date, str], Cell] = {}
    counts: dict[str, int] = {}
    next_slot = None
    for slot in slots:
        cell = _cell(
            channel,
            slot,
            now,
            decided.get(slot.key, []),
            recorded.get(slot.key),
            paced.get(slot.key, []),
            waiting.get(slot.key, []),
            due=due.due is not None and due.due.key == slot.key,
            missed=slot.key in missed_now,
            seen_at=seen_at,
            ready=ready,
        )
        day, _, wall = slot.key.partition("T")
        cells[(date.fromisoformat(day), wall)] = cell
        counts[cell.state] = counts.get(cell.state, 0) + 1
        if next_slot is None and slot.at > now:
            next_slot = cell
    dates = [first + timedelta(days=n) for n in range((last - first).days + 1)]
    times = sorted({wall for _, wall in cells} | {t.strftime("%H:%M") for t in schedule.times})
    return ChannelView(
        channel.name, channel.timezone, times, dates, cells, counts, next_slot, ready
    )


def _cell(
    channel: ChannelConfig,
    slot: Slot,
    now: datetime,
    decisions: list[dict[str, Any]],
    recorded: str | None,
    paced: list[dict[str, Any]],
    waits: list[dict[str, Any]],
    *,
    due: bool,
    missed: bool,
    seen_at: datetime,
    ready: int,
) -> Cell:
    local = slot.at.astimezone(channel.schedule.zone)
    lines = [f"{channel.name} · {local:%a %d %b %Y, %H:%M} {channel.timezone} ({slot.at_text})"]
    outcomes = []
    wrong = []
    for decision in decisions:
        outcome = OLD_OUTCOMES.get(decision["outcome"], decision["outcome"])
        if decision["post_state"] == "published":
            outcome = SlotState.POSTED  # it went out since (`confirm`, `look`, a later try)
        post = f" (post {decision['post_id']})" if decision["post_id"] else ""
        label = STATES.get(outcome, outcome)
        line = f"{decision['platform']}: {label}{post} - {decision['reason'] or ''}".rstrip(" -")
        lines.append(line)
        if outcome not in WENT_WELL:
            wrong.append(line)
        outcomes.append(outcome if outcome in STATES else "other")
    for wait in waits:
        lines.append(f"{wait['platform']}: waiting - {wait['reason']}")
    for post in paced:
        lines.append(
            f"{post['platform']}: post {post['id']} goes out at {post['not_before']} "
            "(a human pace after the slot)"
        )
        outcomes.append(SlotState.DUE)
    state = slot_state(outcomes, waiting=bool(waits))
    if state is not None:
        return Cell(slot, state, lines, wrong)
    if slot.at > now:
        lines.append(f"future: in {_span(slot.at - now)}")
        lines.append(
            f"{ready} ready episode{'s' if ready != 1 else ''} waiting"
            if ready
            else (
                "nothing ready yet: one is made when it is due"
                if channel.produces
                else "nothing ready yet: make or import an episode"
            )
        )
        return Cell(slot, SlotState.FUTURE, lines)
    stored = SlotState.from_stored(recorded)
    if stored is SlotState.DUE:  # a run claimed it
        return Cell(slot, SlotState.DUE, [*lines, "due: a run is serving it now"])
    if due:
        return Cell(slot, SlotState.DUE, [*lines, "due: the next run-due posts it"])
    if missed:
        late = now - slot.at
        why = (
            f"found {_span(late)} after its time, outside the catch-up window"
            if late > channel.catch_up_window
            else "a later slot came first; only the most recent slot is filled"
        )
        why = f"missed: {why} (recorded by the next run)"
        return Cell(slot, SlotState.MISSED, [*lines, why], [why])
    if slot.at < seen_at:
        return Cell(
            slot,
            SlotState.UNSEEN,
            [*lines, f"before Autoretto saw this schedule ({iso(seen_at)})"],
        )
    if stored is not None:
        why = f"{stored.words} (no decision per platform kept)"
        return Cell(slot, stored, [*lines, why], [] if stored in WENT_WELL else [why])
    why = "no decision recorded for this slot"
    return Cell(slot, "other", [*lines, why], [why])


def _span(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    days, rest = divmod(minutes, 1440)
    hours, minutes = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min"


def _releases(db: Database, channel: str, now: datetime, days: int) -> list[Release]:
    from .stats import COUNTERS, SPANS, _latest, views_series

    since = now - timedelta(days=days)
    posts = ledger.releases_between(db, channel, iso(since), iso(now))
    if not posts:
        return []
    ids = [p["id"] for p in posts]
    latest = _latest(db, now, ids)
    day_before = _latest(db, now - SPANS["24h"], ids)
    # A release's sparkline runs from its first post to now (its posts share the instants).
    first: dict[int, datetime] = {}
    for post in posts:
        published = from_iso(post["published_at"])
        first[post["episode_id"]] = min(first.get(post["episode_id"], published), published)
    series = views_series(
        db,
        {post["id"]: first[post["episode_id"]] for post in posts},
        until=now,
        points=SPARK_POINTS,
    )
    releases: dict[int, Release] = {}
    for post in posts:
        release = releases.get(post["episode_id"])
        if release is None:
            release = releases[post["episode_id"]] = Release(
                post["episode_id"],
                post["title"] or f"episode {post['episode_id']}",
                post["published_at"],
                [],
                dict.fromkeys(COUNTERS),
                None,
                [],
            )
        release.published_at = min(release.published_at, post["published_at"])
        release.links.append((post["platform"], post["url"]))
        reading = latest.get(post["id"])
        if reading is not None:
            for name in COUNTERS:
                if reading[name] is not None:
                    release.counters[name] = (release.counters[name] or 0) + reading[name]
            if reading["views"] is not None:
                before = day_before.get(post["id"])
                published = from_iso(post["published_at"])
                if before is not None or published >= now - SPANS["24h"]:
                    base = (before or {}).get("views") or 0
                    release.views_24h = (release.views_24h or 0) + reading["views"] - base
        points = series.get(post["id"])
        if points:
            release.series = (
                [a + b for a, b in zip(release.series, points, strict=True)]
                if release.series
                else list(points)
            )
    return sorted(releases.values(), key=lambda r: r.published_at, reverse=True)


# -- the page ---------------------------------------------------------------------------------


def render(config: Config, db: Database, now: datetime, *, days: int = 7) -> str:
    """The report as one self-contained HTML page (a string)."""
    return page(gather(config, db, now, days=days))


def write_report(config: Config, db: Database, now: datetime, *, days: int, target: Path) -> Path:
    """Write the report to `target` whole (a browser open on the old page never sees half a
    page) and return its absolute path; a folder that cannot be written is a UsageError."""
    from .errors import UsageError

    text = render(config, db, now, days=days)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.tmp")
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(target)
    except OSError as error:
        raise UsageError(f"{target}: cannot write the report ({error.strerror})") from None
    return target.absolute()


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def page(data: ReportData) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Autoretto · {_e(iso(data.now))}</title>",
        f"<style>{CSS}</style></head><body>",
        "<header><h1>Autoretto</h1>",
        f'<p class="sub">Report of {_e(_when(data.now))} UTC · the last and next '
        f"{data.days} day{'s' if data.days != 1 else ''}"
        + (
            f" · counters read {_e(_when(data.collected_at))} UTC"
            if data.collected_at
            else " · no counters read yet (<code>autoretto stats collect</code>)"
        )
        + "</p></header><main>",
        _attention_html(data.attention),
        _overview_html(data),
        _legend_html(data.channels),
    ]
    for view in data.channels:
        parts.append(_channel_html(view, data))
    parts.append(
        "</main><footer>Made by <code>autoretto report</code>. Beside each calendar, what went "
        "wrong; hover a slot for what became of it on every platform."
    )
    parts.append("</footer></body></html>")
    return "\n".join(parts)


def _when(moment: datetime) -> str:
    return moment.strftime("%a %d %b %Y, %H:%M")


def _attention_html(items: list[Attention]) -> str:
    if not items:
        return (
            '<section id="attention" class="attention ok"><h2>Needs a person</h2>'
            "<p>Nothing needs you: no hold, no open incident, no post or account waiting for "
            "a person, every platform can post, every stock covers three slots.</p></section>"
        )
    entries = "".join(f'<li class="{item.level}">{_e(item.text)}</li>' for item in items)
    return (
        f'<section id="attention" class="attention"><h2>Needs a person ({len(items)})</h2>'
        f"<ul>{entries}</ul></section>"
    )


def _overview_html(data: ReportData) -> str:
    cards = []
    for view in data.channels:
        posted = view.counts.get("posted", 0)
        trouble = sum(view.counts.get(s, 0) for s in ("failed", "refused_by_limit", "missed"))
        upcoming = (
            f"next {_e(view.next_slot.slot.key.replace('T', ' '))}"
            if view.next_slot
            else "no slot ahead"
        )
        cards.append(
            f'<a class="card" href="#ch-{_e(_anchor(view.name))}"><b>{_e(view.name)}</b>'
            f"<span>{posted} posted · {trouble} missed or failed</span>"
            f"<span>{upcoming} · {view.ready} ready</span>"
            + (f"<span>runs out {_e(view.runs_out)}</span>" if view.runs_out else "")
            + "</a>"
        )
    return f'<nav class="cards">{"".join(cards)}</nav>'


def _legend_html(views: list[ChannelView]) -> str:
    present = {state for view in views for state in view.counts}
    shown = dict(STATES) | {k: v for k, v in EXTRA_STATES.items() if k in present}
    swatches = "".join(
        f'<span class="key"><i class="s-{state}"></i>{_e(label)}</span>'
        for state, label in shown.items()
    )
    return f'<div class="legend">{swatches}</div>'


def _anchor(name: str) -> str:
    return "".join(c if c.isalnum() or c == "-" else "-" for c in name)


def _channel_html(view: ChannelView, data: ReportData) -> str:
    today = data.now.astimezone(_zone(view.timezone)).date()
    columns = len(view.dates)
    head = ['<div class="corner"></div>']
    for day in view.dates:
        classes = ["day"]
        if day == today:
            classes.append("today")
        if day.weekday() >= 5:
            classes.append("weekend")
        month = f"<em>{day:%b}</em>" if day.day == 1 or day == view.dates[0] else "<em></em>"
        head.append(
            f'<div class="{" ".join(classes)}" title="{day:%A %d %B %Y}">{month}'
            f"<span>{day.strftime('%a')[:2]}</span><b>{day.day}</b></div>"
        )
    body = []
    for wall in view.times:
        body.append(f'<div class="time">{_e(wall)}</div>')
        for day in view.dates:
            cell = view.cells.get((day, wall))
            today_class = " today" if day == today else ""
            if cell is None:
                body.append(f'<div class="none{today_class}"></div>')
                continue
            body.append(
                f'<div class="slot s-{cell.state}{today_class}" id="{_cell_id(view, cell)}"'
                f' data-slot="{_e(cell.slot.key)}" data-state="{cell.state}"'
                f' title="{_e(chr(10).join(cell.lines))}"></div>'
            )
    counts = " · ".join(
        f'<span class="count"><i class="s-{state}"></i>{view.counts[state]} '
        f"{_e(STATES.get(state) or EXTRA_STATES.get(state, state))}</span>"
        for state in [*STATES, *EXTRA_STATES]
        if view.counts.get(state)
    )
    return (
        f'<section class="channel" id="ch-{_e(_anchor(view.name))}" data-channel="{_e(view.name)}">'
        f"<h2>{_e(view.name)} <small>{_e(view.timezone)}</small></h2>"
        f'<p class="counts">{counts or "no slot in these days"}</p>'
        f'<div class="board"><div class="calendar" style="grid-template-columns: 3.4em '
        f'repeat({columns}, minmax(12px, 1fr))">{"".join(head)}{"".join(body)}</div>'
        + _wrong_html(view)
        + "</div>"
        + _releases_html(view)
        + "</section>"
    )


def _cell_id(view: ChannelView, cell: Cell) -> str:
    return f"slot-{_anchor(view.name)}-{_anchor(cell.slot.key)}"


def _wrong_html(view: ChannelView) -> str:
    """What went wrong in these days, newest first, each line linked to its cell."""
    found = sorted(
        (cell for cell in view.cells.values() if cell.wrong),
        key=lambda cell: cell.slot.at,
        reverse=True,
    )
    if not found:
        return '<aside class="wrong"><h3>What went wrong</h3><p>Nothing in these days.</p></aside>'
    entries = []
    for cell in found:
        when = cell.slot.at.astimezone(_zone(view.timezone))
        reasons = "".join(f"<li>{_e(line)}</li>" for line in cell.wrong)
        entries.append(
            f'<li data-wrong="{_e(cell.slot.key)}"><a href="#{_cell_id(view, cell)}">'
            f'<i class="s-{cell.state}"></i>{when:%a %d %b, %H:%M}</a>'
            f" <span>{_e(STATES.get(cell.state) or EXTRA_STATES.get(cell.state, cell.state))}"
            f"</span><ul>{reasons}</ul></li>"
        )
    return (
        f'<aside class="wrong"><h3>What went wrong ({len(found)} '
        f"slot{'s' if len(found) != 1 else ''})</h3><ol>{''.join(entries)}</ol></aside>"
    )


def _zone(name: str) -> Any:
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)


def _releases_html(view: ChannelView) -> str:
    if not view.releases:
        return '<p class="quiet">No release in these days.</p>'
    rows_html = []
    for release in view.releases:
        links = " ".join(_link(platform, url) for platform, url in release.links)
        counters = release.counters
        talk = None
        if counters["comments"] is not None or counters["replies"] is not None:
            talk = (counters["comments"] or 0) + (counters["replies"] or 0)
        change = (
            f'<small class="up">+{release.views_24h:,}</small>'
            if release.views_24h
            else "<small></small>"
        )
        rows_html.append(
            f"<tr><td class='when'>{_e(release.published_at[:16].replace('T', ' '))}</td>"
            f"<td class='title'>{_e(release.title)}</td><td class='links'>{links}</td>"
            f"<td class='num'>{_number(counters['views'])}{change}</td>"
            f"<td class='num'>{_number(counters['likes'])}</td>"
            f"<td class='num'>{_number(talk)}</td>"
            f"<td class='num'>{_number(counters['reposts'])}</td>"
            f"<td>{sparkline(release.series)}</td></tr>"
        )
    return (
        '<table class="releases"><thead><tr><th>published (UTC)</th><th>release</th>'
        "<th>on</th><th class='num'>views</th><th class='num'>likes</th>"
        "<th class='num'>comments</th><th class='num'>reposts</th>"
        f"<th>views since out</th></tr></thead><tbody>{''.join(rows_html)}"
        "</tbody></table>"
    )


def _link(platform: str, url: str | None) -> str:
    if url and url.startswith(LINK_SCHEMES):
        return f'<a class="chip p-{_e(platform)}" href="{_e(url)}">{_e(platform)}</a>'
    return f'<span class="chip p-{_e(platform)}">{_e(platform)}</span>'


def _number(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def sparkline(values: list[int], *, width: int = 120, height: int = 28) -> str:
    """A small inline SVG line of `values` (empty when there are fewer than two)."""
    if len(values) < 2:
        return '<span class="quiet">–</span>'
    low, high = min(values), max(values)
    spread = (high - low) or 1
    step = (width - 4) / (len(values) - 1)
    points = [
        (2 + n * step, height - 3 - (value - low) / spread * (height - 6))
        for n, value in enumerate(values)
    ]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    area = f"2,{height - 1} {line} {points[-1][0]:.1f},{height - 1}"
    last_x, last_y = points[-1]
    return (
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}"'
        f' role="img" aria-label="views from {low:,} to {values[-1]:,}">'
        f'<polygon points="{area}"/><polyline points="{line}"/>'
        f'<circle cx="{last_x:.1f}" cy="{last_y:.1f}" r="2.2"/></svg>'
    )


CSS = """
:root{--ink:#1c2024;--muted:#60646c;--line:#e0e1e6;--bg:#f9f9fb;--card:#fff;
--posted:#30a46c;--failed:#e5484d;--refused_by_limit:#f76b15;--missed:#8b8d98;
--waiting:#0090ff;--waiting_for_approval:#8e4ec6;--nothing_ready:#ffc53d;--due:#12a594;
--dry_run:#7c93c7;
--future:#fff;--unseen:#f0f0f3;--other:#c1c8cd}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
header{padding:22px 32px 10px;background:#111827;color:#f3f4f6}
header h1{margin:0;font-size:22px;letter-spacing:.02em}
header .sub{margin:4px 0 10px;color:#c7cbd1}
header code{color:#fff}
main{padding:18px 32px 32px;max-width:1500px}
h2{font-size:17px;margin:0 0 8px}
h2 small{font-weight:400;color:var(--muted);font-size:13px;margin-left:6px}
section{background:var(--card);border:1px solid var(--line);border-radius:10px;
padding:16px 18px;margin:0 0 18px}
.attention{border-left:6px solid var(--failed)}
.attention.ok{border-left-color:var(--posted)}
.attention ul{margin:0;padding-left:18px}
.attention li{margin:3px 0}
.attention li.stop{color:#b3262b;font-weight:600}
.attention li.warn{color:#8a4a00}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:0 0 14px}
.card{display:flex;flex-direction:column;min-width:210px;padding:10px 14px;background:var(--card);
border:1px solid var(--line);border-radius:10px;color:inherit;text-decoration:none}
.card:hover{border-color:#8da4ef}
.card span{color:var(--muted);font-size:12.5px}
.legend{display:flex;flex-wrap:wrap;gap:6px 16px;margin:0 0 14px;color:var(--muted)}
.key,.count{display:inline-flex;align-items:center;gap:6px;white-space:nowrap}
.key i,.count i{display:inline-block;width:13px;height:13px;border-radius:3px;
border:1px solid rgba(0,0,0,.12)}
.counts{margin:0 0 10px;color:var(--muted);font-size:13px}
.board{display:grid;grid-template-columns:minmax(0,1fr) minmax(16em,24em);gap:18px;
align-items:start}
.calendar{display:grid;gap:3px;align-items:stretch;overflow-x:auto;padding-bottom:4px}
.wrong{font-size:12.5px;max-height:26em;overflow-y:auto}
.wrong h3{font-size:13px;margin:0 0 6px}
.wrong p{margin:0;color:var(--muted)}
.wrong ol{margin:0;padding:0;list-style:none}
.wrong ol>li{margin:0 0 6px}
.wrong a{color:inherit;font-weight:600;text-decoration:none;display:inline-flex;
align-items:center;gap:6px;font-variant-numeric:tabular-nums}
.wrong a:hover{text-decoration:underline}
.wrong a i{display:inline-block;width:11px;height:11px;border-radius:3px}
.wrong span{color:var(--muted)}
.wrong ul{margin:1px 0 0 17px;padding:0;color:var(--muted);list-style:none}
.calendar .slot:target{outline:3px solid #111827;outline-offset:1px}
.calendar .day{font-size:10.5px;color:var(--muted);text-align:center;line-height:1.15;
padding:2px 0;border-radius:4px}
.calendar .day em{display:block;font-style:normal;font-weight:600;color:var(--ink);height:12px}
.calendar .day span{display:block}
.calendar .day b{display:block;font-size:12px;color:var(--ink)}
.calendar .day.weekend{background:#f2f2f5}
.calendar .day.today{background:#111827;color:#fff}
.calendar .day.today b,.calendar .day.today em{color:#fff}
.calendar .time{font-size:11.5px;color:var(--muted);text-align:right;padding-right:6px;
align-self:center;font-variant-numeric:tabular-nums}
.calendar .slot,.calendar .none{height:22px;border-radius:4px}
.calendar .slot{border:1px solid rgba(0,0,0,.08);cursor:help}
.calendar .slot:hover{outline:2px solid #111827;outline-offset:1px}
.calendar .none{background:transparent}
.calendar .today.none{background:#eef0ff}
.s-posted{background:var(--posted)}
.s-failed{background:var(--failed)}
.s-refused_by_limit{background:var(--refused_by_limit)}
.s-missed{background:var(--missed)}
.s-waiting{background:var(--waiting)}
.s-dry_run{background:var(--dry_run)}
.s-waiting_for_approval{background:var(--waiting_for_approval)}
.s-nothing_ready{background:var(--nothing_ready)}
.s-due{background:var(--due);box-shadow:inset 0 0 0 2px #0b5e55}
.s-future{background:var(--future);border:1px dashed #b9bbc6!important}
.s-unseen{background:var(--unseen);background-image:repeating-linear-gradient(45deg,
transparent 0 3px,#dcdce3 3px 4px)}
.s-other{background:var(--other)}
.releases{width:100%;border-collapse:collapse;margin-top:14px;font-size:13px}
.releases th.num{text-align:right}
.releases th{text-align:left;font-weight:600;color:var(--muted);border-bottom:1px solid var(--line);
padding:6px 8px;font-size:12px}
.releases td{padding:6px 8px;border-bottom:1px solid #f0f0f3;vertical-align:middle}
.releases td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.releases td.num small{display:block;font-size:11px;color:var(--posted)}
.releases td.when{white-space:nowrap;color:var(--muted);font-variant-numeric:tabular-nums}
.releases td.title{font-weight:500}
.chip{display:inline-block;padding:1px 8px;margin:1px 2px;border-radius:999px;font-size:12px;
background:#eef0f3;color:#1c2024;text-decoration:none;border:1px solid #dfe1e6}
a.chip:hover{background:#e1e8ff}
.chip.p-youtube{background:#ffe9e9;border-color:#fbc6c6}
.chip.p-bluesky{background:#e6f1ff;border-color:#bcd8ff}
.chip.p-threads{background:#efeff1;border-color:#d3d4d9}
.spark polyline{fill:none;stroke:#3e63dd;stroke-width:1.6;stroke-linejoin:round}
.spark polygon{fill:#3e63dd;opacity:.12}
.spark circle{fill:#3e63dd}
.quiet{color:var(--muted)}
footer{padding:0 32px 28px;color:var(--muted);font-size:12px}
"""
