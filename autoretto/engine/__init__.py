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

Nothing is imported here: a command loads only the step modules it runs (`status` needs
neither making nor posting now), each imported from its own module.
"""
