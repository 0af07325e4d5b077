"""The case space: the tiers (`sweeps`, `smoke_picks`), the strategies that draw them, structural classes, the
networks' convs, selection and shards. Which cases run; nothing here runs them."""
