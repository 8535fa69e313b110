// See pysynth/decoding.hpp; twin: pysynth/decoding/_reference.py::topk_from_parts.
#include "pysynth/decoding.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "pysynth/common.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace pysynth {
namespace decoding {

namespace {

struct Cand {
  float v;
  std::int64_t c;
};

// The ranking of candidates: value descending, then column ascending.
inline bool better(const Cand& a, const Cand& b) { return a.v > b.v || (a.v == b.v && a.c < b.c); }

[[noreturn]] void nan_error(std::size_t row, std::int64_t col) {
  throw std::invalid_argument("topk_from_parts: NaN log-probability at row " + std::to_string(row) + ", column " +
                              std::to_string(col) + " (ls, shift or touched)");
}

constexpr std::size_t kBlock = 16;

// Per block of kBlock columns, max(its largest x[c] + s, floor), which is the block's best
// value since f(x) = max(x + s, floor) is monotone (float rounding included). SSE2 (part of
// every x86-64 CPU; a scalar loop elsewhere). Returns whether some x[c] is NaN.
bool block_maxima(const float* x, std::size_t n_blocks, float s, float floor, float* out) {
  auto f = [&](float mx) {
    mx += s;
    return mx < floor ? floor : mx;
  };
#if defined(__SSE2__)
  __m128 nan = _mm_setzero_ps();
  for (std::size_t b = 0; b < n_blocks; ++b) {
    const float* p = x + b * kBlock;
    const __m128 v0 = _mm_loadu_ps(p), v1 = _mm_loadu_ps(p + 4), v2 = _mm_loadu_ps(p + 8), v3 = _mm_loadu_ps(p + 12);
    nan = _mm_or_ps(nan, _mm_or_ps(_mm_cmpunord_ps(v0, v1), _mm_cmpunord_ps(v2, v3)));
    __m128 m = _mm_max_ps(_mm_max_ps(v0, v1), _mm_max_ps(v2, v3));
    m = _mm_max_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
    m = _mm_max_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
    out[b] = f(_mm_cvtss_f32(m));
  }
  return _mm_movemask_ps(nan) != 0;
#else
  bool nan = false;
  for (std::size_t b = 0; b < n_blocks; ++b) {
    float m = x[b * kBlock];
    for (std::size_t i = 0; i < kBlock; ++i) {
      const float v = x[b * kBlock + i];
      nan |= v != v;
      m = v > m ? v : m;
    }
    out[b] = f(m);
  }
  return nan;
#endif
}

// The m-th largest of vals[0..n) (n > m >= 1): a sorted list of the m largest so far, which
// almost every value fails to enter after the first blocks (cheaper than nth_element here;
// groups of 4 that cannot enter are skipped with one SSE2 compare).
float mth_largest(const float* vals, std::size_t n, std::size_t m, std::vector<float>& best) {
  best.assign(vals, vals + m);
  std::sort(best.begin(), best.end(), [](float a, float b) { return a > b; });
  auto offer = [&](float v) {
    if (v > best[m - 1]) {
      std::size_t p = m - 1;
      for (; p > 0 && best[p - 1] < v; --p) best[p] = best[p - 1];
      best[p] = v;
    }
  };
  std::size_t i = m;
#if defined(__SSE2__)
  for (; i + 4 <= n; i += 4) {
    if (_mm_movemask_ps(_mm_cmpgt_ps(_mm_loadu_ps(vals + i), _mm_set1_ps(best[m - 1]))) == 0) continue;
    for (std::size_t j = i; j < i + 4; ++j) offer(vals[j]);
  }
#endif
  for (; i < n; ++i) offer(vals[i]);
  return best[m - 1];
}

// The m best columns c of [0, vocab) by value max(x[c] + s, floor), into `top` in `better`
// order (value descending, then column ascending).
//
// Pruned by block maxima: f(x) = max(x + s, floor) is monotone (float rounding included), so a
// block's best value is f(its largest x); the m-th largest of these, T, is a lower bound of
// the m-th best value (m blocks hold a value >= T), and only values >= T can be among the m
// best. Blocks whose best is below T are skipped: about 500 block maxima and 1-2 m visited
// blocks per row of 8,000 columns. Columns are offered in ascending order, so a value equal to
// the m-th best never displaces it (the earlier column ranks first).
void plain_top(const float* x, std::size_t vocab, float s, float floor, std::size_t m, std::size_t row,
               std::vector<Cand>& top, std::vector<float>& maxima, std::vector<float>& scratch) {
  top.clear();
  auto value = [&](std::size_t col) {
    float v = x[col] + s;
    v = v < floor ? floor : v;
    if (v != v) nan_error(row, static_cast<std::int64_t>(col));
    return v;
  };
  auto offer = [&](float v, std::size_t col) {
    const Cand c{v, static_cast<std::int64_t>(col)};
    if (top.size() < m) {
      top.push_back(c);
    } else if (v > top.back().v) {
      top.back() = c;
    } else {
      return;
    }
    std::size_t p = top.size() - 1;
    for (; p > 0 && top[p - 1].v < v; --p) top[p] = top[p - 1];
    top[p] = c;
  };
  auto visit = [&](std::size_t begin, std::size_t end) {
    for (std::size_t col = begin; col < end; ++col) offer(value(col), col);
  };
  const std::size_t n_blocks = vocab / kBlock;
  if (n_blocks <= m) {
    visit(0, vocab);
    return;
  }
  if (s != s) nan_error(row, 0);
  maxima.resize(n_blocks);
  if (block_maxima(x, n_blocks, s, floor, maxima.data())) visit(0, n_blocks * kBlock);  // throws on the NaN
  const float thr = mth_largest(maxima.data(), n_blocks, m, scratch);
#if defined(__SSE2__)
  const __m128 vs = _mm_set1_ps(s), vf = _mm_set1_ps(floor), vt = _mm_set1_ps(thr);
#endif
  for (std::size_t b = 0; b < n_blocks; ++b) {
    if (maxima[b] < thr) continue;
#if defined(__SSE2__)
    // values >= thr found 4 at a time (the block is free of NaN), then offered exactly
    for (std::size_t c = b * kBlock; c < (b + 1) * kBlock; c += 4) {
      const __m128 v = _mm_max_ps(_mm_add_ps(_mm_loadu_ps(x + c), vs), vf);
      for (int mask = _mm_movemask_ps(_mm_cmpge_ps(v, vt)); mask; mask &= mask - 1) {
        const std::size_t col = c + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
        offer(value(col), col);
      }
    }
#else
    visit(b * kBlock, (b + 1) * kBlock);
#endif
  }
  visit(n_blocks * kBlock, vocab);  // the last, partial block
}

}  // namespace

void topk_from_parts(const float* ls, const float* shift, const float* touched, const std::int64_t* src_ext,
                     std::size_t n_rows, std::size_t vocab, std::size_t src_len, std::size_t n_ext, std::size_t k,
                     float floor, int workers, float* out_vals, std::int64_t* out_idx) {
  const std::size_t width = vocab + n_ext;
  if (k < 1 || k > width) {
    throw std::invalid_argument("topk_from_parts: k must be in [1, vocab + n_ext] = [1, " + std::to_string(width) +
                                "], got " + std::to_string(k));
  }
  if (floor != floor) throw std::invalid_argument("topk_from_parts: floor is NaN");
  for (std::size_t i = 0; i < n_rows * src_len; ++i) {
    if (src_ext[i] < 0 || static_cast<std::size_t>(src_ext[i]) >= width) {
      throw std::invalid_argument("topk_from_parts: src_ext[" + std::to_string(i / src_len) + ", " +
                                  std::to_string(i % src_len) + "] = " + std::to_string(src_ext[i]) +
                                  " is outside [0, vocab + n_ext) = [0, " + std::to_string(width) + ")");
    }
  }
  parallel_for(n_rows, workers, 8, [&](std::size_t, std::size_t begin, std::size_t end) {
    std::vector<Cand> top, over, extra, merged;
    std::vector<float> maxima, scratch;
    for (std::size_t r = begin; r < end; ++r) {
      // the overridden columns of this row, the last position of each column winning
      over.clear();
      for (std::size_t j = 0; j < src_len; ++j) {
        const float v = touched[r * src_len + j];
        if (v != v) nan_error(r, src_ext[r * src_len + j]);
        over.push_back(Cand{v, src_ext[r * src_len + j]});
      }
      for (std::size_t j = 1; j < over.size(); ++j) {  // stable insertion sort by column (src_len is small)
        const Cand c = over[j];
        std::size_t p = j;
        for (; p > 0 && over[p - 1].c > c.c; --p) over[p] = over[p - 1];
        over[p] = c;
      }
      std::size_t n_over = 0, n_over_vocab = 0;
      for (std::size_t j = 0; j < over.size(); ++j) {
        if (j + 1 < over.size() && over[j + 1].c == over[j].c) continue;  // a later position wins
        over[n_over++] = over[j];
        n_over_vocab += static_cast<std::size_t>(over[j].c) < vocab;
      }
      over.resize(n_over);
      // k + n_over_vocab best plain columns: at least k of them are not overridden
      const std::size_t m = std::min(vocab, k + n_over_vocab);
      plain_top(ls + r * vocab, vocab, shift[r], floor, m, r, top, maxima, scratch);
      auto overridden = [&](std::int64_t c) {
        auto it =
            std::lower_bound(over.begin(), over.end(), c, [](const Cand& a, std::int64_t col) { return a.c < col; });
        return it != over.end() && it->c == c;
      };
      // the source columns (their values) and the extended columns no source word takes
      // (floor), in `better` order; then merged with the plain columns that are not overridden
      extra.assign(over.begin(), over.end());
      for (std::size_t c = vocab; c < width; ++c) {
        if (!overridden(static_cast<std::int64_t>(c))) extra.push_back(Cand{floor, static_cast<std::int64_t>(c)});
      }
      std::sort(extra.begin(), extra.end(), [](const Cand& a, const Cand& b) { return better(a, b); });
      merged.clear();
      std::size_t ti = 0, ej = 0;
      while (merged.size() < k && (ti < top.size() || ej < extra.size())) {
        if (ti < top.size() && overridden(top[ti].c)) {
          ++ti;
        } else if (ej == extra.size() || (ti < top.size() && better(top[ti], extra[ej]))) {
          merged.push_back(top[ti++]);
        } else {
          merged.push_back(extra[ej++]);
        }
      }
      if (merged.size() < k) throw Error("topk_from_parts: fewer candidates than k (internal error)");
      for (std::size_t i = 0; i < k; ++i) {
        out_vals[r * k + i] = merged[i].v;
        out_idx[r * k + i] = merged[i].c;
      }
    }
  });
}

}  // namespace decoding
}  // namespace pysynth
