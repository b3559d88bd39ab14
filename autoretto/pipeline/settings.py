"""The pipeline's part of the config: a channel's [channels.pipeline] table and [providers.*].

Parsing is strict: an unknown key or a wrong value is a ConfigError naming the file, the
channel and the field. Each field is checked on its own: ConfigProblems names every one that is
wrong (`config check` lists them all). This module imports nothing heavy; `autoretto status`
loads it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path

from autoretto.errors import ConfigError, Problems

AUDIO_SOURCES = ("synth", "folder", "suno")
# "track": the cover art embedded in the track's tags (folder tracks, `episode add` tracks);
# a track without one gets the procedural artwork, and the episode's notes say so.
ARTWORK_SOURCES = ("procedural", "gemini", "track")
COPY_SOURCES = ("template", "gemini")
STYLES = ("pulse", "zoom", "flash", "cut")

DEFAULT_TITLE_TEMPLATE = "{name} · {bpm} BPM"
DEFAULT_DESCRIPTION_TEMPLATE = (
    "{name}\n\n{prompt_sentence} {bpm} BPM in {key}, {length}.\n\n{hashtags}"
)
DEFAULT_SHORT_TEMPLATE = "{name}: {prompt}, {bpm} BPM. {hashtags}"
# A track whose tags carry its title is called by it ("Artist – Title"), not by the default
# "{name} · {bpm} BPM": the channel's own title_template, when set, still wins.
OWN_TITLE_TEMPLATE = "{name}"


@dataclass(frozen=True)
class PipelineSettings:
    """How a channel makes its episodes (the [channels.pipeline] table)."""

    audio: str = "synth"
    artwork: str = "procedural"
    copy: str = "template"
    prompt: str = "warm lofi beat, rainy night"
    style: str = "pulse"
    min_seconds: float = 20.0
    max_seconds: float = 600.0
    synth_seconds: float = 30.0
    folder: Path = Path("tracks")
    # copy
    title_template: str = DEFAULT_TITLE_TEMPLATE
    description_template: str = DEFAULT_DESCRIPTION_TEMPLATE
    short_template: str = DEFAULT_SHORT_TEMPLATE
    tags: tuple[str, ...] = ("music", "beats")
    banned_terms: tuple[str, ...] = ()
    # quality gates
    loudness_target: float = -14.0  # LUFS, integrated
    loudness_tolerance: float = 1.0  # LU either side of the target
    true_peak_max: float = -1.0  # dBTP
    max_silence_seconds: float = 3.0
    silence_threshold_db: float = -50.0
    max_clipped_fraction: float = 0.001  # share of samples stuck at full scale
    duplicate_similarity: float = 0.8  # 1.0 = identical audio fingerprint
    # render
    reels_seconds: float = 60.0  # the short vertical edit, at most 90
    fps: int = 30
    frame_scale: float = 1.0  # 1.0 = 1920x1080 / 1080x1920; tests render smaller
    crf: int = 20
    preset: str = "veryfast"

    @property
    def landscape_size(self) -> tuple[int, int]:
        return _even(1920 * self.frame_scale), _even(1080 * self.frame_scale)

    @property
    def vertical_size(self) -> tuple[int, int]:
        return _even(1080 * self.frame_scale), _even(1920 * self.frame_scale)


def _even(value: float) -> int:
    return max(2, round(value / 2) * 2)


@dataclass(frozen=True)
class SunoSettings:
    """[providers.suno]: a self-hosted gcui-art/suno-api server.

    That server signs in to Suno with the SUNO_COOKIE it was started with and has no API key
    of its own; `api_key_env` is only for a proxy in front of it that asks for a bearer token.
    """

    base_url: str | None = None
    api_key_env: str = "SUNO_API_KEY"
    # Always sent, so a server update cannot change the model under a channel: the server's
    # own default is 'chirp-v3-5' (gcui-art/suno-api src/lib/SunoApi.ts DEFAULT_MODEL; the
    # generate routes send `model || DEFAULT_MODEL`, src/app/api/generate/route.ts).
    model: str = "chirp-v3-5"
    instrumental: bool = True
    custom: bool = False  # True: /api/custom_generate with tags=prompt; else /api/generate
    timeout: float = 30.0  # seconds, each status or download request
    # The generate call answers only once the server has solved Suno's hCaptcha: its browser
    # waits up to 60 s for the create page, then 2Captcha solves it (gcui-art/suno-api,
    # src/lib/SunoApi.ts, getCaptcha), so the one paid request gets minutes, not seconds.
    submit_timeout: float = 180.0
    attempts: int = 4  # tries of one status or download request when the error is passing
    retry_wait: float = 2.0  # seconds before the first retry, doubling, at most 60
    poll_interval: float = 5.0  # seconds between status polls, growing by half, at most 30
    max_wait: float = 600.0  # seconds one run waits for a generation before leaving it
    hung_after: float = 1800.0  # seconds after its submit a generation is given up as hung
    daily_generations: int = 10  # paid generations a UTC day, all channels together
    max_generations: int = 3  # generations one episode may use before a person decides


@dataclass(frozen=True)
class GeminiSettings:
    """[providers.gemini]: the Gemini REST API (generateContent).

    A model's shutdown date comes from GEMINI_MODEL_ENDS unless `text_model_ends` /
    `image_model_ends` ("YYYY-MM-DD") declare one, for a model the table does not know.
    """

    base_url: str = "https://generativelanguage.googleapis.com/v1beta"
    text_model: str = "gemini-3.8-flash"
    image_model: str = "gemini-3.1-flash-image"
    text_model_ends: str | None = None
    image_model_ends: str | None = None
    api_key_env: str = "GEMINI_API_KEY"
    timeout: float = 120.0
    attempts: int = 4
    retry_wait: float = 2.0

    def model_end(self, setting: str) -> str | None:
        """The shutdown date ("YYYY-MM-DD") of the model in `setting` (text_model or
        image_model), or None when none is announced."""
        declared = getattr(self, f"{setting}_ends")
        return declared or GEMINI_MODEL_ENDS.get(getattr(self, setting))


# Shutdown dates of Gemini models, from https://ai.google.dev/gemini-api/docs/deprecations (its
# copies of 2026). The page gives "the earliest possible dates on which a model might be
# retired", and its copies moved some dates (gemini-2.5-flash: "Earliest June 2026", then June
# 17, 2026; a copy read on 2026-11-10 gave December 1, 2026, as quoted by
# https://dev.to/aideprecations/what-to-do-before-gemini-25-pro-and-25-flash-are-retired-on-december-1-2026-5gg9):
# the earliest published date is kept, so a warning comes before the shutdown, never after.
# The defaults above have none announced: gemini-3.8-flash is the current Flash model and
# gemini-3.1-flash-image ("Nano Banana 2") the current stable image model on
# https://ai.google.dev/gemini-api/docs/models. gemini-2.5-flash-lite is left out on purpose:
# one copy dates it July 22, 2026, a later one says it "remains available until further notice".
GEMINI_MODEL_ENDS: dict[str, str] = {
    "gemini-2.5-flash": "2026-06-17",
    "gemini-2.5-pro": "2026-06-17",
    "gemini-2.5-flash-image": "2026-10-02",
    "gemini-3-pro-preview": "2026-03-09",
    "gemini-3.1-flash-lite-preview": "2026-05-25",
    "gemini-3.1-flash-image-preview": "2026-06-25",
    "gemini-3-pro-image-preview": "2026-06-25",
    "gemini-3.1-flash-lite": "2027-05-07",
}
MODEL_WARNING_DAYS = 30  # a model's end is announced this many days ahead (doctor, makes)


@dataclass(frozen=True)
class ProviderSettings:
    suno: SunoSettings = field(default_factory=SunoSettings)
    gemini: GeminiSettings = field(default_factory=GeminiSettings)


_CHOICES = {
    "audio": AUDIO_SOURCES,
    "artwork": ARTWORK_SOURCES,
    "copy": COPY_SOURCES,
    "style": STYLES,
    "preset": ("ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow"),
}

_TEMPLATE_FIELDS = ("title_template", "description_template", "short_template")
TEMPLATE_FACTS = (
    "name",
    "title",
    "artist",
    "prompt",
    "prompt_sentence",
    "bpm",
    "key",
    "length",
    "seconds",
    "channel",
    "hashtags",
    "tags",
)


class _Fields:
    """Turns raw TOML values into typed settings, keeping a ConfigError for each bad field in
    `problems` (one per field: the first found) and its key in `wrong`."""

    def __init__(
        self, path, channel: str | None, prefix: str, problems: Problems | None = None
    ) -> None:
        self.path, self.channel, self.prefix = path, channel, prefix
        self.problems = problems if problems is not None else Problems()
        self.wrong: set[str] = set()

    def fail(self, key: str, message: str) -> ConfigError:
        return ConfigError(self.path, message, channel=self.channel, field=f"{self.prefix}{key}")

    def note(self, key: str, message: str) -> None:
        """Keep `message` as the problem of `key`, unless the field already has one."""
        self.keep(key, self.fail(key, message))

    def keep(self, key: str, error: ConfigError) -> None:
        if key not in self.wrong:
            self.wrong.add(key)
            self.problems.found.append(error)

    def convert(self, key: str, value, kind, default):
        if kind is float or (kind is int and isinstance(default, int)):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self.fail(key, f"must be a number, not {value!r}")
            if not math.isfinite(value):
                raise self.fail(key, "must be a finite number")
            if kind is int:
                if isinstance(value, float) and not value.is_integer():
                    raise self.fail(key, f"must be a whole number, not {value!r}")
                return int(value)
            return float(value)
        if kind is bool:
            if not isinstance(value, bool):
                raise self.fail(key, f"must be true or false, not {value!r}")
            return value
        if kind is tuple:
            if isinstance(value, str) or not isinstance(value, (list, tuple)):
                raise self.fail(key, "must be a list of strings")
            if not all(isinstance(item, str) for item in value):
                raise self.fail(key, "must be a list of strings")
            return tuple(item.strip() for item in value if item.strip())
        if not isinstance(value, str):
            raise self.fail(key, f"must be a string, not {value!r}")
        if kind is Path and not (value.strip() and value.isprintable()):
            raise self.fail(key, "must be a folder's path (not empty, no control characters)")
        return value


def _kind(annotation: str):
    if annotation.startswith("tuple"):
        return tuple
    for name, kind in (("float", float), ("int", int), ("bool", bool), ("Path", Path)):
        if annotation.startswith(name):
            return kind
    return str


def _parse_table(cls, raw: dict | None, checker: _Fields, extra: dict | None = None):
    """The good values of `raw` (each bad key noted on `checker`, and left out)."""
    raw = dict(raw or {})
    known = {item.name: item for item in fields(cls)}
    for key in raw:
        if key not in known:
            checker.note(key, f"unknown key; known keys: {', '.join(sorted(known))}")
    values = dict(extra or {})
    for key, value in raw.items():
        if key not in known:
            continue
        item = known[key]
        default = item.default if item.default is not item.default_factory else None
        kind = _kind(str(item.type))
        try:
            values[key] = checker.convert(key, value, Path if kind is Path else kind, default)
        except ConfigError as error:
            checker.keep(key, error)
    return values


def parse_pipeline(raw: dict | None, *, path, channel: str, home: Path) -> PipelineSettings:
    """Validate a channel's [channels.pipeline] table and return its settings.

    `folder` is resolved against `home` when relative. Raises ConfigProblems with a
    ConfigError (field="pipeline.<key>") for each unknown key or bad value.
    """
    checker = _Fields(path, channel, "pipeline.")
    values = _parse_table(PipelineSettings, raw, checker)
    for key, choices in _CHOICES.items():
        if key in values and values[key] not in choices:
            checker.note(key, f"must be one of {', '.join(choices)}, not {values.pop(key)!r}")
    folder = Path(values.get("folder", "tracks")).expanduser()
    values["folder"] = folder if folder.is_absolute() else Path(home) / folder
    settings = PipelineSettings(**values)  # a wrong field is left at its default here
    _check_pipeline(settings, checker)
    checker.problems.raise_found()
    return settings


def _check_pipeline(settings: PipelineSettings, checker: _Fields) -> None:
    """Note each field of `settings` out of its range (a field already wrong is not checked
    again: it holds its default)."""
    rules = (
        ("min_seconds", settings.min_seconds > 0, "must be more than 0"),
        (
            "max_seconds",
            # min_seconds wrong: its default would make a right max_seconds look wrong
            "min_seconds" in checker.wrong or settings.min_seconds <= settings.max_seconds <= 86400,
            "must be from min_seconds to 86400 (a day)",
        ),
        ("synth_seconds", 1 <= settings.synth_seconds <= 3600, "must be between 1 and 3600"),
        (
            "reels_seconds",
            3 <= settings.reels_seconds <= 90,
            "must be between 3 and 90 (Reels allow 90 s)",
        ),
        (
            "loudness_target",
            -40 <= settings.loudness_target <= -5,
            "must be between -40 and -5 LUFS",
        ),
        ("loudness_tolerance", settings.loudness_tolerance > 0, "must be more than 0"),
        ("true_peak_max", -9 <= settings.true_peak_max <= 0, "must be between -9 and 0 dBTP"),
        ("max_silence_seconds", settings.max_silence_seconds > 0, "must be more than 0"),
        (
            "silence_threshold_db",
            -90 <= settings.silence_threshold_db <= -20,
            "must be between -90 and -20 dB",
        ),
        (
            "max_clipped_fraction",
            0 <= settings.max_clipped_fraction < 1,
            "must be between 0 and 1",
        ),
        (
            "duplicate_similarity",
            0.5 < settings.duplicate_similarity <= 1,
            "must be between 0.5 and 1",
        ),
        ("fps", settings.fps in (24, 25, 30, 50, 60), "must be one of 24, 25, 30, 50, 60"),
        ("frame_scale", 0.05 <= settings.frame_scale <= 1, "must be between 0.05 and 1"),
        ("crf", 0 <= settings.crf <= 51, "must be between 0 and 51"),
        ("prompt", bool(settings.prompt.strip()), "must not be empty"),
    )
    for key, good, message in rules:
        if not good:
            checker.note(key, message)
    for key in _TEMPLATE_FIELDS:
        problem = _template_problem(getattr(settings, key))
        if problem:
            checker.note(key, problem)


def _template_problem(template: str) -> str | None:
    """What is wrong with a copy template, or None."""
    import string

    try:
        names = [name for _, name, _, _ in string.Formatter().parse(template) if name]
    except ValueError as error:
        return f"is not a valid template ({error})"
    for name in names:
        if name not in TEMPLATE_FACTS:
            return f"uses {{{name}}}, which is not known; use {', '.join(TEMPLATE_FACTS)}"
    return None


def parse_providers(raw: dict | None, *, path) -> ProviderSettings:
    """Validate the [providers] table (its suno and gemini sub-tables).

    Raises ConfigProblems with a ConfigError (field="providers.<name>.<key>") for each wrong
    field. Other providers' tables (the platforms') are left alone.
    """
    raw = raw or {}
    problems = Problems()
    results = {}
    for name, cls in (("suno", SunoSettings), ("gemini", GeminiSettings)):
        table = raw.get(name)
        checker = _Fields(path, None, f"providers.{name}.", problems)
        if table is not None and not isinstance(table, dict):
            problems.found.append(ConfigError(path, "must be a table", field=f"providers.{name}"))
            continue
        values = _parse_table(cls, table, checker)
        _check_provider(values, checker)
        results[name] = cls(**{key: v for key, v in values.items() if key not in checker.wrong})
    problems.raise_found()
    return ProviderSettings(**results)


def _check_provider(values: dict, checker: _Fields) -> None:
    """Note each value of a provider's table out of its range (its first problem only)."""
    for key in ("base_url",):
        url = values.get(key)
        if url is not None and not url.startswith(("http://", "https://")):
            checker.note(key, f"must start with http:// or https://, not {url!r}")
        elif url is not None:
            values[key] = url.rstrip("/")
    # Seconds; a socket timeout or a sleep longer than a day is a typo (and a huge one
    # cannot even be given to a socket).
    for key in ("timeout", "max_wait", "poll_interval"):
        if key in values and not 0 < values[key] <= 86400:
            checker.note(key, "must be more than 0 and at most 86400 (seconds)")
    for key in ("retry_wait",):
        if key in values and not 0 <= values[key] <= 3600:
            checker.note(key, "must be from 0 to 3600 (seconds)")
    if "attempts" in values and not 1 <= values["attempts"] <= 20:
        checker.note("attempts", "must be between 1 and 20")
    for key in ("timeout", "max_wait", "poll_interval", "submit_timeout", "hung_after"):
        if key in values and values[key] <= 0:
            checker.note(key, "must be more than 0")
    for key in ("daily_generations", "max_generations"):
        if key in values and not 1 <= values[key] <= 1000:
            checker.note(key, "must be between 1 and 1000")
    if "model" in values and not str(values["model"]).strip():
        # (Suno's key.) An empty model would fall back to the server's own default.
        checker.note("model", "must name a Suno model, e.g. chirp-v3-5")
    for key in ("text_model", "image_model"):
        if key in values and not values[key].strip():
            checker.note(key, "must name a model, e.g. gemini-3.8-flash")
    for key in ("text_model_ends", "image_model_ends"):
        if key in values and not _is_date(values[key]):
            checker.note(key, f'must be a date like "2027-05-07", not {values[key]!r}')


def _is_date(text: str) -> bool:
    from datetime import date

    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10


def model_ends(gemini: GeminiSettings, today: str) -> list[dict]:
    """Each Gemini model setting with its shutdown date and how it stands on `today`
    ("YYYY-MM-DD"): `ok`, `ending` (within MODEL_WARNING_DAYS) or `ended`, with a sentence."""
    from datetime import date

    found = []
    for setting in ("text_model", "image_model"):
        model, end = getattr(gemini, setting), gemini.model_end(setting)
        entry = {"setting": setting, "model": model, "ends": end, "state": "ok", "message": ""}
        if end is not None:
            days = (date.fromisoformat(end) - date.fromisoformat(today)).days
            where = f"[providers.gemini] {setting}"
            if days < 0:
                entry["state"] = "ended"
                entry["message"] = (
                    f"gemini model {model} ({where}) was to be shut down on {end}; set "
                    f"{setting} to a current model (https://ai.google.dev/gemini-api/docs/models)"
                )
            elif days <= MODEL_WARNING_DAYS:
                entry["state"] = "ending"
                entry["message"] = (
                    f"gemini model {model} ({where}) is shut down on {end}, in {days} days; "
                    f"set {setting} to a current model before then"
                )
        found.append(entry)
    return found
