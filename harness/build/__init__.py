"""The build stage: a config's deterministic tensors (`data`), its module (`model`, around its graph context from
`harness.contexts`), dynamic dims and captured data."""
