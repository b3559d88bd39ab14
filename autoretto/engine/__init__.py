"""The engine: the order of steps, and nothing else.

- `run`: one process's run (its id, moment, platforms, heartbeat, report) and the restore
  hold that every posting command checks first;
- `run_due`: channels → due slots → decisions → posts; slots that wait; paced posts; making;
- `preview`: what a run-due would do now (`run-due --dry-run`), writing nothing;
- `post_now`: a ready episode now, outside the slots;
- `make`: episodes made now with a channel's pipeline (`autoretto make`);
- `status`: what each channel's slots look like, read-only;
- `restore`: a person's word (`confirm`, `look`) and a restored database (`journal`, `resume`).

The never-twice rule itself lives in three small modules the engine calls: `stamp` (every
claim), `decisions` (every decision) and `posts` (every post), beside the pure `slots`.
"""

from __future__ import annotations

from .make import make_episodes
from .post_now import PostNowResult, post_now, post_now_exit
from .preview import Preview, preview_run_due
from .restore import confirm_post, journal_report, look_post, resume
from .run import (
    Heartbeat,
    Run,
    RunProgress,
    RunReport,
    cadences,
    expiring_sign_ins,
    outcome_exit,
    pace_seed,
    refuse_when_held,
    register_channels,
)
from .run_due import run_due
from .status import list_decisions, status

__all__ = [
    "Heartbeat",
    "PostNowResult",
    "Preview",
    "Run",
    "RunProgress",
    "RunReport",
    "cadences",
    "confirm_post",
    "expiring_sign_ins",
    "journal_report",
    "list_decisions",
    "look_post",
    "make_episodes",
    "outcome_exit",
    "pace_seed",
    "post_now",
    "post_now_exit",
    "preview_run_due",
    "refuse_when_held",
    "register_channels",
    "resume",
    "run_due",
    "status",
]
