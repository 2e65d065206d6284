"""Accuracy harness: freshness-tracker against ground truth on real traffic shapes, beside the two
estimation methods offsets-only exporters use (LEO-history interpolation, offset lag ÷ rate).

``python -m benchmarks.accuracy`` (``--quick`` for a ~2.5 min run); see ``docs/accuracy.md``.
"""
