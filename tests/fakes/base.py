"""The shared base of every fake server: HTTP plumbing, recording, and one fault vocabulary.

A fake platform (or provider) is a `FakeServer` subclass that writes only its protocol: it
routes each `Call` to the operation it is (`call.begin("create")`), does the work the platform
does, and answers in the platform's own words. The base owns the rest, the same for every fake:

- the server on 127.0.0.1 (a free port; TLS with a test certificate when given), started by
  `with Fake() as fake:` or `start()`, stopped by `close()`;
- recording: every call is kept in `requests` as a `Seen` (item and attribute access) by its
  operation, never with a secret: a fact named like a token, a secret, a password or a code is
  written `<secret>`, and headers are not kept at all;
- the scripted-behaviour queue, one per operation (`script["create"]`, a deque of words; the
  words of the `"*"` queue apply to any operation whose own queue is empty), and the vocabulary
  every fake understands, as methods and as the words they queue (`fail_next("*", 503)` scripts
  the next API call whatever it is; sign-in calls take only their own queue):

      fake.fail_next("create", 503)                # "status:503"   HTTP 503, nothing done
      fake.fail_next("create", 503, retry_after=7) # "status:503:7" ... with Retry-After: 7
      fake.rate_limit("create", retry_after=3600)  # "status:429:3600"
      fake.drop_after("create")                    # "drop"   the work done, the answer lost
      fake.script["create"].append("stored:500")   # the work done, then HTTP 500
      fake.hold("create")                          # "hold"   the work done, then wait for
                                                   #          `release()` (kill the client now)
      fake.refuse_next("create")                   # "refuse" the platform refuses the content
      fake.revoke()                                # every token and refresh refused from now
      "garbled"                                    # the work done, the answer's body cut short
      "hangup"                                     # hang up before doing anything

  A fake answers `status:N` and `refuse` in its platform's envelope (`failure`, `refusal`),
  and keeps its platform's own words beside these (a Graph error code, a half upload...);
  anything it does not know is `ok`: do the work and answer;
- `visible_copies()`: how many posts a person would see on the other side (what the never-twice
  checks count), `settings()` (the `[platforms.NAME]` lines that point Autoretto here, without
  waits) and `account()` (what `autoretto connect NAME` would seal for this fake's account).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import ssl
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterable
from datetime import UTC, date, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

#: what a scripted behaviour is when nothing is queued: do the work and answer
OK = "ok"
_SECRET_NAMES = {
    "authorization",
    "code",
    "code_verifier",
    "password",
    "secret",
    "token",
    "assertion",
}


def is_secret(name: str) -> bool:
    """Is a fact of this name a credential (never recorded)?"""
    key = name.lower().replace("-", "_")
    return key in _SECRET_NAMES or key.endswith(("_token", "_secret", "_password", "jwt"))


def redact(value: Any) -> Any:
    """`value` with every credential in it (a text under a secret's name) replaced by
    `<secret>`, in dicts and lists at any depth."""
    if isinstance(value, dict):
        return {
            k: "<secret>" if is_secret(str(k)) and isinstance(v, (str, bytes)) else redact(v)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return type(value)(redact(v) for v in value)
    return value


class Seen(dict):
    """One recorded call: `seen["kind"]` and `seen.kind` alike."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value


class Script(defaultdict):
    """operation -> the words of its next calls, oldest first.

    `script.append(word)` / `extend(words)` script the fake's `publish_operation` (the call
    that makes a copy), so `fake.script.append("drop")` reads as "lose the next publish's
    answer".
    """

    def __init__(self, default_operation: str | None = None) -> None:
        super().__init__(deque)
        self.default_operation = default_operation

    def _default(self) -> deque:
        if self.default_operation is None:
            raise TypeError("this fake has no publish operation: script an operation by name")
        return self[self.default_operation]

    def append(self, word: str) -> None:
        self._default().append(word)

    def extend(self, words: Iterable[str]) -> None:
        self._default().extend(words)

    def take(self, operation: str, *, shared: bool = True) -> str:
        """The word of the next call to `operation`: its own queue first, then (for an API
        call, `shared`) the "*" queue."""
        for queue in (self.get(operation), self.get("*") if shared else None):
            if queue:
                return queue.popleft()
        return OK


class Call:
    """One request as the fake handles it: what came in, and the ways to answer."""

    def __init__(self, fake: FakeServer, handler: BaseHTTPRequestHandler) -> None:
        self.fake = fake
        self.handler = handler
        self.method = handler.command
        parts = urlsplit(handler.path)
        self.path = parts.path
        self.raw_query = parts.query
        self.lists = parse_qs(parts.query)
        self.query = {key: values[0] for key, values in self.lists.items()}
        self.headers = handler.headers
        self.length = int(handler.headers.get("Content-Length") or 0)
        self._read = b""
        self._left = self.length
        self.operation: str | None = None
        self.sign_in = False
        self._behaviour: str | None = None
        self.closed = False

    # -- what came in -----------------------------------------------------------------------

    def read(self, size: int) -> bytes:
        """Read up to `size` more bytes of the body (for a fake that keeps part of it)."""
        size = max(0, min(size, self._left))
        data = self.handler.rfile.read(size) if size else b""
        self._left -= len(data)
        self._read += data
        return data

    @property
    def body(self) -> bytes:
        """The whole body (read on first use)."""
        if self._left:
            self.read(self._left)
        return self._read

    @property
    def content_type(self) -> str:
        return self.headers.get("Content-Type", "")

    @property
    def json(self) -> Any:
        """The body as JSON when it is JSON, else None."""
        body = self.body
        if body and self.content_type.startswith("application/json"):
            return json.loads(body)
        return None

    @property
    def form(self) -> dict[str, str]:
        """The body as an urlencoded form (first values)."""
        return {k: v[0] for k, v in parse_qs(self.body.decode("utf-8", "replace")).items()}

    @property
    def bearer(self) -> str:
        """The bearer token of the Authorization header ("" when there is none)."""
        return (self.headers.get("Authorization") or "").removeprefix("Bearer ")

    # -- the script --------------------------------------------------------------------------

    def begin(self, operation: str, *, sign_in: bool = False, **facts: Any) -> Seen:
        """This call is `operation`: record it (with `facts`); returns the record. A sign-in
        call (a token exchange or refresh, a consent page) takes only its own queue's words:
        `"*"` scripts the API."""
        self.operation, self.sign_in = operation, sign_in
        return self.fake.record(operation, **facts)

    @property
    def behaviour(self) -> str:
        """The call's scripted word, taken from its operation's queue when first asked for
        (a call refused earlier, say for its token, leaves the word to the next call)."""
        if self._behaviour is None:
            operation, shared = self.operation, not self.sign_in
            self._behaviour = self.fake.script.take(operation, shared=shared) if operation else OK
        return self._behaviour

    @behaviour.setter
    def behaviour(self, word: str) -> None:
        self._behaviour = word

    def refused(self) -> bool:
        """Apply the shared words that answer without doing the work (`status:N[:S]`,
        `hangup`, `refuse`); True when the call is answered."""
        word = self.behaviour
        if word.startswith("status:"):
            _, status, *wait = word.split(":")
            self.fake.answer_failure(self, int(status), int(wait[0]) if wait else None)
            return True
        if word == "hangup":
            self.hang_up()
            return True
        if word == "refuse":
            self.fake.refusal(self)
            return True
        return False

    # -- answers -----------------------------------------------------------------------------

    def answer(
        self,
        status: int,
        body: Any = None,
        headers: dict[str, str] | None = None,
        **options: Any,
    ) -> None:
        """The answer to work that was done, as scripted: `drop` hangs up instead (the answer
        is lost), `stored:N` answers HTTP N instead (the work kept, the failure said: a
        server that stored the post, then failed), `garbled` sends its first half only (a
        proxy cut it: not JSON any more), `hold` waits for `release()` first."""
        if self.behaviour.startswith("stored:"):
            self.fake.answer_failure(self, int(self.behaviour.split(":")[1]))
            return
        if self.behaviour == "drop":
            self.hang_up()
            return
        if self.behaviour == "garbled" and body is not None:
            text = json.dumps(body).encode()
            self.send(status, headers=headers, raw=text[: len(text) // 2], **options)
            return
        if self.behaviour == "hold":
            self.fake.wait_for_release()
        self.send(status, body, headers, **options)

    def send(
        self,
        status: int,
        body: Any = None,
        headers: dict[str, str] | None = None,
        *,
        content_type: str = "application/json",
        raw: bytes | None = None,
    ) -> None:
        """Answer now: `body` as JSON (None: an empty body), or `raw` bytes as they are."""
        if self.closed:
            return
        data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        handler = self.handler
        with contextlib.suppress(OSError):  # the client may be gone (killed while held)
            handler.send_response(status)
            for key, value in (headers or {}).items():
                handler.send_header(key, value)
            if raw is not None or body is not None:
                handler.send_header("Content-Type", content_type)
            if "Transfer-Encoding" not in (headers or {}):
                handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            if handler.command != "HEAD":
                handler.wfile.write(data)
            handler.wfile.flush()

    def hang_up(self) -> None:
        """Close the connection without an answer."""
        self.closed = True
        self.handler.close_connection = True
        with contextlib.suppress(OSError):
            self.handler.connection.shutdown(socket.SHUT_RDWR)

    def finish(self) -> None:
        """After the fake answered: a body it did not read is drained (the connection is
        kept alive), unless it hung up."""
        if self._left and not self.closed:
            with contextlib.suppress(OSError):
                self.read(self._left)


#: how often a fake's serving loop looks whether it is shut down: the default half second
#: made every fake's end cost that much
SHUTDOWN_POLL = 0.02


class FakeServer:
    """Base of every fake server (see the module's docstring)."""

    #: how people call the service, for messages
    title: ClassVar[str] = "fake"
    #: the call that makes a copy on the other side (`script.append` scripts it)
    publish_operation: ClassVar[str | None] = None
    #: how often the server loop looks at its shutdown flag, in seconds
    poll_interval: ClassVar[float] = SHUTDOWN_POLL

    def __init__(self, *, tls: Any = None) -> None:
        self.requests: list[Seen] = []
        self.script = Script(self.publish_operation)
        self.revoked = False
        self.lock = threading.RLock()
        self.holding = threading.Event()  # a call is being held (see `hold`)
        self.held = threading.Event()  # set by `release()`: held calls answer
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self.server.daemon_threads = True
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(Path(tls.cert), Path(tls.key))
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.scheme = "https" if tls is not None else "http"
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"{self.scheme}://{host}:{port}"

    def start(self) -> FakeServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self.server.serve_forever,
                kwargs={"poll_interval": self.poll_interval},
                daemon=True,
            )
            self._thread.start()
        return self

    def close(self) -> None:
        self.held.set()  # nothing stays held once the test is over
        if self._thread is not None:
            self.server.shutdown()
        self.server.server_close()

    def go_down(self) -> None:
        """The endpoint is down: nothing listens on its port (a connection is refused)."""
        self.close()
        self._thread = None

    def come_back(self) -> None:
        """The endpoint is up again, on the same address."""
        assert self.scheme == "http", "come_back is for plain HTTP fakes"
        host, port = self.server.server_address[:2]
        self.server = ThreadingHTTPServer((host, port), self._handler_class())
        self.server.daemon_threads = True
        self.start()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the fault vocabulary -----------------------------------------------------------------

    def fail_next(
        self, operation: str, status: int, *, retry_after: int | None = None, times: int = 1
    ) -> None:
        """The next `times` calls to `operation` answer HTTP `status` (in the platform's
        envelope), doing nothing; with `retry_after`, a Retry-After header of that many
        seconds."""
        word = f"status:{status}" + (f":{retry_after}" if retry_after is not None else "")
        self.script[operation].extend([word] * times)

    def rate_limit(self, operation: str, *, retry_after: int, times: int = 1) -> None:
        """The next `times` calls to `operation` are rate limited: 429 with Retry-After."""
        self.fail_next(operation, 429, retry_after=retry_after, times=times)

    def drop_after(self, operation: str, *, times: int = 1) -> None:
        """The next `times` calls to `operation` do their work, then the connection is cut:
        the request was sent, its answer is lost."""
        self.script[operation].extend(["drop"] * times)

    def hold(self, operation: str) -> None:
        """The next call to `operation` does its work, then waits for `release()` before it
        answers (`holding` is set meanwhile: the moment to kill the client)."""
        self.held.clear()
        self.holding.clear()
        self.script[operation].append("hold")

    def refuse_next(self, operation: str) -> None:
        """The next call to `operation` is refused for its content, in the platform's words."""
        self.script[operation].append("refuse")

    def revoke(self) -> None:
        """The grant is revoked: every token is refused, and so is every refresh."""
        self.revoked = True

    def release(self) -> None:
        self.held.set()

    def wait_for_release(self, timeout: float = 60) -> None:
        self.holding.set()
        self.held.wait(timeout=timeout)

    # -- recording -----------------------------------------------------------------------------

    def record(self, kind: str, **facts: Any) -> Seen:
        seen = Seen(kind=kind, **redact(facts))
        with self.lock:
            self.requests.append(seen)
        return seen

    def count(self, kind: str) -> int:
        with self.lock:
            return sum(1 for seen in self.requests if seen["kind"] == kind)

    def kinds(self) -> list[str]:
        with self.lock:
            return [seen["kind"] for seen in self.requests]

    def of_kind(self, kind: str) -> list[Seen]:
        with self.lock:
            return [seen for seen in self.requests if seen["kind"] == kind]

    # -- what a fake writes --------------------------------------------------------------------

    def route(self, call: Call) -> None:
        """Handle one call (a subclass's protocol)."""
        call.send(404, {"error": f"no {call.method} {call.path}"})

    def failure(self, call: Call, status: int) -> Any:
        """The platform's error body for a scripted `status:N` (a subclass's envelope)."""
        return {"error": {"code": status, "message": "scripted trouble"}}

    def failure_headers(self, call: Call, status: int, retry_after: int | None) -> dict:
        """The headers of a scripted failure: Retry-After when one was scripted."""
        return {"Retry-After": str(retry_after)} if retry_after is not None else {}

    def answer_failure(self, call: Call, status: int, retry_after: int | None = None) -> None:
        call.send(
            status, self.failure(call, status), self.failure_headers(call, status, retry_after)
        )

    def refusal(self, call: Call) -> None:
        """Refuse the call's content as the platform does (a subclass's words)."""
        call.send(400, {"error": {"code": 400, "message": "the content is refused"}})

    def visible_copies(self) -> int:
        """How many posts a person sees on the other side."""
        raise NotImplementedError

    def settings(self) -> str:
        """The `[platforms.NAME]` lines that point Autoretto at this fake, without waits."""
        raise NotImplementedError

    def account(self) -> dict[str, Any]:
        """What `autoretto connect NAME` seals for this fake's account: `account_id`, `name`,
        `tokens`, `meta` (the keywords of `accounts.save_account`)."""
        raise NotImplementedError

    # -- plumbing ------------------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                return

            def handle_one_request(self) -> None:
                # The client may be killed at any moment (the crash tests): not an error here.
                with contextlib.suppress(ConnectionResetError, BrokenPipeError, ssl.SSLError):
                    super().handle_one_request()

            def serve(self) -> None:
                call = Call(fake, self)
                try:
                    fake.route(call)
                finally:
                    call.finish()

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = serve

        return Handler


def clock() -> float:
    """The fake's clock as a Unix time: the test's clock (AUTORETTO_NOW), so what a fake says
    about time (a token's expiry, a rate limit's reset) means the same to the client on any
    real date."""
    moment = os.environ.get("AUTORETTO_NOW")
    if moment:
        return datetime.fromisoformat(moment.replace("Z", "+00:00")).timestamp()
    return time.time()


def today() -> date:
    """The fake's day (UTC) by its clock: the test's clock."""
    return datetime.fromtimestamp(clock(), UTC).date()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
