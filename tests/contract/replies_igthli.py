"""Reply-contract rows for Instagram, Threads and LinkedIn (issue 28), for the table of
`tests/contract/replies.py` (helper "replies" writes it; once merged these rows join the end of
its list and this file goes).

Each row names the platform, makes its fake (on the shared base, so it speaks the fault
vocabulary: `drop_after`, `store_then_fail`, `revoke`, `rate_limit`), names the fake's operations
a reply goes through (`crash_at`: the call whose answer Autoretto keeps as a handle, then the
call that makes the reply; the faults of a case hit the last one), says whether the platform can
be asked whether a reply went out (`can_ask`), and `seed`s the fake with one of our posts and a
comment under it, returning (post id, comment id) as `posts.platform_post_id` and
`comments.platform_comment_id` hold them. The fake's `my_replies()` is what a person sees:
a case passes when it holds the reply once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ReplyRow:
    name: str
    fake: Callable[[], Any]
    crash_at: tuple[str, ...]
    seed: Callable[[Any], tuple[str, str]]
    #: LinkedIn lists a comment's replies only to apps granted r_member_social; the fake's
    #: account here is granted it (the comments could not be read otherwise)
    can_ask: bool = True
    #: a token scope list the account must carry (LinkedIn's per-token scopes), else None
    scopes: str | None = None

    def __str__(self) -> str:
        return self.name

    @property
    def reply_operation(self) -> str:
        return self.crash_at[-1]


def _instagram() -> Any:
    from tests.fakes.instagram_server import INSTAGRAM, FakeGraph

    return FakeGraph(INSTAGRAM)


def _threads() -> Any:
    from tests.fakes.threads_server import fake_threads

    return fake_threads()


def _linkedin() -> Any:
    from tests.fakes.linkedin_server import FakeLinkedIn

    fake = FakeLinkedIn()
    fake.granted = "openid,profile,w_member_social,r_member_social"
    return fake


def _graph_seed(fake: Any) -> tuple[str, str]:
    post = fake.add_post("Rainy night")
    return post, fake.add_comment(post, "love this", username="mika")


def _linkedin_seed(fake: Any) -> tuple[str, str]:
    post = fake.add_post("Rainy night")
    return post, fake.add_comment(post, "Lovely track")


ROWS = [
    ReplyRow("instagram", _instagram, crash_at=("reply",), seed=_graph_seed),
    # the container is saved on the attempt before `threads_publish`
    ReplyRow("threads", _threads, crash_at=("reply_container", "reply_publish"), seed=_graph_seed),
    ReplyRow(
        "linkedin",
        _linkedin,
        crash_at=("comment",),
        seed=_linkedin_seed,
        scopes="openid,profile,w_member_social,r_member_social",
    ),
]
