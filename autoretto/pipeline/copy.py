"""The copy stage: title, description, tags and a short text, then fitted per platform.

`template` fills the channel's templates from the track's facts; `gemini` asks the text
model for JSON matching a schema. Either way the result goes through textfit.
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import dataclass

from autoretto.pipeline import textfit
from autoretto.pipeline.settings import (
    DEFAULT_TITLE_TEMPLATE,
    OWN_TITLE_TEMPLATE,
    PipelineSettings,
)

_ADJECTIVES = (
    "Velvet",
    "Amber",
    "Neon",
    "Quiet",
    "Midnight",
    "Paper",
    "Golden",
    "Faded",
    "Soft",
    "Lunar",
    "Hazy",
    "Silver",
    "Slow",
    "Distant",
    "Warm",
    "Indigo",
    "Dusty",
    "Glass",
    "Sleepy",
    "Electric",
    "Crimson",
    "Hollow",
    "Pale",
    "Wild",
)
_NOUNS = (
    "Rain",
    "Streetlights",
    "Window",
    "Tape",
    "Harbor",
    "Garden",
    "Static",
    "Letters",
    "Clouds",
    "Avenue",
    "Lanterns",
    "Balcony",
    "Radio",
    "Tides",
    "Orchard",
    "Polaroids",
    "Subway",
    "Rooftops",
    "Embers",
    "Satellites",
    "Footsteps",
    "Meadow",
    "Arcade",
    "Moths",
)

COPY_SCHEMA = {
    "type": "OBJECT",
    "properties": {
        "title": {"type": "STRING", "description": "release title, at most 80 characters"},
        "description": {"type": "STRING", "description": "2-4 short paragraphs, no links"},
        "tags": {"type": "ARRAY", "items": {"type": "STRING"}, "description": "5-12 tags"},
        "short_text": {"type": "STRING", "description": "one social post, under 200 chars"},
    },
    "required": ["title", "description", "tags", "short_text"],
}


@dataclass(frozen=True)
class Copy:
    title: str
    description: str
    tags: list[str]
    short: str
    source: str  # "template" or "gemini:<model>"
    note: str | None = None  # how it came to be, when Gemini declined a prompt


def release_name(seed: int) -> str:
    """A two-word release name chosen by `seed` (e.g. "Velvet Streetlights")."""
    chooser = random.Random(seed * 7919 + 17)
    return f"{chooser.choice(_ADJECTIVES)} {chooser.choice(_NOUNS)}"


def track_facts(
    settings: PipelineSettings,
    *,
    channel: str,
    seed: int,
    tempo: float,
    key: str | None,
    duration: float,
    name: str | None,
    title: str | None = None,
    artist: str | None = None,
) -> dict[str, str]:
    """The facts a template can use ({name}, {bpm}, ...; see settings.TEMPLATE_FACTS).

    `name` is how the track is called ("Artist – Title" from its tags, else its file's
    name); `title` and `artist` are its tags' own (else the name, and the channel).
    """
    tags = default_tags(settings)
    minutes, seconds = divmod(round(duration), 60)
    prompt = " ".join(settings.prompt.split())
    name = name or release_name(seed)
    return {
        "name": name,
        "title": title or name,
        "artist": artist or channel,
        "prompt": prompt,
        "prompt_sentence": (prompt[:1].upper() + prompt[1:]).rstrip(".") + ".",
        "bpm": str(round(tempo)) if tempo else "free-tempo",
        "key": key or "an open key",
        "length": f"{minutes}:{seconds:02d}",
        "seconds": str(round(duration)),
        "channel": channel,
        "hashtags": textfit.hashtags(tags),
        "tags": ", ".join(tags),
    }


def default_tags(settings: PipelineSettings) -> list[str]:
    from_prompt = [part.strip().lower() for part in re.split(r"[,;/]", settings.prompt)]
    tags: list[str] = []
    for tag in [*settings.tags, *from_prompt]:
        if tag and tag.lower() not in (existing.lower() for existing in tags):
            tags.append(tag)
    return tags


def _fill(template: str, facts: dict[str, str]) -> str:
    return string.Formatter().vformat(template, (), facts)


def template_copy(
    settings: PipelineSettings, facts: dict[str, str], *, own_title: bool = False
) -> Copy:
    """The copy from the channel's templates. `own_title`: the track's tags carry its title,
    which is then the episode's title unless the channel set its own title_template."""
    return Copy(
        title=own_title_of(settings, facts) if own_title else _fill(settings.title_template, facts),
        description=_fill(settings.description_template, facts),
        tags=default_tags(settings),
        short=_fill(settings.short_template, facts),
        source="template",
    )


def own_title_of(settings: PipelineSettings, facts: dict[str, str]) -> str:
    """The title of a track whose tags name it: the channel's title_template when it set one,
    else the track's name ("Artist – Title")."""
    template = settings.title_template
    if template == DEFAULT_TITLE_TEMPLATE:
        template = OWN_TITLE_TEMPLATE
    return _fill(template, facts)


def gemini_copy(
    settings: PipelineSettings, facts: dict[str, str], client, *, plain: bool = False
) -> Copy:
    """Ask Gemini for the copy; tags from the config come first, then the model's.

    `plain` asks again in plainer, shorter words without the channel's own prompt, after the
    model declined the first request."""
    if plain:
        prompt = (
            f"Write short, neutral release notes for an instrumental music track at "
            f"{facts['bpm']} BPM, {facts['length']} long. Give a calm two or three word title, "
            "a description of two short sentences, 5 lowercase genre tags, and one short "
            "social post under 150 characters with two hashtags."
        )
    else:
        prompt = (
            "Write the release copy for an instrumental music video on a channel called "
            f"{facts['channel']!r}. The track: {facts['prompt']}; {facts['bpm']} BPM; "
            f"{facts['key']}; {facts['length']} long; working title {facts['name']!r}. "
            "Give a short evocative title (no quotes, no emoji, no angle brackets), a warm "
            "description of 2-4 short paragraphs without links, 5-12 lowercase tags, and one "
            "short social post under 200 characters with two or three hashtags."
        )
    answer = client.generate_json(prompt, COPY_SCHEMA)
    model_tags = [tag for tag in answer.get("tags", []) if isinstance(tag, str)]
    tags = default_tags(settings)
    for tag in model_tags:
        if tag.strip() and tag.strip().lower() not in (t.lower() for t in tags):
            tags.append(tag.strip())
    return Copy(
        title=" ".join(str(answer["title"]).split()),
        description=str(answer["description"]).strip(),
        tags=tags,
        short=" ".join(str(answer["short_text"]).split()),
        source=f"gemini:{client.settings.text_model}",
    )


def disclosure_line(audio_generator: str | None, artwork_generator: str | None) -> str:
    """The AI-content disclosure sentence, or "" when nothing came from a generator."""
    parts = []
    if audio_generator:
        parts.append(f"music generated with {audio_generator}")
    if artwork_generator:
        parts.append(f"artwork generated with {artwork_generator}")
    if not parts:
        return ""
    return "AI-generated content: " + " and ".join(parts) + "."
