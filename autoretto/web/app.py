"""The page of `autoretto serve`: a Starlette app, Jinja2 templates, no front-end build.

Who may come in, and how each request proves it, is the door's (door.py): the owner's session,
a review link's cookie scoped to one episode, a CSRF token on every form, the Host check and the
security headers. Every page works without JavaScript, and /static/live.js only refreshes the
parts marked `data-live`. Each response carries a strict Content-Security-Policy (scripts,
styles and media from this server only: nothing inline), and Jinja2 escapes every title and
text. Paths are logged without their query, so no token or signature reaches a log.

Each route is a module-level handler that finds what it shares with the others (the door, the
one-time messages, the Post now jobs, the templates, the config) in `request.app.state.page`
(`Page`): `build(page, routes)` makes an app of any of them, so a test can serve one handler
alone. `create_app` is the whole page.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from . import actions, inbox
from .door import (
    CONTENT_SECURITY_POLICY,
    LOGIN_COOKIE,
    REVIEW_COOKIE,
    SECURITY_HEADERS,
    SESSION_COOKIE,
    SESSION_LIFETIME,
    SESSION_SECONDS,
    Door,
    Flashes,
    Guard,
    Refused,
    Visitor,
    checked_form,
    keep,
)
from .jobs import PostNowJobs
from .links import LinkKey
from .settings import ServeSettings

if TYPE_CHECKING:
    from ..config import Config

__all__ = [  # the door's names, as tests and `serve` have always found them here
    "CONTENT_SECURITY_POLICY", "LOGIN_COOKIE", "REVIEW_COOKIE", "SECURITY_HEADERS",
    "SESSION_COOKIE", "SESSION_LIFETIME", "SESSION_SECONDS", "Door", "Flashes", "Guard",
    "Refused", "Visitor", "build", "create_app", "loopback_hosts",
]  # fmt: skip
log = logging.getLogger("autoretto.web")

CALENDAR_DAYS = 7
STATIC = Path(__file__).parent / "static"
STATIC_FILES = {
    "web.css": "text/css",
    "live.js": "text/javascript",
    "icon.svg": "image/svg+xml",
    "no-thumbnail.svg": "image/svg+xml",
}
MEDIA_NAMES = ("landscape", "vertical", "reels", "thumbnail")
VIEWS = ("week", "month")


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


@dataclass
class Page:
    """What every handler shares: who may come in, the one-time messages, the Post now jobs,
    the templates, and how to read the config as it is now."""

    settings: ServeSettings
    door: Door
    current: Callable[[], Config]
    templates: Environment
    flashes: Flashes = field(default_factory=Flashes)
    jobs: PostNowJobs | None = None
    failed_sign_ins: asyncio.Lock = field(default_factory=asyncio.Lock)

    @classmethod
    def of(cls, config: Config, *, login_token: str) -> Page:
        """The page for `config`'s home, `login_token` the sign-in token `serve` printed."""
        settings = ServeSettings.of(config)
        link_key = LinkKey(config.paths.home)
        link_key()  # a damaged key stops `serve` at start, in one line

        def current() -> Config:
            """The config as it is now: an edit (a channel, its approval) counts from the next
            request, as it does for the next command. Only who may sign in is read at start."""
            return load_config(config.paths, platforms=FIELDS)

        page = cls(
            settings,
            Door(settings, link_key, login_token, settings.fixed_token()),
            current,
            _templates(),
        )
        page.jobs = PostNowJobs(current, actions.post_episode_now, actions.episode_posts)
        return page


def _templates() -> Environment:
    templates = Environment(
        loader=PackageLoader("autoretto.web", "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    templates.filters["when"] = _when
    return templates


def _when(value: Any, pattern: str = "%a %d %b %Y, %H:%M") -> str:
    if value is None:
        return ""
    moment = clock.parse_instant(value) if isinstance(value, str) else value
    return moment.strftime(pattern)


def page_of(request: Request) -> Page:
    return request.app.state.page


def render(
    request: Request,
    name: str,
    visitor: Visitor | None,
    *,
    status: int = 200,
    **context: Any,
) -> HTMLResponse:
    page = page_of(request)
    text = page.templates.get_template(name).render(
        now=clock.now(),
        visitor=visitor,
        flashes=page.flashes.take(visitor),
        **context,
    )
    response = HTMLResponse(text, status_code=status)
    response.headers["cache-control"] = "no-store"
    return response


async def read(request: Request, work: Any, *args: Any, **kwargs: Any) -> Any:
    """Run `work(config, ...)` on a thread (SQLite and files block)."""
    current = page_of(request).current
    return await run_in_threadpool(lambda: work(current(), *args, **kwargs))


async def do(request: Request, visitor: Visitor, work: Any, *args: Any, **kwargs: Any) -> Any:
    """`read` for a button: a person's mistake becomes the page's message (None returned)."""
    try:
        return await read(request, work, *args, **kwargs)
    except AutorettoError as error:
        page_of(request).flashes.add(visitor, "error", str(error))
        return None


def flash(request: Request, visitor: Visitor, level: str, text: str) -> None:
    page_of(request).flashes.add(visitor, level, text)


def need_owner(request: Request) -> Visitor:
    return page_of(request).door.need_owner(request)


def need_reviewer(request: Request) -> Visitor:
    return page_of(request).door.need_reviewer(request, request.path_params["episode_id"])


def jobs_of(request: Request) -> PostNowJobs:
    jobs = page_of(request).jobs
    assert jobs is not None
    return jobs


# -- pages ---------------------------------------------------------------------------------------


async def home(request: Request) -> Response:
    """The calendar (`?view=week`, the default, or `month`; `?day=YYYY-MM-DD` picks the week
    or month around that day), the queue of each channel, what is going out now, the episodes."""
    visitor = need_owner(request)
    view = request.query_params.get("view", "week")
    if view not in VIEWS:
        raise Refused(400, "view: give week or month (?view=week, ?view=month).")
    day_text = request.query_params.get("day")
    try:
        day = date.fromisoformat(day_text) if day_text else None
    except ValueError:
        day = date.min
    if day is not None and not date(2000, 1, 1) <= day <= date(2999, 12, 31):
        raise Refused(400, "day: give a date from 2000 to 2999 as 2026-12-08 (?day=2026-12-08).")
    data = await read(request, actions.overview, days=CALENDAR_DAYS, view=view, day=day)
    running = jobs_of(request).pending()
    return render(
        request,
        "home.html",
        visitor,
        title="Calendar",
        here="home",
        states=STATES,
        jobs=running,
        pending=bool(running),
        **data,
    )


async def trouble(request: Request) -> Response:
    visitor = need_owner(request)
    data = await read(request, actions.trouble)
    return render(request, "trouble.html", visitor, title="Needs you", here="trouble", **data)


async def limits(request: Request) -> Response:
    visitor = need_owner(request)
    data = await read(request, actions.limits)
    return render(request, "limits.html", visitor, title="Limits", here="limits", **data)


async def episode_view(request: Request, visitor: Visitor, episode_id: int) -> HTMLResponse:
    data = await read(request, actions.episode_page, episode_id)
    own_jobs = jobs_of(request).for_episode(episode_id) if visitor.kind == "owner" else []
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
    visitor = need_owner(request)
    return await episode_view(request, visitor, request.path_params["episode_id"])


async def review(request: Request) -> Response:
    door = page_of(request).door
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
    found = await read(request, actions.media_file, episode_id, name)
    if not found or not Path(found).is_file():
        raise HTTPException(404)
    response = FileResponse(found)
    response.headers["cache-control"] = "private, no-store"
    return response


async def owner_media(request: Request) -> Response:
    return await media(request, need_owner(request))


async def review_media(request: Request) -> Response:
    return await media(request, need_reviewer(request))


# -- buttons -------------------------------------------------------------------------------------


async def set_approval(request: Request, visitor: Visitor, approved: bool) -> Response:
    await checked_form(request, visitor)
    episode_id = request.path_params["episode_id"]
    done = await do(request, visitor, actions.approve, episode_id, approved=approved)
    if done is not None:
        flash(request, visitor, "ok", f"Episode {episode_id} is {done['state']}.")
    base = "/review" if visitor.kind == "review" else "/episodes"
    return RedirectResponse(f"{base}/{episode_id}", status_code=303)


async def owner_approve(request: Request) -> Response:
    return await set_approval(request, need_owner(request), True)


async def owner_hold(request: Request) -> Response:
    return await set_approval(request, need_owner(request), False)


async def review_approve(request: Request) -> Response:
    return await set_approval(request, need_reviewer(request), True)


async def review_hold(request: Request) -> Response:
    return await set_approval(request, need_reviewer(request), False)


async def post_now(request: Request) -> Response:
    visitor = need_owner(request)
    await checked_form(request, visitor)
    episode_id = request.path_params["episode_id"]
    job = await run_in_threadpool(jobs_of(request).start, episode_id)
    if job.error:
        flash(request, visitor, "error", job.message)
    elif job.moment is not None:
        flash(
            request,
            visitor,
            "ok",
            f"Episode {episode_id} goes out at {job.moment:%H:%M:%S} UTC "
            "(a human pace, not on the second).",
        )
    return RedirectResponse(f"/episodes/{episode_id}", status_code=303)


async def post_live(request: Request) -> Response:
    visitor = need_owner(request)
    form = await checked_form(request, visitor)
    post_id = request.path_params["post_id"]
    done = await do(request, visitor, actions.confirm_live, post_id, str(form.get("url") or ""))
    if done is not None:
        flash(request, visitor, "ok", f"Post {post_id} ({done['platform']}) is {done['state']}.")
    return RedirectResponse("/trouble", status_code=303)


async def post_not_live(request: Request) -> Response:
    visitor = need_owner(request)
    await checked_form(request, visitor)
    post_id = request.path_params["post_id"]
    done = await do(request, visitor, actions.confirm_not_live, post_id)
    if done is not None:
        flash(
            request,
            visitor,
            "ok",
            f"Post {post_id} ({done['platform']}) is {done['state']}: it goes out again "
            "on a later slot.",
        )
    return RedirectResponse("/trouble", status_code=303)


async def post_look(request: Request) -> Response:
    visitor = need_owner(request)
    await checked_form(request, visitor)
    post_id = request.path_params["post_id"]
    result = await do(request, visitor, actions.look, post_id)
    if result is not None:
        level = "ok" if result.outcome == "posted" else "error"
        flash(request, visitor, level, f"Post {post_id}: {result.outcome} – {result.reason}")
    return RedirectResponse("/trouble", status_code=303)


async def resume(request: Request) -> Response:
    visitor = need_owner(request)
    await checked_form(request, visitor)
    report = await do(request, visitor, actions.resume_checked)
    if report is not None:
        flash(
            request,
            visitor,
            "ok",
            f"Wrote {report['written_back']} journal entries back; posting resumes."
            if report["written_back"]
            else "Posting was not held; nothing to resume.",
        )
    return RedirectResponse("/trouble", status_code=303)


async def edit_form(request: Request) -> Response:
    """The editor: the episode's title, description and each platform's texts."""
    visitor = need_owner(request)
    episode_id = request.path_params["episode_id"]
    data = await read(request, actions.edit_page, episode_id)
    return render(
        request, "edit.html", visitor, title=f"Edit episode {episode_id}", here="home", **data
    )


async def edit_save(request: Request) -> Response:
    """The editor's Save: the rules of editing.py; a refusal is the page's message, nothing
    changed, and the editor shows again."""
    visitor = need_owner(request)
    form = await checked_form(request, visitor)
    episode_id = request.path_params["episode_id"]
    values = {key: str(value) for key, value in form.items() if key != "csrf"}
    done = await do(request, visitor, actions.edit_episode, episode_id, values, who="page")
    if done is None:
        return RedirectResponse(f"/episodes/{episode_id}/edit", status_code=303)
    changed = len(done["changed"])
    flash(
        request,
        visitor,
        "ok",
        f"Episode {episode_id}: {changed} text{'s' if changed != 1 else ''} changed; the gates "
        "passed."
        if changed
        else f"Episode {episode_id}: nothing changed.",
    )
    return RedirectResponse(f"/episodes/{episode_id}", status_code=303)


async def move(request: Request) -> Response:
    """The queue's Move: the episode goes out on the chosen coming slot (editing.move_to_slot)."""
    visitor = need_owner(request)
    form = await checked_form(request, visitor)
    episode_id = request.path_params["episode_id"]
    slot = str(form.get("slot") or "")
    line = await do(request, visitor, actions.move_episode, episode_id, slot)
    if line is not None:
        flash(
            request,
            visitor,
            "ok",
            f"Episode {episode_id} now goes out on {slot.replace('T', ' ')}.",
        )
    return RedirectResponse("/", status_code=303)


async def swap(request: Request) -> Response:
    """The queue's Swap: two episodes exchange their places in line (editing.swap)."""
    visitor = need_owner(request)
    form = await checked_form(request, visitor)
    episode_id = request.path_params["episode_id"]
    other = str(form.get("with") or "")
    if not other.isdigit():
        raise Refused(400, "with: choose the episode to swap with.")
    line = await do(request, visitor, actions.swap_episodes, episode_id, int(other))
    if line is not None:
        flash(request, visitor, "ok", f"Episodes {episode_id} and {other} swapped places.")
    return RedirectResponse("/", status_code=303)


# -- signing in ----------------------------------------------------------------------------------


def signed_in(request: Request, session_id: str) -> Response:
    # A page that moves on by itself rather than a redirect: a link opened from another
    # site (a chat, a mail) would not send a SameSite=Strict cookie along a redirect.
    template = page_of(request).templates.get_template("signed_in.html")
    response = HTMLResponse(template.render(target="/"))
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
        password=bool(page_of(request).settings.password_hash),
    )
    return keep(response, request, LOGIN_COOKIE, login_csrf, seconds=3600, path="/login")


async def wrong_secret(request: Request, message: str) -> Response:
    async with page_of(request).failed_sign_ins:
        await asyncio.sleep(1)  # one wrong guess a second at most
    return login_form(request, status=401, message=message)


async def login(request: Request) -> Response:
    door = page_of(request).door
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
    import hmac

    form = await request.form()
    expected = request.cookies.get(LOGIN_COOKIE, "")
    given = str(form.get("csrf") or "")
    if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
        return login_form(request, status=403, message="This form is out of date: try again.")
    session_id = page_of(request).door.sign_in(str(form.get("secret") or ""))
    if session_id is None:
        return await wrong_secret(request, "That is not the token or the password.")
    response = RedirectResponse("/", status_code=303)
    return keep(response, request, SESSION_COOKIE, session_id, seconds=SESSION_SECONDS,
                path="/")  # fmt: skip


async def logout(request: Request) -> Response:
    visitor = need_owner(request)
    await checked_form(request, visitor)
    page_of(request).door.sign_out(visitor.key)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


# -- the rest ------------------------------------------------------------------------------------


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


ROUTES = [
    Route("/", home),
    Route("/trouble", trouble),
    Route("/limits", limits),
    Route("/episodes/{episode_id:id}", episode),
    Route("/episodes/{episode_id:id}/media/{name}", owner_media),
    Route("/episodes/{episode_id:id}/approve", owner_approve, methods=["POST"]),
    Route("/episodes/{episode_id:id}/hold", owner_hold, methods=["POST"]),
    Route("/episodes/{episode_id:id}/post-now", post_now, methods=["POST"]),
    Route("/episodes/{episode_id:id}/edit", edit_form),
    Route("/episodes/{episode_id:id}/edit", edit_save, methods=["POST"]),
    Route("/episodes/{episode_id:id}/move", move, methods=["POST"]),
    Route("/episodes/{episode_id:id}/swap", swap, methods=["POST"]),
    Route("/posts/{post_id:id}/live", post_live, methods=["POST"]),
    Route("/posts/{post_id:id}/not-live", post_not_live, methods=["POST"]),
    Route("/posts/{post_id:id}/look", post_look, methods=["POST"]),
    Route("/resume", resume, methods=["POST"]),
    Route("/inbox", inbox.inbox),
    Route("/inbox/{comment_id:id}/approve", inbox.approve_reply, methods=["POST"]),
    Route("/inbox/{comment_id:id}/ignore", inbox.ignore_comment, methods=["POST"]),
    Route("/inbox/{comment_id:id}/send", inbox.send_reply, methods=["POST"]),
    Route("/review/{episode_id:id}", review),
    Route("/review/{episode_id:id}/media/{name}", review_media),
    Route("/review/{episode_id:id}/approve", review_approve, methods=["POST"]),
    Route("/review/{episode_id:id}/hold", review_hold, methods=["POST"]),
    Route("/login", login),
    Route("/login", login_post, methods=["POST"]),
    Route("/logout", logout, methods=["POST"]),
    Route("/static/{name}", static),
]
EXCEPTION_HANDLERS: dict[Any, Callable[..., Any]] = {
    Refused: refused,
    NotFound: not_found,
    JournalDamaged: journal_damaged,
    AutorettoError: person_error,
    HTTPException: http_error,
    ClientDisconnect: gone,
}


def build(page: Page, routes: list[Route] | None = None) -> Starlette:
    """A Starlette app of `routes` (all of the page's by default) sharing `page`, with the
    page's answers to a refusal, a missing row, a person's mistake; no Host guard."""
    app = Starlette(routes=routes or ROUTES, exception_handlers=EXCEPTION_HANDLERS)
    app.state.page = page
    return app


def create_app(
    config: Config,
    *,
    login_token: str,
    allowed_hosts: set[str] | None = None,
) -> Starlette:
    """The page for `config`'s home. `login_token` is the sign-in token `serve` printed;
    `allowed_hosts` the Host headers answered (None: any, for a page behind a tunnel)."""
    app = build(Page.of(config, login_token=login_token))
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
