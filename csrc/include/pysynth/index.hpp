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
};

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
// impact a permutation of each term's postings in the documented order.
// Throws std::invalid_argument naming the first inconsistency found.
void validate_index(const IndexView& v, int workers);

// Smallest positive document length (bounds of length-dependent scores); 0 if all are empty.
std::int32_t min_positive_length(const IndexView& v);

}  // namespace pysynth::retrieval
