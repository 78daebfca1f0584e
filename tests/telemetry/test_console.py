"""The console's one-line warning when a run would take over an hour."""

from __future__ import annotations

from shoal.telemetry.console import Console


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _console(clock: Clock, total: int, initial: int = 0, max_time=None) -> Console:
    return Console(total, initial, enabled=True, title="test", max_time=max_time, clock=clock)


def test_a_run_estimated_over_an_hour_is_told_once_after_half_a_minute(capsys):
    clock = Clock()
    console = _console(clock, total=10_000_000, initial=1_000)
    clock.now += 10
    console.update(2_000, None)  # too early to judge
    assert "hours" not in capsys.readouterr().err
    clock.now += 30
    console.update(5_000, None)  # 100 steps/s: 9,995,000 steps left, 27.8 hours
    clock.now += 30
    console.update(8_000, None)
    console.close()
    err = capsys.readouterr().err
    assert err.count("hours") == 1
    assert "At 100 steps/s the remaining 9,995,000 steps take about 27.8 hours" in err
    assert "--max-time" in err


def test_a_short_run_gets_no_warning(capsys):
    clock = Clock()
    console = _console(clock, total=200_000)
    clock.now += 40
    console.update(4_000, None)  # 100 steps/s: 196,000 steps left, 33 minutes
    console.close()
    assert "hours" not in capsys.readouterr().err


def test_a_run_whose_max_time_is_under_an_hour_gets_no_warning(capsys):
    clock = Clock()
    console = _console(clock, total=10_000_000, max_time=600)
    clock.now += 40
    console.update(4_000, None)  # 27.8 hours at this rate, but it stops after 10 minutes
    console.close()
    assert "hours" not in capsys.readouterr().err
