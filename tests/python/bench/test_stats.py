"""The statistics on known data: worked by hand, and seed 004's own table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from iolab.bench import stats

from .conftest import data

# Three configurations x four repetitions, worked by hand:
#   config means 10.5, 13, 15; grand mean 12.8333
#   SS_config = 4 * sum((m - 12.8333)^2) = 40.667 (df 2)
#   SS_block  = 3 * sum((b - 12.8333)^2) = 7.0    (df 3)
#   SS_total  = 2030 - 154^2 / 12 = 53.667  ->  SS_error = 6.0 (df 6), MSE = 1
#   F = 20.333, p = F(2, 6).sf(20.333) = 0.002125
# Friedman: rank sums 4, 8.5, 11.5 (one tie in block 2): chi2 = 7.125 / 0.9375 = 7.6,
#   p = exp(-3.8) = 0.02237.
# Paired t: A-B diffs -2,-3,-1,-4 (t = -3.873, p = 0.0305); A-C -4,-3,-5,-6 (p = 0.00606);
#   B-C -2,0,-4,-2 (p = 0.0917). Holm: 0.0182, 0.0609, 0.0917: only A-C is significant.
KNOWN = {"A": [10, 11, 12, 9], "B": [12, 14, 13, 13], "C": [14, 14, 17, 15]}


def frame(columns: dict[str, list[float]]) -> pd.DataFrame:
    rows, order = [], 0
    reps = len(next(iter(columns.values())))
    for rep in range(reps):
        for config, values in columns.items():
            rows.append({"config": config, "rep": rep, "order": order, "value": values[rep]})
            order += 1
    return pd.DataFrame(rows)


def test_blocked_anova_friedman_and_holm_match_the_hand_computation():
    c = stats.compare(frame(KNOWN), higher_is_better=True)
    assert c.blocks == 4
    assert c.anova.statistic == pytest.approx(20.3333, rel=1e-4)
    assert c.anova.df == "2, 6"
    assert c.anova.p == pytest.approx(0.0021254, rel=1e-3)
    assert c.rank_test.name == "Friedman"
    assert c.rank_test.statistic == pytest.approx(7.6)
    assert c.rank_test.p == pytest.approx(0.022371, rel=1e-3)
    holm = {(p.a, p.b): p for p in c.pairs}
    assert holm[("A", "B")].p == pytest.approx(0.030466, rel=1e-3)
    assert holm[("A", "C")].p_holm == pytest.approx(3 * 0.0060568, rel=1e-3)
    assert holm[("A", "B")].p_holm == pytest.approx(2 * 0.030466, rel=1e-3)
    assert holm[("B", "C")].p_holm == pytest.approx(0.091721, rel=1e-3)
    assert [p.significant for p in c.pairs] == [False, True, False]
    # C is best, but not separated from B: no winner, top group C and B.
    assert c.best == "C" and c.winner is None and c.top == ["C", "B"]
    # Power from the blocked model's MSE (1.0): a paired difference has sd sqrt(2).
    assert c.power.sd_diff == pytest.approx(math.sqrt(2))


def test_summary_reproduces_seed_004_means_and_sigmas():
    table = pd.read_csv(data("seed004.csv"), comment="#")
    printed = {  # what the seed printed under its Table 1 and Table 2 (MB/s)
        ("mq-deadline", "buffer"): (1081.53, 33.75), ("bfq", "buffer"): (1034.51, 42.06),
        ("kyber", "buffer"): (1057.93, 50.02), ("none", "buffer"): (1058.56, 31.34),
        ("kyber", "cache"): (5482.56, 376.34), ("bfq", "cache"): (4563.24, 1177.97),
        ("bfq-modified", "buffer"): (1049.11, 29.06), ("bfq-modified", "cache"): (5081.07, 250.68),
    }
    for (scheduler, column), (mean, sd) in printed.items():
        s = stats.summarize(scheduler, table.loc[table["scheduler"] == scheduler, column])
        assert s.n == 15
        assert s.mean == pytest.approx(mean, abs=0.01)
        assert s.sd == pytest.approx(sd, abs=0.01)  # the seed used the sample sigma (n - 1)
        assert s.cv == pytest.approx(sd / mean, rel=1e-3)
        assert s.ci_low < s.mean < s.ci_high


def test_confidence_interval_of_data_with_a_negative_value_is_student_t():
    s = stats.summarize("x", [-1.0, 2.0, 5.0])
    # mean 2, sd 3, sem 3/sqrt(3), t(0.975, 2) = 4.3027
    assert (s.ci_low, s.ci_high) == pytest.approx((2 - 4.3027 * 3 / math.sqrt(3), 2 + 4.3027 * 3 / math.sqrt(3)),
                                                  rel=1e-4)


def test_confidence_interval_of_positive_data_is_the_modified_cox_interval():
    # y = log x: mean (log 100 + log 300 + log 3200) / 3, s2 their variance;
    # exp(mean + s2/2 -+ t(0.975, 2) sqrt(s2/3 + s2^2/4)), worked with the formula of Olsson (2005).
    x = [100.0, 300.0, 3200.0]
    y = [math.log(v) for v in x]
    m = sum(y) / 3
    s2 = sum((v - m) ** 2 for v in y) / 2
    half = 4.302653 * math.sqrt(s2 / 3 + s2 * s2 / 4)
    s = stats.summarize("x", x)
    assert (s.ci_low, s.ci_high) == pytest.approx((math.exp(m + s2 / 2 - half), math.exp(m + s2 / 2 + half)), rel=1e-5)
    # The case: a t interval of these runs is -1553..3937 MB/s; this one stays positive.
    assert 0 < s.ci_low < min(x) and s.ci_high > max(x)
    # Small spread: close to Student's t (1000 +- 24.84).
    tight = stats.summarize("x", [990.0, 1000.0, 1010.0])
    assert tight.ci_low == pytest.approx(1000 - 24.84, abs=0.5) and tight.ci_high == pytest.approx(1000 + 24.84, abs=0.5)
    # Runs over many orders of magnitude: the upper end overflows to infinity, without a warning.
    assert stats.summarize("x", [1.0, 1e300]).ci_high == math.inf


def test_clear_difference_names_a_winner():
    rng = np.random.default_rng(7)
    cols = {name: list(mu + rng.normal(0, 1, 8)) for name, mu in (("slow", 100), ("mid", 110), ("fast", 120))}
    c = stats.compare(frame(cols), higher_is_better=True)
    assert c.winner == "fast" and c.anova.p < 1e-6
    lower = stats.compare(frame(cols), higher_is_better=False)  # a latency: lower is better
    assert lower.winner == "slow"


def test_identical_distributions_are_indistinguishable_and_power_asks_for_more_runs():
    rng = np.random.default_rng(11)
    cols = {name: list(100 + rng.normal(0, 10, 5)) for name in ("a", "b", "c")}
    c = stats.compare(frame(cols), higher_is_better=True, detect=0.05)
    assert c.winner is None and c.anova.p > 0.05
    assert sorted(c.top) == ["a", "b", "c"]
    # CV ~10%, 5% asked for: far more than 5 repetitions, and 5 detect only much larger differences.
    assert c.power.reps_needed > 20
    assert c.power.detectable > 0.15
    wider = stats.compare(frame(cols), higher_is_better=True, detect=0.20)
    assert wider.power.reps_needed < c.power.reps_needed


def test_two_configurations_use_wilcoxon():
    c = stats.compare(frame({"x": [1, 2, 3, 4, 5, 6], "y": [2, 3, 4, 5, 6, 8]}), higher_is_better=True)
    assert c.rank_test.name == "Wilcoxon signed-rank"
    assert len(c.pairs) == 1


def test_drift_against_run_order():
    reps = 6
    rising = {name: [100 + 5 * r + off for r in range(reps)] for name, off in (("a", 0.0), ("b", 1.0), ("c", -0.5))}
    c = stats.compare(frame(rising), higher_is_better=True, runs_per_rep=3)
    assert c.drift.significant
    assert c.drift.slope_per_rep == pytest.approx(5 / np.mean([v for col in rising.values() for v in col]), rel=0.05)
    assert c.drift.rep_means == pytest.approx([100 + 5 * r + 1 / 6 for r in range(reps)])
    flat = stats.compare(frame(KNOWN), higher_is_better=True)
    assert not flat.drift.significant


def test_incomplete_repetitions_are_left_out_of_the_tests():
    df = frame(KNOWN)
    df = df[~((df["rep"] == 3) & (df["config"] == "C"))]
    c = stats.compare(df, higher_is_better=True)
    assert c.blocks == 3 and c.dropped_blocks == 1
    assert c.summary("A").n == 4 and c.summary("C").n == 3


def test_one_repetition_or_one_configuration_is_not_tested():
    assert stats.compare(frame({"a": [1.0], "b": [2.0]}), True).anova is None
    single = stats.compare(frame({"a": [1.0, 2.0, 3.0]}), True)
    assert single.anova is None and single.top == ["a"] and single.winner is None


def test_zero_spread_does_not_warn():
    c = stats.compare(frame({"a": [5.0, 5.0, 5.0], "b": [5.0, 5.0, 5.0]}), True)
    assert c.winner is None and c.pairs[0].p == 1.0
