"""Who may come in, and how a request proves it: the page's door.

- the owner, with a session cookie (HttpOnly, SameSite=Strict, random, kept in this process)
  obtained by the sign-in token `autoretto serve` printed, the `[serve] token_env` token or the
  `[serve]` password;
- the holder of a review link (links.py), with a cookie scoped to that episode's path that
  lets them watch it and approve or hold it, nothing else.

`Guard` (ASGI middleware) answers only at the page's own Host and adds the security headers to
every response; `checked_form` refuses a POST whose CSRF token is not the visitor's or whose
Origin is another site.
"""

from __future__ import annotations

import hmac
import logging
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from .. import clock
from .links import parse_until, review_refusal, sign
from .settings import ServeSettings, check_password

log = logging.getLogger("autoretto.web")

SESSION_COOKIE = "autoretto_session"
REVIEW_COOKIE = "autoretto_review"
LOGIN_COOKIE = "autoretto_login"
SESSION_LIFETIME = timedelta(days=7)
SESSION_SECONDS = int(SESSION_LIFETIME.total_seconds())
# Nothing inline, nothing from elsewhere: a title that smuggled markup past the escaping still
# could not run a script or load anything.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "media-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


class Refused(Exception):
    """A request this visitor may not make: answered with `status` and one plain sentence."""

    def __init__(self, status: int, message: str, *, sign_in: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.sign_in = sign_in


@dataclass(frozen=True)
class Visitor:
    kind: str  # owner | review
    key: str  # the session id, or the review cookie's value
    csrf: str
    episode_id: int | None = None  # review: the one episode
    until: datetime | None = None  # review: when the link stops working


@dataclass
class Session:
    csrf: str
    expires_at: datetime


@dataclass
class Door:
    """Signing in, sessions, review cookies and CSRF tokens."""

    settings: ServeSettings
    link_key: Callable[[], bytes]  # the key as serve.key is now (links.LinkKey)
    login_token: str
    fixed_token: str | None
    sessions: dict[str, Session] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def sign_in(self, secret: str) -> str | None:
        """A new session id for the right token or password, else None."""
        tokens = [t for t in (self.login_token, self.fixed_token) if t]
        good = any(hmac.compare_digest(secret.encode(), t.encode()) for t in tokens)
        if not good and self.settings.password_hash:
            good = check_password(secret, self.settings.password_hash)
        if not good:
            return None
        session_id = secrets.token_urlsafe(32)
        now = clock.now()
        with self.lock:
            for stale in [k for k, s in self.sessions.items() if s.expires_at <= now]:
                del self.sessions[stale]
            self.sessions[session_id] = Session(secrets.token_urlsafe(24), now + SESSION_LIFETIME)
        return session_id

    def sign_out(self, session_id: str) -> None:
        with self.lock:
            self.sessions.pop(session_id, None)

    def owner(self, request: Request) -> Visitor | None:
        session_id = request.cookies.get(SESSION_COOKIE, "")
        with self.lock:
            session = self.sessions.get(session_id)
        if session is None or session.expires_at <= clock.now():
            return None
        return Visitor("owner", session_id, session.csrf)

    def need_owner(self, request: Request) -> Visitor:
        visitor = self.owner(request)
        if visitor is None:
            raise Refused(
                401,
                "Sign in first: open the address `autoretto serve` printed, or give the "
                "token or password.",
                sign_in=True,
            )
        return visitor

    def reviewer(self, episode_id: int, value: str) -> Visitor:
        """The review visitor of cookie `value` (`episode.until.signature`) for `episode_id`."""
        number, _, rest = value.partition(".")
        until, _, signature = rest.partition(".")
        if number != str(episode_id):
            raise Refused(403, "This review link is for another episode.")
        key = self.link_key()
        refusal = review_refusal(key, episode_id, until, signature, clock.now())
        if refusal is not None:
            raise Refused(403, refusal[0].upper() + refusal[1:] + ".")
        return Visitor(
            "review",
            value,
            sign(key, "csrf", value),
            episode_id=episode_id,
            until=parse_until(until),
        )

    def need_reviewer(self, request: Request, episode_id: int) -> Visitor:
        value = request.cookies.get(REVIEW_COOKIE)
        if not value:
            raise Refused(401, "Open the review link you were given; this page needs it.")
        return self.reviewer(episode_id, value)


@dataclass
class Flashes:
    """One-time messages for the page a visitor lands on after pressing a button."""

    waiting: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, visitor: Visitor, level: str, text: str) -> None:
        with self.lock:
            self.waiting.setdefault(visitor.key, []).append((level, text))

    def take(self, visitor: Visitor | None) -> list[tuple[str, str]]:
        if visitor is None:
            return []
        with self.lock:
            return self.waiting.pop(visitor.key, [])


class Guard:
    """ASGI middleware: the Host check, the security headers, and a log line per request
    (method, path without its query, status)."""

    def __init__(self, app: Any, allowed_hosts: set[str] | None) -> None:
        self.app = app
        self.allowed_hosts = allowed_hosts

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        host = headers.get(b"host", b"").decode("latin-1").lower()
        if self.allowed_hosts is not None and host not in self.allowed_hosts:
            # Another name pointed at 127.0.0.1 (DNS rebinding) is not this page.
            await _plain(send, 421, "This page answers only at its own address.")
            log.info("%s %s 421 (host %r)", scope["method"], scope["path"], host)
            return
        status = [0]

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)
        log.info("%s %s %s", scope["method"], scope["path"], status[0])


async def _plain(send: Any, status: int, text: str) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), *SECURITY_HEADERS],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def checked_form(request: Request, visitor: Visitor) -> Any:
    """The POSTed form, once its CSRF token and Origin are this visitor's."""
    origin = request.headers.get("origin")
    if origin and origin != "null":
        from urllib.parse import urlsplit

        if urlsplit(origin).netloc.lower() != request.headers.get("host", "").lower():
            raise Refused(403, "This button was pressed on another site's page.")
    form = await request.form()
    given = str(form.get("csrf") or "")
    if not hmac.compare_digest(given.encode(), visitor.csrf.encode()):
        raise Refused(
            403, "This form is out of date (its CSRF token does not match): reload the page."
        )
    return form


def keep(
    response: Response, request: Request, name: str, value: str, *, seconds: int, path: str
) -> Response:
    """Set one of the page's cookies: HttpOnly, SameSite=Strict, Secure behind https."""
    response.set_cookie(
        name,
        value,
        max_age=max(1, seconds),
        path=path,
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )
    return response
