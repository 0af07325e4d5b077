"""Finding where a wrong number comes from: the pass, the smallest config, a standalone repro."""
