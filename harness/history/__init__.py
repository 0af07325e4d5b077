"""The run history (SQLite), diffs between runs, importing and merging results files."""
