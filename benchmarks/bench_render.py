"""Render benchmark: run by hand, prints figures (not a test).

    python benchmarks/bench_render.py [--seconds 180] [--repeat 3] [--skip-floor] [--keep DIR]

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
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autoretto.ffmpeg import run_ffmpeg
from autoretto.pipeline import MakeRequest, make_episode
from autoretto.pipeline.settings import parse_pipeline, parse_providers

# x the still-image floor measured in the same run (issue 14: a whole make at most 0.4x)
TARGETS = {"landscape render": 0.25, "whole make": 0.4}
MEMORY_TARGET_MB = 700


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
    parser.add_argument(
        "--repeat", type=int, default=1, help="makes (each followed by the floor): medians"
    )
    arguments = parser.parse_args()
    seconds = arguments.seconds
    base = arguments.keep or Path(tempfile.mkdtemp(prefix="autoretto-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    figures: list[tuple[str, float]] = []
    try:
        settings = parse_pipeline(
            {
                "synth_seconds": seconds,
                "min_seconds": min(20, seconds),
                "max_seconds": max(600, seconds),
                "style": arguments.style,
            },
            path="bench",
            channel="bench",
            home=base,
        )
        pairs: list[tuple[float, float]] = []  # (make, floor), measured one after the other
        stage_lines: list[str] = []
        make_memory = make_children = 0.0
        for attempt in range(arguments.repeat):
            work = base / f"episode-{attempt}"
            request = MakeRequest(
                channel="bench",
                settings=settings,
                providers=parse_providers({}, path="bench"),
                platforms=("folder", "youtube", "x", "instagram", "facebook"),
                workdir=work,
                seed=42,
            )
            marks: dict[str, float] = {}

            def progress(stage: str, fraction: float, marks=marks) -> None:
                marks.setdefault(stage, time.perf_counter())

            make_seconds, episode = timed(make_episode, request, progress)
            marks["(end)"] = time.perf_counter()
            if attempt == 0:
                # the make ran first in this process: its peak is this process's peak so far
                make_memory = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                make_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
                stages = list(marks.items())
                for index, (stage, began) in enumerate(stages[:-1]):
                    took = stages[index + 1][1] - began
                    stage_lines.append(f"    {stage[:40]:<40} {took:6.1f} s")
            if not episode.passed:
                print(f"note: the benchmark episode was rejected: {episode.reason}")
            floor_seconds = 0.0
            if not arguments.skip_floor:
                floor_seconds, _ = timed(
                    still_floor, work / "landscape.png", work / "audio.m4a", seconds,
                    base / "floor.mp4",
                )  # fmt: skip
            pairs.append((make_seconds, floor_seconds))
            if arguments.repeat > 1:
                ratio = f", {make_seconds / floor_seconds:.2f}x" if floor_seconds else ""
                print(
                    f"run {attempt + 1}: make {make_seconds:.1f} s, floor {floor_seconds:.1f} s"
                    + ratio
                )
        make_seconds = statistics.median(make for make, _ in pairs)
        figures.append(("whole make (3 videos, thumbnail, gates)", make_seconds))
        floor = None
        if not arguments.skip_floor:
            floor = statistics.median(floor for _, floor in pairs)
            figures.append(("still-image floor (ffmpeg, veryfast, stillimage)", floor))
            pair_ratio = statistics.median(make / floor for make, floor in pairs)

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

        print(
            f"\n{seconds:g} s track, 1920x1080 + 1080x1920, 30 fps, style {arguments.style}, "
            f"{len(analysis.beats)} beats at {analysis.tempo:g} BPM\n"
        )
        print(f"{'what':<50} {'wall':>8} {'x real':>8} {'x floor':>8}  target (x floor)")
        for name, value in figures:
            ratio = value / seconds
            versus_floor = f"{value / floor:8.2f}" if floor else f"{'-':>8}"
            limit = next((limit for key, limit in TARGETS.items() if key in name), None)
            target = ""
            if limit is not None:
                verdict = "" if not floor else " ok" if value / floor <= limit else " MISSED"
                target = f"<= {limit}x{verdict}"
            print(f"{name:<50} {value:7.1f}s {ratio:8.3f} {versus_floor}  {target}")
        if movie is None and not arguments.skip_moviepy:
            print(
                f"{'moviepy, the same pulse per frame':<50} {'not installed (pip install moviepy)'}"
            )
        elif movie is not None:
            print(
                f"\nsegment reuse is {movie / render_seconds:.0f}x faster than moviepy "
                "(target >= 10x)"
            )
        if floor and arguments.repeat > 1:
            print(
                f"\nwhole make / floor, median of {arguments.repeat} pairs run back to back: "
                f"{pair_ratio:.2f}x (target <= {TARGETS['whole make']}x)"
            )
        print("\nwhole make by stage (first run):")
        print("\n".join(stage_lines))
        verdict = "ok" if make_memory < MEMORY_TARGET_MB else "MISSED"
        print(
            f"\npeak memory of the whole make: {make_memory:.0f} MB in Python "
            f"(target < {MEMORY_TARGET_MB} MB: {verdict}); largest ffmpeg child "
            f"{make_children:.0f} MB (an upper bound: a child counts the parent's pages it "
            "held between fork and exec)"
        )
    finally:
        if arguments.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
