"""The build stage: a config's deterministic tensors (`data`), its module (`model`), its graph context (`contexts`, `composed`, `context_names`), dynamic dims and captured data."""
