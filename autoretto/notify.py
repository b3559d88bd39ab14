"""Telling a person: a hook command and/or a webhook, plus a cron-monitor heartbeat.

Events (`incident_opened`, `post_needs_person`, `account_reconnect`, `posting_held`, ...) go to
the configured command (the event as JSON on its stdin) and/or POSTed as JSON to a webhook URL
(an ntfy topic, a chat webhook). The heartbeat pings `heartbeat_url` + `/start` when a run
starts, the URL itself when it ends well and `/fail` when it does not, the way healthchecks-style
monitors expect. A failing notifier never breaks a run, and its URLs are never logged: they
often carry a secret.
"""

from __future__ import annotations

import json
import logging
import shlex
import subprocess
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError

log = logging.getLogger("autoretto.notify")

TIMEOUT_SECONDS = 15


@dataclass(frozen=True)
class NotifySettings:
    command: str | None = None
    webhook: str | None = None
    heartbeat_url: str | None = None


def parse_notify(raw: Any, *, path: object) -> NotifySettings:
    if raw is None:
        return NotifySettings()
    if not isinstance(raw, dict):
        raise ConfigError(path, "must be a table", field="notify")
    allowed = {"command", "webhook", "heartbeat_url"}
    for key, value in raw.items():
        if key not in allowed:
            raise ConfigError(
                path, f"unknown key (allowed: {', '.join(sorted(allowed))})", field=f"notify.{key}"
            )
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(path, "must be a non-empty string", field=f"notify.{key}")
        if key == "command":
            try:
                words = shlex.split(value)
            except ValueError as error:  # an unclosed quote
                raise ConfigError(
                    path, f"is not a command line ({error})", field="notify.command"
                ) from None
            if not words or not value.isprintable():
                raise ConfigError(path, "give one command line", field="notify.command")
        elif not value.startswith(("http://", "https://")) or not all(
            c.isprintable() and not c.isspace() for c in value
        ):
            raise ConfigError(path, "must be an http(s) URL without spaces", field=f"notify.{key}")
    return NotifySettings(**raw)


def notify(settings: NotifySettings, event: dict[str, Any]) -> list[str]:
    """Deliver one event. Returns the problems met (also logged); never raises."""
    problems: list[str] = []
    body = json.dumps(event, ensure_ascii=False, sort_keys=True)
    if settings.command:
        try:
            done = subprocess.run(
                shlex.split(settings.command),
                input=body,
                text=True,
                capture_output=True,
                timeout=TIMEOUT_SECONDS,
                check=False,
            )
            if done.returncode != 0:
                problems.append(f"notify command exited {done.returncode}")
        except (OSError, subprocess.TimeoutExpired) as error:
            problems.append(f"notify command failed: {type(error).__name__}")
    if settings.webhook:
        problem = _post(settings.webhook, body)
        if problem:
            problems.append(f"notify webhook: {problem}")
    for problem in problems:
        log.warning("%s (event %s)", problem, event.get("event"))
    return problems


def heartbeat(settings: NotifySettings, stage: str) -> None:
    """`start`, `success` or `fail`, for cron monitors. Never raises."""
    if not settings.heartbeat_url:
        return
    url = settings.heartbeat_url.rstrip("/")
    if stage != "success":
        url = f"{url}/{stage}"
    problem = _post(url, "")
    if problem:
        log.warning("heartbeat ping (%s): %s", stage, problem)


def _post(url: str, body: str) -> str | None:
    import requests

    try:
        answer = requests.post(
            url,
            data=body.encode("utf-8"),
            headers={"Content-Type": "application/json"},
            timeout=TIMEOUT_SECONDS,
        )
    except requests.RequestException as error:
        return type(error).__name__  # the message would show the URL
    if answer.status_code >= 400:
        return f"HTTP {answer.status_code}"
    return None
