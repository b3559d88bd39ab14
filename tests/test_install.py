"""The README's "Install on a home server", run as a new user runs it, and the cron line and the
systemd units that run what it installed.

The module's fixture follows the README in a fresh home directory, in a shell whose environment
holds only what a new login has: its first code block (pipx installs the checkout into a
virtual environment of its own), then its second in a new interactive shell, which finds
`autoretto` only through the PATH line `pipx ensurepath` wrote. So that nothing reaches the
internet, the Debian `apt-get install pipx` line is left out (pipx comes from the `test` extra,
behind a `pipx` command on the shell's PATH), and the `pipx install` line gets pip's `--no-deps
--no-build-isolation` and `PIP_NO_INDEX`: the checkout is built and installed for real, and the
dependencies (and the build's setuptools) come from the test environment instead of PyPI. The
test environment may itself be a virtual environment (the README's test command makes one),
whose packages a `--system-site-packages` environment would not see: pipx makes its environments
with a Python that names the test environment's site-packages in a `.pth` file of each one.
Then the crontab's lines and the units' ExecStart run under `env -i` with
only the variables they document.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from autoretto.paths import CRON_ENVIRONMENT
from autoretto.stats import crontab_line
from tests.conftest import TEST_NOW
from tests.support import channel_toml

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
CRONTAB = ROOT / "crontab.example"
CONTRIB = ROOT / "contrib"
OFFLINE_PIPX = "--pip-args='--no-deps --no-build-isolation'"
#: where the test environment's packages are: pipx's environment takes them instead of PyPI's
TEST_PACKAGES = [path for path in site.getsitepackages() if Path(path).is_dir()]


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    return README[start : README.index("\n## ", start + 1)]


def code_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


@dataclass(frozen=True)
class Crontab:
    variables: dict[str, str]
    jobs: list[str]  # the command of each active line
    commented_jobs: list[str]


def read_crontab(text: str) -> Crontab:
    variables, jobs, commented = {}, [], []
    for line in text.splitlines():
        if match := re.match(r"^([A-Z_]+)=(.*)$", line):
            variables[match[1]] = match[2]
        elif match := re.match(r"^(#\s*)?((?:\S+\s+){5})(.*autoretto .*)$", line):
            (commented if match[1] else jobs).append(match[3])
        else:
            assert not line.strip() or line.startswith("#"), f"crontab.example: {line!r}"
    return Crontab(variables, jobs, commented)


def read_unit(path: Path) -> dict[str, list[str]]:
    """`Section.Key` -> values, in order (a key may repeat, as Environment= does)."""
    found: dict[str, list[str]] = {}
    current = ""
    for line in path.read_text().splitlines():
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1]
        elif "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            found.setdefault(f"{current}.{key.strip()}", []).append(value.strip())
    return found


@dataclass(frozen=True)
class NewUser:
    home: Path
    shell_env: dict[str, str]  # a new login's environment
    autoretto: Path  # where `command -v autoretto` found it in a new shell
    autoretto_home: Path  # where `autoretto init` made the home

    def cron_env(self, crontab: Crontab) -> dict[str, str]:
        """What cron gives a job (crontab(5): HOME, LOGNAME and SHELL, and Debian's cron
        PATH=/usr/bin:/bin, then the crontab's own variables, taken as they are written) plus
        the test's clock (every test runs at a fixed instant)."""
        env = {
            "HOME": str(self.home),
            "LOGNAME": "you",
            "SHELL": "/bin/sh",
            "PATH": "/usr/bin:/bin",
        }
        env |= crontab.variables
        env["AUTORETTO_NOW"] = TEST_NOW
        return env


def env_i(env: dict[str, str], command: str, *, now: str | None = None):
    """`env -i NAME=VALUE... /bin/sh -c COMMAND`: nothing of the test's environment leaks in."""
    pairs = [f"{k}={v}" for k, v in (env | ({"AUTORETTO_NOW": now} if now else {})).items()]
    return subprocess.run(
        ["env", "-i", *pairs, "/bin/sh", "-c", command],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def bash(env: dict[str, str], script: str, *, interactive: bool = False, cwd: Path):
    """A new bash (interactive: reads ~/.bashrc, as a new terminal does) running `script`."""
    flags = ["-i"] if interactive else []
    done = subprocess.run(
        ["env", "-i", *[f"{k}={v}" for k, v in env.items()], "/bin/bash", *flags, "-c", script],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
    )
    assert done.returncode == 0, f"{script}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def new_user(tmp_path_factory: pytest.TempPathFactory) -> NewUser:
    base = tmp_path_factory.mktemp("new-user")
    home, system_bin, source = base / "you", base / "usr-bin", base / "autoretto"
    home.mkdir()
    system_bin.mkdir()
    # A clone of this repository, without what a build or a test run leaves in the checkout.
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", "tests", "benchmarks", "__pycache__", "build", "*.egg-info", ".*cache",
            ".hypothesis", "test-artifacts", "demo-home", ".venv",
        ),
    )  # fmt: skip
    # Stands in for Debian's /usr/bin/pipx: pipx as the `test` extra installed it.
    pipx = system_bin / "pipx"
    pipx.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m pipx "$@"\n')
    pipx.chmod(0o755)
    # The Python pipx makes its environments with: the test's own, and after `-m venv ... DIR`
    # a .pth file in DIR naming the test environment's packages.
    python = system_bin / "python-with-test-packages"
    named = " ".join(shlex.quote(path) for path in TEST_PACKAGES)
    python.write_text(
        f'#!/bin/sh\n"{sys.executable}" "$@" || exit $?\n'
        'if [ "$1 $2" = "-m venv" ]; then\n'
        "  for made; do :; done\n"
        '  packages="$(echo "$made"/lib/python*/site-packages)"\n'
        f'  printf "%s\\n" {named} > "$packages/test-packages.pth"\n'
        "fi\n"
    )
    python.chmod(0o755)
    shell_env = {
        "HOME": str(home),
        "USER": "you",
        "LOGNAME": "you",
        "SHELL": "/bin/bash",
        "LANG": "C.UTF-8",
        "PATH": f"{system_bin}:/usr/local/bin:/usr/bin:/bin",
        "AUTORETTO_NOW": TEST_NOW,
        # Offline: no package index, no upgrade of pipx's own pip from it, and the venv made
        # from the interpreter that has the test environment's packages.
        "PIP_NO_INDEX": "1",
        "PIPX_DISABLE_SHARED_LIBS_AUTO_UPGRADE": "1",
        "PIPX_DEFAULT_PYTHON": str(python),
    }
    # The README's two install blocks: before a new shell, and in it.
    before_new_shell, in_new_shell = code_blocks(section("Install on a home server"), "bash")[:2]
    lines = []
    for line in before_new_shell.splitlines():
        if line.startswith("sudo apt-get install"):
            continue  # pipx is already there (above)
        if line.startswith("pipx install "):
            words = line.split()
            line = f"pipx install {OFFLINE_PIPX} {source} # was: {words[2]}"
        lines.append(line)
    bash(shell_env, "set -e\n" + "\n".join(lines), cwd=home)
    done = bash(
        shell_env, "set -e\n" + in_new_shell + "command -v autoretto\n", interactive=True, cwd=home
    )
    found = Path(done.stdout.strip().splitlines()[-1])
    user = NewUser(home, shell_env, found, home / ".local" / "share" / "autoretto")
    # The person swaps the starter's demo channel (its first run makes a video, ~40 s) for a
    # channel of their own that posts the videos they add.
    config = user.autoretto_home / "autoretto.toml"
    assert "[[channels]]" in config.read_text()  # what `autoretto init` wrote
    config.write_text(
        channel_toml("lofi", slots=("10:00",)) + '\n[platforms.folder]\npath = "outbox"\n'
    )
    return user


@pytest.mark.install
def test_the_readme_install_puts_a_working_autoretto_on_a_new_shells_path(new_user):
    assert new_user.autoretto == new_user.home / ".local" / "bin" / "autoretto"
    # It runs the installed copy, not this checkout: its own virtual environment's package.
    python = new_user.autoretto.resolve().parent / "python"
    shown = subprocess.run(
        ["env", "-i", str(python), "-c", "import autoretto; print(autoretto.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=new_user.home,  # not this checkout, which `python -c` would put first on sys.path
    ).stdout.strip()
    assert shown.startswith(str(new_user.home / ".local" / "share" / "pipx" / "venvs"))
    assert (new_user.autoretto_home / "autoretto.toml").is_file()
    assert (new_user.autoretto_home / "autoretto.db").is_file()


@pytest.mark.install
def test_the_crontab_runs_the_installed_autoretto_under_env_i(new_user, clip):
    crontab = read_crontab(CRONTAB.read_text())
    # The same lines for root and for a user: nothing to replace, no user's name or home.
    lines = [*crontab.jobs, *crontab.commented_jobs, *crontab.variables.values()]
    assert not [line for line in lines if re.search(r"YOU|/home/|/root", line)]
    cron = new_user.cron_env(crontab)
    (run_due,) = crontab.jobs
    assert "%" not in run_due  # cron would cut the command there
    assert "autoretto run-due" in run_due
    # The job's shell finds the command the README installed, and the home init made.
    assert run_due.startswith(CRON_ENVIRONMENT)
    found = env_i(cron, f'{CRON_ENVIRONMENT} command -v autoretto; echo "$AUTORETTO_HOME"')
    assert found.stdout.split() == [str(new_user.autoretto), str(new_user.autoretto_home)]
    # The person adds a video to their channel; cron does the rest.
    added = env_i(cron, f"{CRON_ENVIRONMENT} autoretto episode add lofi {clip} --title 'Night'")
    assert added.returncode == 0, added.stderr
    for moment in ("2026-11-29T09:07:00Z", "2026-11-29T10:07:00Z"):
        ran = env_i(cron, run_due, now=moment)
        assert ran.returncode == 0 and ran.stdout == ran.stderr == "", ran
    log = (new_user.autoretto_home / "logs" / "cron.log").read_text()
    assert "lofi 2026-11-29T10:00 folder: posted (post 1)" in log, log
    assert list((new_user.autoretto_home / "outbox" / "lofi").glob("*.mp4"))

    # The stats line: crontab.example says `autoretto stats minute` prints it; it runs too.
    (example,) = [job for job in crontab.commented_jobs if "autoretto stats collect" in job]
    assert f"36 * * * * {example}" == crontab_line(36)
    shown = env_i(cron, f"{CRON_ENVIRONMENT} autoretto stats minute")
    assert shown.returncode == 0, shown.stderr
    (line,) = [text for text in shown.stdout.splitlines() if text.endswith("2>&1")]
    minute, command = re.match(r"^(\d+) \* \* \* \* (.*)$", line).groups()
    assert 1 <= int(minute) <= 59
    collected = env_i(cron, command, now="2026-11-29T10:36:00Z")
    assert collected.returncode == 0, collected.stderr
    assert "counters moved" in (new_user.autoretto_home / "logs" / "cron.log").read_text()


@pytest.mark.install
def test_the_systemd_units_run_the_installed_autoretto(new_user, tmp_path):
    def expand(text: str) -> str:
        return text.replace("%h", str(new_user.home))

    for name in (
        "autoretto.service",
        "autoretto-stats.service",
        "autoretto-inbox.service",
        "autoretto-serve.service",
    ):
        unit = read_unit(CONTRIB / name)
        (command,) = unit["Service.ExecStart"]
        assert Path(expand(command).split()[0]) == new_user.autoretto, name
        environment = dict(expand(pair).split("=", 1) for pair in unit["Service.Environment"])
        assert Path(environment["AUTORETTO_HOME"]) == new_user.autoretto_home, name
    service = read_unit(CONTRIB / "autoretto.service")
    assert service["Service.Nice"] == ["10"]
    assert service["Service.IOSchedulingClass"] == ["best-effort"]
    timer = read_unit(CONTRIB / "autoretto.timer")
    assert timer["Timer.RandomizedDelaySec"] and timer["Timer.FixedRandomDelay"] == ["true"]

    # The run's ExecStart with only the unit's environment, as systemd starts it.
    environment = dict(expand(pair).split("=", 1) for pair in service["Service.Environment"])
    ran = env_i(
        {"HOME": str(new_user.home), **environment},
        expand(service["Service.ExecStart"][0]),
        now="2026-11-29T11:07:00Z",
    )
    assert ran.returncode == 0, ran.stderr

    if shutil.which("systemd-analyze") is None:
        pytest.skip("no systemd-analyze on this machine to check the units with")
    # systemd's own reading of the units: unknown keys, bad values and an ExecStart that is not
    # an executable are warnings on stderr.
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    units = [str(path) for path in sorted(CONTRIB.iterdir())]
    checked = subprocess.run(
        ["systemd-analyze", "verify", "--user", *units],
        env={"HOME": str(new_user.home), "XDG_RUNTIME_DIR": str(runtime), "PATH": os.defpath},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0 and checked.stderr == "", checked.stderr


@pytest.mark.install
def test_shell_completion_installs_as_the_readme_says(new_user):
    assert "`autoretto --install-completion`" in section("Install on a home server")
    shell = new_user.shell_env
    # As typed at a terminal, where bash forks the command and stays its parent (typer asks
    # the parent which shell it is): `bash -c` of one lone command would exec it in bash's
    # place, and its parent would be whatever started the test
    installed = bash(
        shell, "autoretto --install-completion; exit $?", interactive=True, cwd=new_user.home
    )
    assert "completion installed" in installed.stdout.lower()
    # In the next shell, completing `autoretto run-` offers run-due: bash calls the function
    # `complete` names with the command, the word to complete and the word before it.
    completed = bash(
        shell,
        "complete -p autoretto\n"
        "COMP_WORDS=(autoretto run-); COMP_CWORD=1\n"
        "_autoretto_completion autoretto run- autoretto\n"
        'echo "${COMPREPLY[@]}"',
        interactive=True,
        cwd=new_user.home,
    )
    registered, offered = completed.stdout.splitlines()
    assert registered.endswith("-F _autoretto_completion autoretto")
    assert "run-due" in offered.split()
    shown = bash(
        shell, "autoretto --show-completion bash; exit $?", interactive=True, cwd=new_user.home
    )
    assert "complete " in shown.stdout and "_AUTORETTO_COMPLETE" in shown.stdout


def test_the_readme_cron_lines_are_the_crontabs():
    """What the README shows is what crontab.example holds (quick: no install)."""
    shown = code_blocks(section("Running from cron"), "cron")[0].splitlines()
    lines = CRONTAB.read_text().splitlines()
    assert shown and all(line in lines for line in shown)


def readme_commands() -> tuple[str, str]:
    """The README's two commands at its top: the quick start and the test command."""
    first, tests = code_blocks(README[: README.index("\n---\n")], "bash")
    return first.strip(), tests.strip()


def test_the_readme_commands_work_in_a_virtual_environment_they_make(tmp_path):
    """Issue 27, friction 6: Debian 12 and newer refuse `pip install` outside a virtual
    environment (PEP 668), and Debian's Python makes one only with python3-venv. Each of the
    README's two commands is still one line; it installs python3-venv, makes `.venv` and works
    in it, so its `pip` and `python3` are the environment's. Run here up to its `pip install`,
    with apt-get standing by (the machine has what it would install)."""
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    ran: list[list[str]] = []  # the steps run, apt-get's (a stand-in here) left out
    for command in readme_commands():
        assert "\n" not in command
        steps = command.split(" && ")
        (install,) = [i for i, step in enumerate(steps) if step.startswith("pip install")]
        before = steps[:install]
        (apt,) = [step for step in before if step.startswith("apt-get install")]
        assert "python3-venv" in apt.split()
        assert before[-2:] == ["python3 -m venv .venv", ". .venv/bin/activate"], before
        # The stand-in apt-get does nothing with what it is asked: a command whose steps, its
        # apt-get lines aside, are those of one already run would make the same .venv again.
        if [step for step in before if not step.startswith("apt-get ")] in ran:
            continue
        ran.append([step for step in before if not step.startswith("apt-get ")])
        stand_in = tmp_path / "bin"
        stand_in.mkdir(exist_ok=True)
        (stand_in / "apt-get").write_text("#!/bin/sh\nexit 0\n")
        (stand_in / "apt-get").chmod(0o755)
        checkout = tmp_path / "checkout"
        checkout.mkdir(exist_ok=True)
        done = subprocess.run(
            ["/bin/bash", "-c", " && ".join([*before, "command -v pip python3"])],
            env={"PATH": f"{stand_in}:/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path)},
            cwd=checkout, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [
            str(checkout / ".venv" / "bin" / "pip"),
            str(checkout / ".venv" / "bin" / "python3"),
        ]
    # CI runs the README's test command as it is written.
    assert readme_commands()[1] in ci
