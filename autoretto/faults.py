"""Named crash points, for testing crash safety with real processes.

`AUTORETTO_FAULT=POINT:kill` makes the process SIGKILL itself when it reaches `POINT` (a real
kill -9: no cleanup, no `finally`); `POINT:pause` writes `<home>/fault-POINT.paused` holding the
pid and sleeps, so a test can kill it from outside at that moment; `POINT:fill` fills the
disk of `<home>/media` with `<home>/media/fault-filler` (until the disk says it is full)
and goes on, so a test sees what a disk that fills up at that moment does; `POINT:enospc`
raises the error a full disk gives there (for machines where a test cannot mount a small file
system). Unset (always, outside the test suite) a checkpoint costs one dictionary lookup.

Points: after_claim, before_send, after_send, before_journal (a publish committed, its journal
line not yet written), journal_append (any event committed, its line not yet appended),
after_publish_recorded, handles_saved (a platform's handle on record, its next call not made),
before_stamp, make_<stage> as a make reaches each pipeline stage (make_audio, make_beats,
make_copy, make_artwork, make_render, make_gates), import_copy while `episode add` copies
the video, and media_upload in the middle of a made episode's upload to the media bucket (a
file's object is there, its record and the other files are not); and a reply's (issue 28):
reply_before_send (its attempt and journal line recorded, nothing sent), reply_after_send (the
platform answered, the database not told), reply_after_recorded (its publish recorded).
"""

from __future__ import annotations

import errno
import os
import signal
import time

FAULT_VARIABLE = "AUTORETTO_FAULT"


def checkpoint(point: str) -> None:
    wanted = os.environ.get(FAULT_VARIABLE)
    if not wanted:
        return
    name, _, action = wanted.partition(":")
    if name != point:
        return
    if action == "fill":
        _fill_disk()
        return
    if action == "enospc":
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC) + f" (injected at {point})")
    if action == "pause":
        from .paths import home_dir

        marker = home_dir() / f"fault-{point}.paused"
        marker.write_text(str(os.getpid()))
        time.sleep(600)
    os.kill(os.getpid(), signal.SIGKILL)


def _fill_disk() -> None:
    import errno

    from .paths import home_dir

    filler = home_dir() / "media" / "fault-filler"
    block = b"\0" * (1 << 20)
    try:
        with open(filler, "ab") as handle:
            while True:
                handle.write(block)
                handle.flush()
    except OSError as error:
        if error.errno != errno.ENOSPC:
            raise
