"""`logs/run.log`: one line per decision, so why a slot was skipped is visible without SQL.

Lines are appended with a single `write` on a file opened with O_APPEND, so lines of runs
that overlap never interleave.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger("autoretto.runlog")


def append_line(path: Path, line: str) -> None:
    """Append `line`. The database holds every decision; a log line that cannot be written (a
    full disk) is said on stderr and never fails the run that decided."""
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
