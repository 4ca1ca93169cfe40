"""Evaluation: the harness, LongMemEval, and the FTS5 baseline."""
