"""Paired comparisons: the ratio of two configurations measured in the same
round, and the difference of a per-transaction cost, with intervals.

Two intervals are given for a ratio, because they answer slightly
different questions:

  bootstrap   the 95% percentile-bootstrap interval of the median of the
              paired ratios (seeded, so a page's numbers come back from its
              raw runs); assumes nothing about their distribution
  paired t    the geometric mean of the paired ratios and its 95% interval:
              exp(mean of log ratios +- t(0.975, n-1) x sd / sqrt(n)), the
              paired t-test on the logs; narrower when the logs are about
              normal, wrong when a few rounds are far off

Differences (microseconds of CPU per transaction) get the same two: the
median difference with its bootstrap interval, the mean with its t interval.
Pairs with a missing value (a failed run) are dropped before any of it.
"""
import math
import statistics
from dataclasses import dataclass

from . import stats
from .stats import bootstrap_ci  # noqa: F401 (the pages' interval, one for every experiment)

# two-sided 95% critical values of Student's t, df 1..30
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(df):
    """Student's t 0.975 quantile for df degrees of freedom (a table to 30,
    then the Cornish-Fisher expansion around the normal's 1.96, which is
    within 0.001 of the exact value there)."""
    if df < 1:
        raise ValueError("at least one degree of freedom")
    if df <= len(T975):
        return T975[df - 1]
    z = 1.959964
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)


def clean_pairs(xs, ys):
    """The pairs (x, y) of two same-length lists where both are numbers."""
    if len(xs) != len(ys):
        raise ValueError(f"unpaired: {len(xs)} vs {len(ys)} values")

    def ok(v):
        return v is not None and not (isinstance(v, float) and math.isnan(v))
    return [(float(x), float(y)) for x, y in zip(xs, ys) if ok(x) and ok(y)]


def t_interval(xs):
    """(mean, lo, hi): the mean of xs and its 95% t interval (lo = hi =
    mean for a single value)."""
    xs = [float(x) for x in xs]
    if not xs:
        raise ValueError("no values")
    m = statistics.fmean(xs)
    if len(xs) == 1:
        return m, m, m
    half = t975(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
    return m, m - half, m + half


def interval_text(value, lo, hi, digits=3, n=2):
    """'0.981 (0.962-0.995)', or with ' to ' when a bound is negative
    ('-1.20 (-2.50 to 0.10)'); the value alone for a single pair."""
    f = f"{{:.{digits}f}}"
    if n == 1:
        return f.format(value)
    sep = " to " if lo < 0 or hi < 0 else "-"
    return f"{f.format(value)} ({f.format(lo)}{sep}{f.format(hi)})"


@dataclass(frozen=True)
class Paired:
    """A paired comparison: n pairs, the median with its bootstrap interval,
    the mean (geometric for ratios) with its t interval."""
    n: int
    median: float
    boot_lo: float
    boot_hi: float
    mean: float
    t_lo: float
    t_hi: float

    def fmt_median(self, digits=3):
        """'0.981 (0.962-0.995)': the median and its bootstrap interval."""
        if self.n == 0:
            return "n/a"
        return interval_text(self.median, self.boot_lo, self.boot_hi, digits, self.n)

    def fmt_mean(self, digits=3):
        """'0.979 (0.965-0.993)': the (geometric) mean and its t interval."""
        if self.n == 0:
            return "n/a"
        return interval_text(self.mean, self.t_lo, self.t_hi, digits, self.n)

    @property
    def boot_width(self):
        """Half the width of the bootstrap interval (0.01: +-1%)."""
        return (self.boot_hi - self.boot_lo) / 2


EMPTY = Paired(0, *(float("nan"),) * 6)


def ratio(num, den, seed=49):
    """num[i] / den[i] of values measured in the same round: median ratio
    with its bootstrap interval, geometric mean ratio with the paired t
    interval on the logs."""
    pairs = [(a, b) for a, b in clean_pairs(num, den) if a > 0 and b > 0]
    if not pairs:
        return EMPTY
    r = [a / b for a, b in pairs]
    lo, hi = bootstrap_ci(r, seed=seed) if len(r) > 1 else (r[0], r[0])
    m, tlo, thi = t_interval([math.log(x) for x in r])
    return Paired(len(r), statistics.median(r), lo, hi, math.exp(m), math.exp(tlo), math.exp(thi))


def difference(a, b, seed=49):
    """a[i] - b[i] of values measured in the same round: median difference
    with its bootstrap interval, mean difference with its t interval."""
    pairs = clean_pairs(a, b)
    if not pairs:
        return EMPTY
    d = [x - y for x, y in pairs]
    lo, hi = bootstrap_ci(d, seed=seed) if len(d) > 1 else (d[0], d[0])
    m, tlo, thi = t_interval(d)
    return Paired(len(d), statistics.median(d), lo, hi, m, tlo, thi)
