"""Agents: one folder per algorithm, each exposing an `AGENT` (see `shoal.agents.base.Agent`)."""
