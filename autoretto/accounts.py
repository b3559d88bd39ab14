"""Connected accounts: tokens sealed in the vault, refreshed under a lease (ARCHITECTURE.md §6).

One row of `accounts` per (platform, label). Its `sealed` column is the whole token bundle
(access token, refresh token, expiry, client id and secret, token URI, scopes) sealed with the
vault, bound to the account's identity as associated data; every other column is plain and holds
no secret, so `autoretto accounts` and `doctor` never need the key.

A token is refreshed shortly before it expires, under the account's lease in the store
(`account_lock`, ledger.leases: a row `account:<platform>/<label>` taken with one conditional
INSERT), so that every process on every host that shares the store takes turns, where a file
lock in one home would have let two hosts both refresh (and lose a rotated refresh token). The
lease names its holder: the run this thread works for (liveness.act_for), else an id of this
process recorded like a run's facts (pid, machine, process start) and beaten while it holds.
A second process that wants to refresh the same account polls (short sleeps, at most
`LEASE_WAIT_SECONDS` in all, then a one-line error naming the account that a later run gets
past), then finds the fresh token the first one saved and uses it. A holder is taken over only
when it is gone by liveness.py's rule: on this machine its process is dead; elsewhere its beat
has stood still across two sightings `stale_after` apart by the waiter's own clock, never by
comparing two hosts' clocks. The new token (and a rotated refresh token, when the platform
sends one) is saved before the lease is given back; an empty refresh token never replaces a
stored one. A refresh the platform refuses for good marks the account `reconnect` with a plain
reason, and nothing is sent from it until a person connects again.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import liveness
from .clock import from_iso, iso, now
from .errors import AutorettoError, StoreError
from .ledger import accounts as ledger
from .ledger import leases, runs
from .vault import Vault

if TYPE_CHECKING:
    from .ledger.store import Store as Database


DEFAULT_LABEL = "default"
#: refresh when the access token has less than this left
REFRESH_MARGIN = timedelta(minutes=5)
#: how long a refresh waits in all for the account's lease that another process holds
LEASE_WAIT_SECONDS = 120.0
#: the sleeps between looks at a lease held by another (short: a refresh takes a second)
LEASE_POLL_SECONDS = (0.05, 0.5)
#: how often a process that holds a lease outside a run beats (a run's heartbeat does it
#: for a run: every HEARTBEAT_SECONDS of config.py)
LEASE_BEAT_SECONDS = 20.0
#: a waiter outside a run judges a holder on another host gone after this (a run: its
#: config's `stale_after`, whose default this is)
LEASE_STALE_AFTER = timedelta(minutes=15)

Tokens = dict[str, Any]


class NotConnected(AutorettoError):
    """No account is connected for this platform."""


class ReconnectNeeded(AutorettoError):
    """The platform refused the account for good; a person must connect it again."""


class RefreshFailed(AutorettoError):
    """A refresh that may work later (the token endpoint was unreachable or erring)."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RefreshRefused(Exception):
    """Raised by a refresh function when the platform refuses the refresh token for good.

    `reason` is plain words and holds no secret (e.g. Google's `invalid_grant` description).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Account:
    """What may be shown of a connected account: no secret in here."""

    platform: str
    label: str
    account_id: str
    name: str
    state: str  # connected | reconnect
    reason: str | None
    meta: dict[str, Any]
    connected_at: str
    updated_at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "label": self.label,
            "account_id": self.account_id,
            "name": self.name,
            "state": self.state,
            "reason": self.reason,
            "connected_at": self.connected_at,
            "updated_at": self.updated_at,
            "meta": self.meta,
        }


def reconnect_hint(platform: str) -> str:
    return f"reconnect with `autoretto connect {platform}`"


def _associated(platform: str, label: str, account_id: str) -> str:
    # What binds a sealed bundle to its account: copied onto another row, it will not open.
    return f"autoretto/{platform}/{label}/{account_id}"


def _account(found: dict[str, Any]) -> Account:
    return Account(
        platform=found["platform"],
        label=found["label"],
        account_id=found["account_id"],
        name=found["name"] or "",
        state=found["state"],
        reason=found["reason"],
        meta=found["meta"],
        connected_at=found["connected_at"],
        updated_at=found["updated_at"],
    )


def load_account(db: Database, platform: str, label: str = DEFAULT_LABEL) -> Account | None:
    found = ledger.find_account(db, platform, label)
    return None if found is None else _account(found)


def list_accounts(db: Database) -> list[Account]:
    return [_account(found) for found in ledger.all_accounts(db)]


def require_account(db: Database, platform: str, title: str, label: str = DEFAULT_LABEL) -> Account:
    """The connected account, or NotConnected / ReconnectNeeded in plain words."""
    account = load_account(db, platform, label)
    if account is None:
        raise NotConnected(f"{title} is not connected; run `autoretto connect {platform}` once")
    if account.state != "connected":
        raise ReconnectNeeded(account.reason or f"{title}: {reconnect_hint(platform)}")
    return account


def save_account(
    db: Database,
    home: Path,
    *,
    platform: str,
    account_id: str,
    name: str,
    tokens: Tokens,
    meta: dict[str, Any],
    label: str = DEFAULT_LABEL,
) -> Account:
    """Seal `tokens` and store the account as connected (replacing an earlier connection).

    A vault key is created here only when no other account holds sealed tokens: a home whose
    key went missing must not silently get a second key beside secrets it can no longer open.
    """
    previous = ledger.sealed_account(db, platform, label)
    if (
        not tokens.get("refresh_token")
        and previous is not None
        and previous["account_id"] == account_id
        and previous["sealed"] is not None
    ):
        kept = _unseal(home, platform, label, previous["account_id"], previous["sealed"])
        tokens = {**tokens, "refresh_token": kept.get("refresh_token")}
    sealed = Vault(home).seal(
        json.dumps(tokens).encode("utf-8"),
        _associated(platform, label, account_id),
        create_key=ledger.count_other_sealed(db, platform, label) == 0,
    )
    ledger.connect_account(
        db,
        platform=platform,
        label=label,
        account_id=account_id,
        name=name,
        sealed=sealed,
        meta=meta,
        now=iso(now()),
    )
    account = load_account(db, platform, label)
    assert account is not None
    return account


def update_meta(db: Database, account: Account, meta: dict[str, Any]) -> None:
    """Merge non-secret facts (e.g. a channel's uploads playlist) into the account row."""
    ledger.set_account_meta(
        db, account.platform, account.label, account.account_id, {**account.meta, **meta}
    )


def mark_reconnect(db: Database, platform: str, reason: str, label: str = DEFAULT_LABEL) -> None:
    """Stop every send from this account until a person connects it again."""
    ledger.mark_account_reconnect(db, platform, label, reason, iso(now()))


def disconnect(db: Database, platform: str, label: str = DEFAULT_LABEL) -> Account | None:
    """Delete our copy of the account's tokens. Returns what was removed, None if nothing."""
    account = load_account(db, platform, label)
    if account is not None:
        ledger.delete_account(db, platform, label)
    return account


def _unseal(home: Path, platform: str, label: str, account_id: str, sealed: bytes) -> Tokens:
    opened = Vault(home).unseal(sealed, _associated(platform, label, account_id))
    return json.loads(opened.decode("utf-8"))


def open_tokens(db: Database, home: Path, account: Account) -> Tokens:
    """The account's token bundle, unsealed (keep it in memory only)."""
    sealed = ledger.sealed_tokens(db, account.platform, account.label, account.account_id)
    if sealed is None:
        raise NotConnected(
            f"the {account.platform} account changed meanwhile; run the command again"
        )
    return _unseal(home, account.platform, account.label, account.account_id, sealed)


def _store_tokens(db: Database, home: Path, account: Account, tokens: Tokens) -> None:
    sealed = Vault(home).seal(
        json.dumps(tokens).encode("utf-8"),
        _associated(account.platform, account.label, account.account_id),
    )
    ledger.store_sealed_tokens(
        db, account.platform, account.label, account.account_id, sealed, iso(now())
    )


def lease_name(platform: str, label: str = DEFAULT_LABEL) -> str:
    """The name of the account's refresh lease in the store."""
    return f"account:{platform}/{label}"


@contextmanager
def account_lock(
    db: Database,
    platform: str,
    label: str = DEFAULT_LABEL,
    *,
    wait: float = LEASE_WAIT_SECONDS,
) -> Iterator[str]:
    """Hold the account's refresh lease in the store (waiting while another process, on this
    host or another, holds it); yields the holder's id. Raises RefreshFailed, naming the
    account, when the lease is still held by a live holder after `wait` seconds."""
    name = lease_name(platform, label)
    acting = liveness.acting()
    if acting is not None:
        holder, stale_after = acting[0], acting[1] or LEASE_STALE_AFTER
    else:
        holder, stale_after = _process_holder(db), LEASE_STALE_AFTER
    _take_lease(db, name, holder, stale_after, wait, f"the {platform} account {label!r}")
    beating = _LeaseBeat(db, holder) if acting is None else None
    try:
        yield holder
    finally:
        if beating is not None:
            beating.stop()
        leases.give_back_lease(db, name, holder)


def _take_lease(
    db: Database, name: str, holder: str, stale_after: timedelta, wait: float, what: str
) -> None:
    deadline = time.monotonic() + wait
    pause = LEASE_POLL_SECONDS[0]
    while True:
        if leases.take_lease(db, name, holder, iso(now())):
            return
        found = leases.lease_holder(db, name)
        if found is None:
            continue  # given back between the two looks: try again at once
        if found["holder"] == holder:
            return  # this run took it in a call that never gave it back (it holds it still)
        gone = liveness.holder_gone(db, found["holder"], now=now(), stale_after=stale_after)
        if gone is not None and leases.take_over_lease(
            db, name, holder=gone.run_id, beat=gone.beat, taker=holder, now=iso(now())
        ):
            return
        if time.monotonic() >= deadline:
            raise RefreshFailed(
                f"waited {wait:g} s for {what}: run {found['holder']} (this host or another "
                f"sharing the store) is refreshing its token since {found['taken_at']}; the "
                "next run tries again"
            )
        _sleep(pause)
        pause = min(pause * 2, LEASE_POLL_SECONDS[1])


_sleep = time.sleep  # a waiter's pause (a test sees the wait through it)
_process_holders: dict[str, str] = {}  # store and thread -> holder id
_holders_lock = threading.Lock()


def _process_holder(db: Database) -> str:
    """This process's id as a lease holder outside a run, recorded once per store (and thread:
    two threads of one process never share a lease) like a run's facts (pid, machine, process
    start), so that liveness.py can judge it."""
    store = f"{getattr(db, 'url', None) or db.conn.path} {threading.get_ident()}"
    with _holders_lock:
        if store not in _process_holders:
            holder = "p" + uuid.uuid4().hex[:11]
            runs.open_run(
                db,
                run_id=holder,
                kind="process",
                **liveness.describe_this_process(),  # type: ignore[arg-type]
                started_at=iso(now()),
            )
            _process_holders[store] = holder
        return _process_holders[store]


class _LeaseBeat:
    """Beats a process holder's row while it holds a lease (a run's heartbeat does it for a
    run), so that a holder on another host is not judged gone during a slow refresh."""

    def __init__(self, db: Database, holder: str) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, args=(db, holder), name="lease-beat", daemon=True
        )
        self._thread.start()

    def _loop(self, db: Database, holder: str) -> None:
        from .ledger.store import DatabaseError, reopen

        while not self._stop.wait(LEASE_BEAT_SECONDS):
            try:
                with reopen(db, busy_timeout=30) as connection:
                    runs.beat_run(connection, holder)
            except (DatabaseError, StoreError):  # a busy store: the next beat counts
                continue

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def _fresh(tokens: Tokens, margin: timedelta, rejected_token: str | None) -> bool:
    token = tokens.get("access_token")
    if not token or token == rejected_token:
        return False
    expires_at = tokens.get("expires_at")
    return expires_at is None or from_iso(expires_at) - margin > now()


def merge_refresh(tokens: Tokens, answer: dict[str, Any]) -> Tokens:
    """The bundle after a refresh answer: new access token and expiry; a new refresh token
    only when the answer carries a non-empty one."""
    merged = dict(tokens)
    merged["access_token"] = answer["access_token"]
    expires_in = answer.get("expires_in")
    merged["expires_at"] = (
        iso(now() + timedelta(seconds=int(expires_in))) if expires_in is not None else None
    )
    if answer.get("refresh_token"):
        merged["refresh_token"] = answer["refresh_token"]
    if answer.get("scope"):
        # RFC 6749 lists scopes with spaces; TikTok, Pinterest and LinkedIn with commas.
        merged["scopes"] = str(answer["scope"]).replace(",", " ").split()
    return merged


def fresh_tokens(
    db: Database,
    home: Path,
    *,
    platform: str,
    title: str,
    refresh: Callable[[Tokens], dict[str, Any]],
    label: str = DEFAULT_LABEL,
    rejected_token: str | None = None,
    margin: timedelta = REFRESH_MARGIN,
) -> Tokens:
    """The account's tokens with an access token good for at least `margin`.

    `refresh(tokens)` asks the platform for a new access token and returns its JSON answer
    (`access_token`, `expires_in`, maybe `refresh_token`); it raises RefreshRefused when the
    platform refuses for good, RefreshFailed when it may work later. `rejected_token` is an
    access token the platform just answered 401 to: it is refreshed even if not yet expired,
    unless another run has replaced it meanwhile.

    Raises NotConnected, ReconnectNeeded (the account is now marked), RefreshFailed, VaultError.
    """
    account = require_account(db, platform, title, label)
    tokens = open_tokens(db, home, account)
    if _fresh(tokens, margin, rejected_token):
        return tokens
    with account_lock(db, platform, label):
        # Another run may have refreshed while this one waited for the lease.
        account = require_account(db, platform, title, label)
        tokens = open_tokens(db, home, account)
        if _fresh(tokens, margin, rejected_token):
            return tokens
        if not tokens.get("refresh_token"):
            reason = f"{title} gave no refresh token; {reconnect_hint(platform)}"
            mark_reconnect(db, platform, reason, label)
            raise ReconnectNeeded(reason)
        try:
            answer = refresh(tokens)
        except RefreshRefused as refused:
            reason = f"{title} refused the saved sign-in ({refused.reason}); " + reconnect_hint(
                platform
            )
            mark_reconnect(db, platform, reason, label)
            raise ReconnectNeeded(reason) from None
        tokens = merge_refresh(tokens, answer)
        _store_tokens(db, home, account, tokens)  # saved before the lease is given back
    return tokens
