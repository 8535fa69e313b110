// Ranking metrics: see csrc/include/pysynth/ranking.hpp and the Python twin
// pysynth/ranking/_reference.py (the specification).  Every floating-point
// operation below mirrors the twin's, in the same order, so the two backends
// agree bit for bit (the project compiles with -ffp-contract=off).
#include "pysynth/ranking.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace pysynth {
namespace ranking {
namespace {

void check_pairs(const double* scores, const std::int8_t* labels, std::size_t n) {
  if (n > 0 && (scores == nullptr || labels == nullptr)) {
    throw std::invalid_argument("scores and labels must not be null");
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(scores[i])) {
      throw std::invalid_argument("scores[" + std::to_string(i) + "] is NaN; remove or replace NaN scores");
    }
    if (labels[i] != 0 && labels[i] != 1) {
      throw std::invalid_argument("labels[" + std::to_string(i) + "] is " +
                                  std::to_string(static_cast<int>(labels[i])) + "; labels must be 0 or 1");
    }
  }
}

void check_offsets(const std::int64_t* offsets, std::size_t n_offsets, std::size_t n) {
  if (offsets == nullptr || n_offsets < 1) {
    throw std::invalid_argument("offsets must be a 1-D array of length Q + 1 >= 1");
  }
  if (offsets[0] != 0) {
    throw std::invalid_argument("offsets[0] must be 0, got " + std::to_string(offsets[0]));
  }
  for (std::size_t q = 0; q + 1 < n_offsets; ++q) {
    if (offsets[q + 1] < offsets[q]) {
      throw std::invalid_argument("offsets must be non-decreasing; offsets[" + std::to_string(q + 1) + "] < offsets[" +
                                  std::to_string(q) + "]");
    }
  }
  if (offsets[n_offsets - 1] != static_cast<std::int64_t>(n)) {
    throw std::invalid_argument("offsets[-1] must equal the number of scores (" + std::to_string(n) + "), got " +
                                std::to_string(offsets[n_offsets - 1]));
  }
}

struct Pair {
  double score;
  std::int8_t label;
};

struct Item {
  double score;
  std::size_t pos;
  std::int8_t label;
};

// Queries with at most this many relevant candidates rank them by counting.
constexpr std::size_t kCountingMaxRelevant = 8;

}  // namespace

void ranking_stats(const double* scores, const std::int8_t* labels, std::size_t n, const std::int64_t* offsets,
                   std::size_t n_offsets, std::int64_t k, double* out) {
  if (k < 1) {
    throw std::invalid_argument("k must be >= 1, got " + std::to_string(k));
  }
  check_pairs(scores, labels, n);
  check_offsets(offsets, n_offsets, n);

  // Ranking: score descending, ties by position ascending, i.e. the rank of
  // candidate i is 1 + #{j : s_j > s_i} + #{j < i : s_j == s_i}.  Only the
  // ranks of the relevant candidates matter, in increasing order.  A query
  // with few relevant candidates gets them by counting (O(n * R), branch
  // free); one with many by sorting all candidates (O(n log n)).
  const std::size_t n_queries = n_offsets - 1;
  std::vector<std::size_t> ranks;
  std::vector<Item> items;
  for (std::size_t q = 0; q < n_queries; ++q) {
    const std::size_t lo = static_cast<std::size_t>(offsets[q]);
    const std::size_t n_q = static_cast<std::size_t>(offsets[q + 1]) - lo;
    const double* qs = scores + lo;
    const std::int8_t* ql = labels + lo;

    std::size_t n_rel = 0;
    for (std::size_t i = 0; i < n_q; ++i) n_rel += static_cast<std::size_t>(ql[i]);
    ranks.clear();
    if (n_rel <= kCountingMaxRelevant) {
      for (std::size_t i = 0; i < n_q; ++i) {
        if (ql[i] != 1) continue;
        const double si = qs[i];
        std::size_t above = 0;
        for (std::size_t j = 0; j < n_q; ++j) above += qs[j] > si ? 1 : 0;
        for (std::size_t j = 0; j < i; ++j) above += qs[j] == si ? 1 : 0;
        ranks.push_back(above + 1);
      }
      std::sort(ranks.begin(), ranks.end());
    } else {
      items.resize(n_q);
      for (std::size_t i = 0; i < n_q; ++i) items[i] = Item{qs[i], i, ql[i]};
      // a strict total order (no NaN here): the twin's stable-sort order
      std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
        return a.score > b.score || (a.score == b.score && a.pos < b.pos);
      });
      for (std::size_t r = 0; r < n_q; ++r) {
        if (items[r].label == 1) ranks.push_back(r + 1);
      }
    }

    const std::size_t cutoff = static_cast<std::uint64_t>(k) < n_q ? static_cast<std::size_t>(k) : n_q;
    std::int64_t hits = 0;
    std::int64_t top = 0;
    double rr = 0.0;
    double ap_sum = 0.0;
    for (const std::size_t rank : ranks) {  // the twin's loop, relevant ranks only
      ++hits;
      if (hits == 1) rr = 1.0 / static_cast<double>(rank);
      ap_sum += static_cast<double>(hits) / static_cast<double>(rank);
      if (rank <= cutoff) ++top;
    }
    double* row = out + q * kStatColumns;
    row[0] = cutoff > 0 ? static_cast<double>(top) / static_cast<double>(cutoff) : 0.0;
    row[1] = rr;
    row[2] = hits > 0 ? ap_sum / static_cast<double>(hits) : 0.0;
    row[3] = static_cast<double>(hits);
  }
}

double auc_at(const double* scores, const std::int8_t* labels, std::size_t n, double max_fpr, bool interpolate) {
  if (!(max_fpr > 0.0 && max_fpr <= 1.0)) {
    throw std::invalid_argument("max_fpr must be in (0, 1], got " + std::to_string(max_fpr));
  }
  check_pairs(scores, labels, n);
  std::int64_t n_pos = 0;
  for (std::size_t i = 0; i < n; ++i) n_pos += labels[i];
  const std::int64_t n_neg = static_cast<std::int64_t>(n) - n_pos;
  if (n_pos == 0 || n_neg == 0) {
    throw std::invalid_argument("AUC needs at least one relevant and one non-relevant pair, got " +
                                std::to_string(n_pos) + " relevant and " + std::to_string(n_neg) + " non-relevant");
  }

  const double neg = static_cast<double>(n_neg);
  const double cut = max_fpr * neg;  // max_fpr in units of negatives
  double limit = cut;
  if (!interpolate) {
    // m: the smallest negative count with m / n_neg >= max_fpr (the twin
    // counts up from 1; start near the answer and walk to the same m).
    std::int64_t m = static_cast<std::int64_t>(std::ceil(cut));
    if (m < 1) m = 1;
    if (m > n_neg) m = n_neg;
    while (m > 1 && static_cast<double>(m - 1) / neg >= max_fpr) --m;
    while (static_cast<double>(m) / neg < max_fpr) ++m;
    limit = static_cast<double>(m - 1);
  }

  // Only the pairs down to the tie group that holds the negative crossing
  // `limit` matter.  need = that negative's 1-based rank among negatives.
  const double need_d = std::floor(limit) + 1.0;
  std::vector<Pair> pairs;
  if (need_d <= neg) {
    const std::int64_t need = static_cast<std::int64_t>(need_d);
    std::vector<double> negs;
    negs.reserve(static_cast<std::size_t>(n_neg));
    for (std::size_t i = 0; i < n; ++i) {
      if (labels[i] == 0) negs.push_back(scores[i]);
    }
    auto nth = negs.begin() + (need - 1);
    std::nth_element(negs.begin(), nth, negs.end(), std::greater<double>());
    const double threshold = *nth;
    for (std::size_t i = 0; i < n; ++i) {
      if (scores[i] >= threshold) pairs.push_back(Pair{scores[i], labels[i]});
    }
  } else {
    pairs.reserve(n);
    for (std::size_t i = 0; i < n; ++i) pairs.push_back(Pair{scores[i], labels[i]});
  }
  // Order inside a tie group does not matter: a group is one ROC step.
  std::sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) { return a.score > b.score; });

  // twice the area below / above the curve, in (negatives x positives) units
  double below2 = 0.0;
  double above2 = 0.0;
  const std::int64_t two_p = 2 * n_pos;
  std::int64_t fp = 0;
  std::int64_t tp = 0;
  const std::size_t m_pairs = pairs.size();
  std::size_t i = 0;
  while (i < m_pairs) {
    // one group of equal scores = one step of the ROC curve
    std::size_t j = i;
    std::int64_t d_fp = 0;
    std::int64_t d_tp = 0;
    while (j < m_pairs && pairs[j].score == pairs[i].score) {
      if (pairs[j].label == 1) {
        ++d_tp;
      } else {
        ++d_fp;
      }
      ++j;
    }
    const std::int64_t fp1 = fp + d_fp;
    const std::int64_t tp1 = tp + d_tp;
    if (static_cast<double>(fp1) <= limit) {
      below2 += static_cast<double>(d_fp) * static_cast<double>(tp + tp1);
      above2 += static_cast<double>(d_fp) * static_cast<double>(two_p - tp - tp1);
    } else {
      // the segment crosses the limit: cut it there (linear interpolation)
      const double w = limit - static_cast<double>(fp);
      const double t_mid = static_cast<double>(tp) + static_cast<double>(d_tp) * w / static_cast<double>(d_fp);
      below2 += w * (static_cast<double>(tp) + t_mid);
      above2 += w * (static_cast<double>(two_p - tp) - t_mid);
      break;
    }
    fp = fp1;
    tp = tp1;
    i = j;
  }
  if (interpolate && above2 < below2) {
    // the strip [0, max_fpr] x [0, 1] is covered: complement of the smaller part
    return 1.0 - above2 / static_cast<double>(two_p) / cut;
  }
  return below2 / static_cast<double>(two_p) / cut;
}

}  // namespace ranking
}  // namespace pysynth
