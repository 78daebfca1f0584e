"""Behavioural cloning (Pomerleau 1991, ALVINN; Bain & Sammut 1995): supervised learning of a
policy from the actions of a dataset of demonstrations.

The learner fits the policy to a Minari dataset (`--dataset ID_OR_FOLDER`, e.g. one written by
`shoal record`) by maximum likelihood: cross-entropy for discrete actions, a Gaussian's
negative log-likelihood (or the squared error of its mean, `--agent.loss mse`) for continuous
ones. It never learns from the env: the data path (`shoal.data.offline`) hands it minibatches
of the dataset, `updates_per_step` per env step that the actors play with the policy as it
learns, so that play is the run's clock and learning curve and nothing more. The dataset must
have been recorded on the env the run names (`--env`, with its spaces); both are checked
before anything is written.

On Ray the table (the dataset in memory) lives in the learner's process, which must be able to
read the dataset; the actors send it only their step counts.
"""

from shoal.agents.base import Agent, Layout
from shoal.agents.bc.actor import BCPolicy
from shoal.agents.bc.config import BCConfig
from shoal.agents.bc.learner import BCLearner
from shoal.agents.bc.networks import BCNet, make_networks
from shoal.data import DataPath
from shoal.data.datasets import check_fits, open_dataset, transitions
from shoal.data.offline import DatasetTable, offline_data_path
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError


def make_data_path(spec: EnvSpec, config: BCConfig, layout: Layout) -> DataPath:
    """Minibatches of the dataset, which is opened and checked against `spec` here (before a
    run directory is written) and read into memory by the table."""
    name = config.dataset
    if name is None:
        raise ConfigError(
            "bc learns from a dataset of demonstrations: pass --dataset with a Minari dataset's "
            "id or folder (Python: agent={'dataset': ...}), e.g. one written by `shoal record "
            "RUN_DIR --episodes 20 --out cartpole/ppo-v0`."
        )
    check_fits(open_dataset(name), spec, name)

    def make_table(shards: int, seed: int) -> DatasetTable:
        steps = transitions(open_dataset(name))
        return DatasetTable(
            {"obs": steps.obs, "actions": steps.actions},
            batch_size=config.batch_size,
            updates_per_step=config.updates_per_step,
            max_insert=layout.total_envs * config.unroll_length,
            seed=seed,
        )

    return offline_data_path(config.unroll_length, make_table)


AGENT = Agent(
    name="bc",
    config_cls=BCConfig,
    make_networks=make_networks,
    make_policy=BCPolicy,
    make_learner=BCLearner,
    make_data_path=make_data_path,
    mutable=frozenset({"learning_rate", "max_grad_norm"}),
)

__all__ = ["AGENT", "BCConfig", "BCLearner", "BCNet", "BCPolicy"]
