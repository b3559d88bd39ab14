"""Errors a person can act on.

Everything here is "expected": the user's input or environment is wrong, and the message is
one plain sentence saying what and how to fix it. The CLI prints it on one line and exits with
`exit_code`; anything else that escapes is a bug and gets a traceback.
"""

from __future__ import annotations


class AutorettoError(Exception):
    """A problem a person must fix; `str()` is the one-line message."""

    exit_code = 1


class UsageError(AutorettoError):
    """Bad input on the command line or in a file the user named."""

    exit_code = 2


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
            where.append(f'channel "{channel}"')
        if field is not None:
            where.append(field)
        super().__init__(": ".join(where) + ": " + message)


class NotFound(UsageError):
    """A named thing (episode, post, channel) does not exist."""


class StoreError(AutorettoError):
    """The database cannot be opened or is not ours."""


class MediaError(UsageError):
    """A media file is missing, unreadable, or not what was expected."""
