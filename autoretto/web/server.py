"""How `autoretto serve` meets slow clients and many of them: uvicorn's h11 protocol, with a
deadline on each request and a cap on the open connections.

uvicorn alone holds a connection that sent part of a request for ever: its only read timeout is
the keep-alive one, set when a response is complete and cancelled by every byte that arrives,
and its `limit_concurrency` answers 503 only once a request's headers are in
(uvicorn/protocols/http/h11_impl.py, `data_received`, `handle_events`, `on_response_complete`:
https://github.com/Kludex/uvicorn/blob/main/uvicorn/protocols/http/h11_impl.py). Sockets that
each send half their headers (slowloris) then use up the process's file descriptors, and a
normal request waits behind them. So, here:

- a request must arrive whole, headers and body, within `request_timeout` of the connection
  opening or of the previous answer on it, else the connection is closed; the time the page
  takes to answer and to send a video does not count;
- at most `max_connections` are open (well under the file limit); one more closes the
  connection that has waited longest for its request, or, when every one is being answered, is
  closed itself. A slow sender can thus never keep a normal request out.

Imported by `serve` only (it loads uvicorn and h11).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("autoretto.web")

MAX_CONNECTIONS = 100  # a creator and a few collaborators' browsers (6 each) fit many times
# How many connections the kernel keeps waiting to be accepted, and so how many asyncio may
# accept at once before any of them is looked at: its accept loop runs `backlog` times
# (asyncio/selector_events.py, BaseSelectorEventLoop._accept_connection:
# https://github.com/python/cpython/blob/3.11/Lib/asyncio/selector_events.py). When such a
# burst meets the file limit, asyncio logs a traceback per refused accept and stops accepting
# for a second.
BACKLOG = 128
# Files the process keeps open besides its connections: SQLite, the log, Python's own.
OTHER_FILES = 64
REPORT_EVERY = 60.0  # seconds between two log lines about closed connections
# h11's states of the other side while its request is not all in: before the end of the
# headers (IDLE), then before the end of the body (SEND_BODY).
# https://h11.readthedocs.io/en/latest/api.html#the-state-machine
RECEIVING = (h11.IDLE, h11.SEND_BODY)


def sized_for_files() -> tuple[int, int]:
    """(the cap on open connections, the backlog) that fit the file limit (`ulimit -n`).

    A connection the cap closes gives its file back only at the event loop's next turn, so the
    open connections, the ones just closed and a whole accepted burst must all fit under the
    limit, beside the other files: a third of the room each.
    """
    try:
        import resource
    except ImportError:  # not a Unix: no file limit to read
        return MAX_CONNECTIONS, BACKLOG
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS, BACKLOG
    third = max(4, (soft - OTHER_FILES) // 3)
    return min(MAX_CONNECTIONS, third), min(BACKLOG, third)


def guarded_protocol(*, request_timeout: float, max_connections: int) -> type[H11Protocol]:
    """uvicorn's h11 protocol with this deadline and this cap (uvicorn.Config's `http`)."""
    return type(
        "GuardedH11Protocol",
        (GuardedH11Protocol,),
        {
            "request_timeout": request_timeout,
            "max_connections": max_connections,
            "closed": _Closed(),
        },
    )


class _Closed:
    """Connections closed for being slow or one too many, reported at most once a minute."""

    def __init__(self) -> None:
        self.slow = 0
        self.crowded = 0
        self.reported_at: float | None = None

    def count(self, loop: asyncio.AbstractEventLoop, *, slow: bool) -> None:
        if slow:
            self.slow += 1
        else:
            self.crowded += 1
        now = loop.time()
        if self.reported_at is None or now - self.reported_at >= REPORT_EVERY:
            log.warning(
                "closed %d connection(s) that sent no whole request in time and %d beyond the "
                "cap of open connections",
                self.slow,
                self.crowded,
            )
            self.slow = self.crowded = 0
            self.reported_at = now


class GuardedH11Protocol(H11Protocol):
    request_timeout: float = 10.0
    max_connections: int = MAX_CONNECTIONS
    closed: _Closed = _Closed()

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        self._deadline: asyncio.TimerHandle | None = None
        self.waiting_since: float | None = None
        open_now = sum(1 for other in self.connections if not other.transport.is_closing())
        crowded = open_now >= self.max_connections
        # Made in full even when refused: uvicorn's connection_lost expects its transport.
        super().connection_made(transport)
        if crowded and not self._make_room():
            self.closed.count(self.loop, slow=False)
            transport.close()
            return
        self._watch()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_watching()
        super().connection_lost(exc)

    def _watch(self) -> None:
        """Start the deadline when a request is awaited, stop it once the request is in."""
        if self.transport.is_closing() or self.conn.their_state not in RECEIVING:
            self._stop_watching()
        elif self._deadline is None:
            self.waiting_since = self.loop.time()
            self._deadline = self.loop.call_later(self.request_timeout, self._too_slow)

    def _stop_watching(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = None
        self.waiting_since = None

    def _too_slow(self) -> None:
        self._deadline = None
        if not self.transport.is_closing() and self.conn.their_state in RECEIVING:
            self.closed.count(self.loop, slow=True)
            self.transport.close()

    def _make_room(self) -> bool:
        """Close the connection that has waited longest for its request; False when none
        waits (every open connection is being answered)."""
        waiting = [
            other
            for other in self.connections
            if other is not self
            and isinstance(other, GuardedH11Protocol)
            and other.waiting_since is not None
            and not other.transport.is_closing()
        ]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda other: other.waiting_since or 0.0)
        oldest._stop_watching()
        oldest.closed.count(self.loop, slow=False)
        oldest.transport.close()
        return True
