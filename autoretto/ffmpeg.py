"""The one door to the ffmpeg binary of imageio-ffmpeg.

Every external process Autoretto runs goes through `run_ffmpeg`, which logs the command
(secrets masked) on the "autoretto.ffmpeg" logger and turns a failure into `FfmpegError`.
There is no ffprobe in the imageio-ffmpeg wheel, so `probe` reads what `ffmpeg -i FILE`
prints on stderr.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from autoretto.errors import MediaError

log = logging.getLogger("autoretto.ffmpeg")

STDERR_TAIL_LINES = 4

_SECRET_PATTERNS = (
    # key=value pairs in URLs or option strings: api_key=..., token=..., sig=...
    re.compile(r"(?i)((?:api[_-]?key|key|token|access_token|secret|password|sig)=)[^&\s:'\"]+"),
    # HTTP headers passed with -headers
    re.compile(r"(?i)((?:authorization|x-goog-api-key|x-api-key):\s*)(?:bearer\s+)?[^\r\n'\"]+"),
    # user:password@ in URLs
    re.compile(r"(?i)(://[^/:@\s]+:)[^@/\s]+(?=@)"),
)


class FfmpegError(MediaError):
    """ffmpeg exited with an error or ran out of time; the message ends with its last words."""


def mask_secrets(text: str) -> str:
    """Return `text` with anything that looks like a key, token or password replaced by ***."""
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda match: match.group(1) + "***", text)
    return text


@functools.cache
def ffmpeg_exe() -> str:
    """Path of the ffmpeg binary shipped in the imageio-ffmpeg wheel (looked up once)."""
    import imageio_ffmpeg

    return imageio_ffmpeg.get_ffmpeg_exe()


def _stderr_tail(stderr: str, lines: int = STDERR_TAIL_LINES) -> str:
    kept = [line.strip() for line in stderr.splitlines() if line.strip()]
    return mask_secrets(" | ".join(kept[-lines:]))


def _run(
    args: list[str], *, timeout: float | None, capture_stdout: bool = True
) -> subprocess.CompletedProcess:
    command = [ffmpeg_exe(), *[str(arg) for arg in args]]
    log.debug("run: %s", mask_secrets(shlex.join(command)))
    try:
        return subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if capture_stdout else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        stderr = (error.stderr or b"").decode("utf-8", "replace")
        raise FfmpegError(
            f"ffmpeg took longer than {timeout:g} s and was stopped: {_stderr_tail(stderr)}"
        ) from None


def run_ffmpeg(args: list[str], *, timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run ffmpeg with `args` (without the binary); return the finished process.

    stdout is bytes, stderr is decoded text. Raises FfmpegError on a non-zero exit or when
    `timeout` seconds pass, with ffmpeg's last few stderr lines in the message.
    """
    process = _run(args, timeout=timeout)
    stderr = process.stderr.decode("utf-8", "replace")
    process = subprocess.CompletedProcess(process.args, process.returncode, process.stdout, stderr)
    if process.returncode != 0:
        log.debug("ffmpeg failed with exit code %s: %s", process.returncode, _stderr_tail(stderr))
        raise FfmpegError(f"ffmpeg failed (exit code {process.returncode}): {_stderr_tail(stderr)}")
    return process


@dataclass(frozen=True)
class VideoStream:
    codec: str
    width: int
    height: int
    fps: float  # the stream's base frame rate (ffmpeg's "tbr"), else its average "fps"
    pix_fmt: str | None
    color_space: str | None = None  # e.g. "bt709" when the stream is tagged


@dataclass(frozen=True)
class AudioStream:
    codec: str
    sample_rate: int
    channels: int


@dataclass(frozen=True)
class MediaInfo:
    path: str
    duration: float
    size_bytes: int
    video: VideoStream | None
    audio: AudioStream | None


def _split_top_level(text: str) -> list[str]:
    """Split an ffmpeg stream description on ", " outside parentheses and brackets."""
    parts, depth, current = [], 0, []
    for character in text:
        if character in "([":
            depth += 1
        elif character in ")]":
            depth -= 1
        if character == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(character)
    parts.append("".join(current).strip())
    return [part for part in parts if part]


_CHANNEL_LAYOUTS = {"mono": 1, "stereo": 2, "2.1": 3, "quad": 4, "5.0": 5, "5.1": 6, "7.1": 8}


def _parse_video(description: str) -> VideoStream | None:
    if "(attached pic)" in description:
        return None  # cover art inside an audio file is not a video
    parts = _split_top_level(description)
    codec = parts[0].split()[0] if parts else "unknown"
    pix_fmt = color_space = None
    if len(parts) > 1 and not re.match(r"^\d+x\d+", parts[1]):
        pix_fmt = parts[1].split("(")[0].strip() or None
        details = re.search(r"\(([^)]*)\)", parts[1])
        if details:
            spaces = [item.strip() for item in details.group(1).split(",")]
            for item in spaces:
                if item.startswith("bt") or item.startswith("smpte"):
                    color_space = item.split("/")[0]
                    break
    size = re.search(r"(?<![\w.])(\d{2,5})x(\d{2,5})(?![\w.])", description)
    width, height = (int(size.group(1)), int(size.group(2))) if size else (0, 0)
    tbr = re.search(r"([\d.]+)(k?) tbr", description)
    fps = re.search(r"([\d.]+)(k?) fps", description)
    rate_match = tbr or fps
    rate = 0.0
    if rate_match:
        rate = float(rate_match.group(1)) * (1000 if rate_match.group(2) else 1)
    return VideoStream(codec, width, height, rate, pix_fmt, color_space)


def _parse_audio(description: str) -> AudioStream:
    parts = _split_top_level(description)
    codec = parts[0].split()[0] if parts else "unknown"
    rate = re.search(r"(\d+) Hz", description)
    channels = 0
    for part in parts[1:]:
        layout = part.split("(")[0].strip()
        if layout in _CHANNEL_LAYOUTS:
            channels = _CHANNEL_LAYOUTS[layout]
            break
        counted = re.match(r"(\d+) channels", layout)
        if counted:
            channels = int(counted.group(1))
            break
    return AudioStream(codec, int(rate.group(1)) if rate else 0, channels)


def parse_probe_output(path: str, stderr: str, size_bytes: int) -> MediaInfo:
    """Build a MediaInfo from the stderr of `ffmpeg -i FILE`; raise MediaError if none."""
    if "Input #0" not in stderr:
        reason = "not a media file ffmpeg can read"
        if "No such file" in stderr:
            reason = "file not found"
        elif "Permission denied" in stderr:
            reason = "permission denied"
        raise MediaError(f"{path}: {reason}")
    duration = 0.0
    found = re.search(r"Duration: (\d+):(\d+):(\d+(?:\.\d+)?)", stderr)
    if found:
        hours, minutes, seconds = found.groups()
        duration = int(hours) * 3600 + int(minutes) * 60 + float(seconds)
    video = audio = None
    for match in re.finditer(r"Stream #0:\d+\S*: (Video|Audio): (.*)", stderr):
        kind, description = match.groups()
        if kind == "Video" and video is None:
            video = _parse_video(description)
        elif kind == "Audio" and audio is None:
            audio = _parse_audio(description)
    return MediaInfo(str(path), duration, size_bytes, video, audio)


def probe(path: str | os.PathLike) -> MediaInfo:
    """Describe a media file: duration, size, first video and audio stream.

    Raises MediaError naming the file when it is missing or not something ffmpeg can read.
    """
    path = str(Path(path).resolve())
    if not os.path.isfile(path):
        raise MediaError(f"{path}: file not found")
    size = os.path.getsize(path)
    if size == 0:
        raise MediaError(f"{path}: the file is empty")
    process = _run(["-hide_banner", "-nostdin", "-i", path], timeout=60, capture_stdout=False)
    return parse_probe_output(path, process.stderr.decode("utf-8", "replace"), size)


def check_playable(path: str | os.PathLike) -> MediaInfo:
    """Probe `path` and decode its first second of video; return the MediaInfo.

    Raises MediaError with a one-line reason naming the file when there is no video stream
    or the video cannot be decoded.
    """
    info = probe(path)
    if info.video is None:
        raise MediaError(f"{info.path}: has no video stream")
    process = _run(
        [
            "-hide_banner",
            "-nostdin",
            "-v",
            "error",
            "-i",
            info.path,
            "-map",
            "0:v:0",
            "-t",
            "1",
            "-vf",
            "scale=16:16",
            "-pix_fmt",
            "gray",
            "-f",
            "rawvideo",
            "-",
        ],
        timeout=120,
    )
    stderr = process.stderr.decode("utf-8", "replace")
    if process.returncode != 0 or not process.stdout:
        reason = _stderr_tail(stderr, 1) or "no frame could be decoded"
        raise MediaError(f"{info.path}: the video cannot be decoded ({reason})")
    return info
