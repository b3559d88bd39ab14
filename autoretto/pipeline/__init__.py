"""The release pipeline: audio, artwork, copy, beats, render, gates -> one MadeEpisode.

`make_episode(request)` is the one entry point. This module and `settings` import nothing
heavy (no numpy, librosa, Pillow, requests), so the CLI's quick commands stay quick; the
stages import what they need when they run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from autoretto.pipeline.errors import (
    NoTrackLeft,
    PromptDeclined,
    ProviderRefused,
    ProviderUnavailable,
)
from autoretto.pipeline.settings import PipelineSettings, ProviderSettings

__all__ = [
    "Gate",
    "GivenTrack",
    "MadeEpisode",
    "MakeRequest",
    "NoTrackLeft",
    "PromptDeclined",
    "ProviderRefused",
    "ProviderUnavailable",
    "make_episode",
]


def _no_secrets(name: str) -> str | None:
    return None


@dataclass(frozen=True)
class GivenTrack:
    """A track given for one episode (`episode add TRACK`), made like a folder track.

    `title` and `description`, when given, replace the made ones; `tags` go first.
    """

    path: Path
    title: str = ""
    description: str = ""
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class MakeRequest:
    """Everything `make_episode` needs; nothing is read from elsewhere.

    `workdir` receives every output and may hold the outputs of an interrupted make of the
    same episode, which are reused. `used_tracks` are absolute paths the channel already
    used (folder source); `past_fingerprints` are (episode id, fingerprint) of past
    releases of any channel; `secrets(name)` returns a stored secret or None;
    `count_generation(provider, daily_cap)` counts one paid generation before it is sent and
    returns False when the day's cap is reached (None: nothing is counted). `given`: the
    track to make this episode from, whatever the channel's audio source.
    """

    channel: str
    settings: PipelineSettings
    providers: ProviderSettings
    platforms: tuple[str, ...]
    workdir: Path
    seed: int
    used_tracks: frozenset[str] = frozenset()
    past_fingerprints: tuple[tuple[int, str], ...] = ()
    secrets: Callable[[str], str | None] = _no_secrets
    count_generation: Callable[[str, int], bool] | None = None
    given: GivenTrack | None = None


@dataclass(frozen=True)
class Gate:
    name: str
    passed: bool
    reason: str


@dataclass
class MadeEpisode:
    """The result of one make. Paths are absolute; everything else is JSON-safe."""

    title: str
    description: str
    tags: list[str]
    texts: dict[str, dict]
    videos: dict[str, str]
    thumbnail: str
    audio: str
    duration: float
    tempo: float
    beats: list[float]
    gates: list[Gate]
    ai_generated: bool
    fingerprint: str
    source: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(gate.passed for gate in self.gates)

    @property
    def reason(self) -> str | None:
        """ "gate_name: reason" of the first failed gate, or None when all passed."""
        for gate in self.gates:
            if not gate.passed:
                return f"{gate.name}: {gate.reason}"
        return None

    def to_dict(self) -> dict:
        """A JSON-safe dict of every field plus `passed` and `reason`."""
        return {
            "title": self.title,
            "description": self.description,
            "tags": list(self.tags),
            "texts": self.texts,
            "videos": dict(self.videos),
            "thumbnail": self.thumbnail,
            "audio": self.audio,
            "duration": self.duration,
            "tempo": self.tempo,
            "beats": list(self.beats),
            "gates": [
                {"name": gate.name, "passed": gate.passed, "reason": gate.reason}
                for gate in self.gates
            ],
            "ai_generated": self.ai_generated,
            "fingerprint": self.fingerprint,
            "source": self.source,
            "passed": self.passed,
            "reason": self.reason,
        }


def make_episode(
    request: MakeRequest, progress: Callable[[str, float], None] | None = None
) -> MadeEpisode:
    """Make (or resume making) one episode in `request.workdir` and gate it.

    `progress(stage, fraction)` is called as the make advances; `fraction` is of the whole
    make, from 0.0 to 1.0. Returns a MadeEpisode whose gates may have failed. Raises
    ProviderRefused / ProviderUnavailable for provider trouble, MediaError for an unusable
    input file, NoTrackLeft when the folder source is used up.
    """
    from autoretto.pipeline.make import run_make

    return run_make(request, progress)
