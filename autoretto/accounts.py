"""Connected accounts: tokens sealed in the vault, refreshed under a lock (ARCHITECTURE.md §6).

One row of `accounts` per (platform, label). Its `sealed` column is the whole token bundle
(access token, refresh token, expiry, client id and secret, token URI, scopes) sealed with the
vault, bound to the account's identity as associated data; every other column is plain and holds
no secret, so `autoretto accounts` and `doctor` never need the key.

A token is refreshed shortly before it expires, under an exclusive `flock` on
`<home>/locks/<platform>-<label>.lock`: a second run that wants to refresh the same account
waits, then finds the fresh token the first one saved and uses it. The new token (and a rotated
refresh token, when the platform sends one) is saved before the lock is released; an empty
refresh token never replaces a stored one. A refresh the platform refuses for good marks the
account `reconnect` with a plain reason, and nothing is sent from it until a person connects
again.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .clock import from_iso, iso, now
from .errors import AutorettoError
from .ledger import accounts as ledger
from .vault import Vault

if TYPE_CHECKING:
    from .ledger.store import Store as Database


DEFAULT_LABEL = "default"
#: refresh when the access token has less than this left
REFRESH_MARGIN = timedelta(minutes=5)

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


@contextmanager
def account_lock(home: Path, platform: str, label: str = DEFAULT_LABEL) -> Iterator[None]:
    """Hold the account's refresh lock (blocks while another process holds it)."""
    folder = home / "locks"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor = os.open(folder / f"{platform}-{label}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing the only descriptor releases the lock


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
    with account_lock(home, platform, label):
        # Another run may have refreshed while this one waited for the lock.
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
        _store_tokens(db, home, account, tokens)  # saved before the lock is released
    return tokens
