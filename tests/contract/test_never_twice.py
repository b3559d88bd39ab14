"""The never-twice contract, one table of cases over every platform of `table.ROWS`.

Each case scripts the platform's fake with the shared fault vocabulary (`tests/fakes/base.py`),
runs `autoretto run-due` for the 10:00 slot (in-process; the crash cases as a real process that
is SIGKILLed; for a manual platform, the person's post by hand), then cron's later runs, and
checks what a person would: the copies on the other side, the post in `autoretto posts --json`,
the slot's decision and state.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from autoretto.errors import Exit
from autoretto.platforms import platform_class
from tests.contract.table import AFTER_A_KILL, FIRST_RUN, LATER_RUNS, ROWS, FolderOutbox, Home, Row

CASES: dict[str, tuple[Callable[[Home], None], bool]] = {}


#: The contract holds on the home's SQLite file and on PostgreSQL (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("store")


def case(*, network: bool = True) -> Callable:
    """Register a case of the table; `network`: it scripts the fake, so it needs one."""

    def register(function: Callable[[Home], None]) -> Callable[[Home], None]:
        CASES[function.__name__] = (function, network)
        return function

    return register


# -- what a person checks -----------------------------------------------------------------------


def later_runs(h: Home, *, killed: bool = False) -> None:
    """Cron's later runs: they find, or send once what is still owed, and no more. After a
    killed run, and for a paced platform (its post may have gone out as late as 10:57, and is
    its run's own for 15 minutes more), the 12:05 run too."""
    for moment in LATER_RUNS + ((AFTER_A_KILL,) if killed or h.row.paced else ()):
        h.run(moment)


def confirmed_if_in_doubt(h: Home) -> None:
    """A platform that cannot be asked leaves the post `may_be_live`; the person looks and
    says what they see with `autoretto confirm`: `--live URL` publishes the post and sends
    nothing; `--not-live` lets a later run send it."""
    post = h.post()
    if h.row.can_ask or post["state"] != "may_be_live":
        return
    copies = h.fake.visible_copies()
    seen = ("--live", "https://example.com/p/1") if copies else ("--not-live",)
    code, out, err = h.cli("confirm", str(post["id"]), *seen)
    assert code == 0, (out, err)
    if not copies:
        h.run("2026-11-29T12:35:00Z")
    assert h.post()["state"] == "published", h.dump()


def posted_once(h: Home) -> None:
    """One copy on the other side, the post published with its link, and (when Autoretto found
    the post itself) one slot posted it and is filled."""
    confirmed_if_in_doubt(h)
    assert h.fake.visible_copies() == 1, h.dump()
    post = h.post()
    assert post["state"] == "published", h.dump()
    assert post["url"], h.dump()
    if h.row.manual:
        return  # posted by a person, on no slot
    posted = [d["slot"] for d in h.decisions() if d["outcome"] == "posted"]
    # a post the person confirmed was posted by no slot
    assert len(posted) == 1 or (not posted and not h.row.can_ask), h.dump()
    for slot in posted:
        assert h.slot_states()[slot] == "filled", h.dump()


def not_posted(h: Home, state: str) -> dict:
    """No copy on the other side, the post in `state`, no slot filled."""
    assert h.fake.visible_copies() == 0, h.dump()
    post = h.post()
    assert post["state"] == state, h.dump()
    assert "filled" not in h.slot_states().values(), h.dump()
    return post


# -- the cases ----------------------------------------------------------------------------------


@case()
def lost_answer_after_send(h: Home) -> None:
    """The copy is made, its answer never arrives: the post may be live, and is found again by
    the next slot's run (or, where the platform cannot be asked, confirmed by a person); never
    resent."""
    h.fake.drop_after(h.row.publish)
    h.run(FIRST_RUN)
    # published: the platform was asked at once, and the post found
    assert h.post()["state"] in ("may_be_live", "published"), h.dump()
    assert h.fake.visible_copies() == 1, h.dump()
    later_runs(h)
    posted_once(h)


@case()
def server_error_then_success(h: Home) -> None:
    """503 on the first call to the platform, and 503 on the publish, then it works: posted
    once, with no person asked for (a 503 to the publish may leave the post in doubt: it is
    then looked for by the next slot's run before it is sent again)."""
    h.fake.fail_next("*", 503)
    h.fake.fail_next(h.row.publish, 503)
    h.run(FIRST_RUN)
    assert h.post()["state"] in ("published", "may_be_live"), h.dump()
    later_runs(h)
    posted_once(h)


@case()
def rate_limited_briefly(h: Home) -> None:
    """429 with Retry-After: 1 on the publish: waited out inside the run, or (a platform whose
    limit lasts its hour) left to a later slot; no person asked for, posted once."""
    h.fake.rate_limit(h.row.publish, retry_after=1)
    h.run(FIRST_RUN)
    assert h.post()["state"] in ("published", "queued"), h.dump()
    later_runs(h)
    posted_once(h)


@case()
def rate_limited_for_an_hour(h: Home) -> None:
    """429 with Retry-After: 3600: the run ends (cron's hourly run is a real process here,
    given 15 s: such a run takes 2 or 3) with nothing posted and no person asked for; a later
    slot's run posts it, once."""
    h.fake.rate_limit(h.row.publish, retry_after=3600)
    process = h.process(FIRST_RUN)
    try:
        out, err = process.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail("the run sat out the Retry-After of an hour instead of ending")
    post = h.post()
    # queued for a later slot (done), or failed for now (the exit-code table's 4)
    expected = {"queued": Exit.DONE, "failed": Exit.RETRY}.get(post["state"])
    if h.row.manual:
        expected = 0  # tests/contract/by_hand.py: the person's post, its outcome printed
    assert process.returncode == expected, (out, err, h.dump())
    assert h.fake.visible_copies() == 0, h.dump()
    later_runs(h)
    posted_once(h)


@case()
def revoked_grant(h: Home) -> None:
    """The grant is revoked: nothing posted, the post waits for a person, `autoretto
    accounts` says the account must be connected again and why, later runs send nothing."""
    h.fake.revoke()
    h.run(FIRST_RUN)
    not_posted(h, "needs_person")
    if platform_class(h.row.name).needs_account:
        (account,) = [a for a in h.cli.json("accounts") if a["platform"] == h.row.name]
        assert account["state"] == "reconnect" and account["reason"], (account, h.dump())
    later_runs(h)
    not_posted(h, "needs_person")


@case()
def content_refused(h: Home) -> None:
    """The platform refuses the content: nothing posted, a person must look, never resent."""
    h.fake.refuse_next(h.row.refuse_at or h.row.publish)
    h.run(FIRST_RUN)
    not_posted(h, "needs_person")
    later_runs(h)
    not_posted(h, "needs_person")


def killed_run(h: Home, *, hold: str | None = None, fault: str | None = None) -> None:
    """The slot's run as a real process, SIGKILLed while the fake holds `hold` (its work done,
    its answer not sent) or at the fault point `fault`."""
    env = {"AUTORETTO_FAULT": f"{fault}:kill"} if fault else {}
    if hold:
        h.fake.hold(hold)
    process = h.process(FIRST_RUN, env)
    try:
        if hold:
            assert h.fake.holding.wait(90), process.communicate(timeout=60)
            os.kill(process.pid, signal.SIGKILL)
        process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if hold:
            h.fake.release()
    assert process.returncode == -signal.SIGKILL, process.returncode


@case(network=False)
def killed_after_send(h: Home) -> None:
    """SIGKILL after the platform took the post, before the database heard: one copy."""
    killed_run(h, fault="after_send")
    assert h.fake.visible_copies() == 1, h.dump()
    assert h.post()["state"] == "sending", h.dump()
    later_runs(h, killed=True)
    posted_once(h)


def killed_holding(h: Home, operation: str) -> None:
    """SIGKILL while the platform did `operation` and its answer is on its way (the handles
    heard before it are kept, its own is not): the later runs post once."""
    killed_run(h, hold=operation)
    assert h.fake.visible_copies() <= 1, h.dump()
    later_runs(h, killed=True)
    posted_once(h)


def killed_after_a_handle(h: Home) -> None:
    """SIGKILL right after the platform's first durable handle is on record (the fault point
    `handles_saved`), before its next call: the later runs resume from it or start afresh,
    and post once."""
    killed_run(h, fault="handles_saved")
    assert h.fake.visible_copies() <= 1, h.dump()
    later_runs(h, killed=True)
    posted_once(h)


# -- the table: every row meets every case it can --------------------------------------------


def params() -> list:
    """(row, case) for every row and every case it can meet; the crash cases once for each
    operation the row names in `crash_at`."""
    found = []
    for row in ROWS:
        names = [name for name, (_, network) in CASES.items() if row.fake or not network]
        names += [f"killed_holding:{operation}" for operation in row.crash_at]
        if len(row.crash_at) > 1:  # it keeps a handle before the call that makes the copy
            names.append("killed_after_a_handle")
        for name in names:
            defect = row.xfail.get(name)
            marks = [pytest.mark.xfail(strict=True, reason=defect)] if defect else []
            found.append(pytest.param(row, name, marks=marks, id=f"{row.name}-{name}"))
    return found


@pytest.mark.parametrize(("row", "name"), params())
def test_never_twice(
    row: Row, name: str, home: Path, clip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The vault's key in a file of the home: the runs started as processes of their own open
    # it too (a system keyring may not reach them, as under cron)
    monkeypatch.setenv("AUTORETTO_VAULT", "file")
    fake = row.fake(tmp_path, monkeypatch) if row.fake is not None else FolderOutbox(home)
    if hasattr(fake, "start"):
        fake.start()
    try:
        h = Home(home, row, fake, clip)
        if name.startswith("killed_holding:"):
            killed_holding(h, name.partition(":")[2])
        elif name == "killed_after_a_handle":
            killed_after_a_handle(h)
        else:
            CASES[name][0](h)
    finally:
        if hasattr(fake, "close"):
            fake.close()
