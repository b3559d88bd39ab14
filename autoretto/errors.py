"""Errors a person can act on.

Everything here is "expected": the user's input or environment is wrong, and the message is
one plain sentence saying what and how to fix it. The CLI prints it on one line and exits with
`exit_code`; anything else that escapes is a bug and gets a traceback.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from enum import IntEnum
from typing import Any

#: how much of a value a person typed is echoed back in an error
SHOWN_LENGTH = 60


def shown(value: object, limit: int = SHOWN_LENGTH) -> str:
    """`value` as an error message shows it: a text quoted, anything else as Python writes it;
    control characters escaped (a newline in a name must not start a second line, an escape
    sequence must not reach the terminal); cut at `limit` characters."""
    if not isinstance(value, str):
        return one_line(repr(value)[:limit])
    text = value[:limit].replace("\\", "\\\\").replace('"', '\\"')
    return f'"{one_line(text)}{"…" if len(value) > limit else ""}"'


def one_line(text: str) -> str:
    """`text` with every control character escaped, so that it prints as one line."""
    return "".join(
        c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii")
        for c in text
    )


class Exit(IntEnum):
    """The exit codes of every command (the README's table)."""

    DONE = 0  # the command did its job (nothing due, an empty listing: done too)
    NEEDS_PERSON = 1  # a person must look: an error, a post that needs you, a sick machine
    MISTAKE = 2  # a mistake on the command line or in the config; nothing was changed
    HELD = 3  # posting is held (a restore, a damaged journal): `autoretto journal` says more
    RETRY = 4  # a post failed for now (a platform down); the next run tries it again


class AutorettoError(Exception):
    """A problem a person must fix; `str()` is the one-line message."""

    exit_code = Exit.NEEDS_PERSON


class UsageError(AutorettoError):
    """Bad input on the command line or in a file the user named."""

    exit_code = Exit.MISTAKE


class ConfigError(UsageError):
    """The config file is wrong. Names the file, the channel (if any) and the field."""

    def __init__(
        self, path: object, message: str, *, channel: str | None = None, field: str | None = None
    ) -> None:
        self.path = str(path)
        self.channel = channel
        self.field = field
        self.detail = message
        where = [self.path]
        if channel is not None:
            where.append(f"channel {shown(channel)}")
        if field is not None:
            where.append(field)
        super().__init__(": ".join(where) + ": " + message)


class ConfigProblems(ConfigError):
    """Every problem found in the config file (`problems`, in the file's order). Its message
    is the first one's, saying how many more there are: a command that cannot run on this
    config says one line; `config check` lists them all."""

    def __init__(self, problems: list[ConfigError]) -> None:
        first = problems[0]
        more = len(problems) - 1
        message = first.detail
        if more:
            message += f" (and {more} more; `autoretto config check` lists them)"
        super().__init__(first.path, message, channel=first.channel, field=first.field)
        self.problems = list(problems)


class Problems:
    """The config problems found so far: each part of the file (and each field of a table) is
    checked on its own, so that `config check` names every problem at once."""

    def __init__(self) -> None:
        self.found: list[ConfigError] = []

    def keep(self, parse: Callable[..., Any], *arguments: Any, **options: Any) -> Any:
        """`parse(...)`; None (and the problem kept) when it finds a problem."""
        try:
            return parse(*arguments, **options)
        except ConfigProblems as error:
            self.found.extend(error.problems)
        except ConfigError as error:
            self.found.append(error)
        return None

    def raise_found(self) -> None:
        """ConfigProblems naming every problem kept, if there is one."""
        if self.found:
            raise ConfigProblems(self.found)


class NotFound(UsageError):
    """A named thing (episode, post, channel) does not exist."""


class PostingHeld(AutorettoError):
    """Posting is held: the database knows fewer publishes than the journal (a restore)."""

    exit_code = Exit.HELD


class JournalDamaged(PostingHeld):
    """The publish journal cannot be read: a line that is not UTF-8 or not JSON, or lacks the
    fields of its kind, or a folder (or an unreadable file) where the journal should be. It can
    then no longer prove what went out, so posting holds, as after a restore, until a person
    mends it. Names the file, the line (when one is at fault) and what to do."""

    def __init__(
        self, path: object, problem: str, *, line: int | None = None, fix: str | None = None
    ) -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem
        if fix is not None:  # an object of a journal in a bucket says its own
            where = self.path
        elif line is None:
            where, fix = self.path, "move it away"
        else:
            where = f"{self.path}: line {line}"
            fix = "mend or delete that line (keep a copy of the file first)"
        super().__init__(
            f"{where} {problem}: the publish journal is damaged and posting is held; {fix}, "
            "then run `autoretto journal` (it says whether `autoretto resume --checked` is "
            "needed)"
        )


class ClockApart(AutorettoError):
    """This host's clock is too far from the store's: a run refuses to post (exit 1)."""


class StoreError(AutorettoError):
    """The database cannot be opened or is not ours."""


class MediaError(UsageError):
    """A media file is missing, unreadable, or not what was expected."""


DISK_FULL = "the disk is full; free some space, then run again (nothing is lost)"

# Errors from the file system that a person fixes (space, a mount, permissions), not bugs.
_ENVIRONMENT_ERRNOS = {
    errno.ENOSPC: DISK_FULL,
    errno.EDQUOT: "the disk quota is used up; free some space, then run again (nothing is lost)",
    errno.EROFS: "the file system is read-only; remount it writable, then run again",
    errno.EACCES: "permission denied; run Autoretto as the user that owns its home",
    errno.EPERM: "not permitted; run Autoretto as the user that owns its home",
    errno.EIO: "the disk reported an input/output error; check it (dmesg), then run again",
}


def environment_problem(error: BaseException) -> str | None:
    """One line for an error of the machine a person must fix (a full disk, a read-only one),
    naming the file; None for anything else."""
    if not isinstance(error, OSError):
        return None
    advice = _ENVIRONMENT_ERRNOS.get(error.errno or 0)
    if advice is None:
        return None
    return f"{error.filename}: {advice}" if error.filename else advice
