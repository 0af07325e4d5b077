"""What a case is expected to do on a given ExecuTorch, and the outcome that follows.

The known-issue registry (`known_issues.toml`), the rejections the backend
documents (`rejections.py`), which ExecuTorch each holds for (`applies.py`),
and `classify`, which turns what happened to a case into its outcome.
"""
