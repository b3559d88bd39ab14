"""`logs/run.log`: one line per decision, so why a slot was skipped is visible without SQL.

Lines are appended with a single `write` on a file opened with O_APPEND, so lines of runs
that overlap never interleave.

The logs of the home do not grow forever: a log that reached `MAX_BYTES` is renamed to
`NAME.1` (`NAME.1` to `NAME.2` ..., the oldest beyond `KEEP` dropped) before the next line goes
to a new file. `run.log` is checked before each line; `cron.log`, which cron's shell appends to,
at the start of each `run-due`. Renaming is what makes this safe for writers that overlap: a
process that opened the log before the rename keeps appending to the same file, now `NAME.1`,
so no line is lost and none is split. Only one process renames at a time (an exclusive `flock`
on the logs folder), and it looks at the size again once it holds the lock, so two processes
that both saw a full log rotate it once, not twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from pathlib import Path

log = logging.getLogger("autoretto.runlog")

MAX_BYTES = 5 * 1024 * 1024  # a rotated log is this big, give or take the last lines
KEEP = 3  # rotated files kept beside the live one: at most ~20 MB a log
LOGS = ("run.log", "cron.log")  # the logs of a home's logs/ folder that are rotated


def append_line(path: Path, line: str, *, max_bytes: int = MAX_BYTES, keep: int = KEEP) -> None:
    """Append `line`, rotating a full log first. The database holds every decision; a log line
    that cannot be written (a full disk) is said on stderr and never fails the run that decided."""
    with contextlib.suppress(OSError):  # a log that cannot be rotated still takes the line
        rotate_if_full(path, max_bytes=max_bytes, keep=keep)
    data = (line.replace("\n", " ") + "\n").encode("utf-8")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(descriptor, data)
        finally:
            os.close(descriptor)
    except OSError as error:
        log.warning("%s: a decision is not in the run log (%s)", path, error.strerror or error)


def rotate_logs(folder: Path) -> None:
    """Rotate each of the home's logs (`LOGS` in `folder`) that is full. Never raises: a log
    that cannot be rotated (a missing folder, a read-only disk) must not stop a run."""
    for name in LOGS:
        with contextlib.suppress(OSError):
            rotate_if_full(folder / name)


def rotate_if_full(path: Path, *, max_bytes: int = MAX_BYTES, keep: int = KEEP) -> bool:
    """Rename `path` to `path.1` (shifting older ones, dropping the one past `keep`, at least
    1) when it holds `max_bytes` or more. True if this call rotated it."""
    if _size(path) < max_bytes:
        return False
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        if _size(path) < max_bytes:  # another process rotated it while this one waited
            return False
        for number in range(keep - 1, 0, -1):
            older = path.with_name(f"{path.name}.{number}")
            if older.exists():
                os.replace(older, path.with_name(f"{path.name}.{number + 1}"))
        os.replace(path, path.with_name(f"{path.name}.1"))
        return True
    finally:
        os.close(folder)  # closing the descriptor releases the lock


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def decision_line(
    *,
    at: str,
    run_id: str,
    channel: str,
    slot: str,
    platform: str,
    outcome: str,
    reason: str,
    post_id: int | None,
) -> str:
    post = f" post={post_id}" if post_id is not None else ""
    return (
        f"{at} run={run_id} channel={channel} slot={slot} platform={platform}"
        f" outcome={outcome}{post} reason={reason}"
    )
