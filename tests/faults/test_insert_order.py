"""An actor's inserts into a Ray table land once each and in order (issue 14's soak): an insert
sent again after a failed call, and a killed actor's insert that lands after its restarted
process's, are dropped; one source's inserts never run side by side."""

from __future__ import annotations

import threading

from shoal.runtime.tables import InsertOrder


def _recorder(applied: list, name: str):
    def insert() -> bool:
        applied.append(name)
        return True

    return insert


def test_an_insert_sent_again_after_it_landed_is_dropped():
    order, applied = InsertOrder(), []
    assert order.apply((0, 100, 0), _recorder(applied, "first"))
    assert order.apply((0, 100, 0), _recorder(applied, "first, sent again"))
    assert order.apply((0, 100, 1), _recorder(applied, "second"))
    assert order.apply((0, 100, 0), _recorder(applied, "first, late"))
    assert applied == ["first", "second"]


def test_a_dead_incarnations_insert_after_its_restarted_process_is_dropped():
    order, applied = InsertOrder(), []
    order.apply((3, 100, 7), _recorder(applied, "old"))
    order.apply((3, 200, 0), _recorder(applied, "restarted"))  # numbered from 0 again
    order.apply((3, 100, 8), _recorder(applied, "old, late"))
    order.apply((3, 200, 1), _recorder(applied, "restarted, next"))
    assert applied == ["old", "restarted", "restarted, next"]


def test_sources_are_apart_and_unordered_inserts_are_applied():
    order, applied = InsertOrder(), []
    order.apply((0, 100, 0), _recorder(applied, "actor 0"))
    order.apply((1, 50, 0), _recorder(applied, "actor 1"))  # an older clock: another source
    order.apply(None, _recorder(applied, "server"))
    order.apply(None, _recorder(applied, "server"))
    assert applied == ["actor 0", "actor 1", "server", "server"]
    # The table's answer (False: the run is ending) is passed on.
    assert order.apply((0, 100, 1), lambda: False) is False


def test_one_sources_inserts_wait_for_each_other():
    """A killed actor's insert still waiting for room holds its source: its restarted process's
    first insert goes in after it, so the replay sees the old episode's steps first."""
    order, applied = InsertOrder(), []
    begun, room = threading.Event(), threading.Event()

    def waiting() -> bool:  # the table's insert, waiting for room
        begun.set()
        room.wait()
        applied.append("old")
        return True

    old = threading.Thread(target=order.apply, args=((0, 100, 5), waiting))
    old.start()
    assert begun.wait(timeout=30)
    new = threading.Thread(target=order.apply, args=((0, 200, 0), _recorder(applied, "new")))
    new.start()
    new.join(timeout=0.5)
    assert new.is_alive() and applied == []  # it waits, however long the old one takes
    room.set()
    old.join(timeout=30)
    new.join(timeout=30)
    assert applied == ["old", "new"]
