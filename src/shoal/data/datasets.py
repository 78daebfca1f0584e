"""Datasets of episodes in Minari's format (the Farama Foundation's standard for offline RL).

A dataset is found by its Minari id (`cartpole/ppo-v0`, looked up in Minari's datasets folder:
`$MINARI_DATASETS_PATH`, else `~/.minari/datasets`) or by the path of its folder (the one
holding `data/`). Nothing is downloaded: a dataset must be on this machine, installed with
`minari download ID` or written by `shoal record`.

`write_dataset` writes episodes through Minari's own `create_dataset_from_buffers`, so Minari's
`load_dataset` and every tool built on it read them; images are stored losslessly (Minari's
JPEG encoding is turned off), so what is read back is what was played, bit for bit.
`transitions` flattens a dataset into the arrays a learner samples from. Minari is imported
only here and only when a dataset is used (`pip install 'shoal[data]'`).
"""

from __future__ import annotations

import contextlib
import os
import re
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError, did_you_mean

__all__ = [
    "Episode",
    "Transitions",
    "check_dataset_id",
    "check_fits",
    "datasets_root",
    "open_dataset",
    "transitions",
    "write_dataset",
]

INSTALL = "pip install 'shoal[data]' (or pip install 'minari[hdf5]')"
# Minari's own id rule (`minari.dataset.minari_dataset.DATASET_ID_RE`), version required.
_ID = re.compile(r"^(?:[-_\w][-_\w/]*[-_\w]+/)?[-_\w]+?-v\d+$")


def _minari() -> Any:
    try:
        import minari
    except ImportError:
        raise ConfigError(
            f"Datasets are Minari datasets, and Minari is not installed: {INSTALL}."
        ) from None
    return minari


def datasets_root() -> Path:
    """Minari's datasets folder: `$MINARI_DATASETS_PATH`, else `~/.minari/datasets`."""
    root = os.environ.get("MINARI_DATASETS_PATH")
    return Path(root) if root else Path.home() / ".minari" / "datasets"


@contextlib.contextmanager
def _root(folder: str | os.PathLike[str] | None) -> Iterator[None]:
    """Minari reads its datasets folder from the environment at each call: `folder` for the
    calls inside, the setting before restored after."""
    if folder is None:
        yield
        return
    before = os.environ.get("MINARI_DATASETS_PATH")
    os.environ["MINARI_DATASETS_PATH"] = str(Path(folder).expanduser().absolute())
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("MINARI_DATASETS_PATH", None)
        else:
            os.environ["MINARI_DATASETS_PATH"] = before


def check_dataset_id(dataset_id: str) -> None:
    """A ConfigError unless `dataset_id` is a Minari id: `(namespace/)name-vN`."""
    if not isinstance(dataset_id, str) or not _ID.match(dataset_id):
        raise ConfigError(
            f"{dataset_id!r} is not a Minari dataset id: ids look like 'cartpole/ppo-expert-v0' "
            "(an optional namespace, a name of letters, digits, '-' and '_', and a version "
            "-vN)."
        )


def _local_ids(root: Path) -> list[str]:
    """The ids of the datasets under `root` (folders holding data/metadata.json)."""
    if not root.is_dir():
        return []
    return sorted(
        str(meta.parent.parent.relative_to(root)) for meta in root.glob("**/data/metadata.json")
    )


def open_dataset(name: str) -> Any:
    """The `minari.MinariDataset` that `name` names: the path of a dataset's folder, or the id
    of one in Minari's datasets folder; a ConfigError saying what is there otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(
            f"A dataset is named by its Minari id or its folder's path, got {name!r}."
        )
    minari = _minari()
    path = Path(name).expanduser()
    folder = path / "data" if (path / "data").is_dir() else path
    if (folder / "metadata.json").is_file():
        return _read(minari, folder, name)
    root = datasets_root()
    if _ID.match(name) and (root / name / "data" / "metadata.json").is_file():
        return _read(minari, root / name / "data", name)
    known = _local_ids(root)
    listing = (
        f"the datasets there are {', '.join(known[:12])}{' ...' if len(known) > 12 else ''}"
        if known
        else "it holds none"
    )
    what = (
        f"{name!r} exists but is not a Minari dataset's folder (none holds data/metadata.json)"
        if path.exists()
        else f"No such dataset: {name!r} is neither a folder nor the id of a dataset in "
        f"Minari's datasets folder {root} ($MINARI_DATASETS_PATH)"
    )
    raise ConfigError(
        f"{what}; {listing}."
        f"{did_you_mean(name, known)} Record one with `shoal record RUN_DIR --episodes N --out "
        "NAMESPACE/NAME-v0`, or install one with `minari download ID` (shoal downloads "
        "nothing at run time)."
    )


def _read(minari: Any, folder: Path, name: str) -> Any:
    try:
        return minari.MinariDataset(folder)
    except Exception as err:  # a folder Minari cannot read: say so in one paragraph
        raise ConfigError(
            f"Minari cannot read the dataset {name!r} ({folder}): {type(err).__name__}: "
            f"{err!s:.200}"
        ) from None


def _dataset_env_id(dataset: Any) -> str | None:
    spec = dataset.env_spec
    return None if spec is None else str(spec.id)


def check_fits(dataset: Any, spec: EnvSpec, name: str) -> None:
    """A ConfigError unless `dataset` was played on an env like `spec`'s: the same
    observation and action spaces, and the same env id where both name a registered one."""
    recorded = _dataset_env_id(dataset)
    env_id = spec.env_id
    if recorded is not None and env_id in gym.registry and recorded != env_id:
        raise ConfigError(
            f"The dataset {name!r} was recorded on {recorded}, and --env is {env_id}: a policy "
            f"cloned from one env's demonstrations would act on another. Pass --env {recorded}, "
            f"or a dataset recorded on {env_id}."
        )
    for what in ("observation_space", "action_space"):
        theirs, ours = getattr(dataset, what), getattr(spec, what)
        if theirs != ours:
            raise ConfigError(
                f"The dataset {name!r} has the {what.replace('_', ' ')} {theirs}; {env_id} has "
                f"{ours} (as shoal makes it, after its wrappers). Pass the env the dataset was "
                "recorded on, with the same --env.* settings."
            )


@dataclass(frozen=True)
class Transitions:
    """A dataset's steps, flat over its episodes: `obs [N, ...]` (or a dict of such) and
    `actions [N, ...]`, the observation each action was taken on; `rewards [N]`,
    `terminations [N]`, `truncations [N]`."""

    obs: Any
    actions: np.ndarray
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    episodes: int

    def __len__(self) -> int:
        return len(self.actions)


def transitions(dataset: Any) -> Transitions:
    """Every step of `dataset` in memory (the last observation of each episode, which no
    action was taken on, left out)."""
    obs: list[Any] = []
    actions, rewards, terminations, truncations = [], [], [], []
    count = 0
    for episode in dataset.iterate_episodes():
        steps = len(episode.rewards)
        if steps == 0:
            continue
        observations = episode.observations
        if isinstance(observations, dict):
            obs.append({k: np.asarray(v)[:steps] for k, v in observations.items()})
        else:
            obs.append(np.asarray(observations)[:steps])
        actions.append(np.asarray(episode.actions)[:steps])
        rewards.append(np.asarray(episode.rewards, np.float32))
        terminations.append(np.asarray(episode.terminations, bool))
        truncations.append(np.asarray(episode.truncations, bool))
        count += 1
    if not count:
        raise ConfigError(f"The dataset {dataset.id!r} holds no steps to learn from.")
    if isinstance(obs[0], dict):
        flat_obs: Any = {k: np.concatenate([o[k] for o in obs]) for k in obs[0]}
    else:
        flat_obs = np.concatenate(obs)
    return Transitions(
        flat_obs,
        np.concatenate(actions),
        np.concatenate(rewards),
        np.concatenate(terminations),
        np.concatenate(truncations),
        count,
    )


@dataclass
class Episode:
    """One played episode as Minari stores it: `observations` holds one more entry than the
    steps (the last observation), `infos` one dict of arrays over the same `T + 1` entries
    (the reset's info first)."""

    seed: int | None
    observations: list[Any] = field(default_factory=list)
    actions: list[Any] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    terminations: list[bool] = field(default_factory=list)
    truncations: list[bool] = field(default_factory=list)
    infos: list[dict[str, Any]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.rewards)

    @property
    def episode_return(self) -> float:
        return float(np.sum(self.rewards))

    def buffer(self, index: int) -> Any:
        """Minari's `EpisodeBuffer` of this episode, as episode `index` of the dataset."""
        from minari.data_collector import EpisodeBuffer

        observations = self.observations
        if isinstance(observations[0], dict):
            stacked: Any = {k: np.stack([o[k] for o in observations]) for k in observations[0]}
        else:
            stacked = np.stack(observations)
        return EpisodeBuffer(
            id=index,
            seed=self.seed,
            observations=stacked,
            actions=np.stack(self.actions),
            rewards=np.asarray(self.rewards, np.float64),
            terminations=np.asarray(self.terminations, bool),
            truncations=np.asarray(self.truncations, bool),
            infos=_stack_infos(self.infos),
        )


def _stack_infos(infos: Sequence[dict[str, Any]]) -> dict[str, np.ndarray]:
    """The info entries Minari can store as arrays: keys every info of the episode has, with
    numeric values of one shape (others, such as text or nested dicts, are left out)."""
    if not infos:
        return {}
    out = {}
    for key in infos[0]:
        if not all(key in info for info in infos):
            continue
        try:
            values = [np.asarray(info[key]) for info in infos]
        except (TypeError, ValueError):
            continue
        if all(v.dtype.kind in "biuf" and v.shape == values[0].shape for v in values):
            out[key] = np.stack(values)
    return out


def write_dataset(
    dataset_id: str,
    episodes: Sequence[Episode],
    spec: EnvSpec,
    *,
    env_spec: Any = None,
    algorithm_name: str | None = None,
    description: str | None = None,
    root: str | os.PathLike[str] | None = None,
) -> Path:
    """Write `episodes` as the Minari dataset `dataset_id` in `root` (default: Minari's
    datasets folder) with Minari's `create_dataset_from_buffers`; returns its folder.

    `env_spec`: the gymnasium `EnvSpec` the episodes were played on, recorded so that Minari's
    `recover_environment` can make it (None for an env gymnasium's registry cannot make)."""
    check_dataset_id(dataset_id)
    minari = _minari()
    folder = (Path(root).expanduser() if root is not None else datasets_root()) / dataset_id
    if folder.exists():
        raise ConfigError(
            f"{folder} already exists, and a dataset is never overwritten: pass another --out "
            f"(e.g. a higher version, {_next_version(dataset_id)}), or remove it first."
        )
    if not episodes:
        raise ConfigError("No episodes to write: record at least one (--episodes N).")
    buffers = [episode.buffer(i) for i, episode in enumerate(episodes)]
    with _root(root), warnings.catch_warnings():
        # Minari warns of every metadata field left out (author, e-mail, code link, eval env).
        warnings.filterwarnings("ignore", category=UserWarning, module=r"minari\..*")
        minari.create_dataset_from_buffers(
            dataset_id=dataset_id,
            buffer=buffers,
            env=env_spec,
            algorithm_name=algorithm_name,
            description=description,
            observation_space=spec.observation_space,
            action_space=spec.action_space,
            jpeg_encoding=False,
        )
    return folder


def _next_version(dataset_id: str) -> str:
    stem, _, version = dataset_id.rpartition("-v")
    return f"{stem}-v{int(version) + 1}" if version.isdigit() else f"{dataset_id}-v1"
