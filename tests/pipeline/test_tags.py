"""Your own songs: the title, artist and cover art in a track's tags make the episode.

Each track is music made by tests/pipeline/tracks.py and encoded by the bundled ffmpeg, then
tagged by mutagen the way each format keeps tags. What the make did is checked from the
outside: the copy it wrote, and the pixels of the artwork and of a frame of the rendered
video (decoded by ffmpeg here), against the embedded picture's colour.
"""

from __future__ import annotations

import subprocess

import pytest
from PIL import Image

from autoretto.ffmpeg import ffmpeg_exe
from autoretto.pipeline import make_episode
from autoretto.pipeline.tags import read_tags
from tests.pipeline.tracks import cover_picture, kick_and_pad, tag_track, write_track

# One colour per format, far apart, so a picture can only be the one its track carried.
COVERS = {
    "mp3": ((200, 40, 90), "PNG"),
    "m4a": ((30, 160, 60), "JPEG"),
    "flac": ((40, 70, 210), "PNG"),
    "ogg": ((230, 200, 30), "PNG"),
    "opus": ((40, 200, 210), "JPEG"),
}
TITLES = {
    "mp3": ("Neon Drive", "Kay Mira"),
    "m4a": ("Harbour Lights", "Sol Avenue"),
    "flac": ("Glass Orchard", "Ida Lane"),
    "ogg": ("Paper Moons", "Otto Reyes"),
    "opus": ("Quiet Arcade", "Nell & The Tides"),
}


@pytest.fixture(scope="module")
def music():
    """Five seconds of a kick over a pad: music the gates pass."""
    return kick_and_pad(5.0)


def tagged(directory, kind: str, music, *, picture: bool = True):
    path = write_track(directory, "my-song_final", music, kind=kind)
    colour, form = COVERS[kind]
    title, artist = TITLES[kind]
    return tag_track(
        path,
        title=title,
        artist=artist,
        picture=cover_picture(colour, kind=form) if picture else None,
        mime=f"image/{form.lower()}",
    )


def centre(path) -> tuple[int, int, int]:
    with Image.open(path) as image:
        picture = image.convert("RGB")
        return picture.getpixel((picture.width // 2, picture.height // 2))


def video_centre(path, at: float = 1.0) -> tuple[int, int, int]:
    """The centre pixel of the frame at `at` seconds, decoded by ffmpeg to RGB."""
    frame = subprocess.run(
        [ffmpeg_exe(), "-v", "error", "-ss", str(at), "-i", str(path), "-frames:v", "1",
         "-vf", "scale=64:64", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
        capture_output=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    index = (32 * 64 + 32) * 3
    return tuple(frame[index : index + 3])


def distance(first, second) -> float:
    return sum((a - b) ** 2 for a, b in zip(first, second, strict=True)) ** 0.5


@pytest.mark.parametrize("kind", list(COVERS))
def test_a_tagged_track_gives_its_title_artist_and_cover(
    kind, music, home, tmp_path, small_settings, request_for
):
    tracks = home / "tracks"
    tracks.mkdir()
    tagged(tracks, kind, music)
    settings = small_settings(audio="folder", artwork="track")
    episode = make_episode(request_for(settings=settings))
    assert episode.passed, episode.reason

    title, artist = TITLES[kind]
    assert episode.title == f"{artist} – {title}"  # not "my song final · 120 BPM"
    assert episode.description.startswith(f"{artist} – {title}\n")
    assert episode.texts["youtube"]["title"] == f"{artist} – {title}"
    assert episode.texts["x"]["text"].startswith(f"{artist} – {title}:")
    assert "BPM" not in episode.title and "my song" not in episode.title.lower()

    colour = COVERS[kind][0]
    workdir = tmp_path / "episode"
    for picture in ("landscape.png", "vertical.png", episode.thumbnail):
        assert distance(centre(workdir / picture), colour) < 8, picture
    # the video shows it too: of the five covers, the frame is nearest this one
    shown = video_centre(episode.videos["landscape"])
    nearest = min(COVERS, key=lambda other: distance(shown, COVERS[other][0]))
    assert nearest == kind, (shown, colour)


def test_tags_are_not_trusted_for_the_artwork_unless_the_channel_asks(
    music, home, tmp_path, small_settings, request_for
):
    tracks = home / "tracks"
    tracks.mkdir()
    tagged(tracks, "flac", music)
    episode = make_episode(request_for(settings=small_settings(audio="folder")))
    assert episode.passed, episode.reason
    assert episode.title == "Ida Lane – Glass Orchard"  # the title is used either way
    assert episode.source["artwork"] == "procedural"
    drawn = centre(tmp_path / "episode" / "landscape.png")
    assert distance(drawn, COVERS["flac"][0]) > 40


def test_an_untagged_track_keeps_the_file_name_and_says_it_has_no_cover(
    music, home, tmp_path, small_settings, request_for
):
    tracks = home / "tracks"
    tracks.mkdir()
    write_track(tracks, "neon-drive_v2", music, kind="ogg")
    episode = make_episode(request_for(settings=small_settings(audio="folder", artwork="track")))
    assert episode.passed, episode.reason
    assert episode.title.startswith("neon-drive v2 · ") and episode.title.endswith(" BPM")
    assert episode.source["artwork"] == "procedural"
    assert episode.source["notes"] == [
        "artwork: the track has no cover art in its tags; the procedural one was used"
    ]


def test_a_damaged_tag_falls_back_to_the_file_name_and_says_so(
    music, home, tmp_path, small_settings, request_for
):
    tracks = home / "tracks"
    tracks.mkdir()
    path = tagged(tracks, "mp3", music)
    damaged = bytearray(path.read_bytes())
    assert damaged[:3] == b"ID3"
    damaged[3] = 9  # an ID3v2.9 header: no such version; the MPEG audio after it is intact
    path.write_bytes(bytes(damaged))
    assert read_tags(path).title is None

    episode = make_episode(request_for(settings=small_settings(audio="folder", artwork="track")))
    assert episode.passed, episode.reason
    assert episode.title.startswith("my-song final · ")
    (tag_note, cover_note) = episode.source["notes"]
    assert tag_note.startswith(f"tags: {path.resolve()}: its tags cannot be read (")
    assert tag_note.endswith("; the file's name was used")
    assert cover_note.startswith("artwork: the track has no cover art")


def test_a_cover_that_is_not_a_picture_gives_the_procedural_artwork(
    music, home, tmp_path, small_settings, request_for
):
    tracks = home / "tracks"
    tracks.mkdir()
    path = write_track(tracks, "song", music, kind="mp3")
    tag_track(path, title="Song", artist="Me", picture=b"not a picture at all" * 10)
    episode = make_episode(request_for(settings=small_settings(audio="folder", artwork="track")))
    assert episode.passed, episode.reason
    assert episode.title == "Me – Song"
    assert episode.source["artwork"] == "procedural"
    assert episode.source["notes"] == [
        "artwork: the cover art in the track's tags is not a readable picture; the procedural "
        "artwork was used"
    ]


def test_the_channel_title_template_wins_and_can_use_title_and_artist(
    music, home, small_settings, request_for
):
    tracks = home / "tracks"
    tracks.mkdir()
    tagged(tracks, "m4a", music, picture=False)
    settings = small_settings(
        audio="folder",
        title_template="{title} ({artist}) · {bpm} BPM",
        short_template="{title} by {artist} {hashtags}",
    )
    episode = make_episode(request_for(settings=settings))
    assert episode.passed, episode.reason
    assert episode.title.startswith("Harbour Lights (Sol Avenue) · ")
    assert episode.texts["x"]["text"].startswith("Harbour Lights by Sol Avenue #")


def test_gemini_copy_keeps_the_songs_own_title(music, home, small_settings, request_for):
    from autoretto.pipeline.settings import parse_providers
    from tests.fakes.gemini_server import FakeGemini

    tracks = home / "tracks"
    tracks.mkdir()
    tagged(tracks, "opus", music, picture=False)
    with FakeGemini(api_key="g-key") as fake:
        providers = parse_providers(
            {"gemini": {"base_url": fake.url, "retry_wait": 0}}, path="t.toml"
        )
        request = request_for(
            settings=small_settings(audio="folder", copy="gemini"),
            providers=providers,
            secrets=lambda name: "g-key" if name == "gemini_api_key" else None,
        )
        episode = make_episode(request)
    assert episode.passed, episode.reason
    assert episode.title == "Nell & The Tides – Quiet Arcade"  # not the model's own title
    assert episode.description.startswith("A slow, warm loop")  # the rest is the model's
    assert episode.source["copy"] == "gemini:gemini-3.8-flash"
