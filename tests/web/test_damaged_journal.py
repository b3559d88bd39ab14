"""The page over a damaged publish journal (issue 24): every page that shows the hold reads the
journal, and instead of failing it says which file and line are wrong and what to do; its
buttons post nothing. Raw HTTP against `autoretto serve` as a real process."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from tests.support import outbox_sidecars
from tests.web.test_buttons import make_home
from tests.web.test_security import owner


@pytest.mark.parametrize("how", ["a line that is not UTF-8", "a folder"])
def test_the_page_names_a_damaged_journal_and_posts_nothing(home, cli, clip, served, how):
    make_home(home, cli, clip, episodes=2)
    code, _, err = cli("run-due", now="2026-11-29T10:05:00Z")  # episode 1 goes out
    assert code == 0, err
    path = Path(cli.json("journal")["journal"])
    kept = path.read_bytes()
    server = served()
    session, csrf = owner(server)
    if how == "a folder":
        path.unlink()
        path.mkdir()
        said = f"{path} is a folder, not the journal file"
    else:
        with open(path, "ab") as writer:
            writer.write(b'\xff\xfe{"kind": "publish"}\n')
        said = f"{path}: line 4 is not UTF-8 text"
    said += ": the publish journal is damaged and posting is held"
    for where in ("/", "/trouble"):
        answer = session.get(f"{server.url}{where}", timeout=30)
        assert answer.status_code == 503, (where, answer.status_code)
        text = html.unescape(answer.text)
        assert "<h2>Posting is held</h2>" in text and said in text, text[-2000:]
        assert "then run `autoretto journal`" in text and "Traceback" not in text

    # "I have checked, resume" writes nothing back from a journal it cannot read...
    answer = session.post(f"{server.url}/resume", data={"csrf": csrf}, timeout=30)
    assert answer.status_code == 503 and said in html.unescape(answer.text)
    # ... and Post now sends nothing.
    answer = session.post(f"{server.url}/episodes/2/post-now", data={"csrf": csrf}, timeout=30)
    assert answer.status_code == 200 and said in html.unescape(answer.text)
    assert [s["title"] for s in outbox_sidecars(home)] == ["lofi 0"]
    assert [p["state"] for p in cli.json("posts")] == ["published"]

    # Mended, the same pages show the calendar again.
    if path.is_dir():
        path.rmdir()
    path.write_bytes(kept)
    assert session.get(f"{server.url}/", timeout=30).status_code == 200
