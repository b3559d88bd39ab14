"""Google sign-in for a headless box: the installed-app flow, token import, token refresh.

The flow is google-auth-oauthlib's installed-app flow with PKCE, `access_type=offline` and
`prompt=consent` (so Google always sends a refresh token). A home server has no browser, so the
person opens the printed URL on their own computer and either

- tunnels the loopback redirect to the server (`ssh -L PORT:localhost:PORT user@server`) while
  Autoretto listens on 127.0.0.1:PORT, or
- with `--paste`, copies the address the browser was sent to (the page itself fails to load)
  and pastes it back.

`--token-file` imports Google's authorized-user JSON made elsewhere; its own `token_uri` is
honoured. Tokens returned here are in memory only: the caller seals them at once.

Every HTTP call here goes through `requests` with a timeout and verifies TLS against the standard
CA-bundle variables (`REQUESTS_CA_BUNDLE`, `CURL_CA_BUNDLE`, `HTTPLIB2_CA_CERTS`).
"""

from __future__ import annotations

import getpass
import json
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from .accounts import RefreshFailed, RefreshRefused, Tokens
from .errors import UsageError

GOOGLE_AUTH_URI = "https://accounts.google.com/o/oauth2/auth"
GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token"
HTTP_TIMEOUT_SECONDS = 30
#: how long the loopback redirect is waited for
LOOPBACK_TIMEOUT_SECONDS = 600


def tls_verify() -> str | bool:
    """What `requests` should verify TLS against: a CA bundle named by the environment, else
    the default store. Never False."""
    for variable in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "HTTPLIB2_CA_CERTS"):
        value = os.environ.get(variable)
        if value:
            return value
    return True


@dataclass(frozen=True)
class ClientSecrets:
    """An OAuth client of type "Desktop app" (installed)."""

    client_id: str
    client_secret: str
    auth_uri: str
    token_uri: str


def read_client_secrets(path: Path, *, auth_uri: str, token_uri: str) -> ClientSecrets:
    """Read Google's `client_secret_*.json` (an "installed" or "web" client).

    `auth_uri` / `token_uri` are the configured endpoints; they win over the file's so a
    config can point Autoretto at another (or a test) endpoint.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(
            f"{path}: no OAuth client file here; in Google Cloud Console create an OAuth client "
            'of type "Desktop app", download its JSON and pass it with --client-secrets'
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UsageError(
            f"{path}: not a readable OAuth client JSON ({type(error).__name__})"
        ) from None
    section = raw.get("installed") or raw.get("web") if isinstance(raw, dict) else None
    if not isinstance(section, dict) or not section.get("client_id"):
        raise UsageError(
            f'{path}: not an OAuth client file (expected an "installed" section with a '
            'client_id); download the JSON of a "Desktop app" client'
        )
    return ClientSecrets(
        client_id=str(section["client_id"]),
        client_secret=str(section.get("client_secret", "")),
        auth_uri=auth_uri,
        token_uri=token_uri,
    )


def read_authorized_user(path: Path, *, default_token_uri: str) -> Tokens:
    """Google's authorized-user JSON (`type, client_id, client_secret, refresh_token,
    token_uri`) as a token bundle without an access token yet."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such token file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UsageError(f"{path}: not a readable token JSON ({type(error).__name__})") from None
    if not isinstance(raw, dict):
        raise UsageError(f"{path}: not an authorized-user token file")
    kind = raw.get("type", "authorized_user")
    missing = [key for key in ("client_id", "client_secret", "refresh_token") if not raw.get(key)]
    if kind != "authorized_user" or missing:
        raise UsageError(
            f"{path}: not an authorized-user token file (missing: {', '.join(missing) or 'type'}); "
            "make one with google-auth's `Credentials.to_json()` or gcloud"
        )
    scopes = raw.get("scopes")
    return {
        "access_token": None,
        "expires_at": None,
        "refresh_token": raw["refresh_token"],
        "client_id": raw["client_id"],
        "client_secret": raw["client_secret"],
        "token_uri": raw.get("token_uri") or default_token_uri,
        "scopes": list(scopes) if isinstance(scopes, list) else None,
    }


def json_body(response: Any) -> dict[str, Any]:
    """The answer's JSON object, or {} when it has none (a proxy's HTML error page, say)."""
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def retry_after(response: Any) -> float | None:
    """Seconds the server asks to wait: `Retry-After` (seconds or an HTTP date, RFC 9110
    §10.2.3), else a rate-limit reset time (`x-rate-limit-reset`, `ratelimit-reset`: seconds
    since 1970); None when it says nothing."""
    from email.utils import parsedate_to_datetime

    from .clock import now

    value = str(response.headers.get("Retry-After") or "").strip()
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            try:
                return max(0.0, (parsedate_to_datetime(value) - now()).total_seconds())
            except (TypeError, ValueError):
                pass
    for header in ("x-rate-limit-reset", "ratelimit-reset"):
        reset = str(response.headers.get(header) or "")
        if reset.isdigit():
            return max(0.0, float(reset) - now().timestamp())
    return None


@dataclass(frozen=True)
class TokenEndpoint:
    """How a platform's OAuth token endpoint takes the app's credentials (RFC 6749 §2.3.1),
    and the names they have in the sealed token bundle (bundles already sealed keep theirs).

    `auth`: "form" (id and secret in the form), "basic" (HTTP Basic only), "basic_if_secret"
    (the id in the form, HTTP Basic when there is a secret: a public client has none).
    `flags`: bundle keys sent as "true" in a refresh when the bundle has them set.
    """

    id_key: str = "client_id"
    secret_key: str = "client_secret"
    auth: str = "form"
    flags: tuple[str, ...] = ()

    def post(
        self, credentials: dict[str, Any], token_uri: str, form: dict[str, str], *, timeout: float
    ) -> tuple[int, dict[str, Any], Any]:
        """POST `form` with the app's credentials; (status, JSON body, response)."""
        import requests

        form = dict(form)
        app_id = str(credentials.get(self.id_key) or "")
        secret = str(credentials.get(self.secret_key) or "")
        auth = None
        if self.auth == "basic":
            auth = (app_id, secret)
        else:
            form[self.id_key] = app_id
            if self.auth == "form":
                form[self.secret_key] = secret
            elif secret:
                auth = (app_id, secret)
        response = requests.post(
            token_uri,
            data=form,
            auth=auth,
            headers={"Accept": "application/json"},
            timeout=timeout,
            verify=tls_verify(),
        )
        return response.status_code, json_body(response), response


#: answers to a refresh that will never work with this refresh token (RFC 6749 §5.2, and
#: TikTok's access_token_invalid)
_REFUSED = {
    "invalid_grant",
    "invalid_client",
    "invalid_request",
    "unauthorized_client",
    "invalid_scope",
    "access_token_invalid",
}


def refresh_grant(
    tokens: Tokens,
    *,
    endpoint: TokenEndpoint = TokenEndpoint(),
    title: str = "the sign-in server",
    timeout: float = HTTP_TIMEOUT_SECONDS,
) -> dict[str, Any]:
    """POST the refresh grant to the bundle's token URI; return the JSON answer.

    Raises RefreshRefused for an answer that will never change (`invalid_grant`: revoked or
    expired; any 400/401 without an OAuth error code) and RefreshFailed for one that may
    (network, 5xx, 429).
    """
    import requests

    form = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
    form.update({flag: "true" for flag in endpoint.flags if tokens.get(flag)})
    try:
        status, answer, response = endpoint.post(tokens, tokens["token_uri"], form, timeout=timeout)
    except requests.RequestException as error:
        raise RefreshFailed(
            f"could not reach {title} to refresh the token ({type(error).__name__})"
        ) from None
    if status == 200 and answer.get("access_token"):
        return answer
    code = answer.get("error")
    code = str(code) if isinstance(code, str) else ""
    if code in _REFUSED or (status in (400, 401) and not code):
        words = str(answer.get("error_description") or answer.get("message") or "")[:200]
        raise RefreshRefused(": ".join(p for p in (code, words) if p) or f"HTTP {status}")
    raise RefreshFailed(
        f"{title} answered {status} to a token refresh" + (f" ({code})" if code else ""),
        retry_after=retry_after(response),
    )


def loopback_recipe(port: int) -> str:
    """The one line a person runs on their own computer to carry the redirect to this box."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "you"
    return f"ssh -L {port}:localhost:{port} {user}@{socket.gethostname()}"


def authorize(
    client: ClientSecrets,
    scopes: list[str],
    *,
    port: int,
    paste: bool,
    say: Callable[[str], None],
    ask: Callable[[str], str],
    timeout: float = LOOPBACK_TIMEOUT_SECONDS,
) -> Tokens:
    """Run the installed-app flow and return the token bundle (not yet sealed).

    `say` shows a line to the person, `ask` shows a prompt and returns what they typed.
    Raises UsageError in plain words when the person declines, pastes the wrong address, or
    the code is refused.
    """
    from google_auth_oauthlib.flow import InstalledAppFlow

    # Google may answer with the granted scopes in another order; we check them ourselves.
    os.environ.setdefault("OAUTHLIB_RELAX_TOKEN_SCOPE", "1")
    config = {
        "installed": {
            "client_id": client.client_id,
            "client_secret": client.client_secret,
            "auth_uri": client.auth_uri,
            "token_uri": client.token_uri,
            "redirect_uris": ["http://localhost"],
        }
    }
    flow = InstalledAppFlow.from_client_config(
        config, scopes=scopes, autogenerate_code_verifier=True
    )
    flow.redirect_uri = f"http://localhost:{port}/"
    url, state = flow.authorization_url(access_type="offline", prompt="consent")
    if paste:
        say("Open this address in a browser on any computer and allow access:")
        say(url)
        say(
            f"The browser then goes to http://localhost:{port}/… and shows an error page: that is "
            "expected. Copy that whole address from the address bar and paste it here."
        )
        redirected = ask("Address")
    else:
        say("On your own computer, open a terminal and run (keep it open):")
        say(f"  {loopback_recipe(port)}")
        say("Then open this address in that computer's browser and allow access:")
        say(url)
        say(f"Waiting for Google's answer on 127.0.0.1:{port} …")
        redirected = _wait_for_redirect(port, timeout)
    code = code_from_redirect(redirected, state)
    try:
        token = flow.fetch_token(code=code, timeout=HTTP_TIMEOUT_SECONDS, verify=tls_verify())
    except Exception as error:  # oauthlib and requests errors: one plain line, no secrets
        raise UsageError(
            f"Google did not accept the sign-in ({_oauth_error(error)}); run the command again "
            "and paste the newest address"
        ) from None
    return _bundle(token, client)


def _oauth_error(error: Exception) -> str:
    description = getattr(error, "description", None) or getattr(error, "error", None)
    return f"{type(error).__name__}: {description}" if description else type(error).__name__


def _bundle(token: dict[str, Any], client: ClientSecrets) -> Tokens:
    from .accounts import merge_refresh

    scope = token.get("scope")
    granted = scope.split() if isinstance(scope, str) else list(scope or [])
    bundle = merge_refresh(
        {
            "client_id": client.client_id,
            "client_secret": client.client_secret,
            "token_uri": client.token_uri,
            "refresh_token": None,
        },
        {
            "access_token": token["access_token"],
            "expires_in": token.get("expires_in"),
            "refresh_token": token.get("refresh_token"),
        },
    )
    bundle["scopes"] = granted
    if not bundle.get("refresh_token"):
        raise UsageError(
            "Google sent no refresh token, so Autoretto could not post unattended; remove "
            "Autoretto at https://myaccount.google.com/permissions and connect again"
        )
    return bundle


def code_from_redirect(
    address: str,
    state: str,
    *,
    title: str = "Google",
    button: str = "Allow",
    hint: str = " (it starts with http://localhost)",
) -> str:
    """The sign-in code from the address the browser ended on, pasted back by the person.

    Every platform's headless connect takes it this way. Refuses, in plain words, an address
    with an error (access not allowed), without a code, or from another sign-in attempt.
    """
    query = parse_qs(urlparse(address.strip()).query)
    if "error" in query:
        reason = (query.get("error_reason") or query["error"])[0]
        raise UsageError(
            f'{title} answered "{reason}": access was not allowed; run the command '
            f"again and press {button}"
        )
    if "code" not in query:
        raise UsageError(
            "that address holds no sign-in code; paste the whole address the browser shows "
            f"after you press {button}{hint}"
        )
    if query.get("state", [""])[0] != state:
        raise UsageError(
            "that address belongs to another sign-in attempt; paste the address of this one"
        )
    return query["code"][0].split("#", 1)[0]  # Instagram appends `#_`


def _wait_for_redirect(port: int, timeout: float) -> str:
    """Serve 127.0.0.1:PORT until the browser (through the tunnel) brings the redirect."""
    import time
    from http.server import BaseHTTPRequestHandler, HTTPServer

    received: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            query = parse_qs(urlparse(self.path).query)
            if "code" in query or "error" in query:
                received.append(f"http://localhost:{port}{self.path}")
                body = b"Autoretto has the answer; you can close this tab and the ssh tunnel."
                self.send_response(200)
            else:
                body = b"Waiting for Google's redirect."
                self.send_response(404)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # the query holds the code
            return

    try:
        server = HTTPServer(("127.0.0.1", port), Handler)
    except OSError as error:
        raise UsageError(
            f"cannot listen on 127.0.0.1:{port} ({error.strerror}); pick another --port"
        ) from None
    deadline = time.monotonic() + timeout
    try:
        while not received:
            left = deadline - time.monotonic()
            if left <= 0:
                raise UsageError(
                    f"no answer from the browser within {int(timeout)} s; is the ssh tunnel "
                    "open? Run the command again, or use --paste"
                )
            server.timeout = left
            server.handle_request()
    finally:
        server.server_close()
    return received[0]
