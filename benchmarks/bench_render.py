"""Render benchmark: run by hand, prints figures (not a test).

    python benchmarks/bench_render.py [--seconds 180] [--skip-floor] [--keep DIR]

Makes a synth track of the given length and measures, at 1920x1080 / 30 fps:
the still-image floor (one ffmpeg encode of the still picture, veryfast, stillimage),
the landscape render alone (segment reuse), beat tracking, the EBU R128 measurement,
a whole `make` (audio, beats, copy, artwork, three videos, gates), moviepy doing the same
pulse the common way if it is installed, and the peak memory of this process and of its
ffmpeg children. Each figure is printed beside the audio length (x real time) and the floor.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autoretto.ffmpeg import run_ffmpeg
from autoretto.pipeline import MakeRequest, make_episode
from autoretto.pipeline.settings import parse_pipeline, parse_providers

TARGETS = {"landscape render": 0.06, "whole make": 0.25}


def timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - start, result


def still_floor(picture: Path, audio: Path, seconds: float, output: Path) -> None:
    run_ffmpeg(
        ["-hide_banner", "-nostdin", "-y", "-v", "error", "-i", str(picture), "-i", str(audio),
         "-filter_complex",
         "[0:v]loop=loop=-1:size=1:start=0,settb=1/30,setpts=N,"
         "scale=out_color_matrix=bt709:out_range=tv,format=yuv420p[v]",
         "-map", "[v]", "-map", "1:a", "-r", "30", "-c:v", "libx264", "-preset", "veryfast",
         "-tune", "stillimage", "-crf", "20", "-c:a", "copy", "-t", f"{seconds}",
         "-movflags", "+faststart", str(output)]
    )  # fmt: skip


def moviepy_pulse(
    picture: Path, audio: Path, beats: list[float], seconds: float, output: Path
) -> float | None:
    """The same pulse written the common way in moviepy (a resize per frame), if installed."""
    try:
        from moviepy import AudioFileClip, ImageClip  # moviepy 2.x
    except ImportError:
        return None
    import bisect
    import math

    def factor(t: float) -> float:
        index = bisect.bisect_right(beats, t) - 1
        since = t - beats[index] if index >= 0 else 10.0
        return 1 + 0.06 * math.exp(-since / 0.12)

    start = time.perf_counter()
    clip = ImageClip(str(picture)).with_duration(seconds).resized(factor)
    clip = clip.with_audio(AudioFileClip(str(audio)))
    clip.write_videofile(
        str(output), fps=30, codec="libx264", audio_codec="aac", preset="veryfast", logger=None
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=180.0)
    parser.add_argument("--style", default="pulse")
    parser.add_argument("--skip-floor", action="store_true")
    parser.add_argument("--skip-moviepy", action="store_true")
    parser.add_argument("--keep", type=Path, help="work here and keep the files")
    arguments = parser.parse_args()
    seconds = arguments.seconds
    base = arguments.keep or Path(tempfile.mkdtemp(prefix="autoretto-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    figures: list[tuple[str, float]] = []
    try:
        settings = parse_pipeline(
            {"synth_seconds": seconds, "max_seconds": max(600, seconds), "style": arguments.style},
            path="bench",
            channel="bench",
            home=base,
        )
        request = MakeRequest(
            channel="bench",
            settings=settings,
            providers=parse_providers({}, path="bench"),
            platforms=("folder", "youtube", "x", "instagram", "facebook"),
            workdir=base / "episode",
            seed=42,
        )
        marks: dict[str, float] = {}

        def progress(stage: str, fraction: float) -> None:
            marks.setdefault(stage, time.perf_counter())

        make_seconds, episode = timed(make_episode, request, progress)
        marks["(end)"] = time.perf_counter()
        figures.append(("whole make (3 videos, thumbnail, gates)", make_seconds))
        stages = list(marks.items())
        stage_lines = []
        for index, (stage, began) in enumerate(stages):
            ended = stages[index + 1][1] if index + 1 < len(stages) else None
            if ended is not None:
                stage_lines.append(f"    {stage:<8} {ended - began:6.1f} s")
        work = base / "episode"
        if not episode.passed:
            print(f"note: the benchmark episode was rejected: {episode.reason}")

        # the pieces alone, on the make's own outputs
        from autoretto.pipeline import audio as audio_stage
        from autoretto.pipeline.beats import analyse
        from autoretto.pipeline.render import VideoJob, render_videos
        from autoretto.pipeline.synth import render_synth

        wav = base / "track.wav"
        render_synth(wav, seed=42, seconds=seconds)
        beat_seconds, analysis = timed(analyse, wav, reels_seconds=60)
        figures.append(("beat tracking (librosa, 22050 Hz)", beat_seconds))
        r128_seconds, _ = timed(
            audio_stage.measure, work / "audio.m4a", silence_threshold_db=-50, min_silence=3
        )
        figures.append(("EBU R128 + silence measurement", r128_seconds))
        clips = base / "clips-landscape"
        shutil.rmtree(clips, ignore_errors=True)
        output = base / "landscape.mp4"
        output.unlink(missing_ok=True)
        render_seconds, _ = timed(
            render_videos,
            [VideoJob("landscape", work / "landscape.png", settings.landscape_size, output)],
            audio=work / "audio.m4a",
            beats=analysis.beats,
            duration=seconds,
            style=arguments.style,
            fps=30,
            crf=settings.crf,
            preset=settings.preset,
            clip_dir=clips,
        )
        figures.append(("landscape render (segment reuse)", render_seconds))

        floor = None
        if not arguments.skip_floor:
            floor, _ = timed(
                still_floor, work / "landscape.png", work / "audio.m4a", seconds, base / "floor.mp4"
            )
            figures.append(("still-image floor (ffmpeg, veryfast, stillimage)", floor))
        movie = None
        if not arguments.skip_moviepy:
            movie = moviepy_pulse(
                work / "landscape.png",
                work / "audio.m4a",
                analysis.beats,
                seconds,
                base / "moviepy.mp4",
            )
            if movie is not None:
                figures.append(("moviepy, the same pulse per frame", movie))

        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(
            f"\n{seconds:g} s track, 1920x1080 + 1080x1920, 30 fps, style {arguments.style}, "
            f"{len(analysis.beats)} beats at {analysis.tempo:g} BPM\n"
        )
        print(f"{'what':<50} {'wall':>8} {'x real':>8} {'x floor':>8}  target")
        for name, value in figures:
            ratio = value / seconds
            versus_floor = f"{value / floor:8.2f}" if floor else f"{'-':>8}"
            target = next((f"<= {limit}x" for key, limit in TARGETS.items() if key in name), "")
            verdict = ""
            if target:
                verdict = (
                    " ok" if ratio <= TARGETS[next(k for k in TARGETS if k in name)] else " MISSED"
                )
            print(f"{name:<50} {value:7.1f}s {ratio:8.3f} {versus_floor}  {target}{verdict}")
        if movie is None and not arguments.skip_moviepy:
            print(
                f"{'moviepy, the same pulse per frame':<50} {'not installed (pip install moviepy)'}"
            )
        elif movie is not None:
            print(
                f"\nsegment reuse is {movie / render_seconds:.0f}x faster than moviepy "
                "(target >= 10x)"
            )
        print("\nwhole make by stage:")
        print("\n".join(stage_lines))
        print(
            f"\npeak memory: this process {own:.0f} MB (target < 1024 MB); "
            f"largest child process {children:.0f} MB (an upper bound: a child counts the "
            "parent's pages it held between fork and exec)"
        )
    finally:
        if arguments.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
