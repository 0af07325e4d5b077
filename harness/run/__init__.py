"""Running one case: its stages (`stages`), composed (`execute`), many lowered as one (`packed`), and the process it
runs in (`process`). Scheduling many cases is `harness.schedule`'s."""
