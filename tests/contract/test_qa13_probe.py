from __future__ import annotations

import pytest

from tests.contract.table import ROWS, Home
from tests.contract.test_never_twice import killed_run, later_runs, posted_once


@pytest.mark.parametrize("name", ["instagram", "threads"])
def test_probe(name, home, clip, tmp_path, monkeypatch):
    monkeypatch.setenv("AUTORETTO_VAULT", "file")
    row = next(r for r in ROWS if r.name == name)
    fake = row.fake(tmp_path, monkeypatch)
    fake.start()
    try:
        h = Home(home, row, fake, clip)
        killed_run(h, fault="handles_saved")
        print("after kill", fake.kinds())
        later_runs(h, killed=True)
        posted_once(h)
        print(fake.kinds())
        assert fake.count("create") == 1
    finally:
        fake.close()
