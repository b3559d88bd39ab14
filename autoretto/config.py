"""The home folder and its validated config (`autoretto.toml`).

`load_config()` reads and validates the whole file before anything else happens, so a bad
config stops a command with one line that names the file, the channel and the field, and
nothing is written. The result is a frozen `Config` passed explicitly to whatever needs it.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .clock import parse_duration
from .errors import ConfigError, ConfigProblems, NotFound, Problems, UsageError, shown
from .notify import parse_notify
from .paths import HOME_VARIABLE, Paths, home_dir
from .retry import RetryPolicy
from .slots import WEEKDAYS, Schedule, parse_wall_time

if TYPE_CHECKING:
    from .journal import Journal

CHANNEL_NAME = re.compile(r"[a-z0-9-]{1,40}")  # a folder name and part of every slot key

#: How often a run refreshes the heartbeat of its claims, posts and makes (engine.Heartbeat).
HEARTBEAT_SECONDS = 20.0
#: A run silent this long may be taken for dead. Well above the heartbeat: a beat can also
#: wait up to 30 s for a busy database, and a live run taken for dead posts its slot twice.
SHORTEST_STALE_AFTER = timedelta(minutes=2)
#: The most episodes a channel keeps in stock (each one is a paid generation to make).
MOST_READY_AHEAD = 100


def write_private(path: Path, data: bytes) -> None:
    """Create `path` holding `data`, readable by its owner only (mode 0600); never overwrite."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as writer:
        writer.write(data)


@dataclass(frozen=True)
class ChannelConfig:
    name: str
    timezone: str
    slot_times: tuple[str, ...]
    days: tuple[str, ...]
    catch_up_window: timedelta
    platforms: tuple[str, ...] | None  # None: every connected platform
    approval: bool
    ready_ahead: int
    pipeline: Any  # autoretto.pipeline.settings.PipelineSettings
    schedule: Schedule = field(compare=False)
    produces: bool = False  # has a [channels.pipeline]: run-due makes episodes for it
    twin_of: str | None = None  # a language twin of this family channel (posts 7-29 min after)
    films: ChannelConfig | None = None  # the channel's films cadence, `[channels.films]`
    # A films cadence is served like a channel of its own, named "<channel>/films":
    owner: str | None = None  # the channel whose episodes it posts
    kind: str = "episode"  # which kind of episode its slots take
    dry_run: bool = False  # record what would be sent instead of sending (films, until allowed)
    #: the audience (issue 28): drafts approved by rule go without a person (off by default)
    auto_reply: bool = False
    #: how the channel speaks in replies, and rules its replies keep (the assistant's brief)
    reply_voice: str = ""
    reply_rules: tuple[str, ...] = ()
    #: the platforms its releases also go to as a carousel of cards (issue 29), opted in one
    #: by one; empty: none
    carousels: tuple[str, ...] = ()

    @property
    def episode_channel(self) -> str:
        """The channel whose episodes this cadence posts (its own, or its owner's)."""
        return self.owner or self.name

    @cached_property
    def schedule_fingerprint(self) -> str:
        """Changes whenever the slots change, so an edited schedule counts as newly seen."""
        text = "|".join([self.timezone, ",".join(sorted(self.slot_times)), ",".join(self.days)])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Config:
    path: Path
    paths: Paths
    channels: tuple[ChannelConfig, ...]
    platforms: dict[str, Any]  # platform name -> its parsed settings
    providers: Any  # autoretto.pipeline.settings.ProviderSettings
    stale_after: timedelta
    make_budget: timedelta  # how long one run-due may spend topping up stocks
    cron_interval: timedelta  # how often cron runs run-due: paced posts before the next wait
    retry: RetryPolicy
    notify: Any  # autoretto.notify.NotifySettings
    #: `journal = ...` when set (a resolved path, or an "s3://" URL; `[media] url` in a bucket
    #: when not), else None: the default file
    journal_setting: Path | str | None
    media_host: Any = None  # autoretto.mediahost settings: where Instagram/Threads fetch videos
    media: MediaSettings | None = None  # [media] keep
    serve: Any = None  # the validated [serve] table: autoretto.web.settings.ServeSettings.of
    store_url: str | None = None  # [store] url: a PostgreSQL store instead of the SQLite file

    @property
    def journal(self) -> Journal:
        """The publish journal: `journal = ...` (a file, or objects in a bucket), else the media
        bucket's `journal/` folder when `[media] url` is one, else outside the home in the XDG
        state folder (worked out here, not cached with the config: it follows XDG_STATE_HOME)."""
        if isinstance(self.journal_setting, str):
            from .journal import bucket_journal

            return bucket_journal(self.journal_setting)
        if self.journal_setting is not None:
            return self.journal_setting
        from .journal import default_journal

        return default_journal(self.paths.home)

    @property
    def cadences(self) -> tuple[ChannelConfig, ...]:
        """Everything run-due serves: each channel, then each channel's films cadence."""
        return self.channels + tuple(c.films for c in self.channels if c.films is not None)

    def channel(self, name: str) -> ChannelConfig:
        for channel in self.channels:
            if channel.name == name:
                return channel
        known = ", ".join(c.name for c in self.channels) or "none"
        raise NotFound(f"no channel {shown(name)} in {self.path} (channels: {known})")


TOP_LEVEL_KEYS = {
    "channels",
    "platforms",
    "providers",
    "stale_after",
    "make_budget",
    "retry",
    "notify",
    "journal",
    "media_host",
    "cron_interval",
    "media",
    "serve",
    "store",
}
CHANNEL_KEYS = {
    "name",
    "timezone",
    "slots",
    "days",
    "catch_up_window",
    "platforms",
    "approval",
    "ready_ahead",
    "pipeline",
    "twin_of",
    "films",
    "auto_reply",
    "reply_voice",
    "reply_rules",
    "carousels",
}
FILMS_KEYS = {"slots", "days", "catch_up_window", "platforms", "direct_publishing"}


class PlatformFields(Protocol):
    """What config is handed of the platforms (the registry's `autoretto.platforms.FIELDS`):
    their names and each one's check of its `[platforms.NAME]` table, declared on its class.
    Config imports no platform module; the registry imports an adapter only to check its
    table."""

    @property
    def slot_names(self) -> tuple[str, ...]:
        """The platforms posted on slots, in posting order."""
        ...

    @property
    def manual_names(self) -> tuple[str, ...]:
        """The platforms a person posts by hand (never on a slot)."""
        ...

    def parse_settings(self, name: str, table: dict[str, Any], *, path: Path, paths: Paths) -> Any:
        """The validated settings of `[platforms.NAME]` (defaults filled in); ConfigError."""
        ...

    def carousel_note(self, name: str) -> str | None:
        """None when platform `name` takes carousels, else why not (issue 29)."""
        ...


def load_config(paths: Paths | None = None, *, platforms: PlatformFields) -> Config:
    """Read and validate `autoretto.toml` of the home, its platform tables checked by
    `platforms`. Raises ConfigError / UsageError."""
    paths = paths or Paths(home_dir())
    path = paths.config
    if not path.exists():
        raise UsageError(
            f"{path}: no config here; run `autoretto init` to create one "
            f"(or point {HOME_VARIABLE} at your Autoretto home)"
        )
    if path.is_dir():
        raise UsageError(
            f"{path}: is a directory, not the config file; move it away, then run "
            "`autoretto init` to write a starter config"
        )
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UsageError(
            f"{path}: cannot read the config ({error.strerror or type(error).__name__})"
        ) from None
    key = _cache_key(paths, data)
    cached = _read_cached(paths, key)
    if cached is not None:
        return cached
    import tomllib  # only when the cache does not hold this config

    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(path, f"not valid TOML ({error})") from None
    except UnicodeDecodeError:
        raise ConfigError(path, "not UTF-8 text") from None
    config = parse_config(raw, path=path, paths=paths, platforms=platforms)
    _write_cached(paths, key, config)
    return config


# -- the validated config, cached --------------------------------------------------------------
# Parsing and validating a config of many channels costs a tenth of a second, which `status` and
# every hourly `run-due` would pay. The validated result is kept beside the database, keyed by
# the file's exact bytes, the home, and the size and time of every module of this package (an
# upgrade or an edited Autoretto never reads an old shape). It is written only after a config
# validated, and read only when everything matches; anything else parses afresh.
#
# It is JSON, never a pickle: loading a pickle runs whatever its file names, so anyone who could
# write the cache (a group-writable home) would run their code as the owner at the next
# `status`. Reading this file can only build plain values and the config classes named in
# _CACHED_CLASSES, from modules named here, never from the file. A file not the owner's, or
# writable by others, is not read at all.

CACHE_NAME = "config.json"
#: the cache of Autoretto before it was JSON: never read, removed when the new one is written
_OLD_CACHE_NAME = "config.pickle"

#: every class a validated config is made of (module.name): the only ones the cache rebuilds
_CACHED_CLASSES = frozenset(
    {
        "autoretto.config.Config",
        "autoretto.config.ChannelConfig",
        "autoretto.config.MediaSettings",
        "autoretto.paths.Paths",
        "autoretto.slots.Schedule",
        "autoretto.retry.RetryPolicy",
        "autoretto.notify.NotifySettings",
        "autoretto.mediahost.MediaHostSettings",
        "autoretto.pipeline.settings.PipelineSettings",
        "autoretto.pipeline.settings.ProviderSettings",
        "autoretto.pipeline.settings.SunoSettings",
        "autoretto.pipeline.settings.GeminiSettings",
    }
)


def _cache_path(paths: Paths) -> Path:
    return paths.home / ".cache" / CACHE_NAME


def _cache_key(paths: Paths, data: bytes) -> str:
    digest = hashlib.sha256(data)
    digest.update(str(paths.home).encode())
    package = Path(__file__).parent
    for module in sorted(package.rglob("*.py")):
        facts = module.stat()
        digest.update(f"{module.name}:{facts.st_size}:{facts.st_mtime_ns}".encode())
    return digest.hexdigest()


def _read_cached(paths: Paths, key: str) -> Config | None:
    import json

    try:
        with open(_cache_path(paths), "rb") as reader:
            facts = os.fstat(reader.fileno())
            if facts.st_uid != os.getuid() or facts.st_mode & 0o022:
                return None  # another user could have written it: parse afresh
            stored = json.loads(reader.read())
        if stored["key"] != key:
            return None
        config = _decode(stored["nodes"])
    except Exception:  # missing, unreadable, or written by another version: parse afresh
        return None
    return config if isinstance(config, Config) else None


def _write_cached(paths: Paths, key: str, config: Config) -> None:
    import json

    target = _cache_path(paths)
    try:
        nodes = _encode(config)
    except _NotCacheable:
        return  # a value the cache cannot hold exactly: every command parses afresh
    try:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.{os.getpid()}")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as writer:
            json.dump({"key": key, "nodes": nodes}, writer, ensure_ascii=False)
        os.replace(partial, target)
        (target.parent / _OLD_CACHE_NAME).unlink(missing_ok=True)
    except OSError:
        pass  # a read-only home still works, only slower


class _NotCacheable(Exception):
    """A value of the config the cache cannot hold and give back exactly."""


def _encode(config: Config) -> list[Any]:
    """`config` as a list of JSON nodes, each one's parts before it (referred to as `[index]`),
    the config last. Raises
    _NotCacheable when the nodes would not give `config` back exactly."""
    nodes = _nodes(config)
    # Read back before it is kept: a value that would not come back the same (a subclass, a
    # zone-aware time) keeps no cache rather than a wrong one.
    if _nodes(_decode(nodes)) != nodes:
        raise _NotCacheable
    return nodes


def _nodes(config: Config) -> list[Any]:
    """Equal frozen parts are one node (a thousand channels share one pipeline, one set of slot
    times): kept once, read once, and one object each when read back."""
    import json

    nodes: list[Any] = []
    seen: dict[str, int] = {}

    def node(value: Any) -> Any:
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, dict) and all(isinstance(k, str) for k in value):
            return {"dict": {k: node(v) for k, v in value.items()}}  # mutable: not shared
        if isinstance(value, list):
            return {"list": [node(v) for v in value]}
        shared, made = _frozen_node(value, node)
        if not shared:
            return made
        text = json.dumps(made, sort_keys=True, ensure_ascii=False)
        if text not in seen:
            seen[text] = len(nodes)
            nodes.append(made)
        return [seen[text]]  # a reference: a bare list is nothing else here

    node(config)
    return nodes


_PATH_TYPE = type(Path())  # PosixPath: a Path read back from the cache is one too


def _frozen_node(value: Any, node: Callable[[Any], Any]) -> tuple[bool, Any]:
    """(worth sharing, the JSON node) of a frozen value: a small one (a time, a path) is not
    worth sharing, a tuple, a duration or a config class is."""
    import dataclasses
    from datetime import date, datetime, time

    kind = type(value)
    if kind is _PATH_TYPE:
        return False, {"path": str(value)}
    if kind is timedelta:
        # shared: each channel has a window, and most have the same one
        return True, {"timedelta": [value.days, value.seconds, value.microseconds]}
    if kind is time and value.tzinfo is None:
        return False, {"time": value.isoformat()}
    if kind is date:
        return False, {"date": value.isoformat()}
    if kind is datetime and value.tzinfo is None:
        return False, {"datetime": value.isoformat()}
    if kind is tuple:
        return True, {"tuple": [node(v) for v in value]}
    if kind is frozenset:
        return True, {"frozenset": sorted((node(v) for v in value), key=repr)}
    name = f"{kind.__module__}.{kind.__qualname__}"
    if name in _CACHED_CLASSES and dataclasses.is_dataclass(value):
        # In the order of the class's fields (the key changes with any edit of the package).
        fields = [node(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init]
        return True, {"class": name, "fields": fields}
    raise _NotCacheable(name)


def _decode(nodes: list[Any]) -> Any:
    """The value `_encode` made `nodes` of (the last one). Builds nothing but plain values and
    the classes of _CACHED_CLASSES; anything else in the file is an error (parse afresh)."""
    import importlib
    from datetime import date, datetime, time

    built: list[Any] = []
    makers: dict[str, Callable[[list[Any]], Any]] = {}

    def maker(name: str) -> Callable[[list[Any]], Any]:
        import dataclasses

        module, _, attribute = name.rpartition(".")
        cls = getattr(importlib.import_module(module), attribute)
        names = [f.name for f in dataclasses.fields(cls)]
        if hasattr(cls, "__post_init__") or hasattr(cls, "__slots__"):
            return lambda values: cls(*values)

        # Its fields set as they were, without its __init__ (a frozen one sets each through
        # object.__setattr__: a thousand channels' worth is most of the read), as a pickle
        # did: the values are the ones __init__ was given when the config was parsed.
        def make(values: list[Any]) -> Any:
            made = object.__new__(cls)
            made.__dict__.update(zip(names, values, strict=True))
            return made

        return make

    def value(item: Any) -> Any:
        kind = type(item)
        if kind is list:
            return built[item[0]]
        if kind is not dict:
            return item
        if "class" in item:
            name = item["class"]
            if name not in _CACHED_CLASSES:
                raise _NotCacheable(name)
            if name not in makers:
                makers[name] = maker(name)
            return makers[name]([value(v) for v in item["fields"]])
        ((tag, content),) = item.items()
        if tag == "dict":
            return {k: value(v) for k, v in content.items()}
        if tag == "list":
            return [value(v) for v in content]
        if tag == "tuple":
            return tuple(value(v) for v in content)
        if tag == "frozenset":
            return frozenset(value(v) for v in content)
        if tag == "path":
            return Path(content)
        if tag == "timedelta":
            return timedelta(*content)
        if tag == "time":
            return time.fromisoformat(content)
        if tag == "date":
            return date.fromisoformat(content)
        if tag == "datetime":
            return datetime.fromisoformat(content)
        raise _NotCacheable(tag)

    for item in nodes:
        built.append(value(item))
    return built[-1]


def parse_config(
    raw: dict[str, Any], *, path: Path, paths: Paths, platforms: PlatformFields
) -> Config:
    """Validate the whole file; ConfigProblems naming every problem found."""
    from .pipeline.settings import parse_providers
    from .web.settings import parse_serve

    problems = Problems()
    problems.keep(_no_unknown_keys, raw, TOP_LEVEL_KEYS, path=path)
    tables = _parse_platforms(raw.get("platforms", {}), problems, platforms, path=path, paths=paths)
    media_host = None
    if "media_host" in raw:
        from .mediahost import parse_media_host

        media_host = problems.keep(parse_media_host, raw["media_host"], path=path)
    for settings in tables.values():
        share_media_host(settings, media_host)
    channels = _parse_channels(raw.get("channels", []), problems, platforms, path=path, paths=paths)
    fail = _top_level_error(path)
    stale_after = problems.keep(_stale_after, raw, fail)
    make_budget = problems.keep(
        duration_field, raw, "make_budget", "40m", fail, longest=timedelta(days=1)
    )
    cron_interval = problems.keep(
        duration_field,
        raw,
        "cron_interval",
        "1h",
        fail,
        shortest=timedelta(minutes=1),
        longest=timedelta(days=1),
    )
    journal = raw.get("journal")  # None: the default, outside the home (Config.journal)
    if journal is not None:
        journal = problems.keep(_journal_path, journal, path=path, paths=paths)
    else:
        journal = _media_bucket(raw.get("media"))
    config = Config(
        path=path,
        paths=paths,
        channels=tuple(channels),
        platforms=tables,
        providers=problems.keep(parse_providers, raw.get("providers"), path=path),
        stale_after=stale_after,
        make_budget=make_budget,
        cron_interval=cron_interval,
        retry=problems.keep(_parse_retry, raw.get("retry"), path=path),
        notify=problems.keep(parse_notify, raw.get("notify"), path=path),
        journal_setting=journal,
        media_host=media_host,
        media=problems.keep(parse_media, raw.get("media"), path=path),
        serve=problems.keep(parse_serve, raw.get("serve"), path=path),
        store_url=problems.keep(parse_store, raw.get("store"), path=path),
    )
    if problems.found:
        raise ConfigProblems(problems.found)
    return config


def _parse_platforms(
    tables: Any, problems: Problems, known: PlatformFields, *, path: Path, paths: Paths
) -> dict[str, Any]:
    """The `[platforms.NAME]` tables, each validated by its platform."""
    if not isinstance(tables, dict):
        problems.found.append(
            ConfigError(path, "must be a table of [platforms.NAME] sections", field="platforms")
        )
        return {}
    platforms: dict[str, Any] = {}
    for name, table in tables.items():
        if name not in known.slot_names and name not in known.manual_names:
            problems.found.append(
                ConfigError(path, _unknown_platform(name, known), field=f"platforms.{name}")
            )
        elif not isinstance(table, dict):
            problems.found.append(ConfigError(path, "must be a table", field=f"platforms.{name}"))
        else:
            settings = problems.keep(known.parse_settings, name, table, path=path, paths=paths)
            if settings is not None:
                platforms[name] = settings
    return platforms


def _parse_channels(
    tables: Any, problems: Problems, known: PlatformFields, *, path: Path, paths: Paths
) -> list[ChannelConfig]:
    """The `[[channels]]` sections: each valid, names unique, a twin's family there."""
    if not isinstance(tables, list):
        problems.found.append(
            ConfigError(path, "write each channel as a [[channels]] section", field="channels")
        )
        return []
    channels: list[ChannelConfig] = []
    names: set[str] = set()
    for index, table in enumerate(tables):
        channel = problems.keep(_parse_channel, table, known, index=index, path=path, paths=paths)
        if channel is None:
            continue
        if channel.name in names:
            problems.found.append(
                ConfigError(
                    path,
                    "this name is used by two channels; names must be unique",
                    channel=channel.name,
                    field="name",
                )
            )
            continue
        names.add(channel.name)
        channels.append(channel)
    valid = len(channels) == len(tables)  # a twin's family may be a channel with a problem
    for channel in channels:
        if valid and channel.twin_of is not None and channel.twin_of not in names:
            problems.found.append(
                ConfigError(
                    path,
                    f'no channel "{channel.twin_of}" to be a twin of',
                    channel=channel.name,
                    field="twin_of",
                )
            )
    return channels


def _stale_after(raw: dict[str, Any], fail: Callable[[str, str], ConfigError]) -> timedelta:
    stale_after = duration_field(raw, "stale_after", "15m", fail, longest=timedelta(days=1))
    if stale_after < SHORTEST_STALE_AFTER:
        raise fail(
            "stale_after",
            f"must be at least {SHORTEST_STALE_AFTER.total_seconds() / 60:g}m: a run refreshes its "
            f"heartbeat every {HEARTBEAT_SECONDS:g} s, and one silent for stale_after is "
            "taken for dead (its claim taken over, its posts sent again)",
        )
    return stale_after


def _media_bucket(media: Any) -> str | None:
    """`[media] url` when it is a bucket (its `journal/` folder is then the journal's default
    place: every host sees it); [media] itself is checked by parse_media."""
    from .bucket import is_bucket_url, parse_url

    url = media.get("url") if isinstance(media, dict) else None
    if not isinstance(url, str) or not is_bucket_url(url):
        return None
    try:
        return parse_url(url).url
    except ValueError:
        return None  # parse_media names it


def _journal_path(journal: Any, *, path: Path, paths: Paths) -> Path | str:
    """`journal = ...` resolved: a usable file name, not a directory; or a bucket's URL."""
    from .bucket import is_bucket_url, parse_url

    if isinstance(journal, str) and is_bucket_url(journal):
        try:
            return parse_url(journal).url
        except ValueError as error:
            raise ConfigError(path, str(error), field="journal") from None
    if not isinstance(journal, str) or not journal.strip():
        raise ConfigError(path, "give the journal file's path", field="journal")
    if not journal.isprintable():
        raise ConfigError(path, f"{shown(journal)} is not a usable file name", field="journal")
    try:
        is_dir = paths.resolve(journal).is_dir()
    except OSError as error:  # a name too long for the file system, say
        raise ConfigError(
            path, f"{shown(journal)} is not a usable file name ({error.strerror})", field="journal"
        ) from None
    if is_dir:
        raise ConfigError(
            path, f"{paths.resolve(journal)} is a directory; name a file in it", field="journal"
        )
    return paths.resolve(journal)


FOREVER = "forever"


@dataclass(frozen=True)
class MediaSettings:
    """The [media] table: `keep` is how long published episodes keep their working files;
    `url` (`s3://bucket/prefix`), where several hosts keep them (None: `<home>/media` only)."""

    keep: str = "30d"
    url: str | None = None

    @property
    def keep_for(self) -> timedelta | None:
        return None if self.keep == FOREVER else parse_duration(self.keep)


def parse_media(raw: Any, *, path: Path) -> MediaSettings:
    """Validate the [media] table. Raises ConfigProblems naming each wrong field."""
    if raw is None:
        return MediaSettings()
    if not isinstance(raw, dict):
        raise ConfigError(path, "must be a table", field="media")
    problems = Problems()
    for key in raw:
        if key not in ("keep", "url"):
            problems.found.append(
                ConfigError(path, "unknown key; known keys: keep, url", field=f"media.{key}")
            )
    url = problems.keep(_media_url, raw.get("url"), path=path)
    keep = problems.keep(_media_keep, raw.get("keep", MediaSettings.keep), path=path)
    problems.raise_found()
    return MediaSettings(keep=keep, url=url)


def _media_url(url: Any, *, path: Path) -> str | None:
    if url is None:
        return None
    from .bucket import parse_url

    try:
        return parse_url(url).url
    except ValueError as error:
        raise ConfigError(path, str(error), field="media.url") from None


def _media_keep(keep: Any, *, path: Path) -> str:
    if not isinstance(keep, str):
        raise ConfigError(path, f'write a duration like "30d", or "{FOREVER}"', field="media.keep")
    keep = keep.strip().lower()
    if keep != FOREVER:
        try:
            if parse_duration(keep) <= timedelta(0):
                raise ValueError(f'"{keep}" keeps nothing; write at least "1d", or "{FOREVER}"')
        except ValueError as error:
            raise ConfigError(
                path, f'{error} (or "{FOREVER}" to keep every file)', field="media.keep"
            ) from None
    return keep


def parse_store(raw: Any, *, path: Path) -> str | None:
    """Validate the [store] table: its `url`, a PostgreSQL URL (None: the home's SQLite file).
    Raises ConfigError naming the field (ConfigProblems naming each, when several are wrong);
    the URL's password is never shown."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ConfigError(path, "must be a table", field="store")
    found = [
        ConfigError(path, "unknown key; known keys: url", field=f"store.{key}")
        for key in raw
        if key != "url"
    ]
    url = raw.get("url")
    if url is not None and (
        not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://"))
    ):
        found.append(
            ConfigError(
                path,
                'write a PostgreSQL URL like "postgresql://USER:PASSWORD@HOST/DATABASE", or '
                "leave [store] out to keep the home's SQLite file",
                field="store.url",
            )
        )
    if found:
        raise ConfigProblems(found) if len(found) > 1 else found[0]
    return url


def _top_level_error(path: Path) -> Callable[[str, str], ConfigError]:
    """`fail(field, message)` for a field outside any channel."""
    return lambda key, message: ConfigError(path, message, field=key)


def duration_field(
    table: dict[str, Any],
    key: str,
    default: str | None,
    fail: Callable[[str, str], ConfigError],
    *,
    field: str | None = None,
    shortest: timedelta = timedelta(0),
    longest: timedelta = timedelta(days=30),
) -> timedelta:
    """`table[key]` (or `default`) as a duration from `shortest` to `longest`; a ConfigError for
    `field` (default: `key`) when it is not one."""
    try:
        return parse_duration(table.get(key, default), shortest=shortest, longest=longest)
    except ValueError as error:
        raise fail(field or key, str(error)) from None


def share_media_host(settings: Any, media_host: Any) -> Any:
    """A platform that fetches videos by URL gets the shared `[media_host]` unless its own
    `[platforms.NAME.media_host]` overrides it."""
    if isinstance(settings, dict) and "media_host" in settings and settings["media_host"] is None:
        settings["media_host"] = media_host
    return settings


def _parse_retry(raw: Any, *, path: Path) -> RetryPolicy:
    """Validate the [retry] table. Raises ConfigProblems naming each wrong field."""
    if raw is None:
        return RetryPolicy()
    if not isinstance(raw, dict):
        raise ConfigError(path, "must be a table", field="retry")
    problems = Problems()
    problems.keep(_no_unknown_keys, raw, {"attempts", "first_wait", "max_wait"}, path=path)
    attempts = problems.keep(_retry_attempts, raw.get("attempts", RetryPolicy.attempts), path=path)
    fail = _top_level_error(path)
    waits = {
        key: problems.keep(
            duration_field, raw, key, None, fail, field=f"retry.{key}", longest=longest
        )
        for key, longest in (
            ("first_wait", timedelta(minutes=10)),
            ("max_wait", timedelta(hours=1)),
        )
        if key in raw
    }
    problems.raise_found()
    return RetryPolicy(
        attempts=attempts, **{key: wait.total_seconds() for key, wait in waits.items()}
    )


def _retry_attempts(attempts: Any, *, path: Path) -> int:
    if not isinstance(attempts, int) or isinstance(attempts, bool) or not 1 <= attempts <= 20:
        raise ConfigError(path, "must be a whole number from 1 to 20", field="retry.attempts")
    return attempts


def _unknown_platform(name: str, known: PlatformFields) -> str:
    if name in known.manual_names:
        return (
            f"{shown(name)} is never posted on a slot; a person posts each episode with "
            f"`autoretto post {name} EPISODE`"
        )
    available = ", ".join([*known.slot_names, *known.manual_names])
    return f"unknown platform {shown(name)} (available: {available})"


def _no_unknown_keys(
    table: dict[str, Any], allowed: set[str], *, path: Path, channel: str | None = None
) -> None:
    """ConfigProblems naming every key of `table` that is not `allowed`, each on its own."""
    found = [
        ConfigError(
            path,
            f"unknown key (allowed: {', '.join(sorted(allowed))})",
            channel=channel,
            field=key,
        )
        for key in table
        if key not in allowed
    ]
    if found:
        raise ConfigProblems(found)


def _slot_times(
    table: dict[str, Any], fail: Callable[[str, str], ConfigError], prefix: str
) -> tuple[tuple[str, ...], list[Any]]:
    """A cadence's `slots`: (the texts, the times)."""
    slot_texts = table.get("slots")
    if not isinstance(slot_texts, list) or not slot_texts:
        raise fail(f"{prefix}slots", 'missing; list local times such as ["10:00", "18:30"]')
    times = []
    for text in slot_texts:
        if not isinstance(text, str):
            raise fail(f"{prefix}slots", f'{shown(text)} is not a time of day; write it as "HH:MM"')
        try:
            times.append(parse_wall_time(text))
        except ValueError as error:
            raise fail(f"{prefix}slots", str(error)) from None
    if len(set(times)) != len(times):
        raise fail(f"{prefix}slots", "a time is listed twice")
    return tuple(slot_texts), times


def _days(
    table: dict[str, Any], fail: Callable[[str, str], ConfigError], prefix: str
) -> tuple[str, ...]:
    days = table.get("days", list(WEEKDAYS))
    if not isinstance(days, list) or not days:
        raise fail(f"{prefix}days", f"list at least one of {', '.join(WEEKDAYS)}")
    for day in days:
        if day not in WEEKDAYS:
            raise fail(f"{prefix}days", f"{shown(day)} is not a weekday; use {', '.join(WEEKDAYS)}")
    return tuple(days)


def _window(
    table: dict[str, Any], fail: Callable[[str, str], ConfigError], prefix: str, default: timedelta
) -> timedelta:
    if "catch_up_window" not in table:
        return default
    return duration_field(
        table,
        "catch_up_window",
        None,
        fail,
        field=f"{prefix}catch_up_window",
        shortest=timedelta(minutes=1),
    )


def _parse_cadence(
    table: dict[str, Any],
    fail: Callable[[str, str], ConfigError],
    *,
    prefix: str = "",
    default_window: timedelta = timedelta(hours=2),
) -> tuple[tuple[str, ...], list[Any], tuple[str, ...], timedelta]:
    """slots, days and catch_up_window of a channel (or its films): texts, times, days, window.
    Each field is checked on its own: ConfigProblems names every one that is wrong."""
    problems = Problems()
    slots = problems.keep(_slot_times, table, fail, prefix)
    days = problems.keep(_days, table, fail, prefix)
    window = problems.keep(_window, table, fail, prefix, default_window)
    if problems.found:
        raise ConfigProblems(problems.found)
    return slots[0], slots[1], days, window


def _timezone(table: dict[str, Any], fail: Callable[[str, str], ConfigError]) -> str:
    timezone = table.get("timezone")
    if not isinstance(timezone, str) or not timezone:
        raise fail("timezone", 'missing; give an IANA time zone such as "Europe/Berlin"')
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise fail(
            "timezone",
            f'unknown time zone {shown(timezone)}; use an IANA name such as "Europe/Berlin"',
        ) from None
    return timezone


def _chosen_platforms(
    table: dict[str, Any], known: PlatformFields, fail: Callable[[str, str], ConfigError]
) -> tuple[str, ...] | None:
    chosen = table.get("platforms")
    if chosen is None:
        return None
    if not isinstance(chosen, list) or not all(isinstance(p, str) for p in chosen):
        raise fail("platforms", 'list platform names, e.g. ["folder"]')
    for platform in chosen:
        if platform not in known.slot_names:
            raise fail("platforms", _unknown_platform(platform, known))
    # Posting order is the registry's, whatever order the person wrote.
    return tuple(p for p in known.slot_names if p in chosen)


def _carousels(
    table: dict[str, Any], known: PlatformFields, fail: Callable[[str, str], ConfigError]
) -> tuple[str, ...]:
    """`carousels = ["instagram", "bluesky"]`: the platforms that take each release's cards as
    a carousel too, each a slot platform that has carousels (issue 29)."""
    chosen = table.get("carousels", [])
    if not isinstance(chosen, list) or not all(isinstance(p, str) for p in chosen):
        raise fail("carousels", 'list platform names, e.g. ["instagram", "bluesky"]')
    for platform in chosen:
        if platform not in known.slot_names:
            raise fail("carousels", _unknown_platform(platform, known))
        note = known.carousel_note(platform)
        if note is not None:
            raise fail("carousels", f"{platform} takes no carousel: {note}")
    return tuple(p for p in known.slot_names if p in chosen)


def _approval(table: dict[str, Any], fail: Callable[[str, str], ConfigError]) -> bool:
    approval = table.get("approval", False)
    if not isinstance(approval, bool):
        raise fail("approval", "must be true or false")
    return approval


def _audience(
    table: dict[str, Any], fail: Callable[[str, str], ConfigError]
) -> tuple[bool, str, tuple[str, ...]]:
    """`auto_reply`, `reply_voice` and `reply_rules` (issue 28)."""
    auto_reply = table.get("auto_reply", False)
    if not isinstance(auto_reply, bool):
        raise fail("auto_reply", "must be true or false")
    voice = table.get("reply_voice", "")
    printable = isinstance(voice, str) and voice.replace("\n", " ").isprintable()
    if not printable or len(voice) > 1000:
        raise fail("reply_voice", "must be a text of at most 1000 characters")
    rules = table.get("reply_rules", [])
    if not isinstance(rules, list) or not all(
        isinstance(rule, str) and rule.strip() and len(rule) <= 300 for rule in rules
    ):
        raise fail("reply_rules", 'must be a list of short texts, e.g. ["never promise dates"]')
    return auto_reply, voice.strip(), tuple(rule.strip() for rule in rules)


def _ready_ahead(table: dict[str, Any], fail: Callable[[str, str], ConfigError]) -> int:
    ready_ahead = table.get("ready_ahead", 1)
    if (
        not isinstance(ready_ahead, int)
        or isinstance(ready_ahead, bool)
        or not 0 <= ready_ahead <= MOST_READY_AHEAD
    ):
        raise fail("ready_ahead", f"must be a whole number from 0 to {MOST_READY_AHEAD}")
    return ready_ahead


def _parse_channel(
    table: Any, known: PlatformFields, *, index: int, path: Path, paths: Paths
) -> ChannelConfig:
    """One `[[channels]]` section. Each field is checked on its own, so that ConfigProblems
    names every one that is wrong (`config check` lists them all)."""
    from .pipeline.settings import parse_pipeline

    if not isinstance(table, dict):
        raise ConfigError(path, "must be a table", field=f"channels[{index}]")
    problems = Problems()
    name = table.get("name")
    if not isinstance(name, str) or not CHANNEL_NAME.fullmatch(name):
        name = name if isinstance(name, str) else f"#{index + 1}"
        problems.found.append(
            ConfigError(
                path,
                "each channel needs a name of 1 to 40 characters: lowercase letters, digits, "
                "dashes",
                channel=name,
                field="name",
            )
        )
    problems.keep(_no_unknown_keys, table, CHANNEL_KEYS, path=path, channel=name)

    def fail(field_name: str, message: str) -> ConfigError:
        return ConfigError(path, message, channel=name, field=field_name)

    timezone = problems.keep(_timezone, table, fail)
    cadence = problems.keep(_parse_cadence, table, fail)
    chosen = problems.keep(_chosen_platforms, table, known, fail)
    approval = problems.keep(_approval, table, fail)
    ready_ahead = problems.keep(_ready_ahead, table, fail)
    audience = problems.keep(_audience, table, fail)
    carousels = problems.keep(_carousels, table, known, fail) if "carousels" in table else ()
    pipeline = problems.keep(
        parse_pipeline, table.get("pipeline"), path=path, channel=name, home=paths.home
    )
    twin_of = problems.keep(_twin_of, table.get("twin_of"), name=name, path=path)
    window = cadence[3] if cadence else timedelta(hours=2)
    films = None
    if "films" in table:
        films = problems.keep(_parse_films, table["films"], window, chosen, fail, known)
    if problems.found:
        raise ConfigProblems(problems.found)
    slot_texts, times, days, window = cadence
    channel = ChannelConfig(
        name=name,
        timezone=timezone,
        slot_times=slot_texts,
        days=days,
        catch_up_window=window,
        platforms=chosen,
        approval=approval,
        ready_ahead=ready_ahead,
        pipeline=pipeline,
        schedule=Schedule(
            timezone=timezone,
            times=tuple(times),
            weekdays=frozenset(WEEKDAYS.index(d) for d in days),
        ),
        produces="pipeline" in table,
        twin_of=twin_of,
        auto_reply=audience[0],
        reply_voice=audience[1],
        reply_rules=audience[2],
        carousels=carousels,
    )
    if films is not None:
        channel = replace(channel, films=_films_cadence(channel, films))
    return channel


def _parse_films(
    table: Any,
    window: timedelta,
    channel_platforms: tuple[str, ...] | None,
    fail: Callable[[str, str], ConfigError],
    known: PlatformFields,
) -> dict[str, Any]:
    """`[channels.films]`: a cadence of its own for the channel's approved films; its fields
    (for `_films_cadence`), each checked on its own."""
    if not isinstance(table, dict):
        raise fail("films", "must be a table with at least slots = [...]")
    problems = Problems()
    for key in table:
        if key not in FILMS_KEYS:
            allowed = ", ".join(sorted(FILMS_KEYS))
            problems.found.append(fail(f"films.{key}", f"unknown key (allowed: {allowed})"))
    cadence = problems.keep(_parse_cadence, table, fail, prefix="films.", default_window=window)

    def direct_publishing() -> bool:
        direct = table.get("direct_publishing", False)
        if not isinstance(direct, bool):
            raise fail("films.direct_publishing", "must be true or false")
        return direct

    def platforms() -> tuple[str, ...] | None:
        chosen = table.get("platforms", list(channel_platforms or ()) or None)
        if chosen is None:
            return None
        slot_names = known.slot_names
        if not isinstance(chosen, list) or not all(p in slot_names for p in chosen):
            raise fail("films.platforms", f"list platforms among {', '.join(slot_names)}")
        return tuple(p for p in slot_names if p in chosen)

    direct = problems.keep(direct_publishing)
    chosen = problems.keep(platforms)
    if problems.found:
        raise ConfigProblems(problems.found)
    return {"cadence": cadence, "direct": direct, "platforms": chosen}


def _films_cadence(channel: ChannelConfig, films: dict[str, Any]) -> ChannelConfig:
    """The channel's films cadence, served like a channel of its own named "<channel>/films"."""
    slot_texts, times, days, window = films["cadence"]
    return replace(
        channel,
        name=f"{channel.name}/films",
        slot_times=slot_texts,
        days=days,
        catch_up_window=window,
        platforms=films["platforms"],
        approval=True,  # only approved films are posted
        ready_ahead=0,
        produces=False,
        twin_of=None,
        schedule=Schedule(
            timezone=channel.timezone,
            times=tuple(times),
            weekdays=frozenset(WEEKDAYS.index(d) for d in days),
        ),
        owner=channel.name,
        kind="film",
        dry_run=not films["direct"],
    )


def _twin_of(value: Any, *, name: str, path: Path) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not CHANNEL_NAME.fullmatch(value) or value == name:
        raise ConfigError(
            path, "name another channel (the family channel)", channel=name, field="twin_of"
        )
    return value


STARTER_CONFIG = """\
# Autoretto configuration. Times in this file are local to each channel's time zone;
# everything Autoretto stores is UTC. `autoretto config check` validates this file.

# How long a run may go without a heartbeat before another run may take over its claim
# and treat its in-flight posts as "may be live".
stale_after = "15m"

# The publish journal notices a database restored from an old backup. By default it lives
# outside this home (~/.local/state/autoretto/...), so restoring the home does not roll it
# back; better still on another disk than the database (relative paths are inside the home).
# journal = "/var/backups/autoretto/publish.journal"
# journal = "s3://my-bucket/autoretto"   # several hosts on one PostgreSQL store: one journal

# Who hears about trouble (an incident, a post that needs you, a held restore):
# [notify]
# command = "/usr/local/bin/notify-me"          # gets the event as JSON on stdin
# webhook = "https://ntfy.sh/your-secret-topic"  # gets the event POSTed as JSON
# heartbeat_url = "https://hc-ping.com/your-uuid" # /start, then success or /fail, per run

# How long an episode published everywhere keeps its videos and audio in media/ (its facts
# and thumbnail stay; the outbox is never touched). "forever" keeps every file.
# [media]
# keep = "30d"
# url = "s3://my-autoretto/media"  # several hosts: made videos go to this bucket (README,
#                                  # "Media in a bucket"); endpoint and keys as boto3 finds them

# The page of `autoretto serve` (approve, hold, post now). On 127.0.0.1 it needs nothing here;
# to let it listen beyond this machine (--host), set a password or a token first:
# [serve]
# password_hash = "scrypt$..."         # `autoretto serve --hash-password` prints this line
# token_env = "AUTORETTO_SERVE_TOKEN"  # or a token kept in this environment variable
# public_url = "https://studio.example.net"  # where collaborators reach the page: review
#                                            # links point here (`autoretto review EP`)

[[channels]]
name = "demo"                      # unique, lowercase letters, digits and dashes
timezone = "UTC"                   # IANA time zone, e.g. "Europe/Berlin"
slots = ["10:00", "14:00", "18:00"]  # local times of the releases
# days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]   # default: every day
catch_up_window = "2h"             # a slot found later than this is recorded missed
platforms = ["folder"]             # left out: every connected platform
approval = false                   # true: only episodes you `autoretto approve` are posted
ready_ahead = 1                    # ready episodes kept in stock

[channels.pipeline]
audio = "synth"                    # synth | folder | suno
artwork = "procedural"             # procedural | gemini | track (your tracks' cover art)
copy = "template"                  # template | gemini
prompt = "warm lofi beat, rainy night"
style = "pulse"
synth_seconds = 30

[platforms.folder]
path = "outbox"                    # relative to the home, or absolute
"""
