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

import importlib
from typing import Any

# Nothing is imported eagerly: a command loads only the step modules it runs (`status` needs
# neither making nor posting now). Callers import from the step's own module; the names below
# stay reachable here too. `run_due`, `status` and `post_now` are not among them: each is also
# the name of its module, which the import system sets on this package once it is loaded.
_WHERE = {
    "make_episodes": "make",
    "PostNowResult": "post_now",
    "post_now_exit": "post_now",
    "Preview": "preview",
    "preview_run_due": "preview",
    "confirm_post": "restore",
    "journal_report": "restore",
    "look_post": "restore",
    "resume": "restore",
    "list_decisions": "status",
    **dict.fromkeys(
        (
            "Heartbeat",
            "Run",
            "RunProgress",
            "RunReport",
            "cadences",
            "expiring_sign_ins",
            "outcome_exit",
            "pace_seed",
            "refuse_when_held",
            "register_channels",
        ),
        "run",
    ),
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
