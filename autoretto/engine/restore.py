"""A person's word, and a restored database: `confirm`, `look`, `journal`, `resume`.

Each is a run of its own, refused while posting is held (after a restore nothing is published
by hand either, so no journal number is taken twice), except `journal` and `resume`, which are
how the hold is lifted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import clock, journal, posts
from ..clock import from_iso, iso
from ..config import Config
from ..errors import PostingHeld, UsageError
from ..ledger import journal as numbering
from ..platforms import MANUAL_PLATFORMS, REGISTRY
from ..posts import PostResult
from ..slots import Slot
from .run import Run, refuse_when_held

if TYPE_CHECKING:
    from ..ledger.store import Store as Database


def confirm_post(config: Config, db: Database, post_id: int, *, live_url: str | None) -> dict:
    """`autoretto confirm POST --live URL | --not-live`. Refused while posting is held: a
    publish recorded by hand on a restored copy would take a number the journal already has."""
    posts.get_post(db, post_id)  # an unknown post is refused before the run starts (no run row)
    with Run(config, db, "confirm") as run:
        hold = refuse_when_held(run)
        if hold:
            raise PostingHeld(hold)
        return posts.confirm(run.posting, post_id, live_url=live_url)


def look_post(config: Config, db: Database, post_id: int) -> PostResult:
    """`autoretto look POST`: look for the post on its platform, then send it if absent."""
    # A person's mistake is refused before the run starts: it leaves no run row behind.
    post = posts.get_post(db, post_id)
    if post["platform"] in MANUAL_PLATFORMS:
        raise UsageError(
            f"post {post_id} is made by a person: run `autoretto post {post['platform']} "
            f"{post['episode_id']}`, which looks for the last attempt before sending"
        )
    if post["platform"] not in REGISTRY:
        raise UsageError(f"post {post_id} is for {post['platform']}, unknown to this version")
    with Run(config, db, "look") as run:
        hold = refuse_when_held(run)
        if hold:
            raise PostingHeld(hold)
        platform = run.platform(post["platform"])
        return posts.look(run.posting, platform, post_id)


def journal_report(config: Config, db: Database) -> dict[str, Any]:
    """What the journal holds that the database lacks, and whether posting is held."""
    place = config.journal
    hold = journal.restore_hold(db, place)
    known = journal.database_seq(db)
    return {
        "journal": str(place),
        "database_seq": known,
        "journal_seq": journal.journal_seq(place, near=known),
        "held": hold.reason if hold else None,
        # a bucket's journal holds one of the database's numbers for another line
        "conflict": bool(hold and hold.conflict),
        "missing": journal.missing_entries(db, place),
    }


def resume(config: Config, db: Database, *, checked: bool) -> dict[str, Any]:
    """Write what the journal knows back into a restored database, then lift the hold.

    Every publish the database forgot becomes a `published` post again, every attempt it forgot
    a post that may be live (looked for before any send), every stamp move moves the stamp
    again. From then on, every post of an episode the restored database knew is looked for on
    its platform before its first send, where the platform can be asked: the journal may not
    have known everything either. While held, no episode is made or imported, so no new
    episode can take the id of one the journal names.
    """
    report = journal_report(config, db)
    if report["held"] is None:
        return {**report, "written_back": 0}
    if not checked:
        raise UsageError(
            "check first what the platforms already have (`autoretto journal` lists what the "
            "database forgot), then run `autoretto resume --checked`"
        )
    missing = report["missing"]
    moment = iso(clock.now())
    ahead = report["journal_seq"] > report["database_seq"]
    # A number the journal holds for another line than the database's: the numbering goes on
    # after both, from a mark (a number no database has a line of).
    mark = max(report["journal_seq"], report["database_seq"]) + 1 if report["conflict"] else None
    numbering.write_back(
        db,
        [_as_stored(entry) for entry in missing],
        now=moment,
        journal_seq=mark or (report["journal_seq"] if ahead else None),
    )
    if mark is not None:
        journal.append(config.journal, {"seq": mark, "kind": "resumed", "at": moment})
    elif report["journal_seq"] < report["database_seq"]:
        # The journal lost lines the database cannot give back: write what the database has,
        # then a mark that the journal goes on from the database's number.
        journal.catch_up(db, config.journal)
        if journal.journal_seq(config.journal) < report["database_seq"]:
            journal.append(
                config.journal,
                {"seq": report["database_seq"], "kind": "resumed", "at": moment},
            )
    return {**report, "held": None, "written_back": len(missing)}


def _as_stored(entry: dict[str, Any]) -> dict[str, Any]:
    """A journal line as the ledger writes it back: a stamp's slot instant in the one text form
    the database compares (Slot.at_text)."""
    if entry["kind"] != "stamp":
        return entry
    return {**entry, "slot_at": Slot(from_iso(entry["slot_at"]), entry["slot"]).at_text}
