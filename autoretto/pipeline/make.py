"""The make: run the stages in order in the episode's work folder, resuming what exists.

Every output is written under a ".partial" name and renamed into place when complete,
and each stage's facts file is written after its media, so an existing file is always a
finished one. A make interrupted anywhere can be run again on the same folder: finished
stages are skipped.

Folder layout (workdir):
    source.wav, source.json      the decoded track and where it came from
    measure.json                 the source's loudness and clipping
    audio.m4a                    normalised AAC, the episode's audio
    beats.json                   tempo, beats, reels window, fingerprint
    copy.json                    title, description, tags, short text
    landscape.png, vertical.png, thumbnail.jpg, artwork.json
    landscape.mp4, vertical.mp4, reels.mp4
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from autoretto.pipeline import Gate, MadeEpisode, MakeRequest, gates
from autoretto.pipeline import audio as audio_stage
from autoretto.pipeline.copy import Copy, disclosure_line, gemini_copy, template_copy, track_facts

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
    if settings.audio == "synth":
        from autoretto.pipeline.synth import render_synth

        partial = audio_stage.temp_path(wav)
        track = render_synth(partial, seed=request.seed, seconds=settings.synth_seconds)
        os.replace(partial, wav)
        facts = {"audio": "synth", "bpm": track.bpm, "key": track.key, "seed": request.seed}
        duration = track.seconds
    elif settings.audio == "folder":
        if recorded and recorded.get("track"):
            track_path = Path(recorded["track"])
        else:
            track_path = audio_stage.pick_folder_track(
                settings.folder, request.used_tracks, request.channel
            )
        duration = audio_stage.decode_to_wav(track_path, wav)
        facts = {"audio": "folder", "track": str(track_path), "name": _pretty_name(track_path)}
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


def run_make(request: MakeRequest, callback=None) -> MadeEpisode:
    settings = request.settings
    workdir = Path(request.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    _remove_partials(workdir)
    progress = _Progress(callback)
    wav, audio_path = workdir / "source.wav", workdir / "audio.m4a"
    measure_path, beats_path = workdir / "measure.json", workdir / "beats.json"

    # 1. audio -------------------------------------------------------------------------
    progress("audio", 0.0)
    source = _read_json(workdir / "source.json")
    needs_wav = not (measure_path.exists() and audio_path.exists() and beats_path.exists())
    if source is None or (needs_wav and not wav.exists()):
        source = _obtain_source(request, workdir, source)
    progress("audio", 0.3)
    measured_source = _read_json(measure_path)
    if measured_source is None:
        loudness = audio_stage.measure(
            wav,
            silence_threshold_db=settings.silence_threshold_db,
            min_silence=settings.max_silence_seconds,
        )
        measured_source = {
            "loudness": asdict(loudness),
            "clipped_fraction": audio_stage.clipped_fraction(wav),
        }
    progress("audio", 0.5)
    if not audio_path.exists():
        source_loudness = audio_stage.AudioMeasure(
            **{
                **measured_source["loudness"],
                "silences": [tuple(span) for span in measured_source["loudness"]["silences"]],
            }
        )
        measured_source["normalise"] = audio_stage.normalise(
            wav,
            audio_path,
            source_loudness,
            target=settings.loudness_target,
            true_peak_max=settings.true_peak_max,
            loudness_tolerance=settings.loudness_tolerance,
        )
    if not measure_path.exists():
        _write_json(measure_path, measured_source)
    progress("audio", 0.9)
    final = audio_stage.measure(
        audio_path,
        silence_threshold_db=settings.silence_threshold_db,
        min_silence=settings.max_silence_seconds,
    )
    duration = float(source["duration"])
    results: list[Gate] = [
        gates.duration_gate(duration, settings),
        gates.clipping_gate(float(measured_source["clipped_fraction"]), settings),
        gates.silence_gate(final, settings),
        gates.loudness_gate(final, settings),
    ]
    ai_generated = settings.audio == "suno"  # and the artwork's, once it is drawn
    source_facts = {
        **{key: value for key, value in source.items() if key not in ("duration",)},
        "loudness_in": {
            "integrated": measured_source["loudness"]["integrated"],
            "true_peak": _finite(measured_source["loudness"]["true_peak"]),
        },
        "loudness_out": {"integrated": final.integrated, "true_peak": _finite(final.true_peak)},
        "normalise": measured_source.get("normalise"),
    }
    if not all(gate.passed for gate in results):
        # Rejected on its audio: no point paying for artwork, copy or a render.
        facts = track_facts(
            settings,
            channel=request.channel,
            seed=request.seed,
            tempo=float(source.get("bpm") or 0),
            key=source.get("key"),
            duration=duration,
            name=source.get("name"),
        )
        copy = template_copy(settings, facts)
        _finish(workdir, keep_everything=True)
        progress("gates", 1.0)
        return MadeEpisode(
            title=copy.title,
            description=copy.description,
            tags=copy.tags,
            texts={},
            videos={},
            thumbnail="",
            audio=str(audio_path),
            duration=duration,
            tempo=float(source.get("bpm") or 0),
            beats=[],
            gates=results,
            ai_generated=ai_generated,
            fingerprint="",
            source=source_facts,
        )

    # 2. beats -------------------------------------------------------------------------
    progress("beats", 0.0)
    analysis = _read_json(beats_path)
    if analysis is None:
        from autoretto.pipeline.beats import analyse

        analysis = asdict(analyse(wav, reels_seconds=min(settings.reels_seconds, duration)))
        _write_json(beats_path, analysis)
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
    )
    copy_data = _read_json(workdir / "copy.json")
    if copy_data is None:
        if settings.copy == "gemini":
            client = _gemini_client(request)
            copy, note = _ask_gemini(
                "copy",
                lambda plain: gemini_copy(settings, facts, client, plain=plain),
                offline=("template copy", lambda: template_copy(settings, facts)),
            )
            copy = replace(copy, note=note)
        else:
            copy = template_copy(settings, facts)
        copy_data = asdict(copy)
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
        artwork_facts = _make_artwork(
            request, copy, facts, tempo, landscape_png, vertical_png, thumbnail
        )
        _write_json(workdir / "artwork.json", artwork_facts)
    artwork_by_gemini = str(artwork_facts.get("source", "")).startswith("gemini")
    ai_generated = ai_generated or artwork_by_gemini
    disclosure = disclosure_line(
        GENERATOR_NAMES["suno"] if settings.audio == "suno" else None,
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
    render_videos(
        jobs,
        audio=audio_path,
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
    from autoretto.pipeline.textfit import build_texts

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
    results.append(gates.black_frames_gate(videos, fades=frozenset({"reels"})))
    progress("gates", 0.5)
    results.append(gates.streams_gate(expected, fps=settings.fps, thumbnail=str(thumbnail)))
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
    source_facts.update(
        {
            "artwork": artwork_facts.get("source"),
            "copy": copy.source,
            "style": settings.style,
            "reels": [reels_start, reels_start + reels_length],
        }
    )
    notes = [note for note in (copy.note, artwork_facts.get("note")) if note]
    if notes:
        source_facts["notes"] = notes
    return MadeEpisode(
        title=texts.get("youtube", {}).get("title", copy.title),
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


def _make_artwork(
    request: MakeRequest,
    copy: Copy,
    facts: dict,
    tempo: float,
    landscape_png: Path,
    vertical_png: Path,
    thumbnail: Path,
) -> dict:
    from autoretto.pipeline import artwork

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
    else:
        source, images = procedural()
    landscape, vertical, thumb = images
    artwork.save_png(landscape, landscape_png)
    artwork.save_png(vertical, vertical_png)
    size = artwork.save_thumbnail(thumb, thumbnail)
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
