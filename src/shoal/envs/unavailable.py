"""Families shoal cannot serve on current Python, and why: an id of theirs gets the reason.

Checked with pip on CPython 3.11 (2026-11-26, `pip download --no-deps NAME`):

- DeepMind Lab (Beattie et al. 2016): not on PyPI (`deepmind-lab`: no distribution); it is
  built from source with Bazel, which pip cannot do.
- Procgen (Cobbe et al. 2020): `procgen` 0.10.7, the last release, has wheels for CPython
  3.6-3.10 only and no source release, so pip finds no version for 3.11. envpool ships the 16
  games (`CoinrunHard-v0`, ...), but they need the system Qt 5 libraries, and shoal's envpool
  adapter serves Atari only.
- Google Research Football (Kurach et al. 2020): `gfootball` 2.10.2 is a source release whose
  C++ engine builds with CMake against SDL2, Boost.Python and OpenGL development packages from
  the system; it has no wheel, and `pip wheel gfootball` here stops first at a missing psutil
  (its build script calls the system python3) and then at CMake's missing SDL2. Whether it
  builds on 3.11 with those packages was not tried. envpool ships its scenarios
  (`gfootball/academy_empty_goal-v1`, ...), which shoal's envpool adapter does not serve.
- Habitat (Savva et al. 2019): `habitat-sim`, the simulator, is not on PyPI (conda or a source
  build); `habitat-lab` installs but pins numpy 1.26.4 and gym < 0.23.1, against shoal's
  numpy 2 and Gymnasium 1.x.

An id of theirs is recognised by its prefix (`procgen:coinrun`, `procgen-coinrun-v0`,
`dmlab:...`, `gfootball:...`, `GFootball-...`, `habitat:...`, `Habitat...`) when the family's
module is not importable, so a machine where it is installed still reaches it through a
`package.module:function` factory.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from shoal.errors import EnvError

__all__ = ["UNAVAILABLE_FAMILIES", "UnavailableFamily", "check_unavailable"]


@dataclass(frozen=True)
class UnavailableFamily:
    name: str
    module: str  # the Python module its package provides
    prefixes: tuple[str, ...]  # ids starting with one of these (case-insensitive) are its own
    reason: str


UNAVAILABLE_FAMILIES = (
    UnavailableFamily(
        "DeepMind Lab",
        "deepmind_lab",
        ("dmlab", "deepmind_lab", "deepmindlab"),
        "DeepMind Lab is not on PyPI (pip finds no `deepmind-lab` distribution): it is built from "
        "source with Bazel (github.com/google-deepmind/lab), which pip cannot do.",
    ),
    UnavailableFamily(
        "Procgen",
        "procgen",
        ("procgen:", "procgen-", "procgen/"),
        "procgen 0.10.7, its last release, has wheels for CPython 3.6 to 3.10 only and no "
        "source release, so pip finds no version for Python 3.11 and later. envpool ships the "
        "games (e.g. CoinrunHard-v0, with the system Qt 5 libraries), which shoal's envpool "
        "adapter does not serve yet (it serves Atari).",
    ),
    UnavailableFamily(
        "Google Research Football",
        "gfootball",
        ("gfootball:", "gfootball/", "gfootball-"),
        "gfootball 2.10.2 (January 2022, its last release) has no wheel, so pip alone cannot "
        "install it: its C++ engine builds from source with CMake against SDL2, Boost.Python "
        "and OpenGL development packages from the system (apt), and without them the build "
        "stops at CMake (`Could not find ... SDL2`). envpool ships its scenarios "
        "(gfootball/academy_empty_goal-v1, ...), which shoal's envpool adapter does not serve "
        "yet.",
    ),
    UnavailableFamily(
        "Habitat",
        "habitat_sim",
        ("habitat",),
        "its simulator habitat-sim is not on PyPI (conda or a source build only), and "
        "habitat-lab pins numpy 1.26.4 and gym < 0.23.1, against shoal's numpy 2 and "
        "Gymnasium 1.x.",
    ),
)


def check_unavailable(env_id: str) -> None:
    """Raise an EnvError giving the reason if `env_id` belongs to a family of
    `UNAVAILABLE_FAMILIES` whose module is not installed."""
    lowered = env_id.lower()
    for family in UNAVAILABLE_FAMILIES:
        if not lowered.startswith(family.prefixes):
            continue
        if importlib.util.find_spec(family.module) is not None:
            return  # installed after all (an older Python, a source build): not ours to refuse
        raise EnvError(
            f"{env_id!r} is a {family.name} id, and shoal cannot serve {family.name} on current "
            f"Python: {family.reason} Run it where it installs (its own environment or "
            "container) with a 'package.module:function' factory that makes it, or see "
            "`shoal envs` for the families shoal serves."
        )
