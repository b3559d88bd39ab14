"""API versions and their end dates in `doctor`, `status`, the report and the notifier; a
YouTube upload kept private shown the same way. The posts and accounts are made directly in
the database: the adapters' own tests show how they come to be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autoretto.accounts import save_account, update_meta
from autoretto.clock import parse_instant
from autoretto.config import Paths, load_config
from autoretto.ledger.store import dumps, open_database
from autoretto.platforms import FIELDS
from autoretto.platforms.linkedin import LinkedInPlatform
from autoretto.platforms.notices import platform_warnings, tell_platform_warnings
from autoretto.platforms.versions import version_facts
from tests.support import channel_toml, write_config


@pytest.fixture
def home_with_linkedin(home: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("AUTORETTO_VAULT", "file")

    def make(version: str | None = None) -> object:
        extra = "[platforms.linkedin]\n" + (f'api_version = "{version}"\n' if version else "")
        write_config(home, channel_toml(), extra=extra)
        db = open_database(Paths(home).database)
        save_account(
            db, home, platform="linkedin", account_id="urn:li:person:abc", name="Rae",
            tokens={"access_token": "AQV-fake"}, meta={"author": "urn:li:person:abc"},
        )  # fmt: skip
        return db

    return make


#: doctor's warnings about other things than versions: the journal's disk, an empty stock
ELSEWHERE = ("the publish journal", "stock low")


def doctor(cli, now: str) -> tuple[int, dict]:
    code, out, _ = cli("doctor", "--json", now=now)
    return code, json.loads(out)


def test_doctor_lists_the_version_and_its_end(home_with_linkedin, cli) -> None:
    home_with_linkedin()
    code, facts = doctor(cli, "2026-11-29T12:00:00Z")
    (linkedin,) = facts["api_versions"]
    assert (linkedin["platform"], linkedin["version"], linkedin["ends"]) == (
        "linkedin", "202607", "2027-07-15",
    )  # fmt: skip
    assert linkedin["source"].startswith("https://learn.microsoft.com/")
    # (The test home's journal shares the database's disk, and its channel has no episode:
    # doctor says so, nothing else.)
    others = [w for w in facts["warnings"] if not w.startswith(ELSEWHERE)]
    assert code == 0 and others == [] and facts["problems"] == []
    _, out, _ = cli("doctor", now="2026-11-29T12:00:00Z")
    assert "linkedin: version 202607, served until 2027-07-15" in out


def test_a_version_ending_within_30_days_is_a_warning(home_with_linkedin, cli) -> None:
    home_with_linkedin()
    code, facts = doctor(cli, "2027-06-21T12:00:00Z")
    assert code == 0  # a warning, nothing a person must fix today
    (warning,) = [w for w in facts["warnings"] if not w.startswith(ELSEWHERE)]
    assert "202607" in warning and "2027-07-15" in warning and "in 24 days" in warning
    assert "api_version" in warning


def test_a_version_past_its_end_is_a_problem(home_with_linkedin, cli) -> None:
    home_with_linkedin("202511")
    code, facts = doctor(cli, "2026-11-29T12:00:00Z")
    assert code == 1
    assert any("stopped serving API version 202511 on 2026-11-16" in p for p in facts["problems"])
    code, out, _ = cli("doctor", now="2026-11-29T12:00:00Z")
    assert code == 1 and "problem   LinkedIn stopped serving API version 202511" in out


def test_a_version_missing_from_the_table_gets_an_estimated_end() -> None:
    facts = version_facts(LinkedInPlatform, {"api_version": "202609"})
    assert facts.ends.isoformat() == "2027-09-15" and facts.estimated


def test_status_shows_the_warning_and_the_notifier_hears_it_once(
    home, home_with_linkedin, cli
) -> None:
    db = home_with_linkedin("202511")
    report = cli.json("status", now="2026-11-29T12:00:00Z")
    (warning,) = report["platform_warnings"]
    assert warning["platform"] == "linkedin" and warning["level"] == "problem"
    _, out, _ = cli("status", now="2026-11-29T12:00:00Z")
    assert "stopped serving API version 202511" in out

    config = load_config(Paths(home), platforms=FIELDS)
    told: list[dict] = []
    notes: list[str] = []
    moment = parse_instant("2026-11-29T12:00:00Z")
    for _ in range(3):
        tell_platform_warnings(config, db, moment, lambda event, **f: told.append(f), notes)
    assert len(told) == 1 and "202511" in told[0]["reason"]
    assert len(notes) == 3  # every run's summary says it; the notifier is told once


def kept_private_post(db, home: Path) -> int:
    episode = db["episodes"].insert(
        {"channel": "lofi", "state": "ready", "title": "Rain", "created_at": "2026-11-29T10:00:00Z",
         "updated_at": "2026-11-29T10:00:00Z", "videos": "{}", "tags": "[]", "texts": "{}"},
    ).last_pk  # fmt: skip
    post = db["posts"].insert(
        {"episode_id": episode, "channel": "lofi", "platform": "youtube", "state": "published",
         "url": "https://www.youtube.com/watch?v=vid1", "platform_post_id": "vid1",
         "attempts": 1, "created_at": "2026-11-29T10:00:00Z",
         "updated_at": "2026-11-29T10:05:00Z", "published_at": "2026-11-29T10:05:00Z"},
    ).last_pk  # fmt: skip
    kept = {"video_id": "vid1", "privacy": "private", "seen_at": "2026-11-29T10:05:00Z"}
    db["post_attempts"].insert(
        {"post_id": post, "marker": "autoretto-1-1-aa", "run_id": "run-1",
         "started_at": "2026-11-29T10:00:00Z", "handles": dumps({"kept_private": kept})},
    )  # fmt: skip
    account = save_account(
        db, home, platform="youtube", account_id="UCfake", name="Rain Lofi",
        tokens={"access_token": "ya29-fake"}, meta={},
    )  # fmt: skip
    update_meta(db, account, {"kept_private": {"video_id": "vid1", "post_id": post, "at": "now"}})
    return post


def test_a_video_kept_private_is_said_in_status_report_and_doctor(
    home, home_with_linkedin, cli
) -> None:
    from autoretto.report import gather

    db = home_with_linkedin()
    post = kept_private_post(db, home)
    (warning,) = cli.json("status", now="2026-11-29T12:00:00Z")["platform_warnings"]
    assert warning["platform"] == "youtube" and f"post {post}" in warning["reason"]
    assert "keeps it private" in warning["reason"] and "audit" in warning["reason"]

    config = load_config(Paths(home), platforms=FIELDS)
    data = gather(config, db, parse_instant("2026-11-29T12:00:00Z"), days=7)
    assert any("keeps it private" in item.text for item in data.attention)

    code, facts = doctor(cli, "2026-11-29T12:00:00Z")
    assert code == 0 and any("keeps it private" in w for w in facts["warnings"])
    assert platform_warnings(config, db, parse_instant("2026-11-29T12:00:00Z"))
