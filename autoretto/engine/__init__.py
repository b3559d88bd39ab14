"""The engine: the order of steps, and nothing else.

- `run`: one process's run (its id, moment, platforms, heartbeat, report) and the restore
  hold that every posting command checks first;
- `run_due`: channels → due slots → decisions → posts; slots that wait; paced posts; making;
- `post_now`: a ready episode now, outside the slots;
- `status`: what each channel's slots look like, read-only;
- `restore`: a person's word (`confirm`, `look`) and a restored database (`journal`, `resume`).

The never-twice rule itself lives in three small modules the engine calls: `stamp` (every
claim), `decisions` (every decision) and `posts` (every post), beside the pure `slots`.
"""

from __future__ import annotations

from .post_now import PostNowResult, post_now
from .restore import confirm_post, journal_report, look_post, resume
from .run import (
    Heartbeat,
    Run,
    RunReport,
    cadences,
    expiring_sign_ins,
    pace_seed,
    refuse_when_held,
    register_channels,
)
from .run_due import run_due
from .status import list_decisions, status

__all__ = [
    "Heartbeat",
    "PostNowResult",
    "Run",
    "RunReport",
    "cadences",
    "confirm_post",
    "expiring_sign_ins",
    "journal_report",
    "list_decisions",
    "look_post",
    "pace_seed",
    "post_now",
    "refuse_when_held",
    "register_channels",
    "resume",
    "run_due",
    "status",
]
