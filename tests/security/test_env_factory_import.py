"""A `module:function` env factory whose module fails to import with something other than an
ImportError gets the one-paragraph error (exit 2) that names the module and what it raised,
not a traceback."""

from __future__ import annotations

import pytest

from shoal.cli import main

QUIET = ["--progress", "false", "--tensorboard", "false", "--eval-episodes", "0"]


@pytest.mark.parametrize(
    ("body", "raised"),
    [
        ("raise RuntimeError('no licence server')\n", "RuntimeError: no licence server"),
        ("x = {}['missing']\n", "KeyError: 'missing'"),
        ("def make(:\n", "SyntaxError"),
        ("import sys\nsys.exit(3)\n", "SystemExit: 3"),
    ],
)
def test_a_factory_module_that_raises_on_import_is_a_clear_error(
    capsys, tmp_path, monkeypatch, body, raised
):
    module = f"shoal_test_broken_{abs(hash(body))}"
    (tmp_path / f"{module}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    runs = tmp_path / "runs"
    code = main(["train", "ppo", "--env", f"{module}:make", "--runs-dir", str(runs), *QUIET])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert module in err and raised in err
