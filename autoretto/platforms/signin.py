"""Sign-in as a declared spec, driven by one flow (`autoretto connect NAME`).

A platform declares, on its class, `signin = SignIn(...)`: the flags of its `connect`, where the
app's id and secret come from, the PKCE flavour, how the consent address is written. It writes
`signed_in(attempt) -> Draft` (who signed in, which account to post as) and, only where it
differs, these class methods:

- `check_sign_in(attempt)`: refuse a bad flag before anything is asked (LinkedIn's URN);
- `secret_for(given)`: another secret for a variant (Pinterest's sandbox token);
- `read_client(attempt)`: the app from a file of the platform's own shape (Google's JSON);
- `sign_in_scopes(settings, given)`: scopes that depend on a flag (`--allow-edits`);
- `exchange_code(attempt, code)`: an exchange that is not the plain `authorization_code` grant
  at `token_uri` (Meta's long-lived tokens); `exchange_extra(settings)`: more form fields.

The flow owns everything else, the same for every platform:

1. every non-secret input is checked first (flags, settings, client files);
2. only then the secret, from its file or environment variable, else asked for on a terminal
   (`Person.secret`, which refuses without one and names the flag or variable to use);
3. the consent address with `state` and PKCE; the browser's answer pasted back (`--paste`, the
   only way where the registered redirect is https) or brought to the loopback port (`--port`,
   through an ssh tunnel), read by ONE parser (oauth.code_from_redirect);
4. the code exchange, the account chosen, the tokens sealed (`accounts.save_account`).

A sign-in without a browser (Google's `--token-file`, Bluesky's app password, Pinterest's
sandbox token) says so with `SignIn.needs_browser`; its `signed_in` makes the tokens.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode

from .. import accounts
from ..errors import AutorettoError, UsageError
from ..oauth import code_from_redirect, loopback_recipe, pkce_pair, wait_for_redirect

if TYPE_CHECKING:
    from ..ledger.store import Store as Database
    from ..paths import Paths


class Person(Protocol):
    """The person at the command: lines shown, answers typed, a secret typed unseen."""

    def say(self, line: str) -> None: ...

    def ask(self, prompt: str) -> str: ...

    def secret(self, prompt: str, *, instead: str, optional: bool = False) -> str: ...


@dataclass(frozen=True)
class Flag:
    """One option of `autoretto connect NAME` beyond the common ones, read by its `key`
    (`--client-id`: `given["client_id"]`). `kind` is "text", "path", "bool" or "port";
    `setting` names the settings key it overrides, when it does."""

    name: str
    help: str
    kind: str = "text"
    setting: str | None = None
    required: bool = False
    default: Any = None

    @property
    def key(self) -> str:
        return self.name.removeprefix("--").replace("-", "_")


@dataclass(frozen=True)
class Secret:
    """Where the app's secret (or an app password, a token) comes from, in this order: the
    file named by a flag (`file_flag`), a client JSON, the environment variable named by the
    settings key `env_setting` (or the fixed `env`), else a prompt on a terminal."""

    prompt: str
    env_setting: str | None = None
    env: str | None = None
    file_flag: str | None = None
    optional: bool = False  # an empty answer is a public client

    def variable(self, settings: dict[str, Any]) -> str | None:
        return (settings.get(self.env_setting) if self.env_setting else None) or self.env


@dataclass(frozen=True)
class SignIn:
    """A platform's sign-in, declared. See the module docstring for the flow it drives."""

    help: str  # the command's --help (its first line is the summary); ends with an example
    flags: tuple[Flag, ...] = ()
    id_key: str | None = None  # the flag's key and the settings key of the app's id
    id_missing: str = ""  # the sentence that says where to find the id
    client_file: bool = False  # `--client-file` JSON with the id and secret (Meta, LinkedIn)
    secret: Secret | None = None  # or the `secret_for(given)` of the platform
    pkce: str = "none"  # "S256", "plain", "none"; TikTok's desktop flavour "hex" via settings
    pkce_setting: str | None = None
    scopes: tuple[str, ...] = ()  # unless the platform's `sign_in_scopes` says otherwise
    id_param: str = "client_id"  # the consent address's name for the app's id
    scope_separator: str = " "
    extra_query: dict[str, str] = field(default_factory=dict)
    button: str = "Allow"  # what the person presses on the consent page
    loopback: bool = False  # the redirect is http://localhost:PORT/ (`--port`, `--paste`)
    needs_browser: Callable[[dict[str, Any]], bool] = lambda given: True


#: the flags of an app kept in a client JSON (Meta's Facebook Login, LinkedIn)
CLIENT_FILE_FLAGS = (
    Flag(
        "--client-file",
        'JSON with the app\'s "client_id" and "client_secret" (or "app_id" and "app_secret"). '
        "Default: client_file of the platform settings, in the home.",
        kind="path",
    ),
    Flag("--client-id", "The app's id (wins over the client file)."),
    Flag(
        "--client-secret-file",
        "A file holding only the app's secret (wins over the client file).",
        kind="path",
    ),
)
REDIRECT_FLAG = Flag(
    "--redirect-uri",
    "The redirect address registered in the app. Default: redirect_uri of the platform "
    "settings (https://localhost/).",
    setting="redirect_uri",
)
CLIENT_FILE_SECRET = Secret("App secret", file_flag="client_secret_file")


@dataclass
class Client:
    """The app a person signs in with: its id, its secret, where the browser comes back."""

    id: str = ""
    secret: str = ""
    redirect_uri: str = ""
    verifier: str = ""


@dataclass
class Attempt:
    """One sign-in under way, as the platform's steps see it."""

    settings: dict[str, Any]  # the platform's settings, the flags that override them applied
    given: dict[str, Any]  # the command's flags by their keys
    person: Person
    paths: Paths
    open_database: Callable[[], Database]  # opened only once the inputs are good
    client: Client = field(default_factory=Client)
    answer: dict[str, Any] = field(default_factory=dict)  # the code exchange's answer

    @cached_property
    def db(self) -> Database:
        return self.open_database()

    @property
    def timeout(self) -> float:
        return float(self.settings.get("timeout") or 30)

    def granted(self) -> list[str]:
        """The scopes the code exchange's answer says were granted (`scope`, split on spaces
        or commas)."""
        return str(self.answer.get("scope") or "").replace(",", " ").split()

    def ends(self, *keys: str) -> str | None:
        """When the answer's first of `keys` present (`expires_in`, `refresh_expires_in`...,
        seconds from now) ends, as an ISO instant; None when it names no end."""
        from ..clock import iso, now

        seconds = next((self.answer[key] for key in keys if self.answer.get(key)), None)
        return iso(now() + timedelta(seconds=int(seconds))) if seconds else None


@dataclass
class Draft:
    """What a sign-in found: the account to store and the lines that say what was done."""

    account_id: str
    name: str
    tokens: accounts.Tokens
    meta: dict[str, Any]
    lines: list[str] = field(default_factory=list)


def connect(
    platform: Any,
    open_database: Callable[[], Database],
    paths: Paths,
    settings: dict[str, Any] | None,
    given: dict[str, Any],
    person: Person,
) -> tuple[accounts.Account, list[str]]:
    """Sign `platform` (its class) in by its `signin` spec, with the command's flags `given` by
    their keys; the sealed account stored and the lines that say what was done. The database is
    opened only once every input is good: a UsageError / AutorettoError leaves nothing behind."""
    spec: SignIn = platform.signin
    settings = {**platform.settings_defaults, **(settings or {})}
    attempt = Attempt(settings, given, person, paths, open_database)
    for flag in spec.flags:
        if flag.setting and given.get(flag.key):
            attempt.settings[flag.setting] = given[flag.key]
    getattr(platform, "check_sign_in", lambda attempt: None)(attempt)
    attempt.client.redirect_uri = attempt.settings.get("redirect_uri", "")
    browser = spec.needs_browser(given)
    secret = getattr(platform, "secret_for", lambda given: spec.secret)(given)
    read_client = getattr(platform, "read_client", None)
    if browser and read_client is not None:
        read_client(attempt)
    elif browser or secret is not None:
        _client(platform, spec, secret, attempt, browser)
    if browser:
        code = _browse(platform, spec, attempt)
        exchange = getattr(platform, "exchange_code", None) or partial(exchange_code, platform)
        attempt.answer = exchange(attempt, code)
    draft = platform.signed_in(attempt)
    found = {key: getattr(draft, key) for key in ("account_id", "name", "tokens", "meta")}
    account = accounts.save_account(attempt.db, paths.home, platform=platform.name, **found)
    return account, draft.lines


# -- the app's id and secret ---------------------------------------------------------------------


def _client(
    platform: Any, spec: SignIn, wanted: Secret | None, attempt: Attempt, browser: bool
) -> None:
    """The app's id and `wanted` secret into `attempt.client`: every non-secret input first."""
    settings, given = attempt.settings, attempt.given
    key = spec.id_key or ""
    identifier = str(given.get(key) or settings.get(key) or "")
    secret: str | None = None
    client_path = None
    if spec.client_file:
        client_path, from_file = _client_file(spec, attempt, identifier)
        identifier = identifier or str(from_file.get("client_id") or from_file.get("app_id") or "")
        secret = from_file.get("client_secret") or from_file.get("app_secret") or None
    file_flag = wanted.file_flag if wanted else None
    if file_flag and given.get(file_flag) is not None:
        secret = _read_secret_file(given[file_flag])
    if browser and not identifier:
        if spec.client_file:
            raise _no_client(platform.title, "id", client_path)
        raise UsageError(spec.id_missing)
    if wanted is not None and secret is None:
        secret = _secret_from_environment(wanted, settings)
    if wanted is not None and secret is None:
        if spec.client_file:
            raise _no_client(platform.title, "secret", client_path)
        secret = attempt.person.secret(
            wanted.prompt.format(variable=wanted.variable(settings) or ""),
            instead=_instead(wanted, settings),
            optional=wanted.optional,
        )
    if wanted is not None and not (secret or "").strip() and not wanted.optional:
        raise UsageError(f"the {wanted.prompt.split(' (')[0].lower()} is empty")
    attempt.client.id = identifier
    attempt.client.secret = (secret or "").strip()


def _client_file(spec: SignIn, attempt: Attempt, identifier: str) -> tuple[Path, dict[str, Any]]:
    """The client JSON (`--client-file`, else client_file of the settings): optional when the
    id and the secret file are given as flags."""
    given = attempt.given
    chosen = given.get("client_file")
    path = chosen or attempt.paths.resolve(attempt.settings["client_file"])
    file_flag = spec.secret.file_flag if spec.secret else None
    if chosen is None and identifier and file_flag and given.get(file_flag) is not None:
        return path, {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if chosen is not None:
            raise UsageError(f"{path}: no such client file") from None
        return path, {}  # the default file is optional; what is missing is said later
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UsageError(f"{path}: not a readable client JSON ({type(error).__name__})") from None
    return path, raw if isinstance(raw, dict) else {}


def _no_client(title: str, missing: str, path: Path | None) -> UsageError:
    return UsageError(
        f"no {title} app {missing}: save the app's id and secret in {path} as "
        '{"client_id": "…", "client_secret": "…"} (chmod 600), or pass --client-id and '
        "--client-secret-file"
    )


def _read_secret_file(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"{path}: cannot read the secret ({type(error).__name__})") from None


def _secret_from_environment(secret: Secret, settings: dict[str, Any]) -> str | None:
    value = os.environ.get(secret.variable(settings) or "")
    return value if value or (value == "" and secret.optional) else None


def _instead(secret: Secret, settings: dict[str, Any]) -> str:
    """What a script gives instead of typing the secret."""
    ways = []
    if secret.file_flag:
        ways.append("--" + secret.file_flag.replace("_", "-") + " FILE")
    variable = secret.variable(settings)
    public = " (empty for a public client)" if secret.optional else ""
    if variable:
        ways.append(f"the environment variable {variable}{public}")
    return " or ".join(ways)


# -- the browser's round trip --------------------------------------------------------------------


def _browse(platform: Any, spec: SignIn, attempt: Attempt) -> str:
    """Show the consent address, bring back the browser's answer; returns the code in it."""
    settings, given, client = attempt.settings, attempt.given, attempt.client
    person = attempt.person
    port = int(given.get("port") or 0)
    if spec.loopback:
        client.redirect_uri = f"http://localhost:{port}/"
    state = secrets.token_urlsafe(16)
    scopes = getattr(platform, "sign_in_scopes", lambda settings, given: spec.scopes)
    query = {
        "response_type": "code",
        spec.id_param: client.id,
        "redirect_uri": client.redirect_uri,
        "scope": spec.scope_separator.join(scopes(settings, given)),
        "state": state,
        **spec.extra_query,
    }
    flavour = settings.get(spec.pkce_setting or "") or spec.pkce
    if flavour != "none":
        client.verifier, challenge = pkce_pair(flavour)
        query["code_challenge"] = challenge
        query["code_challenge_method"] = "plain" if flavour == "plain" else "S256"
    url = settings["auth_uri"] + "?" + urlencode(query)
    title = platform.title
    if spec.loopback and not given.get("paste"):
        person.say("On your own computer, open a terminal and run (keep it open):")
        person.say(f"  {loopback_recipe(port)}")
        person.say("Then open this address in that computer's browser and allow access:")
        person.say(url)
        person.say(f"Waiting for {title}'s answer on 127.0.0.1:{port} …")
        redirected = wait_for_redirect(port, title)
    else:
        person.say(
            f"Open this address in a browser on any computer, sign in to {title} and press "
            f"{spec.button}:"
        )
        person.say(url)
        person.say(
            f"The browser then goes to {client.redirect_uri}… and may show an error page: that "
            "is expected. Copy that whole address from the address bar and paste it here."
        )
        redirected = person.ask("Address")
    return code_from_redirect(
        redirected, state, title=title, button=spec.button, starts=client.redirect_uri
    )


def exchange_code(platform: Any, attempt: Attempt, code: str) -> dict[str, Any]:
    """The `authorization_code` grant at the platform's token endpoint (RFC 6749 §4.1.3), the
    app's credentials sent as its `token_endpoint` declares; the JSON answer."""
    import requests

    settings, client = attempt.settings, attempt.client
    endpoint = platform.token_endpoint
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": client.redirect_uri}
    if client.verifier:
        form["code_verifier"] = client.verifier
    form.update(getattr(platform, "exchange_extra", lambda settings: {})(settings))
    credentials = {endpoint.id_key: client.id, endpoint.secret_key: client.secret or None}
    try:
        status, answer, _ = endpoint.post(
            credentials, settings["token_uri"], form, timeout=attempt.timeout
        )
    except requests.RequestException as error:
        raise AutorettoError(
            f"could not reach {platform.title} to finish the sign-in ({type(error).__name__})"
        ) from None
    if status != 200 or not answer.get("access_token"):
        keys = ("error_description", "message", "error")
        said = next((answer[key] for key in keys if answer.get(key)), f"HTTP {status}")
        raise UsageError(
            f"{platform.title} did not accept the sign-in ({str(said)[:200]}); run the command "
            "again and paste the newest address"
        )
    return answer


def choose(
    candidates: list[dict[str, str]],
    wanted: str | None,
    *,
    person: Person,
    title: str,
    what: str = "account",
    flag: str = "--account",
    prompt: str = "Number",
) -> dict[str, str]:
    """The account to post as: the one `wanted` names (its id or name), the only one, or the
    person's pick from a numbered list. Candidates are `{"id", "name", ...}`."""
    if not candidates:
        raise AutorettoError(f"this sign-in gives no {title} {what} to post as")
    if wanted:
        for candidate in candidates:
            if wanted in (candidate["id"], candidate["name"], "@" + candidate["name"]):
                return candidate
        names = ", ".join(f"{c['name']} ({c['id']})" for c in candidates)
        raise UsageError(f"{flag} {wanted}: not one of this sign-in's {what}s ({names})")
    if len(candidates) == 1:
        return candidates[0]
    person.say(f"Which {title} {what} should Autoretto post as?")
    for number, candidate in enumerate(candidates, start=1):
        person.say(f"  {number}. {candidate['name']} ({candidate['id']})")
    answer = person.ask(prompt).strip()
    if not answer.isdigit() or not 1 <= int(answer) <= len(candidates):
        raise UsageError(f'"{answer}" is not one of the numbers 1 to {len(candidates)}')
    return candidates[int(answer) - 1]
