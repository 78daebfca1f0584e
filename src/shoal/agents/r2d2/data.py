"""R2D2's data path, in the value family (`shoal.agents.value.sequences`) since R2D3 builds on
it."""

from shoal.agents.value.sequences import STATE_KEYS, make_data_path, make_replay, sequence_adder

__all__ = ["STATE_KEYS", "make_data_path", "make_replay", "sequence_adder"]
