"""Medians with their spread, ratios, percentiles."""
import math
import random
import re
import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Summary:
    median: float
    lo: float
    hi: float
    n: int

    def fmt(self, digits=2, unit="", thousands=False):
        """'1.23 (1.10-1.40)': median and (min-max) over the n values
        (thousands: '12,345 (9,876-13,002)')."""
        if self.n == 0:
            return "n/a"
        f = f"{{:{',' if thousands else ''}.{digits}f}}"
        if self.n == 1:
            return f.format(self.median) + unit
        return f"{f.format(self.median)}{unit} ({f.format(self.lo)}-{f.format(self.hi)})"


SUMMARY_CELL = re.compile(r"^\s*(-?[0-9.]+)[^ (]*(?: \((-?[0-9.]+)-(-?[0-9.]+)\))?\s*$")


def parse(cell, n=0):
    """The Summary a fmt() cell shows ('1.23 (1.10-1.40)' or '1.23'); None for
    anything else.  n is not in the cell: the caller knows it."""
    m = SUMMARY_CELL.match(cell)
    if not m:
        return None
    med = float(m.group(1))
    lo, hi = (float(m.group(2)), float(m.group(3))) if m.group(2) else (med, med)
    return Summary(med, lo, hi, n)


def summarize(xs):
    xs = [float(x) for x in xs if x is not None and not math.isnan(x)]
    if not xs:
        return Summary(float("nan"), float("nan"), float("nan"), 0)
    return Summary(statistics.median(xs), min(xs), max(xs), len(xs))


def ratios(num, den):
    """Pairwise ratios num[i] / den[i] of values taken in the same round."""
    if len(num) != len(den):
        raise ValueError(f"unpaired: {len(num)} vs {len(den)} values")
    return [a / b for a, b in zip(num, den)]


def percentile(xs, p):
    """p-th percentile (0..100), linear interpolation between closest ranks."""
    xs = sorted(xs)
    if not xs:
        raise ValueError("no values")
    if not 0 <= p <= 100:
        raise ValueError("p must be in [0, 100]")
    k = (len(xs) - 1) * p / 100
    f = math.floor(k)
    c = min(f + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)


def bootstrap_ci(xs, stat=statistics.median, level=0.95, resamples=4000, seed=28):
    """Percentile bootstrap interval (lo, hi) of stat(xs); seeded, so a page's
    numbers are reproducible from its measurements."""
    xs = [float(x) for x in xs]
    if not xs:
        raise ValueError("no values")
    if not 0 < level < 1:
        raise ValueError("level must be in (0, 1)")
    rng = random.Random(seed)
    n = len(xs)
    boot = sorted(stat([xs[rng.randrange(n)] for _ in range(n)]) for _ in range(resamples))
    tail = (1 - level) / 2
    return (percentile(boot, 100 * tail), percentile(boot, 100 * (1 - tail)))
