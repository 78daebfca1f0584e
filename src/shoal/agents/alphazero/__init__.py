"""AlphaZero (Silver et al. 2018, "A general reinforcement learning algorithm that masters
chess, shogi, and Go through self-play", Science 362): self-play with a PUCT tree search
(`shoal.ops.search`) guided by a residual policy-value network, which learns the search's visit
distributions and the games' outcomes from a replay of positions. For two-player board games:
`tictactoe` and `connect_four` (`shoal.envs.turn_based`, `shoal.envs.board_games`).

With `--inference central` the actors still search (the tree walks are theirs), and the
network evaluations of their searches' leaves go to the central inference server, which
batches the leaves of all actors' searches into one forward pass (`central_inference =
"network"`; `shoal.runtime.central.ServedNetwork`).
"""

from shoal.agents.alphazero.actor import AlphaZeroPolicy
from shoal.agents.alphazero.config import AlphaZeroConfig
from shoal.agents.alphazero.data import make_data_path
from shoal.agents.alphazero.learner import AlphaZeroLearner
from shoal.agents.alphazero.networks import make_networks
from shoal.agents.base import Agent

AGENT = Agent(
    name="alphazero",
    config_cls=AlphaZeroConfig,
    make_networks=make_networks,
    make_policy=AlphaZeroPolicy,
    make_learner=AlphaZeroLearner,
    make_data_path=make_data_path,
    # --inference central: actors search; the server batches their leaf evaluations.
    central_inference="network",
)

__all__ = ["AGENT", "AlphaZeroConfig"]
