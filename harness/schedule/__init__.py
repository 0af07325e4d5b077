"""Scheduling many cases: worker processes that survive each other (`parallel`), a Ray cluster (`cluster`),
resuming an interrupted run (`resume`) and the sweep that records it all (`sweep`). Running one case is
`harness.run`'s; nothing here imports torch."""
