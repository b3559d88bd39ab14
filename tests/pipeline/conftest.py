"""Fixtures for the pipeline tests: small, fast settings and synth tracks."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # so `tests.fakes` imports however pytest is started
    sys.path.insert(0, str(ROOT))

from autoretto.pipeline import MakeRequest  # noqa: E402
from autoretto.pipeline.settings import parse_pipeline, parse_providers  # noqa: E402

ALL_PLATFORMS = (
    "folder",
    "youtube",
    "facebook",
    "instagram",
    "linkedin",
    "threads",
    "bluesky",
    "x",
    "tiktok",
    "pinterest",
)
SMALL = {
    "synth_seconds": 8,
    "min_seconds": 3,
    "frame_scale": 0.125,
    "reels_seconds": 4,
    "preset": "ultrafast",
}


@pytest.fixture
def home(home: Path) -> Path:
    """The root conftest's home (AUTORETTO_HOME and the fixed test clock), made to exist."""
    home.mkdir(parents=True, exist_ok=True)
    return home


@pytest.fixture
def small_settings(home: Path):
    """parse_pipeline with small-and-fast defaults; keyword overrides win."""

    def build(**overrides):
        return parse_pipeline({**SMALL, **overrides}, path="test.toml", channel="demo", home=home)

    return build


@pytest.fixture
def request_for(tmp_path: Path, small_settings):
    """A MakeRequest in a fresh work folder; keyword overrides for the request itself."""

    def build(settings=None, providers=None, workdir=None, **overrides):
        values = dict(
            channel="demo",
            settings=settings or small_settings(),
            providers=providers or parse_providers({}, path="test.toml"),
            platforms=ALL_PLATFORMS,
            workdir=workdir or tmp_path / "episode",
            seed=7,
        )
        values.update(overrides)
        return MakeRequest(**values)

    return build


@pytest.fixture(scope="session")
def synth_track(tmp_path_factory):
    """A 6-second synth track at a known 120 BPM: (path, SynthTrack)."""
    from autoretto.pipeline.synth import render_synth

    path = tmp_path_factory.mktemp("synth") / "track.wav"
    return path, render_synth(path, seed=11, seconds=6, bpm=120)
