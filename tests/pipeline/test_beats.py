"""Beats on real music: a tempo change, a swing feel, a long beatless intro and outro,
half/double-time ambiguity. Measured on the rendered video, decoded frame by frame: the
picture changes on the beats where there are beats, and stays still where there are none.
"""

import numpy as np
import pytest
import soundfile

from autoretto.ffmpeg import run_ffmpeg
from autoretto.pipeline.beats import analyse
from autoretto.pipeline.render import VideoJob, render_videos
from tests.pipeline.test_render import change_frames
from tests.pipeline.tracks import drums

FPS = 30
SIZE = (384, 216)
SEEN = (96, 54)  # decoded this small: a beat's jump shows as well, the frames stay light

CASES = {
    "tempo change": dict(sections=[(16, 100), (16, 132)]),
    "swing": dict(sections=[(24, 96)], swing=0.33),
    "beatless intro and outro": dict(sections=[(16, 120)], intro=10, outro=10, texture=0.3),
    "half or double time": dict(sections=[(24, 140)], half_time=True),
}


def decoded_frames(path):
    width, height = SEEN
    raw = run_ffmpeg(
        ["-v", "error", "-i", str(path), "-map", "0:v:0", "-vf", f"scale={width}:{height}",
         "-f", "rawvideo", "-pix_fmt", "gray", "-"]
    ).stdout  # fmt: skip
    return np.frombuffer(raw, dtype=np.uint8).reshape(-1, height, width).astype(np.float32)


@pytest.fixture(scope="module")
def picture(tmp_path_factory):
    from autoretto.pipeline.artwork import draw_scene

    path = tmp_path_factory.mktemp("art") / "art.png"
    draw_scene(*SIZE, seed=1, title="t", tempo=120).save(path)
    return path


def rendered(case, folder, picture):
    """(decoded frames, true beat frames, the groove's first and last frame)."""
    samples, true_beats = drums(**CASES[case])
    track = folder / "track.wav"
    soundfile.write(str(track), samples, 48000, subtype="FLOAT")
    audio = folder / "audio.m4a"
    run_ffmpeg(["-v", "error", "-i", str(track), "-c:a", "aac", str(audio)])
    analysis = analyse(track, reels_seconds=5)
    duration = len(samples) / 48000
    output = folder / "landscape.mp4"
    render_videos(
        [VideoJob("landscape", picture, SIZE, output)],
        audio=audio,
        beats=analysis.beats,
        duration=duration,
        style="pulse",
        fps=FPS,
        crf=20,
        preset="ultrafast",
        clip_dir=folder / "clips",
    )
    frames = decoded_frames(output)
    assert len(frames) == round(duration * FPS)
    beat_frames = [round(beat * FPS) for beat in true_beats]
    return frames, beat_frames


def on_a_beat(frame, beat_frames):
    return min(abs(frame - beat) for beat in beat_frames) <= 1


@pytest.mark.parametrize("case", list(CASES))
def test_the_picture_changes_on_the_beats(case, tmp_path, picture):
    frames, beat_frames = rendered(case, tmp_path, picture)
    changes = change_frames(frames)
    groove = (beat_frames[0] - 1, beat_frames[-1] + 1)  # beyond it: the calm test below
    stray = [
        frame
        for frame in changes
        if not on_a_beat(frame, beat_frames) and groove[0] <= frame <= groove[1]
    ]
    assert stray == [], (stray, changes)
    # beat tracking needs a little context: leave the groove's first and last second out
    inner = [beat for beat in beat_frames if beat_frames[0] + FPS <= beat <= beat_frames[-1] - FPS]
    shown = [beat for beat in inner if min(abs(beat - change) for change in changes) <= 1]
    if case == "half or double time":
        # either level is right; one level throughout: every change a beat or two apart
        gaps = np.diff(changes)
        assert set(np.round(gaps / np.median(gaps))) == {1.0}, gaps
        assert len(shown) >= 0.9 * len(inner) or len(shown) >= 0.45 * len(inner)
    else:
        assert len(shown) >= 0.9 * len(inner), (len(shown), len(inner))
    if case == "tempo change":  # both tempos are followed, not one grid across both
        change_at = beat_frames[0] + 16 * FPS
        for section in ([b for b in inner if b < change_at], [b for b in inner if b > change_at]):
            assert sum(b in shown for b in section) >= 0.85 * len(section)


def test_the_picture_stays_calm_where_there_are_no_beats(tmp_path, picture):
    frames, beat_frames = rendered("beatless intro and outro", tmp_path, picture)
    first, last = beat_frames[0], beat_frames[-1]
    # the tracker's grid may run a beat or two past the groove's edges (its onsets are
    # judged over a few seconds): calm is asked from the intro and the outro 1.2 s away
    margin = round(1.2 * FPS)
    changes = change_frames(frames)
    outside = [frame for frame in changes if frame < first - margin or frame > last + margin]
    assert outside == [], outside
    # the intro and the outro hold one picture: frame to frame, nothing there moves a
    # quarter as much as the picture jumps on a beat (what remains: the held picture's
    # keyframe every 2 s, a slightly different encoding of the same picture)
    motion = np.abs(np.diff(frames, axis=0)).mean(axis=(1, 2))
    jump = float(np.median(motion[[change - 1 for change in changes]]))
    for start, end in ((0, first - margin), (last + margin, len(frames))):
        region = motion[start : end - 1]
        assert float(region.max()) < 0.25 * jump, (start + int(region.argmax()), region.max(), jump)
