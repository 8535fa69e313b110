// N-gram and LCS sufficient statistics for ROUGE and BLEU (sacrebleu's design: integer
// statistics per segment here, the score formulas over summed statistics in Python).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pysynth/corpus.hpp"

namespace pysynth {

// A column of segments: either UTF-8 strings or pre-tokenized ids (flat values + offsets).
struct TextColumn {
  const std::string_view* strs = nullptr;
  const int32_t* ids = nullptr;
  const int64_t* offsets = nullptr;  // size + 1 entries when ids is set
  size_t size = 0;
  bool is_ids() const { return ids != nullptr; }
};

enum class RougeFlavor { RougeScore, Pltrdy };
enum class RougeKind { N, L, Lsum };
struct RougeType {
  RougeKind kind;
  int n;  // n-gram order for RougeKind::N
};
struct RougeConfig {
  RougeFlavor flavor = RougeFlavor::RougeScore;
  std::vector<RougeType> types;
  bool stem = false;
};

// For every reference row j (hyp i = the group j belongs to by ref_offsets) and type t,
// writes 3 integers at out[(j * T + t) * 3]:
//   rouge-score N:    matches (multiset), hyp n-grams, ref n-grams
//   rouge-score L:    LCS length, hyp tokens, ref tokens
//   rouge-score Lsum: union-LCS hits (ROUGE 1.5.5 clamping), hyp tokens, ref tokens
//   pltrdy N:         |set(hyp) & set(ref)|, |set(hyp n-grams)|, |set(ref n-grams)|
//   pltrdy L:         |union of LCS word sets|, |set(hyp words)|, |set(ref words)|
// pltrdy rows whose hyp or ref has no sentence (the tool raises) get -1, -1, -1.
// ref_offsets has hyps.size + 1 entries, starts at 0, ends at refs.size, non-decreasing.
// out may be null when prf is set; prf (rouge-score flavor only), when set, receives
// rouge_score_prf of the statistics (3 x T x refs.size), computed by the worker threads.
void rouge_stats(const TextColumn& hyps, const TextColumn& refs, const int64_t* ref_offsets, const RougeConfig& cfg,
                 int workers, int64_t* out, double* prf = nullptr);

// rouge-score's P/R/F from rouge_stats output (rows x T x 3) into out (3 x T x rows):
// P = m / max(h, 1), R = m / max(r, 1), F = 2PR / (P + R) or 0 (IEEE operations in
// Python's order, so the results are bit-identical to the tool).
void rouge_score_prf(const int64_t* stats, size_t rows, size_t T, double* out);

enum class BleuTokenize { None, T13a };

// Per hypothesis i, writes 2 + 2 * max_order integers at out[i * (2 + 2 * max_order)]:
// hyp length, closest reference length (ties: the shorter), clipped matches per order
// (clipped by the max count over the hypothesis' references), hyp n-grams per order.
void bleu_stats(const TextColumn& hyps, const TextColumn& refs, const int64_t* ref_offsets, BleuTokenize tokenize,
                int max_order, int workers, int64_t* out);

enum class Smooth { None, Floor, AddK, Exp };

// sacrebleu's BLEU.compute_bleu applied to each row of `stats` (n rows as above).
// compensated_sum mirrors Python >= 3.12's sum() of floats (Neumaier summation).
// Rows are independent: `workers` threads split them.
void sacrebleu_sentence_scores(const int64_t* stats, size_t n, int max_order, Smooth smooth, double smooth_value,
                               bool effective_order, bool compensated_sum, double* out, int workers = 1);

// pycocoevalcap BleuScorer's per-segment BLEU-1..max_order (n x max_order outputs).
void coco_sentence_scores(const int64_t* stats, size_t n, int max_order, double* out, int workers = 1);

enum class TokenizerKind { Rouge, RougeStem, T13a, Whitespace };

// Tokens of each text under one of the tokenizers above (for inspection and tests).
std::vector<std::vector<std::string>> tokenize_texts(const std::string_view* texts, size_t n, TokenizerKind kind,
                                                     int workers);

// The same tokens as ids against a per-call vocabulary (corpus::intern_rows): what the binding
// turns into lists of str, one str per distinct token.
corpus::TokenRows tokenize_ids(const std::string_view* texts, size_t n, TokenizerKind kind, int workers,
                               const corpus::RowsDone* on_rows = nullptr);

}  // namespace pysynth
