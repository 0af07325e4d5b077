"""Faults injected into the backend to prove the harness can fail: hand-written canaries, and mutants of the
conv passes' sources (their operators, catalog, loading into the live functions, and the listed equivalents).
`harness.mutation` runs the mutation campaigns over tiers; this package only defines and injects."""
