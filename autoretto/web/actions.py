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
from datetime import datetime
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


def overview(config: Config, *, days: int) -> dict[str, Any]:
    """The calendar of `autoretto report` (report.gather) and the episodes, newest first."""
    from ..report import gather

    with database(config) as db:
        data = gather(config, db, clock.now(), days=days)
        episodes = [episode_json(e) for e in list_episodes(db)]
        published = {p["episode_id"] for p in list_posts(db, state="published")}
    episodes.reverse()
    for episode in episodes:
        episode["published"] = episode["id"] in published
    return {"report": data, "episodes": episodes}


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
