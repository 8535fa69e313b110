// Positional inverted index over documents given as flat int32 term ids + int64 offsets
// (no Python.h). The layout follows bm25s (CSC-like postings; every array memory-mappable):
//
//   indptr      int64[V + 1]    postings of term t are [indptr[t], indptr[t + 1])
//   doc_ids     int32[nnz]      ascending within a term
//   tfs         int32[nnz]      term frequency of the term in that document (>= 1)
//   pos_indptr  int64[nnz + 1]  positions of posting p are positions[pos_indptr[p] : pos_indptr[p + 1]]
//   positions   int32[T]        0-based token positions, ascending within a posting
//   doc_offsets int64[N + 1]    forward index: document d is doc_tokens[doc_offsets[d] : doc_offsets[d + 1]]
//   doc_tokens  int32[T]        (the input, kept: scoring a short question by scanning it is cheaper
//                                than probing up to 7 posting lists at random places)
//   doc_lengths int32[N]        |D|
//   cf          int64[V]        collection frequency (occurrences in the collection)
//   max_tf      int32[V]        largest tf of the term in any document (upper bounds for pruning)
//   impact      int32[nnz]      per term, its postings (indices relative to indptr[t]) ordered by
//                               tf descending, |D| ascending, doc id ascending: the order in which
//                               a term's single-term score decreases, for early termination
//   hi_indptr   int64[V + 1]    the "high layer": postings with tf >= 2, per term, in doc order:
//   hi_doc_ids  int32[nh]       hi_doc_ids / hi_tfs[hi_indptr[t] : hi_indptr[t + 1]] (a term's
//   hi_tfs      int32[nh]       score splits into gain(1) over all its documents plus
//                               gain(tf) - gain(1) over these, two tighter pruning bounds)
//   pair_terms  int32[P]        the frequent terms (df >= max(2, ceil(N / 1024)), at most the 1024
//                               most frequent, ties to the smaller id), ascending ids
//   pair_cf_od  int64[P * P]    #od:1 window matches of (pair_terms[i], pair_terms[j]) summed over
//   pair_cf_uw  int64[P * P]    the collection, at i * P + j; #uw:8 likewise; and the largest
//   pair_max_od int32[P * P]    count in one document. SDM needs the collection frequency of every
//   pair_max_uw int32[P * P]    adjacent query pair; these are the ones expensive to compute.
//
// T = |C| = total number of tokens, nnz = number of (term, document) pairs.
// The Python twin pysynth/retrieval/_reference.py builds the identical arrays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pysynth::retrieval {

// Owning arrays, as produced by build_index.
struct IndexArrays {
  std::vector<std::int64_t> indptr;
  std::vector<std::int32_t> doc_ids;
  std::vector<std::int32_t> tfs;
  std::vector<std::int64_t> pos_indptr;
  std::vector<std::int32_t> positions;
  std::vector<std::int64_t> doc_offsets;
  std::vector<std::int32_t> doc_tokens;
  std::vector<std::int32_t> doc_lengths;
  std::vector<std::int64_t> cf;
  std::vector<std::int32_t> max_tf;
  std::vector<std::int32_t> impact;
  std::vector<std::int64_t> hi_indptr;
  std::vector<std::int32_t> hi_doc_ids, hi_tfs;
  std::vector<std::int32_t> pair_terms;
  std::vector<std::int64_t> pair_cf_od, pair_cf_uw;
  std::vector<std::int32_t> pair_max_od, pair_max_uw;
};

// Non-owning view (in-memory or memory-mapped arrays). Sizes: n_docs = N, vocab_size = V,
// n_postings = nnz, n_tokens = T. Every search function requires a view that passed
// validate_index (or came from build_index): it then never reads out of bounds.
struct IndexView {
  std::int64_t n_docs = 0;
  std::int64_t vocab_size = 0;
  std::int64_t n_postings = 0;
  std::int64_t n_tokens = 0;
  const std::int64_t* indptr = nullptr;
  const std::int32_t* doc_ids = nullptr;
  const std::int32_t* tfs = nullptr;
  const std::int64_t* pos_indptr = nullptr;
  const std::int32_t* positions = nullptr;
  const std::int64_t* doc_offsets = nullptr;
  const std::int32_t* doc_tokens = nullptr;
  const std::int32_t* doc_lengths = nullptr;
  const std::int64_t* cf = nullptr;
  const std::int32_t* max_tf = nullptr;
  const std::int32_t* impact = nullptr;
  std::int64_t n_hi = 0;
  const std::int64_t* hi_indptr = nullptr;
  const std::int32_t* hi_doc_ids = nullptr;
  const std::int32_t* hi_tfs = nullptr;
  std::int64_t n_pair_terms = 0;
  const std::int32_t* pair_terms = nullptr;
  const std::int64_t* pair_cf_od = nullptr;
  const std::int64_t* pair_cf_uw = nullptr;
  const std::int32_t* pair_max_od = nullptr;
  const std::int32_t* pair_max_uw = nullptr;
};

constexpr std::int64_t kMaxPairTerms = 1024;

// The frequent terms of the pair table: df >= max(2, ceil(N / 1024)), the kMaxPairTerms most
// frequent of them (ties to the smaller id), returned in ascending id order.
std::vector<std::int32_t> select_pair_terms(const std::int64_t* indptr, std::int64_t vocab_size, std::int64_t n_docs);

IndexView view_of(const IndexArrays& a, std::int64_t vocab_size);

// Build the index of n_docs documents (ids[offsets[d] : offsets[d + 1]]) over a vocabulary of
// vocab_size ids, with `workers` threads (-1 = all cores); the result does not depend on it.
// Throws std::invalid_argument for malformed offsets, ids outside [0, vocab_size), an empty
// corpus (no documents or no tokens), or sizes beyond the int32 limits of the format.
IndexArrays build_index(const std::int32_t* ids, const std::int64_t* offsets, std::size_t n_docs,
                        std::int64_t vocab_size, int workers);

// Full structural check of an index (O(T), parallel): offsets monotone and in range, doc ids
// ascending and < N, tfs >= 1 and equal to the posting's position count, every position inside
// its document and pointing at a token equal to the term, lengths, cf and max_tf consistent,
// impact a permutation of each term's postings in the documented order, the high layer exactly
// the postings with tf >= 2, pair_terms the selected
// frequent terms and the pair table's counts within range (0 <= max <= cf <= n_tokens) and equal
// to the counts of the documents (recomputed as build_index does).
// Throws std::invalid_argument naming the first inconsistency found.
void validate_index(const IndexView& v, int workers);

// Smallest positive document length (bounds of length-dependent scores); 0 if all are empty.
std::int32_t min_positive_length(const IndexView& v);

}  // namespace pysynth::retrieval
