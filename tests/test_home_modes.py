"""The home holds secrets (the notify topic, the heartbeat address, sealed tokens): everything
Autoretto makes in it is its owner's alone, whatever the umask of the shell or cron."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

from tests.support import channel_toml, outbox_sidecars

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
