"""A real S3 endpoint for the tests: moto's server (the `moto[server]` extra), in a process of
its own on 127.0.0.1, behind a TCP relay the tests can cut ("the bucket unreachable for a
while") and mend.

moto keeps its objects in memory, so the server lives for the test session and each test gets a
bucket of its own (`fresh_bucket`). The relay is what the hosts are pointed at (through
`AWS_ENDPOINT_URL_S3`, the way boto3 finds an endpoint): `cut()` closes its port and every
connection through it, so a host sees a refused connection as from a dead endpoint; `mend()`
listens again on the same port.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import subprocess
import sys
import threading
import time

INSTALL = "the bucket half of the tests needs moto's server: pip install -e '.[test]'"

#: what every host process is given to reach the bucket (moto accepts any key)
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "autoretto-test",
    "AWS_SECRET_ACCESS_KEY": "autoretto-test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Relay:
    """A TCP relay from a port of its own to `target`, that can be cut and mended."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = _free_port()
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self.mend()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def mend(self) -> None:
        with self._lock:
            if self._listener is not None:
                return
            listener = socket.socket()
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", self.port))
            listener.listen(64)
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            doomed, self._open = self._open, set()
        if listener is not None:
            listener.close()
        for connection in doomed:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    upstream.close()
                    return
                self._open.update((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._open.discard(source)
                self._open.discard(sink)


class S3Server:
    """moto's server in a process of its own, reached through a Relay."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.relay: Relay | None = None
        self._numbers = itertools.count(1)

    def start(self) -> None:
        try:
            import boto3  # noqa: F401
            import moto.server  # noqa: F401
        except ImportError:
            raise RuntimeError(INSTALL) from None
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **CREDENTIALS},
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto's server did not start; {INSTALL}") from None
                time.sleep(0.05)
        self.relay = Relay(("127.0.0.1", self.port))

    def stop(self) -> None:
        if self.relay is not None:
            self.relay.cut()
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()

    @property
    def environment(self) -> dict[str, str]:
        """What a host needs to reach the bucket, as boto3 reads it."""
        assert self.relay is not None
        return {**CREDENTIALS, "AWS_ENDPOINT_URL_S3": self.relay.url}

    def client(self):
        """A boto3 client of the test's own (straight to the server, not through the relay)."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=f"http://127.0.0.1:{self.port}",
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            region_name=CREDENTIALS["AWS_DEFAULT_REGION"],
        )

    def fresh_bucket(self) -> str:
        """A new empty bucket; its name."""
        name = f"autoretto-test-{next(self._numbers)}"
        self.client().create_bucket(Bucket=name)
        return name

    def objects(self, bucket: str, prefix: str = "") -> dict[str, bytes]:
        """Every object under `prefix`, by key (the test's own look at the bucket)."""
        client = self.client()
        found: dict[str, bytes] = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents") or []:
                found[item["Key"]] = client.get_object(Bucket=bucket, Key=item["Key"])[
                    "Body"
                ].read()
        return found
