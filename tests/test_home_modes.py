"""The home holds secrets (the notify topic, the heartbeat address, sealed tokens): everything
Autoretto makes in it is its owner's alone, whatever the umask of the shell or cron."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from tests.support import channel_toml, outbox_sidecars, write_config

SECRET_NOTIFY = '\n[notify]\nwebhook = "http://127.0.0.1:9/ntfy/secret-topic"\n'


def run_with_umask(*args: str, now: str | None = None) -> tuple[int, str, str]:
    """`autoretto ARGS` as a real process started with the usual umask of 022."""
    env = dict(os.environ)
    if now:
        env["AUTORETTO_NOW"] = now
    done = subprocess.run(
        [sys.executable, "-m", "autoretto", *args],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: os.umask(0o022),
        check=False,
        timeout=120,
    )
    return done.returncode, done.stdout, done.stderr


def test_the_home_is_0700_and_its_files_0600(home, clip):
    code, _, err = run_with_umask("init")
    assert code == 0, err
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "autoretto.toml").stat().st_mode) == 0o600
    assert stat.S_IMODE((home / "autoretto.db").stat().st_mode) == 0o600

    (home / "autoretto.toml").write_text(
        channel_toml() + '\n[platforms.folder]\npath = "outbox"\n' + SECRET_NOTIFY
    )
    code, _, err = run_with_umask("episode", "add", "lofi", str(clip), "--title", "One")
    assert code == 0, err
    for now in ("2026-11-29T09:00:00Z", "2026-11-29T10:05:00Z"):
        code, _, err = run_with_umask("run-due", now=now)
        assert code == 0, err
    assert len(outbox_sidecars(home)) == 1
    code, out, err = run_with_umask("journal", "--json")
    assert code == 0, err
    journal = json.loads(out)["journal"]

    made = [home, *home.rglob("*")]
    assert home / "logs" / "run.log" in made and home / "media" in made
    assert any(path.suffix == ".mp4" for path in (home / "outbox").rglob("*"))
    open_to_others = {
        str(path.relative_to(home)): oct(stat.S_IMODE(path.stat().st_mode))
        for path in made
        if stat.S_IMODE(path.stat().st_mode) & 0o077
    }
    assert open_to_others == {}
    assert stat.S_IMODE(os.stat(journal).st_mode) == 0o600


# -- files another user can write (issue 24) -------------------------------------------------


def journal_folder(home) -> Path:
    from autoretto.journal import default_path

    return default_path(home).parent


def mode_of(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_init_makes_an_existing_home_and_the_journal_folder_private(home):
    """A home (and a journal folder) that already existed, open to the group: init makes them
    0700 and says so, whatever its umask."""
    home.mkdir(mode=0o775)
    os.chmod(home, 0o775)  # the mode itself, whatever this test's umask
    state = journal_folder(home)
    state.mkdir(parents=True)
    os.chmod(state, 0o777)
    code, out, err = run_with_umask("init")
    assert code == 0, err
    assert (mode_of(home), mode_of(state)) == (0o700, 0o700)
    assert f"{home}: the home was mode 0775; made it 0700" in out
    assert f"{state}: the journal's folder was mode 0777; made it 0700" in out
    code, out, _ = run_with_umask("init")  # nothing left to tighten: nothing said
    assert code == 0 and "made it 0700" not in out


def test_init_refuses_a_home_it_cannot_make_private(home, cli, monkeypatch):
    """Tests run as root, who may chmod anything: a refused chmod is played here."""
    import autoretto.commands.setup as setup

    home.mkdir(mode=0o775)
    os.chmod(home, 0o775)

    def refused(path, mode):
        raise PermissionError(1, "Operation not permitted", str(path))

    monkeypatch.setattr(setup.os, "chmod", refused)
    code, _, err = cli("init")
    assert code == 2
    assert err.strip() == (
        f"autoretto: {home}: the home is mode 0775, open to others, and cannot be made 0700 "
        f"(Operation not permitted); run `chmod 700 {home}` as its owner"
    )
    assert sorted(p.name for p in home.iterdir()) == []  # nothing made in it


def test_doctor_names_what_others_can_write_and_the_chmod_that_fixes_it(home, cli):
    write_config(home, channel_toml())
    assert cli("init")[0] == 0
    journal = Path(cli.json("journal")["journal"])
    journal.touch(mode=0o600)
    (home / "vault.key").write_text("not needed to be a key for its mode to be checked\n")
    (home / "serve.key").write_text("x\n")
    opened = {
        home: 0o775,
        journal.parent: 0o777,
        journal: 0o666,
        home / "vault.key": 0o620,
        home / "serve.key": 0o602,
    }
    for path, mode in opened.items():
        os.chmod(path, mode)
    code, out, err = run_with_umask("doctor")
    assert code == 1, (out, err)
    problems = [line for line in out.splitlines() if "can be written by others" in line]
    assert len(problems) == len(opened), out
    fixes = []
    for path, mode in opened.items():
        (line,) = [p for p in problems if f" {path} can be written by others" in p]
        assert f"(mode {mode:04o})" in line, line
        fix = line.rsplit("run `", 1)[1].rstrip("`")
        assert fix == f"chmod {700 if path.is_dir() else 600} {path}", line
        fixes.append(fix)
    assert "readable by others" not in out  # the vault key is named once, for the worse
    for fix in fixes:  # what doctor says to run, run
        subprocess.run(fix, shell=True, check=True)
    code, out, err = run_with_umask("doctor")
    assert "can be written by others" not in out and code == 0, (out, err)


def test_a_planted_cache_never_runs_code(home, tmp_path):
    """Whoever could write the home's cache must not run code as its owner with the next
    `status`: a pickle made to create a folder when loaded (the old cache's name and the new
    one's), and a JSON cache that names a function instead of a config class."""
    import pickle

    from autoretto.config import Paths, _cache_key

    write_config(home, channel_toml())
    code, _, err = run_with_umask("init")
    assert code == 0, err
    cache = home / ".cache"
    planted = tmp_path / "planted"

    class Plant:
        def __reduce__(self):
            return (os.mkdir, (str(planted),))

    key = _cache_key(Paths(home), (home / "autoretto.toml").read_bytes())
    for name in ("config.pickle", "config.json"):
        (cache / name).write_bytes(pickle.dumps((key, Plant())))
        code, out, err = run_with_umask("status", "--json")
        assert code == 0, err
        assert [c["channel"] for c in json.loads(out)["channels"]] == ["lofi"]
        assert not planted.exists(), f"a planted {name} ran its code"
    assert not (cache / "config.pickle").exists()  # the old cache is removed, never read
    forged = {"key": key, "nodes": [{"class": "os.mkdir", "fields": [str(planted)]}]}
    (cache / "config.json").write_text(json.dumps(forged))
    os.chmod(cache / "config.json", 0o600)
    code, out, err = run_with_umask("status", "--json")
    assert code == 0, err
    assert not planted.exists(), "the cache built a class it does not list"
    assert [c["channel"] for c in json.loads(out)["channels"]] == ["lofi"]


def test_a_cache_others_can_write_is_not_read(home):
    """The cache read only when it is the owner's alone: a valid cache with another channel in
    it is used at 0600 (so the check is what tells) and passed over at 0666."""
    write_config(home, channel_toml())
    code, _, err = run_with_umask("init")
    assert code == 0, err
    cache = home / ".cache" / "config.json"
    cache.write_text(cache.read_text().replace('"lofi"', '"forged"'))

    def channels() -> list[str]:
        code, out, err = run_with_umask("status", "--json")
        assert code == 0, err
        return [c["channel"] for c in json.loads(out)["channels"]]

    os.chmod(cache, 0o666)
    assert channels() == ["lofi"]  # parsed afresh, and the cache written again
    cache.write_text(cache.read_text().replace('"lofi"', '"forged"'))
    os.chmod(cache, 0o600)
    assert channels() == ["forged"]
