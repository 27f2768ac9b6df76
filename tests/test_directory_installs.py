"""Installs into a shared npm prefix: two runs started from the web at once must not run npm into
the same node_modules together. A fake `npm` on PATH records when each install ran (and whether
another was running in the same prefix when it started); the installs are taken one at a time,
and the second install of the same package finds it installed and runs no npm at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from environments.directory import installs
from environments.directory.installs import InstallError, install_lock, npm_install
from environments.directory.listing import PACKAGE, install_directory

FAKE_NPM = """\
    #!{python}
    # `npm install --prefix PREFIX ... SPEC` as far as the tests need: marks the prefix busy,
    # sleeps, leaves node_modules/NAME/package.json and logs when it ran
    import json, os, sys, time

    args = sys.argv[1:]
    prefix, spec = args[args.index("--prefix") + 1], args[-1]
    busy = os.path.join(prefix, ".fake-npm-busy")
    try:
        os.close(os.open(busy, os.O_CREAT | os.O_EXCL))
        overlapped = False
    except FileExistsError:
        overlapped = True
    start = time.time()
    time.sleep(float(os.environ.get("FAKE_NPM_SECONDS", "0.4")))
    name = spec.rsplit("@", 1)[0] if spec.rfind("@") > 0 else spec
    package = os.path.join(prefix, "node_modules", name)
    os.makedirs(package, exist_ok=True)
    with open(os.path.join(package, "package.json"), "w") as handle:
        json.dump({{"name": name}}, handle)
    end = time.time()
    if not overlapped:
        os.remove(busy)
    with open(os.environ["FAKE_NPM_LOG"], "a") as log:
        log.write(json.dumps({{"spec": spec, "pid": os.getpid(), "start": start, "end": end,
                              "overlapped": overlapped}}) + "\\n")
"""


@pytest.fixture
def fake_npm(tmp_path, monkeypatch) -> Path:
    """A fake `npm` first on PATH; the path of its log (one JSON line per install it ran)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text(textwrap.dedent(FAKE_NPM).format(python=sys.executable))
    npm.chmod(0o755)
    log = tmp_path / "npm.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_NPM_LOG", str(log))
    return log


def runs_of(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def assert_one_at_a_time(runs: list[dict]) -> None:
    assert not any(run["overlapped"] for run in runs), runs
    ordered = sorted(runs, key=lambda run: run["start"])
    for earlier, later in zip(ordered, ordered[1:], strict=False):
        assert earlier["end"] <= later["start"], ordered


def test_two_runs_installing_the_directory_at_once_run_npm_once(fake_npm, tmp_path):
    """Both threads find the package missing and ask for it together; the second waits for the
    first's install and then finds the package there."""
    prefix = tmp_path / "npm-catalogue"
    start = threading.Barrier(2)
    found: list[Path] = []
    errors: list[BaseException] = []

    def install() -> None:
        start.wait()
        try:
            found.append(install_directory(prefix))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=install) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors, errors
    assert found == [prefix / "node_modules" / PACKAGE] * 2
    runs = runs_of(fake_npm)
    assert len(runs) == 1, runs  # the second found the first's install
    assert (prefix / "node_modules" / PACKAGE / "package.json").is_file()


def test_installs_into_one_prefix_from_two_processes_never_overlap(fake_npm, tmp_path):
    """Two processes (as two workers would) install different packages into one prefix: both
    install, one after the other."""
    prefix = tmp_path / "shared"
    script = (
        "import sys; from pathlib import Path; "
        "from environments.directory.installs import npm_install; "
        "npm_install(Path(sys.argv[1]), sys.argv[2], 30)"
    )
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    processes = [
        subprocess.Popen(  # noqa: S603 - this interpreter, a fixed script
            [sys.executable, "-c", script, str(prefix), spec], cwd=root, env=env
        )
        for spec in ("left-pad@1.3.0", "@scope/right-pad@2.0.0")
    ]
    assert [process.wait(timeout=60) for process in processes] == [0, 0]
    runs = runs_of(fake_npm)
    assert sorted(run["spec"] for run in runs) == ["@scope/right-pad@2.0.0", "left-pad@1.3.0"]
    assert len({run["pid"] for run in runs}) == 2
    assert_one_at_a_time(runs)


def test_an_install_that_waits_too_long_for_another_says_so(fake_npm, tmp_path):
    prefix = tmp_path / "busy"
    with install_lock(prefix, "the first install", timeout=1):
        with pytest.raises(InstallError) as refused:
            npm_install(prefix, "left-pad@1.3.0", timeout=0.5)
    assert "npm install left-pad@1.3.0 into" in str(refused.value)
    assert f"another install into {prefix} still held" in str(refused.value)
    assert runs_of(fake_npm) == []
    assert npm_install(prefix, "left-pad@1.3.0", timeout=5)  # free again: it installs
    assert npm_install(prefix, "left-pad@1.3.0", timeout=5, installed=lambda: True) is False
    assert len(runs_of(fake_npm)) == 1


def test_the_lock_is_taken_for_pip_installs_into_a_venv_too(tmp_path, monkeypatch):
    """Nothing is installed while another holds the venv's lock; once held, an install that an
    earlier holder finished is not run again."""
    venv = tmp_path / "pkg" / "venv"
    ran: list[list[str]] = []
    monkeypatch.setattr(installs, "run_installer", lambda command, *_: ran.append(command))
    with install_lock(venv.parent, "another", timeout=1):
        with pytest.raises(InstallError, match="still held"):
            installs.pip_install_in_venv(venv, "mcp-server-time==1", timeout=0.3)
    assert ran == []
    assert installs.pip_install_in_venv(venv, "x==1", installed=lambda: True) is False
    assert ran == []
    assert installs.pip_install_in_venv(venv, "x==1")
    assert [command[-1] for command in ran] == [str(venv), "x==1"]
