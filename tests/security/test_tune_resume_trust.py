"""Issue 35, item 2: `shoal tune --resume DIR` unpickles Ray Tune's `tuner.pkl` and imports the
modules `shoal-tune.yaml` names, so a downloaded experiment must not be resumed without
`--trust-run`."""

from __future__ import annotations

import pickle
import sys

import pytest

from shoal.cli import main
from shoal.errors import ConfigError
from shoal.tune import tune

MODULE = "shoal_test_untrusted_tune_module"


class _Evil:
    """Unpickling this runs `exec`: what a hostile tuner.pkl can hold."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('unpickled')",))


def _downloaded_experiment(tmp_path, monkeypatch):
    """An experiment directory from elsewhere: its env is a module that leaves a marker when
    imported (then fails, so that a test of the old code stops before Ray starts), and its
    tuner.pkl a pickle that leaves one when read."""
    marker = tmp_path / "ran"
    (tmp_path / f"{MODULE}.py").write_text(
        f"open({str(marker)!r}, 'a').write('imported')\nraise ImportError('hostile')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    exp_dir = tmp_path / "tune-ppo-downloaded"
    exp_dir.mkdir()
    (exp_dir / "shoal-tune.yaml").write_text(
        f"algo: ppo\nenv: {MODULE}:make\nseed: 0\nconfig_file: null\nagent: {{}}\n"
        "run: {total_steps: 256, address: 203.0.113.7:6379}\nenv_config: {}\n"
        "space: {agent.learning_rate: {loguniform: [0.0003, 0.01]}}\nscheduler: fifo\n"
        "samples: 1\npopulation: 4\nmetric: return_mean\nmode: max\n"
        "perturbation_interval: null\ncpus_per_trial: 1.0\n"
    )
    (exp_dir / "tuner.pkl").write_bytes(pickle.dumps(_Evil(marker)))
    return exp_dir, marker


def test_tune_resume_of_an_untrusted_experiment_is_refused(capsys, tmp_path, monkeypatch):
    exp_dir, marker = _downloaded_experiment(tmp_path, monkeypatch)
    assert main(["tune", "--resume", str(exp_dir)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert "tuner.pkl" in err and "--trust-run" in err
    with pytest.raises(ConfigError, match="trust_run=True"):
        tune(resume=exp_dir)
    assert not marker.exists() and MODULE not in sys.modules


def test_tune_resume_with_trust_run_goes_on_to_read_the_experiment(capsys, tmp_path, monkeypatch):
    exp_dir, marker = _downloaded_experiment(tmp_path, monkeypatch)
    # Trusted, the stored env is imported (and fails here, before Ray starts).
    assert main(["tune", "--resume", str(exp_dir), "--trust-run"]) == 2
    assert "hostile" in capsys.readouterr().err
    assert marker.read_text() == "imported"
