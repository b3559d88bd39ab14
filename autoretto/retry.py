"""How passing failures are retried inside one job (`[retry]` in the config).

Below the config and the platforms: the config reads it, every platform's `retrying` spends it
(YouTube's resumable upload too, which loops over its chunks itself).
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class RetryPolicy:
    """How passing failures are retried inside one job (`[retry]` in the config)."""

    attempts: int = 4  # tries in all, the first included
    first_wait: float = 2.0  # seconds; doubles each time, with jitter
    max_wait: float = 60.0  # a Retry-After longer than this is left to the next slot

    def waits_out(self, retry_after: float | None) -> bool:
        """Is a server's Retry-After short enough to be waited out inside this job?"""
        return (retry_after or 0.0) <= self.max_wait

    def wait(self, failures: int, retry_after: float | None = None) -> float:
        """Seconds to wait after the `failures`-th failed try: exponential backoff with full
        jitter (first_wait, doubling, at most max_wait), never less than the server asked; 0
        when first_wait is 0."""
        if self.first_wait <= 0:
            return 0.0
        ceiling = min(self.max_wait, self.first_wait * 2.0 ** max(0, failures - 1))
        return max(retry_after or 0.0, random.uniform(0, ceiling))
