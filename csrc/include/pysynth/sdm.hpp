// Batch retrieval over a positional index (no Python.h): the Sequential Dependence Model with
// Dirichlet smoothing (Metzler & Croft 2005, as Galago / Indri evaluate it) and BM25 (the Lucene
// variant of bm25s). The exact definitions, operation by operation, are the Python twin
// pysynth/retrieval/_reference.py; this file computes every score with the same floating-point
// operations in the same order, so both backends return bit-identical scores and rankings.
//
// SDM, for a query of n >= 1 term occurrences q_1..q_n (ids in [0, V)):
//   f(c, cf) = log((c + mu * P) / (|D| + mu)),  P = cf / |C| if cf > 0 else 0.5 / |C|
//   S_T = sum_i f(tf(q_i, D), cf(q_i))                                  (query order)
//   S_O = sum_j f(od(q_j, q_j+1, D), cf_od(q_j, q_j+1))      j = 1..n-1  (#od:1)
//   S_U = sum_j f(uw(q_j, q_j+1, D), cf_uw(q_j, q_j+1))                  (#uw:8)
//   n == 1: score = S_T / n;  n >= 2: with (l_T, l_O, l_U) = weights / sum(weights)
//   score = l_T * (S_T / n) + l_O * (S_O / (n - 1)) + l_U * (S_U / (n - 1))
// od / uw are Galago's OrderedWindowIterator (width 1: term a at p, term b at p + 1) and
// UnorderedWindowIterator (width 8) match counts; cf_od / cf_uw are their sums over the collection.
//
// BM25 (bm25s method="lucene"): N documents, avgdl = |C| / N,
//   idf(t) = log(1 + (N - df + 0.5) / (df + 0.5))
//   score = sum over query occurrences i with tf > 0 of
//           idf(q_i) * (tf / (k1 * ((1 - b) + b * |D| / avgdl) + tf))
//
// Candidates: documents that contain at least one query term (as Galago/Indri score the union
// of the query terms' postings). Ranking: score descending, then doc id ascending.
// Dynamic pruning (MaxScore-style upper bounds on every component, with a safety margin of
// 1e-9 relative) only skips documents proven to rank below the current k-th result, so the
// top k are exactly those of exhaustive scoring.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pysynth/index.hpp"

namespace pysynth::retrieval {

constexpr int kOrderedWidth = 1;    // #od:1
constexpr int kUnorderedWidth = 8;  // #uw:8

enum class Model { Sdm, Bm25 };

struct ScoreParams {
  Model model = Model::Sdm;
  double mu = 2500.0;
  double w_unigram = 0.85, w_ordered = 0.10, w_unordered = 0.05;
  double k1 = 1.5, b = 0.75;
};

// Queries i = ids[offsets[i] : offsets[i + 1]], i < n.
struct Queries {
  const std::int32_t* ids = nullptr;
  const std::int64_t* offsets = nullptr;
  std::size_t n = 0;
};

Model parse_model(const std::string& name);  // "sdm" | "bm25", else std::invalid_argument

// Throws std::invalid_argument (naming the parameter) for mu <= 0 or not finite, weights
// negative / not finite / all zero, k1 < 0, b outside [0, 1].
void check_params(const ScoreParams& p);

// Throws std::invalid_argument for malformed offsets or ids outside [0, V).
void check_queries(const IndexView& ix, const Queries& q);

// What search / target_ranks derive from the index alone, kept across calls on one index: the
// window statistics and lists of the query pairs outside the index's pair table, the #od:1 lists
// of frequent pairs, the rank maps of long lists, the 1-byte lengths and the workers' scratch
// (N-sized stamps). None depends on the scoring parameters, so results are those of a call
// without it. Thread-safe (calls on one index from several threads share it). Bounded: when an
// addition would pass max_bytes, the pairs' statistics and lists are dropped first, then, if
// needed, everything kept (parts in use by a running call stay alive until it ends).
// Why: the K2Q pipeline calls rank_of chunk after chunk on one index with the same frequent
// pairs; pair statistics were 18 % of a call (RESULTS_retrieval.md, issue 29).
// The caller passes one cache per index (never one of an index whose arrays changed since).
struct SearchCache;
std::shared_ptr<SearchCache> make_search_cache(std::size_t max_bytes);

struct SearchCacheInfo {
  std::size_t bytes = 0, max_bytes = 0, pair_stats = 0, pair_lists = 0, od_lists = 0, rank_maps = 0, workers = 0;
  std::int64_t pairs_reused = 0, od_lists_reused = 0, rank_maps_reused = 0, clears = 0, pair_clears = 0;
};
SearchCacheInfo search_cache_info(SearchCache& c);
// A new bound; what is kept is dropped when it passes it (0: keep nothing).
void set_search_cache_bound(SearchCache& c, std::size_t max_bytes);

// Top-k of every query: docs (n x k, -1 padded), scores (n x k, NaN padded), counts (n).
// cache: nullptr, or the SearchCache of this index.
template <class Score>
void search(const IndexView& ix, const Queries& q, const ScoreParams& p, int k, int workers, std::int32_t* docs,
            Score* scores, std::int32_t* counts, SearchCache* cache = nullptr);

// 1-based rank of targets[i] in the ranking of query i (the order `search` returns), or 0 when
// the target is not among the first n results (or matches no query term). Exact, and much
// cheaper than a top-n search: the target's own score prunes from the start.
void target_ranks(const IndexView& ix, const Queries& q, const std::int32_t* targets, const ScoreParams& p, int n,
                  int workers, std::int32_t* ranks, SearchCache* cache = nullptr);

// Collection statistics of the windows of term pairs (a[i], b[i]): cf_od (#od:1 matches),
// cf_uw (#uw:8 matches), summed over all documents.
void window_stats(const IndexView& ix, const std::int32_t* a, const std::int32_t* b, std::size_t n, int workers,
                  std::int64_t* cf_od, std::int64_t* cf_uw);

// Galago's window match counts in one document, from ascending position lists.
std::int32_t ordered_count(const std::int32_t* A, std::size_t na, const std::int32_t* B, std::size_t nb, int width);
std::int32_t unordered_count(const std::int32_t* A, std::size_t na, const std::int32_t* B, std::size_t nb,
                             bool same_term, int width);

// ordered_count (#od:1) and unordered_count (#uw:8) together, with the case of one occurrence
// each (most pairs in questions) inline: the same counts without two calls (the calls were a
// fifth of the pair table's build time and ~9% of SDM search with KQGM queries at 1M questions).
inline void window_counts(const std::int32_t* A, std::size_t na, const std::int32_t* B, std::size_t nb, bool same,
                          std::int32_t* od, std::int32_t* uw) {
  if (na == 1 && nb == 1) {
    const std::int64_t gap = static_cast<std::int64_t>(B[0]) - A[0];  // B after A by gap positions
    *od = gap >= 1 && gap - 1 < kOrderedWidth;
    *uw = same || (gap < 0 ? -gap : gap) + 1 <= kUnorderedWidth;
    return;
  }
  *od = ordered_count(A, na, B, nb, kOrderedWidth);
  *uw = unordered_count(A, na, B, nb, same, kUnorderedWidth);
}

}  // namespace pysynth::retrieval
