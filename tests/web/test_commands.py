"""`autoretto review`, the `[serve]` table, `serve`'s refusals, and what `status` does not load."""

from __future__ import annotations

import json
import socket
import stat
import subprocess
import sys
import time
from datetime import timedelta

import pytest

from autoretto.clock import parse_instant
from autoretto.web.links import review_refusal, signing_key, until_text
from autoretto.web.settings import check_password, hash_password
from tests.conftest import TEST_NOW
from tests.web.test_buttons import make_home

WEB_STACK = ("starlette", "uvicorn", "jinja2", "multipart", "python_multipart", "anyio")


def test_review_prints_a_signed_link_that_ends(home, cli, clip):
    make_home(home, cli, clip)
    found = cli.json("review", "1", "--for", "2h")
    assert found["until"] == "2026-11-29T14:00:00Z"
    assert found["url"].startswith("http://127.0.0.1:8780/review/1?until=20261129T140000Z&sig=")
    code, out, _ = cli("review", "1")
    assert code == 0 and "works until 2026-12-02T12:00:00Z for episode 1 (lofi 0)" in out
    key = home / "serve.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    # The [serve] url and review_for set where links point and how long they work.
    config = home / "autoretto.toml"
    config.write_text(
        config.read_text() + '\n[serve]\nurl = "https://studio.example.net/"\nreview_for = "1d"\n'
    )
    found = cli.json("review", "1")
    assert found["url"].startswith("https://studio.example.net/review/1?until=20261130T120000Z")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("review", "9"), "no episode 9"),
        (("review", "1", "--for", "soon"), '--for: "soon" is not a duration'),
    ],
)
def test_review_refuses_bad_input_in_one_line(home, cli, clip, args, message):
    make_home(home, cli, clip)
    code, out, err = cli(*args)
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_link_is_refused_when_altered_and_after_it_ends(home):
    home.mkdir()
    key = signing_key(home)
    assert signing_key(home) == key  # made once, kept
    now = parse_instant(TEST_NOW)
    until = until_text(now + timedelta(hours=1))
    from autoretto.web.links import sign

    signature = sign(key, "review", 1, until)
    assert review_refusal(key, 1, until, signature, now) is None
    assert "not valid" in review_refusal(key, 2, until, signature, now)
    assert "not valid" in review_refusal(
        key, 1, until_text(now + timedelta(days=9)), signature, now
    )
    assert "not valid" in review_refusal(b"x" * 32, 1, until, signature, now)
    assert "expired" in review_refusal(key, 1, until, signature, now + timedelta(hours=1))


def test_a_password_hash_checks_only_its_password():
    stored = hash_password("correct horse battery")
    assert stored.startswith("scrypt$16384$8$1$")
    assert check_password("correct horse battery", stored)
    assert not check_password("correct horse batterY", stored)
    assert hash_password("correct horse battery") != stored  # a fresh salt each time


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('password = "hunter2-secret"', "serve.password: unknown key"),
        ('password_hash = "hunter2-secret"', "serve.password_hash: not a password hash"),
        ('token_env = "hunter2-secret"', "serve.token_env: not an environment variable name"),
        ('url = "studio.example.net"', "serve.url: must be an http(s) address"),
        ('review_for = "forever"', "serve.review_for: "),
        ('request_timeout = "0s"', "serve.request_timeout: "),
        ('request_timeout = "1d"', "serve.request_timeout: "),
    ],
)
def test_a_wrong_serve_table_is_one_line(home, cli, clip, table, message):
    make_home(home, cli, clip)
    config = home / "autoretto.toml"
    config.write_text(config.read_text() + f"\n[serve]\n{table}\n", encoding="utf-8")
    code, _, err = cli("config", "check")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert "hunter2" not in err  # a secret put in the wrong place is not repeated


def test_serve_says_when_its_port_is_taken(home, cli, clip):
    make_home(home, cli, clip)
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        code, _, err = cli("serve", "--port", str(taken.getsockname()[1]))
    finally:
        taken.close()
    assert code == 2 and "cannot listen there" in err and "--port" in err
    assert not (home / "serve.login").exists()


@pytest.mark.parametrize("command", [("status",), ("run-due", "--no-make"), ("review", "1")])
def test_status_run_due_and_review_do_not_load_the_web_stack(home, cli, clip, command):
    make_home(home, cli, clip)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "autoretto", *command],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines()}
    assert "autoretto" in imported  # the import log is read
    assert not imported & set(WEB_STACK), imported & set(WEB_STACK)


def test_the_review_link_json_is_stable(home, cli, clip):
    make_home(home, cli, clip)
    code, out, _ = cli("review", "1", "--json")
    assert code == 0 and set(json.loads(out)) == {"episode_id", "url", "until"}


def test_review_warns_when_its_link_points_at_this_machine_only(home, cli, clip):
    """Issue 27, friction 5: a collaborator cannot open http://127.0.0.1:8780/…; `review`
    says so, and `[serve] public_url` makes the link point where they can."""
    make_home(home, cli, clip)
    code, out, err = cli("review", "1")
    assert code == 0 and out.startswith("http://127.0.0.1:8780/review/1?")
    assert "warning: this link points at http://127.0.0.1:8780, this machine only" in err
    assert "[serve] public_url" in err and len(err.strip().splitlines()) == 1
    code, out, err = cli("review", "1", "--json")  # the JSON alone on stdout, the warning aside
    assert code == 0 and json.loads(out)["url"].startswith("http://127.0.0.1:8780/")
    assert "this machine only" in err

    config = home / "autoretto.toml"
    before = config.read_text()
    config.write_text(before + '\n[serve]\npublic_url = "https://studio.example.net"\n')
    code, out, err = cli("review", "1")
    assert code == 0 and out.startswith("https://studio.example.net/review/1?until=")
    assert err == ""
    config.write_text(before + '\n[serve]\npublic_url = "http://localhost:8780"\n')
    assert "this machine only" in cli("review", "1")[2]
    # `url`, its older name, still works; two different addresses are one clear line.
    config.write_text(
        before + '\n[serve]\nurl = "https://a.example.net"\npublic_url = "https://b.example.net"\n'
    )
    code, _, err = cli("config", "check")
    assert code == 2 and "serve.public_url: and url name two addresses" in err


def test_serve_prints_the_ssh_line_on_a_box_without_a_screen(home, cli, clip, served):
    """Issue 27, friction 5: on a headless server the page is at 127.0.0.1 only; `serve` says
    how to reach it from one's own computer, in `connect`'s words."""
    make_home(home, cli, clip)
    server = served(env={"DISPLAY": "", "WAYLAND_DISPLAY": "", "SSH_CONNECTION": ""})
    port = server.url.rsplit(":", 1)[1]
    written = all_it_said(server)
    assert "On your own computer, open a terminal and run (keep it open):" in written
    (line,) = [text for text in written.splitlines() if "ssh -L" in text]
    assert line.strip().startswith(f"ssh -L {port}:localhost:{port} ") and "@" in line
    assert f"then open http://127.0.0.1:{port}/" in written
    # At a desktop (a display, no ssh) the browser is right here: no tunnel to explain.
    server = served(env={"DISPLAY": ":0", "SSH_CONNECTION": ""})
    assert "ssh -L" not in all_it_said(server)


def all_it_said(server) -> str:
    """What `serve` wrote before it began answering (its last line names the sign-in address),
    once it stopped."""
    deadline = time.monotonic() + 60
    while "sign-in address" not in server.log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    return server.stop()


def test_config_check_names_every_wrong_key_of_the_serve_table(home, cli, clip):
    make_home(home, cli, clip)
    config = home / "autoretto.toml"
    config.write_text(
        config.read_text()
        + '\n[serve]\npublic_url = "studio.example.net"\nreview_for = "forever"\ncolour = 1\n'
    )
    code, _, err = cli("config", "check")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 3, err
    for field in ("serve.public_url: must be an http(s) address", "serve.review_for: ",
                  "serve.colour: unknown key"):  # fmt: skip
        assert any(field in line for line in lines), err
