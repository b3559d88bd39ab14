"""Texts a platform takes: how its limits are measured, and fitting a text inside them.

A platform class declares its texts (`Platform.text_fields`: field -> TextField); the pipeline
fits an episode's copy through the class (`Platform.fit_texts`, `Platform.text_problems`).
Limits come from PLATFORMS.md; where a platform publishes none (Facebook Reels caption,
LinkedIn title) a conservative limit is used. Bluesky counts graphemes; we count code points,
which are never fewer, so a fitted text is always within the limit.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

ELLIPSIS = "…"
URL = re.compile(r"https?://\S+")

Measure = Callable[[str], int]
#: (unit in words, how it is measured, the most allowed)
Limit = tuple[str, Measure, int]


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
    return 23 * len(URL.findall(text)) + sum(_x_weight(c) for c in URL.sub("", text))


def threads_length(text: str) -> int:
    """What Threads counts against its 500: a character one, an emoji its UTF-8 bytes."""
    # "emojis count by their UTF-8 bytes" (https://developers.facebook.com/documentation/
    # threads/posts) names no list of emoji: every character from U+2000 on (where symbols and
    # emoji begin) counts its bytes, so a text fits whichever ones Threads means.
    return sum(len(c.encode("utf-8")) if ord(c) >= 0x2000 else 1 for c in text)


def linkedin_escaped(text: str) -> int:
    """Length after escaping LinkedIn's "little text" reserved characters."""
    return len(text) + sum(1 for c in text if c in "()[]{}<>@|#*_~\\")


#: a hashtag (not one glued to a word): what a caption's cap counts and `fit_caption` keeps
#: within it; in "##tag" that is "#tag"
HASHTAG = re.compile(r"(?<!\w)#\w+")


def hashtag_count(text: str) -> int:
    return len(HASHTAG.findall(text))


def mention_count(text: str) -> int:
    return len(re.findall(r"(?<!\w)@\w+", text))


def clean(text: str) -> str:
    """Normalise to NFC and drop control characters other than newlines and tabs."""
    text = unicodedata.normalize("NFC", text)
    return "".join(c for c in text if c in "\n\t" or unicodedata.category(c)[0] != "C")


def no_brackets(text: str) -> str:
    return text.replace("<", "‹").replace(">", "›")


def fit(text: str, measures: list[Limit] | tuple[Limit, ...], *, keep_end: str = "") -> str:
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


@dataclass(frozen=True)
class Copy:
    """An episode's copy, cleaned, that every platform's texts are made from."""

    title: str
    description: str
    short: str
    tags: tuple[str, ...]
    disclosure: str  # a line saying what was generated, or ""
    ai_generated: bool

    def source(self, name: str) -> tuple[str, str]:
        """(text, end kept whole) of a TextField's `source`: the disclosure ends every
        caption (after a blank line in a description, a space in a short text)."""
        if name == "title":
            return self.title, ""
        if name == "artwork":
            return f"Artwork for {self.title}", ""
        if name == "description":
            return self.description, f"\n\n{self.disclosure}" if self.disclosure else ""
        if name == "short":
            return self.short, f" {self.disclosure}" if self.disclosure else ""
        raise ValueError(f"no copy named {name!r}")


@dataclass(frozen=True)
class TextField:
    """One text a post carries: the copy it is made from (`title`, `description`, `short` or
    `artwork`, see Copy.source) and the platform's limits on it."""

    source: str
    limits: tuple[Limit, ...] = ()
    no_angle_brackets: bool = False  # the platform refuses < and > in it

    def fitted(self, copy: Copy) -> str:
        text, end = copy.source(self.source)
        if self.no_angle_brackets:
            text, end = no_brackets(text), no_brackets(end)
        return fit(text, self.limits, keep_end=end)

    def problems(self, platform: str, field: str, value: object) -> list[str]:
        """How `value` breaks this field's limits, in plain words (empty = fine)."""
        if not isinstance(value, str) or not value.strip():
            return [f"{platform} {field} is empty"]
        found = [
            f"{platform} {field} is {measure(value)} {unit} (limit {limit})"
            for unit, measure, limit in self.limits
            if measure(value) > limit
        ]
        if self.no_angle_brackets and re.search("[<>]", value):
            found.append(f"{platform} {field} contains < or >")
        return found
