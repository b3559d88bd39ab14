"""The artwork stage: a landscape and a vertical image for the render, plus a thumbnail.

`procedural` draws a layered dusk landscape (gradient sky, a striped sun, hills whose
shapes follow the tempo, film grain) whose palette and layout come from the seed, title
and tempo, with the title set in DejaVu Sans (the system's, else Pillow's own font).
`gemini` asks the image model for a picture and composes the formats from it.
"""

from __future__ import annotations

import colorsys
import glob
import hashlib
import io
import math
import os
import random
from functools import cache
from pathlib import Path

from autoretto.pipeline.errors import ProviderUnavailable

THUMBNAIL_SIZE = (1280, 720)
THUMBNAIL_MAX_BYTES = 2 * 1024 * 1024
_FONT_CANDIDATES = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans-Bold.ttf",
    "/usr/share/fonts/TTF/DejaVuSans-Bold.ttf",
)


@cache
def font_path() -> str | None:
    """A bold TrueType font: bundled in assets/, else DejaVu Sans Bold from the system."""
    bundled = sorted(glob.glob(str(Path(__file__).parent / "assets" / "*.ttf")))
    for candidate in [*bundled, *_FONT_CANDIDATES]:
        if os.path.isfile(candidate):
            return candidate
    found = glob.glob("/usr/share/fonts/**/DejaVuSans-Bold.ttf", recursive=True)
    return found[0] if found else None


def _font(size: int):
    from PIL import ImageFont

    path = font_path()
    if path:
        return ImageFont.truetype(path, size)
    return ImageFont.load_default(size=size)


def _rng(seed: int, title: str, tempo: float) -> random.Random:
    digest = hashlib.sha256(f"{seed}|{title}|{tempo:.2f}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _colour(hue: float, saturation: float, value: float) -> tuple[float, float, float]:
    return colorsys.hsv_to_rgb(hue % 1.0, max(0, min(1, saturation)), max(0, min(1, value)))


def draw_scene(width: int, height: int, *, seed: int, title: str, tempo: float):
    """A procedural landscape of `width` x `height` as a Pillow RGB image, no text."""
    import numpy as np
    from PIL import Image

    rng = _rng(seed, title, tempo)
    hue = rng.random()
    shift = rng.choice((0.06, 0.1, -0.08, 0.5))
    top = np.array(_colour(hue, 0.65, 0.18))
    bottom = np.array(_colour(hue + shift, 0.55, 0.92))
    rows = np.linspace(0.0, 1.0, height)[:, None] ** rng.uniform(0.7, 1.6)
    sky = top + (bottom - top) * rows  # height x 3
    image = np.broadcast_to(sky[:, None, :], (height, width, 3)).copy()

    unit = min(width, height)
    horizon = height * rng.uniform(0.55, 0.7)
    sun_x = width * rng.uniform(0.25, 0.75)
    sun_y = horizon - unit * rng.uniform(0.05, 0.22)
    radius = unit * rng.uniform(0.16, 0.26)
    y_grid, x_grid = np.ogrid[:height, :width]
    distance = np.sqrt((x_grid - sun_x) ** 2 + (y_grid - sun_y) ** 2)
    sun_colour = np.array(_colour(hue + rng.choice((0.12, 0.5, 0.9)), 0.55, 1.0))
    glow = np.exp(-np.maximum(distance - radius, 0) / (radius * 0.9))[..., None] * 0.45
    image = image * (1 - glow) + sun_colour * glow
    stripes = max(3, int(tempo // 18)) if tempo else 5
    band = (y_grid - (sun_y - radius)) / (2 * radius)
    striped = (np.sin(band * math.pi * 2 * stripes) > -0.6) | (band < 0.55)
    disc = (distance <= radius) & striped
    image[disc] = sun_colour

    layers = rng.randint(3, 5)
    beat_waves = (tempo or 90) / 60.0
    for layer in range(layers):
        depth = (layer + 1) / layers
        base = horizon + (height - horizon) * (depth - 1 / layers) * 0.8
        xs = np.arange(width) / width
        ridge = np.zeros(width)
        for harmonic in range(1, 4):
            frequency = beat_waves * harmonic * rng.uniform(0.6, 1.4)
            ridge += np.sin(2 * math.pi * (xs * frequency + rng.random())) / harmonic
        ridge = base - ridge * unit * 0.05 * (1.2 - depth * 0.5)
        colour = np.array(_colour(hue + shift * depth, 0.5 + 0.2 * depth, 0.5 - 0.38 * depth))
        mask = y_grid >= ridge[None, :]
        fade = 0.85 + 0.15 * depth
        image = np.where(mask[..., None], image * (1 - fade) + colour * fade, image)

    grain = np.random.default_rng(rng.getrandbits(32)).normal(0, 0.006, (height, width, 1))
    pixels = np.clip((image + grain) * 255.0, 0, 255).astype(np.uint8)
    return Image.fromarray(pixels)  # (height, width, 3) uint8: RGB


def draw_title(image, title: str, subtitle: str, *, scale: float = 1.0):
    """Set `title` (wrapped, shrunk to fit) and `subtitle` in the lower left of `image`."""
    from PIL import ImageDraw

    width, height = image.size
    draw = ImageDraw.Draw(image)
    margin = int(min(width, height) * 0.06)
    size = max(10, int(min(width, height) * 0.085 * scale))
    lines = [title]
    while size > 10:
        font = _font(size)
        lines = _wrap(draw, title, font, width - 2 * margin)
        if len(lines) <= 2:
            break
        size = int(size * 0.85)
    font = _font(size)
    small = _font(max(8, int(size * 0.45)))
    line_height = int(size * 1.15)
    y = height - margin - line_height * len(lines) - int(size * 0.6)
    shadow = max(1, size // 18)
    for line in lines:
        draw.text((margin + shadow, y + shadow), line, font=font, fill=(0, 0, 0))
        draw.text((margin, y), line, font=font, fill=(255, 250, 240))
        y += line_height
    draw.text((margin + shadow, y + shadow), subtitle, font=small, fill=(0, 0, 0))
    draw.text((margin, y), subtitle, font=small, fill=(255, 236, 210))
    return image


def _wrap(draw, text: str, font, width: int) -> list[str]:
    words, lines, line = text.split(), [], ""
    for word in words:
        candidate = f"{line} {word}".strip()
        if draw.textlength(candidate, font=font) <= width or not line:
            line = candidate
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    if any(draw.textlength(line, font=font) > width for line in lines):
        return [*lines, "", ""]  # too wide even word by word: ask for a smaller size
    return lines


def cover(image, size: tuple[int, int]):
    """`image` scaled to cover `size` and centre-cropped to it."""
    from PIL import Image

    width, height = size
    ratio = max(width / image.width, height / image.height)
    scaled = image.resize(
        (max(width, round(image.width * ratio)), max(height, round(image.height * ratio))),
        Image.LANCZOS,
    )
    left, top = (scaled.width - width) // 2, (scaled.height - height) // 2
    return scaled.crop((left, top, left + width, top + height))


def compose_vertical(image, size: tuple[int, int]):
    """A vertical frame from a landscape picture: blurred fill behind the picture."""
    from PIL import ImageEnhance, ImageFilter

    width, height = size
    background = cover(image, size).filter(ImageFilter.GaussianBlur(radius=max(2, width // 40)))
    background = ImageEnhance.Brightness(background).enhance(0.55)
    foreground = cover(image, (width, max(2, round(width * image.height / image.width))))
    background.paste(foreground, (0, (height - foreground.height) // 2))
    return background


def save_png(image, destination: Path) -> None:
    partial = destination.with_name(f"{destination.stem}.partial{destination.suffix}")
    image.save(partial, format="PNG", compress_level=1)
    os.replace(partial, destination)


def save_thumbnail(image, destination: Path) -> int:
    """Save a 1280x720 JPEG under 2 MB; return its size in bytes."""
    image = cover(image.convert("RGB"), THUMBNAIL_SIZE)
    partial = destination.with_name(f"{destination.stem}.partial.jpg")
    for quality in (90, 80, 70, 60, 50, 40):
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=quality, optimize=True, progressive=True)
        if buffer.tell() < THUMBNAIL_MAX_BYTES:
            partial.write_bytes(buffer.getvalue())
            os.replace(partial, destination)
            return buffer.tell()
    raise ProviderUnavailable("the thumbnail cannot be made smaller than 2 MB")


def make_procedural(
    *,
    seed: int,
    title: str,
    subtitle: str,
    tempo: float,
    landscape_size: tuple[int, int],
    vertical_size: tuple[int, int],
):
    """(landscape, vertical, thumbnail) Pillow images drawn from seed, title and tempo."""
    landscape = draw_title(
        draw_scene(*landscape_size, seed=seed, title=title, tempo=tempo), title, subtitle
    )
    vertical = draw_title(
        draw_scene(*vertical_size, seed=seed, title=title, tempo=tempo), title, subtitle
    )
    thumbnail = draw_title(
        draw_scene(*THUMBNAIL_SIZE, seed=seed, title=title, tempo=tempo), title, subtitle, scale=1.5
    )
    return landscape, vertical, thumbnail


def make_from_picture(
    picture_bytes: bytes,
    *,
    title: str,
    subtitle: str,
    landscape_size: tuple[int, int],
    vertical_size: tuple[int, int],
):
    """(landscape, vertical, thumbnail) from a generated picture; title on the last two."""
    picture = _read_picture(
        picture_bytes, ProviderUnavailable("the generated picture could not be read as an image")
    )
    landscape = cover(picture, landscape_size)
    vertical = draw_title(compose_vertical(picture, vertical_size), title, subtitle)
    thumbnail = draw_title(cover(picture, THUMBNAIL_SIZE), title, subtitle, scale=1.5)
    return landscape, vertical, thumbnail


def make_from_cover(
    picture_bytes: bytes,
    *,
    title: str,
    subtitle: str,
    landscape_size: tuple[int, int],
    vertical_size: tuple[int, int],
):
    """(landscape, vertical, thumbnail) from a track's cover art, shown whole.

    Cover art is square and often carries its own lettering, so it is never cropped: each
    frame holds it whole on a blurred, darkened fill of itself; the title goes on the
    vertical frame and the thumbnail, as for a generated picture. Raises MediaError when the
    bytes are not a picture Pillow can read.
    """
    from autoretto.errors import MediaError

    picture = _read_picture(
        picture_bytes, MediaError("the cover art in the track's tags is not a readable picture")
    )
    landscape = fit_on_fill(picture, landscape_size)
    vertical = draw_title(fit_on_fill(picture, vertical_size), title, subtitle)
    thumbnail = draw_title(fit_on_fill(picture, THUMBNAIL_SIZE), title, subtitle, scale=1.5)
    return landscape, vertical, thumbnail


def _read_picture(picture_bytes: bytes, unreadable: Exception):
    """The picture in `picture_bytes` as RGB; `unreadable` raised when Pillow cannot read it."""
    from PIL import Image, UnidentifiedImageError

    try:
        picture = Image.open(io.BytesIO(picture_bytes))
        picture.load()
    except (UnidentifiedImageError, OSError, ValueError):
        raise unreadable from None
    return picture.convert("RGB")


def fit_on_fill(image, size: tuple[int, int]):
    """`image` scaled to fit inside `size`, centred on a blurred, darker fill of itself."""
    from PIL import Image, ImageEnhance, ImageFilter

    width, height = size
    background = cover(image, size).filter(ImageFilter.GaussianBlur(radius=max(2, width // 40)))
    background = ImageEnhance.Brightness(background).enhance(0.55)
    ratio = min(width / image.width, height / image.height)
    fitted = image.resize(
        (max(1, round(image.width * ratio)), max(1, round(image.height * ratio))), Image.LANCZOS
    )
    background.paste(fitted, ((width - fitted.width) // 2, (height - fitted.height) // 2))
    return background


def image_prompt(prompt: str, tempo: float, *, plain: bool = False) -> str:
    """The picture asked of Gemini; `plain` leaves out the channel's words, for a second try
    after the model declined the first."""
    mood = "slow and calm" if tempo and tempo < 95 else "lively" if tempo > 120 else "steady"
    if plain:
        return (
            f"An abstract, {mood} landscape of soft light and colour, wide and cinematic, "
            "for the background of a music video. No people, no text, no logos."
        )
    return (
        f"Cover artwork for an instrumental music video: {prompt}. The mood is {mood}. "
        "A wide cinematic scene with strong colours, no text, no letters, no logos, "
        "no watermark."
    )
