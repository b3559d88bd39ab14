"""What is on the shelf, as `episode show` and `films` list it: an episode or a film with its
posts, translations and files. Read-only."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .episodes import episode_json, get_episode, list_episodes
from .ledger.posts import posts_of_episode
from .ledger.store import loads
from .posts import post_json
from .translate import translations_of

if TYPE_CHECKING:
    from .config import Config
    from .ledger.store import Store as Database


def posts_of(db: Database, episode_id: int) -> list[dict[str, Any]]:
    """The episode's posts (`post_json` shape), oldest first."""
    return [post_json(post) for post in posts_of_episode(db, episode_id)]


def episode_details(db: Database, episode_id: int) -> dict[str, Any]:
    """Everything about one episode: its `episode_json` facts, its `source` (how it was made:
    the track and its tags, `normalise`, `loudness_in`/`loudness_out`, the artwork's and the
    copy's source, `notes`; an added video's `imported` file), its `posts` and its
    `translations`. NotFound for an id that is no episode."""
    found = get_episode(db, episode_id)
    episode = episode_json(found)
    episode["source"] = loads(found.get("source"), {}) or {}
    episode["posts"] = posts_of(db, episode_id)
    episode["translations"] = translations_of(db, episode_id)
    return episode


def list_films(config: Config, db: Database, channel: str | None = None) -> list[dict[str, Any]]:
    """Every film (of `channel`, when given): its `episode_json` facts, its `folder`, the
    `dry_runs` recorded there (what a films slot would have sent) and its `posts`."""
    found = []
    for film in list_episodes(db, channel):
        if film.get("kind") != "film":
            continue
        entry = episode_json(film)
        folder = config.paths.media / "episodes" / str(film["id"])
        entry["folder"] = str(folder)
        entry["dry_runs"] = sorted(str(p) for p in folder.glob("dry-run-*.json"))
        entry["posts"] = posts_of(db, film["id"])
        found.append(entry)
    return found
