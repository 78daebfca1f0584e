"""The acting side of self-play with a league (`shoal.agents.common.league`): `LeaguePolicy`
plays the learner's seat of each game with the agent's own policy and the other seats with the
league member drawn for that game; `with_league` wraps an agent's policy factory in it when the
config says `self_play: league`; `league_metrics` turns the actors' league summaries into
metrics columns."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from torch import nn

from shoal.agents.base import ActMode, Layout, Policy, PolicyStep, State, StepInputs, Weights
from shoal.agents.common.league import CURRENT, League
from shoal.envs.spec import EnvSpec
from shoal.errors import ConfigError
from shoal.tree import map_tree

__all__ = ["LeaguePolicy", "league_metrics", "with_league"]


class LeaguePolicy(Policy):
    """`inner` acting in the learner's seat of each game and a league member in the others.

    Rows are env slots; a game of N players is slots `[g N, (g + 1) N)` (`shoal.envs.agent_rows`).
    Game g's learner plays seat `g mod N` in its first game and the next seat in each new game;
    its opponent is drawn from the league when the game starts. Outside training (`mode`
    sample or greedy: evaluation, `shoal.load`) `inner` plays every seat.

    `make_frozen(net)` makes the policy a frozen copy acts with (the same class as `inner`).
    The extras gain `learning` `[n]` bool: the row's action is the learner's.

    Versions are counted in the rows' steps, `steps_per_version` each (an on-policy agent's
    unroll length: one update per unroll of every env), so the league keeps its copies alike
    whether the weights are shared with the learner (inline) or sent to the actor (Ray)."""

    def __init__(
        self,
        inner: Policy,
        make_frozen: Callable[[nn.Module], Policy],
        league: League,
        players: int,
        steps_per_version: int,
    ) -> None:
        self.inner, self.net = inner, inner.net
        self.make_frozen, self.league, self.players = make_frozen, league, players
        self.steps_per_version = steps_per_version
        self._version = -1  # the newest version offered to the league
        self._frozen: dict[int, Policy] = {}
        self._seat: dict[int, int] = {}  # game -> the learner's seat
        self._opponent: dict[int, int] = {}  # game -> member id
        self._return: dict[int, float] = {}  # game -> the learner's return so far
        self._first_slot: int | None = None
        self._resumed: Mapping[str, Any] = {}  # a checkpoint's policy states, until the first step
        self._copies_changed = True  # the copies' weights go to the next state_dict

    def initial_state(self, slots: np.ndarray) -> State:
        return self.inner.initial_state(slots)

    def load_weights(self, weights: Weights) -> None:
        self.inner.load_weights(weights)

    def apply_settings(self, config: Any) -> None:
        self.inner.apply_settings(config)

    def step(self, obs: Any, state: State, inputs: StepInputs, mode: ActMode) -> PolicyStep:
        if mode != "train":
            return self.inner.step(obs, state, inputs, mode)
        slots = inputs.slot
        if self._first_slot is None:
            self._first_slot = int(slots.min())
            self._resume()
        self._keep_copy(int(inputs.steps.max()) // self.steps_per_version)
        games = slots // self.players
        for g in np.unique(games).tolist():
            if g not in self._seat:
                self._start(g, g % self.players)
        learner_seat = np.array([self._seat[g] for g in games.tolist()])
        learning = slots % self.players == learner_seat
        opponent = np.array([self._opponent[g] for g in games.tolist()])
        # The current weights act for the learner's rows and the rows they play themselves in.
        by_inner = learning | (opponent == CURRENT)
        n = len(slots)
        action: np.ndarray | None = None
        extras: dict[str, np.ndarray] = {}
        groups: list[tuple[Policy, np.ndarray]] = [(self.inner, np.flatnonzero(by_inner))]
        for member in np.unique(opponent[~by_inner]).tolist():
            rows = np.flatnonzero(~by_inner & (opponent == member))
            groups.append((self._frozen_policy(member), rows))
        for policy, rows in groups:
            if len(rows) == 0:
                continue
            part = policy.step(
                map_tree(lambda x, r=rows: x[r], obs),
                {},
                StepInputs(*(field[rows] for field in inputs)),
                mode,
            )
            if action is None:
                action = np.zeros((n, *part.action.shape[1:]), part.action.dtype)
            action[rows] = part.action
            for key, value in part.extras.items():
                if key not in extras:
                    extras[key] = np.zeros((n, *value.shape[1:]), value.dtype)
                extras[key][rows] = value
        assert action is not None
        extras["learning"] = learning
        return PolicyStep(action, extras)

    def observe(self, slots: np.ndarray, rewards: np.ndarray, ended: np.ndarray) -> None:
        self.inner.observe(slots, rewards, ended)
        games = slots // self.players
        seats = np.array([self._seat.get(g, -1) for g in games.tolist()])
        finished = []
        for i in np.flatnonzero(slots % self.players == seats).tolist():  # the learner's rows
            g = int(games[i])
            self._return[g] += float(rewards[i])
            if ended[i]:
                finished.append(g)
        for g in finished:  # its result, then the next game: the next seat, a new opponent
            result = self._return[g]
            self.league.record(self._opponent[g], 1.0 if result > 0 else 0.0 if result < 0 else 0.5)
            self._start(g, (self._seat[g] + 1) % self.players)

    def state_dict(self) -> dict[str, Any]:
        """This actor's league, under its first slot: the summary (metrics) and the league's
        small state with every call, the copies' weights only after they changed (the runtime
        keeps each key's newest value: `Driver.policy_state`)."""
        if self._first_slot is None:
            return {}
        slot = self._first_slot
        state: dict[str, Any] = {
            f"league/slot{slot}": {
                **self.league.summary(),
                "state": self.league.state_dict(with_snapshots=False),
            }
        }
        if self._copies_changed:
            state[f"league_copies/slot{slot}"] = dict(self.league.snapshots)
            self._copies_changed = False
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Keep a checkpoint's states; this actor's league is taken from them at its first
        step, when its first slot (the key) is known."""
        self.inner.load_state_dict(state)
        self._resumed = state

    def _resume(self) -> None:
        slot, resumed = self._first_slot, self._resumed
        self._resumed = {}
        summary, copies = (
            resumed.get(f"league/slot{slot}"),
            resumed.get(f"league_copies/slot{slot}"),
        )
        if summary is None or copies is None or "state" not in summary:
            return  # a new league (a new run, or a checkpoint from before leagues were kept)
        self.league.load_state_dict({**summary["state"], "snapshots": copies})
        self._copies_changed = True

    def _keep_copy(self, version: int) -> None:
        """Offer the league the weights acted with now, as `version`."""
        if version <= self._version:
            return
        self._version = version
        if self.league.add_version(self.inner.net.state_dict(), version) is not None:
            self._copies_changed = True
            playing = set(self._opponent.values())  # a member dropped now finishes its games
            for member in list(self._frozen):
                if member not in self.league.snapshots and member not in playing:
                    del self._frozen[member]

    def _start(self, game: int, seat: int) -> None:
        member = self.league.sample()
        self._seat[game], self._opponent[game] = seat, member
        self._return[game] = 0.0
        if member != CURRENT:
            self._frozen_policy(member)  # made now: the league may drop the member mid-game

    def _frozen_policy(self, member: int) -> Policy:
        policy = self._frozen.get(member)
        if policy is None:
            net = copy.deepcopy(self.inner.net)
            for p in net.parameters():
                p.requires_grad_(False)
            policy = self.make_frozen(net)
            policy.load_weights(self.league.snapshots[member])
            self._frozen[member] = policy
        return policy


def league_metrics(policy_state: Mapping[str, Any]) -> dict[str, float]:
    """Metrics of the actors' leagues (their `LeaguePolicy.state_dict`s): `league_size`,
    `league_games`, `league_score` (the learner's score against its past selves) and
    `league_elo_gap`, each the mean over actors (games: the sum)."""
    leagues = [v for k, v in policy_state.items() if k.startswith("league/")]
    if not leagues:
        return {}
    scores = [s["score"] for s in leagues if not math.isnan(s["score"])]
    return {
        "league_size": float(np.mean([s["size"] for s in leagues])),
        "league_games": float(sum(s["games"] for s in leagues)),
        "league_score": float(np.mean(scores)) if scores else float("nan"),
        "league_elo_gap": float(np.mean([s["elo_gap"] for s in leagues])),
    }


MakePolicy = Callable[..., Policy]  # (spec, config, net, seed, layout) -> Policy


def with_league(make_policy: MakePolicy) -> MakePolicy:
    """`make_policy`, wrapped in a `LeaguePolicy` when the config says `self_play: league`."""

    def make(
        spec: EnvSpec, config: Any, net: nn.Module, seed: int, layout: Layout | None = None
    ) -> Policy:
        layout = layout or Layout()
        policy = make_policy(spec, config, net, seed, layout)
        if getattr(config, "self_play", "off") == "off":
            return policy
        if spec.num_agents < 2:
            raise ConfigError(
                f"self_play league needs a game of two or more players as rows (tictactoe, "
                f"connect_four, a PettingZoo AEC game); {spec.env_id} has "
                f"{max(spec.num_agents, 1)} agent. Set --agent.self-play off."
            )
        league = League(
            config.league_size,
            config.league_interval,
            config.league_sampling,
            config.pfsp_power,
            config.league_window,
            seed=seed,
            keep_first=config.league_keep_first,
        )

        def make_frozen(frozen_net: nn.Module) -> Policy:
            return make_policy(spec, config, frozen_net, seed + 1, layout)

        return LeaguePolicy(policy, make_frozen, league, spec.num_agents, config.unroll_length)

    return make
