"""The render lands every visible change on a beat, measured from the decoded frames."""

import numpy as np
import pytest

from autoretto.ffmpeg import probe, run_ffmpeg
from autoretto.pipeline.audio import WORK_RATE
from autoretto.pipeline.beats import analyse
from autoretto.pipeline.render import Clip, VideoJob, plan, render_videos

FPS = 30
SIZE = (384, 216)


def decoded_frames(path, size):
    width, height = size
    raw = run_ffmpeg(
        ["-v", "error", "-i", str(path), "-map", "0:v:0", "-f", "rawvideo", "-pix_fmt", "gray", "-"]
    ).stdout
    return np.frombuffer(raw, dtype=np.uint8).reshape(-1, height, width).astype(np.float32)


def change_frames(frames):
    """Frames where the picture jumps: a frame-to-frame difference that stands out.

    Frames are averaged over 8x8 blocks first so the film grain of the artwork does not
    make every small zoom step look as big as the beat's jump.
    """
    count, height, width = frames.shape
    blocks = frames[:, : height // 8 * 8, : width // 8 * 8]
    blocks = blocks.reshape(count, height // 8, 8, width // 8, 8).mean(axis=(2, 4))
    difference = np.abs(np.diff(blocks, axis=0)).mean(axis=(1, 2))
    threshold = max(4 * float(np.median(difference)), 0.2 * float(difference.max()), 0.3)
    found = []
    for index, value in enumerate(difference):
        left = difference[index - 1] if index else 0
        right = difference[index + 1] if index + 1 < len(difference) else 0
        if value > threshold and value >= left and value >= right:
            found.append(index + 1)  # difference i is between frame i and i+1
    return found


@pytest.fixture(scope="module")
def analysed(synth_track, tmp_path_factory):
    path, track = synth_track
    folder = tmp_path_factory.mktemp("render")
    audio = folder / "audio.m4a"
    run_ffmpeg(["-v", "error", "-i", str(path), "-c:a", "aac", "-ar", str(WORK_RATE), str(audio)])
    picture = folder / "art.png"
    from autoretto.pipeline.artwork import draw_scene

    draw_scene(*SIZE, seed=1, title="t", tempo=track.bpm).save(picture)
    return folder, audio, picture, track, analyse(path, reels_seconds=3)


def rendered(analysed, style):
    """The landscape video of the analysed track in `style` (rendered once per module: the
    tests may run on different workers, in any order)."""
    folder, audio, picture, track, analysis = analysed
    output = folder / f"{style}.mp4"
    render_videos(
        [VideoJob("landscape", picture, SIZE, output)],
        audio=audio,
        beats=analysis.beats,
        duration=track.seconds,
        style=style,
        fps=FPS,
        crf=20,
        preset="ultrafast",
        clip_dir=folder / f"clips-{style}",
    )
    return output


@pytest.mark.parametrize("style", ["pulse", "flash", "zoom", "cut"])
def test_visual_changes_land_on_the_beats(analysed, style):
    track = analysed[3]
    output = rendered(analysed, style)
    frames = decoded_frames(output, SIZE)
    assert len(frames) == round(track.seconds * FPS)
    true_beats = [round(k * 60 / track.bpm * FPS) for k in range(1, int(track.seconds * 2))]
    changes = change_frames(frames)
    # every visible change is on a true beat (within one frame, 33 ms) ...
    stray = [frame for frame in changes if min(abs(frame - beat) for beat in true_beats) > 1]
    assert stray == []
    # ... and nearly every beat shows one
    # (beat tracking needs some context: the first and last beats may go undetected)
    inner = [beat for beat in true_beats if FPS <= beat <= len(frames) - FPS]
    if style == "zoom":  # the zoom snaps back on a beat; on the first one it only starts
        inner = inner[1:]
    shown = [beat for beat in inner if min(abs(beat - c) for c in changes) <= 1]
    assert len(shown) >= 0.9 * len(inner), (changes, inner)


def test_the_tracked_tempo_is_the_synth_tempo(analysed):
    *_, track, analysis = analysed
    assert analysis.tempo == pytest.approx(track.bpm, abs=1.0)
    beat = 60 / track.bpm
    errors = [abs(t - round(t / beat) * beat) for t in analysis.beats]
    assert max(errors) < 0.035


def test_output_is_tagged_bt709_and_lasts_as_long_as_the_audio(analysed):
    info = probe(rendered(analysed, "pulse"))
    assert info.video.color_space == "bt709"
    assert info.video.pix_fmt == "yuv420p"
    assert info.duration == pytest.approx(6.0, abs=0.07)


def test_reels_edit_fades_in_from_black(analysed):
    folder, audio, picture, track, analysis = analysed
    output = folder / "reels.mp4"
    start = analysis.beats[2]
    render_videos(
        [VideoJob("reels", picture, SIZE, output, start=start, length=3.0, fades=True)],
        audio=audio,
        beats=analysis.beats,
        duration=track.seconds,
        style="pulse",
        fps=FPS,
        crf=20,
        preset="ultrafast",
        clip_dir=folder / "clips-reels",
    )
    frames = decoded_frames(output, SIZE)
    assert len(frames) == 90
    assert frames[0].mean() < 20 < frames[45].mean()
    assert probe(output).duration == pytest.approx(3.0, abs=0.07)


def test_plan_splits_long_gaps_and_reuses_clips():
    clips = plan([0.0, 0.5, 1.0, 1.5, 9.0], start=0, length=10, fps=30, fades=False, variants=1)
    assert sum(clip.frames for clip in clips) == 300
    assert clips[:3] == [Clip("beat", 0, 15)] * 3
    assert all(clip.frames <= 120 for clip in clips)
    lead = plan([1.0], start=0, length=2, fps=30, fades=True, variants=1)
    assert lead == [Clip("hold", 0, 30, "in"), Clip("beat", 0, 30, "out")]


def test_a_shorter_clip_is_cut_from_the_longer_one_at_a_frame(analysed):
    from autoretto.pipeline.render import encode_from_frames, first_frames, render_frames

    folder, _audio, picture, *_ = analysed
    frames = folder / "beat.yuv"
    render_frames(picture, frames, effect="beat", style="pulse", size=SIZE, fps=FPS)
    longer, alone = folder / "long.h264", folder / "alone.h264"
    for path, length in ((longer, 40), (alone, 25)):
        encode_from_frames(
            Clip("beat", 0, length), frames, path, size=SIZE, fps=FPS, crf=20, preset="ultrafast"
        )
    cut = folder / "cut.h264"
    cut.write_bytes(first_frames(longer.read_bytes(), 25))
    # joined twice, as the timeline joins clips: each piece decodes from its own keyframe
    joined = folder / "joined.h264"
    joined.write_bytes(cut.read_bytes() * 2)
    pictures = decoded_frames(joined, SIZE)
    assert len(pictures) == 50
    assert np.array_equal(pictures[:25], decoded_frames(longer, SIZE)[:25])
    assert np.array_equal(pictures[25:], pictures[:25])
    # the same pictures as a clip encoded at that length, within the encoder's noise
    assert np.abs(pictures[:25] - decoded_frames(alone, SIZE)).mean() < 1.0
    with pytest.raises(ValueError):
        first_frames(cut.read_bytes(), 26)
