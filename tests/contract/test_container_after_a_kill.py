"""Meta's container protocol (Instagram, Threads) after a run SIGKILLed with the container on
record: the later runs publish that very container; no second one is made, one post is live."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.contract.table import ROWS, Home
from tests.contract.test_never_twice import killed_run, later_runs, posted_once


@pytest.mark.parametrize("name", ["instagram", "threads"])
def test_the_container_on_record_is_published_after_a_kill(
    name: str, home: Path, clip: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUTORETTO_VAULT", "file")  # the runs as processes open the vault too
    row = next(row for row in ROWS if row.name == name)
    fake = row.fake(tmp_path, monkeypatch)
    fake.start()
    try:
        h = Home(home, row, fake, clip)
        killed_run(h, fault="handles_saved")  # the container id is the first handle saved
        assert fake.count("create") == 1 and fake.count("publish") == 0, h.dump()
        later_runs(h, killed=True)
        posted_once(h)
        assert fake.count("create") == 1, h.dump()  # the kept container, published
        assert fake.count("publish") == 1, h.dump()
    finally:
        fake.close()
