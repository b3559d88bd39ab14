"""Shared fixtures: every test gets its own Autoretto home; time comes from AUTORETTO_NOW."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import Cli


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh AUTORETTO_HOME per test; no inherited clock override or fault."""
    home = tmp_path / "home"
    monkeypatch.setenv("AUTORETTO_HOME", str(home))
    for name in ("AUTORETTO_NOW", "AUTORETTO_FAULT"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture(scope="session")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-second 160x90 H.264/AAC clip, made once for the session."""
    from autoretto.ffmpeg import run_ffmpeg

    path = tmp_path_factory.mktemp("media") / "clip.mp4"
    run_ffmpeg(
        [
            "-y", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=30:duration=1",
            "-f", "lavfi", "-i", "sine=frequency=440:duration=1",
            "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
            "-c:a", "aac", "-t", "1", str(path),
        ]
    )  # fmt: skip
    return path


@pytest.fixture
def cli() -> Cli:
    return Cli()
