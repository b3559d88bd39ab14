"""`logs/run.log`: one line per decision, so why a slot was skipped is visible without SQL.

Lines are appended with a single `write` on a file opened with O_APPEND, so lines of runs
that overlap never interleave.
"""

from __future__ import annotations

import os
from pathlib import Path


def append_line(path: Path, line: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (line.replace("\n", " ") + "\n").encode("utf-8")
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(descriptor, data)
    finally:
        os.close(descriptor)


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
