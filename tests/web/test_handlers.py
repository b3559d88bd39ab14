"""The page's handlers, each served alone (`app.build(page, [route])`) through Starlette's
TestClient: no server process, no browser. What a person reads on the page and what the
database then holds."""

from __future__ import annotations

import re

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from autoretto.config import load_config
from autoretto.platforms import FIELDS
from autoretto.web import app as web
from tests.support import channel_toml, write_config

TOKEN = "test-sign-in-token"


def make_home(home, cli, clip, *, episodes=3, approval=False) -> None:
    write_config(home, channel_toml("lofi", slots=("10:00", "19:00"), approval=approval))
    assert cli("init")[0] == 0
    for number in range(episodes):
        code, _, err = cli("episode", "add", "lofi", str(clip), "--title", f"Track {number + 1}")
        assert code == 0, err
    cli("run-due", now="2026-11-29T09:00:00Z")  # the channel is seen; nothing is due


def page_for(home) -> web.Page:
    config = load_config(platforms=FIELDS)
    return web.Page.of(config, login_token=TOKEN)


def client_of(page: web.Page, *routes: Route) -> TestClient:
    """A client of an app holding only `routes` (and sign-in), signed in as the owner."""
    app = web.build(page, [*routes, Route("/login", web.login)])
    client = TestClient(app, base_url="http://127.0.0.1:8780")
    assert client.get(f"/login?token={TOKEN}").status_code == 200
    return client


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, html[:2000]
    return found.group(1)


def test_the_calendar_handler_alone_shows_each_slot_with_its_episode(home, cli, clip):
    make_home(home, cli, clip)
    client = client_of(page_for(home), Route("/", web.home))
    answer = client.get("/")
    assert answer.status_code == 200
    html = answer.text
    # Seven days from today, Sunday 29 November 2026 (TEST_NOW), today first and marked.
    assert 'data-date="2026-11-29"' in html and 'data-date="2026-12-05"' in html
    assert 'data-date="2026-11-28"' not in html and 'data-date="2026-12-06"' not in html
    assert re.search(r'class="day-head today"[^>]*>Sun <b>29</b>', html)
    # The coming slots carry the episodes the queue gives them, in order, each a link.
    for key, number in (("2026-11-29T10:00", 1), ("2026-11-29T19:00", 2)):
        card = re.search(rf'data-slot="{key}"[^>]*data-episode="(\d+)"', html)
        assert card and int(card.group(1)) == number, key
    assert '<a href="/episodes/1">' in html and "Track 1" in html
    # The queue lists slot, episode, in the order run-due takes them.
    queue = re.findall(r'<li class="in-line" data-slot="([^"]+)" data-episode="(\d+)"', html)
    assert queue[:3] == [
        ("2026-11-29T10:00", "1"), ("2026-11-29T19:00", "2"), ("2026-11-30T10:00", "3")
    ]  # fmt: skip


def test_the_month_view_and_a_bad_view_are_answered(home, cli, clip):
    make_home(home, cli, clip, episodes=1)
    client = client_of(page_for(home), Route("/", web.home))
    month = client.get("/?view=month&day=2026-12-15")
    assert month.status_code == 200
    # December 2026 in whole weeks: Monday 30 November to Sunday 3 January.
    assert 'data-date="2026-11-30"' in month.text and 'data-date="2027-01-03"' in month.text
    assert 'data-view="month"' in month.text
    bad = client.get("/?view=year")
    assert bad.status_code == 400 and "view: give week or month" in bad.text
    for day in ("tomorrow", "9999-12-31", "0001-01-01"):
        answer = client.get(f"/?view=month&day={day}")
        assert answer.status_code == 400 and "day: give a date" in answer.text, day


def test_a_handler_alone_still_refuses_a_stranger(home, cli, clip):
    make_home(home, cli, clip, episodes=1)
    app = web.build(page_for(home), [Route("/", web.home)])
    stranger = TestClient(app, base_url="http://127.0.0.1:8780")
    answer = stranger.get("/")
    assert answer.status_code == 401 and "Sign in first" in answer.text


@pytest.mark.parametrize("view", ["week", "month"])
def test_a_slot_that_went_out_shows_the_episode_it_posted(home, cli, clip, view):
    make_home(home, cli, clip, episodes=2)
    assert cli("run-due", now="2026-11-29T10:00:30Z")[0] == 0
    assert cli("run-due", now="2026-11-29T10:05:00Z")[0] == 0  # its paced moment
    client = client_of(page_for(home), Route("/", web.home))
    html = client.get(f"/?view={view}").text
    posted = re.search(
        r'data-slot="2026-11-29T10:00" data-state="(\w+)" data-episode="(\d+)"', html
    )
    assert posted, html
    assert posted.group(2) == "1"
    # The next slot now takes episode 2: the queue moved on as run-due will.
    assert re.search(r'<li class="in-line" data-slot="2026-11-29T19:00" data-episode="2"', html)


def edit_client(home) -> TestClient:
    return client_of(
        page_for(home),
        Route("/episodes/{episode_id:id}/edit", web.edit_form),
        Route("/episodes/{episode_id:id}/edit", web.edit_save, methods=["POST"]),
    )


def test_the_editor_saves_a_new_title_and_records_it(home, cli, clip):
    make_home(home, cli, clip, episodes=1)
    client = edit_client(home)
    form = client.get("/episodes/1/edit")
    assert form.status_code == 200 and 'name="title" value="Track 1"' in form.text
    saved = client.post(
        "/episodes/1/edit",
        data={"csrf": csrf_of(form.text), "title": "Night drive", "description": "Calm."},
        follow_redirects=False,
    )
    assert saved.status_code == 303 and saved.headers["location"] == "/episodes/1"
    shown = cli.json("episode", "show", "1")
    assert (shown["title"], shown["description"]) == ("Night drive", "Calm.")
    history = client.get("/episodes/1/edit").text
    assert "page · <b>title</b>: “Track 1” → “Night drive”" in history
    assert [(e["who"], e["field"]) for e in cli.json("episode", "edits", "1")] == [
        ("page", "title"), ("page", "description")
    ]  # fmt: skip


def test_the_editor_refuses_text_the_gates_refuse_and_changes_nothing(home, cli, clip):
    make_home(home, cli, clip, episodes=1)
    write_config(
        home,
        channel_toml("lofi", slots=("10:00", "19:00"))
        + '\nready_ahead = 0\n\n[channels.pipeline]\nbanned_terms = ["forbidden"]\n',
    )
    client = edit_client(home)
    form = client.get("/episodes/1/edit")
    refused = client.post(
        "/episodes/1/edit",
        data={"csrf": csrf_of(form.text), "title": "A forbidden song"},
    )
    assert refused.status_code == 200  # the editor again, with why
    assert "the banned_terms gate refuses the new text" in refused.text
    assert cli.json("episode", "show", "1")["title"] == "Track 1"
    assert cli.json("episode", "edits", "1") == []


def test_the_editor_refuses_without_the_csrf_token(home, cli, clip):
    make_home(home, cli, clip, episodes=1)
    client = edit_client(home)
    answer = client.post("/episodes/1/edit", data={"title": "Sneaky"})
    assert answer.status_code == 403
    assert cli.json("episode", "show", "1")["title"] == "Track 1"


def test_move_and_swap_from_the_queue(home, cli, clip):
    make_home(home, cli, clip, episodes=3)
    client = client_of(
        page_for(home),
        Route("/", web.home),
        Route("/episodes/{episode_id:id}/move", web.move, methods=["POST"]),
        Route("/episodes/{episode_id:id}/swap", web.swap, methods=["POST"]),
    )
    html = client.get("/").text
    csrf = csrf_of(html)

    def line() -> list[tuple[str, str]]:
        found = client.get("/").text
        return re.findall(r'<li class="in-line" data-slot="([^"]+)" data-episode="(\d+)"', found)

    first = line()[0][0]
    moved = client.post("/episodes/3/move", data={"csrf": csrf, "slot": first})
    assert moved.status_code == 200
    assert [number for _, number in line()[:3]] == ["3", "1", "2"]
    client.post("/episodes/1/swap", data={"csrf": csrf, "with": "2"})
    assert [number for _, number in line()[:3]] == ["3", "2", "1"]
    refused = client.post("/episodes/1/move", data={"csrf": csrf, "slot": "2030-01-01T10:00"})
    assert "not one of the coming slots" in refused.text
    assert [number for _, number in line()[:3]] == ["3", "2", "1"]


def test_a_films_cadence_has_its_own_calendar_and_line(home, cli, clip):
    write_config(
        home,
        channel_toml("lofi", slots=("10:00", "19:00")) + '\n[channels.films]\nslots = ["20:00"]\n',
    )
    assert cli("init")[0] == 0
    for title in ("Track 1", "Track 2"):
        assert cli("episode", "add", "lofi", str(clip), "--title", title)[0] == 0
    for title in ("Film 1", "Film 2"):
        assert cli("film", "add", "lofi", str(clip), "--title", title)[0] == 0
    for film in ("3", "4"):
        assert cli("approve", film)[0] == 0  # only approved films are posted
    cli("run-due", now="2026-11-29T09:00:00Z")
    client = client_of(page_for(home), Route("/", web.home))
    html = client.get("/").text
    films = html[html.index('data-channel="lofi/films"') :]
    assert re.search(r'data-slot="2026-11-29T20:00"[^>]*data-episode="3"', films)
    # Films keep to their own line: a film swaps with a film, never with an episode.
    code, _, err = cli("episode", "swap", "3", "1")
    assert code != 0 and "different lines" in err
    assert cli.json("episode", "move", "4", "--slot", "2026-11-29T20:00")["line"] == [4, 3]
    assert [e["episode_id"] for e in cli.json("queue")["lofi/films"][:2]] == [4, 3]
