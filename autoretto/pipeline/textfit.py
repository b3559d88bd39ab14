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
__all__ = [
    "build_texts",
    "check_texts",
    "episode_title",
    "fit",
    "hashtags",
    "short_text_platforms",
    "title_limits",
    "utf8_bytes",
    "x_weighted",
]


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


def _naming_class() -> Any:
    """The class of the platform whose fitted title is the episode's own title."""
    from autoretto.platforms import declaring

    return declaring("names_episode")


def episode_title(texts: dict[str, dict]) -> str | None:
    """The episode's own title in `texts`: the fitted title of the platform that names the
    episode (the title of its video page), None when `texts` have none for it."""
    cls = _naming_class()
    title = (texts.get(cls.name) or {}).get("title") if cls is not None else None
    return title if isinstance(title, str) and title else None


def title_limits() -> tuple[Any, ...]:
    """The limits of that platform's title (none when no platform names episodes)."""
    cls = _naming_class()
    return cls.text_fields["title"].limits if cls is not None else ()


def short_text_platforms() -> tuple[str, ...]:
    """The platforms whose post is the short text itself (a `text` made from it), in posting
    order: where a stored short text is read back from."""
    return tuple(
        name
        for name, cls in _text_platforms().items()
        if (spec := (cls.text_fields or {}).get("text")) is not None and spec.source == "short"
    )
