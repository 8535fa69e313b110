// KQF (Eq. 7), TDF (Eq. 8) and vocabulary coverage (Fig. 8) of Ding & Balog 2018.
#include "pysynth/filters.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "pysynth/common.hpp"

namespace pysynth::filtering {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

void check_offsets(const std::int64_t* off, std::size_t n, std::int64_t total, const char* name, const char* what) {
  if (off[0] != 0) fail(std::string(name) + "[0] must be 0, got " + std::to_string(off[0]));
  for (std::size_t i = 0; i < n; ++i)
    if (off[i + 1] < off[i])
      fail(std::string(name) + " must be non-decreasing; " + name + "[" + std::to_string(i + 1) + "] < " + name + "[" +
           std::to_string(i) + "]");
  if (off[n] != total)
    fail(std::string(name) + "[-1] = " + std::to_string(off[n]) + " but there are " + std::to_string(total) + " " +
         what);
}

}  // namespace

void kqf_select(const std::int32_t* questions, std::size_t n_questions, const std::int64_t* cand_offsets,
                const std::int32_t* results, std::size_t n_results, const std::int64_t* result_offsets,
                std::size_t n_candidates, std::int64_t depth, int workers, std::int32_t* chosen, double* best_rr,
                double* rr) {
  resolve_workers(workers);
  check_offsets(cand_offsets, n_questions, static_cast<std::int64_t>(n_candidates), "candidate_offsets", "candidates");
  check_offsets(result_offsets, n_candidates, static_cast<std::int64_t>(n_results), "result_offsets", "results");
  parallel_for(n_questions, workers, 1024, [&](std::size_t, std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) {
      const std::int32_t q = questions[i];
      std::int32_t best = -1;
      double best_v = 0.0;
      for (std::int64_t c = cand_offsets[i]; c < cand_offsets[i + 1]; ++c) {
        std::int64_t r0 = result_offsets[c], r1 = result_offsets[c + 1];
        if (depth > 0) r1 = std::min(r1, r0 + depth);
        double v = 0.0;
        for (std::int64_t j = r0; j < r1; ++j) {
          if (results[j] == q) {
            v = 1.0 / static_cast<double>(j - r0 + 1);
            break;
          }
        }
        rr[c] = v;
        if (best < 0 || v > best_v) {
          best = static_cast<std::int32_t>(c - cand_offsets[i]);
          best_v = v;
        }
      }
      chosen[i] = best;
      best_rr[i] = best_v;
    }
  });
}

void tdf_precision(const std::int32_t* results, std::size_t n_results, const std::int64_t* result_offsets,
                   std::size_t n_pairs, const std::int32_t* questions, const std::int64_t* clusters, std::size_t n_docs,
                   bool include_self, int workers, double* out) {
  resolve_workers(workers);
  check_offsets(result_offsets, n_pairs, static_cast<std::int64_t>(n_results), "result_offsets", "results");
  const std::int64_t N = static_cast<std::int64_t>(n_docs);
  for (std::size_t i = 0; i < n_pairs; ++i)
    if (questions[i] < 0 || questions[i] >= N)
      fail("questions[" + std::to_string(i) + "] = " + std::to_string(questions[i]) + " is not a document id in [0, " +
           std::to_string(N) + ") (len(clusters))");
  for (std::int64_t j = 0; j < result_offsets[n_pairs]; ++j)
    if (results[j] >= N)
      fail("results[" + std::to_string(j) + "] = " + std::to_string(results[j]) + " is not a document id in [0, " +
           std::to_string(N) + ") (len(clusters))");
  parallel_for(n_pairs, workers, 1024, [&](std::size_t, std::size_t b, std::size_t e) {
    std::vector<std::int32_t> buf;
    for (std::size_t i = b; i < e; ++i) {
      buf.clear();
      for (std::int64_t j = result_offsets[i]; j < result_offsets[i + 1]; ++j)
        if (results[j] >= 0) buf.push_back(results[j]);
      std::sort(buf.begin(), buf.end());
      buf.erase(std::unique(buf.begin(), buf.end()), buf.end());
      const std::int32_t q = questions[i];
      const std::int64_t cq = clusters[q];
      std::int64_t hits = 0;
      for (std::int32_t d : buf)
        if (clusters[d] == cq && (include_self || d != q)) ++hits;
      out[i] = buf.empty() ? 0.0 : static_cast<double>(hits) / static_cast<double>(buf.size());
    }
  });
}

void first_rank(const std::int32_t* tokens, std::size_t n_tokens, const std::int64_t* offsets, std::size_t n_rows,
                const std::int64_t* order, std::size_t n_order, std::int64_t vocab_size, std::int64_t* first) {
  if (vocab_size < 0) fail("vocab_size must be >= 0");
  check_offsets(offsets, n_rows, static_cast<std::int64_t>(n_tokens), "offsets", "tokens");
  if (n_order != n_rows)
    fail("order must be a permutation of the " + std::to_string(n_rows) + " rows, got " + std::to_string(n_order) +
         " entries");
  std::vector<std::int64_t> rank_of(n_rows, -1);
  for (std::size_t r = 0; r < n_order; ++r) {
    const std::int64_t row = order[r];
    if (row < 0 || row >= static_cast<std::int64_t>(n_rows) || rank_of[static_cast<std::size_t>(row)] >= 0)
      fail("order must be a permutation of 0.." + std::to_string(static_cast<std::int64_t>(n_rows) - 1) + "; order[" +
           std::to_string(r) + "] = " + std::to_string(row) + " is out of range or repeated");
    rank_of[static_cast<std::size_t>(row)] = static_cast<std::int64_t>(r);
  }
  std::fill(first, first + vocab_size, std::int64_t{-1});
  for (std::size_t row = 0; row < n_rows; ++row) {
    const std::int64_t r = rank_of[row];
    for (std::int64_t j = offsets[row]; j < offsets[row + 1]; ++j) {
      const std::int32_t t = tokens[j];
      if (t < 0 || t >= vocab_size)
        fail("tokens[" + std::to_string(j) + "] = " + std::to_string(t) +
             " is outside [0, vocab_size = " + std::to_string(vocab_size) + ")");
      if (first[t] < 0 || r < first[t]) first[t] = r;
    }
  }
}

}  // namespace pysynth::filtering
