"""The make: run the stages in order in the episode's work folder, resuming what exists.

Every output is written under a ".partial" name and renamed into place when complete,
and each stage's facts file is written after its media, so an existing file is always a
finished one. A make interrupted anywhere can be run again on the same folder: finished
stages are skipped.

Two cores work side by side: the audio is levelled (audio.m4a) beside the beat tracking,
the copy, the artwork and the clips (a paid provider is asked only once the audio gates
passed), and the videos are muxed once it is done. Nothing is measured twice: the
loudness gate takes the AAC's measure from the levelling, the duplicate gate the
fingerprint from the beat tracking, and the black-frames gate decodes each distinct clip
the render joined once. Before anything is written the free space is checked against
what the make needs.

Folder layout (workdir):
    source.wav, source.json      the decoded track and where it came from
    measure.json                 the source's loudness, clipping, tonality; the AAC's loudness
    audio.m4a                    normalised AAC, the episode's audio
    beats.json                   tempo, beats, reels window, fingerprint
    copy.json                    title, description, tags, short text
    landscape.png, vertical.png, thumbnail.jpg, artwork.json
    landscape.mp4, vertical.mp4, reels.mp4
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from autoretto.errors import MediaError
from autoretto.pipeline import Gate, MadeEpisode, MakeRequest, gates
from autoretto.pipeline import audio as audio_stage
from autoretto.pipeline.copy import (
    Copy,
    disclosure_line,
    gemini_copy,
    own_title_of,
    template_copy,
    track_facts,
)
from autoretto.pipeline.errors import NotEnoughSpace
from autoretto.pipeline.settings import PipelineSettings

log = logging.getLogger("autoretto.pipeline")

# Share of a whole make each stage takes, for the progress callback.
_WEIGHTS = (
    ("audio", 0.22),
    ("beats", 0.12),
    ("copy", 0.03),
    ("artwork", 0.05),
    ("render", 0.43),
    ("gates", 0.15),
)
GENERATOR_NAMES = {"suno": "Suno", "gemini": "Gemini"}


class _Progress:
    def __init__(self, callback: Callable[[str, float], None] | None) -> None:
        self.callback = callback
        self.starts, total = {}, 0.0
        for name, weight in _WEIGHTS:
            self.starts[name] = (total, weight)
            total += weight

    def __call__(self, stage: str, within: float = 0.0) -> None:
        """Report `stage` at `within` of it."""
        if self.callback is None:
            return
        start, weight = self.starts.get(stage, (1.0, 0.0))
        self.callback(stage, round(min(1.0, start + weight * within), 4))


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None


def _write_json(path: Path, data: dict) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(partial, path)


def _remove_partials(workdir: Path) -> None:
    for path in [
        *workdir.glob("*.partial*"),
        *workdir.glob("clips/*.partial*"),
        *workdir.glob("clips/*.joined.h264"),
        *workdir.glob("clips/*.keyframes.h264"),
    ]:
        path.unlink(missing_ok=True)


def _secret(request: MakeRequest, name: str, env: str) -> str | None:
    value = request.secrets(name)
    return value or os.environ.get(env) or None


def _pretty_name(path: str) -> str:
    stem = Path(path).stem
    return " ".join(re.sub(r"[_]+", " ", stem).split()) or stem


def _obtain_source(request: MakeRequest, workdir: Path, recorded: dict | None) -> dict:
    """Put the track at workdir/source.wav; return its facts (also saved to source.json)."""
    settings = request.settings
    wav = workdir / "source.wav"
    if settings.audio == "synth" and request.given is None:
        from autoretto.pipeline.synth import render_synth

        partial = audio_stage.temp_path(wav)
        track = render_synth(partial, seed=request.seed, seconds=settings.synth_seconds)
        os.replace(partial, wav)
        facts = {"audio": "synth", "bpm": track.bpm, "key": track.key, "seed": request.seed}
        duration = track.seconds
    elif settings.audio == "folder" or request.given is not None:
        if recorded and recorded.get("track"):
            track_path = Path(recorded["track"])
        elif request.given is not None:
            track_path = Path(request.given.path).resolve()
        else:
            track_path = audio_stage.pick_folder_track(
                settings.folder, request.used_tracks, request.channel
            )
        duration = audio_stage.decode_to_wav(track_path, wav)
        facts = {
            "audio": "given" if request.given is not None else "folder",
            "track": str(track_path),
            **_track_tags(track_path, workdir),
        }
        if request.given is not None and request.given.title.strip():
            facts["name"] = request.given.title.strip()
    else:
        from autoretto.pipeline.copy import release_name
        from autoretto.pipeline.suno import fetch_track

        suno = request.providers.suno
        downloaded, facts = fetch_track(
            suno,
            _secret(request, "suno_api_key", suno.api_key_env),
            prompt=settings.prompt,
            title=release_name(request.seed),
            workdir=workdir,
            count_generation=request.count_generation,
        )
        duration = audio_stage.decode_to_wav(downloaded, wav)
        facts["file"] = str(downloaded)
        if facts.get("title"):
            facts["name"] = facts["title"]
    facts["duration"] = round(duration, 4)
    _write_json(workdir / "source.json", facts)
    return facts


def _track_tags(track: Path, workdir: Path) -> dict:
    """What the track's tags say, as source facts: `name` ("Artist – Title", else the file's
    name), `track_tags` (title, artist, the cover art's file in `workdir`) and `notes` when
    the tags are damaged (the make goes on with the file's name)."""
    from autoretto.pipeline.tags import read_tags

    tags = read_tags(track)
    found: dict = {}
    if tags.title:
        found["title"] = tags.title
    if tags.artist:
        found["artist"] = tags.artist
    if tags.picture:
        suffix = {"image/png": ".png", "image/jpeg": ".jpg", "image/jpg": ".jpg"}
        cover = workdir / f"cover{suffix.get(tags.picture_mime or '', '.img')}"
        partial = audio_stage.temp_path(cover)
        partial.write_bytes(tags.picture)
        os.replace(partial, cover)
        found["cover"] = cover.name
    facts: dict = {"name": _pretty_name(track)}
    if tags.title:
        facts["name"] = f"{tags.artist} – {tags.title}" if tags.artist else tags.title
    if found:
        facts["track_tags"] = found
    if tags.problem:
        log.warning("%s; the file's name is used", tags.problem)
        facts["notes"] = [f"tags: {tags.problem}; the file's name was used"]
    return facts


def _track_label(source: dict) -> str:
    """How a gate names the track: its file, or where it came from."""
    if source.get("track") or source.get("file"):
        return str(source.get("track") or source.get("file"))
    return f"the {source.get('audio', 'synth')} track"


def audio_stage_gates(
    settings: PipelineSettings, source: dict, workdir: Path
) -> tuple[dict, audio_stage.AudioMeasure, list[Gate]]:
    """The audio stage after the track is in workdir/source.wav (`source` its facts).

    Measures the source, writes workdir/audio.m4a at the channel's loudness target, and
    runs the audio gates. Returns the facts saved in measure.json, the measure of the AAC
    as published, and the gates. Reuses a finished measure.json and audio.m4a.
    """
    measured, final = _measure_and_normalise(
        settings, workdir / "source.wav", workdir / "audio.m4a", workdir / "measure.json"
    )
    track = _track_label(source)
    results = [
        gates.duration_gate(float(source["duration"]), settings, track),
        gates.clipping_gate(float(measured["clipped_fraction"]), settings, track),
        gates.noise_gate(measured["tonal_share"], track),
        gates.silence_gate(final, settings, track),
        gates.loudness_gate(final, settings, track),
    ]
    return measured, final, results


def _measure_and_normalise(
    settings: PipelineSettings, wav: Path, audio_path: Path, measure_path: Path
) -> tuple[dict, audio_stage.AudioMeasure]:
    """Measure the source, write the normalised AAC; both facts saved in measure.json.

    Returns the saved facts and the measure of the AAC as published.
    """
    measured = _read_json(measure_path) or {}
    if "final" in measured and audio_path.exists():
        return measured, _audio_measure(measured["final"])
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="samples") as beside:
        samples = None
        if "loudness" not in measured:
            # the clipping and noise checks read the samples here while ffmpeg measures
            # and encodes in its own process
            samples = beside.submit(
                lambda: (audio_stage.clipped_fraction(wav), audio_stage.tonal_share(wav))
            )
            loudness = audio_stage.measure(
                wav,
                silence_threshold_db=settings.silence_threshold_db,
                min_silence=settings.max_silence_seconds,
            )
            measured = {"loudness": asdict(loudness)}
        measured["normalise"], final = audio_stage.normalise(
            wav,
            audio_path,
            _audio_measure(measured["loudness"]),
            target=settings.loudness_target,
            true_peak_max=settings.true_peak_max,
            loudness_tolerance=settings.loudness_tolerance,
            silence_threshold_db=settings.silence_threshold_db,
            min_silence=settings.max_silence_seconds,
        )
        if samples is not None:
            measured["clipped_fraction"], measured["tonal_share"] = samples.result()
    measured["final"] = asdict(final)
    _write_json(measure_path, measured)
    return measured, final


def _audio_measure(saved: dict) -> audio_stage.AudioMeasure:
    return audio_stage.AudioMeasure(
        **{**saved, "silences": [tuple(span) for span in saved["silences"]]}
    )


# What a make writes for each second of track, measured on the 180 s benchmark at
# 1920x1080 and 1080x1920, 30 fps: each full-length video ~175 kB/s (31 MB), the float source
# 8 bytes per sample frame, the AAC (and the reels' own) 24 kB/s. While a video is joined
# and muxed its raw H.264 and the MP4 exist side by side: twice the video. Artwork, the
# clips and the facts files: under 30 MB; the raw frames clips are encoded from: 19 frames
# of each picture (yuv420p, 1.5 bytes a pixel), 118 MB at full size.
VIDEO_BYTES_PER_SECOND = 175_000
AAC_BYTES_PER_SECOND = 24_000
FIXED_BYTES = 30_000_000
SPACE_MARGIN = 1.25


def space_needed(settings: PipelineSettings, seconds: float, sample_rate: int) -> int:
    """Bytes a make of a `seconds`-long track (decoded at `sample_rate`) needs at most."""
    pixels = settings.frame_scale**2
    video_seconds = 2 * seconds + min(settings.reels_seconds, seconds)
    total = (
        seconds * sample_rate * 8
        + (seconds + settings.reels_seconds) * AAC_BYTES_PER_SECOND
        + 2 * video_seconds * VIDEO_BYTES_PER_SECOND * pixels
        + 2 * 19 * 1920 * 1080 * 1.5 * pixels
        + FIXED_BYTES
    )
    return int(total * SPACE_MARGIN)


def _megabytes(count: float) -> str:
    return f"{count / 1e6:,.0f} MB"


def check_free_space(workdir: Path, settings: PipelineSettings, source: dict | None) -> None:
    """Refuse the make (NotEnoughSpace, one line) when the disk of `workdir` has less free
    space than what is left to write: the estimate for the track less what the folder
    already holds. `source` is the recorded source facts, or where the track will come from.
    """
    import shutil

    seconds, rate = _expected_length(settings, source)
    held = sum(path.stat().st_size for path in workdir.rglob("*") if path.is_file())
    needed = space_needed(settings, seconds, rate) - held
    free = shutil.disk_usage(workdir).free
    if needed > free:
        raise NotEnoughSpace(
            f"not enough free space to make this episode: it needs about {_megabytes(needed)} "
            f"for a {seconds:.0f} s track, {_megabytes(free)} are free in {workdir}; free "
            "some space there (or move the home) and make again"
        )


def _expected_length(settings: PipelineSettings, source: dict | None) -> tuple[float, int]:
    """(seconds, sample rate) of the track this make works on, before it is decoded."""
    source = source or {}
    if "duration" in source:
        return float(source["duration"]), int(source.get("rate") or 48000)
    if source.get("track"):
        from autoretto.ffmpeg import probe

        try:
            info = probe(source["track"])
        except MediaError:
            return settings.max_seconds, 48000  # decode_to_wav names the bad file
        rate = info.audio.sample_rate if info.audio and info.audio.sample_rate else 48000
        return info.duration, rate
    if settings.audio == "synth":
        from autoretto.pipeline.synth import SAMPLE_RATE

        return settings.synth_seconds, SAMPLE_RATE
    return settings.max_seconds, 48000  # a generated track: at most what the gates allow


def _out_of_space(error: BaseException) -> bool:
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return True
    return "No space left on device" in str(error)


def run_make(request: MakeRequest, callback=None) -> MadeEpisode:
    """Make or resume the episode in request.workdir (see make_episode).

    A disk that fills up during the make leaves the finished stages and no partial file,
    and raises NotEnoughSpace: the next make resumes.
    """
    workdir = Path(request.workdir).resolve()
    try:
        return _run_make(request, workdir, callback)
    except (OSError, RuntimeError, MediaError) as error:
        if not _out_of_space(error):
            raise
        import shutil

        _remove_partials(workdir)
        free = shutil.disk_usage(workdir).free
        raise NotEnoughSpace(
            f"the disk filled up during the make in {workdir} ({_megabytes(free)} free): free "
            "some space there; the next make resumes this episode where it stopped"
        ) from None


def _run_make(request: MakeRequest, workdir: Path, callback) -> MadeEpisode:
    settings = request.settings
    workdir.mkdir(parents=True, exist_ok=True)
    _remove_partials(workdir)
    progress = _Progress(callback)
    wav, audio_path = workdir / "source.wav", workdir / "audio.m4a"
    measure_path, beats_path = workdir / "measure.json", workdir / "beats.json"

    # 1. audio, with the beats tracked beside it ---------------------------------------
    progress("audio", 0.0)
    source = _read_json(workdir / "source.json")
    needs_wav = not (measure_path.exists() and audio_path.exists() and beats_path.exists())
    obtain = source is None or (needs_wav and not wav.exists())
    if obtain and request.given is not None and not (source or {}).get("track"):
        source = {"track": str(Path(request.given.path).resolve())}
    elif obtain and settings.audio == "folder" and not (source or {}).get("track"):
        track_path = audio_stage.pick_folder_track(
            settings.folder, request.used_tracks, request.channel
        )
        source = {"track": str(track_path)}
    check_free_space(workdir, settings, source)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="make") as beside:
        from autoretto.pipeline import beats as beat_stage

        if obtain:
            source = _obtain_source(request, workdir, source)
        progress("audio", 0.3)
        levelled = beside.submit(audio_stage_gates, settings, source, workdir)
        analysis = _read_json(beats_path)
        if analysis is None:
            progress("beats", 0.0)
            length = min(settings.reels_seconds, float(source["duration"]))
            analysis = asdict(beat_stage.analyse(wav, reels_seconds=length))
            _write_json(beats_path, analysis)
        if settings.copy == "gemini" or settings.artwork == "gemini":
            levelled.result()  # a paid provider is asked only about a track the gates pass
        # otherwise the copy, the artwork and the clips are made while the audio is levelled
        # (on the other core); the videos wait for it, and for its gates
        if not levelled.done() or _audio_passed(levelled.result()):
            try:
                return _make_videos(request, workdir, progress, source, analysis, levelled)
            except _AudioRejected:
                # a refused track is not rendered: the clips made meanwhile go
                import shutil

                shutil.rmtree(workdir / "clips", ignore_errors=True)
    return _rejected_on_audio(request, workdir, progress, source, *levelled.result())


class _AudioRejected(Exception):
    """The audio gates refused the track while its videos were being made."""


def _audio_passed(levelled: tuple[dict, audio_stage.AudioMeasure, list[Gate]]) -> bool:
    return all(gate.passed for gate in levelled[2])


def _source_facts(source: dict, measured_source: dict, final: audio_stage.AudioMeasure) -> dict:
    return {
        **{key: value for key, value in source.items() if key not in ("duration",)},
        "loudness_in": {
            "integrated": measured_source["loudness"]["integrated"],
            "true_peak": _finite(measured_source["loudness"]["true_peak"]),
        },
        "loudness_out": {"integrated": final.integrated, "true_peak": _finite(final.true_peak)},
        "normalise": measured_source.get("normalise"),
    }


def _rejected_on_audio(
    request: MakeRequest,
    workdir: Path,
    progress: _Progress,
    source: dict,
    measured_source: dict,
    final: audio_stage.AudioMeasure,
    results: list[Gate],
) -> MadeEpisode:
    """The episode of a track its audio gates refused: no render, no videos."""
    settings = request.settings
    duration = float(source["duration"])
    own_title = bool((source.get("track_tags") or {}).get("title"))
    facts = track_facts(
        settings,
        channel=request.channel,
        seed=request.seed,
        tempo=float(source.get("bpm") or 0),
        key=source.get("key"),
        duration=duration,
        name=source.get("name"),
        **_tag_facts(source),
    )
    copy = _given_copy(request, template_copy(settings, facts, own_title=own_title))
    _finish(workdir, keep_everything=True)
    progress("gates", 1.0)
    return MadeEpisode(
        title=copy.title,
        description=copy.description,
        tags=copy.tags,
        texts={},
        videos={},
        thumbnail="",
        audio=str(workdir / "audio.m4a"),
        duration=duration,
        tempo=float(source.get("bpm") or 0),
        beats=[],
        gates=results,
        ai_generated=source.get("audio") == "suno",
        fingerprint="",
        source=_source_facts(source, measured_source, final),
    )


def _make_videos(
    request: MakeRequest,
    workdir: Path,
    progress: _Progress,
    source: dict,
    analysis: dict,
    levelled: Future,
) -> MadeEpisode:
    """Copy, artwork, the three videos and their gates, for a track whose beats are known.

    `levelled` is the audio stage running beside (audio_stage_gates): the videos are
    muxed once it is done; raises _AudioRejected when its gates refuse the track.
    """
    settings = request.settings
    audio_path = workdir / "audio.m4a"
    duration = float(source["duration"])
    by_suno = source.get("audio") == "suno"  # a given track is the person's own
    ai_generated = by_suno  # and the artwork's, once it is drawn
    own_title = bool((source.get("track_tags") or {}).get("title"))

    # 2. beats (tracked above) -----------------------------------------------------------
    tempo, beats = float(analysis["tempo"]), [float(beat) for beat in analysis["beats"]]

    # 3. copy --------------------------------------------------------------------------
    progress("copy", 0.0)
    facts = track_facts(
        settings,
        channel=request.channel,
        seed=request.seed,
        tempo=tempo,
        key=source.get("key"),
        duration=duration,
        name=source.get("name"),
        **_tag_facts(source),
    )
    copy_data = _read_json(workdir / "copy.json")
    if copy_data is None:
        if settings.copy == "gemini":
            client = _gemini_client(request)
            copy, note = _ask_gemini(
                "copy",
                lambda plain: gemini_copy(settings, facts, client, plain=plain),
                offline=(
                    "template copy",
                    lambda: template_copy(settings, facts, own_title=own_title),
                ),
            )
            copy = replace(copy, note=note)
            if own_title:  # the song's own title, not one the model made up
                copy = replace(copy, title=own_title_of(settings, facts))
        else:
            copy = template_copy(settings, facts, own_title=own_title)
        copy_data = asdict(_given_copy(request, copy))
        _write_json(workdir / "copy.json", copy_data)
    copy = Copy(**copy_data)

    # 4. artwork -----------------------------------------------------------------------
    progress("artwork", 0.0)
    landscape_png, vertical_png = workdir / "landscape.png", workdir / "vertical.png"
    thumbnail = workdir / "thumbnail.jpg"
    artwork_facts = _read_json(workdir / "artwork.json")
    if artwork_facts is None or not all(
        p.exists() for p in (landscape_png, vertical_png, thumbnail)
    ):
        cover = (source.get("track_tags") or {}).get("cover")
        artwork_facts = _make_artwork(
            request,
            copy,
            facts,
            tempo,
            (landscape_png, vertical_png, thumbnail),
            cover=workdir / cover if cover else None,
            from_track=bool(source.get("track")),
        )
        _write_json(workdir / "artwork.json", artwork_facts)
    artwork_by_gemini = str(artwork_facts.get("source", "")).startswith("gemini")
    ai_generated = ai_generated or artwork_by_gemini
    disclosure = disclosure_line(
        GENERATOR_NAMES["suno"] if by_suno else None,
        GENERATOR_NAMES["gemini"] if artwork_by_gemini else None,
    )

    # 5. render ------------------------------------------------------------------------
    progress("render", 0.0)
    from autoretto.pipeline.render import VideoJob, render_videos

    reels_start = float(analysis["reels_start"])
    reels_length = float(analysis["reels_end"]) - reels_start
    outputs = {name: workdir / f"{name}.mp4" for name in ("landscape", "vertical", "reels")}
    jobs = [
        VideoJob("landscape", landscape_png, settings.landscape_size, outputs["landscape"]),
        VideoJob("vertical", vertical_png, settings.vertical_size, outputs["vertical"]),
        VideoJob(
            "reels",
            vertical_png,
            settings.vertical_size,
            outputs["reels"],
            start=reels_start,
            length=reels_length,
            fades=True,
        ),
    ]

    def audio_passed() -> Path:
        if not _audio_passed(levelled.result()):
            raise _AudioRejected
        return audio_path

    rendered = render_videos(
        jobs,
        audio=audio_passed,
        beats=beats,
        duration=duration,
        style=settings.style,
        fps=settings.fps,
        crf=settings.crf,
        preset=settings.preset,
        clip_dir=workdir / "clips",
        progress=lambda within: progress("render", within),
    )

    # 6. gates -------------------------------------------------------------------------
    progress("gates", 0.0)
    measured_source, final, audio_gates = levelled.result()
    results = list(audio_gates)
    from autoretto.pipeline.textfit import build_texts, episode_title

    texts = build_texts(
        platforms=request.platforms,
        title=copy.title,
        description=copy.description,
        short=copy.short,
        tags=copy.tags,
        disclosure=disclosure,
        ai_generated=ai_generated,
    )
    videos = {name: str(path) for name, path in outputs.items()}
    expected = {
        "landscape": (videos["landscape"], settings.landscape_size, duration),
        "vertical": (videos["vertical"], settings.vertical_size, duration),
        "reels": (videos["reels"], settings.vertical_size, reels_length),
    }
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="gates") as beside:
        # side by side, on both cores; the keyframes are decoded from the clips the render
        # reused (the videos' own H.264), each once
        black = beside.submit(
            gates.black_frames_gate, videos, fades=frozenset({"reels"}), clips=rendered
        )
        streams = beside.submit(
            gates.streams_gate, expected, fps=settings.fps, thumbnail=str(thumbnail)
        )
        results.append(black.result())
        progress("gates", 0.5)
        results.append(streams.result())
    results.append(gates.text_limits_gate(texts, request.platforms))
    results.append(
        gates.banned_terms_gate(
            texts, [copy.title, copy.description, copy.short, *copy.tags], settings.banned_terms
        )
    )
    results.append(
        gates.duplicate_gate(
            analysis["fingerprint"], request.past_fingerprints, settings.duplicate_similarity
        )
    )
    results.append(gates.ai_disclosure_gate(ai_generated, disclosure, texts, request.platforms))
    _finish(workdir, keep_everything=False)
    progress("gates", 1.0)
    source_facts = _source_facts(source, measured_source, final)
    source_facts.update(
        {
            "artwork": artwork_facts.get("source"),
            "copy": copy.source,
            "style": settings.style,
            "reels": [reels_start, reels_start + reels_length],
        }
    )
    notes = [
        *(source.get("notes") or []),
        *(note for note in (copy.note, artwork_facts.get("note")) if note),
    ]
    if notes:
        source_facts["notes"] = notes
    return MadeEpisode(
        title=episode_title(texts) or copy.title,
        description=copy.description,
        tags=copy.tags,
        texts=texts,
        videos=videos,
        thumbnail=str(thumbnail),
        audio=str(audio_path),
        duration=duration,
        tempo=tempo,
        beats=beats,
        gates=results,
        ai_generated=ai_generated,
        fingerprint=analysis["fingerprint"],
        source=source_facts,
    )


def _finite(value: float) -> float | None:
    return value if value not in (float("inf"), float("-inf")) else None


def _tag_facts(source: dict) -> dict:
    tags = source.get("track_tags") or {}
    return {"title": tags.get("title"), "artist": tags.get("artist")}


def _given_copy(request: MakeRequest, copy: Copy) -> Copy:
    """`copy` with what the person gave for this track (`episode add --title ...`) in it."""
    given = request.given
    if given is None:
        return copy
    tags = list(given.tags)
    tags += [tag for tag in copy.tags if tag.lower() not in {t.lower() for t in tags}]
    return replace(
        copy,
        title=given.title.strip() or copy.title,
        description=given.description.strip() or copy.description,
        tags=tags,
    )


def _make_artwork(
    request: MakeRequest,
    copy: Copy,
    facts: dict,
    tempo: float,
    outputs: tuple[Path, Path, Path],
    *,
    cover: Path | None,
    from_track: bool,
) -> dict:
    """Draw the artwork into `outputs` (landscape, vertical, thumbnail); its facts.

    `cover` is the cover art saved from the track's tags (None: it had none); `from_track`
    says the audio is a file whose tags were read (a folder or given track).
    """
    from autoretto.pipeline import artwork

    landscape_png, vertical_png, thumbnail = outputs

    settings = request.settings
    subtitle = f"{facts['bpm']} BPM · {facts['key']}"
    # Template titles repeat facts the subtitle shows; a written title goes on as it is.
    title = copy.title if settings.copy != "template" and len(copy.title) <= 60 else facts["name"]

    def procedural():
        return "procedural", artwork.make_procedural(
            seed=request.seed,
            title=title,
            subtitle=subtitle,
            tempo=tempo,
            landscape_size=settings.landscape_size,
            vertical_size=settings.vertical_size,
        )

    note = None
    if settings.artwork == "gemini":
        client = _gemini_client(request)

        def drawn(plain: bool):
            prompt = artwork.image_prompt(settings.prompt, tempo, plain=plain)
            picture, _mime = client.generate_image(prompt)
            return f"gemini:{client.settings.image_model}", artwork.make_from_picture(
                picture,
                title=title,
                subtitle=subtitle,
                landscape_size=settings.landscape_size,
                vertical_size=settings.vertical_size,
            )

        (source, images), note = _ask_gemini(
            "artwork", drawn, offline=("procedural artwork", procedural)
        )
    elif settings.artwork == "track" and cover is not None:
        try:
            images = artwork.make_from_cover(
                cover.read_bytes(),
                title=title,
                subtitle=subtitle,
                landscape_size=settings.landscape_size,
                vertical_size=settings.vertical_size,
            )
            source = "track"
        except MediaError as error:
            log.warning("artwork: %s; using the procedural artwork", error)
            source, images = procedural()
            note = f"artwork: {error}; the procedural artwork was used"
    else:
        source, images = procedural()
        if settings.artwork == "track" and from_track:
            note = "artwork: the track has no cover art in its tags; the procedural one was used"
    landscape, vertical, thumb = images
    with ThreadPoolExecutor(max_workers=3, thread_name_prefix="artwork") as pool:
        # Pillow's encoders let go of the GIL: the three files are written side by side
        saved = [
            pool.submit(artwork.save_png, landscape, landscape_png),
            pool.submit(artwork.save_png, vertical, vertical_png),
            pool.submit(artwork.save_thumbnail, thumb, thumbnail),
        ]
    size = [future.result() for future in saved][-1]
    facts = {"source": source, "thumbnail_bytes": size, "font": artwork.font_path()}
    return {**facts, "note": note} if note else facts


def _gemini_client(request: MakeRequest):
    from autoretto.clock import now
    from autoretto.pipeline.gemini import GeminiClient, model_warnings

    gemini = request.providers.gemini
    for warning in model_warnings(gemini, now().date().isoformat()):
        log.warning("%s", warning)
    return GeminiClient(gemini, _secret(request, "gemini_api_key", gemini.api_key_env))


def _ask_gemini(stage: str, ask: Callable[[bool], Any], *, offline: tuple[str, Callable[[], Any]]):
    """`ask(plain=False)`; when Gemini declines that prompt, `ask(plain=True)` once with plainer
    words; when it declines that too, the offline stage for this episode. Returns (result,
    note): the note says what happened, None when the first prompt was answered."""
    from autoretto.pipeline.errors import PromptDeclined

    try:
        return ask(False), None
    except PromptDeclined as first:
        log.warning("%s: %s; asking again in plainer words", stage, first)
        try:
            return ask(True), (
                f"{stage}: gemini declined the channel's prompt ({first.reason}); "
                "plainer words were used"
            )
        except PromptDeclined as second:
            name, make_offline = offline
            log.warning("%s: %s; using the %s for this episode", stage, second, name)
            return make_offline(), (
                f"{stage}: gemini declined the prompt twice ({first.reason}, "
                f"{second.reason}); the {name} was used for this episode"
            )


def _finish(workdir: Path, *, keep_everything: bool) -> None:
    """After a complete make, drop the bulky intermediates (the outputs stay)."""
    if keep_everything:
        return
    import shutil

    shutil.rmtree(workdir / "clips", ignore_errors=True)
    (workdir / "source.wav").unlink(missing_ok=True)
