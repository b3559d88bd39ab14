"""The reply contract table (issue 28): one row per platform that takes replies, and the home
every reply case runs in.

A row names the platform, the row of the posting table (`tests/contract/table.py`) whose fake
and home it shares, the fake's operation that makes a reply (what the faults of a case hit and
the crash cases hold), whether the platform can be asked about a reply (`can_ask`; else the
harness expects `may_be_live` and a working `autoretto replies confirm`), and three small
functions over the fake: put another account's comment under our published post (the fields a
stored comment keeps), delete it, and count our replies a person would see.

Adding a platform is one row at the end of `ROWS` (and its fake taking replies); the cases in
`test_replies_never_twice.py` run over every row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autoretto.clock import parse_instant
from autoretto.errors import Exit
from autoretto.ledger.store import dumps, row, transaction
from autoretto.replies import approve
from tests.contract import replies_igthli, replies_ytxfb, table
from tests.forked import Forked, run_forked


@dataclass(frozen=True)
class ReplyRow:
    """One platform of the reply table."""

    name: str  # the registry name; also the posting table's row it shares (fake, home)
    reply_at: str  # the fake's operation that makes the reply
    #: another account's comment under our post `post_id` (the platform's id): the comment's
    #: stored fields {"platform_comment_id", "author", "author_id", "text", "ref"}
    add_comment: Callable[[Any, str, str], dict[str, Any]]
    delete_comment: Callable[[Any, dict[str, Any]], None]
    replies: Callable[[Any], int]  # our replies a person sees on the platform
    can_ask: bool = True
    #: the fake stores the next reply, then answers 500
    store_then_fail: Callable[[Any], None] = lambda fake: fake.store_then_fail(500)

    def __str__(self) -> str:
        return self.name

    @property
    def post_row(self) -> table.Row:
        (found,) = [r for r in table.ROWS if r.name == self.name]
        return found


def _bluesky_comment(fake: Any, post_id: str, text: str) -> dict[str, Any]:
    view = fake.comment_view(fake.add_comment(post_id, text))
    return {
        "platform_comment_id": view["uri"],
        "author": view["author"]["handle"],
        "author_id": view["author"]["did"],
        "text": text,
        "ref": view["ref"],
    }


ROWS = [
    ReplyRow(
        "bluesky",
        reply_at="com.atproto.repo.createRecord",
        add_comment=_bluesky_comment,
        delete_comment=lambda fake, comment: fake.delete_comment(comment["platform_comment_id"]),
        replies=lambda fake: len(fake.replies),
    ),
]
ROWS += [ReplyRow(**fields) for fields in (*replies_ytxfb.ROWS, *replies_igthli.ROWS)]

#: the post goes out on the 10:00 slot (a paced platform's by 10:57); the comment arrives at
#: 11:30; the first try at a reply is at 12:00, the later ones after the platform's look delay
POSTED_BY = table.AFTER_A_KILL  # 12:05: the slot's post is out whatever its drawn moment
COMMENTED_AT = "2026-11-29T12:10:00Z"
FIRST_TRY = "2026-11-29T12:15:00Z"
LATER_TRIES = ("2026-11-29T12:45:00Z", "2026-11-29T14:00:00Z")


class ReplyHome:
    """The posting table's home with its post published and another account's comment under it,
    a reply to it approved by a person (`reply_id`); `send` is a person's `replies send`."""

    def __init__(self, home: Path, row: ReplyRow, fake: Any, clip: Path) -> None:
        self.row, self.fake = row, fake
        self.posting = table.Home(home, row.post_row, fake, clip)
        self.cli = self.posting.cli
        self.posting.run(table.FIRST_RUN)
        self.posting.run(POSTED_BY)
        post = self.posting.post()
        assert post["state"] == "published", self.posting.dump()
        self.comment = row.add_comment(fake, post["platform_post_id"], "Love this one, thanks!")
        self.comment_id = insert_comment(
            self.posting.bench.db, post, fake.account()["account_id"], self.comment, COMMENTED_AT
        )
        reply = approve(
            self.posting.bench.db,
            self.comment_id,
            text="Thank you for listening!",
            by="person",
            now=parse_instant(COMMENTED_AT),
        )
        self.reply_id = reply["id"]

    def send(self, now: str, *extra: str) -> tuple[int, str, str]:
        """A person's `replies send --no-wait` at `now` (in-process)."""
        code, out, err = self.cli("replies", "send", "--no-wait", *extra, now=now)
        assert code in (Exit.DONE, Exit.NEEDS_PERSON, Exit.RETRY), (code, out, err)
        assert "Traceback" not in err, err
        return code, out, err

    def process(self, now: str, env: dict[str, str] | None = None) -> Forked:
        """The same as `send`, as a real process of its own (forked ready-imported:
        tests/forked.py)."""
        return run_forked("replies", "send", "--no-wait", now=now, env=env)

    def reply(self) -> dict:
        (found,) = [r for r in self.cli.json("replies") if r["id"] == self.reply_id]
        return found

    def comment_state(self) -> str:
        found = row(
            self.posting.bench.db, "SELECT state FROM comments WHERE id = ?", (self.comment_id,)
        )
        assert found is not None
        return found["state"]

    def copies(self) -> int:
        return self.row.replies(self.fake)

    def dump(self) -> str:
        import json

        return json.dumps({"reply": self.reply(), "calls": self.posting.kinds()}, indent=1)


def insert_comment(
    db: Any,
    post: dict,
    account: str,
    comment: dict[str, Any],
    moment: str,
    *,
    channel: str = "lofi",
) -> int:
    """A comment row as the inbox's collect stores it (drafted), under `post` (a posts row)."""
    with transaction(db):
        found = row(
            db,
            "INSERT INTO comments (platform, account, platform_comment_id, post_id, episode_id,"
            " channel, author, author_id, text, published_at, ref, state, draft, draft_by,"
            " collected_at, updated_at) VALUES (:platform, :account, :cid, :post, :episode,"
            " :channel, :author, :author_id, :text, :at, :ref, 'drafted', 'Thanks!', 'assistant',"
            " :at, :at) RETURNING id",
            {
                "platform": post["platform"],
                "account": account,
                "cid": comment["platform_comment_id"],
                "post": post["id"],
                "episode": post["episode_id"],
                "channel": channel,
                "author": comment["author"],
                "author_id": comment.get("author_id"),
                "text": comment["text"],
                "at": moment,
                "ref": dumps(comment.get("ref") or {}),
            },
        )
    assert found is not None
    return int(found["id"])
