"""An expected refusal on the command line: one line naming the problem, a non-zero exit, and
the traceback only under `--traceback`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, ManagementUtility

REPO = Path(__file__).resolve().parents[1]
BOOKS_CSV = b"""isbn,title,author,year,genre,price
9780000000001,Alpha,Ann Lee,1999,fiction,12.5
9780000000002,Beta,Bob Ray,2003,science,20.0
9780000000003,Gamma,Cal Doe,2010,fiction,8.75
"""


@pytest.fixture
def storage(settings, tmp_path):
    settings.STORAGE_ROOT = tmp_path / "storage"
    settings.AW_JOBS_MODE = "thread"
    return settings.STORAGE_ROOT


def manage(capfd, *argv: str) -> tuple[int, str]:
    """Run `manage.py argv` as the shell would (exit code, stderr), in this process."""
    with pytest.raises(SystemExit) as exited:
        ManagementUtility(["manage.py", *argv]).execute()
    return exited.value.code, capfd.readouterr().err


def assert_one_line_refusal(code: int, err: str, words: str) -> None:
    assert code != 0
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], err


@pytest.mark.django_db(transaction=True)
def test_a_refused_build_is_one_line_and_its_traceback_waits_for_the_flag(storage, tmp_path, capfd):
    path = tmp_path / "books.csv"
    path.write_bytes(BOOKS_CSV)
    build = ["build_environment", "--file", str(path), "--min-tools", "50"]

    code, err = manage(capfd, *build)

    assert_one_line_refusal(code, err, "verify stage failed")
    assert "needs at least 50" in err

    with pytest.raises(CommandError, match="verify stage failed"):  # Django re-raises it
        ManagementUtility(["manage.py", *build, "--traceback"]).execute()
    err = capfd.readouterr().err
    assert "Traceback" in err and "BuildFailed: verify stage failed" in err  # the job's own


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["build_environment", "--source", "atlantis"], "unknown source 'atlantis'"),
        (["build_environment", "--file", "/nowhere/books.csv"], "no such file"),
        (["build_environment", "--theme", "999999"], "no theme with id 999999"),
        (["run_embedded", "--sources", "atlantis", "--no-serve"], "unknown source atlantis"),
        (["run_embedded", "--rounds", "-1", "--no-serve"], "--rounds must be 0 or more"),
        (["serve_mcp", "nowhere"], "no verified environment 'nowhere'"),
        (
            ["create_role_user", "rita", "--role", "viewer", "--password-env", "AW_NO_SUCH"],
            "set AW_NO_SUCH to a password",
        ),
    ],
)
def test_each_command_refuses_bad_input_in_one_line(storage, capfd, argv, words):
    code, err = manage(capfd, *argv)

    assert_one_line_refusal(code, err, words)


@pytest.mark.django_db(transaction=True)
def test_traceback_flag_shows_the_refusals_traceback(storage, capfd):
    with pytest.raises(Exception, match="unknown source 'atlantis'"):
        ManagementUtility(
            ["manage.py", "build_environment", "--source", "atlantis", "--traceback"]
        ).execute()


@pytest.mark.parametrize(
    ("content", "words"),
    [("{not json", "--config"), ('{"bogus": 1}', "unknown training config fields")],
)
def test_the_training_run_refuses_a_bad_config_in_one_line(tmp_path, content, words):
    config = tmp_path / "run.json"
    config.write_text(content)
    command = [sys.executable, "-m", "training.grpo.run", "--config", str(config)]

    refused = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)

    assert_one_line_refusal(refused.returncode, refused.stderr, words)
    shown = subprocess.run(
        [*command, "--traceback"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert shown.returncode != 0 and "Traceback" in shown.stderr
