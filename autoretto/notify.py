"""Telling a person: a hook command and/or a webhook, plus a cron-monitor heartbeat.

Events (`incident_opened`, `post_needs_person`, `reply_needs_person`, `posting_held`, ...) go to
the configured command (the event as JSON on its stdin) and/or POSTed as JSON to a webhook URL
(an ntfy topic, a chat webhook). The heartbeat pings `heartbeat_url` + `/start` when a run
starts, the URL itself when it ends well and `/fail` when it does not, the way healthchecks-style
monitors expect; the end pings carry the run's summary as their body, so the monitor's alert
says what went wrong. A failing notifier never breaks a run, and its URLs are never logged nor
sent: they often carry a secret.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError, Problems

log = logging.getLogger("autoretto.notify")

TIMEOUT_SECONDS = 15
# A ping's body is kept by the monitor (healthchecks.io keeps the first 100 kB of a POST body:
# https://healthchecks.io/docs/attaching_logs/); the end of a long run's summary is what matters.
SUMMARY_LINES = 40
LINE_CHARACTERS = 400
# Environment variables whose values are never sent, whatever line they turn up in.
SECRET_NAME = re.compile(r"KEY|SECRET|TOKEN|PASSWORD|PASSWD|COOKIE|CREDENTIAL", re.IGNORECASE)
ANSI_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]")


@dataclass(frozen=True)
class NotifySettings:
    command: str | None = None
    webhook: str | None = None
    heartbeat_url: str | None = None


def parse_notify(raw: Any, *, path: object) -> NotifySettings:
    """Validate the [notify] table. Raises ConfigProblems naming each wrong field."""
    if raw is None:
        return NotifySettings()
    if not isinstance(raw, dict):
        raise ConfigError(path, "must be a table", field="notify")
    problems = Problems()
    for key, value in raw.items():
        problems.keep(_notify_field, key, value, path=path)
    problems.raise_found()
    return NotifySettings(**raw)


def _notify_field(key: str, value: Any, *, path: object) -> None:
    """ConfigError when `[notify] key = value` is wrong."""
    allowed = {"command", "webhook", "heartbeat_url"}
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


def heartbeat(settings: NotifySettings, stage: str, report: dict[str, Any] | None = None) -> None:
    """`start`, `success` or `fail`, for cron monitors; `report` (a run report's JSON) gives
    the end pings their body, the run's summary (`run_summary`). Never raises."""
    if not settings.heartbeat_url:
        return
    url = settings.heartbeat_url.rstrip("/")
    if stage != "success":
        url = f"{url}/{stage}"
    hide = (settings.webhook, settings.heartbeat_url, settings.command)
    body = run_summary(report, hide=hide) if report is not None else ""
    problem = _post(url, body, content_type="text/plain; charset=utf-8")
    if problem:
        log.warning("heartbeat ping (%s): %s", stage, problem)


def run_summary(report: dict[str, Any], *, hide: tuple[str | None, ...] = ()) -> str:
    """A run report as the lines a person reads: a headline, then each decision, episode made,
    note, hold and error, the last `SUMMARY_LINES` of them. Anything that looks like a key,
    token or password, the values of environment variables named like one and each string in
    `hide` (the notifier's own addresses) are masked; control characters are not printed."""
    from .decisions import decision_words

    lines = [decision_words(decision) for decision in report["decisions"]]
    lines += [f"made episode {episode}" for episode in report["made"]]
    lines += [f"note: {note}" for note in report["notes"]]
    lines += [f"tried again later: {owed}" for owed in report.get("owed", [])]
    if report["held"]:
        lines.append(f"POSTING IS HELD: {report['held']}")
    lines += [f"error: {error}" for error in report["errors"]]
    if len(lines) > SUMMARY_LINES:
        left_out = len(lines) - SUMMARY_LINES + 1
        lines = [f"({left_out} earlier lines: see logs/run.log)", *lines[-SUMMARY_LINES + 1 :]]
    errors = len(report["errors"])
    headline = (
        f"autoretto run-due {report['run_id']} at {report['now']}: "
        f"{_count(report['channels'], 'channel')} checked, "
        f"{_count(len(report['decisions']), 'decision')}, {_count(errors, 'error')}"
        + (f", {_count(len(report['sent']), 'request')} sent" if report.get("sent") else "")
        + (", posting held" if report["held"] else "")
    )
    secrets = _secrets(hide)
    return "".join(_clean(line, secrets) + "\n" for line in [headline, *lines])


def _count(number: int, word: str) -> str:
    return f"{number} {word}" if number == 1 else f"{number} {word}s"


def _clean(line: str, secrets: tuple[str, ...]) -> str:
    from .ffmpeg import mask_secrets  # the one masking rule; imported only when a ping is sent

    line = ANSI_ESCAPE.sub("", line)
    line = "".join(c if c.isprintable() else " " for c in line)  # one line, no control bytes
    for secret in secrets:
        line = line.replace(secret, "***")
    line = mask_secrets(line)
    return line if len(line) <= LINE_CHARACTERS else line[: LINE_CHARACTERS - 1] + "…"


def _secrets(hide: tuple[str | None, ...]) -> tuple[str, ...]:
    """`hide` and the values of environment variables named like a secret (API keys, app
    secrets, tokens, cookies), longest first so a secret that holds another is masked whole;
    values shorter than 6 characters ("1", "yes") are no secret and would mask plain words."""
    found = set(hide) | {v for name, v in os.environ.items() if SECRET_NAME.search(name)}
    return tuple(sorted((v for v in found if v and len(v) >= 6), key=len, reverse=True))


def _post(url: str, body: str, *, content_type: str = "application/json") -> str | None:
    import requests

    try:
        answer = requests.post(
            url,
            data=body.encode("utf-8"),
            headers={"Content-Type": content_type},
            timeout=TIMEOUT_SECONDS,
        )
    except requests.RequestException as error:
        return type(error).__name__  # the message would show the URL
    if answer.status_code >= 400:
        return f"HTTP {answer.status_code}"
    return None
