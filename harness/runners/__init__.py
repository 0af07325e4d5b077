"""Runners: execute a lowered artifact on a target (`base`: the interface; `registry`: by name)."""
