"""The page of `autoretto serve`: a Starlette app, Jinja2 templates, no front-end build.

Who may come in:
- the owner, with a session cookie (HttpOnly, SameSite=Strict, random, kept in this process)
  obtained by the sign-in token `autoretto serve` printed, the `[serve] token_env` token or the
  `[serve]` password;
- the holder of a review link (links.py), with a cookie scoped to that episode's path that
  lets them watch it and approve or hold it, nothing else.

Every button is a form POST carrying a CSRF token bound to the session (and a POST whose Origin
is another site is refused too); every page works without JavaScript, and /static/live.js only
refreshes the parts marked `data-live`. Each response carries a strict Content-Security-Policy
(scripts, styles and media from this server only: nothing inline), and Jinja2 escapes every
title and text. Paths are logged without their query, so no token or signature reaches a log.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.convertors import Convertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from .. import clock
from ..cli_support import LARGEST_ID
from ..config import load_config
from ..errors import AutorettoError, JournalDamaged, NotFound
from ..platforms import FIELDS
from ..report import STATES
from . import actions
from .jobs import PostNowJobs
from .links import LinkKey, parse_until, review_refusal, sign
from .settings import ServeSettings, check_password

if TYPE_CHECKING:
    from ..config import Config
log = logging.getLogger("autoretto.web")

SESSION_COOKIE = "autoretto_session"
REVIEW_COOKIE = "autoretto_review"
LOGIN_COOKIE = "autoretto_login"
SESSION_LIFETIME = timedelta(days=7)
SESSION_SECONDS = int(SESSION_LIFETIME.total_seconds())
CALENDAR_DAYS = 7
STATIC = Path(__file__).parent / "static"
STATIC_FILES = {"web.css": "text/css", "live.js": "text/javascript", "icon.svg": "image/svg+xml"}
MEDIA_NAMES = ("landscape", "vertical", "reels", "thumbnail")
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


class IdConvertor(Convertor[int]):
    """`{name:id}` in a route: a row id, 1 to 2^63 - 1 (SQLite's INTEGER), else no such page.

    A larger number would reach SQLite and fail there (OverflowError, a 500) on every route
    that names a row; refused here once, it is the same 404 as an id that does not exist.
    """

    regex = "[0-9]+"

    def convert(self, value: str) -> int:
        number = int(value)
        if not 1 <= number <= LARGEST_ID:
            # Raised while the router matches, inside Starlette's ExceptionMiddleware, so the
            # page's own 404 handler answers it.
            raise HTTPException(404)
        return number

    def to_string(self, value: int) -> str:
        return str(int(value))


register_url_convertor("id", IdConvertor())


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


def _when(value: Any, pattern: str = "%a %d %b %Y, %H:%M") -> str:
    if value is None:
        return ""
    moment = clock.parse_instant(value) if isinstance(value, str) else value
    return moment.strftime(pattern)


def create_app(
    config: Config,
    *,
    login_token: str,
    allowed_hosts: set[str] | None = None,
) -> Starlette:
    """The page for `config`'s home. `login_token` is the sign-in token `serve` printed;
    `allowed_hosts` the Host headers answered (None: any, for a page behind a tunnel)."""
    settings = ServeSettings.of(config)
    link_key = LinkKey(config.paths.home)
    link_key()  # a damaged key stops `serve` at start, in one line
    door = Door(settings, link_key, login_token, settings.fixed_token())
    flashes = Flashes()

    def current() -> Config:
        """The config as it is now: an edit (a channel, its approval) counts from the next
        request, as it does for the next command. Only who may sign in is read at start."""
        return load_config(config.paths, platforms=FIELDS)

    jobs = PostNowJobs(current, actions.post_episode_now, actions.episode_posts)
    templates = Environment(
        loader=PackageLoader("autoretto.web", "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    templates.filters["when"] = _when

    def render(
        request: Request,
        name: str,
        visitor: Visitor | None,
        *,
        status: int = 200,
        **context: Any,
    ) -> HTMLResponse:
        text = templates.get_template(name).render(
            now=clock.now(),
            visitor=visitor,
            flashes=flashes.take(visitor),
            **context,
        )
        response = HTMLResponse(text, status_code=status)
        response.headers["cache-control"] = "no-store"
        return response

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

    async def read(work: Any, *args: Any, **kwargs: Any) -> Any:
        """Run `work(config, ...)` on a thread (SQLite and files block)."""
        return await run_in_threadpool(lambda: work(current(), *args, **kwargs))

    async def do(visitor: Visitor, work: Any, *args: Any, **kwargs: Any) -> Any:
        """`read` for a button: a person's mistake becomes the page's message."""
        try:
            return await read(work, *args, **kwargs)
        except AutorettoError as error:
            flashes.add(visitor, "error", str(error))
            return None

    # -- pages ---------------------------------------------------------------------------

    async def home(request: Request) -> Response:
        visitor = door.need_owner(request)
        data = await read(actions.overview, days=CALENDAR_DAYS)
        report = data["report"]
        todays = {
            view.name: report.now.astimezone(ZoneInfo(view.timezone)).date()
            for view in report.channels
        }
        running = jobs.pending()
        return render(
            request,
            "home.html",
            visitor,
            title="Calendar",
            here="home",
            report=report,
            todays=todays,
            states=STATES,
            episodes=data["episodes"][:60],
            jobs=running,
            pending=bool(running),
        )

    async def trouble(request: Request) -> Response:
        visitor = door.need_owner(request)
        data = await read(actions.trouble)
        return render(request, "trouble.html", visitor, title="Needs you", here="trouble", **data)

    async def limits(request: Request) -> Response:
        visitor = door.need_owner(request)
        data = await read(actions.limits)
        return render(request, "limits.html", visitor, title="Limits", here="limits", **data)

    async def episode_view(request: Request, visitor: Visitor, episode_id: int) -> HTMLResponse:
        data = await read(actions.episode_page, episode_id)
        own_jobs = jobs.for_episode(episode_id) if visitor.kind == "owner" else []
        sending = any(p["state"] == "sending" for p in data["posts"])
        return render(
            request,
            "episode.html",
            visitor,
            title=data["episode"]["title"] or f"Episode {episode_id}",
            review=visitor.kind == "review",
            jobs=own_jobs[:5],
            pending=sending or any(job.pending for job in own_jobs),
            **data,
        )

    async def episode(request: Request) -> Response:
        visitor = door.need_owner(request)
        return await episode_view(request, visitor, request.path_params["episode_id"])

    async def review(request: Request) -> Response:
        episode_id = request.path_params["episode_id"]
        query = request.query_params
        if "sig" in query or "until" in query:
            value = f"{episode_id}.{query.get('until', '')}.{query.get('sig', '')}"
            visitor = door.reviewer(episode_id, value)
            response = await episode_view(request, visitor, episode_id)
            assert visitor.until is not None
            left = int((visitor.until - clock.now()).total_seconds())
            return keep(response, request, REVIEW_COOKIE, value, seconds=left,
                        path=f"/review/{episode_id}")  # fmt: skip
        visitor = door.need_reviewer(request, episode_id)
        return await episode_view(request, visitor, episode_id)

    async def media(request: Request, visitor: Visitor) -> Response:
        episode_id, name = request.path_params["episode_id"], request.path_params["name"]
        if name not in MEDIA_NAMES:
            raise HTTPException(404)
        # The path comes from the episode's row, never from the request.
        found = await read(actions.media_file, episode_id, name)
        if not found or not Path(found).is_file():
            raise HTTPException(404)
        response = FileResponse(found)
        response.headers["cache-control"] = "private, no-store"
        return response

    async def owner_media(request: Request) -> Response:
        return await media(request, door.need_owner(request))

    async def review_media(request: Request) -> Response:
        return await media(request, door.need_reviewer(request, request.path_params["episode_id"]))

    # -- buttons -------------------------------------------------------------------------

    async def set_approval(request: Request, visitor: Visitor, approved: bool) -> Response:
        await checked_form(request, visitor)
        episode_id = request.path_params["episode_id"]
        done = await do(visitor, actions.approve, episode_id, approved=approved)
        if done is not None:
            flashes.add(visitor, "ok", f"Episode {episode_id} is {done['state']}.")
        base = "/review" if visitor.kind == "review" else "/episodes"
        return RedirectResponse(f"{base}/{episode_id}", status_code=303)

    async def owner_approve(request: Request) -> Response:
        return await set_approval(request, door.need_owner(request), True)

    async def owner_hold(request: Request) -> Response:
        return await set_approval(request, door.need_owner(request), False)

    async def review_approve(request: Request) -> Response:
        visitor = door.need_reviewer(request, request.path_params["episode_id"])
        return await set_approval(request, visitor, True)

    async def review_hold(request: Request) -> Response:
        visitor = door.need_reviewer(request, request.path_params["episode_id"])
        return await set_approval(request, visitor, False)

    async def post_now(request: Request) -> Response:
        visitor = door.need_owner(request)
        await checked_form(request, visitor)
        episode_id = request.path_params["episode_id"]
        job = await run_in_threadpool(jobs.start, episode_id)
        if job.error:
            flashes.add(visitor, "error", job.message)
        elif job.moment is not None:
            flashes.add(
                visitor,
                "ok",
                f"Episode {episode_id} goes out at {job.moment:%H:%M:%S} UTC "
                "(a human pace, not on the second).",
            )
        return RedirectResponse(f"/episodes/{episode_id}", status_code=303)

    async def post_live(request: Request) -> Response:
        visitor = door.need_owner(request)
        form = await checked_form(request, visitor)
        post_id = request.path_params["post_id"]
        done = await do(visitor, actions.confirm_live, post_id, str(form.get("url") or ""))
        if done is not None:
            flashes.add(visitor, "ok", f"Post {post_id} ({done['platform']}) is {done['state']}.")
        return RedirectResponse("/trouble", status_code=303)

    async def post_not_live(request: Request) -> Response:
        visitor = door.need_owner(request)
        await checked_form(request, visitor)
        post_id = request.path_params["post_id"]
        done = await do(visitor, actions.confirm_not_live, post_id)
        if done is not None:
            flashes.add(
                visitor,
                "ok",
                f"Post {post_id} ({done['platform']}) is {done['state']}: it goes out again "
                "on a later slot.",
            )
        return RedirectResponse("/trouble", status_code=303)

    async def post_look(request: Request) -> Response:
        visitor = door.need_owner(request)
        await checked_form(request, visitor)
        post_id = request.path_params["post_id"]
        result = await do(visitor, actions.look, post_id)
        if result is not None:
            level = "ok" if result.outcome == "posted" else "error"
            flashes.add(visitor, level, f"Post {post_id}: {result.outcome} – {result.reason}")
        return RedirectResponse("/trouble", status_code=303)

    async def resume(request: Request) -> Response:
        visitor = door.need_owner(request)
        await checked_form(request, visitor)
        report = await do(visitor, actions.resume_checked)
        if report is not None:
            flashes.add(
                visitor,
                "ok",
                f"Wrote {report['written_back']} journal entries back; posting resumes."
                if report["written_back"]
                else "Posting was not held; nothing to resume.",
            )
        return RedirectResponse("/trouble", status_code=303)

    # -- signing in ----------------------------------------------------------------------

    def signed_in(request: Request, session_id: str) -> Response:
        # A page that moves on by itself rather than a redirect: a link opened from another
        # site (a chat, a mail) would not send a SameSite=Strict cookie along a redirect.
        response = HTMLResponse(templates.get_template("signed_in.html").render(target="/"))
        response.headers["cache-control"] = "no-store"
        return keep(response, request, SESSION_COOKIE, session_id, seconds=SESSION_SECONDS,
                    path="/")  # fmt: skip

    def login_form(request: Request, *, status: int = 200, message: str = "") -> Response:
        login_csrf = secrets.token_urlsafe(24)
        response = render(
            request,
            "login.html",
            None,
            status=status,
            title="Sign in",
            message=message,
            login_csrf=login_csrf,
            password=bool(settings.password_hash),
        )
        return keep(response, request, LOGIN_COOKIE, login_csrf, seconds=3600, path="/login")

    failed_sign_ins = asyncio.Lock()

    async def wrong_secret(request: Request, message: str) -> Response:
        async with failed_sign_ins:
            await asyncio.sleep(1)  # one wrong guess a second at most
        return login_form(request, status=401, message=message)

    async def login(request: Request) -> Response:
        token = request.query_params.get("token")
        if token is not None:
            session_id = door.sign_in(token)
            if session_id is None:
                return await wrong_secret(request, "That sign-in address is not valid (any more).")
            return signed_in(request, session_id)
        if door.owner(request) is not None:
            return RedirectResponse("/", status_code=303)
        return login_form(request)

    async def login_post(request: Request) -> Response:
        form = await request.form()
        expected = request.cookies.get(LOGIN_COOKIE, "")
        given = str(form.get("csrf") or "")
        if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
            return login_form(request, status=403, message="This form is out of date: try again.")
        session_id = door.sign_in(str(form.get("secret") or ""))
        if session_id is None:
            return await wrong_secret(request, "That is not the token or the password.")
        response = RedirectResponse("/", status_code=303)
        return keep(response, request, SESSION_COOKIE, session_id, seconds=SESSION_SECONDS,
                    path="/")  # fmt: skip

    async def logout(request: Request) -> Response:
        visitor = door.need_owner(request)
        await checked_form(request, visitor)
        door.sign_out(visitor.key)
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    # -- the rest ------------------------------------------------------------------------

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name == "report.css":
            from ..report import CSS

            return Response(CSS, media_type="text/css")
        if name not in STATIC_FILES:
            raise HTTPException(404)
        return FileResponse(STATIC / name, media_type=STATIC_FILES[name])

    async def refused(request: Request, error: Exception) -> Response:
        assert isinstance(error, Refused)
        heading = {401: "Sign in", 403: "Not allowed"}.get(error.status, "Refused")
        return render(
            request,
            "refused.html",
            None,
            status=error.status,
            title=heading,
            heading=heading,
            message=error.message,
            sign_in=error.sign_in,
        )

    async def not_found(request: Request, error: Exception) -> Response:
        message = str(error) if isinstance(error, NotFound) else "There is no such page."
        return render(
            request, "refused.html", None, status=404, title="Not found", heading="Not found",
            message=message[0].upper() + message[1:], sign_in=False,
        )  # fmt: skip

    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        if error.status_code == 404:
            return await not_found(request, error)
        return Response(status_code=error.status_code)

    async def gone(request: Request, error: Exception) -> Response:
        # The client went, or was let go for not sending its whole request in time
        # (server.py): nobody reads this answer, and it is no bug to log with a traceback.
        return Response(status_code=408)

    async def person_error(request: Request, error: Exception) -> Response:
        heading = "Cannot do that"
        return render(
            request, "refused.html", None, status=400, title=heading, heading=heading,
            message=str(error), sign_in=False,
        )  # fmt: skip

    async def journal_damaged(request: Request, error: Exception) -> Response:
        # Every page that shows the hold reads the journal: say what is wrong with it (the
        # file, the line, what to do) instead of failing the page.
        heading = "Posting is held"
        return render(
            request, "refused.html", None, status=503, title=heading, heading=heading,
            message=str(error), sign_in=False,
        )  # fmt: skip

    routes = [
        Route("/", home),
        Route("/trouble", trouble),
        Route("/limits", limits),
        Route("/episodes/{episode_id:id}", episode),
        Route("/episodes/{episode_id:id}/media/{name}", owner_media),
        Route("/episodes/{episode_id:id}/approve", owner_approve, methods=["POST"]),
        Route("/episodes/{episode_id:id}/hold", owner_hold, methods=["POST"]),
        Route("/episodes/{episode_id:id}/post-now", post_now, methods=["POST"]),
        Route("/posts/{post_id:id}/live", post_live, methods=["POST"]),
        Route("/posts/{post_id:id}/not-live", post_not_live, methods=["POST"]),
        Route("/posts/{post_id:id}/look", post_look, methods=["POST"]),
        Route("/resume", resume, methods=["POST"]),
        Route("/review/{episode_id:id}", review),
        Route("/review/{episode_id:id}/media/{name}", review_media),
        Route("/review/{episode_id:id}/approve", review_approve, methods=["POST"]),
        Route("/review/{episode_id:id}/hold", review_hold, methods=["POST"]),
        Route("/login", login),
        Route("/login", login_post, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/static/{name}", static),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={
            Refused: refused,
            NotFound: not_found,
            JournalDamaged: journal_damaged,
            AutorettoError: person_error,
            HTTPException: http_error,
            ClientDisconnect: gone,
        },
    )
    return Guard(app, allowed_hosts)  # type: ignore[return-value]


def loopback_hosts(port: int, *served: str) -> set[str]:
    """The Host headers of a page bound to this machine only: its usual names, and `served`,
    the addresses it was asked to listen at and listens at (`--host 127.0.0.2`, `--host ::1`)."""
    names = {"127.0.0.1", "localhost", "[::1]"}
    names |= {f"[{name}]" if ":" in name else name for name in (n.strip("[]") for n in served)}
    hosts = {f"{name.lower()}:{port}" for name in names}
    if port == 80:
        # A browser leaves the scheme's default port out of Host (RFC 9110, section 7.2:
        # https://www.rfc-editor.org/rfc/rfc9110#section-7.2).
        hosts |= {name.lower() for name in names}
    return hosts
