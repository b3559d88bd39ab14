"""Changes to videos already on YouTube, made only where the creator allowed edits.

`autoretto connect youtube --allow-edits` asks Google for the youtube.force-ssl scope and keeps
the consent on the account (meta `edits` and the granted `scopes`). Without it
`localization_refusal` says why and not one request is sent; uploads never need it.

`set_localizations` sets translated titles and descriptions on a published video, by two calls
of YouTubePlatform's call path (counted before they are made, passing errors retried):

1. videos.list(part=snippet,localizations) reads what is there (1 unit), because
   videos.update replaces every mutable property of each part it is given.
2. videos.update(part=localizations) with the existing localizations merged with the new ones
   (50 units). A video without `snippet.defaultLanguage` cannot take localizations, so then the
   snippet goes too, as it was read (title, description, tags, category) plus the language.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .. import accounts
from .base import LimitReached, NeedsPerson, PlatformContext, PlatformError
from .youtube import (
    NAME,
    SCOPE_EDIT,
    UNITS_USED,
    YouTubePlatform,
    fit_description,
    fit_title,
)

if TYPE_CHECKING:
    from ..config import Config
    from ..ledger.store import Store as Database

#: scopes that let an app change a video (PLATFORMS.md §1: videos.update)
EDIT_SCOPES = frozenset(
    {
        SCOPE_EDIT,
        "https://www.googleapis.com/auth/youtube",
        "https://www.googleapis.com/auth/youtubepartner",
    }
)
UPDATE_COST = 50  # videos.update, in the shared daily units
#: snippet fields sent back unchanged when the default language has to be set
KEPT_SNIPPET_FIELDS = ("title", "description", "tags", "categoryId", "defaultAudioLanguage")
NO_CONSENT = (
    "YouTube was connected without --allow-edits, so nothing already on YouTube is changed; "
    "to set the translated titles there, connect again with "
    "`autoretto connect youtube --allow-edits`"
)


@dataclass(frozen=True)
class LocalizationOutcome:
    languages: list[str]  # the languages now on the video as given
    changed: bool  # False: they were already there, no videos.update was sent
    reason: str


class YouTubeEditor(YouTubePlatform):
    """The YouTube platform's call path (quota, retries, errors) used to change a video."""

    @classmethod
    def localization_refusal(cls, db: Database) -> str | None:
        """None when the account is connected, with --allow-edits, and holds an edit scope."""
        account = accounts.load_account(db, NAME)
        if account is None:
            return "YouTube is not connected, so nothing on YouTube was changed"
        if account.state != "connected":
            return f"{account.reason or accounts.reconnect_hint(NAME)}; nothing on YouTube changed"
        granted = set(account.meta.get("scopes") or ())
        if account.meta.get("edits") is False or not granted & EDIT_SCOPES:
            return NO_CONSENT
        return None

    @classmethod
    def localize(
        cls,
        config: Config,
        db: Database,
        post_id: str,
        localizations: dict[str, dict[str, str]],
        *,
        default_language: str | None,
        now: datetime,
    ) -> LocalizationOutcome:
        """Keeps the localizations already there; `default_language` (the original copy's) is
        set only on a video that has none. NeedsPerson without a request when edits are not
        allowed."""
        refusal = cls.localization_refusal(db)
        if refusal:
            raise NeedsPerson(refusal)
        # Without its [platforms.youtube] table the editor has every default (Platform.__init__).
        settings = config.platforms.get(NAME)
        editor = cls(PlatformContext(NAME, settings, config.paths, db, now, config.retry))
        return editor.set_localizations(post_id, localizations, default_language=default_language)

    def set_localizations(
        self,
        video_id: str,
        localizations: dict[str, dict[str, str]],
        *,
        default_language: str | None,
    ) -> LocalizationOutcome:
        if self._room(self.account(), "units") < self.settings["list_cost"] + UPDATE_COST:
            raise LimitReached(UNITS_USED)  # before the read, so no unit is spent for nothing
        items = self._list("videos", part="snippet,localizations", id=video_id).get("items") or []
        if not items:
            raise NeedsPerson(
                f"video {video_id} is not on the connected YouTube channel; nothing was changed"
            )
        video = items[0]
        snippet = video.get("snippet") or {}
        current = video.get("localizations") or {}
        default = snippet.get("defaultLanguage")
        new_default = None
        if not default:
            if not default_language:
                raise NeedsPerson(
                    f"video {video_id} has no default language on YouTube and the language of "
                    "the original copy is unknown; run translate again with --from LANGUAGE"
                )
            default = new_default = default_language
        wanted = {
            language: {
                "title": fit_title(texts.get("title") or ""),
                "description": fit_description(texts.get("description") or ""),
            }
            for language, texts in localizations.items()
            if language.lower() != default.lower() and (texts.get("title") or "").strip()
        }
        merged = {**current, **wanted}
        languages = sorted(wanted)
        if merged == current and new_default is None:
            return LocalizationOutcome(languages, False, "already set on YouTube")
        body: dict[str, Any] = {"id": video_id, "localizations": merged}
        part = "localizations"
        said = f"set {', '.join(languages)} on YouTube video {video_id}"
        if new_default is not None:
            kept = {key: snippet[key] for key in KEPT_SNIPPET_FIELDS if key in snippet}
            body["snippet"] = {**kept, "defaultLanguage": new_default}
            part = "snippet,localizations"
            said += f" (its default language is now {new_default})"
        self._call(
            lambda api: api.service.videos().update(part=part, body=body).execute(),
            cost=UPDATE_COST,
        )
        return LocalizationOutcome(languages, True, said)

    def classify(self, response: Any, *, sends: bool = False) -> PlatformError:
        # A missing edit permission is about edits only: unlike an upload's, it must not mark
        # the account for reconnecting, which would stop every upload too.
        if self.problem(response)[0] in ("insufficientPermissions", "forbidden"):
            return NeedsPerson(
                "YouTube did not allow changing the video (insufficientPermissions); connect "
                "again with `autoretto connect youtube --allow-edits` and leave every box ticked"
            )
        return super().classify(response, sends=sends)
