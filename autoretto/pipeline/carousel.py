"""A release's carousel cards (issue 29): the artwork, a card with the title and credits, a card
with the lyrics (or the track's details), and the waveform, drawn with the artwork stage's own
Pillow code at the size a platform takes (`CarouselSpec.size`) and saved as JPEG under its
largest file (`CarouselSpec.max_bytes`).

The cards are drawn from what the episode keeps (its thumbnail, copy, audio and source facts),
so any host that has the episode's files draws the same cards; a carousel post's identity is
taken from them once and kept (posts.post_identity).
"""

from __future__ import annotations

import io
import itertools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from autoretto.pipeline import artwork
from autoretto.platforms.base import CarouselImage

#: the cards in the order they are posted; a platform that takes fewer takes the first ones
CARDS = ("artwork", "credits", "words", "waveform")
BACKGROUND = (18, 16, 24)
INK = (255, 246, 232)
SOFT = (214, 200, 186)


def card_folder(episode_folder: Path, size: tuple[int, int], max_bytes: int) -> Path:
    """Where the cards for one size and file limit are kept, inside the episode's folder."""
    return episode_folder / "carousel" / f"{size[0]}x{size[1]}-{max_bytes}"


def draw_cards(
    episode: dict[str, Any],
    *,
    folder: Path,
    size: tuple[int, int],
    max_bytes: int,
    count: int,
    words: Sequence[str] = (),
) -> tuple[CarouselImage, ...]:
    """The first `count` cards of `episode` (an episodes row: title, channel, thumbnail, audio,
    duration, tempo, tags, ai_generated), each `size` pixels, as JPEG files under `max_bytes` in
    `folder` (drawn once: a card already there is reused). `words`: the lyrics or track list
    (lines); none: the track's details. Raises OSError when the episode's files are missing."""
    folder.mkdir(parents=True, exist_ok=True)
    title = episode.get("title") or "Untitled"
    made = []
    for index, name in enumerate(CARDS[:count], 1):
        path = folder / f"{index}-{name}.jpg"
        if not path.is_file():
            image = _DRAWERS[name](episode, size, list(words))
            _save_jpeg(image, path, max_bytes)
        made.append(
            CarouselImage(
                path=str(path), alt=_alt(name, episode, title), width=size[0], height=size[1]
            )
        )
    return tuple(made)


def _alt(name: str, episode: dict[str, Any], title: str) -> str:
    channel = episode.get("channel") or ""
    return {
        "artwork": f"Artwork for {title}",
        "credits": f"{title}: title and credits card ({channel})",
        "words": f"{title}: lyrics and details card",
        "waveform": f"The waveform of {title}, start to end",
    }[name]


def _artwork_card(episode: dict[str, Any], size: tuple[int, int], words: list[str]):
    from PIL import Image

    thumbnail = episode.get("thumbnail")
    if thumbnail and os.path.isfile(thumbnail):
        with Image.open(thumbnail) as picture:
            picture = picture.convert("RGB")
    else:  # an episode added as a finished video: a frame of it, a third of the way in
        picture = _frame(Path(_main_video(episode)), float(episode.get("duration") or 0) / 3)
    return artwork.fit_on_fill(picture, size)


def _main_video(episode: dict[str, Any]) -> str:
    videos = episode.get("videos") or {}
    if isinstance(videos, str):
        import json

        videos = json.loads(videos or "{}")
    for name in ("landscape", "vertical", *videos):
        if name in videos:
            return videos[name]
    raise FileNotFoundError(f"episode {episode.get('id')} has neither artwork nor a video")


def _frame(video: Path, at: float):
    """One decoded frame of `video` at `at` seconds, as a Pillow image."""
    from PIL import Image

    from autoretto.ffmpeg import run_ffmpeg

    if not video.is_file():
        raise FileNotFoundError(f"the episode's video {video} is missing")
    png = run_ffmpeg(
        ["-v", "error", "-ss", f"{at:.3f}", "-i", str(video), "-frames:v", "1", "-f", "image2",
         "-c:v", "png", "-"]
    ).stdout  # fmt: skip
    return Image.open(io.BytesIO(png)).convert("RGB")


def _blank(size: tuple[int, int]):
    from PIL import Image

    return Image.new("RGB", size, BACKGROUND)


def _lines(draw, text: str, font, width: int) -> list[str]:
    wrapped = artwork._wrap(draw, text, font, width)
    return [line for line in wrapped if line] or [text]


def _credits_card(episode: dict[str, Any], size: tuple[int, int], words: list[str]):
    from PIL import ImageDraw

    image = _blank(size)
    draw = ImageDraw.Draw(image)
    width, height = size
    margin = width // 12
    title_font = artwork._font(max(12, width // 12))
    small = artwork._font(max(10, width // 30))
    y = height // 4
    for line in _lines(draw, episode.get("title") or "Untitled", title_font, width - 2 * margin):
        draw.text((margin, y), line, font=title_font, fill=INK)
        y += int(title_font.size * 1.2)
    y += small.size
    credits = [f"by {episode.get('channel') or ''}"]
    if episode.get("duration"):
        minutes, seconds = divmod(round(float(episode["duration"])), 60)
        credits.append(f"{minutes}:{seconds:02d}")
    if episode.get("tempo"):
        credits.append(f"{round(float(episode['tempo']))} BPM")
    if episode.get("ai_generated"):
        credits.append("Made with AI")
    for line in credits:
        draw.text((margin, y), line, font=small, fill=SOFT)
        y += int(small.size * 1.5)
    return image


def _words_card(episode: dict[str, Any], size: tuple[int, int], words: list[str]):
    from PIL import ImageDraw

    image = _blank(size)
    draw = ImageDraw.Draw(image)
    width, height = size
    margin = width // 12
    font = artwork._font(max(10, width // 26))
    lines = [line.strip() for line in words if line.strip()]
    if not lines:
        tags = episode.get("tags") or []
        if isinstance(tags, str):
            import json

            tags = json.loads(tags or "[]")
        lines = [episode.get("title") or "Untitled", *(f"#{tag}" for tag in tags[:8])]
    y = margin
    step = int(font.size * 1.45)
    for text in lines:
        for line in _lines(draw, text, font, width - 2 * margin):
            if y + step > height - margin:
                draw.text((margin, y), "…", font=font, fill=SOFT)
                return image
            draw.text((margin, y), line, font=font, fill=INK)
            y += step
    return image


def _waveform_card(episode: dict[str, Any], size: tuple[int, int], words: list[str]):
    from PIL import ImageDraw

    image = _blank(size)
    draw = ImageDraw.Draw(image)
    width, height = size
    margin = width // 12
    sound = episode.get("audio") or _main_video(episode)
    peaks = waveform_peaks(Path(sound), columns=width - 2 * margin)
    middle = height // 2
    reach = height // 3
    for x, peak in enumerate(peaks):
        extent = max(1, round(peak * reach))
        draw.line([(margin + x, middle - extent), (margin + x, middle + extent)], fill=INK)
    return image


def waveform_peaks(audio: Path, *, columns: int) -> list[float]:
    """The loudest sample (0 to 1) of each of `columns` equal stretches of `audio` (a sound or
    a video file), decoded by ffmpeg to 8 kHz mono."""
    import numpy

    from autoretto.ffmpeg import run_ffmpeg

    if not audio.is_file():
        raise FileNotFoundError(f"the episode's audio {audio} is missing")
    decoded = run_ffmpeg(
        ["-v", "error", "-i", str(audio), "-vn", "-ac", "1", "-ar", "8000", "-f", "s16le", "-"]
    ).stdout
    samples = numpy.abs(numpy.frombuffer(decoded, dtype="<i2").astype(numpy.float32)) / 32768.0
    if samples.size == 0 or columns <= 0:
        return [0.0] * max(columns, 0)
    edges = numpy.linspace(0, samples.size, columns + 1).astype(int)
    return [
        float(samples[start:end].max()) if end > start else 0.0
        for start, end in itertools.pairwise(edges)
    ]


_DRAWERS = {
    "artwork": _artwork_card,
    "credits": _credits_card,
    "words": _words_card,
    "waveform": _waveform_card,
}


def _save_jpeg(image, destination: Path, max_bytes: int) -> None:
    for quality in (90, 82, 74, 66, 58, 50, 42):
        buffer = io.BytesIO()
        image.convert("RGB").save(buffer, format="JPEG", quality=quality, optimize=True)
        if buffer.tell() <= max_bytes:
            partial = destination.with_name(f"{destination.stem}.partial.jpg")
            partial.write_bytes(buffer.getvalue())
            os.replace(partial, destination)
            return
    raise OSError(f"the card {destination.name} cannot be saved under {max_bytes} bytes")
