"""What `autoretto doctor` says about the pipeline's providers.

Suno, when it is set (a base_url, or a channel with audio = "suno"): its server is asked for
the credits left (GET /api/get_limit), which also shows that it can still sign in to Suno.
Gemini, when a channel uses it (or a key is set, for translations): each model setting with
its shutdown date; a date within a month is a warning, a past one a problem.
"""

from __future__ import annotations

import os
from typing import Any

from autoretto.errors import AutorettoError


def provider_health(config: Any, today: str) -> dict[str, list]:
    """{providers: [facts per provider], problems: [sentences], warnings: [sentences]}."""
    from autoretto.pipeline.settings import model_ends

    found: dict[str, list] = {"providers": [], "problems": [], "warnings": []}
    pipelines = [channel.pipeline for channel in config.channels if channel.pipeline is not None]
    suno = config.providers.suno
    if suno.base_url or any(p.audio == "suno" for p in pipelines):
        found["providers"].append(_suno_facts(suno, found["problems"]))
    gemini = config.providers.gemini
    if os.environ.get(gemini.api_key_env) or any(
        "gemini" in (p.artwork, p.copy) for p in pipelines
    ):
        models = model_ends(gemini, today)
        found["providers"].append({"name": "gemini", "models": models})
        for entry in models:
            if entry["state"] == "ended":
                found["problems"].append(entry["message"])
            elif entry["state"] == "ending":
                found["warnings"].append(entry["message"])
    return found


def _suno_facts(suno: Any, problems: list[str]) -> dict:
    from dataclasses import replace

    from autoretto.pipeline.suno import credits_left

    facts: dict[str, Any] = {"name": "suno", "base_url": suno.base_url, "credits": None}
    try:
        # One quick try: doctor is run by a person, who can run it again.
        facts["credits"] = credits_left(
            replace(suno, attempts=1, timeout=min(suno.timeout, 15.0)),
            os.environ.get(suno.api_key_env),
        )
    except AutorettoError as error:
        problems.append(f"suno: {error}")
    return facts
