"""The questions of a posting screen (a post a person makes: `autoretto post NAME EPISODE`).

Each question is a small function that takes `ask` (a prompt -> the typed answer) and `say` (a
line, with an optional rich style), so tests drive a screen with scripted answers and the
command wires rich's prompt and console to them. A platform's own screen (its adapter's
`ask_choices`) is built from these. Nothing is chosen for the person: a list has no
preselected item, a yes/no question's empty answer is no.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Ask = Callable[[str], str]
Say = Callable[..., None]  # say(text, style="")

YES = ("y", "yes")
NO = ("n", "no", "")


class Cancelled(Exception):
    """The person declined; nothing was sent."""


@dataclass(frozen=True)
class VideoFacts:
    """What the preview shows of the video that will be sent."""

    path: str
    duration: float | None
    size_bytes: int
    width: int | None
    height: int | None

    @property
    def resolution(self) -> str:
        return f"{self.width}x{self.height}" if self.width and self.height else "unknown"

    @property
    def size_text(self) -> str:
        return f"{self.size_bytes / 1_000_000:.1f} MB"


def ask_yes_no(ask: Ask, say: Say, question: str) -> bool:
    """A yes/no question whose empty answer is no."""
    while True:
        answer = ask(f"{question} [y/N]").strip().lower()
        if answer in YES:
            return True
        if answer in NO:
            return False
        say("Answer y or n.", style="yellow")


def ask_text(ask: Ask, say: Say, question: str, default: str, *, limit: int, required: bool) -> str:
    """A line of text: empty keeps `default`; longer than `limit` is asked again."""
    shown = default if len(default) <= 60 else default[:57] + "…"
    while True:
        answer = ask(f"{question} [{shown}]" if default else question).strip()
        value = answer or default
        if required and not value:
            say(f"{question} cannot be empty.", style="yellow")
            continue
        if len(value) > limit:
            say(f"{question} is {len(value)} characters; at most {limit}.", style="yellow")
            continue
        return value


def ask_number(ask: Ask, say: Say, question: str, items: list[str]) -> int:
    """The index of one of `items`, listed 1..n. Nothing is preselected: an empty answer is
    refused and the question asked again."""
    for number, item in enumerate(items, start=1):
        say(f"  {number}. {item}")
    while True:
        answer = ask(f"{question} (1-{len(items)})").strip()
        if not answer:
            say("Choose one: nothing is chosen for you.", style="yellow")
            continue
        if answer.isdigit() and 1 <= int(answer) <= len(items):
            return int(answer) - 1
        say(f"Type a number from 1 to {len(items)}.", style="yellow")


def show_video(screen: Any, say: Say) -> None:
    """The line that says what video a screen (with its `video` facts) sends."""
    video = screen.video
    duration = f"{video.duration:.1f} s" if video.duration else "unknown"
    say(f"Video: {duration}, {video.size_text}, {video.resolution}  ({video.path})")
