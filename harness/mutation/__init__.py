"""Mutation testing: how much of the conv passes a tier's cases kill (campaigns over `harness.faults` mutants)."""
