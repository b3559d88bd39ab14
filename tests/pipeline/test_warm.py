"""`autoretto doctor --warm` tracks the beats of a few seconds of clicks once."""

import json
import os
import subprocess
import sys


def test_doctor_warm_tracks_beats_once_and_says_how_long(home, cli, monkeypatch):
    assert cli("init")[0] == 0  # the home (AUTORETTO_HOME is the test's own)
    # The warm-up itself in a process of its own, as a person runs it: a fresh interpreter,
    # where numpy and soundfile are not loaded yet.
    done = subprocess.run(
        [sys.executable, "-m", "autoretto", "doctor", "--warm", "--json"],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout)
    assert facts["warmed_seconds"] > 0
    # Without --json it says so in a line. The warm-up is the one above (a second one costs
    # as long again): this run's is the time that one measured.
    import autoretto.pipeline.beats

    monkeypatch.setattr(autoretto.pipeline.beats, "warm", lambda: facts["warmed_seconds"])
    code, out, err = cli("doctor", "--warm")
    assert code == 0, err
    assert f"beats     tracked once in {facts['warmed_seconds']:g} s" in out
