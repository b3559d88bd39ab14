"""Ready-to-post texts for each platform, fitted to the limits its class declares.

A platform's texts, what each is made from and how its limits are measured, are facts on the
platform class (`Platform.text_fields`, see autoretto/platforms/text.py); this module makes them
from an episode's copy for the platforms chosen and checks them.
"""

from __future__ import annotations

import re
from typing import Any

from autoretto.platforms.text import Copy, clean, fit, utf8_bytes, x_weighted

# re-exported: the measures and the fitting that callers of this module use
__all__ = ["build_texts", "check_texts", "fit", "hashtags", "utf8_bytes", "x_weighted"]


def _text_platforms() -> dict[str, Any]:
    """name -> class of every platform that takes texts, in the registries' order."""
    from autoretto.platforms import MANUAL_PLATFORMS, REGISTRY

    return {
        name: registry[name]
        for registry in (REGISTRY, MANUAL_PLATFORMS)
        for name in registry
        if registry[name].text_fields is not None
    }


def __getattr__(name: str) -> Any:
    # KNOWN_PLATFORMS (every platform that takes texts) and LIMITS (platform -> field -> its
    # limits) are read from the platform classes when first asked for: importing this module
    # imports no adapter.
    if name == "KNOWN_PLATFORMS":
        return tuple(_text_platforms())
    if name == "LIMITS":
        return {
            platform: {field: list(spec.limits) for field, spec in cls.text_fields.items()}
            for platform, cls in _text_platforms().items()
        }
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def hashtags(tags: list[str], limit: int = 8) -> str:
    words = []
    for tag in tags:
        word = re.sub(r"\W", "", tag.title() if " " in tag else tag)
        if word and f"#{word}" not in words:
            words.append(f"#{word}")
    return " ".join(words[:limit])


def build_texts(
    *,
    platforms: tuple[str, ...],
    title: str,
    description: str,
    short: str,
    tags: list[str],
    disclosure: str,
    ai_generated: bool,
) -> dict[str, dict]:
    """Ready-to-post text for each platform, fitted to its limits.

    `disclosure` (a line saying what was generated, or "") is kept whole at the end of
    every caption; a platform that asks for an AI-content flag also gets it.
    """
    copy = Copy(
        title=clean(title),
        description=clean(description),
        short=clean(short),
        tags=tuple(tags),
        disclosure=disclosure,
        ai_generated=ai_generated,
    )
    from autoretto.platforms import class_or_base

    return {platform: class_or_base(platform).fit_texts(copy) for platform in platforms}


def check_texts(texts: dict[str, dict], platforms: tuple[str, ...]) -> list[str]:
    """Every way the texts break a chosen platform's limits, in plain words (empty = fine)."""
    from autoretto.platforms import class_or_base

    problems = []
    for platform in platforms:
        fields_ = texts.get(platform)
        if fields_ is None:
            problems.append(f"{platform}: no text was made")
            continue
        problems.extend(class_or_base(platform).text_problems(fields_))
    return problems
