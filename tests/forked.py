"""`autoretto ARGS` as a real process of its own, forked from a server that has the program
imported already (multiprocessing's forkserver, one per test process, preloaded with what a run
imports), instead of a fresh interpreter that imports it all again (~0.4 s of CPU a process).

The process is the program's own run: its own pid (SIGKILL it, ask after it), its own
environment (the test's, as `tests.support.run_process` gives it), its own connections to the
store and the fakes, stdin from /dev/null, stdout and stderr kept for `communicate()`; it ends
with the program's exit code, or minus the signal that killed it, as `subprocess.Popen` says.
The forkserver itself never runs the program, opens no store and starts no thread: what a
process inherits from it is the imported modules only.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: what `python -m autoretto run-due` (and a person's post by hand) imports, loaded once in the
#: forkserver: the command line, the engine, the ledger on either store, every platform
PRELOAD = [
    "tests.forked",
    "autoretto.cli",
    "autoretto.commands",
    "autoretto.engine.run_due",
    "autoretto.posts",
    "autoretto.replies",
    "autoretto.platforms",
    "autoretto.ledger.store",
    "autoretto.manual_post",
    "requests",
    "psycopg",
    "tests.contract.table",
]

_context = None
_folder: str | None = None


def _outputs() -> str:
    """The folder of the processes' stdout and stderr files, removed when the tests end."""
    global _folder
    if _folder is None:
        import atexit
        import shutil

        _folder = tempfile.mkdtemp(prefix="autoretto-forked-")
        atexit.register(shutil.rmtree, _folder, True)
    return _folder


def _forkserver():
    global _context
    if _context is None:
        import autoretto.platforms as platforms

        # every platform module: the registry may import them lazily
        modules = {type_.__module__ for type_ in platforms.REGISTRY.values()}
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload([*PRELOAD, *sorted(modules)])
    return _context


def _child(module: str, args: list[str], env: dict[str, str], out: str, err: str) -> None:
    """In the forked process: the environment, the standard streams, then the program as
    `python -m MODULE ARGS` runs it; exits with its code."""
    os.environ.clear()
    os.environ.update(env)
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, out, os.O_WRONLY),
        (2, err, os.O_WRONLY),
    ):
        opened = os.open(path, flags)
        os.dup2(opened, fd)
        os.close(opened)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", errors="backslashreplace", closefd=False)  # noqa: SIM115
    sys.argv = [module, *args]
    code: int = 0
    try:
        import runpy

        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as done:
        if done.code is None:
            code = 0
        elif isinstance(done.code, int):
            code = done.code
        else:
            print(done.code, file=sys.stderr)
            code = 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        import logging

        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
    os._exit(code)


@contextlib.contextmanager
def _main_left_out():
    """Start a process without multiprocessing's preparation running this program's main
    script again in it (as `__mp_main__`): the process runs `python -m MODULE`, nothing else."""
    main = sys.modules["__main__"]
    names = ("__file__", "__spec__")
    saved = {name: main.__dict__[name] for name in names if name in main.__dict__}
    main.__spec__ = None
    main.__dict__.pop("__file__", None)
    try:
        yield
    finally:
        main.__dict__.update(saved)
        if "__spec__" not in saved:
            del main.__spec__


class Forked:
    """The `subprocess.Popen` of a forked run: pid, poll, wait, communicate, kill."""

    def __init__(self, module: str, args: tuple[str, ...], env: dict[str, str]) -> None:
        folder = Path(tempfile.mkdtemp(prefix="run-", dir=_outputs()))
        self._out, self._err = folder / "stdout", folder / "stderr"
        self._out.touch()
        self._err.touch()
        self.args = [module, *args]
        self._process = _forkserver().Process(
            target=_child, args=(module, list(args), env, str(self._out), str(self._err))
        )
        with _main_left_out():
            self._process.start()
        self.pid: int = self._process.pid
        self.returncode: int | None = None
        self._said: tuple[str, str] | None = None

    def poll(self) -> int | None:
        if self.returncode is None and not self._process.is_alive():
            self.returncode = self._process.exitcode
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        if self.poll() is None:
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode  # type: ignore[return-value]

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        """(stdout, stderr) once the process ended (the second time: what it said the first)."""
        self.wait(timeout)
        if self._said is None:
            self._said = (self._out.read_text(), self._err.read_text())
            with contextlib.suppress(OSError):
                self._out.unlink()
                self._err.unlink()
                self._out.parent.rmdir()
        return self._said

    def kill(self) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()


def run_forked(
    *args: str, now: str | None = None, env: dict[str, str] | None = None, module: str = "autoretto"
) -> Forked:
    """`tests.support.run_process`, forked: start `python -m MODULE ARGS` (`autoretto` unless
    told) with the test's environment, AUTORETTO_NOW=`now` and `env` on top."""
    environment = dict(os.environ)
    if now:
        environment["AUTORETTO_NOW"] = now
    environment.update(env or {})
    return Forked(module, args, environment)


def run_command_forked(
    *args: str, now: str | None = None, env: dict[str, str] | None = None, timeout: float = 120
) -> tuple[int, str, str]:
    """`tests.support.run_command`, forked: (exit code, stdout, stderr)."""
    process = run_forked(*args, now=now, env=env)
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err  # type: ignore[return-value]


def paused_at_forked(
    home: Path, point: str, *args: str, now: str | None = None, timeout: float = 120
) -> Forked:
    """`tests.support.paused_at`, forked: the process once it sits at the fault point `point`."""
    process = run_forked(*args, now=now, env={"AUTORETTO_FAULT": f"{point}:pause"})
    marker = home / f"fault-{point}.paused"
    deadline = time.monotonic() + timeout
    while not marker.exists() and time.monotonic() < deadline:
        if process.poll() is not None:
            break
        time.sleep(0.01)
    if not marker.exists():
        process.kill()
        raise AssertionError(f"never paused at {point}: {process.communicate()}")
    return process
