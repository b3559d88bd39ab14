"""How passing failures are retried inside one job (`[retry]` in the config).

Below the config and the platforms: the config reads it, every platform's `retrying` spends it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RetryPolicy:
    """How passing failures are retried inside one job (`[retry]` in the config)."""

    attempts: int = 4  # tries in all, the first included
    first_wait: float = 2.0  # seconds; doubles each time, with jitter
    max_wait: float = 60.0  # a Retry-After longer than this is left to the next slot
