"""Everything the page reads or does, through the library functions the CLI calls.

The page never writes SQL and never moves a post itself: approve and hold are
`episodes.set_approval`, Post now is `engine.post_now` (its pace, its guards, the restore hold),
the live / not-live answers are `engine.confirm_post`, a look is `engine.look_post`, resume is
`engine.resume`, and what it shows comes from `report.gather`, `engine.status`,
`engine.journal_report`, the incidents, the accounts and the limits, as `autoretto report`,
`status`, `journal`, `incidents`, `accounts` and `limits` show them. The engine is imported in
this one place.

Each function opens its own connection (a request runs on a thread of its own; SQLite
connections stay in their thread) and closes it before returning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from .. import clock
from ..engine.post_now import post_now
from ..engine.restore import confirm_post, journal_report, look_post, resume
from ..engine.status import status
from ..episodes import episode_json, get_episode, list_episodes, set_approval
from ..errors import UsageError
from ..ledger.store import open_database
from ..posts import list_posts, post_json

if TYPE_CHECKING:
    from ..config import Config
    from ..engine.post_now import PostNowResult
    from ..ledger.store import Store as Database

LINK_SCHEMES = ("https://", "http://")


@contextmanager
def database(config: Config) -> Iterator[Database]:
    db = open_database(config.paths.database, url=config.store_url)
    try:
        yield db
    finally:
        db.conn.close()


# -- reading ----------------------------------------------------------------------------------


def overview(
    config: Config, *, days: int, view: str = "week", day: date | None = None
) -> dict[str, Any]:
    """What needs a person and the releases (`autoretto report`'s report.gather), each channel's
    week or month around `day` with its queue (calendar.py), and the episodes, newest first."""
    from ..report import gather
    from .calendar import calendars, moved

    now = clock.now()
    with database(config) as db:
        data = gather(config, db, now, days=days)
        shown = calendars(config, db, now, view=view, day=day)
        episodes = [episode_json(e) for e in list_episodes(db)]
        published = {p["episode_id"] for p in list_posts(db, state="published")}
    episodes.reverse()
    for episode in episodes:
        episode["published"] = episode["id"] in published
    anchor = day or (config.cadences[0].schedule.local_date(now) if config.cadences else now.date())
    return {
        "report": data,
        "releases": {channel.name: channel.releases for channel in data.channels},
        "calendars": shown,
        "view": view,
        "anchor": anchor,
        "earlier": moved(view, anchor, -1),
        "later": moved(view, anchor, 1),
        "episodes": episodes[:60],
    }


def episode_page(config: Config, episode_id: int) -> dict[str, Any]:
    """One episode as `autoretto episode show --json` has it, its posts with where to look,
    and whether its channel asks for approval."""
    from ..translate import translations_of

    with database(config) as db:
        episode = episode_json(get_episode(db, episode_id))
        accounts = _account_names(db)
        posts = [
            _post_view(post, accounts)
            for post in list_posts(db, channel=episode["channel"])
            if post["episode_id"] == episode_id
        ]
        translations = translations_of(db, episode_id)
    channel = next((c for c in config.channels if c.name == episode["channel"]), None)
    return {
        "episode": episode,
        "posts": posts,
        "translations": translations,
        "approval": bool(channel and channel.approval),
        "known_channel": channel is not None,
    }


def media_file(config: Config, episode_id: int, name: str) -> str | None:
    """The path of an episode's video `name` ("landscape", "vertical", "reels") or of its
    thumbnail (`name` = "thumbnail"), as the database has it; None when it has none."""
    with database(config) as db:
        episode = episode_json(get_episode(db, episode_id))
    if name == "thumbnail":
        return episode["thumbnail"]
    return episode["videos"].get(name)


def trouble(config: Config) -> dict[str, Any]:
    """What needs a person: the restore hold and what the journal knows that the database
    forgot, platforms that cannot post (not connected or failing, with the command; a refused
    one is among the accounts to reconnect), stocks that cover fewer than three coming slots,
    posts that may be live or need a person, open incidents, accounts to reconnect (with the
    command), sign-ins about to end."""
    from ..accounts import list_accounts
    from ..platforms import platform_class

    with database(config) as db:
        looked = status(config, db, clock.now())
        journal = journal_report(config, db)
        accounts = _account_names(db)
        titles = {e["id"]: e["title"] for e in list_episodes(db)}
        waiting = [
            {**_post_view(post, accounts), "title": titles.get(post["episode_id"])}
            for post in list_posts(db)
            if post["state"] in ("may_be_live", "needs_person")
        ]
        reconnect = []
        for account in list_accounts(db):
            if account.state == "connected":
                continue
            try:
                arguments = getattr(platform_class(account.platform), "connect_arguments", "")
            except KeyError:  # a platform this version does not have
                arguments = ""
            reconnect.append(
                {
                    "platform": account.platform,
                    "name": account.name or account.label,
                    "reason": account.reason or "the platform refused the sign-in",
                    "command": f"autoretto connect {account.platform}{arguments}",
                }
            )
    return {
        "journal": journal,
        "platforms": [t for t in looked["trouble"] if t["kind"] != "refused"],
        "stocks": [c["stock"] for c in looked["channels"] if c["stock"] and c["stock"]["low"]],
        "posts": waiting,
        "incidents": looked["incidents"],
        "reconnect": reconnect,
        "expiring": looked["expiring"],
    }


def limits(config: Config) -> dict[str, Any]:
    """What `autoretto limits` shows, one section per platform with limits to show (X's
    credit ledger and pause, Bluesky's posts today): {"limits": [{name, title, view}]}."""
    from ..platforms import limits_reports, platform_class

    with database(config) as db:
        reports = limits_reports(db, clock.now(), config.platforms)
    sections = []
    for name, report in reports.items():
        cls = platform_class(name)
        sections.append({"name": name, "title": cls.title, "view": cls.limits_view(report)})
    return {"limits": sections}


def _account_names(db: Database) -> dict[str, str]:
    from ..accounts import list_accounts

    return {a.platform: a.name.lstrip("@") for a in list_accounts(db) if a.name}


def _post_view(post: dict, accounts: dict[str, str]) -> dict[str, Any]:
    """A post as `posts --json` has it, with a link to open it (when it has a web address)
    and where a person can look for it on the platform."""
    view = post_json(post)
    url = view["url"] or ""
    view["link"] = url if url.startswith(LINK_SCHEMES) else None
    view["look_at"] = look_at(post["platform"], accounts.get(post["platform"]))
    return view


def look_at(platform: str, handle: str | None) -> str | None:
    """The account's own page on the platform, where a person looks for a post by hand."""
    from ..platforms import platform_class

    try:
        page = platform_class(platform).profile_url
    except KeyError:  # a platform this version does not have
        return None
    return page.format(handle) if page and handle else None


# -- doing ------------------------------------------------------------------------------------


def approve(config: Config, episode_id: int, *, approved: bool) -> dict:
    """`autoretto approve EP` / `autoretto hold EP`."""
    with database(config) as db:
        return set_approval(db, episode_id, approved=approved, now=clock.now())


def post_episode_now(
    config: Config,
    episode_id: int,
    *,
    announce: Callable[[datetime], None],
    sleep: Callable[[datetime], None],
) -> list[PostNowResult]:
    """`autoretto post-now CHANNEL --episode EP`: the same pace, guards and restore hold."""
    with database(config) as db:
        channel = get_episode(db, episode_id)["channel"]
        _, results = post_now(
            config, db, channel, episode_id=episode_id, announce=announce, sleep=sleep
        )
        return results


def episode_posts(config: Config, episode_id: int) -> dict[int, dict]:
    """The episode's posts as `posts --json` has them, by id: read before and after a Post
    now, to tell what it left in doubt."""
    with database(config) as db:
        channel = get_episode(db, episode_id)["channel"]
        return {
            post["id"]: post_json(post)
            for post in list_posts(db, channel=channel)
            if post["episode_id"] == episode_id
        }


def confirm_live(config: Config, post_id: int, url: str) -> dict:
    """`autoretto confirm POST --live URL`."""
    url = url.strip()
    if not url.startswith(LINK_SCHEMES) or any(c.isspace() for c in url):
        raise UsageError("paste the post's address as it is on the platform (https://…)")
    with database(config) as db:
        return post_json(confirm_post(config, db, post_id, live_url=url))


def confirm_not_live(config: Config, post_id: int) -> dict:
    """`autoretto confirm POST --not-live`."""
    with database(config) as db:
        return post_json(confirm_post(config, db, post_id, live_url=None))


def look(config: Config, post_id: int) -> Any:
    """`autoretto look POST`: look for its last attempt on the platform; send if absent."""
    with database(config) as db:
        return look_post(config, db, post_id)


def resume_checked(config: Config) -> dict[str, Any]:
    """`autoretto resume --checked`."""
    with database(config) as db:
        return resume(config, db, checked=True)


# -- editing before it goes out (autoretto/editing.py) -----------------------------------------


def edit_page(config: Config, episode_id: int) -> dict[str, Any]:
    """The editor of one episode: its copy, each platform's texts (those whose post exists
    marked kept, with why), the platforms it may get texts for, and its recorded edits."""
    from ..editing import edits_of, made_texts, text_platforms
    from ..ledger.episodes import posts_of

    with database(config) as db:
        row = get_episode(db, episode_id)
        episode = episode_json(row)
        posts = {}
        for post in posts_of(db, episode_id):
            posts.setdefault(post["platform"], post)
        history = edits_of(db, episode_id)
        choices = text_platforms(config, row)
    platforms = []
    for name in [*episode["texts"], *[c for c in choices if c not in episode["texts"]]]:
        fields = episode["texts"].get(name)
        post = posts.get(name)
        # A platform without texts of its own: empty fields, what it would post shown greyed.
        made = fields if fields is not None else made_texts(row, name)
        platforms.append(
            {
                "name": name,
                "fields": {
                    k: (v if fields is not None else "")
                    for k, v in made.items()
                    if isinstance(v, str)
                },
                "placeholders": {k: v for k, v in made.items() if isinstance(v, str)},
                "made": fields is not None,
                "kept": f"its post {post['id']} is {post['state'].replace('_', ' ')}"
                if post
                else None,
            }
        )
    return {
        "episode": episode,
        "platforms": platforms,
        "edits": list(reversed(history)),
        "editable": episode["state"] in ("ready", "approved"),
        "on_its_way": [p for p in posts.values() if p["state"] != "published"],
    }


def edit_episode(config: Config, episode_id: int, form: dict[str, str], *, who: str) -> dict:
    """The editor's form applied: `title`, `description` and `text:PLATFORM:FIELD` fields;
    only what differs from the episode as it is goes to `editing.edit_copy`."""
    from ..editing import CopyEdit, edit_copy

    with database(config) as db:
        episode = episode_json(get_episode(db, episode_id))
        texts: dict[str, dict[str, str]] = {}
        for key, value in form.items():
            kind, _, rest = key.partition(":")
            platform, _, field = rest.partition(":")
            if kind != "text" or not platform or not field:
                continue
            value = value.replace("\r\n", "\n")
            if value != (episode["texts"].get(platform) or {}).get(field, ""):
                texts.setdefault(platform, {})[field] = value
        title = form.get("title", "").replace("\r\n", "\n")
        description = form.get("description", "").replace("\r\n", "\n")
        edit = CopyEdit(
            title=title if "title" in form and title != (episode["title"] or "") else None,
            description=description
            if "description" in form and description != (episode["description"] or "")
            else None,
            texts=texts,
        )
        return edit_copy(config, db, episode_id, edit, who=who, now=clock.now())


def move_episode(config: Config, episode_id: int, slot_key: str) -> list[int]:
    """`autoretto episode move EP --slot KEY`."""
    from ..editing import move_to_slot

    with database(config) as db:
        return move_to_slot(config, db, episode_id, slot_key, clock.now())


def swap_episodes(config: Config, episode_id: int, other_id: int) -> list[int]:
    """`autoretto episode swap EP OTHER`."""
    from ..editing import swap

    with database(config) as db:
        return swap(db, episode_id, other_id)
