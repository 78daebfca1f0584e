"""Three hosts in network namespaces with a Ray node each, for the module's tests; always
removed at the end (`hosts.Hosts.close`)."""

from __future__ import annotations

import pytest

from multihost.hosts import Hosts, available

# What each host's Ray node offers. a: the head, where the driver and (by default) the
# learner run; b and c: two actors and one replay shard each; c can also take the learner
# (it reserves no CPU there), for the test of a learner whose host is lost.
CPUS = {"a": 1, "b": 3, "c": 3}
RESOURCES = {
    "a": {"learner_host": 1},
    "b": {"actor_host": 2, "replay_host": 1},
    "c": {"actor_host": 2, "replay_host": 1, "spare_learner_host": 1},
}


@pytest.fixture(scope="module")
def hosts():
    why = available()
    if why is not None:
        pytest.skip(why)
    made = Hosts(list(CPUS), CPUS, RESOURCES)
    try:
        made.create()
        made.start_ray()
        yield made
    finally:
        made.close()
