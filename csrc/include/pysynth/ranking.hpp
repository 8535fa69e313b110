// Ranking metrics for duplicate-question retrieval: P@k, reciprocal rank,
// average precision (per query) and the partial ROC AUC "AUC(max_fpr)".
//
// The Python twin pysynth/ranking/_reference.py is the specification; the
// functions here perform the same floating-point operations in the same order,
// so both backends agree bit for bit.  See the docstrings there (and in
// pysynth/ranking/__init__.py) for the definitions and their sources:
// Lei et al. 2016 / Rücklé et al. 2019 for P@k, MRR and MAP; Shah et al. 2018
// (code: darsh10/qra_code, utils/meter.py) for AUC(0.05).
#pragma once

#include <cstddef>
#include <cstdint>

namespace pysynth {
namespace ranking {

// Number of columns of the per-query table written by ranking_stats.
constexpr std::size_t kStatColumns = 4;

// Per-query statistics of a ragged batch of rankings.
//
// scores[n], labels[n] (0 or 1; 1 = relevant): all candidates of all queries,
// query q owning [offsets[q], offsets[q+1]); offsets has n_queries + 1 entries,
// offsets[0] == 0, non-decreasing, offsets[n_queries] == n.
// out must hold n_queries * 4 doubles; row q receives
//   [P@k, reciprocal rank, average precision, number of relevant candidates].
// Candidates are ranked by score descending, ties broken by position ascending
// (rank_i = 1 + #{j : s_j > s_i} + #{j < i : s_j == s_i}).
// P@k = (relevant among the first min(k, n_q)) / min(k, n_q), 0 when n_q == 0;
// RR and AP are 0 for a query without any relevant candidate.
//
// Throws std::invalid_argument on k < 1, NaN scores, labels other than 0/1,
// or malformed offsets.
void ranking_stats(const double* scores, const std::int8_t* labels, std::size_t n, const std::int64_t* offsets,
                   std::size_t n_offsets, std::int64_t k, double* out);

// Partial area under the ROC curve of all (score, label) pairs pooled,
// from fpr = 0 to max_fpr, divided by max_fpr (so a perfect ranking scores 1).
// Tied scores form a single threshold step (the curve is a straight diagonal
// through a tie group).  interpolate == true integrates exactly up to
// fpr == max_fpr (linear interpolation inside the segment that crosses it).
// interpolate == false uses the stopping rule of darsh10/qra_code's
// AUCMeter.value(max_fpr): stop at fpr = (m - 1) / n_neg, m the smallest
// negative count with m / n_neg >= max_fpr, and still divide by max_fpr.
// With interpolate == true the area above the curve is summed as well and,
// when it is the smaller part, the result is
// 1 - above / (max_fpr * n_neg * n_pos), so a perfect ranking gives exactly 1.
//
// Throws std::invalid_argument on NaN scores, labels other than 0/1,
// max_fpr outside (0, 1], or when there is no positive or no negative pair.
double auc_at(const double* scores, const std::int8_t* labels, std::size_t n, double max_fpr, bool interpolate);

}  // namespace ranking
}  // namespace pysynth
