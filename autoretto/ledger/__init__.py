"""The ledger: the never-twice rule and the only place with SQL (ARCHITECTURE.md §3, §7).

The engine, the platforms, the commands, the page, stats and the report call coarse operations
here, never SQL of their own:

- `claims`: channels and their schedules, the slot claim and the stamp, making and waiting
  claims, decisions and slot states;
- `runs`: runs, their beats and sightings, incidents;
- `posts`: posts and their attempts, the never-twice transitions, a restore's write-back;
- `journal`: the journal's numbering and the database's copy of each line;
- `episodes`: episodes, imports, makes, retention, compilations;
- `accounts`: accounts, usage, X's credits, pauses;
- `views`: the read models behind `status`, the dry run, the report and stats;
- `meta`: the installation's small facts.

`store` opens the store and runs one statement at a time: the SQLite file in the home (the
default) or PostgreSQL (`postgres`, for several hosts), with migrations by name; `copy` moves a
home from the one to the other. Every statement is written once, in a form both accept.
"""
