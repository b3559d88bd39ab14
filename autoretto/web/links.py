"""Review links: `autoretto review EPISODE` prints one, the page checks it.

A link is `<url>/review/<episode>?until=<UTC instant>&sig=<HMAC-SHA256>`. The signature covers
the episode and the instant it stops working, with a key kept in the home (`serve.key`, mode
0600, made on first use), so a link cannot be stretched to another episode or a later time, and
one made by `autoretto review` works in a server started before it. Whether it has expired is
judged by the server's clock (`autoretto.clock.now()`). Deleting `serve.key` voids every link,
and replacing it voids those made with the old key: a running server notices the change at its
next request (`LinkKey`), and a link made with the new key works there at once.

Standard library only: `autoretto review` must not load the web stack.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import threading
from datetime import UTC, datetime
from pathlib import Path

from ..errors import AutorettoError

KEY_NAME = "serve.key"
_UNTIL_FORMAT = "%Y%m%dT%H%M%SZ"
_KEY_BYTES = 32


def signing_key(home: Path) -> bytes:
    """The home's link-signing key, created (0600, atomically) the first time it is asked for."""
    path = home / KEY_NAME
    try:
        return _decode(path.read_bytes(), path)
    except FileNotFoundError:
        pass
    except OSError as error:
        raise AutorettoError(f"{path}: cannot read the link key ({error.strerror})") from None
    key = secrets.token_bytes(_KEY_BYTES)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as writer:
            writer.write(base64.b64encode(key) + b"\n")
            writer.flush()
            os.fsync(writer.fileno())
        try:
            os.link(partial, path)  # never replaces a key another process made meanwhile
        except FileExistsError:
            return _decode(path.read_bytes(), path)
    finally:
        partial.unlink(missing_ok=True)
    return key


class LinkKey:
    """The home's link key as the file is now, for a server that runs for weeks.

    Read again whenever the file is another one or was written since (device, inode, size,
    modification and change times differ): one stat per review request, no read. A deleted key
    is made anew on the next request, as `autoretto review` would make it, so the old links
    stop working and the new ones work in both.
    """

    def __init__(self, home: Path) -> None:
        self.home = home
        self.path = home / KEY_NAME
        self._seen: tuple[int, ...] | None = None
        self._key = b""
        self._lock = threading.Lock()

    def _stamp(self) -> tuple[int, ...] | None:
        try:
            facts = os.stat(self.path)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise AutorettoError(
                f"{self.path}: cannot read the link key ({error.strerror})"
            ) from None
        return (facts.st_dev, facts.st_ino, facts.st_size, facts.st_mtime_ns, facts.st_ctime_ns)

    def __call__(self) -> bytes:
        with self._lock:
            before = self._stamp()
            if before is not None and before == self._seen:
                return self._key
            key = signing_key(self.home)
            # Kept only when the file did not change while it was read; else read next time.
            if self._stamp() == before:
                self._seen, self._key = before, key
            return key


def _decode(data: bytes, path: Path) -> bytes:
    try:
        key = base64.b64decode(data.strip(), validate=True)
    except ValueError:
        key = b""
    if len(key) != _KEY_BYTES:
        raise AutorettoError(
            f"{path}: the link key is damaged; delete it (every review link stops working) "
            "and make new links with `autoretto review`"
        )
    return key


def until_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(_UNTIL_FORMAT)


def parse_until(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, _UNTIL_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def sign(key: bytes, purpose: str, *parts: object) -> str:
    """An HMAC-SHA256 of `purpose` and `parts`, URL-safe base64 without padding."""
    message = "|".join([purpose, *(str(part) for part in parts)]).encode("utf-8")
    digest = hmac.new(key, message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def review_path(key: bytes, episode_id: int, until: datetime) -> str:
    """The path and query of the review link for `episode_id`, working until `until`."""
    text = until_text(until)
    return f"/review/{episode_id}?until={text}&sig={sign(key, 'review', episode_id, text)}"


def review_refusal(
    key: bytes, episode_id: int, until: str, signature: str, now: datetime
) -> str | None:
    """Why this link does not open `episode_id` now, or None when it does.

    A signature that does not match is refused before the time is looked at, so an altered
    expiry reads as a forged link, not an expired one.
    """
    expected = sign(key, "review", episode_id, until)
    if not hmac.compare_digest(expected.encode(), signature.encode()):
        return "this review link is not valid (it was altered, or it is for another episode)"
    ends = parse_until(until)
    if ends is None:
        return "this review link is not valid (it was altered, or it is for another episode)"
    if now >= ends:
        return (
            f"this review link expired at {ends:%Y-%m-%d %H:%M} UTC; ask for a new one "
            "(`autoretto review EPISODE`)"
        )
    return None
