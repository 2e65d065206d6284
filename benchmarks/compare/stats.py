"""Ratios to ours, the way the page prints them, and the spread of phases' figures (pure)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

__all__ = ["ratio", "ratio_text", "standard_error"]


def ratio(value: float | None, base: float | None) -> float | None:
    """``value / base``; None when either is missing; inf when only the base is 0."""
    if value is None or base is None or math.isnan(value) or math.isnan(base):
        return None
    if base == 0:
        return 1.0 if value == 0 else math.inf
    return value / base


def ratio_text(r: float | None) -> str:
    """ "1.0×", "0.25×", "12×", "∞×" (no base), "n/a"."""
    if r is None:
        return "n/a"
    if math.isinf(r):
        return "ours 0"
    if r >= 10:
        return f"{r:.0f}×"
    if r >= 0.095:
        return f"{r:.2g}×" if r < 1 else f"{r:.1f}×"
    return f"{r:.2g}×"


def standard_error(values: Sequence[float]) -> float | None:
    """The standard error of the mean of `values` (their sample standard deviation ÷ √n), from
    the finite ones: how far phases' own figures let their mean move. None below two."""
    given = [v for v in values if math.isfinite(v)]
    if len(given) < 2:
        return None
    return statistics.stdev(given) / math.sqrt(len(given))
