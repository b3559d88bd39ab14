"""Post now, pressed on the page: `engine.post_now` on a thread of its own.

`post-now` waits 20 s to 2 min before it sends (a human pace). The page must not hang for that
long, so each press starts a job: the request waits only until the engine has said when the post
goes out, and the page shows that moment, then "going out now", then each platform's outcome.
A press that stops on an error says what the database says of its posts: one left `sending` or
`may_be_live` may be on the platform (its request went out before the error), and the next run
looks for it there before sending it again; only when none is left so is it "not posted".
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
from ..errors import AutorettoError, environment_problem

if TYPE_CHECKING:
    from ..config import Config

log = logging.getLogger("autoretto.web")

KEEP_JOBS = 100  # finished jobs kept to show their outcome; the database keeps the rest
IN_DOUBT = ("sending", "may_be_live")  # a post in these states may be on the platform


@dataclass
class PostNowJob:
    id: str
    episode_id: int
    pressed_at: datetime
    # starting | waiting | sending | done | refused (stopped, nothing of it may be out) |
    # unsure (stopped, and a post it began may be live)
    state: str = "starting"
    moment: datetime | None = None  # when it goes out, once the engine has drawn it
    results: list[Any] = field(default_factory=list)  # engine.PostNowResult per platform
    error: str | None = None  # why it stopped
    in_doubt: list[dict] = field(default_factory=list)  # unsure: its posts (`posts --json`)
    announced: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def pending(self) -> bool:
        return self.state in ("starting", "waiting", "sending")

    @property
    def message(self) -> str:
        """What became of a press that stopped, as the page says it."""
        if self.state != "unsure":
            return f"not posted: {self.error}"
        where = ", ".join(f"{p['platform']} (post {p['id']})" for p in self.in_doubt)
        return (
            f"may be live{' on ' + where if where else ''}: Post now stopped after it began "
            f"sending ({self.error}); the next run looks for it on the platform before it "
            "sends it again"
        )


PostNow = Callable[..., list[Any]]
EpisodePosts = Callable[[Any, int], dict[int, dict]]  # actions.episode_posts


class PostNowJobs:
    """The server's Post now presses, newest first."""

    def __init__(
        self, config: Callable[[], Config], post_now: PostNow, posts: EpisodePosts
    ) -> None:
        self.config = config  # the config as it is at each press
        self.post_now = post_now
        self.posts = posts
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

        before = self._posts(job)
        try:
            job.results = self.post_now(
                self.config(), job.episode_id, announce=announce, sleep=sleep
            )
            job.state = "done"
        except AutorettoError as error:
            self._stopped(job, before, str(error), str(error))
        except Exception as error:
            problem = environment_problem(error)  # a full disk, a read-only one: no bug
            if problem is None:  # a bug: the page says so plainly, the log has the traceback
                log.exception("post now for episode %s failed", job.episode_id)
                problem = "Post now stopped on an unexpected error; the server's log has it"
                cause = problem
            else:
                # Without the advice: "nothing is lost" is not true of a post in doubt.
                cause = getattr(error, "strerror", None) or problem
            self._stopped(job, before, problem, cause)
        finally:
            job.announced.set()

    def _posts(self, job: PostNowJob) -> dict[int, dict] | None:
        """The episode's posts now; None when they cannot be read."""
        try:
            return self.posts(self.config(), job.episode_id)
        except AutorettoError:  # no such episode: the press itself says so
            return None
        except Exception as error:  # the press goes on; what it did is judged without them
            log.warning("post now for episode %s: cannot read its posts: %s", job.episode_id, error)
            return None

    def _stopped(
        self, job: PostNowJob, before: dict[int, dict] | None, problem: str, cause: str
    ) -> None:
        """A press stopped on an error: "not posted" only when no post it began is in doubt.

        A post is this press's when it is new or has more attempts than before the press
        (the engine counts an attempt when it marks the post `sending`, before the request).
        """
        after = self._posts(job) if before is not None else None
        if before is None or after is None:
            # Not known: once past the wait, a request may have gone out.
            unsure, doubtful = job.state == "sending", []
        else:
            doubtful = [
                post
                for post in after.values()
                if post["state"] in IN_DOUBT
                and post["attempts"] > before.get(post["id"], {"attempts": 0})["attempts"]
            ]
            unsure = bool(doubtful)
        if unsure:
            job.error, job.in_doubt, job.state = cause, doubtful, "unsure"
        else:
            job.error, job.state = problem, "refused"
