"""`autoretto doctor`: is this home ready to run from cron, and what must a person fix?

`check` looks at the home's paths, its config (missing, or there but wrong, told apart), the
database, where the vault key and the publish journal are, which of the home, the journal and
the key files others could write, the accounts (no secrets), the platforms that cannot post
(not connected, refused, failing slot after slot: problems, health.py) and the stocks that cover
fewer than three coming slots (warnings), each connected platform's API version and its end,
Suno's credits and Gemini's models, and whether posting is held (after a restore, or over a
damaged journal). What is wrong is a list of problems in plain words (empty
when all is well); what is worth fixing but breaks nothing, a list of warnings. `exit_code`
gives the code of the one table for them.
"""

from __future__ import annotations

import shlex
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .accounts import Account, list_accounts, open_tokens
from .bucket import BucketError
from .clock import now
from .errors import AutorettoError, Exit, JournalDamaged, StoreError
from .vault import Vault

if TYPE_CHECKING:
    from .config import Config, Paths
    from .ledger.store import Store as Database


def check(paths: Paths, *, warm: bool = False) -> dict[str, Any]:
    """What `autoretto doctor` shows (its `--json`): `home`, `config` (`path`, `ok`, `state`:
    ok, missing or invalid, and the `error` of an invalid one), `database`, `media` (`folder`,
    `url` of the media bucket or None, `ok`: it answered), `vault`,
    `accounts`, `journal`, `held` (why posting is held, else None), `api_versions`,
    `trouble` and `stock` (health.py), `providers`, `problems` and `warnings`; with `warm`,
    the beats of a few seconds of clicks are tracked first, and `warmed_seconds` says how
    long that took."""
    from .config import load_config
    from .ledger.postgres import shown_url
    from .ledger.store import clock_offset, open_database, store_problems, store_url
    from .platforms import FIELDS

    problems: list[str] = []
    warnings: list[str] = []
    config = None
    config_state, config_error = "missing", None
    providers: dict[str, list] = {"providers": [], "problems": [], "warnings": []}
    if paths.config.exists():
        try:
            config = load_config(paths, platforms=FIELDS)
            config_state = "ok"
        except AutorettoError as error:
            config_state, config_error = "invalid", str(error)
            problems.append(f"the config is invalid: {error}")
        else:
            from .pipeline.health import provider_health

            providers = provider_health(config, now().date().isoformat())
            problems.extend(providers["problems"])
            warnings.extend(providers["warnings"])
    else:
        problems.append(f"{paths.config}: no config; run `autoretto init`")
    journal_path = config.journal if config is not None else None
    url = store_url(config.store_url if config is not None else None)
    same_disk = False
    if journal_path is not None:
        from .journal import placement_warnings, same_disk_warning, shares_the_database_disk

        warnings.extend(
            placement_warnings(
                journal_path, paths.home, paths.database, shared_store=url is not None
            )
        )
        same_disk = shares_the_database_disk(journal_path, paths.database)
        if same_disk and (said := same_disk_warning(journal_path, paths.home)):
            warnings.append(said)
    place = Vault(paths.home).place()
    on_disk = journal_path if isinstance(journal_path, Path) else None
    writable = writable_by_others(paths, on_disk)
    problems.extend(writable.values())
    if (
        place.kind == "file"
        and place.file_mode not in ("0600", "0400")
        and place.detail not in writable
    ):
        problems.append(
            f"{place.detail} is readable by others (mode {place.file_mode}); chmod 600 it"
        )
    found: list[Account] = []
    versions: list[dict[str, Any]] = []
    troubles: list[dict[str, Any]] = []
    stocks: list[dict[str, Any]] = []
    held = None
    database_ok = paths.database.exists() or url is not None
    db = None
    offset = None
    if database_ok:
        try:
            db = open_database(paths.database, create=False, url=url)
        except StoreError as error:
            problems.append(str(error))
            database_ok = False
        else:
            offset = clock_offset(db)
            problems.extend(store_problems(db))
    if db is not None:
        found = list_accounts(db)
        for account in found:
            if account.state != "connected":
                problems.append(f"{account.platform}: {account.reason}")
                continue
            try:
                open_tokens(db, paths.home, account)
            except AutorettoError as error:
                problems.append(f"{account.platform}: {error}")
        versions, platform_problems, platform_warnings = _platform_health(config, db)
        problems += platform_problems
        warnings += platform_warnings
        if config is not None:
            from .health import platform_trouble, stock_forecast

            troubles = [t.to_json() for t in platform_trouble(config, db, now())]
            stocks = [s.to_json() for s in stock_forecast(config, db, now())]
            # A refused account is a problem of its own above (the accounts' loop).
            problems += [t["line"] for t in troubles if t["kind"] != "refused"]
            warnings += [f"stock low: {s['line']}" for s in stocks if s["low"]]
        if journal_path is not None:
            from .journal import restore_hold

            try:
                hold = restore_hold(db, journal_path)
            except JournalDamaged as error:  # a problem to list among the others
                held = str(error)
                problems.insert(0, held)
            except BucketError as error:  # the journal's bucket: unreachable, or refused
                problems.append(str(error))
            else:
                if hold is not None:
                    held = hold.reason
                    problems.insert(0, f"posting is held: {hold.reason}")
    elif url is None:
        problems.append(f"{paths.database}: no database; run `autoretto init`")
    media = _media_place(config, paths, problems)
    facts = {
        "home": str(paths.home),
        # where episode media lives: this home's folder, and with `[media] url` the bucket
        "media": media,
        "config": {
            "path": str(paths.config),
            "ok": config_state == "ok",
            "state": config_state,
            "error": config_error,
        },
        "database": {
            "path": str(paths.database),
            "ok": database_ok,
            "store": "postgresql" if url else "sqlite",
            "url": shown_url(url) if url else None,
            # this host's system clock less the database's (PostgreSQL; None: the SQLite file)
            "clock_offset_seconds": None if offset is None else round(offset.seconds, 3),
        },
        "vault": {
            "key": place.kind,
            "where": place.detail,
            "keyring_usable": place.keyring_usable,
            "keyring": place.keyring_name,
            "file_mode": place.file_mode,
            "variable": place.variable,
        },
        "accounts": [account.to_json() for account in found],
        "journal": {
            "path": str(journal_path) if journal_path else None,
            "kind": None if journal_path is None else "file" if on_disk else "bucket",
            # on the database's file system (warned about once, then only here)
            "same_file_system": same_disk,
        },
        "held": held,
        "api_versions": versions,
        # platforms that cannot post and each channel's stock (health.py, as `status` has them)
        "trouble": troubles,
        "stock": stocks,
        "providers": providers["providers"],
        "problems": problems,
        "warnings": warnings,
    }
    if warm:
        from .pipeline.beats import warm as warm_beats

        facts["warmed_seconds"] = round(warm_beats(), 1)
    return facts


def _media_place(config: Config | None, paths: Paths, problems: list[str]) -> dict[str, Any]:
    """{folder, url, ok}: `ok` when the media bucket answered a listing (None: no bucket)."""
    url = getattr(getattr(config, "media", None), "url", None)
    found: dict[str, Any] = {"folder": str(paths.media), "url": url, "ok": None}
    if url:
        from .bucket import Bucket, BucketError

        try:
            next(Bucket(url).names("episodes/"), None)
            found["ok"] = True
        except BucketError as error:
            found["ok"] = False
            problems.append(f"[media] url: {error}")
    return found


def writable_by_others(paths: Paths, journal: Path | None) -> dict[str, str]:
    """What others (the group, anyone) can write of what Autoretto trusts: the home (its config
    can run commands), the journal and its folder (what went out), the vault key and the page's
    link key. Path -> the problem, naming the `chmod` that fixes it."""
    from .vault import key_file
    from .web.links import KEY_NAME

    home = "could change the config or its cache and have Autoretto run their commands as you"
    lines = "could rewrite what it says went out, and lift or cause a hold"
    checked = [
        (paths.home, "the home", home, 0o700),
        (key_file(paths.home), "the vault key", "could swap the key your tokens are sealed with",
         0o600),
        (paths.home / KEY_NAME, "the page's link key", "could sign review links", 0o600),
    ]  # fmt: skip
    if journal is not None:
        checked += [(journal.parent, "the publish journal's folder", lines, 0o700),
                    (journal, "the publish journal", lines, 0o600)]  # fmt: skip
    found = {}
    for path, what, risk, wanted in checked:
        try:
            facts = path.stat()
        except OSError:  # not there (yet): nothing to open up
            continue
        mode = stat.S_IMODE(facts.st_mode)
        # A sticky folder (/tmp) lets no one else rename or remove what is ours in it.
        if not mode & 0o022 or (stat.S_ISDIR(facts.st_mode) and mode & stat.S_ISVTX):
            continue
        found[str(path)] = (
            f"{what} {path} can be written by others (mode {mode:04o}): they {risk}; run "
            f"`chmod {wanted:o} {shlex.quote(str(path))}`"
        )
    return found


def exit_code(facts: dict[str, Any]) -> Exit:
    """A config that is missing or wrong (or no database): a set-up mistake, 2; posting held:
    3; any other problem: 1; else 0."""
    if not facts["config"]["ok"] or not facts["database"]["ok"]:
        return Exit.MISTAKE
    if facts["held"]:
        return Exit.HELD
    return Exit.NEEDS_PERSON if facts["problems"] else Exit.DONE


def _platform_health(
    config: Config | None, db: Database
) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """(API versions of the connected platforms, problems, warnings): a version past its end
    is a problem, one ending within 30 days a warning, and so is a YouTube upload seen kept
    private (the account remembers the last one)."""
    from .platforms import platform_class
    from .platforms.notices import connected_versions

    versions = connected_versions(config, db, now().date())
    problems = [v["reason"] for v in versions if v["state"] == "ended"]
    warnings = [v["reason"] for v in versions if v["state"] == "ending"]
    for account in list_accounts(db):
        try:
            warnings.extend(platform_class(account.platform).account_warnings(account.meta))
        except KeyError:  # a platform this version does not have
            continue
    return versions, problems, warnings
