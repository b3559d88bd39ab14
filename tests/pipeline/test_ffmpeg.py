import logging

import pytest

from autoretto.errors import MediaError
from autoretto.ffmpeg import (
    FfmpegError,
    check_playable,
    mask_secrets,
    parse_probe_output,
    probe,
    run_ffmpeg,
)


def _make_clip(path, seconds=1.0, audio=True):
    args = [
        "-hide_banner",
        "-v",
        "error",
        "-y",
        "-f",
        "lavfi",
        "-i",
        f"testsrc2=size=160x90:rate=30:duration={seconds}",
    ]
    if audio:
        args += ["-f", "lavfi", "-i", f"sine=frequency=440:duration={seconds}"]
    args += ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-preset", "ultrafast"]
    if audio:
        args += ["-c:a", "aac", "-ar", "48000"]
    run_ffmpeg([*args, "-t", str(seconds), str(path)])


def test_probe_reads_streams_duration_and_size(tmp_path):
    clip = tmp_path / "clip.mp4"
    _make_clip(clip, seconds=1.5)
    info = probe(clip)
    assert info.video.codec == "h264"
    assert (info.video.width, info.video.height) == (160, 90)
    assert info.video.fps == 30
    assert info.video.pix_fmt == "yuv420p"
    assert info.audio.codec == "aac" and info.audio.sample_rate == 48000
    assert info.audio.channels == 1
    assert info.duration == pytest.approx(1.5, abs=0.05)
    assert info.size_bytes == clip.stat().st_size


def test_probe_refuses_a_text_file_naming_it(tmp_path):
    text = tmp_path / "notes.mp4"
    text.write_text("this is not a video\n" * 20)
    with pytest.raises(MediaError, match=r"notes\.mp4: not a media file ffmpeg can read"):
        probe(text)


def test_probe_missing_file(tmp_path):
    with pytest.raises(MediaError, match="file not found"):
        probe(tmp_path / "gone.mp4")


def test_check_playable_needs_video(tmp_path):
    sound = tmp_path / "sound.m4a"
    run_ffmpeg(["-v", "error", "-f", "lavfi", "-i", "sine=duration=1", "-c:a", "aac", str(sound)])
    with pytest.raises(MediaError, match=r"sound\.m4a: has no video stream"):
        check_playable(sound)


def test_check_playable_refuses_a_truncated_video(tmp_path):
    clip = tmp_path / "clip.mp4"
    _make_clip(clip, seconds=1.0)
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(clip.read_bytes()[: clip.stat().st_size // 3])
    with pytest.raises(MediaError, match=r"broken\.mp4"):
        check_playable(broken)
    assert check_playable(clip).video is not None


def test_run_ffmpeg_failure_carries_stderr_tail():
    with pytest.raises(FfmpegError, match=r"exit code \d+.*no_such_input"):
        run_ffmpeg(["-v", "error", "-i", "/no_such_input.wav", "-f", "null", "-"])


def test_commands_are_logged_with_secrets_masked(caplog):
    caplog.set_level(logging.DEBUG, logger="autoretto.ffmpeg")
    with pytest.raises(FfmpegError):
        run_ffmpeg(
            [
                "-v",
                "error",
                "-headers",
                "Authorization: Bearer sekrit123",
                "-i",
                "http://127.0.0.1:9/a.mp3?api_key=hunter2",
                "-f",
                "null",
                "-",
            ],
            timeout=20,
        )
    logged = caplog.text
    assert "run:" in logged
    assert "sekrit123" not in logged and "hunter2" not in logged


def test_mask_secrets_forms():
    assert "abc" not in mask_secrets("https://x/y?key=abc&b=1")
    assert "pw" not in mask_secrets("https://user:pw@host/file")
    assert mask_secrets("plain -i file.wav") == "plain -i file.wav"


def test_parse_probe_output_ignores_cover_art_and_reads_layouts():
    stderr = """Input #0, mp3, from 'x.mp3':
  Duration: 00:03:05.12, start: 0.025057, bitrate: 320 kb/s
  Stream #0:0: Audio: mp3 (mp3float), 44100 Hz, stereo, fltp, 320 kb/s
  Stream #0:1: Video: mjpeg (Baseline), yuvj420p(pc), 500x500, 90k tbr (attached pic)
"""
    info = parse_probe_output("x.mp3", stderr, 10)
    assert info.video is None
    assert info.audio.channels == 2 and info.audio.sample_rate == 44100
    assert info.duration == pytest.approx(185.12)
