"""A track's own tags: its title, its artist and its embedded cover art, read with mutagen.

MP3 (and WAV, AIFF) carry ID3 frames (TIT2, TPE1, APIC); M4A carries MP4 atoms (©nam, ©ART,
covr); FLAC carries Vorbis comments and PICTURE blocks; Ogg Vorbis and Opus carry Vorbis
comments, their pictures as base64 METADATA_BLOCK_PICTURE comments. mutagen is imported here
only, when a track is read.

Tags are a convenience, never a condition: a track without them, or with tags mutagen cannot
read, gives an empty TrackTags (with `problem` saying why, for a damaged one) and the make
goes on with the file's name.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from pathlib import Path

# The front cover first (ID3v2.4 APIC and FLAC PICTURE share the picture-type table:
# https://xiph.org/flac/format.html#metadata_block_picture), then any other picture.
FRONT_COVER = 3
# MP4Cover.imageformat values (mutagen.mp4.AtomDataType: 13 JPEG, 14 PNG, 27 BMP).
_MP4_MIME = {13: "image/jpeg", 14: "image/png", 27: "image/bmp"}
LONGEST_TAG = 200  # characters kept of a title or an artist; a longer one is not a title


@dataclass(frozen=True)
class TrackTags:
    title: str | None = None
    artist: str | None = None
    picture: bytes | None = None  # the embedded cover art, as stored (JPEG, PNG, ...)
    picture_mime: str | None = None
    problem: str | None = None  # why the tags could not be read, when they are damaged


def read_tags(path: Path) -> TrackTags:
    """The title, artist and cover art in the tags of the audio file at `path`.

    Missing tags give None fields; tags mutagen cannot parse give an empty TrackTags whose
    `problem` names the file and what went wrong. Never raises for the file's content.
    """
    import mutagen

    try:
        audio = mutagen.File(str(path))
        if audio is None or audio.tags is None:
            return TrackTags()
        return _from_tags(audio)
    # mutagen raises its own MutagenError for most damage, but a truncated or forged frame
    # can surface as a ValueError, IndexError, KeyError, struct.error or UnicodeError from
    # deep inside a parser: any of them means "no usable tags", never "no episode".
    except Exception as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        return TrackTags(problem=f"{path}: its tags cannot be read ({reason[:160]})")


def _from_tags(audio) -> TrackTags:
    from mutagen.id3 import ID3
    from mutagen.mp4 import MP4Tags

    tags = audio.tags
    if isinstance(tags, ID3):
        title = _text(tags.getall("TIT2"))
        artist = _text(tags.getall("TPE1")) or _text(tags.getall("TPE2"))
        pictures = [(frame.type, frame.mime, frame.data) for frame in tags.getall("APIC")]
    elif isinstance(tags, MP4Tags):
        title = _joined(tags.get("\xa9nam"))
        artist = _joined(tags.get("\xa9ART")) or _joined(tags.get("aART"))
        pictures = [
            (FRONT_COVER, _MP4_MIME.get(cover.imageformat, ""), bytes(cover))
            for cover in tags.get("covr") or []
        ]
    else:  # Vorbis comments: FLAC, Ogg Vorbis, Opus (keys are case-blind)
        title = _joined(tags.get("title"))
        artist = _joined(tags.get("artist")) or _joined(tags.get("albumartist"))
        pictures = [(p.type, p.mime, p.data) for p in getattr(audio, "pictures", None) or []]
        pictures += _block_pictures(tags.get("metadata_block_picture") or [])
    picture = _front_cover(pictures)
    return TrackTags(
        title=title,
        artist=artist,
        picture=picture[1] if picture else None,
        picture_mime=picture[0] if picture else None,
    )


def _block_pictures(encoded: list[str]) -> list[tuple[int, str, bytes]]:
    """The pictures of METADATA_BLOCK_PICTURE comments (base64 of a FLAC PICTURE block)."""
    from mutagen.flac import Picture

    found = []
    for text in encoded:
        try:
            picture = Picture(base64.b64decode(text))
        except (binascii.Error, ValueError, TypeError):
            continue  # one unreadable picture: the others may do
        found.append((picture.type, picture.mime, picture.data))
    return found


def _front_cover(pictures: list[tuple[int, str, bytes]]) -> tuple[str, bytes] | None:
    """(mime, data) of the front cover, else of the first picture; None without one."""
    usable = [entry for entry in pictures if entry[2]]
    if not usable:
        return None
    _kind, mime, data = min(usable, key=lambda entry: entry[0] != FRONT_COVER)
    return mime or "", data


def _text(frames) -> str | None:
    return _joined([str(value) for frame in frames for value in frame.text])


def _joined(values) -> str | None:
    """Several values (two artists) as "A, B"; blanks and control characters left out."""
    if not values:
        return None
    if isinstance(values, str):
        values = [values]
    words = []
    for value in values:
        text = " ".join("".join(c if c.isprintable() else " " for c in str(value)).split())
        if text and text not in words:
            words.append(text)
    joined = ", ".join(words)[:LONGEST_TAG].strip()
    return joined or None
