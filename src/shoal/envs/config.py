"""How environments are built and stepped: backend, vectorisation and the Atari protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shoal.config import param


@dataclass(frozen=True, kw_only=True)
class EnvConfig:
    backend: Literal["auto", "gymnasium", "envpool"] = param(
        "auto", "Atari backend: envpool when installed (auto), or gymnasium's ALE."
    )
    vector: Literal["inline", "subprocess", "numpy"] = param(
        "inline",
        "Step an actor's envs in this process, in worker processes (shared memory), or "
        "(numpy, CartPole-v1 only) as one array by Gymnasium's vector CartPole.",
    )
    num_workers: int | None = param(None, "Worker processes for vector=subprocess (default: CPUs).")
    import_module: str | None = param(
        None, "Import this module first, e.g. one that registers ids."
    )
    image_layout: Literal["auto", "channels_first", "channels_last"] = param(
        "auto",
        "Rank-3 Box observations: channels-last ones are transposed to channels-first; auto "
        "reads (H, W, C) when the last dim is 1..4 and the first larger than 4.",
    )
    action_mask_from_info: bool = param(
        False,
        "Read the legal actions from info['action_mask'] and carry them in the observation "
        "as its 'action_mask' entry (an 'action_mask' Dict entry is read without this).",
    )
    double_buffer: bool = param(
        True,
        "envpool: two halves of the envs step in turn, one while the policy acts on the other "
        "(from 2 envs; recurrent policies act on all envs at once).",
    )
    sticky_actions: bool = param(False, "Atari: repeat the last action with probability 0.25.")
    full_action_space: bool = param(
        False, "Atari: all 18 actions instead of the game's minimal set."
    )
    noop_max: int = param(30, "Atari: up to this many no-op actions at the start of an episode.")
    terminal_on_life_loss: bool = param(False, "Atari: end the episode when a life is lost.")
    max_frames: int = param(108_000, "Atari: truncate episodes at this many emulator frames.")
    minatar_sticky_prob: float = param(0.1, "MinAtar: probability of repeating the last action.")
    agent_id: bool = param(
        False, "PettingZoo: give each agent's observation a one-hot of which agent it is."
    )
    minigrid_image: Literal["one_hot", "scaled"] = param(
        "one_hot",
        "MiniGrid: its (V, V, 3) object/colour/state indices as 20 one-hot planes, or each "
        "index divided by its largest value.",
    )
    dm_control_pixels: bool = param(
        False, "dm_control: observe the rendered frame (camera 0) instead of the state vector."
    )
    dm_control_pixel_size: int = param(84, "dm_control: height and width of rendered frames.")
    dm_control_action_repeat: int = param(
        1,
        "dm_control: control steps each action is held for (rewards summed); frames count "
        "control steps, as in PlaNet's and DrQ's benchmarks (8 for cartpole there).",
    )
    vizdoom_frame_skip: int = param(4, "ViZDoom: game tics per agent step (rewards summed).")
    vizdoom_width: int = param(128, "ViZDoom: screen width after resizing (from 160x120).")
    vizdoom_height: int = param(72, "ViZDoom: screen height after resizing.")
    vizdoom_grey: bool = param(False, "ViZDoom: grey screens (1 channel) instead of RGB.")
    vizdoom_game_variables: bool = param(
        False, "ViZDoom: Dict observations {screen, variables} with health, ammo, ... / 100."
    )
    vizdoom_max_buttons: int = param(
        1, "ViZDoom: actions are the sets of at most this many buttons pressed at once."
    )
    vizdoom_scenario_dir: str | None = param(
        None, "ViZDoom: a folder searched first for scenario .cfg files (SF's battle ones)."
    )

    def __post_init__(self) -> None:
        if self.num_workers is not None and self.num_workers <= 0:
            raise ValueError(f"num_workers must be > 0, got {self.num_workers}.")
        if self.noop_max < 0 or self.max_frames <= 0:
            raise ValueError("noop_max must be >= 0 and max_frames > 0.")
        if self.dm_control_pixel_size <= 0:
            raise ValueError(
                f"dm_control_pixel_size must be > 0, got {self.dm_control_pixel_size}."
            )
        if self.dm_control_action_repeat < 1:
            raise ValueError(
                f"dm_control_action_repeat must be >= 1, got {self.dm_control_action_repeat}."
            )
        vizdoom = (self.vizdoom_frame_skip, self.vizdoom_width, self.vizdoom_height)
        if min(*vizdoom, self.vizdoom_max_buttons) < 1:
            raise ValueError(
                "vizdoom_frame_skip, vizdoom_width, vizdoom_height and vizdoom_max_buttons must "
                "be >= 1."
            )
        if not 0.0 <= self.minatar_sticky_prob < 1.0:
            raise ValueError(
                f"minatar_sticky_prob must be in [0, 1), got {self.minatar_sticky_prob}."
            )
