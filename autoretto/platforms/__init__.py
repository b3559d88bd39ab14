"""The platform registry: one explicit table, in posting order (ARCHITECTURE.md §5), whatever
order the config lists a slot's platforms in; TikTok and Pinterest are never on a slot (see
autoretto/manual_post.py). An adapter is imported on first use, so `status` and an idle
`run-due` load only the ones they touch.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Platform


class Registry(MutableMapping[str, "type[Platform]"]):
    """name -> Platform class, in posting order; a class is imported on first use."""

    def __init__(self, paths: dict[str, str]) -> None:
        self._paths = dict(paths)
        self._loaded: dict[str, type[Platform]] = {}

    def __getitem__(self, name: str) -> type[Platform]:
        if name not in self._loaded:
            module, _, attribute = self._paths[name].partition(":")
            self._loaded[name] = getattr(import_module(module, __name__), attribute)
        return self._loaded[name]

    def __setitem__(self, name: str, cls: type[Platform]) -> None:  # tests register fakes
        self._paths.setdefault(name, f"{cls.__module__}:{cls.__name__}")
        self._loaded[name] = cls

    def __delitem__(self, name: str) -> None:
        del self._paths[name]
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __contains__(self, name: object) -> bool:
        return name in self._paths


REGISTRY = Registry(
    {
        "youtube": ".youtube:YouTubePlatform",
        "facebook": ".facebook:FacebookPlatform",
        "instagram": ".instagram:InstagramPlatform",
        "linkedin": ".linkedin:LinkedInPlatform",
        "threads": ".threads:ThreadsPlatform",
        "bluesky": ".bluesky:BlueskyPlatform",
        "x": ".x:XPlatform",
        "webhook": ".webhook:WebhookPlatform",
        "folder": ".folder:FolderPlatform",
    }
)

# Posted only by a person, from a terminal screen (`autoretto post NAME EPISODE`).
MANUAL_PLATFORMS = Registry(
    {"tiktok": ".tiktok:TikTokPlatform", "pinterest": ".pinterest:PinterestPlatform"}
)

#: the help of `autoretto post NAME` for each of them: data here, so that the command is listed
#: and its help shown without importing the adapter (commands/by_hand.py)
POST_HELP = {
    "tiktok": """Post an episode to TikTok yourself, from an interactive screen.

    Shows who you post as, the video, and asks for the title, who can see it (nothing is
    chosen for you), comments / Duet / Stitch and commercial content disclosure, then asks you
    to confirm after TikTok's Music Usage Confirmation. Needs a terminal.

    Example: autoretto post tiktok 42
    """,
    "pinterest": """Pin an episode to Pinterest yourself, from an interactive screen.

    Lists your boards to choose from and asks for the title, description, link, alt text and
    the cover frame (seconds into the video). Off until [platforms.pinterest] approved = true.
    Needs a terminal.

    Example: autoretto post pinterest 42
    """,
}


# What changes posts already on a platform (translations set on a published video): a class of
# its own beside the posting one, with the call path's other meanings of an error.
EDITORS = Registry({"youtube": ".youtube_edits:YouTubeEditor"})


def platform_class(name: str) -> type[Platform]:
    """The class of any platform, slot or manual; KeyError when there is none."""
    return REGISTRY[name] if name in REGISTRY else MANUAL_PLATFORMS[name]


class ConfigFields:
    """config.PlatformFields of the registry: its names read afresh (tests register fakes)."""

    @property
    def slot_names(self) -> tuple[str, ...]:
        return tuple(REGISTRY)

    @property
    def manual_names(self) -> tuple[str, ...]:
        return tuple(MANUAL_PLATFORMS)

    def parse_settings(self, name: str, table: dict[str, Any], *, path: Path, paths: Any) -> Any:
        return platform_class(name).parse_settings(table, path=path, paths=paths)

    def carousel_note(self, name: str) -> str | None:
        found = platform_class(name)
        return None if found.carousel is not None else found.carousel_note


FIELDS = ConfigFields()


def every_class() -> Iterator[type[Platform]]:
    """Every platform's class, slot ones in posting order, then the manual ones."""
    for registry in (REGISTRY, MANUAL_PLATFORMS):
        yield from registry.values()


def declaring(fact: str) -> type[Platform] | None:
    """The first platform (in posting order) whose class declares `fact` (a class attribute
    such as `names_episode`) true; None when none does."""
    return next((cls for cls in every_class() if getattr(cls, fact)), None)


def limits_reports(db: Any, moment: Any, settings: dict[str, Any]) -> dict[str, dict]:
    """name -> what `autoretto limits` shows of it, for each platform that has limits to
    show; `settings` are the config's `[platforms.NAME]` tables."""
    return {
        cls.name: report
        for cls in every_class()
        if (report := cls.limits_report(db, moment, settings.get(cls.name))) is not None
    }


def class_or_base(name: str) -> type[Platform]:
    """The class of a platform; the base (the whole copy as its text, no flag) for a name
    without one."""
    try:
        return platform_class(name)
    except KeyError:
        from .base import Platform

        return Platform
