import runpy
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_quickstart_example_solves_cartpole_and_plays_with_the_loaded_policy(tmp_path, capsys):
    module = runpy.run_path(str(EXAMPLES / "quickstart.py"))
    episode_return = module["main"](str(tmp_path / "runs"))
    assert episode_return >= 475
    assert "one episode with the loaded policy" in capsys.readouterr().out
