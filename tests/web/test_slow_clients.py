"""Slow clients against `autoretto serve` as a real process, on 127.0.0.1 only: sockets that
send part of a request and stop are let go, and hundreds of them cannot keep a normal request
out, even under a low file limit.

The waits here are bounds on being answered at all (a request that is never answered fails at
its bound), not measures of speed; each test takes a few seconds and closes every socket.
"""

from __future__ import annotations

import select
import socket
import time
from contextlib import ExitStack
from urllib.parse import urlsplit

import pytest
import requests

from tests.web.test_buttons import make_home

HALF_HEADERS = b"GET /login HTTP/1.1\r\nHost: {host}\r\nUser-Agent: slow"  # no end of headers


def open_sockets(stack: ExitStack, url: str, count: int, first_bytes: bytes) -> list[socket.socket]:
    parts = urlsplit(url)
    opened = []
    for _ in range(count):
        client = stack.enter_context(socket.create_connection((parts.hostname, parts.port), 5))
        client.sendall(first_bytes.replace(b"{host}", parts.netloc.encode()))
        opened.append(client)
    return opened


def closed_by_server(client: socket.socket) -> bool:
    """Has the server closed this socket (end of file or a reset waiting to be read)?"""
    readable, _, _ = select.select([client], [], [], 0)
    if not readable:
        return False
    try:
        return client.recv(4096) == b""
    except ConnectionError:
        return True


def wait_until_closed(
    sockets: list[socket.socket], *, within: float, but: int = 0
) -> list[socket.socket]:
    """The sockets the server still holds once it holds `but` or fewer, or after `within`
    seconds."""
    deadline = time.monotonic() + within
    left = list(sockets)
    while len(left) > but and time.monotonic() < deadline:
        left = [client for client in left if not closed_by_server(client)]
        time.sleep(0.05)
    return left


def test_a_normal_request_is_answered_while_300_slow_sockets_are_open(home, cli, clip, served):
    make_home(home, cli, clip)
    server = served(open_files=256)  # fewer files than there are slow sockets
    with ExitStack() as stack:
        slow = open_sockets(stack, server.url, 300, HALF_HEADERS)
        try:
            answer = requests.get(f"{server.url}/login", timeout=2)
        except requests.RequestException as error:
            pytest.fail(f"a normal request was not answered within 2 s: {error}")
        assert answer.status_code == 200 and "Sign in" in answer.text
        # The page keeps at most 100 connections open: the slowest were let go.
        still_open = wait_until_closed(slow, within=5, but=100)
        assert len(still_open) <= 100, len(still_open)
        # And it still answers the next one.
        assert requests.get(f"{server.url}/login", timeout=2).status_code == 200
    assert "Traceback" not in server.stop()


def test_a_client_that_never_sends_a_whole_request_is_let_go(home, cli, clip, served):
    make_home(home, cli, clip, extra='\n[serve]\nrequest_timeout = "1s"\n')
    server = served()
    body_promised = (
        b"POST /login HTTP/1.1\r\nHost: {host}\r\nContent-Type: "
        b"application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nsecret=abc"
    )
    with ExitStack() as stack:
        half_headers = open_sockets(stack, server.url, 3, HALF_HEADERS)
        half_body = open_sockets(stack, server.url, 3, body_promised)
        trickle = open_sockets(stack, server.url, 1, b"G")
        for letter in b"ET /login HTTP/1.1\r\n":  # a byte now and then does not keep it open
            if closed_by_server(trickle[0]):
                break
            trickle[0].sendall(bytes([letter]))
            time.sleep(0.15)
        left = wait_until_closed(half_headers + half_body + trickle, within=5)
        assert left == [], f"{len(left)} slow sockets still held"
        # A client that sends its request whole is answered as before, on a kept-alive
        # connection too.
        session = requests.Session()
        assert session.get(f"{server.url}/login", timeout=5).status_code == 200
        assert session.get(f"{server.url}/login", timeout=5).status_code == 200
    assert "Traceback" not in server.stop()
