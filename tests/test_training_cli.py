"""The training CLI (``python -m training.grpo.run``) refuses a bad config file with a usage
error naming the problem, before anything loads."""

from __future__ import annotations

import json

import pytest

from training.grpo.run import main


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"bogus": 1}', "unknown training config fields: ['bogus']"),
        ("{not json", "Expecting property name"),
    ],
)
def test_a_bad_config_is_a_usage_error(tmp_path, capsys, text, problem):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(SystemExit) as stopped:
        main(["--config", str(path)])
    assert stopped.value.code == 2
    assert problem in capsys.readouterr().err


def test_a_missing_config_file_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--config", str(tmp_path / "absent.json")])
    assert stopped.value.code == 2 and "No such file" in capsys.readouterr().err


def test_print_fields_lists_every_field_with_its_help(capsys):
    assert main(["--print-fields"]) == 0
    fields = json.loads(capsys.readouterr().out)
    assert "learning_rate" in fields and all(isinstance(v, str) for v in fields.values())
