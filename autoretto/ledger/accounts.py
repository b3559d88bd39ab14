"""Accounts, usage, credits and pauses: what a platform spends and who it posts as.

- `accounts`: one connected account per (platform, label); `sealed` is the vault's token bundle,
  every other column is plain and holds no secret.
- `usage`: a platform's daily allowances, what an account (or an API project) spent of each
  bucket on the platform's own day. Every change is one statement, so two runs never both spend
  the last unit.
- `credit_ledger`: platform credits reserved when a post is queued, charged once it is live,
  released when it fails for good (X).
- `pauses`: a platform paused for every channel until an instant (X credits exhausted).

No function here opens a transaction unless its docstring says so; those that do must not be
called from inside one.
"""

from __future__ import annotations

from typing import Any

from .store import dumps, execute, loads, row, rows, transaction

# -- accounts ----------------------------------------------------------------------------------

_COLUMNS = "platform, label, account_id, name, state, reason, meta, connected_at, updated_at"


def _shown(found: dict[str, Any]) -> dict[str, Any]:
    return {**found, "meta": loads(found["meta"], {})}


def find_account(db: Any, platform: str, label: str) -> dict[str, Any] | None:
    """The account's plain columns (its `meta` decoded), or None; never its sealed tokens."""
    found = row(
        db,
        f"SELECT {_COLUMNS} FROM accounts WHERE platform = ? AND label = ?",
        (platform, label),
    )
    return None if found is None else _shown(found)


def all_accounts(db: Any) -> list[dict[str, Any]]:
    """Every account's plain columns, by platform and label."""
    return [
        _shown(found)
        for found in rows(db, f"SELECT {_COLUMNS} FROM accounts ORDER BY platform, label")
    ]


def connected_platforms(db: Any) -> list[str]:
    """Each platform that has an account row (connected or to reconnect), once."""
    return [found["platform"] for found in rows(db, "SELECT DISTINCT platform FROM accounts")]


def accounts_to_reconnect(db: Any) -> list[dict[str, Any]]:
    """platform, label, name, reason of every account not connected, by platform and label."""
    return rows(
        db,
        "SELECT platform, label, name, reason FROM accounts WHERE state != 'connected'"
        " ORDER BY platform, label",
    )


def sealed_account(db: Any, platform: str, label: str) -> dict[str, Any] | None:
    """`account_id` and `sealed` (bytes or None) of the account under (platform, label)."""
    return row(
        db,
        "SELECT account_id, sealed FROM accounts WHERE platform = ? AND label = ?",
        (platform, label),
    )


def count_other_sealed(db: Any, platform: str, label: str) -> int:
    """How many accounts other than (platform, label) hold sealed tokens."""
    found = row(
        db,
        "SELECT COUNT(*) AS n FROM accounts WHERE sealed IS NOT NULL"
        " AND NOT (platform = ? AND label = ?)",
        (platform, label),
    )
    return int(found["n"]) if found else 0


def connect_account(
    db: Any, *, platform: str, label: str, account_id: str, name: str, sealed: bytes,
    meta: dict[str, Any], now: str,
) -> None:  # fmt: skip
    """Store the account as connected, replacing an earlier connection under (platform, label)."""
    execute(
        db,
        "INSERT INTO accounts (platform, label, account_id, name, state, reason, sealed, meta,"
        " connected_at, updated_at) VALUES (:platform, :label, :account_id, :name, 'connected',"
        " NULL, :sealed, :meta, :now, :now)"
        " ON CONFLICT (platform, label) DO UPDATE SET account_id = excluded.account_id,"
        " name = excluded.name, state = 'connected', reason = NULL, sealed = excluded.sealed,"
        " meta = excluded.meta, connected_at = excluded.connected_at,"
        " updated_at = excluded.updated_at",
        {
            "platform": platform,
            "label": label,
            "account_id": account_id,
            "name": name,
            "sealed": sealed,
            "meta": dumps(meta),
            "now": now,
        },
    )


def set_account_meta(
    db: Any, platform: str, label: str, account_id: str, meta: dict[str, Any]
) -> None:
    """Replace the account's non-secret facts (when it is still the same account)."""
    execute(
        db,
        "UPDATE accounts SET meta = ? WHERE platform = ? AND label = ? AND account_id = ?",
        (dumps(meta), platform, label, account_id),
    )


def mark_account_reconnect(db: Any, platform: str, label: str, reason: str, now: str) -> None:
    """The account must be connected again by a person, for `reason`."""
    execute(
        db,
        "UPDATE accounts SET state = 'reconnect', reason = ?, updated_at = ?"
        " WHERE platform = ? AND label = ?",
        (reason, now, platform, label),
    )


def delete_account(db: Any, platform: str, label: str) -> None:
    execute(db, "DELETE FROM accounts WHERE platform = ? AND label = ?", (platform, label))


def sealed_tokens(db: Any, platform: str, label: str, account_id: str) -> bytes | None:
    """The sealed token bundle of this very account, None when it is gone or has none."""
    found = row(
        db,
        "SELECT sealed FROM accounts WHERE platform = ? AND label = ? AND account_id = ?",
        (platform, label, account_id),
    )
    return None if found is None else found["sealed"]


def store_sealed_tokens(
    db: Any, platform: str, label: str, account_id: str, sealed: bytes, now: str
) -> None:
    """Keep a newly sealed token bundle on this very account."""
    execute(
        db,
        "UPDATE accounts SET sealed = ?, updated_at = ?"
        " WHERE platform = ? AND label = ? AND account_id = ?",
        (sealed, now, platform, label, account_id),
    )


# -- usage -------------------------------------------------------------------------------------


def usage_used(db: Any, platform: str, account: str, bucket: str, day: str) -> int:
    """What `account` spent of `bucket` on `day` (0 when nothing)."""
    found = row(
        db,
        "SELECT used FROM usage WHERE platform = ? AND account = ? AND bucket = ? AND day = ?",
        (platform, account, bucket, day),
    )
    return int(found["used"]) if found else 0


def charge_usage(
    db: Any, platform: str, account: str, bucket: str, day: str, cost: int, allowance: int
) -> bool:
    """Count `cost` against the day's `bucket` when it still fits in `allowance`; False
    (nothing counted) when it does not. One statement."""
    return (
        execute(
            db,
            "INSERT INTO usage (platform, account, bucket, day, used)"
            " SELECT :platform, :account, :bucket, :day, :cost WHERE :cost <= :allowance"
            " ON CONFLICT (platform, account, bucket, day)"
            " DO UPDATE SET used = usage.used + excluded.used"
            " WHERE usage.used + excluded.used <= :allowance",
            {
                "platform": platform,
                "account": account,
                "bucket": bucket,
                "day": day,
                "cost": cost,
                "allowance": allowance,
            },
        )
        == 1
    )


def fill_usage(db: Any, platform: str, account: str, bucket: str, day: str, allowance: int) -> None:
    """Record the day's `bucket` used up to `allowance` (never lowering what was counted)."""
    execute(
        db,
        "INSERT INTO usage (platform, account, bucket, day, used) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (platform, account, bucket, day)"
        " DO UPDATE SET used = CASE WHEN usage.used > excluded.used"
        " THEN usage.used ELSE excluded.used END",
        (platform, account, bucket, day, allowance),
    )


def give_back_usage(db: Any, platform: str, account: str, bucket: str, day: str, cost: int) -> None:
    """Uncount `cost` from the day's `bucket`, never below 0."""
    execute(
        db,
        "UPDATE usage SET used = CASE WHEN used > :cost THEN used - :cost ELSE 0 END"
        " WHERE platform = :platform AND account = :account AND bucket = :bucket AND day = :day",
        {"cost": cost, "platform": platform, "account": account, "bucket": bucket, "day": day},
    )


def count_posts_toward_cap(db: Any, platform: str, since: str, post_id: int) -> int:
    """How many of `platform`'s posts count against a cap from `since` on: the ones published
    since then, and every one on its way (`sending`, or `may_be_live` after a lost answer: it
    may be live already), except post `post_id` itself (the post being decided on)."""
    found = row(
        db,
        "SELECT COUNT(*) AS n FROM posts WHERE platform = ? AND id != ? AND"
        " ((state = 'published' AND published_at >= ?) OR state IN ('sending', 'may_be_live'))",
        (platform, post_id, since),
    )
    return int(found["n"]) if found else 0


# -- credits -----------------------------------------------------------------------------------

#: the ledger's rows counted against a day (:start to :end): every open reservation and every
#: post charged that day
_COUNTED = (
    "platform = :platform AND (state = 'reserved'"
    " OR (state = 'charged' AND charged_at >= :start AND charged_at < :end))"
)


def reconcile_credits(db: Any, platform: str, now: str) -> None:
    """Bring reservations up to date with their posts: a post that went live is charged (a
    person's `confirm --live` included), one that needs a person is released. Opens its own
    transaction."""
    with transaction(db):
        execute(
            db,
            "UPDATE credit_ledger SET state = 'charged', charged_at = COALESCE("
            "(SELECT published_at FROM posts WHERE posts.id = credit_ledger.post_id), :now)"
            " WHERE platform = :platform AND state = 'reserved' AND post_id IN"
            " (SELECT id FROM posts WHERE state = 'published')",
            {"now": now, "platform": platform},
        )
        execute(
            db,
            "UPDATE credit_ledger SET state = 'released', released_at = :now,"
            " reason = 'the post failed for good' WHERE platform = :platform"
            " AND state = 'reserved' AND post_id IN"
            " (SELECT id FROM posts WHERE state = 'needs_person')",
            {"now": now, "platform": platform},
        )


def _committed(db: Any, platform: str, start: str, end: str, channel: str | None = None) -> int:
    """Posts counted against the day from `start` to `end` (`_COUNTED`), of one channel or of
    all."""
    where = " AND channel = :channel" if channel else ""
    found = row(
        db,
        f"SELECT COUNT(*) AS n FROM credit_ledger WHERE {_COUNTED}{where}",
        {"platform": platform, "start": start, "end": end, "channel": channel},
    )
    return int(found["n"]) if found else 0


def reserve_credits(
    db: Any, *, platform: str, post_id: int, channel: str, account: str, credits: int,
    start: str, end: str, daily_cap: int, channel_cap: int, now: str,
) -> tuple[str, int] | None:  # fmt: skip
    """Reserve a queued post's `credits` unless a daily cap (posts counted from `start` to
    `end`; 0: none) is reached. Returns None when reserved (or already reserved or charged: a
    post keeps its row), else the cap reached, ("installation" or "channel", the posts
    counted). Opens its own IMMEDIATE transaction, so two runs never both take the last post
    of a day."""
    with transaction(db):
        held = row(db, "SELECT state FROM credit_ledger WHERE post_id = ?", (post_id,))
        if held is not None and held["state"] in ("reserved", "charged"):
            return None
        everyone = _committed(db, platform, start, end)
        if daily_cap and everyone >= daily_cap:
            return "installation", everyone
        mine = _committed(db, platform, start, end, channel)
        if channel_cap and mine >= channel_cap:
            return "channel", mine
        execute(
            db,
            "INSERT INTO credit_ledger (post_id, platform, channel, account, state, credits,"
            " reserved_at) VALUES (:post, :platform, :channel, :account, 'reserved', :credits,"
            " :now) ON CONFLICT (post_id) DO UPDATE SET state = 'reserved',"
            " credits = excluded.credits, reserved_at = excluded.reserved_at, charged_at = NULL,"
            " released_at = NULL, reason = NULL",
            {
                "post": post_id,
                "platform": platform,
                "channel": channel,
                "account": account,
                "credits": credits,
                "now": now,
            },
        )
    return None


def charge_credits(db: Any, platform: str, post_id: int, now: str) -> None:
    """The post is live: its reservation becomes a charge (a row is made if it had none)."""
    execute(
        db,
        "INSERT INTO credit_ledger (post_id, platform, channel, account, state, credits,"
        " reserved_at, charged_at) SELECT id, :platform, channel, '', 'charged', 0, :now, :now"
        " FROM posts WHERE id = :post"
        " ON CONFLICT (post_id) DO UPDATE SET state = 'charged', charged_at = excluded.charged_at"
        " WHERE credit_ledger.state != 'charged'",
        {"platform": platform, "post": post_id, "now": now},
    )


def release_credits(db: Any, post_id: int, now: str, reason: str) -> None:
    """The post failed for good: its reservation is given back."""
    execute(
        db,
        "UPDATE credit_ledger SET state = 'released', released_at = ?, reason = ?"
        " WHERE post_id = ? AND state = 'reserved'",
        (now, reason, post_id),
    )


def credits_of_day(db: Any, platform: str, start: str, end: str) -> list[dict[str, Any]]:
    """channel, state, posts and credits (their sum) of the rows counted against the day from
    `start` to `end`, per channel and state."""
    return rows(
        db,
        # SUM cast back to an integer: PostgreSQL sums a bigint column as numeric (a Decimal).
        "SELECT channel, state, COUNT(*) AS posts, CAST(SUM(credits) AS BIGINT) AS credits"
        f" FROM credit_ledger WHERE {_COUNTED} GROUP BY channel, state",
        {"platform": platform, "start": start, "end": end},
    )


# -- pauses ------------------------------------------------------------------------------------


def find_pause(db: Any, platform: str) -> dict[str, Any] | None:
    """The platform's last pause (paused_until, reason, set_at), over or not; None if never."""
    return row(
        db, "SELECT paused_until, reason, set_at FROM pauses WHERE platform = ?", (platform,)
    )


def pause_platform(db: Any, platform: str, until: str, reason: str, now: str) -> None:
    """Pause the platform until `until` (a pause already running longer keeps its end)."""
    execute(
        db,
        "INSERT INTO pauses (platform, paused_until, reason, set_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (platform) DO UPDATE SET paused_until = CASE"
        " WHEN pauses.paused_until > excluded.paused_until THEN pauses.paused_until"
        " ELSE excluded.paused_until END, reason = excluded.reason, set_at = excluded.set_at",
        (platform, until, reason, now),
    )
