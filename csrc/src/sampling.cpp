// Keyword query generation (Ding & Balog 2018, Alg. 1): see csrc/include/pysynth/sampling.hpp
// and the specification, the Python twin pysynth/sampling/_reference.py.  Every operation
// that decides an output (integer or floating point) mirrors the twin, in the same order.
//
// Performance notes (1M questions x 20 candidates, 200k-id Zipf vocabulary, clusters of
// 1-30 questions; bench/bench_sampling.py, numbers in bench/RESULTS_sampling.md):
// * two passes: plan() draws every length from word 0 so that sample() knows where each
//   candidate goes; threads write disjoint slots of the output directly (no per-thread
//   buffers, no final copy); candidates that run out of terms (tiny vocabularies only) are
//   compacted afterwards;
// * the collection model is an integer alias table over all ids, 8-byte entries while
//   sum(cf) < 2**32 (1.6 MB for 200k ids, L2-resident): one load per draw instead of ~18
//   dependent loads of a binary search over the prefix sums;
// * document models are prefix sums: question documents (<= 16 terms) padded with +inf and
//   searched by a branch-free SIMD count, longer ones (cluster documents, ~100 terms) through
//   a guide table (expected O(1) steps instead of a 7-step binary search: -15% time);
// * questions sharing cluster rows are processed grouped by row (outputs keep their slots),
//   so each cluster document is built once per run and stays in L1 (-20% time at 1M
//   questions, where per-question builds or prebuilt documents miss to DRAM);
// * a query of <= 8 terms is assembled in a -1-padded 8-slot buffer, so "chosen before?"
//   is one SIMD compare (no data-dependent loop exit); the per-term tables of the next
//   question are prefetched;
// * the random words are SplitMix64 outputs (2 multiplies each), independent of each other.
// * paraphrase model: 8 candidates of a question in flight, their draws grouped by component
//   (sample_lanes): +15-34% candidates per CPU-second; the baseline model draws one at a time.
#include "pysynth/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "pysynth/common.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace pysynth {
namespace sampling {

namespace {

constexpr double kTwoM53 = 1.0 / 9007199254740992.0;  // 2**-53
constexpr double kWeightEps = 1e-9;
constexpr std::uint64_t kLimit62 = std::uint64_t{1} << 62;
constexpr std::size_t kQuestionChunk = 512;

inline double unif(std::uint64_t w) { return static_cast<double>(w >> 11) * kTwoM53; }

inline std::uint64_t below(std::uint64_t w, std::uint64_t n) {
#if defined(__SIZEOF_INT128__)
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(w) * n) >> 64);
#else
  std::uint64_t a_lo = w & 0xFFFFFFFFULL, a_hi = w >> 32, b_lo = n & 0xFFFFFFFFULL, b_hi = n >> 32;
  std::uint64_t p0 = a_lo * b_lo, p1 = a_lo * b_hi, p2 = a_hi * b_lo, p3 = a_hi * b_hi;
  std::uint64_t mid = (p0 >> 32) + (p1 & 0xFFFFFFFFULL) + (p2 & 0xFFFFFFFFULL);
  return p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32);
#endif
}

inline bool contains(const std::int32_t* a, std::size_t n, std::int32_t t) {
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] == t) return true;
  return false;
}

// First component k with x < m0 + .. + mk (left to right); else the last with m > 0.
inline int pick3(double x, double m0, double m1, double m2) {
  if (x < m0) return 0;
  if (x < m0 + m1) return 1;
  if (m2 > 0.0) return 2;
  return m1 > 0.0 ? 1 : 0;
}

std::string num(std::int64_t v) { return std::to_string(v); }

// The smallest index in [0, n) for which check(i) returns a message, and that message.
// Parallel, deterministic (the same index for every thread count).
template <class Check>
void first_failure(std::size_t n, int workers, Check&& check) {
  std::mutex mu;
  std::size_t best = n;
  std::string msg;
  parallel_for(n, workers, 4096, [&](std::size_t, std::size_t b, std::size_t e) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (b > best) return;
    }
    for (std::size_t i = b; i < e; ++i) {
      std::string m = check(i);
      if (!m.empty()) {
        std::lock_guard<std::mutex> lock(mu);
        if (i < best) {
          best = i;
          msg = std::move(m);
        }
        return;
      }
    }
  });
  if (best < n) throw std::invalid_argument(msg);
}

void check_offsets(const std::int64_t* off, std::size_t n_rows, std::size_t total, const char* name) {
  if (off == nullptr) throw std::invalid_argument(std::string(name) + " must have length n + 1 >= 1");
  if (off[0] != 0 || off[n_rows] != static_cast<std::int64_t>(total))
    throw std::invalid_argument(std::string(name) + " must start at 0 and end at " + std::to_string(total) +
                                " (the number of ids), got " + num(off[0]) + " .. " + num(off[n_rows]));
  for (std::size_t i = 0; i < n_rows; ++i)
    if (off[i + 1] < off[i]) throw std::invalid_argument(std::string(name) + " must be non-decreasing");
}

// Blocks of ids checked in parallel (20M ids of questions and cluster rows at 1M questions).
void check_ids(const std::int32_t* ids, std::size_t n, std::size_t vocab, const char* name, int workers) {
  constexpr std::size_t kBlock = 256;  // first_failure hands out 4096 blocks at a time
  first_failure((n + kBlock - 1) / kBlock, workers, [&](std::size_t b) -> std::string {
    for (std::size_t i = b * kBlock; i < std::min(n, (b + 1) * kBlock); ++i)
      if (ids[i] < 0 || static_cast<std::size_t>(ids[i]) >= vocab)
        return std::string(name) + " contains id " + num(ids[i]) + " outside the vocabulary [0, " +
               std::to_string(vocab) + ") of cf";
    return std::string();
  });
}

}  // namespace

Strategy parse_strategy(const std::string& name) {
  if (name == "popular") return Strategy::Popular;
  if (name == "discriminative") return Strategy::Discriminative;
  if (name == "combination") return Strategy::Combination;
  throw std::invalid_argument("strategy must be one of popular, discriminative, combination; got '" + name + "'");
}

void random_words(std::uint64_t seed, std::uint64_t global_question, std::uint64_t candidate, std::size_t count,
                  std::uint64_t* out) {
  std::uint64_t state = candidate_key(question_key(seed_key(seed), global_question), candidate);
  for (std::size_t k = 0; k < count; ++k) {
    state += kGamma;
    out[k] = mix64(state);
  }
}

namespace {

// A document model P(t|d): distinct samplable terms (first-occurrence order) and the
// prefix sums of their weights; cum[n] = +inf is a sentinel for the guided search.
struct DocView {
  const std::int32_t* terms = nullptr;
  const double* cum = nullptr;
  const std::uint32_t* guide = nullptr;  // n > kGuideMin: start index per bucket of [0, total)
  std::uint32_t n = 0;
  std::int32_t last = -1;  // last index with a positive weight
  double total = 0.0;
  double buckets_per_unit = 0.0;  // n / total
};

// Documents longer than this get a guide table (Chen & Asau 1974): bucket k of
// [0, total) stores the answer for its left end, so a draw starts next to the answer
// (expected O(1) steps) instead of 7 dependent loads of a binary search over ~100 terms.
constexpr std::uint32_t kGuideMin = 16;
// Documents of up to kGuideMin terms keep their prefix sums padded with +inf to
// kGuideMin entries: a draw counts the entries <= x over a fixed width (SIMD, no loop exit
// to mispredict; the question documents, ~8 terms, take most draws).
inline std::size_t cum_size(std::size_t n) { return n < kGuideMin ? kGuideMin : n + 1; }

template <int W>
inline std::uint32_t count_le(const double* cum, double x) {
#if defined(__SSE2__)
  const __m128d xv = _mm_set1_pd(x);
  __m128i acc = _mm_setzero_si128();
  for (int i = 0; i < W; i += 2)  // each true lane is all ones = -1
    acc = _mm_sub_epi64(acc, _mm_castpd_si128(_mm_cmple_pd(_mm_loadu_pd(cum + i), xv)));
  return static_cast<std::uint32_t>(_mm_cvtsi128_si64(acc) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(acc, acc)));
#else
  std::uint32_t j = 0;
  for (int i = 0; i < W; ++i) j += cum[i] <= x ? 1u : 0u;
  return j;
#endif
}

// Is t among the 8 entries of a -1-padded query buffer?
inline bool in8(const std::int32_t* a, std::int32_t t) {
#if defined(__SSE2__)
  const __m128i tv = _mm_set1_epi32(t);
  const __m128i eq = _mm_or_si128(_mm_cmpeq_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)), tv),
                                  _mm_cmpeq_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + 4)), tv));
  return _mm_movemask_epi8(eq) != 0;
#else
  int hit = 0;
  for (int i = 0; i < 8; ++i) hit |= a[i] == t;
  return hit != 0;
#endif
}

// guide[k] = first j with cum[j] > k * (total / n), capped at n - 1 (any start index gives
// the exact answer: the search below corrects it in both directions).
inline void build_guide(const double* cum, std::uint32_t n, double total, std::uint32_t* guide) {
  const double step = total / static_cast<double>(n);
  std::uint32_t j = 0;
  for (std::uint32_t k = 0; k < n; ++k) {
    const double y = static_cast<double>(k) * step;
    while (j < n && cum[j] <= y) ++j;
    guide[k] = j < n ? j : n - 1;
  }
}

// A document model built by a worker; keeps the weights for explicit renormalization.
struct Doc {
  std::vector<std::int32_t> terms, counts;
  std::vector<double> w, cum;  // cum: cum_size(n) entries (+inf after the n sums)
  std::vector<std::uint32_t> guide;
  double total = 0.0;
  std::int32_t last = -1;
  DocView view() const {
    const std::uint32_t n = static_cast<std::uint32_t>(terms.size());
    return DocView{terms.data(), cum.data(), n > kGuideMin ? guide.data() : nullptr, n,
                   last,         total,      static_cast<double>(n) / total};
  }
};

// Deduplicates a document's tokens without a vocabulary-sized array (which would evict the
// alias table from L2): linear search for short documents, else a small open-addressing
// table sized to the document (a 150-token cluster row: 512 slots, 4 KiB, in L1).
struct Dedupe {
  std::vector<std::int32_t> keys, vals;
  unsigned shift = 64;
  std::size_t mask = 0;
  void reset(std::size_t n_tokens) {
    std::size_t cap = 32;
    unsigned bits = 5;
    while (cap < 2 * n_tokens) {
      cap <<= 1;
      ++bits;
    }
    keys.assign(cap, -1);
    vals.resize(cap);
    mask = cap - 1;
    shift = 64 - bits;
  }
  // Slot of t (its key is t, or -1 if t is new).
  std::size_t slot(std::int32_t t) const {
    std::size_t h = static_cast<std::size_t>((static_cast<std::uint64_t>(t) * kGamma) >> shift);
    while (keys[h] != -1 && keys[h] != t) h = (h + 1) & mask;
    return h;
  }
};

// The first index j with x < cum[j] (the upper bound of x in the non-decreasing prefix
// sums); past the end (rounding), the last term with a positive weight.
inline std::int32_t draw_doc(const DocView& d, std::uint64_t w) {
  const double x = unif(w) * d.total;
  const double* cum = d.cum;
  std::uint32_t j;
  if (d.guide != nullptr) {  // from the bucket's start
    const double kb = x * d.buckets_per_unit;
    const std::uint32_t k = kb < static_cast<double>(d.n) ? static_cast<std::uint32_t>(kb) : d.n - 1;
    j = d.guide[k];
    while (j > 0 && cum[j - 1] > x) --j;  // only if rounding put the bucket too far
    // the answer is mostly 0-2 steps away: two branch-free steps, then a loop that stops
    // at the sentinel cum[n] = +inf
    j += cum[j] <= x ? 1u : 0u;
    j += cum[j] <= x ? 1u : 0u;
    while (cum[j] <= x) ++j;
  } else {  // short documents (questions): padded to 16 entries; most have <= 8 terms
    j = d.n <= 8 ? count_le<8>(cum, x) : count_le<16>(cum, x);
  }
  if (j >= d.n) j = static_cast<std::uint32_t>(d.last);
  return d.terms[j];
}

inline double remaining(const Doc& d, const std::int32_t* chosen, std::size_t nc) {
  double r = 0.0;
  for (std::size_t j = 0; j < d.terms.size(); ++j)
    if (!contains(chosen, nc, d.terms[j])) r += d.w[j];
  return r;
}

inline std::int32_t draw_doc_explicit(const Doc& d, double rem, const std::int32_t* chosen, std::size_t nc,
                                      std::uint64_t w) {
  const double x = unif(w) * rem;
  double acc = 0.0;
  std::int32_t last = -1;
  for (std::size_t j = 0; j < d.terms.size(); ++j) {
    const std::int32_t t = d.terms[j];
    if (contains(chosen, nc, t) || !(d.w[j] > 0.0)) continue;
    acc += d.w[j];
    last = t;
    if (x < acc) return t;
  }
  return last;
}

// Alias table entries over all V ids: own term = the index.  8 bytes while T < 2**32
// (200k ids: 1.6 MB, fits L2 beside the rest), else 16.
struct AliasNarrow {
  std::uint32_t prob;
  std::int32_t alias;
};
struct AliasWide {
  std::uint64_t prob;
  std::int32_t alias;
  std::int32_t pad;
};

struct Workspace {
  Doc q, c;
  std::int64_t cached_cluster = -2;  // row held in c
  Dedupe dd;
  std::vector<std::int64_t> chosen_pos;
  std::vector<std::pair<std::int64_t, std::int64_t>> shortfalls;  // (candidate, length)
};

}  // namespace

struct Sampler::Impl {
  Corpus c;
  Config cfg;
  std::size_t n_candidates = 0;
  std::vector<double> len_cum;
  std::vector<double> idf;
  std::vector<AliasNarrow> alias_narrow;
  std::vector<AliasWide> alias_wide;
  std::vector<std::int32_t> b_terms;  // ids with cfB > 0, ascending
  std::vector<std::int64_t> b_cum;    // prefix sums of cfB over b_terms
  std::uint64_t T = 0;
  // processing order: questions grouped by cluster row (outputs go to fixed slots, so
  // the order changes nothing but locality: a cluster document is built once per run)
  struct QRef {
    std::int64_t question, token_begin, cluster;
    std::int32_t n_tokens, pad;
  };
  std::vector<QRef> order;  // empty: input order

  Impl(const Corpus& corpus, const Config& config) : c(corpus), cfg(config) {
    validate();
    build_tables();
    build_order();
  }

  void validate();
  void build_tables();
  void build_order();
  std::int64_t draw_length(std::uint64_t w0, std::int64_t len) const;
  void prefetch_question(const QRef& q) const;
  void build_doc(const std::int32_t* tok, std::size_t len, Doc& d, Dedupe& dd) const;
  const Doc& full_cluster(Workspace& ws, std::int64_t row) const;
  std::int32_t draw_collection_explicit(std::uint64_t rem, const std::int32_t* chosen, std::size_t nc, std::uint64_t w,
                                        Workspace& ws) const;
  std::int32_t explicit_term(std::int64_t crow, const std::int32_t* ch, std::size_t nc, std::uint64_t& state,
                             Workspace& ws) const;
  template <class E>
  std::size_t sample_candidate(const E* alias, std::uint64_t key, std::int64_t s, const DocView& dq, const DocView& dc,
                               std::int64_t crow, std::int32_t* out, Workspace& ws) const;
  template <class E>
  void sample_lanes(const E* alias, std::uint64_t qk, std::size_t k0, const DocView& dq, const DocView& dc,
                    std::int64_t crow, const std::int64_t* offsets, std::int32_t* ids, Workspace& ws) const;
  template <class E>
  void sample_range(const E* alias, std::size_t b, std::size_t e, std::int64_t* offsets, std::int32_t* ids,
                    Workspace& ws) const;
  std::int64_t plan(std::int64_t* offsets) const;
  std::int64_t sample(std::int64_t* offsets, std::int32_t* ids) const;
  // the index that keys question i's random stream
  std::uint64_t global_index(std::size_t i) const {
    return static_cast<std::uint64_t>(cfg.question_index ? cfg.question_index[i] : cfg.first_index + std::int64_t(i));
  }
};

void Sampler::Impl::validate() {
  if (cfg.m < 1) throw std::invalid_argument("m must be an integer >= 1, got " + num(cfg.m));
  if (cfg.first_index < 0)
    throw std::invalid_argument("first_index must be an integer >= 0, got " + num(cfg.first_index));
  if (cfg.question_index)
    for (std::size_t i = 0; i < c.n_questions; ++i)
      if (cfg.question_index[i] < 0)
        throw std::invalid_argument("first_index[" + std::to_string(i) + "] must be >= 0, got " +
                                    num(cfg.question_index[i]));
  if (cfg.max_rejections < 0)
    throw std::invalid_argument("max_rejections must be an integer >= 0, got " + num(cfg.max_rejections));
  resolve_workers(cfg.workers);
  const char* wn[3] = {"w_question", "w_cluster", "w_collection"};
  const double wv[3] = {cfg.w_question, cfg.w_cluster, cfg.w_collection};
  for (int i = 0; i < 3; ++i) {
    if (!(std::isfinite(wv[i]) && wv[i] >= 0.0 && wv[i] <= 1.0))
      throw std::invalid_argument(std::string(wn[i]) + " must be in [0, 1], got " + std::to_string(wv[i]));
  }
  if (std::fabs(wv[0] + wv[1] + wv[2] - 1.0) > kWeightEps)
    throw std::invalid_argument("w_question + w_cluster + w_collection must be 1, got " +
                                std::to_string(wv[0] + wv[1] + wv[2]));
  if (c.n_docs < 0) throw std::invalid_argument("n_docs must be an integer >= 0, got " + num(c.n_docs));
  const std::size_t V = c.vocab_size;
  check_offsets(c.q_offsets, c.n_questions, c.n_q_ids, "q_offsets");
  check_offsets(c.c_offsets, c.n_clusters, c.n_c_ids, "c_offsets");
  for (std::size_t i = 0; i < c.n_questions; ++i) {
    std::int64_t j = c.cluster_index[i];
    if (j < -1 || j >= static_cast<std::int64_t>(c.n_clusters))
      throw std::invalid_argument("cluster_index must be -1 or a row of the cluster table [0, " +
                                  std::to_string(c.n_clusters) + ")");
  }
  check_ids(c.q_ids, c.n_q_ids, V, "q_ids", cfg.workers);
  check_ids(c.c_ids, c.n_c_ids, V, "c_ids", cfg.workers);
  for (std::size_t t = 0; t < V; ++t)
    if (c.cf[t] < 0 || c.df[t] < 0) throw std::invalid_argument("cf and df must be non-negative");
  for (std::size_t t = 0; t < V; ++t)
    if (c.df[t] > c.n_docs)
      throw std::invalid_argument("df must be <= n_docs (" + num(c.n_docs) + "); got df = " + num(c.df[t]));
  if (cfg.length_dist == nullptr || cfg.n_lengths < 2)
    throw std::invalid_argument("length_dist must be finite, non-negative, of length S + 1 >= 2");
  double psum = 0.0;
  for (std::size_t s = 0; s < cfg.n_lengths; ++s) {
    double p = cfg.length_dist[s];
    if (!std::isfinite(p) || p < 0.0)
      throw std::invalid_argument("length_dist must be finite, non-negative, of length S + 1 >= 2");
    psum += p;
  }
  if (cfg.length_dist[0] != 0.0)
    throw std::invalid_argument("length_dist[0] = P(s = 0) must be 0, got " + std::to_string(cfg.length_dist[0]));
  if (!(psum > 0.0)) throw std::invalid_argument("length_dist must have a positive entry for some s >= 1");
  const std::uint64_t n = c.n_questions, m = static_cast<std::uint64_t>(cfg.m);
  if (n != 0 && m > kLimit62 / n) throw std::invalid_argument("n * m candidates is too many");
  n_candidates = static_cast<std::size_t>(n * m);

  // collection model: T = sum of cfB, T * V < 2**62 (exact integer alias table)
  std::uint64_t total = 0;
  for (std::size_t t = 0; t < V; ++t) {
    if (c.exclude[t] || c.cf[t] == 0) continue;
    std::uint64_t x = static_cast<std::uint64_t>(c.cf[t]);
    if (x >= kLimit62 || total >= kLimit62 - x)
      throw std::invalid_argument("sum(cf) * (vocabulary size) must be < 2**62");
    total += x;
  }
  if (cfg.w_collection > 0.0 && total == 0)
    throw std::invalid_argument(
        "the collection model (Eq. 2) is empty: cf is 0 for every non-excluded term, but "
        "w_collection > 0");
  if (V > 1 && total > (kLimit62 - 1) / V) throw std::invalid_argument("sum(cf) * (vocabulary size) must be < 2**62");
  T = total;

  // questions, then the cluster rows in use
  const Strategy st = cfg.strategy;
  auto doc_terms = [&](const std::int32_t* tok, std::size_t len, const std::string& where) -> std::string {
    for (std::size_t i = 0; i < len; ++i) {
      std::int32_t t = tok[i];
      if (c.exclude[t]) continue;
      if (st == Strategy::Discriminative && c.cf[t] == 0)
        return where + " has term " + num(t) +
               " with cf 0: the discriminative strategy (Eq. 4) needs cf > 0 for every sampled "
               "term; compute stats over all questions and paraphrases";
      if (st == Strategy::Combination && c.df[t] == 0)
        return where + " has term " + num(t) +
               " with df 0: the combination strategy (Eq. 5) needs df > 0 for every sampled "
               "term; compute stats over all questions and paraphrases";
    }
    return std::string();
  };
  first_failure(c.n_questions, cfg.workers, [&](std::size_t i) -> std::string {
    const std::int32_t* tok = c.q_ids + c.q_offsets[i];
    std::size_t len = static_cast<std::size_t>(c.q_offsets[i + 1] - c.q_offsets[i]);
    if (len == 0) return "question " + std::to_string(i) + " is empty";
    bool any = false;
    for (std::size_t k = 0; k < len && !any; ++k) any = c.exclude[tok[k]] == 0;
    if (!any)
      return "question " + std::to_string(i) +
             " has only excluded terms (question words or terms in exclude); drop it "
             "(KeywordModel.samplable marks the others) or change the exclusion mask";
    if (st == Strategy::Popular) return std::string();
    return doc_terms(tok, len, "question " + std::to_string(i));
  });
  if (cfg.w_cluster > 0.0 && st != Strategy::Popular) {
    std::vector<std::uint8_t> used(c.n_clusters, 0);
    for (std::size_t i = 0; i < c.n_questions; ++i)
      if (c.cluster_index[i] >= 0) used[static_cast<std::size_t>(c.cluster_index[i])] = 1;
    first_failure(c.n_clusters, cfg.workers, [&](std::size_t j) -> std::string {
      if (!used[j]) return std::string();
      return doc_terms(c.c_ids + c.c_offsets[j], static_cast<std::size_t>(c.c_offsets[j + 1] - c.c_offsets[j]),
                       "cluster row " + std::to_string(j));
    });
  }
}

void Sampler::Impl::build_tables() {
  const std::size_t V = c.vocab_size;
  // P(s) prefix sums, left to right (len_cum[0] = P(0) = 0).
  len_cum.resize(cfg.n_lengths);
  len_cum[0] = cfg.length_dist[0];
  for (std::size_t s = 1; s < cfg.n_lengths; ++s) len_cum[s] = len_cum[s - 1] + cfg.length_dist[s];

  if (cfg.strategy == Strategy::Combination) {
    idf.resize(V);
    const double N = static_cast<double>(c.n_docs);
    parallel_for(V, cfg.workers, 1 << 14, [&](std::size_t, std::size_t b, std::size_t e) {
      for (std::size_t t = b; t < e; ++t)
        idf[t] = c.df[t] > 0 ? std::log(N / static_cast<double>(c.df[t])) : std::numeric_limits<double>::infinity();
    });
  }

  if (cfg.w_collection > 0.0) {
    // Integer alias table over all V ids (Vose's construction with exact integers; see the
    // twin's _alias_table): scaled weights a[j] = cfB[j] * V, bucket capacity T.
    std::vector<std::uint64_t> a(V), prob(V, 0);
    std::vector<std::int32_t> alias(V);
    std::vector<std::int32_t> small, large;
    std::int64_t acc = 0;
    for (std::size_t j = 0; j < V; ++j) {
      const std::uint64_t cfb = c.exclude[j] ? 0 : static_cast<std::uint64_t>(c.cf[j]);
      a[j] = cfb * V;
      alias[j] = static_cast<std::int32_t>(j);
      (a[j] < T ? small : large).push_back(static_cast<std::int32_t>(j));
      if (cfb > 0) {
        acc += static_cast<std::int64_t>(cfb);
        b_terms.push_back(static_cast<std::int32_t>(j));
        b_cum.push_back(acc);
      }
    }
    while (!small.empty() && !large.empty()) {
      const std::int32_t l = small.back();
      small.pop_back();
      const std::int32_t g = large.back();
      large.pop_back();
      prob[l] = a[l];
      alias[l] = g;
      a[g] = a[g] - (T - a[l]);
      (a[g] < T ? small : large).push_back(g);
    }
    for (std::int32_t j : large) prob[j] = T;
    for (std::int32_t j : small) prob[j] = T;
    if (T < (std::uint64_t{1} << 32)) {
      alias_narrow.resize(V);
      for (std::size_t j = 0; j < V; ++j) alias_narrow[j] = AliasNarrow{static_cast<std::uint32_t>(prob[j]), alias[j]};
    } else {
      alias_wide.resize(V);
      for (std::size_t j = 0; j < V; ++j) alias_wide[j] = AliasWide{prob[j], alias[j], 0};
    }
  }
}

void Sampler::Impl::build_order() {
  // Counting sort of the questions by cluster row (questions without one first), stable.
  // Questions arrive in any order (shuffled in the benchmark: 1M questions in 67k rows of
  // ~150 tokens); in row order each cluster document is built once per run of its
  // questions and stays in L1 while they sample, instead of one DRAM-bound build (or one
  // 1.6 KB prebuilt document fetched from DRAM) per question: about -20% time at 1M.
  // Only when rows are shared (>= 2 questions per row in use); the per-question fields are
  // copied into the order so that the loop reads one sequential stream.
  if (!(cfg.w_cluster > 0.0) || c.n_clusters == 0 || c.n_questions == 0) return;
  const std::size_t n = c.n_questions, nc = c.n_clusters;
  std::vector<std::int64_t> start(nc + 2, 0);
  std::size_t users = 0, rows = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t slot = static_cast<std::size_t>(c.cluster_index[i] + 2);
    if (slot >= 2) {
      ++users;
      rows += start[slot] == 0;
    }
    ++start[slot];
  }
  if (users < 2 * rows) return;
  for (std::size_t k = 1; k < nc + 2; ++k) start[k] += start[k - 1];
  order.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t j = c.cluster_index[i];
    order[static_cast<std::size_t>(start[static_cast<std::size_t>(j + 1)]++)] =
        QRef{static_cast<std::int64_t>(i), c.q_offsets[i], j,
             static_cast<std::int32_t>(c.q_offsets[i + 1] - c.q_offsets[i]), 0};
  }
}

std::int64_t Sampler::Impl::draw_length(std::uint64_t w0, std::int64_t len) const {
  const std::int64_t S = static_cast<std::int64_t>(cfg.n_lengths) - 1;
  const std::int64_t sq = std::min(len - 1, S);
  const double total = sq >= 1 ? len_cum[static_cast<std::size_t>(sq)] : 0.0;
  if (!(total > 0.0)) return std::max<std::int64_t>(1, len - 1);
  const double x = unif(w0) * total;
  // smallest s in [1, sq] with x < cum[s] = 1 + #{s' in [1, sq] : cum[s'] <= x} (cum is
  // non-decreasing); counted without branches: a random length would mispredict a loop exit
  std::int64_t count = 0;
  for (std::int64_t s = 1; s <= sq; ++s) count += len_cum[static_cast<std::size_t>(s)] <= x;
  if (count < sq) return count + 1;
  for (std::int64_t s = sq; s >= 1; --s)
    if (cfg.length_dist[s] > 0.0) return s;
  return 1;  // unreachable: total > 0
}

void Sampler::Impl::build_doc(const std::int32_t* tok, std::size_t len, Doc& d, Dedupe& dd) const {
  // sized up front and written by index: push_back's capacity checks cost ~20% of a build
  if (d.terms.size() < len) {
    d.terms.resize(len);
    d.counts.resize(len);
  }
  std::int32_t* terms = d.terms.data();
  std::int32_t* counts = d.counts.data();
  std::size_t n = 0;
  const std::uint8_t* ex = c.exclude;
  if (len <= 16) {
    for (std::size_t i = 0; i < len; ++i) {
      const std::int32_t t = tok[i];
      if (ex[t]) continue;
      std::size_t j = 0;
      while (j < n && terms[j] != t) ++j;
      if (j == n) {
        terms[n] = t;
        counts[n++] = 1;
      } else {
        ++counts[j];
      }
    }
  } else {
    dd.reset(len);
    for (std::size_t i = 0; i < len; ++i) {
      const std::int32_t t = tok[i];
      if (ex[t]) continue;
      const std::size_t h = dd.slot(t);
      if (dd.keys[h] == -1) {
        dd.keys[h] = t;
        dd.vals[h] = static_cast<std::int32_t>(n);
        terms[n] = t;
        counts[n++] = 1;
      } else {
        ++counts[static_cast<std::size_t>(dd.vals[h])];
      }
    }
  }
  d.terms.resize(n);
  d.counts.resize(n);
  d.w.resize(n);
  d.cum.resize(cum_size(n));
  switch (cfg.strategy) {
    case Strategy::Popular:
      for (std::size_t j = 0; j < n; ++j) d.w[j] = static_cast<double>(d.counts[j]);
      break;
    case Strategy::Discriminative:
      for (std::size_t j = 0; j < n; ++j) d.w[j] = 1.0 / static_cast<double>(c.cf[d.terms[j]]);
      break;
    case Strategy::Combination: {
      bool all_zero = true;
      for (std::size_t j = 0; j < n; ++j) {
        d.w[j] = static_cast<double>(d.counts[j]) * idf[static_cast<std::size_t>(d.terms[j])];
        all_zero = all_zero && d.w[j] == 0.0;
      }
      if (all_zero)  // every term in all N questions: fall back to Eq. 3
        for (std::size_t j = 0; j < n; ++j) d.w[j] = static_cast<double>(d.counts[j]);
      break;
    }
  }
  d.last = -1;
  for (std::size_t j = 0; j < n; ++j) {
    d.cum[j] = j == 0 ? d.w[0] : d.cum[j - 1] + d.w[j];
    if (d.w[j] > 0.0) d.last = static_cast<std::int32_t>(j);
  }
  d.total = n ? d.cum[n - 1] : 0.0;
  std::fill(d.cum.begin() + static_cast<std::ptrdiff_t>(n), d.cum.end(), std::numeric_limits<double>::infinity());
  if (n > kGuideMin) {
    d.guide.resize(n);
    build_guide(d.cum.data(), static_cast<std::uint32_t>(n), d.total, d.guide.data());
  }
}

const Doc& Sampler::Impl::full_cluster(Workspace& ws, std::int64_t row) const {
  if (ws.cached_cluster != row) {
    build_doc(c.c_ids + c.c_offsets[row], static_cast<std::size_t>(c.c_offsets[row + 1] - c.c_offsets[row]), ws.c,
              ws.dd);
    ws.cached_cluster = row;
  }
  return ws.c;
}

// The first id (ascending, chosen ones skipped) whose running sum of cfB exceeds r =
// below(w, remaining): binary searches over the full prefix sums, shifting the target
// past each chosen term at or before the current answer.
std::int32_t Sampler::Impl::draw_collection_explicit(std::uint64_t rem, const std::int32_t* chosen, std::size_t nc,
                                                     std::uint64_t w, Workspace& ws) const {
  std::int64_t target = static_cast<std::int64_t>(below(w, rem));
  auto& pos = ws.chosen_pos;
  pos.clear();
  for (std::size_t i = 0; i < nc; ++i) {
    auto it = std::lower_bound(b_terms.begin(), b_terms.end(), chosen[i]);
    if (it != b_terms.end() && *it == chosen[i]) pos.push_back(it - b_terms.begin());
  }
  std::sort(pos.begin(), pos.end());
  const std::int64_t* cum = b_cum.data();
  const std::size_t nb = b_cum.size();
  std::size_t k = 0, j = 0;
  for (;;) {
    j = static_cast<std::size_t>(std::upper_bound(cum, cum + nb, target) - cum);
    if (k < pos.size() && static_cast<std::size_t>(pos[k]) <= j) {
      target += c.cf[b_terms[static_cast<std::size_t>(pos[k])]];
      ++k;
      continue;
    }
    break;
  }
  if (j >= nb) throw Error("sampling: collection draw out of range (internal error)");
  return b_terms[j];
}

// Alg. 1 after max_rejections rejected draws: one draw from the mixture renormalized over
// the terms not chosen yet (ch[0 .. nc)), from the candidate's stream state; -1 when no term
// with a non-zero probability is left.
std::int32_t Sampler::Impl::explicit_term(std::int64_t crow, const std::int32_t* ch, std::size_t nc,
                                          std::uint64_t& state, Workspace& ws) const {
  auto next = [&state]() {
    state += kGamma;
    return mix64(state);
  };
  const double wq = cfg.w_question, wc = cfg.w_cluster, wb = cfg.w_collection;
  const Doc& fq = ws.q;
  const Doc& fc = crow < 0 ? ws.q : full_cluster(ws, crow);
  const double rq = remaining(fq, ch, nc);
  const double rc = remaining(fc, ch, nc);
  const double mq = wq * (rq / fq.total);
  const double mc = wc * (rc / fc.total);
  std::uint64_t rb = 0;
  double mb = 0.0;
  if (wb > 0.0) {
    std::uint64_t sub = 0;
    for (std::size_t i = 0; i < nc; ++i)
      if (!c.exclude[ch[i]]) sub += static_cast<std::uint64_t>(c.cf[ch[i]]);
    rb = T - sub;
    mb = wb * (static_cast<double>(rb) / static_cast<double>(T));
  }
  const double tot = mq + mc + mb;
  if (!(tot > 0.0)) return -1;
  const double x = unif(next()) * tot;
  const int k = pick3(x, mq, mc, mb);
  std::int32_t t;
  if (k == 0) {
    t = draw_doc_explicit(fq, rq, ch, nc, next());
  } else if (k == 1) {
    t = draw_doc_explicit(fc, rc, ch, nc, next());
  } else {
    t = draw_collection_explicit(rb, ch, nc, next(), ws);
  }
  if (t < 0) throw Error("sampling: explicit draw found no term (internal error)");
  return t;
}

template <class E>
std::size_t Sampler::Impl::sample_candidate(const E* alias, std::uint64_t key, std::int64_t s, const DocView& dq,
                                            const DocView& dc, std::int64_t crow, std::int32_t* out,
                                            Workspace& ws) const {
  std::uint64_t state = key + kGamma;  // word 0 (the length) was drawn by plan()
  auto next = [&state]() {
    state += kGamma;
    return mix64(state);
  };
  const double wq = cfg.w_question, wc = cfg.w_cluster, wb = cfg.w_collection;
  const double wqc = wq + wc;
  const bool has_b = wb > 0.0;
  const std::int64_t R = cfg.max_rejections;
  const std::uint64_t V = c.vocab_size;
  const DocView* docs[2] = {&dq, &dc};
  // Queries of up to 8 terms are built in a local -1-padded array, so that the "chosen
  // before?" test is 8 compares without a data-dependent loop exit.
  alignas(32) std::int32_t local[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  const bool small = s <= 8;
  std::int32_t* ch = small ? local : out;
  auto chosen = [&](std::int32_t t, std::size_t nc) { return small ? in8(local, t) : contains(out, nc, t); };
  std::size_t nc = 0;
  while (static_cast<std::int64_t>(nc) < s) {
    std::int32_t t = -1;
    for (std::int64_t a = 0; a < R; ++a) {
      const double u = unif(next());
      const std::uint64_t w1 = next();
      std::int32_t cand;
      // pick3(u, wq, wc, wb): the question if u < wq, else the cluster if u < wq + wc or the
      // collection has no weight (dc == dq when w_cluster == 0), else the collection
      if (u < wqc || !has_b) {
        cand = draw_doc(*docs[u >= wq ? 1 : 0], w1);
      } else {
        const std::uint64_t w2 = next();
        const std::uint64_t j = below(w1, V);
        const E& e = alias[j];
        cand = below(w2, T) < e.prob ? static_cast<std::int32_t>(j) : e.alias;
      }
      if (!chosen(cand, nc)) {
        t = cand;
        break;
      }
    }
    if (t < 0) {  // explicit renormalization over the terms not chosen yet
      t = explicit_term(crow, ch, nc, state, ws);
      if (t < 0) break;  // no term with non-zero probability is left
    }
    ch[nc] = t;
    out[nc++] = t;  // (a copy loop at the end becomes a memmove call: 7% of the time)
  }
  return nc;
}

// Several candidates of one question in flight per thread, one draw attempt each per round.
// One candidate at a time waits on its own dependent chain (random words, a document search
// or the collection's alias entry, an L2/L3 miss, then the accept/reject test); lanes overlap
// these chains.  Each candidate keeps its own stream and uses the same words in the same
// order as sample_candidate, so the output is the same.  An attempt's words need no loads,
// so a lane looks one attempt ahead and prefetches the alias entry when that attempt draws
// from the collection; acceptance is a select, so no branch waits on the loaded term.
// Candidates of more than 8 terms go through sample_candidate.
constexpr int kLanes = 8;

template <class E>
void Sampler::Impl::sample_lanes(const E* alias, std::uint64_t qk, std::size_t k0, const DocView& dq, const DocView& dc,
                                 std::int64_t crow, const std::int64_t* offsets, std::int32_t* ids,
                                 Workspace& ws) const {
  const std::size_t m = static_cast<std::size_t>(cfg.m);
  const double wq = cfg.w_question, wqc = wq + cfg.w_cluster;
  const bool has_b = cfg.w_collection > 0.0;
  const std::int64_t R = cfg.max_rejections;
  const std::uint64_t V = c.vocab_size;
  struct Lane {
    alignas(16) std::int32_t local[8];  // the terms chosen so far, -1-padded (see in8)
    std::uint64_t state;                // the last word used: the next one is mix64(state + kGamma)
    std::uint64_t w1;                   // the next attempt's second word
    double u;                           // the next attempt's component variate
    std::uint64_t j;                    // the next attempt's alias slot, if it draws from the collection
    bool coll;
    std::int32_t* out;
    std::int64_t s, nc, a;
    std::size_t k;
  };
  Lane lanes[kLanes];
  auto peek = [&](Lane& L) {
    L.u = unif(mix64(L.state + kGamma));
    L.w1 = mix64(L.state + 2 * kGamma);
    L.coll = has_b && !(L.u < wqc);
    L.j = L.coll ? below(L.w1, V) : 0;
    __builtin_prefetch(alias + L.j);
  };
  std::size_t next = 0;  // the next candidate of the question to start
  // Starts the next candidate of <= 8 terms in L (longer ones are sampled whole here);
  // false when none is left.
  auto start = [&](Lane& L) {
    while (next < m) {
      const std::size_t k = k0 + next;
      const std::uint64_t key = candidate_key(qk, next++);
      const std::int64_t s = offsets[k + 1] - offsets[k];
      if (s > 8) {
        const std::size_t got = sample_candidate(alias, key, s, dq, dc, crow, ids + offsets[k], ws);
        if (static_cast<std::int64_t>(got) < s)
          ws.shortfalls.emplace_back(static_cast<std::int64_t>(k), static_cast<std::int64_t>(got));
        continue;
      }
      if (s <= 0) continue;
      std::fill(L.local, L.local + 8, -1);
      L.state = key + kGamma;  // word 0 (the length) was drawn by plan()
      L.out = ids + offsets[k];
      L.s = s;
      L.nc = L.a = 0;
      L.k = k;
      peek(L);
      return true;
    }
    return false;
  };
  int n = 0;
  while (n < kLanes && start(lanes[n])) ++n;
  std::int32_t cand[kLanes];
  int by_q[kLanes], by_c[kLanes], by_b[kLanes];
  while (n > 0) {
    // One term per lane, the lanes grouped by component: the branches then follow the
    // group sizes, not each lane's random component (a question or a cluster document has
    // its own search, a collection draw its alias entry).
    int nq = 0, ncl = 0, nb = 0;
    for (int l = 0; l < n; ++l) {
      const bool coll = lanes[l].coll, clus = !coll && lanes[l].u >= wq;
      by_q[nq] = by_c[ncl] = by_b[nb] = l;
      nq += !coll && !clus;
      ncl += clus;
      nb += coll;
    }
    for (int i = 0; i < nq; ++i) cand[by_q[i]] = draw_doc(dq, lanes[by_q[i]].w1);
    for (int i = 0; i < ncl; ++i) cand[by_c[i]] = draw_doc(dc, lanes[by_c[i]].w1);
    for (int i = 0; i < nb; ++i) {
      const Lane& L = lanes[by_b[i]];
      const E& e = alias[L.j];
      cand[by_b[i]] = below(mix64(L.state + 3 * kGamma), T) < e.prob ? static_cast<std::int32_t>(L.j) : e.alias;
    }
    for (int l = 0; l < n; ++l) {
      Lane& L = lanes[l];
      const std::int32_t t = cand[l];
      L.state += L.coll ? 3 * kGamma : 2 * kGamma;
      const bool ok = !in8(L.local, t);
      L.out[L.nc] = t;  // kept once accepted, overwritten otherwise
      L.local[L.nc] = ok ? t : -1;
      L.nc += ok;
      L.a = ok ? 0 : L.a + 1;
      bool done = L.nc == L.s;
      if (L.a == R) {  // explicit renormalization (rare)
        const std::int32_t x = explicit_term(crow, L.local, static_cast<std::size_t>(L.nc), L.state, ws);
        if (x < 0) {
          ws.shortfalls.emplace_back(static_cast<std::int64_t>(L.k), L.nc);
          done = true;
        } else {
          L.out[L.nc] = x;
          L.local[L.nc++] = x;
          L.a = 0;
          done = L.nc == L.s;
        }
      }
      if (!done) {
        peek(L);
      } else if (!start(L)) {  // no candidate left for this lane: the last lane moves here
        L = lanes[--n];
        cand[l] = cand[n];
        --l;
      }
    }
  }
}

// Prefetch what question i's document models will read: its tokens' exclusion flags and
// weights, and the start of its cluster row.  Issued one question ahead, it hides the L2/L3
// misses of the per-term tables (the terms of consecutive questions are unrelated).
void Sampler::Impl::prefetch_question(const QRef& q) const {
  const std::int64_t b = q.token_begin, e = q.token_begin + q.n_tokens;
  const double* wt = cfg.strategy == Strategy::Combination ? idf.data() : nullptr;
  for (std::int64_t k = b; k < e; ++k) {
    const std::int32_t t = c.q_ids[k];
    __builtin_prefetch(c.exclude + t);
    if (wt)
      __builtin_prefetch(wt + t);
    else if (cfg.strategy == Strategy::Discriminative)
      __builtin_prefetch(c.cf + t);
  }
  const std::int64_t j = q.cluster;
  if (j < 0) return;
  const char* tp = reinterpret_cast<const char*>(c.c_ids + c.c_offsets[j]);
  const std::int64_t bytes = (c.c_offsets[j + 1] - c.c_offsets[j]) * 4;
  for (std::int64_t off = 0; off < bytes && off < 1024; off += 64) __builtin_prefetch(tp + off);
}

template <class E>
void Sampler::Impl::sample_range(const E* alias, std::size_t b, std::size_t e, std::int64_t* offsets, std::int32_t* ids,
                                 Workspace& ws) const {
  const std::size_t m = static_cast<std::size_t>(cfg.m);
  const std::uint64_t skey = seed_key(cfg.seed);
  const bool use_cluster = cfg.w_cluster > 0.0;
  const QRef* ord = order.empty() ? nullptr : order.data();
  auto ref_at = [&](std::size_t p) {
    if (ord) return ord[p];
    return QRef{static_cast<std::int64_t>(p), c.q_offsets[p], use_cluster ? c.cluster_index[p] : -1,
                static_cast<std::int32_t>(c.q_offsets[p + 1] - c.q_offsets[p]), 0};
  };
  // prefetch pipeline (grouped order: the questions are scattered): tokens and output
  // offsets two questions ahead, the per-term tables one ahead
  // offsets two questions ahead (all m + 1 of them), then the output lines they point to one
  // question ahead, for writing: in grouped order both are scattered, and their misses were
  // the loads that stalled most (perf: 5% of the samples on the offsets load alone)
  auto prefetch_far = [&](std::size_t p) {
    if (!ord || p >= e) return;
    __builtin_prefetch(c.q_ids + ord[p].token_begin);
    const char* o = reinterpret_cast<const char*>(offsets + static_cast<std::size_t>(ord[p].question) * m);
    for (std::size_t k = 0; k <= m * sizeof(std::int64_t) && k < 1024; k += 64) __builtin_prefetch(o + k);
  };
  auto prefetch_out = [&](std::size_t p) {
    if (!ord || p >= e) return;
    const std::size_t k = static_cast<std::size_t>(ord[p].question) * m;
    const char* a = reinterpret_cast<const char*>(ids + offsets[k]);
    const char* z = reinterpret_cast<const char*>(ids + offsets[k + m]);
    for (int n = 0; a < z && n < 16; a += 64, ++n) __builtin_prefetch(a, 1);
  };
  prefetch_far(b);
  prefetch_far(b + 1);
  if (b < e) prefetch_question(ref_at(b));
  for (std::size_t p = b; p < e; ++p) {
    const QRef q = ref_at(p);
    const std::size_t i = static_cast<std::size_t>(q.question);
    prefetch_far(p + 2);
    prefetch_out(p + 1);
    if (p + 1 < e) prefetch_question(ref_at(p + 1));
    build_doc(c.q_ids + q.token_begin, static_cast<std::size_t>(q.n_tokens), ws.q, ws.dd);
    const DocView dq = ws.q.view();
    DocView dc = dq;
    std::int64_t crow = -1;
    if (use_cluster) {
      const std::int64_t j = q.cluster;
      if (j >= 0) {
        const Doc& d = full_cluster(ws, j);  // rebuilt only when the row changes
        if (!d.terms.empty()) {
          dc = d.view();
          crow = j;
        }
      }
    }
    const std::uint64_t qk = question_key(skey, global_index(i));
    // lanes pay off when draws alternate between the question and the cluster document
    // (paraphrase model: +15-34% per CPU-second); the baseline model, whose draws nearly
    // all search the question document, ran 7-18% slower with them (RESULTS_sampling.md)
    if (use_cluster && cfg.max_rejections > 0) {
      sample_lanes(alias, qk, i * m, dq, dc, crow, offsets, ids, ws);
      continue;
    }
    for (std::size_t cand = 0; cand < m; ++cand) {
      const std::size_t k = i * m + cand;
      const std::int64_t start = offsets[k], s = offsets[k + 1] - start;
      const std::size_t got = sample_candidate(alias, candidate_key(qk, cand), s, dq, dc, crow, ids + start, ws);
      if (static_cast<std::int64_t>(got) < s)
        ws.shortfalls.emplace_back(static_cast<std::int64_t>(k), static_cast<std::int64_t>(got));
    }
  }
}

std::int64_t Sampler::Impl::plan(std::int64_t* offsets) const {
  const std::size_t n = c.n_questions, m = static_cast<std::size_t>(cfg.m);
  offsets[0] = 0;
  if (n == 0) return 0;
  const std::uint64_t skey = seed_key(cfg.seed);
  const std::size_t n_chunks = (n + kQuestionChunk - 1) / kQuestionChunk;
  std::vector<std::int64_t> chunk_total(n_chunks, 0);
  // offsets[k + 1] = prefix sum of the lengths within the chunk (one call = one chunk, or
  // the whole range when parallel_for runs single-threaded)
  parallel_for(n, cfg.workers, kQuestionChunk, [&](std::size_t, std::size_t b, std::size_t e) {
    std::int64_t acc = 0;
    for (std::size_t i = b; i < e; ++i) {
      const std::int64_t len = c.q_offsets[i + 1] - c.q_offsets[i];
      const std::uint64_t qk = question_key(skey, global_index(i));
      for (std::size_t cand = 0; cand < m; ++cand) {
        acc += draw_length(mix64(candidate_key(qk, cand) + kGamma), len);
        offsets[i * m + cand + 1] = acc;
      }
    }
    chunk_total[b / kQuestionChunk] = acc;
  });
  std::vector<std::int64_t> base(n_chunks, 0);
  for (std::size_t k = 1; k < n_chunks; ++k) base[k] = base[k - 1] + chunk_total[k - 1];
  parallel_for(n, cfg.workers, kQuestionChunk, [&](std::size_t, std::size_t b, std::size_t e) {
    const std::int64_t add = base[b / kQuestionChunk];
    if (add == 0) return;
    for (std::size_t k = b * m; k < e * m; ++k) offsets[k + 1] += add;
  });
  return offsets[n * m];
}

std::int64_t Sampler::Impl::sample(std::int64_t* offsets, std::int32_t* ids) const {
  const std::size_t n = c.n_questions, m = static_cast<std::size_t>(cfg.m);
  if (n == 0) return 0;
  // parallel_for runs at most one thread per chunk: workers=10**9 must not allocate 10**9 slots
  const std::size_t n_ws =
      std::min(static_cast<std::size_t>(resolve_workers(cfg.workers)), (n + kQuestionChunk - 1) / kQuestionChunk);
  std::vector<std::unique_ptr<Workspace>> wss(n_ws);
  parallel_for(n, cfg.workers, kQuestionChunk, [&](std::size_t tid, std::size_t b, std::size_t e) {
    auto& wsp = wss[tid];
    if (!wsp) wsp = std::make_unique<Workspace>();
    if (!alias_wide.empty())
      sample_range(alias_wide.data(), b, e, offsets, ids, *wsp);
    else
      sample_range(alias_narrow.data(), b, e, offsets, ids, *wsp);
  });
  std::vector<std::pair<std::int64_t, std::int64_t>> shortfalls;
  for (auto& w : wss)
    if (w) shortfalls.insert(shortfalls.end(), w->shortfalls.begin(), w->shortfalls.end());
  const std::size_t K = n * m;
  if (shortfalls.empty()) return offsets[K];
  std::sort(shortfalls.begin(), shortfalls.end());
  // Compact: candidates from the first short one on move left to close the gaps.
  std::size_t sf = 0;
  std::size_t k = static_cast<std::size_t>(shortfalls[0].first);
  std::int64_t write = offsets[k];
  std::int64_t old_start = offsets[k];
  for (; k < K; ++k) {
    const std::int64_t old_end = offsets[k + 1];
    std::int64_t len = old_end - old_start;
    if (sf < shortfalls.size() && static_cast<std::size_t>(shortfalls[sf].first) == k) {
      len = shortfalls[sf].second;
      ++sf;
    }
    if (write != old_start && len > 0)
      std::memmove(ids + write, ids + old_start, static_cast<std::size_t>(len) * sizeof(std::int32_t));
    offsets[k] = write;
    write += len;
    old_start = old_end;
  }
  offsets[K] = write;
  return write;
}

Sampler::Sampler(const Corpus& corpus, const Config& config) : impl_(std::make_unique<Impl>(corpus, config)) {}
Sampler::~Sampler() = default;
std::size_t Sampler::n_candidates() const { return impl_->n_candidates; }
std::int64_t Sampler::plan(std::int64_t* offsets) const { return impl_->plan(offsets); }
std::int64_t Sampler::sample(std::int64_t* offsets, std::int32_t* ids) const { return impl_->sample(offsets, ids); }

void Sampler::generate(std::vector<std::int32_t>& ids, std::vector<std::int64_t>& offsets) const {
  offsets.assign(n_candidates() + 1, 0);
  const std::int64_t planned = plan(offsets.data());
  ids.assign(static_cast<std::size_t>(planned), 0);
  const std::int64_t total = sample(offsets.data(), ids.data());
  ids.resize(static_cast<std::size_t>(total));
}

// Profile (bench/bench_sampling.py corpus: 1M questions, 10M tokens, 200k ids, 2-core VM):
// the sampling API counted these with np.bincount + np.unique over (question, id) keys on
// every generate() call: 10.1 s of the 14.0 s call.  Here one pass over the tokens with a
// 16-byte slot (cf, df, last document seen) per id, so a token touches one cache line:
// 0.022 s (24-byte slots: 0.042 s).  Single-threaded by design: it is memory-bound and
// runs once per corpus; threads over document ranges with their own slots, summed after,
// took 0.015 s with 2 workers (1.5x: the slots' page faults and the sum do not shrink).
// Questions are short, so a candidate term's first position is found by a scan of its
// question (the NumPy twin sorts and searches ~4M (question, term) keys per 50k questions: 0.8 s
// of each chunk of the K2Q pipeline, single-threaded).
void order_like_questions(const std::int32_t* q_ids, const std::int64_t* q_offsets, std::size_t n_questions,
                          const std::int32_t* c_ids, const std::int64_t* c_offsets, std::size_t m,
                          std::int32_t* out_ids) {
  std::vector<std::pair<std::int64_t, std::int32_t>> keyed;
  for (std::size_t i = 0; i < n_questions; ++i) {
    const std::int32_t* q = q_ids + q_offsets[i];
    const std::int64_t L = q_offsets[i + 1] - q_offsets[i];
    for (std::size_t c = i * m; c < (i + 1) * m; ++c) {
      const std::int64_t b = c_offsets[c], e = c_offsets[c + 1];
      keyed.clear();
      for (std::int64_t j = b; j < e; ++j) {
        std::int64_t key = (std::int64_t{1} << 40) + (j - b);  // absent: after the others, in order
        for (std::int64_t p = 0; p < L; ++p)
          if (q[p] == c_ids[j]) {
            key = p;
            break;
          }
        keyed.emplace_back(key, c_ids[j]);
      }
      // a stable insertion sort (candidates hold a few terms; std::stable_sort allocated a buffer
      // per candidate): keys are distinct except for copies of a repeated term, kept in order
      for (std::size_t x = 1; x < keyed.size(); ++x) {
        const auto v = keyed[x];
        std::size_t y = x;
        for (; y > 0 && keyed[y - 1].first > v.first; --y) keyed[y] = keyed[y - 1];
        keyed[y] = v;
      }
      for (std::int64_t j = b; j < e; ++j) out_ids[j] = keyed[static_cast<std::size_t>(j - b)].second;
    }
  }
}

void collection_stats(const std::int32_t* ids, const std::int64_t* offsets, std::size_t n_docs, std::size_t n_terms,
                      std::int64_t* cf, std::int64_t* df) {
  if (offsets == nullptr || offsets[0] != 0) throw std::invalid_argument("offsets must start at 0");
  for (std::size_t d = 0; d < n_docs; ++d)
    if (offsets[d + 1] < offsets[d]) throw std::invalid_argument("offsets must be non-decreasing");
  if (n_docs >= 0xFFFFFFFFu) throw std::invalid_argument("offsets: at most 2**32 - 2 documents");
  struct Slot {
    std::int64_t cf;
    std::uint32_t df, last;  // last: the last document containing the id, + 1
  };
  std::vector<Slot> slots(n_terms, Slot{0, 0, 0});
  for (std::size_t d = 0; d < n_docs; ++d) {
    const auto stamp = static_cast<std::uint32_t>(d + 1);
    for (std::int64_t k = offsets[d]; k < offsets[d + 1]; ++k) {
      const auto t = static_cast<std::uint32_t>(ids[k]);
      if (t >= n_terms)
        throw std::invalid_argument("ids contains id " + std::to_string(ids[k]) + " outside the vocabulary [0, " +
                                    std::to_string(n_terms) + ")");
      Slot& x = slots[t];
      ++x.cf;
      x.df += x.last != stamp ? 1u : 0u;
      x.last = stamp;
    }
  }
  for (std::size_t t = 0; t < n_terms; ++t) {
    cf[t] = slots[t].cf;
    df[t] = slots[t].df;
  }
}

}  // namespace sampling
}  // namespace pysynth
