"""Post now, pressed on the page: `engine.post_now` on a thread of its own.

`post-now` waits 20 s to 2 min before it sends (a human pace). The page must not hang for that
long, so each press starts a job: the request waits only until the engine has said when the post
goes out, and the page shows that moment, then "going out now", then each platform's outcome.
A job holds nothing that matters to the never-twice rule: that stays in the database, where the
engine's claim and post guards keep two presses, or a press and cron, from posting twice. A
server stopped while a job waits sends nothing (as a `post-now` stopped with Ctrl-C).
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .. import clock
from ..errors import AutorettoError

if TYPE_CHECKING:
    from ..config import Config

log = logging.getLogger("autoretto.web")

KEEP_JOBS = 100  # finished jobs kept to show their outcome; the database keeps the rest


@dataclass
class PostNowJob:
    id: str
    episode_id: int
    pressed_at: datetime
    state: str = "starting"  # starting | waiting | sending | done | refused
    moment: datetime | None = None  # when it goes out, once the engine has drawn it
    results: list[Any] = field(default_factory=list)  # engine.PostNowResult per platform
    error: str | None = None
    announced: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def pending(self) -> bool:
        return self.state in ("starting", "waiting", "sending")


PostNow = Callable[..., list[Any]]


class PostNowJobs:
    """The server's Post now presses, newest first."""

    def __init__(self, config: Callable[[], Config], post_now: PostNow) -> None:
        self.config = config  # the config as it is at each press
        self.post_now = post_now
        self._jobs: list[PostNowJob] = []
        self._lock = threading.Lock()

    def start(self, episode_id: int, *, wait: float = 15.0) -> PostNowJob:
        """Start a press for `episode_id`; returns once it knows when it goes out (or why not)."""
        job = PostNowJob(secrets.token_hex(6), episode_id, clock.now())
        with self._lock:
            self._jobs.insert(0, job)
            done = [j for j in self._jobs if not j.pending]
            for old in done[KEEP_JOBS:]:
                self._jobs.remove(old)
        threading.Thread(
            target=self._run, args=(job,), name=f"post-now-{job.id}", daemon=True
        ).start()
        job.announced.wait(wait)
        return job

    def for_episode(self, episode_id: int) -> list[PostNowJob]:
        with self._lock:
            return [job for job in self._jobs if job.episode_id == episode_id]

    def pending(self) -> list[PostNowJob]:
        with self._lock:
            return [job for job in self._jobs if job.pending]

    def _run(self, job: PostNowJob) -> None:
        def announce(moment: datetime) -> None:
            job.moment = moment
            job.state = "waiting"
            job.announced.set()

        def sleep(moment: datetime) -> None:
            clock.sleep_until(moment)
            job.state = "sending"

        try:
            job.results = self.post_now(
                self.config(), job.episode_id, announce=announce, sleep=sleep
            )
            job.state = "done"
        except AutorettoError as error:
            job.error = str(error)
            job.state = "refused"
        except Exception:  # a bug: the page says so plainly, the log keeps the traceback
            log.exception("post now for episode %s failed", job.episode_id)
            job.error = "Post now stopped on an unexpected error; the server's log has it"
            job.state = "refused"
        finally:
            job.announced.set()
