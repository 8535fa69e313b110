// Filters of synthetic keyword-question pairs (Ding & Balog 2018, Sect. 3.2), no Python.h.
// The Python twin pysynth/filtering/_reference.py is the specification.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pysynth::filtering {

// Keyword query filter (Eq. 7). Question i (doc id questions[i]) owns the candidate queries
// c in [cand_offsets[i], cand_offsets[i + 1]); candidate c's ranked result list is
// results[result_offsets[c] : result_offsets[c + 1]] (best first).
//   rr[c]       = 1 / (1-based position of the first occurrence of questions[i] in the list,
//                 looking at the first `depth` entries only when depth > 0), 0 if absent;
//   chosen[i]   = index (within the question's candidates, 0-based) of the largest rr, the
//                 first such candidate on ties (so 0 when no candidate retrieves the question),
//                 -1 for a question without candidates;
//   best_rr[i]  = rr of the chosen candidate (0 when none).
// Throws std::invalid_argument for malformed offsets.
void kqf_select(const std::int32_t* questions, std::size_t n_questions, const std::int64_t* cand_offsets,
                const std::int32_t* results, std::size_t n_results, const std::int64_t* result_offsets,
                std::size_t n_candidates, std::int64_t depth, int workers, std::int32_t* chosen, double* best_rr,
                double* rr);

// Training data filter quality score (Eq. 8). Pair i = (keyword query i, question questions[i]);
// its retrieved list is results[result_offsets[i] : result_offsets[i + 1]] (entries < 0 are
// padding and ignored; repeated doc ids count once). C_q = documents whose cluster id equals
// clusters[questions[i]] (q itself included when include_self, else excluded).
//   out[i] = |C_q ∩ RR| / |RR| with RR the set of retrieved documents, 0 when RR is empty.
// Throws std::invalid_argument for malformed offsets or doc ids >= n_docs.
void tdf_precision(const std::int32_t* results, std::size_t n_results, const std::int64_t* result_offsets,
                   std::size_t n_pairs, const std::int32_t* questions, const std::int64_t* clusters, std::size_t n_docs,
                   bool include_self, int workers, double* out);

// Vocabulary coverage support (Fig. 8): rows r = tokens[offsets[r] : offsets[r + 1]] ranked by
// `order` (a permutation of 0..n_rows-1, best first). first[t] = the smallest rank position
// (index into order) of a row containing term t, -1 if no row contains t. The fraction of the
// vocabulary of all rows covered by the first L rows is #{t : 0 <= first[t] < L} / #{t : first[t] >= 0}.
// Throws std::invalid_argument for malformed offsets, a non-permutation order, ids outside [0, V).
void first_rank(const std::int32_t* tokens, std::size_t n_tokens, const std::int64_t* offsets, std::size_t n_rows,
                const std::int64_t* order, std::size_t n_order, std::int64_t vocab_size, std::int64_t* first);

}  // namespace pysynth::filtering
