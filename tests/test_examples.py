import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.integration
def test_quickstart_example_solves_cartpole_and_plays_with_the_loaded_policy(tmp_path, capsys):
    module = runpy.run_path(str(EXAMPLES / "quickstart.py"))
    episode_return = module["main"](str(tmp_path / "runs"))
    assert episode_return >= 475
    assert "one episode with the loaded policy" in capsys.readouterr().out


@pytest.mark.integration
def test_custom_env_and_network_example_learns_its_corridor(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import custom_env_and_network

    assert custom_env_and_network.main(str(tmp_path / "runs")) >= 0.9
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert run_dir.name.startswith("ppo-make_corridor-")
