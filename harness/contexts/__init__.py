"""Graph contexts: the small graphs real networks put a conv in, each one object holding every fact about it
(what a config may ask of it, its graph, what its judge needs). `base` holds the base and the contexts outside
the grammar, `grammar` the composed ones, `names` looks any of them up. Below the config (which validates a
context by them) and the build stage (which builds their modules): torch is reached lazily, on first use."""
