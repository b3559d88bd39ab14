"""The `[serve]` table: how `autoretto serve` lets people in, and where others reach it.

```toml
[serve]
password_hash = "scrypt$16384$8$1$…"   # `autoretto serve --hash-password` prints this line
token_env = "AUTORETTO_SERVE_TOKEN"    # or: a fixed token kept in this environment variable
public_url = "https://studio.example.net"  # where collaborators reach the page: review
                                           # links point here (`url`: its older name)
review_for = "3d"                      # how long a review link works
request_timeout = "10s"                # how long a client has to send a whole request
```

Neither the password nor the token is ever kept in clear in the config: the password as a
salted scrypt hash (hashlib, from the standard library), the token in the environment. The
config keeps the validated table as a dict; `ServeSettings.of(config)` reads it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ..clock import parse_duration
from ..errors import ConfigError, ConfigProblems, UsageError
from . import DEFAULT_HOST, DEFAULT_PORT

KEYS = {"password_hash", "token_env", "url", "public_url", "review_for", "request_timeout"}
MIN_TOKEN_LENGTH = 16
# scrypt's cost: n = 2^14, r = 8, p = 1 takes 16 MiB and about 50 ms, the parameters that
# hashlib's documentation and RFC 7914 section 2 give as the interactive-login example.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
# Kept as text: `re` caches what it compiles, and `status` never parses this table (the
# validated config comes from its cache).
_HASH = r"^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9_=-]+)\$([A-Za-z0-9_=-]+)$"
_VARIABLE = r"^[A-Za-z_][A-Za-z0-9_]*$"


@dataclass(frozen=True)
class ServeSettings:
    password_hash: str | None = None
    token_env: str | None = None
    url: str | None = None  # [serve] public_url (or url); None: http://HOST:PORT of the server
    review_for: timedelta = timedelta(days=3)
    # A connection that has not sent a whole request (headers and body) this long after it
    # opened, or after its last answer, is closed (web/server.py): a slow sender holds nothing.
    request_timeout: timedelta = timedelta(seconds=10)

    @property
    def has_secret(self) -> bool:
        """A password or a token is set: the page may listen beyond this machine."""
        return bool(self.password_hash or self.token_env)

    def fixed_token(self) -> str | None:
        """The token from `token_env`, or None when no variable is named.

        Raises UsageError when the variable is named but unset or too short to be a secret.
        """
        if not self.token_env:
            return None
        token = os.environ.get(self.token_env, "")
        if len(token) < MIN_TOKEN_LENGTH:
            raise UsageError(
                f"[serve] token_env names {self.token_env}, which is "
                + ("not set" if not token else f"shorter than {MIN_TOKEN_LENGTH} characters")
                + "; set it (e.g. `export "
                f"{self.token_env}=$(python3 -c 'import secrets; print(secrets.token_urlsafe())')"
                "`) or remove token_env"
            )
        return token

    @classmethod
    def of(cls, config: Any) -> ServeSettings:
        """The settings of `config`'s `[serve]` table (kept there as the validated dict)."""
        return cls(**(getattr(config, "serve", None) or {}))

    def review_base(self) -> str:
        """Where review links point: `public_url`, else the page's default local address."""
        return self.url.rstrip("/") if self.url else address(DEFAULT_HOST, DEFAULT_PORT)

    def review_base_is_local(self) -> bool:
        """Do review links point at this machine only (a loopback address), where no
        collaborator can open them?"""
        from urllib.parse import urlsplit

        return is_loopback(urlsplit(self.review_base()).hostname or "")


def is_loopback(host: str) -> bool:
    """Is `host` (a name or an address, IPv6 with or without brackets) this machine only?"""
    import ipaddress

    name = host.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):  # RFC 6761 section 6.3
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def address(host: str, port: int) -> str:
    """The page's address when it listens on `host`:`port`."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def parse_serve(raw: Any, *, path: object) -> dict[str, Any]:
    """Validate `[serve]` into the keyword arguments of ServeSettings (a plain dict, so that
    reading the cached config does not import this module); no table: the defaults. Each key is
    checked on its own: ConfigProblems names every one that is wrong."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(path, "must be a table", field="serve")
    found: list[ConfigError] = []

    def problem(key: str, message: str) -> None:
        found.append(ConfigError(path, message, field=f"serve.{key}"))

    for key in raw:
        if key not in KEYS:
            problem(key, f"unknown key (allowed: {', '.join(sorted(KEYS))})")
    texts: dict[str, str] = {}
    for key in ("password_hash", "token_env", "url", "public_url"):
        if key not in raw:
            continue
        if not isinstance(raw[key], str) or not raw[key].strip():
            problem(key, "must be a non-empty string")
        else:
            texts[key] = raw[key]
    if "password_hash" in texts and not re.match(_HASH, texts["password_hash"]):
        problem(
            "password_hash",
            "not a password hash; run `autoretto serve --hash-password` and paste the line it "
            "prints (never the password itself)",
        )
    if "token_env" in texts and not re.match(_VARIABLE, texts["token_env"]):
        problem(
            "token_env",
            "not an environment variable name; name the variable that holds the token (e.g. "
            "AUTORETTO_SERVE_TOKEN), never the token itself",
        )
    for key in ("public_url", "url"):
        if key in texts and not texts[key].startswith(("http://", "https://")):
            problem(key, "must be an http(s) address")
    url, public_url = texts.get("url"), texts.get("public_url")
    if url is not None and public_url is not None and url.rstrip("/") != public_url.rstrip("/"):
        problem("public_url", "and url name two addresses; keep public_url (url is its older name)")
    review_for = request_timeout = None
    try:
        review_for = parse_duration(raw.get("review_for", "3d"))
    except ValueError as error:
        problem("review_for", str(error))
    try:
        request_timeout = parse_duration(
            raw.get("request_timeout", "10s"),
            shortest=timedelta(seconds=1),
            longest=timedelta(minutes=10),
        )
    except ValueError as error:
        problem("request_timeout", str(error))
    if found:
        raise ConfigProblems(found)
    return {
        "password_hash": texts.get("password_hash"),
        "token_env": texts.get("token_env"),
        "url": public_url or url,
        "review_for": review_for,
        "request_timeout": request_timeout,
    }


def hash_password(password: str) -> str:
    """The `password_hash` value for `password`: scrypt with a fresh salt."""
    import secrets

    salt = secrets.token_bytes(16)
    digest = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${_b64(salt)}${_b64(digest)}"


def check_password(password: str, stored: str) -> bool:
    """Does `password` match the `password_hash` `stored`? Compared in constant time."""
    import base64
    import hmac

    found = re.match(_HASH, stored)
    if not found:
        return False
    n, r, p = (int(found.group(i)) for i in (1, 2, 3))
    salt, digest = (base64.urlsafe_b64decode(found.group(i)) for i in (4, 5))
    return hmac.compare_digest(_scrypt(password, salt, n, r, p), digest)


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    import hashlib

    return hashlib.scrypt(
        password.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=2**26, dklen=32
    )


def _b64(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(data).decode("ascii")
