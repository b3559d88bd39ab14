"""The publish journal's place is decided once, by `init`, and recorded in the home: cron, whose
environment is not the login shell's (another HOME, no XDG_STATE_HOME, or another one), finds
the same journal, and posting goes on (issue 27, friction 7)."""

from __future__ import annotations

import json
from pathlib import Path

from autoretto.journal import PLACE_NAME
from tests.support import channel_toml, outbox_sidecars, run_command, write_config


def shell(tmp_path: Path, name: str) -> dict[str, str]:
    """An environment of its own: its HOME and its XDG state folder (a login shell, cron)."""
    return {"HOME": str(tmp_path / name), "XDG_STATE_HOME": str(tmp_path / name / "state")}


def test_cron_with_another_home_and_state_folder_finds_the_journal_init_chose(
    home: Path, tmp_path: Path, clip: Path
) -> None:
    login, cron = shell(tmp_path, "login"), shell(tmp_path, "cron")
    write_config(home, channel_toml("lofi", slots=("10:00", "11:00")))
    code, out, err = run_command("init", env=login)
    assert code == 0, err
    recorded = (home / PLACE_NAME).read_text().strip()
    assert recorded.startswith(login["XDG_STATE_HOME"]) and recorded.endswith("publish.journal")
    assert "the publish journal is" in out
    for title in ("One", "Two"):
        assert run_command("episode", "add", "lofi", str(clip), "--title", title, env=login)[0] == 0
    # From the login shell, the first slot goes out, journalled.
    for moment in ("2026-11-29T09:07:00Z", "2026-11-29T10:07:00Z"):
        code, _, err = run_command("run-due", now=moment, env=login)
        assert code == 0, err
    # Cron's HOME and state folder differ: before the record it held all posting (exit 3,
    # "the publish journal … is missing").
    code, out, err = run_command("run-due", now="2026-11-29T11:07:00Z", env=cron)
    assert code == 0, (out, err)
    assert "lofi 2026-11-29T11:00 folder: posted" in out
    assert len(outbox_sidecars(home)) == 2
    code, out, err = run_command("journal", "--json", env=cron)
    assert code == 0, err
    report = json.loads(out)
    assert report["journal"] == recorded and report["held"] is None
    assert not Path(cron["XDG_STATE_HOME"]).exists()  # nothing made in cron's own state folder


def test_a_home_from_before_the_record_records_where_its_journal_is(
    home: Path, tmp_path: Path, clip: Path
) -> None:
    login, cron = shell(tmp_path, "login"), shell(tmp_path, "cron")
    write_config(home, channel_toml("lofi", slots=("10:00", "11:00")))
    assert run_command("init", env=login)[0] == 0
    for title in ("One", "Two"):
        assert run_command("episode", "add", "lofi", str(clip), "--title", title, env=login)[0] == 0
    for moment in ("2026-11-29T09:07:00Z", "2026-11-29T10:07:00Z"):
        assert run_command("run-due", now=moment, env=login)[0] == 0
    journal = Path((home / PLACE_NAME).read_text().strip())
    (home / PLACE_NAME).unlink()  # as a home made by an Autoretto without the record

    # Cron alone cannot know the login shell's state folder: it holds, as before.
    code, _, err = run_command("run-due", now="2026-11-29T11:07:00Z", env=cron)
    assert code == 3 and "missing" in err, err
    assert not (home / PLACE_NAME).exists()  # a journal that is not there is not recorded
    # The next command from the login shell finds the journal where today's rule puts it and
    # records it; from then on cron finds it too.
    assert run_command("status", env=login)[0] == 0
    assert (home / PLACE_NAME).read_text().strip() == str(journal)
    code, out, err = run_command("run-due", now="2026-11-29T11:08:00Z", env=cron)
    assert code == 0, (out, err)
    assert "lofi 2026-11-29T11:00 folder: posted" in out


def test_a_record_that_names_no_file_is_one_line(home: Path, cli) -> None:
    write_config(home, channel_toml())
    assert cli("init")[0] == 0
    (home / PLACE_NAME).write_text("journal here\n")
    code, _, err = cli("status")
    assert code == 1
    assert f"{home / PLACE_NAME}: does not name the publish journal's file" in err
    assert len(err.strip().splitlines()) == 1


def test_doctor_says_once_that_the_journal_shares_the_databases_disk(home: Path, cli) -> None:
    """Issue 27, friction 8: on a box with one disk nothing else is possible, yet every
    `doctor` warned. It is said the first time, with what to back up; then only the JSON says
    it, and a journal moved to another place on that disk is said once again."""
    write_config(home, channel_toml())
    assert cli("init")[0] == 0
    code, out, _ = cli("doctor")
    assert code == 0
    assert "is on the same file system as the database" in out
    assert "Back up the journal's folder" in out and "(said once;" in out
    for _ in range(2):
        code, out, _ = cli("doctor")
        assert code == 0 and "same file system" not in out, out
        facts = cli.json("doctor")
        assert facts["journal"]["same_file_system"] is True
        assert not [w for w in facts["warnings"] if "same file system" in w]
    elsewhere = home.parent / "elsewhere" / "publish.journal"  # the same disk
    write_config(home, f'journal = "{elsewhere}"\n' + channel_toml())
    facts = cli.json("doctor")
    assert [w for w in facts["warnings"] if "same file system" in w]
