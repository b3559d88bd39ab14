"""OAuth pieces every platform shares: the token endpoint and its refresh grant, PKCE, the
browser's answer (pasted back, or brought to a loopback port through an ssh tunnel) and its
one parser, Google's client and authorized-user files, answers read as JSON.

The sign-in flow that uses them, declared per platform, is platforms/signin.py. Tokens
returned here are in memory only: the caller seals them at once.

Every HTTP call here goes through `requests` with a timeout and verifies TLS against the standard
CA-bundle variables (`REQUESTS_CA_BUNDLE`, `CURL_CA_BUNDLE`, `HTTPLIB2_CA_CERTS`).
"""

from __future__ import annotations

import base64
import getpass
import hashlib
import json
import os
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from .accounts import RefreshFailed, RefreshRefused, Tokens
from .errors import UsageError

HTTP_TIMEOUT_SECONDS = 30
#: how long the loopback listener waits for the browser (seconds)
LOOPBACK_TIMEOUT_SECONDS = 600.0


def tls_verify() -> str | bool:
    """What `requests` should verify TLS against: a CA bundle named by the environment, else
    the default store. Never False."""
    for variable in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "HTTPLIB2_CA_CERTS"):
        value = os.environ.get(variable)
        if value:
            return value
    return True


def read_client_secrets(path: Path) -> tuple[str, str]:
    """(client id, client secret) of Google's `client_secret_*.json` (an "installed" or "web"
    client). Its endpoints are not read: the configured ones are used, so a config can point
    Autoretto at another (or a test) endpoint."""
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
    return str(section["client_id"]), str(section.get("client_secret", ""))


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


# -- the browser's answer ----------------------------------------------------------------------


def pkce_pair(flavour: str) -> tuple[str, str]:
    """(code_verifier, code_challenge) of RFC 7636 §4.1-4.2: 96 unreserved characters, and
    their SHA-256 in base64url without padding ("S256"), in hex (TikTok's desktop flavour,
    https://developers.tiktok.com/doc/login-kit-desktop), or the verifier itself ("plain")."""
    verifier = secrets.token_urlsafe(72)[:96]
    digest = hashlib.sha256(verifier.encode()).digest()
    if flavour == "hex":
        return verifier, digest.hex()
    if flavour == "plain":
        return verifier, verifier
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def code_from_redirect(
    address: str, state: str, *, title: str, button: str = "Allow", starts: str = ""
) -> str:
    """The sign-in code from the address the browser ended on (RFC 6749 §4.1.2).

    Refuses, in plain words, an address with an error (§4.1.2.1: access_denied and the rest,
    with Meta's `error_reason` and the `error_description` when they are there), one without a
    code, and one whose `state` is another sign-in attempt's.
    """
    query = parse_qs(urlparse(address.strip()).query)
    if "error" in query:
        said = (query.get("error_description") or query.get("error_reason") or query["error"])[0]
        raise UsageError(
            f'{title} answered "{said}": access was not allowed; run the command again and '
            f"press {button}"
        )
    if "code" not in query:
        raise UsageError(
            "that address holds no sign-in code; paste the whole address the browser shows "
            f"after you press {button}" + (f" (it starts with {starts})" if starts else "")
        )
    if query.get("state", [""])[0] != state:
        raise UsageError(
            "that address belongs to another sign-in attempt; paste the address of this one"
        )
    return query["code"][0].split("#", 1)[0]  # Instagram appends `#_`


def loopback_recipe(port: int, target: str = "localhost") -> str:
    """The one line a person runs on their own computer to carry its port `port` to `target`
    (a loopback address) port `port` of this box: a sign-in's redirect, or the page."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "you"
    return f"ssh -L {port}:{target}:{port} {user}@{socket.gethostname()}"


def wait_for_redirect(port: int, title: str, timeout: float = LOOPBACK_TIMEOUT_SECONDS) -> str:
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
                body = f"Waiting for {title}'s redirect.".encode()
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
