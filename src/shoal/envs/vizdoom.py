"""ViZDoom (Kempka et al. 2016, "ViZDoom: A Doom-based AI Research Platform for Visual
Reinforcement Learning") as a `gymnasium.Env`, with the preprocessing Sample Factory (Petrenko et
al. 2020) trains with.

- Frame skip: each agent step repeats the action for `frame_skip` game tics (4 by default) and
  sums their rewards; frames are tics.
- The screen is rendered at 160x120 (the engine's smallest 4:3 size, SF's default) and resized
  to `width x height` (128x72, SF's `res_w`/`res_h`), RGB or grey, channels-first uint8.
- Actions: a Discrete over the scenario's binary buttons, every combination of at most
  `max_buttons` of them pressed at once (1: no-op plus one action per button, SF's
  `Discrete(1 + n)` for basic). A delta button (e.g. TURN_LEFT_RIGHT_DELTA) adds two actions,
  `±delta_step` on it alone.
- `game_variables=True`: the observation is a Dict, {"screen": the image, "variables": the
  scenario's game variables (health, ammo, ...) as float32 / 100}, the second input Sample
  Factory gives its battle agents; shoal's `DictTorso` gives each entry its own torso.
- Episodes: the player's death ends one (`terminated`), the scenario's `episode_timeout`
  truncates it (the state holds no clock, so the value bootstraps through a timeout).
- Rewards are the scenario's, unscaled (SF scales basic and deadly corridor by 0.01 in its
  logs; divide our returns by 100 to compare).

Scenarios ship inside the `vizdoom` wheel (with the freedoom WADs); a few of Sample Factory's
(battle, battle2) ship only with Sample Factory, and load from `scenario_dir`.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from shoal.errors import EnvError, close_matches

__all__ = ["SCENARIOS", "VizDoomEnv", "make_vizdoom", "scenario_config_path"]

VARIABLE_SCALE = 0.01  # health and armour run 0-100, ammo mostly below 100
VARIABLE_BOUND = 1e6  # of a raw game variable: positions are within +-32768 map units
RENDER_FPS = 35  # Doom's tic rate


@dataclass(frozen=True)
class Scenario:
    config: str  # the .cfg file
    sample_factory_only: bool = False  # ships only with Sample Factory, not in vizdoom's wheel


# The standard scenarios of ViZDoom's wheel, and Sample Factory's battle scenarios (SF names
# them doom_<name>), in the continuous-turning versions SF trains and reports; their delta
# button (TURN_LEFT_RIGHT_DELTA) becomes two actions here.
SCENARIOS: dict[str, Scenario] = {
    "basic": Scenario("basic.cfg"),
    "defend_the_center": Scenario("defend_the_center.cfg"),
    "defend_the_line": Scenario("defend_the_line.cfg"),
    "health_gathering": Scenario("health_gathering.cfg"),
    "health_gathering_supreme": Scenario("health_gathering_supreme.cfg"),
    "deadly_corridor": Scenario("deadly_corridor.cfg"),
    "my_way_home": Scenario("my_way_home.cfg"),
    "take_cover": Scenario("take_cover.cfg"),
    "predict_position": Scenario("predict_position.cfg"),
    "battle": Scenario("battle_continuous_turning.cfg", sample_factory_only=True),
    "battle2": Scenario("battle2_continuous_turning.cfg", sample_factory_only=True),
}


def scenario_config_path(name: str, scenario_dir: str | None = None) -> str:
    """The .cfg file of scenario `name`, or of the path `name` itself when it ends in .cfg.

    `scenario_dir` is searched first; then, for the standard scenarios, vizdoom's own folder.
    Raises EnvError naming close matches, or saying where the Sample Factory ones come from.
    """
    if name.endswith(".cfg"):
        if not os.path.isfile(name):
            raise EnvError(f"The ViZDoom config file {name!r} does not exist.")
        return os.path.abspath(name)
    scenario = SCENARIOS.get(name)
    if scenario is None:
        hits = close_matches(name, list(SCENARIOS))
        hint = f" Did you mean {' or '.join('vizdoom:' + h for h in hits)}?" if hits else ""
        raise EnvError(
            f"Unknown ViZDoom scenario {name!r}.{hint} Scenarios: {', '.join(SCENARIOS)}; or "
            "give a config file as vizdoom:PATH.cfg."
        )
    if scenario_dir is not None:
        path = os.path.join(scenario_dir, scenario.config)
        if os.path.isfile(path):
            return path
    if scenario.sample_factory_only:
        where = f" (not found in {scenario_dir!r})" if scenario_dir else ""
        raise EnvError(
            f"vizdoom:{name} is one of Sample Factory's scenarios: its {scenario.config} and WAD "
            f"ship only with Sample Factory's repository (sf_examples/vizdoom/doom/scenarios), "
            f"not with the vizdoom package{where}. Point --env.vizdoom-scenario-dir at a folder "
            "holding them, e.g. that folder of a Sample Factory install, or choose one of "
            f"{', '.join(n for n, s in SCENARIOS.items() if not s.sample_factory_only)}."
        )
    import vizdoom

    return os.path.join(vizdoom.scenarios_path, scenario.config)


class VizDoomEnv(gym.Env[Any, np.int64]):
    """One ViZDoom game, headless, seeded by `reset(seed=...)` (module docstring)."""

    # gymnasium's class attribute
    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": RENDER_FPS}  # noqa: RUF012

    def __init__(
        self,
        scenario: str = "basic",
        *,
        frame_skip: int = 4,
        width: int = 128,
        height: int = 72,
        grey: bool = False,
        game_variables: bool = False,
        max_buttons: int = 1,
        delta_step: float = 10.0,
        scenario_dir: str | None = None,
        render_mode: str | None = "rgb_array",
    ) -> None:
        if frame_skip < 1 or width < 1 or height < 1 or max_buttons < 1:
            raise EnvError(
                f"ViZDoom needs frame_skip, width, height and max_buttons >= 1; got {frame_skip}, "
                f"{width}, {height} and {max_buttons}."
            )
        if render_mode not in (None, "rgb_array"):
            raise EnvError(
                f"ViZDoom renders only render_mode='rgb_array' or None, got {render_mode!r}."
            )
        try:
            import vizdoom
        except ImportError:
            raise EnvError(
                "ViZDoom scenarios need the vizdoom package: pip install 'shoal[vizdoom]'."
            ) from None
        self.scenario, self.frame_skip, self.render_mode = scenario, frame_skip, render_mode
        self._size, self._grey, self._with_variables = (width, height), grey, game_variables
        game = vizdoom.DoomGame()
        game.load_config(scenario_config_path(scenario, scenario_dir))
        game.set_window_visible(False)  # headless: no X display is needed
        game.set_mode(vizdoom.Mode.PLAYER)  # synchronous: the game waits for each action
        game.set_screen_resolution(vizdoom.ScreenResolution.RES_160X120)
        game.set_screen_format(vizdoom.ScreenFormat.RGB24)  # [H, W, 3]; grey is made from it
        game.set_sound_enabled(False)
        self._game = game
        buttons = game.get_available_buttons()
        self._actions = _action_table(
            [vizdoom.is_binary_button(b) for b in buttons], max_buttons, delta_step
        )
        self._num_variables = len(game.get_available_game_variables())
        try:
            game.init()
        except Exception as err:  # vizdoom raises its own exception types from C++
            raise EnvError(f"ViZDoom failed to start scenario {scenario!r}: {err}") from None
        channels = 1 if grey else 3
        screen = gym.spaces.Box(0, 255, (channels, height, width), np.uint8)
        if game_variables:
            # finite bounds (Gymnasium's checker warns of infinite ones), far past any variable
            bound = VARIABLE_BOUND * VARIABLE_SCALE
            variables = gym.spaces.Box(-bound, bound, (self._num_variables,), np.float32)
            self.observation_space: gym.spaces.Space = gym.spaces.Dict(
                {"screen": screen, "variables": variables}
            )
        else:
            self.observation_space = screen
        self.action_space = gym.spaces.Discrete(len(self._actions))
        self._last_screen = np.zeros((120, 160, 3), np.uint8)
        self._last_variables = np.zeros(self._num_variables, np.float32)

    @property
    def button_names(self) -> list[str]:
        return [b.name for b in self._game.get_available_buttons()]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            # the engine's own RNG decides spawns and monsters; seed it from ours
            self._game.set_seed(int(self.np_random.integers(2**31)))
        self._game.new_episode()
        return self._observe(), {}

    def step(self, action: int | np.integer) -> tuple[Any, float, bool, bool, dict]:
        reward = self._game.make_action(self._actions[int(action)], self.frame_skip)
        finished = self._game.is_episode_finished()
        terminated = finished and self._game.is_player_dead()
        truncated = finished and not terminated
        return self._observe(), float(reward), terminated, truncated, {}

    def render(self) -> np.ndarray:
        """The last screen at the engine's 160x120, `[120, 160, 3]` uint8 RGB."""
        if self.render_mode != "rgb_array":
            raise EnvError("This ViZDoom env was made with render_mode=None; it does not render.")
        return self._last_screen

    def close(self) -> None:
        self._game.close()

    def _observe(self) -> Any:
        state = self._game.get_state()
        if state is not None:  # None once the episode finished: the last frame is kept
            self._last_screen = state.screen_buffer
            if self._num_variables:
                self._last_variables = np.asarray(state.game_variables, np.float32) * VARIABLE_SCALE
        screen = _resized(self._last_screen, self._size, self._grey)
        if self._with_variables:
            return {"screen": screen, "variables": self._last_variables.copy()}
        return screen


def _resized(rgb: np.ndarray, size: tuple[int, int], grey: bool) -> np.ndarray:
    """`[H, W, 3]` -> `[C, height, width]`, nearest pixel, as Sample Factory's doom envs do (its
    ResizeWrapper's default); area averaging cost 0.2 ms a frame against 0.035."""
    import cv2

    image = (
        rgb
        if (rgb.shape[1], rgb.shape[0]) == size
        else cv2.resize(rgb, size, interpolation=cv2.INTER_NEAREST)
    )
    if grey:
        return cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)[None]
    return np.ascontiguousarray(image.transpose(2, 0, 1))


def _action_table(binary: list[bool], max_buttons: int, delta_step: float) -> list[list[float]]:
    """Button vectors, one per discrete action: no-op, every set of at most `max_buttons`
    binary buttons, then `+delta_step` and `-delta_step` on each delta button alone."""
    n = len(binary)
    on = [i for i in range(n) if binary[i]]
    table: list[list[float]] = []
    for k in range(min(max_buttons, len(on)) + 1):
        for pressed in itertools.combinations(on, k):
            table.append([1.0 if i in pressed else 0.0 for i in range(n)])
    for i in (i for i in range(n) if not binary[i]):
        for sign in (1.0, -1.0):
            table.append([sign * delta_step if j == i else 0.0 for j in range(n)])
    return table


def make_vizdoom(scenario: str, **options: Any) -> VizDoomEnv:
    """The ViZDoom `scenario` (a name of `SCENARIOS` or a PATH.cfg) with `VizDoomEnv`'s options."""
    return VizDoomEnv(scenario, **options)
