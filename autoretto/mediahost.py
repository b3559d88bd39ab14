"""The media host: a short-lived public link to one video, for platforms that fetch by URL.

Instagram and Threads do not take the bytes of a video: they are given a URL and fetch the file
themselves. The media host makes that URL for the length of one attempt and no longer:

    host = open_media_host(settings, home)
    with host.publish(video) as url:
        ... create the container with `url`, wait until the platform has processed it ...
    # here the link is dead, whatever happened inside

Two kinds (`[media_host] kind = ...`):

- `self`: this very process serves the one file over HTTP on `bind` (e.g. 127.0.0.1:8787) behind
  the creator's public base URL (`public_url`: their reverse proxy or tunnel). The path is
  unguessable and signed with HMAC-SHA256 (a key kept in `<home>/media-host.key`, mode 0600), it
  carries its expiry (`expires_minutes`), and it answers 404 once the platform has fetched the
  whole file (`max_fetches` times, default once) and when the attempt ends. A wrong signature
  or an expired link answers 403; any other path 404. GET, HEAD and single byte ranges (what
  platform fetchers use) are served; nothing else.
- `s3`: any S3-compatible bucket through boto3 (an optional extra: `pip install
  'autoretto[s3]'`), by way of autoretto.bucket. The file is uploaded under a random key, the
  platform gets a presigned GET URL valid for `expires_minutes` (default 10), and the object is
  deleted when the attempt ends.

Either kind: when the video is already in the media bucket (`[media] url`, several hosts), the
platform gets a presigned link to that very object (`stored_link`), not a fresh copy.

Neither kind ever logs the link: it is a bearer secret for as long as it lives.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import mimetypes
import os
import re
import secrets
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from .clock import now
from .errors import AutorettoError, ConfigError, ConfigProblems

if TYPE_CHECKING:
    from .bucket import Bucket

log = logging.getLogger("autoretto.mediahost")

KINDS = ("self", "s3")
SELF_KEYS = {"kind", "bind", "public_url", "expires_minutes", "secret_file", "max_fetches"}
S3_KEYS = {
    "kind",
    "bucket",
    "prefix",
    "endpoint_url",
    "region",
    "access_key_env",
    "secret_key_env",
    "expires_minutes",
}
DEFAULT_EXPIRES = {"self": 30, "s3": 10}
SECRET_FILE = "media-host.key"
S3_EXTRA_HINT = "pip install 'autoretto[s3]'"
#: a link may live at most this long, whatever the config says
LONGEST_MINUTES = 24 * 60
_CHUNK = 64 * 1024
_TIMEOUT_SECONDS = 60
_EXPIRY = re.compile(r"[0-9]{1,12}")


class MediaHostError(AutorettoError):
    """The link could not be made. `passing`: it may work on a later try (a busy port, a bucket
    that did not answer); otherwise a person must fix the setup."""

    def __init__(self, message: str, *, passing: bool = True) -> None:
        super().__init__(message)
        self.passing = passing


@dataclass(frozen=True)
class MediaHostSettings:
    """The parsed `[media_host]` table. Holds no secret (S3 keys come from the environment)."""

    kind: str
    expires_minutes: int
    bind: str = "127.0.0.1:8787"
    public_url: str = ""
    secret_file: str = SECRET_FILE
    max_fetches: int = 1
    bucket: str = ""
    prefix: str = "autoretto/"
    endpoint_url: str = ""
    region: str = ""
    access_key_env: str = ""
    secret_key_env: str = ""

    @property
    def ttl(self) -> timedelta:
        return timedelta(minutes=self.expires_minutes)


def parse_media_host(raw: Any, *, path: Any, prefix: str = "media_host") -> MediaHostSettings:
    """Validate a `[media_host]` table. Raises ConfigError naming `media_host.<key>`
    (ConfigProblems naming each wrong key when there are several)."""
    found: list[ConfigError] = []

    def fail(key: str, message: str) -> None:
        """Keep the problem: each wrong key is named once, by its first problem."""
        field = f"{prefix}.{key}"
        if all(error.field != field for error in found):
            found.append(ConfigError(path, message, field=field))

    if not isinstance(raw, dict):
        raise ConfigError(path, "must be a table", field=prefix)
    kind = raw.get("kind")
    if kind not in KINDS:  # the other keys depend on it: nothing more to check
        raise ConfigError(
            path,
            'must be "self" (this box serves the file) or "s3" (a bucket)',
            field=f"{prefix}.kind",
        )
    allowed = SELF_KEYS if kind == "self" else S3_KEYS
    for key in raw:
        if key not in allowed:
            fail(key, f"unknown key for kind = {kind!r} (allowed: {', '.join(sorted(allowed))})")
    strings = {
        key: value
        for key, value in raw.items()
        if key in allowed and key not in ("expires_minutes", "max_fetches")
    }
    for key, value in strings.items():
        if not isinstance(value, str) or not value.isprintable():
            fail(key, "must be a string without control characters")
    expires = raw.get("expires_minutes", DEFAULT_EXPIRES[kind])
    if (
        not isinstance(expires, int)
        or isinstance(expires, bool)
        or not 1 <= expires <= LONGEST_MINUTES
    ):
        fail("expires_minutes", f"must be a whole number of minutes from 1 to {LONGEST_MINUTES}")
    # the checks of the kind's own keys see a wrong key as left out (its default)
    named = {error.field for error in found}
    kept = {key: value for key, value in raw.items() if f"{prefix}.{key}" not in named}
    parse = _parse_self if kind == "self" else _parse_s3
    settings = parse(kept, expires, fail)
    if found:
        raise ConfigProblems(found) if len(found) > 1 else found[0]
    return settings


def _parse_self(
    raw: dict[str, Any],
    expires: int,
    fail: Callable[[str, str], None],
) -> MediaHostSettings:
    bind = raw.get("bind", MediaHostSettings.bind)
    try:
        _split_bind(bind)
    except ValueError as error:
        fail("bind", str(error))
    public_url = raw.get("public_url", "")
    parts = urlsplit(public_url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        fail(
            "public_url",
            'give the public base address that reaches `bind`, e.g. "https://media.example.com" '
            "(your reverse proxy or tunnel)",
        )
    max_fetches = raw.get("max_fetches", 1)
    if not isinstance(max_fetches, int) or isinstance(max_fetches, bool) or max_fetches < 1:
        fail("max_fetches", "must be a whole number, 1 or more")
    secret_file = raw.get("secret_file", SECRET_FILE)
    if not secret_file:
        fail("secret_file", "give the path of the signing key file")
    return MediaHostSettings(
        kind="self",
        expires_minutes=expires,
        bind=bind,
        public_url=public_url.rstrip("/"),
        secret_file=secret_file,
        max_fetches=max_fetches,
    )


def _parse_s3(
    raw: dict[str, Any],
    expires: int,
    fail: Callable[[str, str], None],
) -> MediaHostSettings:
    bucket = raw.get("bucket", "")
    if not re.fullmatch(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]", bucket):
        fail("bucket", "give the bucket's name (3-63 lowercase letters, digits, dots, dashes)")
    endpoint = raw.get("endpoint_url", "")
    if endpoint and urlsplit(endpoint).scheme not in ("http", "https"):
        fail("endpoint_url", "must be an http(s) address, or left out for AWS itself")
    if bool(raw.get("access_key_env")) != bool(raw.get("secret_key_env")):
        fail(
            "secret_key_env" if raw.get("access_key_env") else "access_key_env",
            "name both environment variables (access_key_env and secret_key_env), or neither "
            "to use boto3's own credentials",
        )
    return MediaHostSettings(
        kind="s3",
        expires_minutes=expires,
        bucket=bucket,
        prefix=raw.get("prefix", MediaHostSettings.prefix),
        endpoint_url=endpoint,
        region=raw.get("region", ""),
        access_key_env=raw.get("access_key_env", ""),
        secret_key_env=raw.get("secret_key_env", ""),
    )


def _split_bind(bind: Any) -> tuple[str, int]:
    if not isinstance(bind, str) or ":" not in bind:
        raise ValueError('write it as "ADDRESS:PORT", e.g. "127.0.0.1:8787"')
    host, _, port_text = bind.rpartition(":")
    host = host.strip("[]")
    if not host or not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ValueError('write it as "ADDRESS:PORT" with a port from 1 to 65535')
    return host, int(port_text)


class MediaHost(Protocol):
    def publish(self, path: Path, ttl: timedelta | None = None) -> Any:
        """A context manager giving the URL of `path`, dead when it exits."""


def open_media_host(
    settings: MediaHostSettings, home: Path, *, clock: Callable[[], datetime] = now
) -> MediaHost:
    if settings.kind == "self":
        return SelfMediaHost(settings, home, clock=clock)
    return S3MediaHost(settings)


# -- self -------------------------------------------------------------------------------------


def signing_key(path: Path) -> bytes:
    """The HMAC key in `path`, made (32 random bytes, mode 0600) when there is none yet."""
    try:
        text = path.read_text(encoding="ascii")
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        key = secrets.token_bytes(32)
        partial = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "w", encoding="ascii") as writer:
                writer.write(base64.b64encode(key).decode("ascii") + "\n")
            try:
                os.link(partial, path)  # never replace a key another process just made
            except FileExistsError:
                return signing_key(path)
        finally:
            partial.unlink(missing_ok=True)
        return key
    except (OSError, UnicodeDecodeError) as error:
        raise MediaHostError(
            f"{path}: cannot read the media host's signing key ({type(error).__name__})",
            passing=False,
        ) from None
    if path.stat().st_mode & 0o077:
        raise MediaHostError(f"{path} is readable by others; chmod 600 it", passing=False)
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except ValueError:
        key = b""
    if len(key) < 32:
        raise MediaHostError(
            f"{path}: the media host's signing key is damaged; delete the file and a new one "
            "is made",
            passing=False,
        )
    return key


@dataclass
class Fetch:
    """One request the self host answered (for logs and tests; never the path)."""

    method: str
    status: int
    sent: int  # bytes of the file sent in full
    client: str


@dataclass
class _Served:
    path: Path
    size: int
    token: str
    name: str
    expires_at: datetime
    content_type: str
    covered: list[tuple[int, int]] = field(default_factory=list)  # merged [start, end) sent
    full_fetches: int = 0
    gone: bool = False


class SelfMediaHost:
    """Serves one file at a time from this process, at a signed, expiring path."""

    def __init__(
        self, settings: MediaHostSettings, home: Path, *, clock: Callable[[], datetime] = now
    ) -> None:
        self.settings = settings
        self.home = home
        self.clock = clock
        self.fetches: list[Fetch] = []
        self._served: _Served | None = None
        self._lock = threading.Lock()

    def _key(self) -> bytes:
        path = Path(self.settings.secret_file).expanduser()
        return signing_key(path if path.is_absolute() else self.home / path)

    def sign(self, key: bytes, expires: int, token: str, name: str) -> str:
        message = f"{expires}/{token}/{name}".encode()
        return hmac.new(key, message, hashlib.sha256).hexdigest()

    @contextmanager
    def publish(self, path: Path, ttl: timedelta | None = None) -> Iterator[str]:
        """Serve `path` until the block ends; yields its public URL."""
        from http.server import ThreadingHTTPServer

        key = self._key()
        ttl = min(ttl or self.settings.ttl, timedelta(minutes=LONGEST_MINUTES))
        size = Path(path).stat().st_size
        expires_at = self.clock() + ttl
        expires = int(expires_at.timestamp())
        token = secrets.token_urlsafe(24)
        name = "video" + (Path(path).suffix.lower() if Path(path).suffix else ".mp4")
        served = _Served(
            path=Path(path),
            size=size,
            token=token,
            name=name,
            expires_at=expires_at,
            content_type=mimetypes.guess_type(name)[0] or "application/octet-stream",
        )
        host, port = _split_bind(self.settings.bind)
        try:
            server = _quiet_server(ThreadingHTTPServer)((host, port), _handler(self, key))
        except OSError as error:
            raise MediaHostError(
                f"the media host cannot listen on {self.settings.bind} "
                f"({error.strerror or type(error).__name__}); is another Autoretto run posting?"
            ) from None
        server.daemon_threads = True
        with self._lock:
            self._served = served
        thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        thread.start()
        signature = self.sign(key, expires, token, name)
        url = f"{self.settings.public_url}/m/{expires}/{token}/{signature}/{name}"
        log.info("media host: serving %s (%d bytes) until %s", Path(path).name, size, expires_at)
        try:
            yield url
        finally:
            with self._lock:
                served.gone = True
                self._served = None
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)
            log.info("media host: link to %s torn down", Path(path).name)

    # -- what the handler asks ----------------------------------------------------------------

    def _check(self, key: bytes, request_path: str) -> tuple[int, _Served | None]:
        """(status, file): 200 with the file, or 400/403/404 without."""
        parts = request_path.split("?", 1)[0].split("/")
        if len(parts) != 6 or parts[0] != "" or parts[1] != "m":
            return 404, None
        if not _EXPIRY.fullmatch(parts[2]):  # not 1-12 ASCII digits ("²", "٣", 5,000 digits)
            return 400, None
        _, _, expires_text, token, signature, name = parts
        good = self.sign(key, int(expires_text), token, name)
        if not hmac.compare_digest(good, signature):
            return 403, None
        if int(expires_text) <= int(self.clock().timestamp()):
            return 403, None
        with self._lock:
            served = self._served
            if served is None or served.gone or served.token != token or served.name != name:
                return 404, None
            if self.clock() >= served.expires_at:
                return 403, None
        return 200, served

    def _record(self, fetch: Fetch) -> None:
        with self._lock:
            self.fetches.append(fetch)

    def _sent(self, served: _Served, start: int, end: int) -> None:
        """Bytes [start, end) went out in full: once all of the file has gone out,
        `max_fetches` times, the link is dead."""
        with self._lock:
            served.covered = _merge([*served.covered, (start, end)])
            if served.covered == [(0, served.size)]:
                served.full_fetches += 1
                served.covered = []
                if served.full_fetches >= self.settings.max_fetches:
                    served.gone = True
                    log.info("media host: %s fetched in full; link torn down", served.path.name)


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def byte_range(header: str | None, size: int) -> tuple[int, int] | str | None:
    """The [start, end) of a single `Range: bytes=...` header; None for the whole file (no
    header, or one this host does not split, like several ranges); "unsatisfiable"."""
    if not header:
        return None
    found = re.fullmatch(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*", header)
    if not found or (not found[1] and not found[2]):
        return None
    if not found[1]:
        suffix = int(found[2])
        if suffix == 0 or size == 0:
            return "unsatisfiable"
        return max(0, size - suffix), size
    start = int(found[1])
    end = min(int(found[2]) + 1, size) if found[2] else size
    if start >= size or start >= end:
        return "unsatisfiable"
    return start, end


def _handler(host: SelfMediaHost, key: bytes) -> type:
    from http.server import BaseHTTPRequestHandler

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # A request line too garbled to carry a version is answered with a status line and
        # headers (http.server would answer it the HTTP/0.9 way: a bare body).
        default_request_version = "HTTP/1.0"
        server_version = "autoretto-media"
        sys_version = ""
        timeout = _TIMEOUT_SECONDS

        def log_message(self, format: str, *args: Any) -> None:
            return  # the request line holds the signed path: never logged

        def log_error(self, format: str, *args: Any) -> None:
            # What http.server refuses itself (a garbled request line, a bad version, headers
            # too long): one line, without the request (it may hold a signed path).
            code = args[0] if args and isinstance(args[0], int) else "?"
            log.warning(
                "media host: refused a malformed request from %s (%s)", self.client_address[0], code
            )

        def do_GET(self) -> None:
            self._serve(body=True)

        def do_HEAD(self) -> None:
            self._serve(body=False)

        def _simple(self, status: int, text: bytes = b"") -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(text)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(text)

        def _serve(self, *, body: bool) -> None:
            client = self.client_address[0]
            if self.path == "/robots.txt":
                # Meta's fetchers honour robots.txt; the links are secret anyway.
                self._simple(200, b"User-agent: *\nAllow: /\n")
                return
            status, served = host._check(key, self.path)
            if served is None:
                host._record(Fetch(self.command, status, 0, client))
                if status == 400:
                    log.warning("media host: refused a malformed request from %s (400)", client)
                self._simple(status, _REFUSALS[status])
                return
            wanted = byte_range(self.headers.get("Range"), served.size)
            if wanted == "unsatisfiable":
                host._record(Fetch(self.command, 416, 0, client))
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{served.size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            start, end = wanted if isinstance(wanted, tuple) else (0, served.size)
            status = 206 if isinstance(wanted, tuple) else 200
            self.send_response(status)
            self.send_header("Content-Type", served.content_type)
            self.send_header("Content-Length", str(end - start))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Cache-Control", "no-store")
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{end - 1}/{served.size}")
            self.end_headers()
            if not body:
                host._record(Fetch("HEAD", status, 0, client))
                return
            try:
                with open(served.path, "rb") as source:
                    source.seek(start)
                    left = end - start
                    while left > 0:
                        chunk = source.read(min(_CHUNK, left))
                        if not chunk:
                            break
                        self.wfile.write(chunk)
                        left -= len(chunk)
                self.wfile.flush()
            except OSError:  # the fetcher hung up, or the file went away
                self.close_connection = True
                host._record(Fetch("GET", status, 0, client))
                return
            host._record(Fetch("GET", status, end - start - left, client))
            if left == 0:
                host._sent(served, start, end)

    return Handler


_REFUSALS = {400: b"bad request\n", 403: b"forbidden\n", 404: b"not found\n"}


def _quiet_server(server_class: type) -> type:
    """`server_class` whose errors inside a request (a fetcher that hangs up, anything else) are
    one log line, never a traceback on stderr."""

    class QuietServer(server_class):  # type: ignore[misc, valid-type]
        def handle_error(self, request: Any, client_address: Any) -> None:
            error = sys.exc_info()[1]
            log.warning(
                "media host: a request from %s failed (%s)",
                client_address[0] if client_address else "?",
                type(error).__name__,
            )

    return QuietServer


# -- s3 ---------------------------------------------------------------------------------------


class S3MediaHost:
    """Uploads the file to a bucket for the length of the attempt; hands out a presigned URL.
    The bucket is reached through autoretto.bucket (its one face over boto3), with the
    `[media_host]` table's endpoint, region and keys when it names them."""

    def __init__(self, settings: MediaHostSettings) -> None:
        self.settings = settings

    def _bucket(self) -> Bucket:
        from .bucket import Bucket, BucketPlace

        options: dict[str, str] = {}
        if self.settings.endpoint_url:
            options["endpoint_url"] = self.settings.endpoint_url
        if self.settings.region:
            options["region_name"] = self.settings.region
        if self.settings.access_key_env:
            access = os.environ.get(self.settings.access_key_env)
            secret = os.environ.get(self.settings.secret_key_env)
            if not access or not secret:
                raise MediaHostError(
                    f"the s3 media host's keys are not set: export ${self.settings.access_key_env}"
                    f" and ${self.settings.secret_key_env} for the cron job",
                    passing=False,
                )
            options["aws_access_key_id"] = access
            options["aws_secret_access_key"] = secret
        prefix = self.settings.prefix.strip("/")
        place = BucketPlace(self.settings.bucket, f"{prefix}/" if prefix else "")
        return Bucket(place, options=options)

    @contextmanager
    def publish(self, path: Path, ttl: timedelta | None = None) -> Iterator[str]:
        bucket = self._bucket()
        seconds = _seconds(ttl or self.settings.ttl)
        name = f"{secrets.token_urlsafe(24)}/video" + (Path(path).suffix.lower() or ".mp4")
        content_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
        with _as_media_host_error():
            bucket.put_file(name, Path(path), content_type=content_type)
        try:
            with _as_media_host_error():
                url = bucket.signed_url(name, seconds)
            log.info(
                "media host: %s uploaded to bucket %s for %d s",
                Path(path).name,
                bucket.place.bucket,
                seconds,
            )
            yield url
        finally:
            from .bucket import BucketError

            try:
                bucket.delete([name])
                log.info(
                    "media host: %s deleted from bucket %s", Path(path).name, bucket.place.bucket
                )
            except BucketError as error:  # the presigned link still dies at its expiry
                log.warning("media host: %s; its link expires in %d s", error, seconds)


def _seconds(ttl: timedelta) -> int:
    return int(min(ttl, timedelta(minutes=LONGEST_MINUTES)).total_seconds())


@contextmanager
def _as_media_host_error() -> Iterator[None]:
    from .bucket import BucketError

    try:
        yield
    except BucketError as error:
        raise MediaHostError(f"the s3 media host: {error}", passing=error.passing) from None


@contextmanager
def stored_link(url: str, ttl: timedelta) -> Iterator[str]:
    """A presigned link to `url` (`s3://bucket/key`: an episode's own object in the media
    bucket, `[media] url`) for `ttl`, whatever the media host's kind: the platform fetches that
    object, no copy is uploaded, and nothing is deleted when the attempt ends (the link dies at
    its expiry; the object is the episode's until retention removes it)."""
    from .bucket import SCHEME, Bucket, BucketPlace

    bucket_name, _, key = url[len(SCHEME) :].partition("/")
    with _as_media_host_error():
        link = Bucket(BucketPlace(bucket_name, "")).signed_url(key, _seconds(ttl))
    log.info("media host: a link to %s for %d s", Path(key).name, _seconds(ttl))
    yield link
