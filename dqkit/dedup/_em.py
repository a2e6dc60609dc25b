"""The Fellegi–Sunter model and its unsupervised estimation, on aggregated counts only.

Each comparison ``k`` has levels ``0..L_k-1`` (and -1 for NULL, which carries no evidence). The model
holds ``m[k][l] = P(level l | match)``, ``u[k][l] = P(level l | non-match)`` and the prior ``λ``, the
probability that two records drawn at random match. A pair's match weight is
``log2(λ/(1-λ)) + Σ_k log2(m[k][γ_k] / u[k][γ_k])`` and its probability ``1 / (1 + 2^-weight)``.

How dqkit estimates it, and why (the approach Splink showed works on blocked data):

* **u from random pairs.** Two records drawn at random almost never match, so the level frequencies
  over all pairs of a seeded sample of records estimate u directly, without a mixture model. The
  few matches in the sample still count, and for an identifying column (most random pairs with the
  same social security number are matches) they inflate u of the agreeing levels; so once m and λ
  are fitted, u is re-estimated with each sampled pattern weighted by its posterior non-match
  probability, and m and λ are fitted again (``non_match_frequencies``; rounds until u settles).
* **m by EM on the blocked pairs, one session per blocking rule, u fixed.** Candidate pairs are rich
  in matches, so EM separates matches from non-matches there. Within the pairs of one rule the
  comparisons on that rule's columns agree by construction and carry no information, so a session
  leaves them out (their m comes from the other sessions); the m of a comparison is the mean over
  the sessions that estimated it. Fixing u keeps EM from drifting to another two-class split (free
  m/u EM on blocked pairs often converges to "same block key or not").
* **λ** by the same EM step over every blocked pattern with m and u fixed, counting the pairs no rule
  blocked as non-matches (blocking is assumed to miss few matches).
* **Labels** (known matching pairs), when given, set m directly from their levels (Laplace-smoothed).

Everything here works on a table of level patterns with counts (a small ``groupBy`` result; the
number of rows is bounded by the product of the level counts), so the driver never holds pairs.
``expectation_maximisation`` also runs the classic free EM (m, u and λ all estimated), which the
tests use on a planted two-class mixture.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

#: probabilities are kept in [FLOOR, 1] so that no level has an infinite Bayes factor
FLOOR = 1e-6


@dataclass(frozen=True)
class FSModel:
    """Fellegi–Sunter parameters: per comparison ``m`` and ``u`` over levels 0..L-1, and ``prior`` (λ)."""

    names: tuple[str, ...]
    m: tuple[np.ndarray, ...]
    u: tuple[np.ndarray, ...]
    prior: float
    notes: tuple[str, ...] = field(default=())

    def log2_bayes_factors(self) -> list[np.ndarray]:
        """``log2(m/u)`` per comparison and level: each level's contribution to the match weight."""
        return [np.log2(np.maximum(m, FLOOR) / np.maximum(u, FLOOR)) for m, u in zip(self.m, self.u)]

    @property
    def prior_weight(self) -> float:
        """``log2(λ / (1 - λ))``: the match weight of a pair before any comparison."""
        lam = min(max(self.prior, 1e-300), 1 - 1e-12)
        return float(np.log2(lam / (1 - lam)))

    def match_weights(self, patterns: np.ndarray) -> np.ndarray:
        """Match weight of each level pattern (rows of ``patterns``; -1 = NULL contributes 0)."""
        return self.prior_weight + _pattern_log2_bf(patterns, self.log2_bayes_factors())


def default_m(levels: int) -> np.ndarray:
    """Starting m over levels 0..L-1 (exact last): most matches agree exactly."""
    if levels == 1:
        return np.ones(1)
    rest = np.arange(1, levels, dtype=float)  # else .. closest close level: rising share
    m = np.concatenate([0.1 * rest / rest.sum(), [0.9]])
    return m / m.sum()


def default_u(levels: int) -> np.ndarray:
    """Starting u over levels 0..L-1: most non-matches disagree."""
    if levels == 1:
        return np.ones(1)
    rest = np.array([2.0 ** -i for i in range(1, levels)])  # close levels and exact: falling share
    u = np.concatenate([[0.9], 0.1 * rest[::-1] / rest.sum()])
    return u / u.sum()


def level_frequencies(patterns: np.ndarray, counts: np.ndarray, levels: Sequence[int],
                      smoothing: float = 1.0) -> list[np.ndarray]:
    """Per comparison, the frequency of each level among the non-NULL levels (add-``smoothing``)."""
    out = []
    for k, n_levels in enumerate(levels):
        f = np.full(n_levels, float(smoothing))
        g = patterns[:, k] if len(patterns) else np.empty(0, int)
        for lvl in range(n_levels):
            f[lvl] += counts[g == lvl].sum()
        out.append(f / f.sum())
    return out


def u_from(patterns: np.ndarray, counts: np.ndarray, levels: Sequence[int]) -> tuple[list[np.ndarray], int]:
    """u and the number of random pairs it rests on, from the level patterns of the u sample's pairs
    (both routes of ``dedup``: Spark's and the driver's): level frequencies, add-one smoothed, or the
    starting u when the sample has no pair."""
    if counts.sum() == 0:
        return [default_u(n) for n in levels], 0
    return level_frequencies(patterns, counts, levels), int(counts.sum())


def non_match_frequencies(patterns: np.ndarray, counts: np.ndarray, levels: Sequence[int], model: FSModel
                          ) -> list[np.ndarray]:
    """u from random pairs with the matches among them taken out: each level pattern of the random
    pairs weighted by its posterior probability of being a non-match under ``model`` (whose prior
    λ is also the match share among random pairs). Plain level frequencies count the true matches in
    the sample as non-matches, which inflates u of the agreeing levels of identifying columns (an
    exact social security number is seen mostly in matching pairs) and so shrinks their weight."""
    patterns = np.asarray(patterns, dtype=np.int64).reshape(len(counts), len(levels))
    weights = model.match_weights(patterns)
    p_match = 1.0 / (1.0 + np.exp2(-np.clip(weights, -1000, 1000)))
    return level_frequencies(patterns, np.asarray(counts, dtype=float) * (1.0 - p_match), levels)


def _pattern_log2_bf(patterns: np.ndarray, bfs: Sequence[np.ndarray]) -> np.ndarray:
    total = np.zeros(len(patterns))
    for k, bf in enumerate(bfs):
        g = patterns[:, k]
        total += np.where(g >= 0, bf[np.clip(g, 0, len(bf) - 1)], 0.0)
    return total


def _log_likelihoods(patterns: np.ndarray, probs: Sequence[np.ndarray]) -> np.ndarray:
    total = np.zeros(len(patterns))
    for k, p in enumerate(probs):
        g = patterns[:, k]
        total += np.where(g >= 0, np.log(np.maximum(p[np.clip(g, 0, len(p) - 1)], FLOOR)), 0.0)
    return total


@dataclass(frozen=True)
class EMRun:
    """The outcome of ``expectation_maximisation``."""

    m: list[np.ndarray]
    u: list[np.ndarray]
    prior: float
    iterations: int
    converged: bool


def expectation_maximisation(patterns: np.ndarray, counts: np.ndarray, levels: Sequence[int],
                             m0: Sequence[np.ndarray], u0: Sequence[np.ndarray], prior0: float, *,
                             fix_u: bool = False, active: Sequence[bool] | None = None,
                             max_iterations: int = 200, tolerance: float = 1e-6) -> EMRun:
    """EM for the two-class mixture over level ``patterns`` (G × K ints, -1 NULL) seen ``counts`` times.

    E-step: each pattern's match probability under the current m, u, λ (conditional independence of
    the comparisons given the class). M-step: λ = expected matches / pairs; m (and u unless
    ``fix_u``) = expected level frequencies in each class. Comparisons with ``active[k]`` False are
    ignored (treated as NULL) and keep their m0/u0. Stops when no parameter moves by ``tolerance``.
    """
    patterns = np.asarray(patterns, dtype=np.int64).reshape(len(counts), len(levels))
    counts = np.asarray(counts, dtype=float)
    active = [True] * len(levels) if active is None else list(active)
    pat = patterns.copy()
    for k, a in enumerate(active):
        if not a:
            pat[:, k] = -1
    m = [np.array(x, dtype=float) for x in m0]
    u = [np.array(x, dtype=float) for x in u0]
    lam = float(prior0)
    total = counts.sum()
    if total <= 0:
        return EMRun(m, u, lam, 0, True)
    converged = False
    it = 0
    for it in range(1, max_iterations + 1):
        lm = np.log(max(lam, 1e-300)) + _log_likelihoods(pat, m)
        lu = np.log(max(1 - lam, 1e-300)) + _log_likelihoods(pat, u)
        p = 1.0 / (1.0 + np.exp(np.clip(lu - lm, -700, 700)))
        wm, wu = counts * p, counts * (1 - p)
        new_lam = float(wm.sum() / total)
        new_m, new_u = [], []
        for k, n_levels in enumerate(levels):
            if not active[k]:
                new_m.append(m[k])
                new_u.append(u[k])
                continue
            g = pat[:, k]
            new_m.append(_m_step(g, wm, n_levels, m[k]))
            new_u.append(u[k] if fix_u else _m_step(g, wu, n_levels, u[k]))
        delta = max([abs(new_lam - lam)] + [float(np.abs(a - b).max()) for a, b in zip(new_m + new_u, m + u)])
        m, u, lam = new_m, new_u, new_lam
        if delta < tolerance:
            converged = True
            break
    return EMRun(m, u, lam, it, converged)


def _m_step(g: np.ndarray, w: np.ndarray, n_levels: int, previous: np.ndarray) -> np.ndarray:
    f = np.bincount(g[g >= 0], weights=w[g >= 0], minlength=n_levels)[:n_levels].astype(float)
    if f.sum() <= 0:
        return previous
    f = np.maximum(f / f.sum(), FLOOR)
    return f / f.sum()


def estimate_prior(patterns: np.ndarray, counts: np.ndarray, bfs: Sequence[np.ndarray], all_pairs: float,
                   start: float | None = None, max_iterations: int = 1000, tolerance: float = 1e-12) -> float:
    """λ with m and u fixed: the EM step for λ over the blocked patterns, the ``all_pairs - blocked``
    pairs no rule produced counted as non-matches."""
    counts = np.asarray(counts, dtype=float)
    blocked = counts.sum()
    if blocked <= 0 or all_pairs <= 0:
        return 1.0 / max(all_pairs, 2.0)
    log_bf = _pattern_log2_bf(np.asarray(patterns, dtype=np.int64).reshape(len(counts), len(bfs)), bfs) * np.log(2)
    lam = start if start is not None else min(0.5, blocked / all_pairs / 2)
    for _ in range(max_iterations):
        odds = np.log(lam / (1 - lam)) + log_bf
        p = 1.0 / (1.0 + np.exp(-np.clip(odds, -700, 700)))
        new = float((counts * p).sum() / all_pairs)
        new = min(max(new, 1e-15), 1 - 1e-9)
        if abs(new - lam) <= tolerance * max(lam, 1e-15):
            return new
        lam = new
    return lam


def fit(patterns: np.ndarray, counts: np.ndarray, rule_masks: np.ndarray, levels: Sequence[int],
        names: Sequence[str], u: Sequence[np.ndarray], session_inactive: Sequence[Sequence[bool]],
        all_pairs: float, *, labelled_m: Sequence[np.ndarray] | None = None, prior: float | None = None,
        max_iterations: int = 200, tolerance: float = 1e-6) -> tuple[FSModel, list[dict]]:
    """The full model from pattern counts of the blocked pairs.

    ``rule_masks[g]`` is the bitmask of the rules whose blocks hold pattern row ``g``'s pairs (rows
    are (pattern, mask) groups); ``session_inactive[r][k]`` says comparison ``k`` reads a column of
    rule ``r`` (left out of session r). Returns the model and one record per EM session.
    """
    patterns = np.asarray(patterns, dtype=np.int64).reshape(len(counts), len(levels))
    counts = np.asarray(counts, dtype=float)
    rule_masks = np.asarray(rule_masks, dtype=np.int64)
    notes: list[str] = []
    sessions: list[dict] = []
    if labelled_m is not None:
        m = [np.asarray(x, dtype=float) for x in labelled_m]
    else:
        estimates: list[list[np.ndarray]] = [[] for _ in levels]
        for r, inactive in enumerate(session_inactive):
            rows = (rule_masks >> r) & 1 == 1
            n_pairs = float(counts[rows].sum())
            active = [not x for x in inactive]
            if n_pairs < 2 or not any(active):
                sessions.append({"rule": r, "pairs": n_pairs, "iterations": 0, "converged": False,
                                 "estimated": []})
                continue
            run = expectation_maximisation(patterns[rows], counts[rows], levels,
                                           [default_m(n) for n in levels], u, 0.1, fix_u=True, active=active,
                                           max_iterations=max_iterations, tolerance=tolerance)
            est = [names[k] for k, a in enumerate(active) if a]
            sessions.append({"rule": r, "pairs": n_pairs, "iterations": run.iterations,
                             "converged": run.converged, "match_share": run.prior, "estimated": est})
            for k, a in enumerate(active):
                if a:
                    estimates[k].append(run.m[k])
        m = []
        for k, n in enumerate(levels):
            if estimates[k]:
                v = np.mean(estimates[k], axis=0)
                m.append(v / v.sum())
            else:
                m.append(default_m(n))
                if counts.sum() > 0:
                    notes.append(f"m of {names[k]!r} was not estimated (every blocking rule with pairs reads its "
                                 "column); the starting m is used: block on other columns too, or give labels")
    bfs = [np.log2(np.maximum(a, FLOOR) / np.maximum(b, FLOOR)) for a, b in zip(m, u)]
    lam = prior if prior is not None else estimate_prior(patterns, counts, bfs, all_pairs)
    model = FSModel(tuple(names), tuple(np.asarray(x) for x in m), tuple(np.asarray(x) for x in u),
                    float(lam), tuple(notes))
    return model, sessions
