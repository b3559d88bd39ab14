"""A damaged publish journal (issue 24): a line that is not UTF-8, a line without its fields,
a folder where the file should be. Every command that reads it says so in one line naming the
file, the line and what to do, exits 3, and nothing is posted until a person mends it.

The commands run as real processes, as cron and a person run them: every one for the first
damage; for the others, `run-due` (cron's) still does, and what a person runs is run in this
process (tests/test_bad_input.in_process: the same app, and what a process of its own would
also write on stderr), since what differs from one damage to the next is the journal's reading,
not the process.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from autoretto import journal
from autoretto.errors import JournalDamaged
from tests.support import channel_toml, outbox_sidecars, run_command, write_config
from tests.test_bad_input import in_process

HELD = 3

DAMAGES = {
    "a line that is not UTF-8": (b'\xff\xfe{"kind": "publish"}\n', "line 4 is not UTF-8 text"),
    "a line without its fields": (
        b'{"kind":"publish","seq":999999}\n',
        "line 4 is a publish line without a usable at, post_id, episode_id, channel, platform",
    ),
    "a folder": (None, "is a folder, not the journal file"),
}


def published_once(home: Path, cli, clip) -> Path:
    """A home whose first episode went out at 10:00 (the journal has its attempt, publish and
    stamp lines) and whose second is ready for 11:00; returns the journal's path."""
    write_config(home, channel_toml())
    assert cli("init")[0] == 0
    for title in ("One", "Two"):
        code, _, err = cli("episode", "add", "lofi", str(clip), "--title", title)
        assert code == 0, err
    cli("run-due", now="2026-11-29T09:00:00Z")
    code, _, err = cli("run-due", now="2026-11-29T10:05:00Z")
    assert code == 0, err
    assert len(outbox_sidecars(home)) == 1
    path = Path(cli.json("journal")["journal"])
    assert len(path.read_bytes().splitlines()) == 3
    return path


def damage(path: Path, how: str) -> bytes:
    """Damage the journal `how`; returns its bytes from before."""
    kept = path.read_bytes()
    line, _ = DAMAGES[how]
    if line is None:
        path.unlink()
        path.mkdir()
    else:
        with open(path, "ab") as writer:
            writer.write(line)
    return kept


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_journal_is_named_in_one_line_and_holds_posting(home, cli, caplog, clip, how):
    path = published_once(home, cli, clip)
    kept = damage(path, how)
    said = DAMAGES[how][1]
    posts_before = cli.json("posts")

    def run(*args: str, now: str | None = None) -> tuple[int, str, str]:
        if how == next(iter(DAMAGES)) or args[0] == "run-due":
            return run_command(*args, now=now)
        return in_process(cli, caplog, *args, now=now)

    for args in (["journal"], ["resume", "--checked"], ["status"], ["run-due"]):
        code, out, err = run(*args, now="2026-11-29T11:05:00Z")
        assert code == HELD, (args, out, err)
        assert "Traceback" not in err, err
        (line,) = [text for text in err.splitlines() if str(path) in text]
        assert said in line and "posting is held" in line, line
        assert "`autoretto journal`" in line, line  # what to do next
        if args != ["run-due"]:
            assert err.count("\n") == 1 and out == "", (args, out, err)
        else:
            assert line.startswith("POSTING IS HELD: "), line

    code, out, err = run("doctor", now="2026-11-29T11:05:00Z")
    assert code == HELD and "Traceback" not in err, err
    assert f"problem   {path}" in out and said in out, out
    facts = json.loads(run("doctor", "--json")[1])
    assert said in facts["held"] and said in facts["problems"][0]

    # Nothing went out while the journal could not be read, and nothing was written back.
    assert len(outbox_sidecars(home)) == 1
    assert cli.json("posts") == posts_before

    # Mended as the line says (the line deleted, or the folder moved away and the journal
    # put back), posting goes on where it stopped: episode 2 on the 11:00 slot.
    if path.is_dir():
        path.rmdir()
    path.write_bytes(kept)
    assert cli.json("journal")["held"] is None
    code, _, err = run_command("run-due", now="2026-11-29T11:06:00Z")
    assert code == 0, err
    assert [s["title"] for s in outbox_sidecars(home)] == ["One", "Two"]


def test_a_folder_moved_away_leaves_a_lost_journal_that_resume_rebuilds(home, cli, clip):
    """The advice for a folder: move it away. The journal is then missing while the database
    has numbers, the hold of a lost journal; `resume --checked` writes the database's lines."""
    path = published_once(home, cli, clip)
    damage(path, "a folder")
    shutil.move(path, path.with_name("publish.journal.damaged"))
    code, out, err = run_command("journal")
    assert code == 0 and "is missing" in out, (out, err)
    code, out, err = run_command("resume", "--checked")
    assert code == 0, err
    assert [json.loads(line)["seq"] for line in path.read_text().splitlines()] == [1, 2, 3]
    code, _, err = run_command("run-due", now="2026-11-29T11:06:00Z")
    assert code == 0, err
    assert [s["title"] for s in outbox_sidecars(home)] == ["One", "Two"]


def test_a_line_torn_by_a_crash_is_no_damage(home, cli, clip):
    """A last line without its line break is an append a crash cut short: passed over as
    before, not taken for damage."""
    path = published_once(home, cli, clip)
    with open(path, "ab") as writer:
        writer.write(b'{"at": "2026-11-29T10:05:00Z", "kind": "pub')
    code, out, err = run_command("journal")
    assert code == 0 and "#3, database: #3" in out, (out, err)
    code, _, err = run_command("run-due", now="2026-11-29T11:05:00Z")
    assert code == 0, err
    assert len(outbox_sidecars(home)) == 2


def test_a_damaged_line_in_the_tail_of_a_long_journal_is_named_by_its_number(tmp_path):
    """Status and run-due read only the journal's last 64 KiB: a damaged line found there is
    still named by its line number in the whole file."""
    path = tmp_path / "publish.journal"
    line = {"kind": "resumed", "at": "2026-11-29T10:05:00Z", "seq": 1}
    lines = [json.dumps({**line, "seq": number}) for number in range(1, 5001)]
    lines.append('{"kind": "stamp", "seq": 5001, "at": "2026-11-29T10:05:00Z"}')
    lines.append(json.dumps({**line, "seq": 5002}))
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size > 3 * 64 * 1024  # the tail is a part of the file
    for read in (journal.journal_seq, journal.entries):
        with pytest.raises(JournalDamaged) as caught:
            read(path)
        assert caught.value.line == 5001
        assert f"{path}: line 5001 is a stamp line without a usable channel, slot, slot_at" in str(
            caught.value
        )
    path.write_text("\n".join(lines[:5000]) + "\n")
    assert journal.journal_seq(path) == 5000 and len(journal.entries(path)) == 5000
