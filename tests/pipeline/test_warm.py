"""`autoretto doctor --warm` tracks the beats of a few seconds of clicks once."""

import json
import os
import subprocess
import sys


def test_doctor_warm_tracks_beats_once_and_says_how_long(tmp_path):
    env = {**os.environ, "AUTORETTO_HOME": str(tmp_path / "home")}
    subprocess.run([sys.executable, "-m", "autoretto", "init"], env=env, check=True)
    done = subprocess.run(
        [sys.executable, "-m", "autoretto", "doctor", "--warm", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout)
    assert facts["warmed_seconds"] > 0
    plain = subprocess.run(
        [sys.executable, "-m", "autoretto", "doctor", "--warm"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "beats     tracked once in" in plain.stdout
