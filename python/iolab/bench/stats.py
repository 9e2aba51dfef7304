"""The statistics of a comparison (scipy and statsmodels do the arithmetic).

Input: one value per run, with its configuration, its repetition and its
place in the run order. Every repetition runs every configuration once in a
shuffled order, so a repetition is a *block*: whatever made that round of
runs faster or slower (other tenants of the machine, the host's cache)
touches all configurations alike and is removed by comparing within blocks.

- Per configuration (:func:`summarize`): n, mean, standard deviation,
  coefficient of variation, and a 95% confidence interval of the mean
  (:func:`mean_interval`). Throughputs and latencies are positive and
  skewed to the right, so for positive data the interval is computed on
  the log scale and cannot go below zero; otherwise it is Student's t.
- Across configurations (:func:`compare`):

  * a blocked ANOVA (``value ~ C(config) + C(rep)``, statsmodels OLS and
    ``anova_lm``) decides whether the configurations differ at all;
    Friedman's rank test (Wilcoxon's signed-rank test for two
    configurations) is reported beside it as a distribution-free check;
  * post hoc: paired t-tests between every two configurations, with Holm's
    correction for the number of pairs;
  * a winner is named only when the ANOVA is significant *and* the best
    configuration differs significantly from every other one; otherwise
    the configurations whose difference from the best is not significant
    form the top group;
  * power: from the residual spread of the blocked model, the difference
    the present number of repetitions can detect (80% power, alpha split
    over the pairs as Bonferroni does, Holm's first step) and the number of
    repetitions needed to detect a given relative difference
    (statsmodels ``TTestPower`` on paired differences);
  * drift: the slope of the value against the run order, with the
    configuration as a factor (OLS), and the mean of each repetition.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from scipy import stats as sps
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower

ALPHA = 0.05
POWER = 0.8
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Summary:
    config: str
    n: int
    mean: float
    sd: float
    cv: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class Test:
    """An omnibus test: its name, statistic, degrees of freedom and p-value."""

    name: str
    statistic: float
    df: str
    p: float


@dataclass(frozen=True)
class Pair:
    """A post-hoc comparison of configurations ``a`` and ``b`` (a - b)."""

    a: str
    b: str
    diff: float
    rel: float
    p: float
    p_holm: float
    significant: bool


@dataclass(frozen=True)
class Power:
    detect: float              # the relative difference asked about (0.05 = 5%)
    reps_needed: int | None    # repetitions to detect it
    detectable: float | None   # relative difference detectable with the present n
    sd_diff: float             # spread of a paired difference


@dataclass(frozen=True)
class Drift:
    slope_per_rep: float       # relative change of the value per repetition
    p: float
    significant: bool
    rep_means: list[float]


@dataclass
class Comparison:
    higher_is_better: bool
    summaries: list[Summary]
    blocks: int
    dropped_blocks: int = 0
    anova: Test | None = None
    rank_test: Test | None = None
    pairs: list[Pair] = field(default_factory=list)
    best: str | None = None
    winner: str | None = None
    top: list[str] = field(default_factory=list)
    power: Power | None = None
    drift: Drift | None = None

    def summary(self, config: str) -> Summary:
        return next(s for s in self.summaries if s.config == config)

    def pair(self, a: str, b: str) -> Pair | None:
        for p in self.pairs:
            if {p.a, p.b} == {a, b}:
                return p
        return None


@contextlib.contextmanager
def _quiet():
    """Fits on small or degenerate data warn; their NaNs are checked instead."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


def mean_interval(x: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """A confidence interval of the mean of ``x`` (at least two values).

    Positive data: the modified Cox interval for the mean of a log-normal
    sample (Olsson, "Confidence intervals for the mean of a log-normal
    distribution", J. Statistics Education 13(1), 2005): with ``y = log x``,
    ``exp(mean(y) + s2/2 +- t(n-1) * sqrt(s2/n + s2^2 / (2 (n-1))))``, where
    ``s2`` is the sample variance of ``y``. It is positive, asymmetric like
    the data, and close to Student's t when the spread is small. Its upper
    end is infinite when ``exp`` overflows (a few runs spread over many
    orders of magnitude). Data with a zero or negative value: Student's t.
    """
    n = len(x)
    mean = float(np.mean(x))
    if float(np.std(x)) == 0:
        return mean, mean
    t = float(sps.t.ppf(0.5 + confidence / 2, n - 1))
    if np.all(x > 0):
        y = np.log(x)
        s2 = float(np.var(y, ddof=1))
        centre = float(np.mean(y)) + s2 / 2
        half = t * math.sqrt(s2 / n + s2 * s2 / (2 * (n - 1)))
        return _exp(centre - half), _exp(centre + half)
    low, high = sps.t.interval(confidence, n - 1, loc=mean, scale=sps.sem(x))
    return float(low), float(high)


def _exp(v: float) -> float:
    return math.exp(v) if v < 709 else math.inf


def summarize(config: str, values) -> Summary:
    x = np.asarray(list(values), dtype=float)
    n = len(x)
    if n == 0:
        return Summary(config, 0, math.nan, math.nan, math.nan, math.nan, math.nan)
    mean = float(np.mean(x))
    if n < 2:
        return Summary(config, 1, mean, math.nan, math.nan, math.nan, math.nan)
    with _quiet():  # values near the float range overflow to inf, which the tables show as such
        sd = float(np.std(x, ddof=1))
        cv = float(sps.variation(x, ddof=1)) if mean != 0 else math.nan
        low, high = mean_interval(x)
    return Summary(config, n, mean, sd, cv, low, high)


def _blocked_anova(long: pd.DataFrame) -> tuple[Test | None, float]:
    """F-test of the configuration in ``value ~ C(config) + C(rep)``, and the residual variance."""
    with _quiet():
        fit = smf.ols("value ~ C(config) + C(rep)", data=long).fit()
        table = anova_lm(fit, typ=2)
    row = table.loc["C(config)"]
    mse = float(fit.mse_resid) if fit.df_resid > 0 else math.nan
    f, p = float(row["F"]), float(row["PR(>F)"])
    if not math.isfinite(p):
        # No residual spread at all: the configurations differ exactly or not at all.
        p = 0.0 if float(row["sum_sq"]) > 0 else 1.0
    test = Test("blocked ANOVA", f, f"{int(row['df'])}, {int(fit.df_resid)}", p)
    return test, mse


def _rank_test(wide: pd.DataFrame) -> Test | None:
    cols = [wide[c].to_numpy() for c in wide.columns]
    try:
        with _quiet():
            if len(cols) >= 3:
                res = sps.friedmanchisquare(*cols)
                return Test("Friedman", float(res.statistic), str(len(cols) - 1), float(res.pvalue))
            res = sps.wilcoxon(cols[0], cols[1])
            return Test("Wilcoxon signed-rank", float(res.statistic), "-", float(res.pvalue))
    except ValueError:
        return None


def _pairs(wide: pd.DataFrame, alpha: float) -> list[Pair]:
    combos = list(itertools.combinations(wide.columns, 2))
    raw = []
    for a, b in combos:
        x, y = wide[a].to_numpy(), wide[b].to_numpy()
        with _quiet():
            p = float(sps.ttest_rel(x, y).pvalue)
        if not math.isfinite(p):  # every difference equal
            p = 0.0 if np.mean(x - y) != 0 else 1.0
        raw.append(p)
    reject, holm, _, _ = multipletests(raw, alpha=alpha, method="holm")
    out = []
    for (a, b), p, ph, rej in zip(combos, raw, holm, reject):
        ma, mb = float(wide[a].mean()), float(wide[b].mean())
        out.append(Pair(str(a), str(b), ma - mb, (ma - mb) / mb if mb else math.nan,
                        p, float(ph), bool(rej)))
    return out


def _power(mse: float, grand_mean: float, n: int, pairs: int, detect: float, alpha: float) -> Power | None:
    if not (math.isfinite(mse) and grand_mean and pairs):
        return None
    sd_diff = math.sqrt(2 * mse)
    alpha_each = alpha / pairs
    analysis = TTestPower()
    needed = detectable = None
    if sd_diff == 0:
        return Power(detect, 2, 0.0, 0.0)
    effect = detect * abs(grand_mean) / sd_diff
    with _quiet():
        try:
            nobs = float(analysis.solve_power(effect_size=effect, alpha=alpha_each, power=POWER,
                                              alternative="two-sided"))
            if math.isfinite(nobs):
                needed = max(2, math.ceil(nobs))
        except (ValueError, RuntimeError):
            needed = None
        if n >= 2:
            try:
                es = float(analysis.solve_power(nobs=n, alpha=alpha_each, power=POWER,
                                                alternative="two-sided"))
                if math.isfinite(es):
                    detectable = es * sd_diff / abs(grand_mean)
            except (ValueError, RuntimeError):
                detectable = None
    return Power(detect, needed, detectable, sd_diff)


def _drift(data: pd.DataFrame, runs_per_rep: int, alpha: float) -> Drift | None:
    if data["order"].nunique() < 3:
        return None
    formula = "value ~ C(config) + order" if data["config"].nunique() > 1 else "value ~ order"
    with _quiet():
        fit = smf.ols(formula, data=data).fit()
    slope, p = float(fit.params["order"]), float(fit.pvalues["order"])
    mean = float(data["value"].mean())
    rel = slope * runs_per_rep / mean if mean else math.nan
    if not math.isfinite(p):
        p = 1.0
    rep_means = [float(v) for v in data.groupby("rep", sort=True)["value"].mean()]
    return Drift(rel, p, p < alpha, rep_means)


def compare(data: pd.DataFrame, higher_is_better: bool, runs_per_rep: int | None = None,
            alpha: float = ALPHA, detect: float = 0.05, configs: list[str] | None = None) -> Comparison:
    """Compares configurations; ``data`` has columns config, rep, order, value.

    ``runs_per_rep`` (runs in one repetition, all measures together) turns the
    drift's slope per run into a change per repetition; ``configs`` gives the
    order of the tables (default: order of first appearance).
    """
    data = data[["config", "rep", "order", "value"]].dropna()
    present = set(data["config"])
    configs = [c for c in (configs or list(dict.fromkeys(data["config"]))) if c in present]
    summaries = [summarize(c, data.loc[data["config"] == c, "value"]) for c in configs]
    wide = data.pivot_table(index="rep", columns="config", values="value", aggfunc="mean")
    wide = wide[configs] if len(wide) else wide
    complete = wide.dropna()
    result = Comparison(higher_is_better, summaries, blocks=len(complete),
                        dropped_blocks=len(wide) - len(complete))
    if configs:
        means = {s.config: s.mean for s in summaries}
        if len(complete) and len(configs) > 1:
            means = {c: float(complete[c].mean()) for c in configs}
        pick = max if higher_is_better else min
        result.best = pick(configs, key=lambda c: means[c])
    result.drift = _drift(data, runs_per_rep or max(1, len(configs)), alpha)
    if len(configs) < 2 or len(complete) < 2:
        result.top = list(configs)
        return result
    long = complete.reset_index().melt(id_vars="rep", var_name="config", value_name="value")
    long["rep"] = long["rep"].astype(str)
    result.anova, mse = _blocked_anova(long)
    result.rank_test = _rank_test(complete)
    result.pairs = _pairs(complete, alpha)
    best = result.best
    versus_best = [p for p in result.pairs if best in (p.a, p.b)]
    separated = all(p.significant for p in versus_best)
    if result.anova.p < alpha and separated:
        result.winner = best
        result.top = [best]
    else:
        result.top = [best] + [
            (p.b if p.a == best else p.a) for p in versus_best
            if not (result.anova.p < alpha and p.significant)
        ]
    grand = float(long["value"].mean())
    result.power = _power(mse, grand, len(complete), len(result.pairs), detect, alpha)
    return result
