"""Where a home keeps its things: the home folder and the paths inside it.

Below everything that reads a config or an account: the platforms, the accounts and the fault
points need the home's paths, not the config that names them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

HOME_VARIABLE = "AUTORETTO_HOME"
CONFIG_NAME = "autoretto.toml"
DATABASE_NAME = "autoretto.db"
#: How each line of crontab.example starts: cron sets no variable from $HOME, so the job's shell
#: puts ~/.local/bin (the README's pipx install) on PATH and the default home in
#: AUTORETTO_HOME (unless a crontab line set it), the same lines for root and for a user.
CRON_ENVIRONMENT = (
    'export PATH="$HOME/.local/bin:/usr/local/bin:$PATH" '
    'AUTORETTO_HOME="${AUTORETTO_HOME:-$HOME/.local/share/autoretto}";'
)


def home_dir() -> Path:
    """AUTORETTO_HOME, else the user data dir (`$XDG_DATA_HOME/autoretto`)."""
    explicit = os.environ.get(HOME_VARIABLE)
    if explicit:
        return Path(explicit).expanduser().absolute()
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "autoretto"


@dataclass(frozen=True)
class Paths:
    """Where a home keeps its things."""

    home: Path

    @property
    def config(self) -> Path:
        return self.home / CONFIG_NAME

    @property
    def database(self) -> Path:
        return self.home / DATABASE_NAME

    @property
    def media(self) -> Path:
        return self.home / "media"

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    @property
    def run_log(self) -> Path:
        return self.logs / "run.log"

    def resolve(self, value: str | os.PathLike[str]) -> Path:
        """A path from the config: relative to the home, or absolute."""
        path = Path(value).expanduser()
        return path if path.is_absolute() else self.home / path
