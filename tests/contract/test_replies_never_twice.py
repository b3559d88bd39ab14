"""The never-twice contract for replies (issue 28), one table of cases over every platform of
`tests/contract/replies.py`'s ROWS.

Each case publishes the episode on the platform's fake, puts another account's comment under
it and a person's approved reply to it, scripts the fake with the shared fault vocabulary, then
has a person send the reply (`autoretto replies send`; the crash cases as a real process that
is SIGKILLed at each of the reply's fault points) and later sessions, and checks what a person
would: the replies on the other side (never two), the reply in `autoretto replies --json`, the
comment's state.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.contract.replies import FIRST_TRY, LATER_TRIES, ROWS, ReplyHome, ReplyRow

CASES: dict[str, Callable[[ReplyHome], None]] = {}

#: The contract holds on the home's SQLite file and on PostgreSQL (tests/conftest.py).

#: the reply's fault points (autoretto/replies.py), each a SIGKILL case
FAULT_POINTS = ("reply_before_send", "reply_after_send", "reply_after_recorded")


def case(function: Callable[[ReplyHome], None]) -> Callable[[ReplyHome], None]:
    CASES[function.__name__] = function
    return function


def later_tries(h: ReplyHome) -> None:
    """The person's (or a session's) later tries: they find, or send once what is owed."""
    for moment in LATER_TRIES:
        h.send(moment)


def confirmed_if_in_doubt(h: ReplyHome) -> None:
    """A platform that cannot be asked leaves the reply `may_be_live`; the person looks and says
    what they see with `autoretto replies confirm`."""
    reply = h.reply()
    if h.row.can_ask or reply["state"] != "may_be_live":
        return
    seen = ("--live", "https://example.com/r/1") if h.copies() else ("--not-live",)
    code, out, err = h.cli("replies", "confirm", str(reply["id"]), *seen)
    assert code == 0, (out, err)
    if not h.copies():
        h.send("2026-11-29T16:00:00Z")


def replied_once(h: ReplyHome) -> None:
    """One reply on the other side, the reply published with its link, the comment answered."""
    confirmed_if_in_doubt(h)
    assert h.copies() == 1, h.dump()
    reply = h.reply()
    assert reply["state"] == "published", h.dump()
    assert reply["url"], h.dump()
    assert h.comment_state() == "answered", h.dump()


def not_replied(h: ReplyHome, state: str) -> None:
    assert h.copies() == 0, h.dump()
    assert h.reply()["state"] == state, h.dump()


# -- the cases ----------------------------------------------------------------------------------


@case
def replied(h: ReplyHome) -> None:
    """Nothing goes wrong: one reply, under the comment, from the account."""
    h.send(FIRST_TRY)
    replied_once(h)
    later_tries(h)
    replied_once(h)


@case
def lost_answer(h: ReplyHome) -> None:
    """The reply is made, its answer never arrives: it may be live, and is found again by a
    later try (or confirmed by a person); never sent twice."""
    h.fake.drop_after(h.row.reply_at)
    h.send(FIRST_TRY)
    assert h.reply()["state"] in ("may_be_live", "published"), h.dump()
    assert h.copies() == 1, h.dump()
    later_tries(h)
    replied_once(h)


@case
def stored_then_500(h: ReplyHome) -> None:
    """The platform stores the reply, then answers 500: the next try (in the run, or later)
    finds it; never a second reply."""
    h.row.store_then_fail(h.fake)
    h.send(FIRST_TRY)
    assert h.copies() == 1, h.dump()
    later_tries(h)
    replied_once(h)


@case
def revoked(h: ReplyHome) -> None:
    """The grant is revoked: nothing sent, the reply needs a person (told to reconnect), later
    tries send nothing."""
    h.fake.revoke()
    h.send(FIRST_TRY)
    not_replied(h, "needs_person")
    assert "reconnect" in (h.reply()["reason"] or ""), h.dump()
    later_tries(h)
    not_replied(h, "needs_person")


@case
def rate_limited(h: ReplyHome) -> None:
    """429 with Retry-After: 3600 on the reply: no try spent, the reply waits queued; a later
    session sends it once."""
    h.fake.rate_limit(h.row.reply_at, retry_after=3600)
    h.send(FIRST_TRY)
    reply = h.reply()
    assert (reply["state"], reply["attempts"]) == ("queued", 0), h.dump()
    assert h.copies() == 0, h.dump()
    later_tries(h)
    replied_once(h)


@case
def comment_deleted(h: ReplyHome) -> None:
    """The comment is deleted before the reply goes: the reply is `gone` (and the comment),
    nothing is sent, and no later try sends it."""
    h.row.delete_comment(h.fake, h.comment)
    h.send(FIRST_TRY)
    not_replied(h, "gone")
    assert h.comment_state() == "gone", h.dump()
    later_tries(h)
    not_replied(h, "gone")
    assert h.reply()["attempts"] == 1, h.dump()


def killed_at(h: ReplyHome, point: str) -> None:
    """A person's `replies send` as a real process, SIGKILLed at the fault point `point`; the
    later tries reply once."""
    process = h.process(FIRST_TRY, {"AUTORETTO_FAULT": f"{point}:kill"})
    try:
        process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == -signal.SIGKILL, process.returncode
    assert h.copies() == (0 if point == "reply_before_send" else 1), h.dump()
    later_tries(h)
    replied_once(h)


# -- the table ----------------------------------------------------------------------------------


#: the stores a row's cases run on: every row on the home's SQLite file; Bluesky's on
#: PostgreSQL too (the ledger's statements are the same for every platform: one row proves the
#: store, and the suite keeps to its ten minutes on 2 cores)
def stores_of(row: ReplyRow) -> tuple[str, ...]:
    return ("sqlite", "postgresql") if row.name == "bluesky" else ("sqlite",)


def params() -> list:
    found = []
    for row in ROWS:
        names = [*CASES, *(f"killed_at:{point}" for point in FAULT_POINTS)]
        found += [
            pytest.param(row, name, store, id=f"{store}-{row.name}-{name}")
            for store in stores_of(row)
            for name in names
        ]
    return found


@pytest.mark.parametrize(("row", "name", "store"), params())
def test_replies_never_twice(
    row: ReplyRow,
    name: str,
    store: str,
    request: pytest.FixtureRequest,
    home: Path,
    clip: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AUTORETTO_VAULT", "file")  # the killed processes open the vault too
    if store == "postgresql":  # every process the case starts inherits it
        url = request.getfixturevalue("postgres_server").fresh_url()
        monkeypatch.setenv("AUTORETTO_DATABASE_URL", url)
    fake = row.post_row.fake(tmp_path, monkeypatch)
    fake.start()
    try:
        h = ReplyHome(home, row, fake, clip)
        if name.startswith("killed_at:"):
            killed_at(h, name.partition(":")[2])
        else:
            CASES[name](h)
    finally:
        fake.close()
