"""`autoretto compile`: the last published episodes joined (stream copy where the encodes
match), chapters in the description, gated, never on a slot, posted by `post-now`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autoretto.ffmpeg import probe, run_ffmpeg
from tests.support import channel_toml, outbox_sidecars, write_config

PIPELINE = """
[channels.pipeline]
min_seconds = 3
banned_terms = ["forbidden"]
"""
FIRST_RUN = "2026-11-29T09:00:00Z"
SLOT_RUNS = ("2026-11-29T10:01:00Z", "2026-11-29T11:01:00Z", "2026-11-29T12:01:00Z")
COLOUR = ["-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709"]


def make_clip(path: Path, source: str, *, size: str, rate: int, seconds: int, audio: str) -> Path:
    """A tiny H.264/AAC clip: `source` is a lavfi video source, `audio` its sine options."""
    tagged = rate == 30  # the pipeline's own encode: bt709-tagged; the odd one is not
    run_ffmpeg(
        [
            "-y", "-v", "error",
            "-f", "lavfi", "-i", f"{source}=size={size}:rate={rate}:duration={seconds}",
            "-f", "lavfi", "-i", f"sine=frequency=330:duration={seconds}:{audio}",
            "-vf", "scale=out_color_matrix=bt709:out_range=tv,format=yuv420p" if tagged
            else "format=yuv420p",
            "-c:v", "libx264", "-preset", "ultrafast", "-crf", "30",
            *(COLOUR if tagged else []),
            "-c:a", "aac", "-ac", "2" if tagged else "1", "-t", str(seconds),
            "-movflags", "+faststart", str(path),
        ]
    )  # fmt: skip
    return path


@pytest.fixture(scope="session")
def clips(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two clips in one encode (different pictures) and one in another size, rate and audio."""
    folder = tmp_path_factory.mktemp("compile-clips")
    stereo = "sample_rate=48000"
    pipeline_like = {"size": "64x36", "rate": 30, "audio": stereo}
    return {
        "a": make_clip(folder / "a.mp4", "testsrc2", seconds=3, **pipeline_like),
        "b": make_clip(folder / "b.mp4", "testsrc", seconds=4, **pipeline_like),
        "long": make_clip(folder / "long.mp4", "testsrc2", seconds=11, **pipeline_like),
        "c": make_clip(
            folder / "c.mp4",
            "smptebars",
            size="48x36",
            rate=25,
            seconds=2,
            audio="sample_rate=44100",
        ),
    }


def add_episode(cli, video: Path, title: str) -> int:
    code, out, err = cli("episode", "add", "lofi", str(video), "--title", title, "--tags", "lofi")
    assert code == 0, err
    return int(out.split()[1])


def publish(cli, count: int) -> None:
    """Serve `count` slots on the folder platform: the oldest episodes go out in order."""
    cli("run-due", "--no-make", now=FIRST_RUN)
    for moment in SLOT_RUNS[:count]:
        code, _, err = cli("run-due", "--no-make", now=moment)
        assert code == 0, err
    posts = cli.json("posts")
    assert [post["state"] for post in posts] == ["published"] * count


def packets(path: str | Path) -> list[tuple[int, str]]:
    """(size, md5) of every video packet as stored in the file (read without decoding)."""
    process = run_ffmpeg(
        ["-v", "error", "-i", str(path), "-map", "0:v:0", "-c", "copy", "-f", "framemd5", "-"]
    )
    found = []
    for line in process.stdout.decode().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        fields = [field.strip() for field in line.split(",")]
        found.append((int(fields[4]), fields[5]))
    return found


def decoded_frames(path: str | Path) -> int:
    process = run_ffmpeg(
        ["-v", "error", "-i", str(path), "-map", "0:v:0", "-f", "framemd5", "-"], timeout=120
    )
    return sum(1 for line in process.stdout.decode().splitlines() if line[:1].isdigit())


def test_compile_joins_by_stream_copy_and_lists_chapters(home, cli, clips):
    write_config(home, channel_toml() + PIPELINE)
    cli("init")
    ids = [
        add_episode(cli, clips["a"], "First Light"),
        add_episode(cli, clips["b"], "Second Wind"),
        add_episode(cli, clips["c"], "Third Rail"),
    ]
    publish(cli, 3)

    code, out, err = cli("compile", "lofi", "--last", "3", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["kind"] == "compilation" and result["state"] == "ready", result["reason"]
    assert result["off_schedule"] is True
    assert [p["episode_id"] for p in result["parts"]] == ids
    assert [p["joined"] for p in result["parts"]] == ["copied", "copied", "re-encoded"]
    assert "size 48x36" in result["parts"][2]["why"] and "25 fps" in result["parts"][2]["why"]
    assert all(gate["passed"] for gate in result["gates"])
    assert {"duration", "streams", "text_limits", "banned_terms", "chapters"} <= {
        gate["name"] for gate in result["gates"]
    }

    # Chapters: the first at 0:00, each start the sum of the probed durations before it.
    durations = [probe(clips[name]).duration for name in ("a", "b")]
    starts = [0.0, durations[0], durations[0] + durations[1]]
    assert [c["start"] for c in result["chapters"]] == pytest.approx(starts, abs=0.001)
    expected = "\n".join(
        f"0:{round(start):02d} {title}"
        for start, title in zip(starts, ("First Light", "Second Wind", "Third Rail"), strict=True)
    )
    assert expected.startswith("0:00 First Light\n")
    assert expected in result["description"]
    assert expected in result["texts"]["folder"]["description"]

    # The copied episodes' video packets are in the output as they were in the inputs (a
    # re-encode never reproduces a packet); only the first packet of each gains the
    # parameter sets the join repeats in-band.
    video = result["videos"]["landscape"]
    joined, first, second, third = (packets(p) for p in (video, clips["a"], clips["b"], clips["c"]))
    assert joined[1 : len(first)] == first[1:]
    assert joined[len(first) + 1 : len(first) + len(second)] == second[1:]
    rest = joined[len(first) + len(second) :]
    assert len(rest) == 60  # 2 s re-encoded from 25 to 30 fps
    assert not set(rest) & set(third)

    info = probe(video)
    assert (info.video.codec, info.video.width, info.video.height) == ("h264", 64, 36)
    assert info.video.fps == 30 and info.video.color_space == "bt709"
    assert (info.audio.codec, info.audio.sample_rate, info.audio.channels) == ("aac", 48000, 2)
    assert info.duration == pytest.approx(9.0, abs=0.1)
    assert decoded_frames(video) == 270

    # Ready-to-post texts next to the video.
    folder = Path(video).parent
    sheet = json.loads((folder / "texts.json").read_text())
    assert sheet["texts"]["youtube"]["description"].startswith("3 tracks, back to back.")
    assert expected in (folder / "texts.txt").read_text()
    assert not list((home / "media" / "compilations").iterdir())  # no staging left behind


def test_a_compilation_is_never_on_a_slot_and_post_now_posts_it(home, cli, clips):
    # A channel that makes nothing: a slot could only take the compilation, or nothing.
    write_config(home, channel_toml())
    cli("init")
    add_episode(cli, clips["long"], "One")
    add_episode(cli, clips["long"], "Two")
    publish(cli, 2)
    compilation = cli.json("compile", "lofi", "--last", "2")
    assert compilation["state"] == "ready", compilation["reason"]
    assert [p["joined"] for p in compilation["parts"]] == ["copied", "copied"]
    before = len(outbox_sidecars(home))

    # A slot with only the compilation ready: nothing_ready, nothing sent.
    code, _, err = cli("run-due", "--no-make", now="2026-11-29T12:01:00Z")
    assert code == 0, err
    decisions = cli.json("decisions")
    assert decisions[-1]["slot"] == "2026-11-29T12:00"
    assert decisions[-1]["outcome"] == "nothing_ready"
    assert len(outbox_sidecars(home)) == before

    code, out, err = cli(
        "post-now", "lofi", "--episode", str(compilation["id"]), now="2026-11-29T12:30:00Z"
    )
    assert code == 0, err
    assert "posted" in out
    sidecar = outbox_sidecars(home)[-1]
    assert sidecar["title"].startswith("Compilation: One · Two")
    assert "0:00 One\n0:11 Two" in sidecar["description"]
    assert [e["kind"] for e in cli.json("episodes")] == ["episode", "episode", "compilation"]


def test_a_compilation_breaking_a_gate_is_rejected(home, cli, clips):
    write_config(home, channel_toml() + PIPELINE)
    cli("init")
    add_episode(cli, clips["a"], "Forbidden Night")
    add_episode(cli, clips["b"], "Calm")
    publish(cli, 2)

    code, out, _ = cli("compile", "lofi", "--last", "2", "--json")
    result = json.loads(out)
    assert code == 1
    assert result["state"] == "rejected"
    assert result["reason"].startswith("banned_terms: ")
    (episode,) = [e for e in cli.json("episodes") if e["id"] == result["id"]]
    assert episode["state"] == "rejected" and episode["kind"] == "compilation"


def test_compile_needs_two_published_episodes(home, cli, clips):
    write_config(home, channel_toml() + PIPELINE)
    cli("init")
    add_episode(cli, clips["a"], "Only")
    add_episode(cli, clips["b"], "Not yet out")
    publish(cli, 1)

    code, _, err = cli("compile", "lofi", "--last", "5")
    assert code == 2
    assert err.strip() == (
        'autoretto: channel "lofi" has 1 published episode; a compilation needs at least 2'
    )
    assert [e["kind"] for e in cli.json("episodes")] == ["episode", "episode"]


def test_chapter_timestamps_in_youtube_format():
    from autoretto.compile import chapters, timestamp

    assert timestamp(0) == "0:00"
    assert timestamp(65.4) == "1:05"
    assert timestamp(3723) == "1:02:03"
    found = chapters(["A", "B\nC", "D"], [61.0, 3600.0, 5.0])
    assert [c["timestamp"] for c in found] == ["0:00", "1:01", "1:01:01"]
    assert [c["title"] for c in found] == ["A", "B C", "D"]


def test_chapter_and_length_notes_come_from_the_platform_that_shows_chapters(monkeypatch):
    from types import SimpleNamespace

    from autoretto.compile import _notes, chapters
    from autoretto.platforms.youtube import YouTubePlatform

    parts = [SimpleNamespace(method="copied")] * 3
    found = chapters(["A", "B", "C"], [5.0, 600.0, 600.0])  # the first chapter is 5 s long
    notes = _notes(found, parts, 1205.0)
    assert notes == [
        "3 of 3 episodes joined by stream copy",
        "YouTube shows chapters only with at least 3 chapters of 10 s or more; "
        "the list stays in the description",
        "20:05 long: YouTube takes videos over 15 minutes only from a verified channel",
    ]
    roomy = chapters(["A", "B", "C"], [60.0, 60.0, 60.0])
    assert _notes(roomy, parts, 180.0) == ["3 of 3 episodes joined by stream copy"]

    # the facts are the class's: another player's rule is another note
    monkeypatch.setattr(YouTubePlatform, "chapter_minimum", (4, 90.0))
    monkeypatch.setattr(YouTubePlatform, "unverified_longest_seconds", 150.0)
    assert _notes(roomy, parts, 180.0)[1:] == [
        "YouTube shows chapters only with at least 4 chapters of 90 s or more; "
        "the list stays in the description",
        "3:00 long: YouTube takes videos over 2.5 minutes only from a verified channel",
    ]
