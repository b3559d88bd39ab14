"""An episode's copy in other languages, ready to post by hand (`autoretto translate`).

Gemini translates the title, description, short text and tags (one request per language,
answered as JSON matching a schema); each language is then fitted to every platform's limits
by `pipeline.textfit`, stored in `translations`, and written next to the video as
`texts.<language>.json` (for scripts) and `texts.<language>.txt` (for a person).

Where the creator connected YouTube with "allow edits" and the episode is on YouTube, the
translated titles and descriptions are also set on the video as its localizations
(`platforms.youtube_edits`). Without that consent nothing already on YouTube is changed: not
one request is sent.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .clock import iso
from .errors import AutorettoError, UsageError
from .ledger import posts as ledger
from .ledger.store import dumps, loads

if TYPE_CHECKING:
    from .config import ChannelConfig, Config
    from .ledger.store import Store as Database

LANGUAGE_TAG = re.compile(r"^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$")
MAX_LANGUAGES = 30
DISCLOSURE_START = "AI-generated content"


def language_tag(text: str) -> str:
    """`text` as a BCP-47 tag in its usual spelling (de, pt-BR, zh-Hans); UsageError if it is
    not one."""
    cleaned = text.strip().replace("_", "-")
    if not LANGUAGE_TAG.match(cleaned):
        raise UsageError(
            f'"{text}" is not a language tag; write tags such as de, es, pt-BR (BCP-47)'
        )
    first, *rest = cleaned.split("-")
    parts = [first.lower()]
    for part in rest:
        if len(part) == 2 and part.isalpha():
            parts.append(part.upper())  # region
        elif len(part) == 4 and part.isalpha():
            parts.append(part.title())  # script
        else:
            parts.append(part.lower())
    return "-".join(parts)


def parse_languages(text: str | list[str] | tuple[str, ...]) -> list[str]:
    """`"de, es,pt-BR"` (or a list) → ["de", "es", "pt-BR"]: checked, in order, once each."""
    items = text.split(",") if isinstance(text, str) else list(text)
    languages: list[str] = []
    for item in items:
        if not item.strip():
            continue
        tag = language_tag(item)
        if tag not in languages:
            languages.append(tag)
    if not languages:
        raise UsageError("--to: name at least one language, e.g. --to de,es")
    if len(languages) > MAX_LANGUAGES:
        raise UsageError(f"--to: at most {MAX_LANGUAGES} languages at a time")
    return languages


# -- what an episode says ----------------------------------------------------------------


def episode_disclosure(episode: dict[str, Any]) -> str:
    """The AI-content disclosure line an episode's texts must carry ("" when nothing came
    from a generator): rebuilt from where its audio and artwork came from, else found in its
    texts."""
    from .pipeline.copy import disclosure_line

    if not episode.get("ai_generated"):
        return ""
    source = loads(episode.get("source"), {}) or {}
    audio = "Suno" if source.get("audio") == "suno" else None
    artwork = "Gemini" if str(source.get("artwork") or "").startswith("gemini") else None
    line = disclosure_line(audio, artwork)
    if line:
        return line
    for text in _strings(loads(episode.get("texts"), {})):
        for candidate in text.splitlines():
            if candidate.strip().startswith(DISCLOSURE_START):
                return candidate.strip()
    return f"{DISCLOSURE_START}: made with generative AI."


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list | tuple):
        return [text for item in value for text in _strings(item)]
    return []


def episode_folder(config: Config, episode: dict[str, Any]) -> Path:
    """Where the episode's video lives (its texts go next to it)."""
    videos = loads(episode.get("videos"), {}) or {}
    for name in ("landscape", "vertical", *videos):
        path = videos.get(name)
        if path and Path(path).parent.is_dir():
            return Path(path).parent
    return config.paths.media / "episodes" / str(episode["id"])


def _source_copy(config: Config, episode: dict[str, Any], disclosure: str) -> dict[str, Any]:
    """The episode's own copy: title, description, short text, tags."""
    title = episode.get("title") or ""
    description = episode.get("description") or ""
    tags = [tag for tag in loads(episode.get("tags"), []) if isinstance(tag, str)]
    short = ""
    made = config.paths.media / "episodes" / str(episode["id"]) / "copy.json"
    try:
        short = str(json.loads(made.read_text(encoding="utf-8")).get("short") or "")
    except (OSError, ValueError, AttributeError):
        short = ""
    if not short:
        from .pipeline.textfit import short_text_platforms

        texts = loads(episode.get("texts"), {}) or {}
        for platform in short_text_platforms():
            text = (texts.get(platform) or {}).get("text")
            if isinstance(text, str) and text.strip():
                short = text.replace(disclosure, "").strip() if disclosure else text.strip()
                break
    return {"title": title, "description": description, "short": short or title, "tags": tags}


# -- the translation itself --------------------------------------------------------------


def translation_schema(has_description: bool) -> dict[str, Any]:
    """The JSON the model must answer with (a field it may leave empty is not required)."""
    required = ["title", "short_text", "source_language"]
    if has_description:
        required.insert(1, "description")
    return {
        "type": "OBJECT",
        "properties": {
            "title": {"type": "STRING", "description": "the translated title"},
            "description": {"type": "STRING", "description": "the translated description"},
            "short_text": {"type": "STRING", "description": "the translated social post"},
            "tags": {
                "type": "ARRAY",
                "items": {"type": "STRING"},
                "description": "the tags, translated where a word has a common translation",
            },
            "source_language": {
                "type": "STRING",
                "description": "BCP-47 tag of the language the original is written in",
            },
        },
        "required": required,
    }


def translation_prompt(copy: dict[str, Any], language: str) -> str:
    original = {
        "title": copy["title"],
        "description": copy["description"],
        "short_text": copy["short"],
        "tags": copy["tags"],
    }
    return (
        "Translate the release copy of an instrumental music video for viewers who read "
        f"this language. Target language: {language} (a BCP-47 tag). Write it as a native "
        "speaker would, not word for word. Keep the line breaks and paragraphs, every "
        "timestamp (like 0:00 or 1:02:03) exactly as it is at the start of its line, names of "
        "tracks and people, numbers and BPM. Keep hashtags as hashtags; translate one only "
        "where a common hashtag exists in the target language. No angle brackets, no links, "
        "no added text. Also say in source_language which language the original is in.\n\n"
        "The original, as JSON:\n" + json.dumps(original, ensure_ascii=False, indent=1)
    )


def _translated_copy(answer: dict[str, Any], copy: dict[str, Any]) -> dict[str, Any]:
    tags = [" ".join(str(tag).split()) for tag in answer.get("tags") or [] if str(tag).strip()]
    return {
        "title": " ".join(str(answer.get("title") or "").split()),
        "description": str(answer.get("description") or "").strip(),
        "short": " ".join(str(answer.get("short_text") or "").split()),
        "tags": tags or list(copy["tags"]),
    }


def _same_language(source: str | None, target: str) -> bool:
    """Is `target` the language the copy is already in? (en-US is en; en is not en-GB.)"""
    if not source:
        return False
    if source.lower() == target.lower():
        return True
    return "-" not in target and source.split("-")[0].lower() == target.lower()


def _refusal(channel: ChannelConfig | None, key_env: str, *, needs_key: bool) -> str | None:
    """Why this home cannot translate, in one sentence saying what to set; None when it can."""
    if channel is not None and channel.produces and channel.pipeline.copy == "template":
        return (
            f'channel "{channel.name}" writes its copy offline (copy = "template"); to '
            f'translate, set copy = "gemini" in its [channels.pipeline] and {key_env} '
            "(a Gemini API key)"
        )
    if needs_key and not os.environ.get(key_env):
        return (
            f"translating needs Gemini and no key is set: set {key_env} to a Gemini API key "
            "and run it again (nothing was changed)"
        )
    return None


def translate(
    config: Config,
    db: Database,
    episode_id: int,
    languages: str | list[str] | tuple[str, ...],
    now: datetime,
    *,
    source_language: str | None = None,
    dry_run: bool = False,
    client: Any = None,
) -> dict[str, Any]:
    """Translate episode `episode_id`'s copy into each of `languages` and store it.

    Every language's texts are fitted to every platform's limits, saved in `translations`
    and written next to the video. When the episode is on YouTube and the creator connected
    YouTube with "allow edits", the titles and descriptions are also set on the video as its
    localizations (`dry_run`: only said, nothing sent to YouTube). Returns what was done:
    `languages` (one entry per language made), `errors` (languages that failed, with why),
    `youtube` (what happened there) and `notes`. Raises AutorettoError before anything is
    written when it cannot translate at all (no Gemini key, a template-copy channel, an
    unknown episode, a refused key).
    """
    from .episodes import get_episode
    from .pipeline.errors import ProviderUnavailable
    from .pipeline.textfit import KNOWN_PLATFORMS, build_texts, check_texts

    targets = parse_languages(languages)
    source_tag = language_tag(source_language) if source_language else None
    episode = get_episode(db, episode_id)
    if episode["state"] == "making":
        raise UsageError(f"episode {episode_id} is still being made; translate it once it is done")
    channel = _channel(config, episode["channel"])
    gemini = config.providers.gemini
    refusal = _refusal(channel, gemini.api_key_env, needs_key=client is None)
    if refusal:
        raise AutorettoError(refusal)
    if client is None:
        from .pipeline.gemini import GeminiClient

        client = GeminiClient(gemini, os.environ.get(gemini.api_key_env))
    disclosure = episode_disclosure(episode)
    copy = _source_copy(config, episode, disclosure)
    if not copy["title"].strip():
        raise UsageError(f"episode {episode_id} has no title to translate")
    banned = tuple(channel.pipeline.banned_terms) if channel is not None else ()
    folder = episode_folder(config, episode)
    folder.mkdir(parents=True, exist_ok=True)
    made: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    notes: list[str] = []
    for language in targets:
        if _same_language(source_tag, language):
            notes.append(f"{language}: the copy is already in {source_tag}; skipped")
            continue
        try:
            answer = client.generate_json(
                translation_prompt(copy, language),
                translation_schema(bool(copy["description"].strip())),
                what=f"translating into {language}",
            )
        except ProviderUnavailable as error:
            errors.append({"language": language, "reason": str(error)})
            continue
        detected = _detected_language(answer.get("source_language"))
        if _same_language(source_tag or detected, language):
            notes.append(f"{language}: the copy is already in that language; skipped")
            continue
        translated = _translated_copy(answer, copy)
        texts = build_texts(
            platforms=KNOWN_PLATFORMS,
            title=translated["title"],
            description=translated["description"],
            short=translated["short"],
            tags=translated["tags"],
            disclosure=disclosure,
            ai_generated=bool(episode["ai_generated"]),
        )
        problems = check_texts(texts, KNOWN_PLATFORMS)
        banned_found = _banned_term(texts, banned)
        if problems or banned_found:
            reason = banned_found or "; ".join(problems)
            errors.append({"language": language, "reason": reason})
            continue
        record = {
            "source_language": source_tag or detected,
            "copy": translated,
            "platforms": texts,
        }
        origin = record["source_language"]
        heading = f"Episode {episode_id} in {language}" + (
            f" (translated from {origin})" if origin else ""
        )
        files = write_ready_texts(
            folder,
            f"texts.{language}",
            heading + f"\nVideo: {_main_video(episode) or '-'}",
            texts,
            extra={"episode_id": episode_id, "language": language, **record},
        )
        _store(db, episode_id, language, record, now)
        made.append(
            {
                "language": language,
                "title": translated["title"],
                "source_language": record["source_language"],
                "files": files,
                "platforms": list(texts),
            }
        )
    result: dict[str, Any] = {
        "episode_id": episode_id,
        "languages": made,
        "errors": errors,
    }
    localizing = localizing_platform()
    if localizing is not None:  # `youtube` (what happened there), named after the platform
        result[localizing.name] = apply_localizations(
            localizing,
            config,
            db,
            episode_id,
            now,
            source_language=source_tag or _first_source(made),
            dry_run=dry_run,
        )
    return {**result, "notes": notes, "dry_run": dry_run}


def _channel(config: Config, name: str) -> ChannelConfig | None:
    for channel in config.channels:
        if channel.name == name:
            return channel
    return None


def _detected_language(value: Any) -> str | None:
    try:
        return language_tag(str(value)) if value else None
    except UsageError:
        return None


def _first_source(made: list[dict[str, Any]]) -> str | None:
    for item in made:
        if item.get("source_language"):
            return item["source_language"]
    return None


def _main_video(episode: dict[str, Any]) -> str | None:
    videos = loads(episode.get("videos"), {}) or {}
    return videos.get("landscape") or videos.get("vertical") or next(iter(videos.values()), None)


def _banned_term(texts: dict[str, Any], banned: tuple[str, ...]) -> str | None:
    haystack = "\n".join(_strings(texts))
    for term in banned:
        if re.search(r"(?<!\w)" + re.escape(term) + r"(?!\w)", haystack, flags=re.IGNORECASE):
            return f"the translation contains the banned term {term!r}"
    return None


def _store(
    db: Database, episode_id: int, language: str, record: dict[str, Any], now: datetime
) -> None:
    # A new translation replaces the old one; it is not on YouTube until applied again.
    ledger.keep_translation(
        db, episode_id=episode_id, language=language, texts=dumps(record), now=iso(now)
    )


def translations_of(db: Database, episode_id: int) -> list[dict[str, Any]]:
    """The episode's stored translations, by language: `language`, `source_language`, `title`,
    `copy` (title, description, short, tags), `texts` (platform -> fitted fields),
    `created_at`, and `applied_at` (when they were set on YouTube, else None)."""
    found = []
    for item in ledger.translations(db, episode_id):
        record = loads(item["texts"], {}) or {}
        copy = record.get("copy") or {}
        found.append(
            {
                "language": item["language"],
                "source_language": record.get("source_language"),
                "title": copy.get("title"),
                "copy": copy,
                "texts": record.get("platforms") or {},
                "created_at": item["created_at"],
                "applied_at": item["applied_at"],
            }
        )
    return found


# -- localizations on the platform (YouTube) -------------------------------------------------


def localizing_platform() -> Any:
    """The class that sets translations on a platform's published videos (YouTube's editor, in
    the registry's EDITORS); None when there is none. `translate`'s answer names its platform."""
    from .platforms import EDITORS

    return next(iter(EDITORS.values()), None)


def apply_localizations(
    platform: Any,
    config: Config,
    db: Database,
    episode_id: int,
    now: datetime,
    *,
    source_language: str | None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """Set the episode's stored translations on its video on `platform` (an editor class, see
    `localizing_platform`), where the creator allowed edits. Returns {video_id, applied (languages),
    changed, reason, error}; `error` is set when the platform was asked and the change
    failed."""
    name, title = platform.name, platform.title
    video_id = ledger.published_platform_id(db, episode_id, name)
    answer: dict[str, Any] = {
        "video_id": video_id,
        "applied": [],
        "changed": False,
        "reason": None,
        "error": None,
    }
    if video_id is None:
        answer["reason"] = (
            f"the episode is not on {title} (yet); run translate again once it is posted to "
            "set the titles there too"
        )
        return answer
    refusal = platform.localization_refusal(db)
    if refusal:
        answer["reason"] = refusal
        return answer
    stored = translations_of(db, episode_id)
    localizations = {
        item["language"]: {
            "title": (item["texts"].get(name) or {}).get("title") or item["title"],
            "description": (item["texts"].get(name) or {}).get("description") or "",
        }
        for item in stored
    }
    if not localizations:
        answer["reason"] = "no translation is stored for this episode"
        return answer
    source_language = source_language or next(
        (item["source_language"] for item in stored if item["source_language"]), None
    )
    if dry_run:
        answer["applied"] = sorted(localizations)
        answer["reason"] = f"dry run: nothing was sent to {title}"
        return answer
    from .platforms.base import PlatformError

    try:
        outcome = platform.localize(
            config,
            db,
            answer["video_id"],
            localizations,
            default_language=source_language,
            now=now,
        )
    except PlatformError as error:
        answer["error"] = error.reason
        return answer
    answer["applied"] = outcome.languages
    answer["changed"] = outcome.changed
    answer["reason"] = outcome.reason
    if outcome.languages:
        ledger.mark_translations_applied(db, episode_id, list(outcome.languages), iso(now))
    return answer


# -- ready-to-post files -------------------------------------------------------------------


def write_ready_texts(
    folder: Path, name: str, heading: str, texts: dict[str, dict], *, extra: dict[str, Any]
) -> dict[str, str]:
    """Write `<name>.json` (`extra` plus `texts`) and `<name>.txt` (a person's copy-and-paste
    sheet, one section per platform) into `folder`, each atomically. Returns their paths."""
    json_path, text_path = folder / f"{name}.json", folder / f"{name}.txt"
    _write_atomic(
        json_path, json.dumps({**extra, "texts": texts}, ensure_ascii=False, indent=1) + "\n"
    )
    _write_atomic(text_path, render_texts(heading, texts))
    return {"json": str(json_path), "text": str(text_path)}


def _texts_title(platform: str) -> str:
    """The heading of a platform's texts on the sheet: what a person knows it by."""
    from .platforms import platform_class

    try:
        known = platform_class(platform)
    except KeyError:
        return platform
    return known.texts_title or known.title


def render_texts(heading: str, texts: dict[str, dict]) -> str:
    """The human-readable sheet: a heading, then each platform's fields."""
    lines = [heading.rstrip(), ""]
    for platform, fields in texts.items():
        lines.append(f"== {_texts_title(platform)} ==")
        for field, value in fields.items():
            if isinstance(value, bool):
                lines.append(f"{field}: {'yes' if value else 'no'}")
            elif isinstance(value, list):
                lines.append(f"{field}: {', '.join(str(item) for item in value)}")
            elif "\n" in str(value):
                lines.append(f"{field}:")
                lines.extend(str(value).splitlines())
            else:
                lines.append(f"{field}: {value}")
        lines.append("")
    return "\n".join(lines)


def _write_atomic(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
