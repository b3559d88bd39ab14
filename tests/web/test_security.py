"""The page is a door into the account's posting: what it refuses, what it never shows.

Raw HTTP (requests) against `autoretto serve` as a real process, so each refusal is the server's
own answer and not a browser's manners; every refusal is checked in the database as well.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
import requests

from autoretto.web.app import CONTENT_SECURITY_POLICY, REVIEW_COOKIE
from autoretto.web.settings import hash_password
from tests.support import outbox_sidecars
from tests.web.conftest import screenshot, sign_in
from tests.web.test_buttons import make_home, state_of
from tests.web.test_review import review_link

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def owner(server) -> tuple[requests.Session, str]:
    """A signed-in HTTP session and its CSRF token (read from a page, as a browser would)."""
    session = requests.Session()
    answer = session.get(server.sign_in, timeout=30)
    assert answer.status_code == 200 and "autoretto_session" in session.cookies
    page = session.get(f"{server.url}/episodes/1", timeout=30)
    return session, CSRF.search(page.text).group(1)


def nothing_changed(home, cli) -> None:
    assert [e["state"] for e in cli.json("episodes")] == ["ready", "ready"]
    assert cli.json("posts") == [] and outbox_sidecars(home) == []


@pytest.fixture
def page_home(home, cli, clip):
    make_home(home, cli, clip, episodes=2, approval=True)


BUTTONS = (
    "/episodes/1/approve", "/episodes/1/hold", "/episodes/1/post-now", "/posts/1/live",
    "/posts/1/not-live", "/posts/1/look", "/resume", "/logout", "/inbox/1/approve",
    "/inbox/1/ignore", "/inbox/1/send",
)  # fmt: skip
PAGES = ("/", "/trouble", "/limits", "/episodes/1", "/episodes/1/media/landscape", "/inbox")


def test_without_the_session_cookie_everything_is_refused(page_home, home, cli, served):
    server = served()
    _, csrf = owner(server)  # a real token, from another session: it opens nothing alone
    for path in PAGES:
        answer = requests.get(f"{server.url}{path}", timeout=30, allow_redirects=False)
        assert answer.status_code == 401, path
        assert "Sign in first" in answer.text
    for path in BUTTONS:
        answer = requests.post(
            f"{server.url}{path}", data={"csrf": csrf, "url": "https://x.example/1"}, timeout=30
        )
        assert answer.status_code == 401, path
    forged = requests.get(f"{server.url}/", cookies={"autoretto_session": "made-up"}, timeout=30)
    assert forged.status_code == 401
    wrong = requests.get(f"{server.url}/login?token=not-the-token", timeout=30)
    assert wrong.status_code == 401 and "autoretto_session" not in wrong.cookies
    nothing_changed(home, cli)


def test_a_wrong_csrf_token_is_refused(page_home, home, cli, served):
    server = served()
    session, csrf = owner(server)
    _, other_csrf = owner(server)  # the token of another session is just as wrong
    # the token with its last character changed (a token ending in "x" made "x" no change)
    altered = csrf[:-1] + ("y" if csrf.endswith("x") else "x")
    for form in ({}, {"csrf": ""}, {"csrf": altered}, {"csrf": other_csrf}):
        for path in BUTTONS:
            answer = session.post(f"{server.url}{path}", data=form, timeout=30)
            assert answer.status_code == 403, (path, form)
            assert "CSRF token does not match" in answer.text
    # A button pressed on another site's page, even with the right token, is refused too.
    answer = session.post(
        f"{server.url}/episodes/1/approve",
        data={"csrf": csrf},
        headers={"Origin": "http://evil.example"},
        timeout=30,
    )
    assert answer.status_code == 403
    nothing_changed(home, cli)
    # The check is not blind: the right token from the same page does press the button.
    answer = session.post(
        f"{server.url}/episodes/1/approve", data={"csrf": csrf}, timeout=30, allow_redirects=False
    )
    assert answer.status_code == 303
    assert state_of(cli, 1) == "approved"


def test_a_review_link_opens_only_its_episode(page_home, home, cli, served):
    server = served()
    holder = requests.Session()
    answer = holder.get(review_link(cli, server, 1), timeout=30)
    assert answer.status_code == 200
    cookie = next(c for c in holder.cookies if c.name == REVIEW_COOKIE)
    assert cookie.path == "/review/1" and cookie.has_nonstandard_attr("HttpOnly")
    csrf = CSRF.search(answer.text).group(1)
    # The cookie sent on purpose to another episode, or to the owner's buttons and pages:
    sent = {"Cookie": f"{REVIEW_COOKIE}={cookie.value}"}
    for path in ("/review/2", "/review/2/approve", "/review/2/hold"):
        method = requests.get if path == "/review/2" else requests.post
        answer = method(f"{server.url}{path}", headers=sent, data={"csrf": csrf}, timeout=30)
        assert answer.status_code == 403, path
        assert "for another episode" in answer.text
    for path in ("/episodes/1/approve", "/episodes/1/post-now", "/resume"):
        answer = requests.post(f"{server.url}{path}", headers=sent, data={"csrf": csrf}, timeout=30)
        assert answer.status_code == 401, path
    for path in PAGES:
        assert requests.get(f"{server.url}{path}", headers=sent, timeout=30).status_code == 401
    # Its own buttons need its CSRF token as well.
    answer = holder.post(f"{server.url}/review/1/approve", data={"csrf": "x"}, timeout=30)
    assert answer.status_code == 403
    nothing_changed(home, cli)


def test_every_answer_has_the_strict_policy_and_no_inline_script(page_home, cli, served):
    server = served()
    session, _ = owner(server)
    answers = [
        session.get(f"{server.url}{path}", timeout=30)
        for path in ("/", "/trouble", "/limits", "/inbox", "/episodes/1",
                     "/episodes/1/media/thumbnail",
                     "/static/live.js", "/static/web.css", "/episodes/99", "/nowhere")
    ]  # fmt: skip
    answers.append(requests.get(f"{server.url}/", timeout=30))  # 401
    answers.append(requests.get(review_link(cli, server, 1)[:-3] + "AAA", timeout=30))  # 403
    assert sorted({a.status_code for a in answers}) == [200, 401, 403, 404]
    for answer in answers:
        assert answer.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
        assert answer.headers["Referrer-Policy"] == "no-referrer"
    assert "script-src 'self'" in CONTENT_SECURITY_POLICY
    assert "unsafe-inline" not in CONTENT_SECURITY_POLICY
    for answer in answers:
        if answer.headers["Content-Type"].startswith("text/html"):
            assert not re.search(r"<script(?![^>]*\ssrc=)", answer.text), answer.url
            assert not re.search(r"\s(on\w+|style)=", answer.text), answer.url


def test_another_host_name_is_refused(page_home, served):
    server = served()
    port = urlsplit(server.url).port
    answer = requests.get(
        f"{server.url}/login", headers={"Host": f"rebound.example:{port}"}, timeout=30
    )
    assert answer.status_code == 421
    assert requests.get(f"{server.url}/login", timeout=30).status_code == 200


def test_another_loopback_address_answers_at_its_own_address(page_home, cli, served):
    """`--host 127.0.0.2` is this machine too: the page answers at the address it printed
    (signing in, a button), and still refuses any other name."""
    server = served("--host", "127.0.0.2")
    assert urlsplit(server.url).hostname == "127.0.0.2"
    assert requests.get(f"{server.url}/login", timeout=30).status_code == 200
    session, csrf = owner(server)
    answer = session.post(
        f"{server.url}/episodes/1/approve", data={"csrf": csrf}, timeout=30, allow_redirects=False
    )
    assert answer.status_code == 303 and state_of(cli, 1) == "approved"
    port = urlsplit(server.url).port
    for name in ("rebound.example", "127.0.0.2.nip.example"):
        answer = requests.get(f"{server.url}/login", headers={"Host": f"{name}:{port}"}, timeout=30)
        assert answer.status_code == 421, name


def test_titles_are_escaped_and_no_script_runs(home, cli, clip, served, shared_browsers):
    make_home(home, cli, clip)
    title = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    code, _, err = cli("episode", "add", "lofi", str(clip), "--title", title)
    assert code == 0, err
    server = served()
    page = shared_browsers.open()
    sign_in(page, server)
    page.goto(f"{server.url}/episodes/2")
    assert page.inner_text("h2").startswith(title)  # shown as text, whole
    assert page.locator("main script, main img[src=x]").count() == 0
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.content()
    screenshot(page, "escaped-title")
    # The shared_browsers fixture fails the test on any dialog or console error.


def test_the_server_log_shows_paths_but_no_token_or_signature(page_home, cli, served):
    server = served()
    owner(server)
    link = review_link(cli, server, 1)
    requests.get(link, timeout=30)
    written = server.stop()
    assert "GET /login 200" in written and "GET /review/1 200" in written
    signature = link.rsplit("sig=", 1)[1]
    assert signature not in written and server.token not in written


def test_beyond_this_machine_it_needs_a_password_or_a_token(page_home, cli, home):
    code, _, err = cli("serve", "--host", "0.0.0.0")
    assert code == 2
    assert "needs a password or a token first" in err and "--hash-password" in err
    config = home / "autoretto.toml"
    config.write_text(
        config.read_text() + '\n[serve]\ntoken_env = "PAGE_TOKEN_FOR_TEST"\n', encoding="utf-8"
    )
    code, _, err = cli("serve", "--host", "0.0.0.0")
    assert code == 2 and "PAGE_TOKEN_FOR_TEST, which is not set" in err


@pytest.mark.parametrize("how", ["token", "password"])
def test_signing_in_with_the_configured_token_or_password(
    page_home, home, served, shared_browsers, monkeypatch, how
):
    secret = "a-long-enough-secret-42"
    line = (
        'token_env = "PAGE_TOKEN_FOR_TEST"'
        if how == "token"
        else f'password_hash = "{hash_password(secret)}"'
    )
    config = home / "autoretto.toml"
    config.write_text(config.read_text() + f"\n[serve]\n{line}\n", encoding="utf-8")
    server = served(env={"PAGE_TOKEN_FOR_TEST": secret} if how == "token" else None)
    page = shared_browsers.open()
    page.goto(f"{server.url}/login")
    page.fill("input[name=secret]", "not it")
    page.click("button:has-text('Sign in')")
    assert "That is not the token or the password" in page.inner_text("main")
    assert page.goto(f"{server.url}/").status == 401
    page.goto(f"{server.url}/login")
    page.fill("input[name=secret]", secret)
    page.click("button:has-text('Sign in')")
    page.wait_for_url(f"{server.url}/")
    assert "Needs a person" in page.inner_text("main")
    cookies = {c["name"]: c for c in page.context.cookies()}
    session = cookies["autoretto_session"]
    assert session["httpOnly"] and session["sameSite"] == "Strict"
    assert secret not in server.stop()


BEYOND_SQLITE = (2**63, 2**64, 10**30)  # SQLite's INTEGER ends at 2^63 - 1


def test_an_id_beyond_sqlite_is_no_such_page(page_home, home, cli, served):
    """Each route that names an episode or a post answers a number SQLite cannot hold as it
    answers an id that does not exist: 404, the page's own, and nothing changes."""
    server = served()
    session, csrf = owner(server)
    reviewer = requests.Session()
    reviewer.get(review_link(cli, server, 1), timeout=30)
    for number in BEYOND_SQLITE:
        pages = [f"/episodes/{number}", f"/episodes/{number}/media/landscape"]
        buttons = [f"/episodes/{number}/{b}" for b in ("approve", "hold", "post-now")]
        buttons += [f"/posts/{number}/{b}" for b in ("live", "not-live", "look")]
        for path in pages:
            answer = session.get(f"{server.url}{path}", timeout=30)
            assert answer.status_code == 404, (path, answer.status_code)
            assert "There is no such page" in answer.text
        for path in buttons:
            answer = session.post(
                f"{server.url}{path}", data={"csrf": csrf, "url": "https://x.example/1"},
                timeout=30, allow_redirects=False,
            )  # fmt: skip
            assert answer.status_code == 404, (path, answer.status_code)
        for path in ("", "/media/landscape", "/approve", "/hold"):
            method = reviewer.get if path in ("", "/media/landscape") else reviewer.post
            answer = method(f"{server.url}/review/{number}{path}", data={"csrf": "x"}, timeout=30)
            assert answer.status_code == 404, (path, answer.status_code)
    # The largest id SQLite holds is still an id: no such episode, said as such.
    answer = session.get(f"{server.url}/episodes/{2**63 - 1}", timeout=30)
    assert answer.status_code == 404 and f"No episode {2**63 - 1}" in answer.text
    nothing_changed(home, cli)


def test_a_new_link_key_counts_at_once_on_a_running_server(page_home, home, cli, served):
    """serve.key deleted or replaced while `serve` runs: the links (and the cookies) made with
    the old key stop working at the next request, and links made after work, without a
    restart."""
    import base64
    import os
    import secrets

    server = served()
    first = review_link(cli, server, 1)
    holder = requests.Session()
    assert holder.get(first, timeout=30).status_code == 200
    assert holder.get(f"{server.url}/review/1", timeout=30).status_code == 200  # its cookie

    (home / "serve.key").unlink()  # the README's way to void every link
    answer = requests.get(first, timeout=30)
    assert answer.status_code == 403 and "not valid" in answer.text
    assert holder.get(f"{server.url}/review/1", timeout=30).status_code == 403
    second = review_link(cli, server, 1)  # made after the deletion: works in this server
    assert requests.get(second, timeout=30).status_code == 200
    assert requests.get(first, timeout=30).status_code == 403

    # Replaced in place by another key (as a restore of an old home would): the same.
    replaced = home / "serve.key.new"
    replaced.write_text(base64.b64encode(secrets.token_bytes(32)).decode() + "\n")
    os.chmod(replaced, 0o600)
    os.replace(replaced, home / "serve.key")
    assert requests.get(second, timeout=30).status_code == 403
    third = review_link(cli, server, 1)
    assert requests.get(third, timeout=30).status_code == 200
    nothing_changed(home, cli)
