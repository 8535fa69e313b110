// Keyword query generation (KQGM) of Ding & Balog 2018, Sect. 3.1, Algorithm 1:
// m synthetic keyword queries per question, drawn from the baseline mixture (Eq. 1) or the
// paraphrase mixture (Eq. 6) with the popular / discriminative / combination document
// models (Eq. 3-5) and the collection model (Eq. 2), without repeated terms.
//
// The Python twin pysynth/sampling/_reference.py is the specification (its module
// docstring defines every step, the counter-based random stream and the edge cases); the
// code here performs the same integer and floating-point operations in the same order, so
// both backends emit identical candidates (the project compiles with -ffp-contract=off).
// No Python.h: this is a plain C++17 library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pysynth {
namespace sampling {

enum class Strategy : int { Popular = 0, Discriminative = 1, Combination = 2 };

// "popular" | "discriminative" | "combination"; throws std::invalid_argument otherwise.
Strategy parse_strategy(const std::string& name);

// SplitMix64 finalizer (Stafford Mix13).
inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

constexpr std::uint64_t kGamma = 0x9E3779B97F4A7C15ULL;  // stream increment
constexpr std::uint64_t kQuestionMul = 0xD1B54A32D192ED03ULL;
constexpr std::uint64_t kCandidateMul = 0xD6E8FEB86659FD93ULL;

inline std::uint64_t seed_key(std::uint64_t seed) { return mix64(seed + kGamma); }
inline std::uint64_t question_key(std::uint64_t seed_key, std::uint64_t global_question) {
  return mix64(seed_key + global_question * kQuestionMul);
}
inline std::uint64_t candidate_key(std::uint64_t question_key, std::uint64_t candidate) {
  return mix64(question_key + candidate * kCandidateMul);
}

// Words 0 .. count-1 of one candidate's stream: word(k) = mix64(key + (k + 1) * kGamma).
void random_words(std::uint64_t seed, std::uint64_t global_question, std::uint64_t candidate, std::size_t count,
                  std::uint64_t* out);

// Collection statistics of flat documents (doc i = ids[offsets[i]:offsets[i+1]]) over the ids
// [0, n_terms): cf[t] = occurrences of t (n(t), Eq. 2), df[t] = documents containing t
// (df(t), Eq. 5); cf and df have n_terms entries and are overwritten.  offsets must have
// n_docs + 1 entries from 0, non-decreasing, n_docs < 2**32 - 1 (std::invalid_argument
// otherwise, as for an id outside [0, n_terms)).  Single-threaded (see sampling.cpp).
void collection_stats(const std::int32_t* ids, const std::int64_t* offsets, std::size_t n_docs, std::size_t n_terms,
                      std::int64_t* cf, std::int64_t* df);

// Terms of each candidate in the order they occur in its question (candidate c belongs to
// question c / m): a term's key is its first position in the question, terms absent from it
// follow in their order; out_ids gets the candidates' terms (offsets unchanged). Arguments are
// checked by the caller (offsets from 0, non-decreasing, c_offsets of n_questions * m + 1).
void order_like_questions(const std::int32_t* q_ids, const std::int64_t* q_offsets, std::size_t n_questions,
                          const std::int32_t* c_ids, const std::int64_t* c_offsets, std::size_t m,
                          std::int32_t* out_ids);

// The data: questions, the cluster table, statistics and the exclusion mask.
struct Corpus {
  const std::int32_t* q_ids = nullptr;
  std::size_t n_q_ids = 0;
  const std::int64_t* q_offsets = nullptr;  // n_questions + 1
  std::size_t n_questions = 0;
  const std::int32_t* c_ids = nullptr;
  std::size_t n_c_ids = 0;
  const std::int64_t* c_offsets = nullptr;  // n_clusters + 1
  std::size_t n_clusters = 0;
  const std::int64_t* cluster_index = nullptr;  // n_questions; -1 = no paraphrases (C_q = q)
  const std::int64_t* cf = nullptr;             // vocab_size
  const std::int64_t* df = nullptr;             // vocab_size
  const std::uint8_t* exclude = nullptr;        // vocab_size
  std::size_t vocab_size = 0;
  std::int64_t n_docs = 0;
};

struct Config {
  Strategy strategy = Strategy::Combination;
  double w_question = 1.0, w_cluster = 0.0, w_collection = 0.0;
  const double* length_dist = nullptr;  // P(s), s = 0 .. n_lengths - 1
  std::size_t n_lengths = 0;
  std::int64_t m = 1;
  std::uint64_t seed = 0;
  std::int64_t first_index = 0;
  // or, when set, the global index of each question (n_questions entries, >= 0): the questions
  // of a call need not be consecutive (K2Q draws the later candidates of the few questions
  // its first candidate did not settle)
  const std::int64_t* question_index = nullptr;
  std::int64_t max_rejections = 8;
  int workers = 1;
};

// Validates the inputs (std::invalid_argument, naming the argument and the first bad
// question / row) and precomputes the tables: the integer alias table of the collection
// model, idf, the length distribution's prefix sums, and (when many questions share a
// cluster row) the cluster document models.  The Corpus arrays must outlive the Sampler.
class Sampler {
 public:
  Sampler(const Corpus& corpus, const Config& config);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  std::size_t n_candidates() const;

  // Pass 1: the planned length s of every candidate; writes offsets[0 .. n*m] as the prefix
  // sums of the lengths and returns offsets[n*m].
  std::int64_t plan(std::int64_t* offsets) const;

  // Pass 2: samples the terms into ids (room for the planned total) at the planned offsets;
  // candidates that ran out of terms are compacted away and offsets updated.  Returns the
  // final number of ids (== offsets[n*m]).
  std::int64_t sample(std::int64_t* offsets, std::int32_t* ids) const;

  // Both passes with owned buffers (for C++ callers and tests).
  void generate(std::vector<std::int32_t>& ids, std::vector<std::int64_t>& offsets) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace sampling
}  // namespace pysynth
