"""`python -m tests.contract.by_hand NAME`: a person's post to a manual platform of the
contract table, as a process of its own (what `autoretto post NAME` does once the screen has
its answers), so the crash cases can SIGKILL it."""

from __future__ import annotations

import sys

from autoretto.config import Paths, home_dir, load_config
from autoretto.errors import AutorettoError
from autoretto.ledger.store import open_database
from autoretto.manual_post import post_by_hand
from autoretto.platforms import FIELDS
from tests.contract.table import ROWS


def post(name: str) -> str:
    """Post episode 1 by hand with the row's choices; the outcome, or the error's words."""
    (row,) = [row for row in ROWS if row.name == name]
    config = load_config(Paths(home_dir()), platforms=FIELDS)
    db = open_database(config.paths.database)
    try:
        return post_by_hand(config, db, name, 1, row.choices()).outcome
    except AutorettoError as error:
        return f"error: {error}"


if __name__ == "__main__":
    print(post(sys.argv[1]))
