"""The ledger: the never-twice rule and the only place with SQL (ARCHITECTURE.md §3, §7).

The engine, the platforms, the commands, the page, stats and the report call coarse operations
here (claim, take over, give back and finish a slot; decide or wait; start, record and fail a
post attempt; number a journal entry; charge and give back usage; episodes and accounts; the
read models). `store` opens the database and runs one statement at a time; `meta` keeps the
installation's small facts. The SQLite file in the home is the default store.
"""
