"""Each platform's text limits, how to measure them, and fitting text inside them.

Limits come from PLATFORMS.md. Where a platform publishes none (Facebook Reels caption,
LinkedIn title) a conservative limit is used. Bluesky counts graphemes; we count code
points, which are never fewer, so a fitted text is always within the limit.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

ELLIPSIS = "…"
URL = re.compile(r"https?://\S+")


def chars(text: str) -> int:
    return len(text)


def utf8_bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _x_weight(character: str) -> int:
    code = ord(character)
    light = code <= 4351 or 8192 <= code <= 8205 or 8208 <= code <= 8223 or 8242 <= code <= 8247
    return 1 if light else 2


def x_weighted(text: str) -> int:
    """X's weighted length: most Latin 1, CJK and emoji 2, every URL 23."""
    total = 0
    position = 0
    for match in URL.finditer(text):
        total += sum(_x_weight(c) for c in text[position : match.start()]) + 23
        position = match.end()
    return total + sum(_x_weight(c) for c in text[position:])


def _is_emoji(character: str) -> bool:
    code = ord(character)
    return (
        code >= 0x1F000
        or 0x2600 <= code <= 0x27BF
        or code in (0x200D, 0xFE0F)
        or 0x2B00 <= code <= 0x2BFF
    )


def threads_length(text: str) -> int:
    """Threads counts characters, except that an emoji counts its UTF-8 bytes."""
    return sum(len(c.encode("utf-8")) if _is_emoji(c) else 1 for c in text)


def linkedin_escaped(text: str) -> int:
    """Length after escaping LinkedIn's "little text" reserved characters."""
    return len(text) + sum(1 for c in text if c in "()[]{}<>@|#*_~\\")


def hashtag_count(text: str) -> int:
    return len(re.findall(r"(?<!\w)#\w+", text))


def mention_count(text: str) -> int:
    return len(re.findall(r"(?<!\w)@\w+", text))


# platform -> field -> list of (measure name, measure, limit)
Measure = Callable[[str], int]
LIMITS: dict[str, dict[str, list[tuple[str, Measure, int]]]] = {
    "youtube": {
        "title": [("characters", chars, 100)],
        "description": [("bytes", utf8_bytes, 5000)],
    },
    "facebook": {
        "title": [("characters", chars, 100)],
        "description": [("characters", chars, 2200)],
    },
    "instagram": {
        "caption": [
            ("characters", chars, 2200),
            ("hashtags", hashtag_count, 30),
            ("@-mentions", mention_count, 20),
        ],
    },
    "linkedin": {
        "title": [("characters", chars, 200)],
        "commentary": [("escaped characters", linkedin_escaped, 3000)],
    },
    "threads": {"text": [("characters", threads_length, 500)]},
    "bluesky": {"text": [("graphemes", chars, 300), ("bytes", utf8_bytes, 3000)]},
    "x": {"text": [("weighted characters", x_weighted, 280)]},
    "tiktok": {"title": [("UTF-16 units", utf16_units, 2200)]},
    "pinterest": {
        "title": [("characters", chars, 100)],
        "description": [("characters", chars, 800)],
        "alt_text": [("characters", chars, 500)],
    },
    "folder": {},
}
YOUTUBE_TAGS_LIMIT = 500
NO_ANGLE_BRACKETS = {("youtube", "title"), ("youtube", "description")}
KNOWN_PLATFORMS = tuple(LIMITS)


def youtube_tags_length(tags: list[str]) -> int:
    """YouTube's count: the tags, the commas between them, quotes around spaced tags."""
    if not tags:
        return 0
    return sum(len(tag) + (2 if " " in tag else 0) for tag in tags) + len(tags) - 1


def clean(text: str) -> str:
    """Normalise to NFC and drop control characters other than newlines and tabs."""
    text = unicodedata.normalize("NFC", text)
    return "".join(c for c in text if c in "\n\t" or unicodedata.category(c)[0] != "C")


def fit(text: str, measures: list[tuple[str, Measure, int]], *, keep_end: str = "") -> str:
    """`text` shortened (at a word where possible, with an ellipsis) so that
    `text + keep_end` is within every limit; `keep_end` is never cut."""

    def fits(candidate: str) -> bool:
        return all(measure(candidate + keep_end) <= limit for _, measure, limit in measures)

    text = text.strip()
    if fits(text):
        return text + keep_end
    if not fits(""):
        keep_end = ""  # the part to keep is itself too long: give it up
        if fits(text):
            return text
    low, high = 0, len(text)
    while low < high:  # longest prefix (+ ellipsis) that fits
        middle = (low + high + 1) // 2
        if fits(text[:middle].rstrip() + ELLIPSIS):
            low = middle
        else:
            high = middle - 1
    prefix = text[:low]
    cut = prefix.rfind(" ")
    if cut >= max(1, low // 2):
        prefix = prefix[:cut]
    prefix = prefix.rstrip(" ,.;:-–—\n")
    return (prefix + ELLIPSIS if prefix else "") + keep_end


def fit_tags(tags: list[str]) -> list[str]:
    """YouTube tags: no angle brackets or commas, no duplicates, 500 characters in all."""
    kept: list[str] = []
    seen: set[str] = set()
    for tag in tags:
        tag = " ".join(re.sub(r"[<>,\"]", " ", clean(tag)).split())[:100]
        if not tag or tag.lower() in seen:
            continue
        if youtube_tags_length([*kept, tag]) > YOUTUBE_TAGS_LIMIT:
            continue
        kept.append(tag)
        seen.add(tag.lower())
    return kept


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
    every caption; YouTube and TikTok also get their AI-content flags.
    """
    title, description, short = clean(title), clean(description), clean(short)
    tail = f"\n\n{disclosure}" if disclosure else ""
    short_tail = f" {disclosure}" if disclosure else ""
    texts: dict[str, dict] = {}
    for platform in platforms:
        limits = LIMITS.get(platform, {})

        def fitted(field: str, text: str, end: str = "", _p: str = platform, _l=limits) -> str:
            if (_p, field) in NO_ANGLE_BRACKETS:
                text, end = _no_brackets(text), _no_brackets(end)
            return fit(text, _l.get(field, []), keep_end=end)

        if platform == "youtube":
            texts[platform] = {
                "title": fitted("title", title),
                "description": fitted("description", description, tail),
                "tags": fit_tags(tags),
                "contains_synthetic_media": ai_generated,
            }
        elif platform == "facebook":
            texts[platform] = {
                "title": fitted("title", title),
                "description": fitted("description", short, short_tail),
            }
        elif platform == "instagram":
            texts[platform] = {"caption": fitted("caption", description, tail)}
        elif platform == "linkedin":
            texts[platform] = {
                "title": fitted("title", title),
                "commentary": fitted("commentary", description, tail),
            }
        elif platform in ("threads", "bluesky", "x"):
            texts[platform] = {"text": fitted("text", short, short_tail)}
        elif platform == "tiktok":
            texts[platform] = {"title": fitted("title", short, short_tail), "is_aigc": ai_generated}
        elif platform == "pinterest":
            texts[platform] = {
                "title": fitted("title", title),
                "description": fitted("description", short, short_tail),
                "alt_text": fitted("alt_text", f"Artwork for {title}"),
            }
        else:  # the folder outbox and anything without published limits
            texts[platform] = {
                "title": title,
                "description": description + tail,
                "tags": list(tags),
            }
    return texts


def _no_brackets(text: str) -> str:
    return text.replace("<", "‹").replace(">", "›")


def check_texts(texts: dict[str, dict], platforms: tuple[str, ...]) -> list[str]:
    """Every way the texts break a chosen platform's limits, in plain words (empty = fine)."""
    problems = []
    for platform in platforms:
        fields_ = texts.get(platform)
        if fields_ is None:
            problems.append(f"{platform}: no text was made")
            continue
        for field, rules in LIMITS.get(platform, {}).items():
            value = fields_.get(field)
            if not isinstance(value, str) or not value.strip():
                problems.append(f"{platform} {field} is empty")
                continue
            for unit, measure, limit in rules:
                if measure(value) > limit:
                    problems.append(
                        f"{platform} {field} is {measure(value)} {unit} (limit {limit})"
                    )
            if (platform, field) in NO_ANGLE_BRACKETS and re.search("[<>]", value):
                problems.append(f"{platform} {field} contains < or >")
        if platform == "youtube":
            length = youtube_tags_length(fields_.get("tags", []))
            if length > YOUTUBE_TAGS_LIMIT:
                problems.append(f"youtube tags are {length} characters (limit 500)")
    return problems
