"""What a pipeline provider can answer besides a result."""

from __future__ import annotations

from autoretto.errors import AutorettoError


class ProviderRefused(AutorettoError):
    """The provider said no in a way only a person can fix: a bad or missing key, no credits,
    a prompt it will not serve. Never retried."""


class PromptDeclined(ProviderRefused):
    """The provider would not answer this prompt as asked (a safety block, an answer cut short,
    text where an image was asked for). Asking again with the same words gets the same answer;
    other words may not. `reason` is the provider's code (e.g. SAFETY, NO_IMAGE)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class ProviderUnavailable(AutorettoError):
    """The provider failed in a passing way (outage, timeout, 5xx, 429, a garbled answer) and
    the retries inside the client ran out. The next run may succeed."""


class NoTrackLeft(AutorettoError):
    """The folder audio source has no track this channel has not used yet."""


class NotEnoughSpace(AutorettoError):
    """The disk holding the episode's folder has too little free space for the make (found
    before it starts, or when a write failed for lack of space). The make resumes."""
