"""Changing an episode before it goes out: its copy (`episode edit`, the page's editor) and its
place in line (`episode move`, `episode swap`, the page's queue).

The copy:
- only a ready or approved episode is edited (a rejected one is made or imported again);
- a platform that has a post of the episode (in any state: queued, sending, failed and to be
  tried again, may be live, needs a person, published) keeps its text: a post already sent or on
  its way is never changed, and asking to change its text is refused in one sentence;
- a new title or description is refused while any post of the episode may still send (any state
  but published): that post would go out with the new copy, under an identity made from the old;
  once every post is published, the episode's title and description may change for the
  platforms still to come, and the published ones keep theirs;
- a new title or description is fitted again into the texts of each platform without a post
  (the fields made from it, as the pipeline made them: textfit, Platform.fit_texts); a text given
  for one platform's field is taken as written;
- the text gates run again on the new texts (pipeline/gates.py: text_limits, banned_terms,
  ai_disclosure); a failing gate refuses the whole edit and nothing changes; the episode's gate
  results are those of the new texts;
- each changed field is recorded (episode_edits: when, who, platform, field, old, new) in the
  same transaction as the change, which happens only while the texts are still those read and no
  post of a changed platform has begun meanwhile.

The place in line: a slot takes, per platform, the first episode in line that platform has not
had (episodes.next_episode_for); the line is the episodes' ids, oldest first. There is no
assignment of episodes to slots to edit, so moving an episode to a coming slot is giving it the
place in line that slot takes, and a swap exchanges two episodes' places. Only episodes that no
platform has a post of are moved (one already half out keeps its place), and the places are the
line's own keys handed round, so a later episode still queues behind them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .clock import iso
from .episodes import POSTABLE_STATES, episode_json, get_episode
from .errors import NotFound, UsageError
from .ledger import episodes as ledger
from .ledger.store import dumps, loads

if TYPE_CHECKING:
    from .config import Config
    from .ledger.store import Store as Database

#: the gates an edit runs again: those that read the texts
TEXT_GATES = ("text_limits", "banned_terms", "ai_disclosure")


@dataclass(frozen=True)
class CopyEdit:
    """What to change: a new title, a new description, and texts per platform and field."""

    title: str | None = None
    description: str | None = None
    texts: dict[str, dict[str, str]] = field(default_factory=dict)


def edit_copy(
    config: Config, db: Database, episode_id: int, edit: CopyEdit, *, who: str, now: datetime
) -> dict[str, Any]:
    """Apply `edit` to the episode's copy under the rules above. Returns {"episode" (as
    `episode show --json` has it), "changed" (the edits recorded: platform, field, old, new),
    "kept" (platform -> why its text stayed)}. Raises UsageError (nothing changed) for an edit
    the rules refuse, NotFound for no such episode."""
    from .pipeline.textfit import clean

    episode = get_episode(db, episode_id)
    if episode["state"] not in POSTABLE_STATES:
        raise UsageError(
            f"episode {episode_id} is {episode['state']}; only a ready or approved episode's "
            "copy can be edited"
        )
    texts: dict[str, dict[str, Any]] = loads(episode["texts"], {}) or {}
    new_texts = {platform: dict(fields) for platform, fields in texts.items()}
    posts = _posts_by_platform(db, episode_id)
    kept = {
        platform: f"its post {post['id']} is {post['state'].replace('_', ' ')}"
        for platform, post in posts.items()
    }
    for platform, fields in edit.texts.items():
        if platform in posts:
            raise UsageError(
                f"--text {platform}: {kept[platform]}; a post already sent or on its way is "
                "never changed"
            )
        if platform not in texts:
            # An episode imported without texts per platform: that platform's texts are made
            # from its copy first (as the platform would at send time), then edited.
            choices = text_platforms(config, episode)
            if platform not in choices:
                raise UsageError(
                    f"--text {platform}: episode {episode_id}'s channel does not post to "
                    f"{platform} (its platforms: {', '.join(choices) or 'none'})"
                )
            texts[platform] = {}
            new_texts[platform] = made_texts(episode, platform)
        for name, value in fields.items():
            if not isinstance(new_texts[platform].get(name), str):
                have = [k for k, v in new_texts[platform].items() if isinstance(v, str)]
                raise UsageError(
                    f"--text {platform}.{name}: {platform} has no text field {name!r} (its "
                    f"fields: {', '.join(have)})"
                )
            new_texts[platform][name] = clean(value).strip()

    title = episode["title"] or ""
    description = episode["description"] or ""
    if edit.title is not None:
        title = clean(edit.title).strip()
        if not title:
            raise UsageError("--title: give a title; it is empty")
    if edit.description is not None:
        description = clean(edit.description).strip()
    copy_changed = title != (episode["title"] or "") or description != (
        episode["description"] or ""
    )
    if copy_changed:
        on_its_way = [post for post in posts.values() if post["state"] != "published"]
        if on_its_way:
            post = on_its_way[0]
            raise UsageError(
                f"--title/--description: post {post['id']} ({post['platform']}) of episode "
                f"{episode_id} is {post['state'].replace('_', ' ')} and would go out with the "
                "new copy; edit once it is published, or edit the other platforms' texts"
            )
        refitted = _refit(episode, title, description, changed_title=title != episode["title"])
        for platform in new_texts:
            if platform in posts or platform in edit.texts:
                continue
            new_texts[platform].update(refitted(platform, new_texts[platform]))

    gates = _text_gates(config, episode, new_texts, title, description)
    failed = [gate for gate in gates if not gate["passed"]]
    if failed:
        raise UsageError(
            f"episode {episode_id}: the {failed[0]['name']} gate refuses the new text: "
            f"{failed[0]['reason']}; nothing was changed"
        )
    changes = _changes(episode, title, description, texts, new_texts, who)
    if not changes:
        return {"episode": episode_json(episode), "changed": [], "kept": kept}
    old_gates = [g for g in loads(episode["gates"], []) if g.get("name") not in TEXT_GATES]
    changed_platforms = sorted({c["platform"] for c in changes if c["platform"]})
    written = ledger.write_copy(
        db,
        episode_id,
        old_texts=episode["texts"],
        values={
            "title": title,
            "description": description,
            "texts": dumps(new_texts),
            "gates": dumps([*old_gates, *gates]),
        },
        edits=changes,
        states=POSTABLE_STATES,
        untouched_platforms=changed_platforms,
        now=iso(now),
    )
    if not written:
        raise UsageError(
            f"episode {episode_id} changed while it was being edited (another edit, or a post "
            "began): look at it again and edit again"
        )
    return {
        "episode": episode_json(get_episode(db, episode_id)),
        "changed": [{k: c[k] for k in ("platform", "field", "old", "new")} for c in changes],
        "kept": kept,
    }


def edits_of(db: Database, episode_id: int) -> list[dict[str, Any]]:
    """The episode's recorded edits, oldest first: seq, at, who, platform, field, old, new."""
    get_episode(db, episode_id)
    return ledger.edits_of(db, episode_id)


def text_platforms(config: Config, episode: dict) -> list[str]:
    """The platforms an episode's channel posts to (by name), whose texts may be edited."""
    from .platforms import class_or_base

    try:
        chosen = config.channel(episode["channel"]).platforms
    except NotFound:
        return []
    names = list(chosen) if chosen is not None else list(config.platforms)
    return [name for name in names if class_or_base(name).text_fields is not None]


def made_texts(episode: dict, platform: str) -> dict[str, Any]:
    """The texts `platform` makes from the episode's copy, fitted to its limits."""
    from .platforms import class_or_base
    from .platforms.text import Copy, clean
    from .translate import episode_disclosure

    copy = Copy(
        title=clean(episode["title"] or ""),
        description=clean(episode["description"] or ""),
        short="",
        tags=tuple(loads(episode["tags"], [])),
        disclosure=episode_disclosure(episode),
        ai_generated=bool(episode["ai_generated"]),
    )
    return class_or_base(platform).fit_texts(copy)


def _posts_by_platform(db: Database, episode_id: int) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for post in ledger.posts_of(db, episode_id):
        found.setdefault(post["platform"], post)
    return found


def _refit(episode: dict, title: str, description: str, *, changed_title: bool) -> Any:
    """A function (platform, its texts) -> the fields of that platform's texts made from the
    title (when it changed) and the description (when it changed), fitted again."""
    from .platforms import class_or_base
    from .platforms.text import Copy
    from .translate import episode_disclosure

    changed_description = description != (episode["description"] or "")
    copy = Copy(
        title=title,
        description=description,
        short="",
        tags=tuple(loads(episode["tags"], [])),
        disclosure=episode_disclosure(episode),
        ai_generated=bool(episode["ai_generated"]),
    )
    wanted = {"title", "artwork"} if changed_title else set()
    if changed_description:
        wanted.add("description")

    def refitted(platform: str, fields: dict[str, Any]) -> dict[str, Any]:
        cls = class_or_base(platform)
        if not cls.text_fields:  # a platform without declared texts: title and description
            made = cls.fit_texts(copy)
            names = ({"title"} if changed_title else set()) | (
                {"description"} if changed_description else set()
            )
            return {name: made[name] for name in names if name in fields}
        return {
            name: spec.fitted(copy)
            for name, spec in cls.text_fields.items()
            if spec.source in wanted and name in fields
        }

    return refitted


def _text_gates(
    config: Config,
    episode: dict,
    texts: dict[str, dict],
    title: str,
    description: str,
) -> list[dict[str, Any]]:
    """The text gates on the new texts, as the pipeline runs them (pipeline/make.py)."""
    from .pipeline import gates
    from .translate import episode_disclosure

    platforms = tuple(texts)
    try:
        banned = tuple(config.channel(episode["channel"]).pipeline.banned_terms)
    except NotFound:  # a channel since removed from the config: its terms are gone too
        banned = ()
    results = [
        gates.text_limits_gate(texts, platforms),
        gates.banned_terms_gate(texts, [title, description, *loads(episode["tags"], [])], banned),
        gates.ai_disclosure_gate(
            bool(episode["ai_generated"]), episode_disclosure(episode), texts, platforms
        ),
    ]
    return [{"name": g.name, "passed": g.passed, "reason": g.reason} for g in results]


def _changes(
    episode: dict,
    title: str,
    description: str,
    texts: dict[str, dict],
    new_texts: dict[str, dict],
    who: str,
) -> list[dict[str, Any]]:
    changes = []
    for name, new in (("title", title), ("description", description)):
        old = episode[name] or ""
        if new != old:
            changes.append({"who": who, "platform": None, "field": name, "old": old, "new": new})
    for platform, fields in new_texts.items():
        for name, new in fields.items():
            old = texts[platform].get(name)
            if new != old:
                changes.append(
                    {"who": who, "platform": platform, "field": name, "old": old, "new": new}
                )
    return changes


# -- the place in line -------------------------------------------------------------------------


def _line(db: Database, episode: dict) -> list[dict]:
    return ledger.unsent_in_line(
        db, episode["channel"], kind=episode.get("kind") or "episode", states=POSTABLE_STATES
    )


def _movable(db: Database, episode_id: int) -> tuple[dict, list[dict]]:
    episode = get_episode(db, episode_id)
    line = _line(db, episode)
    if episode["off_schedule"]:
        raise UsageError(f"episode {episode_id} is off schedule: only Post now posts it")
    if episode_id not in [found["id"] for found in line]:
        posts = ledger.posts_of(db, episode_id)
        why = (
            f"its post {posts[0]['id']} ({posts[0]['platform']}) is {posts[0]['state']}"
            if posts
            else f"it is {episode['state']}"
        )
        raise UsageError(
            f"episode {episode_id} is not waiting in line ({why}); only a ready or approved "
            "episode that no platform has had yet is moved"
        )
    return episode, line


def swap(db: Database, first_id: int, second_id: int) -> list[int]:
    """Exchange the places in line of two episodes of one channel. Returns the line after."""
    if first_id == second_id:
        raise UsageError(f"give two different episodes to swap (both are {first_id})")
    first, line = _movable(db, first_id)
    second, _ = _movable(db, second_id)
    if (first["channel"], first.get("kind")) != (second["channel"], second.get("kind")):
        raise UsageError(
            f"episodes {first_id} and {second_id} are in different lines "
            f"({first['channel']}, {second['channel']}): only one channel's episodes swap"
        )
    places = {found["id"]: found["place"] for found in line}
    _give(db, {first_id: (places[first_id], places[second_id]),
               second_id: (places[second_id], places[first_id])})  # fmt: skip
    return [found["id"] for found in _line(db, first)]


def move(db: Database, episode_id: int, position: int) -> list[int]:
    """Give the episode the `position`-th place in its channel's line (0: next), the episodes
    between its old and new place moving one place along. Returns the line after."""
    episode, line = _movable(db, episode_id)
    order = [found["id"] for found in line]
    if not 0 <= position < len(order):
        raise UsageError(
            f"episode {episode_id} can go to place 1 to {len(order)} of its line, not "
            f"{position + 1}"
        )
    keys = [found["place"] for found in line]
    order.remove(episode_id)
    order.insert(position, episode_id)
    old = {found["id"]: found["place"] for found in line}
    _give(db, {eid: (old[eid], key) for eid, key in zip(order, keys, strict=True)
               if old[eid] != key})  # fmt: skip
    return [found["id"] for found in _line(db, episode)]


def move_to_slot(
    config: Config, db: Database, episode_id: int, slot_key: str, now: datetime
) -> list[int]:
    """Move the episode so that the coming slot `slot_key` of its channel takes it: it takes
    the place in line of the episode the queue shows on that slot (engine/queue.py)."""
    from .engine.queue import coming_queue

    episode, line = _movable(db, episode_id)
    kind = episode.get("kind") or "episode"
    cadence = next(
        (c for c in config.cadences if c.episode_channel == episode["channel"] and c.kind == kind),
        None,
    )
    if cadence is None:
        raise UsageError(
            f"episode {episode_id}'s channel {episode['channel']} has no {kind} slots in the config"
        )
    entries = coming_queue(config, db, now, only_channel=episode["channel"])[cadence.name]
    entry = next((e for e in entries if e.slot.key == slot_key), None)
    if entry is None:
        shown = ", ".join(e.slot.key for e in entries[:5])
        raise UsageError(
            f"--slot {slot_key}: not one of the coming slots of {cadence.name} (the next: {shown})"
        )
    order = [found["id"] for found in line]
    taken = entry.episode
    if taken is None or taken["id"] not in order:
        # Nothing in line reaches that slot yet: the episode goes last, the nearest it can.
        return move(db, episode_id, len(order) - 1)
    return move(db, episode_id, order.index(taken["id"]))


def _give(db: Database, places: dict[int, tuple[int, int]]) -> None:
    if places and not ledger.give_places(db, places):
        raise UsageError(
            "the line changed while moving (another move, or a post began): look at the queue "
            "again and move again"
        )
