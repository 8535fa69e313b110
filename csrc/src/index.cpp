// Positional inverted index: parallel build (two counting passes) and structural validation.
#include "pysynth/index.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "pysynth/common.hpp"
#include "pysynth/sdm.hpp"

namespace pysynth::retrieval {

void build_pair_table(IndexArrays& a, std::int64_t vocab_size, int workers);

namespace {

constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

// Impact order of one posting list: positions 0..df-1 sorted by key ascending, ties by position
// (what std::stable_sort gives), by one counting pass when the keys span few values: the keys are
// (tf, |D|) pairs of short questions, and the merge sort was a fifth of the build at 3.17M.
void impact_sort(const std::uint64_t* keys, std::int64_t df, std::int32_t* out, std::vector<std::int64_t>& bucket) {
  std::uint64_t lo = keys[0], hi = keys[0];
  for (std::int64_t j = 1; j < df; ++j) {
    lo = std::min(lo, keys[j]);
    hi = std::max(hi, keys[j]);
  }
  // key = (INT32_MAX - tf) << 31 | |D|: spans of both parts
  const std::uint64_t mask = (std::uint64_t{1} << 31) - 1;
  std::uint64_t llo = mask, lhi = 0;
  for (std::int64_t j = 0; j < df; ++j) {
    llo = std::min(llo, keys[j] & mask);
    lhi = std::max(lhi, keys[j] & mask);
  }
  const std::uint64_t n_len = lhi - llo + 1, n_tf = (hi >> 31) - (lo >> 31) + 1;
  if (n_len > 4096 || n_tf > 4096 || n_len * n_tf > static_cast<std::uint64_t>(std::max<std::int64_t>(df, 4096))) {
    for (std::int64_t j = 0; j < df; ++j) out[j] = static_cast<std::int32_t>(j);
    std::stable_sort(out, out + df, [&](std::int32_t x, std::int32_t y) {
      return keys[static_cast<std::size_t>(x)] < keys[static_cast<std::size_t>(y)];
    });
    return;
  }
  const std::uint64_t tf0 = lo >> 31;
  auto slot = [&](std::uint64_t k) { return ((k >> 31) - tf0) * n_len + ((k & mask) - llo); };
  bucket.assign(static_cast<std::size_t>(n_len * n_tf) + 1, 0);
  for (std::int64_t j = 0; j < df; ++j) ++bucket[static_cast<std::size_t>(slot(keys[j])) + 1];
  for (std::size_t b = 1; b < bucket.size(); ++b) bucket[b] += bucket[b - 1];
  for (std::int64_t j = 0; j < df; ++j)
    out[bucket[static_cast<std::size_t>(slot(keys[j]))]++] = static_cast<std::int32_t>(j);
}

}  // namespace

IndexView view_of(const IndexArrays& a, std::int64_t vocab_size) {
  IndexView v;
  v.n_docs = static_cast<std::int64_t>(a.doc_lengths.size());
  v.vocab_size = vocab_size;
  v.n_postings = static_cast<std::int64_t>(a.doc_ids.size());
  v.n_tokens = static_cast<std::int64_t>(a.positions.size());
  v.indptr = a.indptr.data();
  v.doc_ids = a.doc_ids.data();
  v.tfs = a.tfs.data();
  v.pos_indptr = a.pos_indptr.data();
  v.positions = a.positions.data();
  v.doc_offsets = a.doc_offsets.data();
  v.doc_tokens = a.doc_tokens.data();
  v.doc_lengths = a.doc_lengths.data();
  v.cf = a.cf.data();
  v.max_tf = a.max_tf.data();
  v.impact = a.impact.data();
  v.n_hi = static_cast<std::int64_t>(a.hi_doc_ids.size());
  v.hi_indptr = a.hi_indptr.data();
  v.hi_doc_ids = a.hi_doc_ids.data();
  v.hi_tfs = a.hi_tfs.data();
  v.n_pair_terms = static_cast<std::int64_t>(a.pair_terms.size());
  v.pair_terms = a.pair_terms.data();
  v.pair_cf_od = a.pair_cf_od.data();
  v.pair_cf_uw = a.pair_cf_uw.data();
  v.pair_max_od = a.pair_max_od.data();
  v.pair_max_uw = a.pair_max_uw.data();
  return v;
}

// Build in two passes over contiguous chunks of documents, one chunk per thread:
//   1. each chunk counts, per term, its documents (df) and occurrences (cf);
//   2. prefix sums over (term, chunk) give every chunk its own write cursor inside each term's
//      postings range (chunk order = document order, so doc ids come out ascending), and each
//      chunk scatters its postings and positions there.
// A chunk's scratch is ~20 bytes per vocabulary entry, so the chunk count is also limited to
// about one chunk per 2 * V tokens (more chunks than that would cost more than they save).
IndexArrays build_index(const std::int32_t* ids, const std::int64_t* offsets, std::size_t n_docs,
                        std::int64_t vocab_size, int workers) {
  const int n_workers = resolve_workers(workers);
  if (n_docs == 0) fail("the corpus is empty (no documents); pass at least one document");
  if (vocab_size < 1 || vocab_size > kInt32Max)
    fail("vocab_size must be in [1, 2**31 - 1], got " + std::to_string(vocab_size));
  if (static_cast<std::int64_t>(n_docs) > kInt32Max)
    fail("at most 2**31 - 1 documents fit the int32 doc ids, got " + std::to_string(n_docs));
  if (offsets[0] != 0) fail("offsets[0] must be 0, got " + std::to_string(offsets[0]));
  for (std::size_t d = 0; d < n_docs; ++d) {
    std::int64_t len = offsets[d + 1] - offsets[d];
    if (len < 0)
      fail("offsets must be non-decreasing; offsets[" + std::to_string(d + 1) + "] < offsets[" + std::to_string(d) +
           "]");
    if (len > kInt32Max) fail("document " + std::to_string(d) + " is longer than 2**31 - 1 tokens");
  }
  const std::int64_t T = offsets[n_docs];
  if (T == 0) fail("the corpus is empty (all " + std::to_string(n_docs) + " documents have no tokens)");
  const std::size_t V = static_cast<std::size_t>(vocab_size);

  // Chunks: contiguous document ranges with about equal token counts.
  std::int64_t by_size = std::max<std::int64_t>(1, T / (2 * vocab_size));
  std::size_t n_chunks = static_cast<std::size_t>(
      std::min<std::int64_t>({static_cast<std::int64_t>(n_workers), by_size, static_cast<std::int64_t>(n_docs)}));
  std::vector<std::size_t> bounds(n_chunks + 1, 0);
  for (std::size_t c = 1; c < n_chunks; ++c) {
    std::int64_t target = T * static_cast<std::int64_t>(c) / static_cast<std::int64_t>(n_chunks);
    bounds[c] = static_cast<std::size_t>(std::lower_bound(offsets, offsets + n_docs + 1, target) - offsets);
    bounds[c] = std::max(bounds[c], bounds[c - 1]);
  }
  bounds[n_chunks] = n_docs;

  // Pass 1: per-chunk counts, and the first out-of-range id of each chunk.
  std::vector<std::vector<std::int64_t>> df(n_chunks), occ(n_chunks);
  std::vector<std::int64_t> bad(n_chunks, -1);
  parallel_for(n_chunks, n_workers, 1, [&](std::size_t, std::size_t cb, std::size_t ce) {
    for (std::size_t c = cb; c < ce; ++c) {
      std::vector<std::int64_t>& my_df = df[c];
      std::vector<std::int64_t>& my_cf = occ[c];
      my_df.assign(V, 0);
      my_cf.assign(V, 0);
      std::vector<std::int32_t> last(V, -1);
      for (std::size_t d = bounds[c]; d < bounds[c + 1]; ++d) {
        for (std::int64_t i = offsets[d]; i < offsets[d + 1]; ++i) {
          std::int32_t t = ids[i];
          if (t < 0 || t >= vocab_size) {
            bad[c] = i;
            return;
          }
          ++my_cf[static_cast<std::size_t>(t)];
          if (last[static_cast<std::size_t>(t)] != static_cast<std::int32_t>(d)) {
            last[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(d);
            ++my_df[static_cast<std::size_t>(t)];
          }
        }
      }
    }
  });
  for (std::size_t c = 0; c < n_chunks; ++c) {
    if (bad[c] >= 0)
      fail("ids[" + std::to_string(bad[c]) + "] = " + std::to_string(ids[bad[c]]) +
           " is outside [0, vocab_size = " + std::to_string(vocab_size) + ")");
  }

  IndexArrays a;
  a.indptr.assign(V + 1, 0);
  a.cf.assign(V, 0);
  for (std::size_t t = 0; t < V; ++t) {
    std::int64_t n = 0, o = 0;
    for (std::size_t c = 0; c < n_chunks; ++c) {
      n += df[c][t];
      o += occ[c][t];
    }
    a.indptr[t + 1] = a.indptr[t] + n;
    a.cf[t] = o;
  }
  const std::int64_t nnz = a.indptr[V];
  // Turn the per-chunk counts into per-chunk write cursors (postings and positions).
  {
    std::int64_t pos_start = 0;
    for (std::size_t t = 0; t < V; ++t) {
      std::int64_t p = a.indptr[t], q = pos_start;
      for (std::size_t c = 0; c < n_chunks; ++c) {
        std::int64_t n = df[c][t], o = occ[c][t];
        df[c][t] = p;
        occ[c][t] = q;
        p += n;
        q += o;
      }
      pos_start = q;
    }
  }

  a.doc_ids.resize(static_cast<std::size_t>(nnz));
  a.tfs.resize(static_cast<std::size_t>(nnz));
  a.pos_indptr.resize(static_cast<std::size_t>(nnz) + 1);
  a.positions.resize(static_cast<std::size_t>(T));
  // Pass 2: scatter. A term's postings of one document are created at its first occurrence;
  // later occurrences in the same document bump the tf of the posting just before the cursor.
  parallel_for(n_chunks, n_workers, 1, [&](std::size_t, std::size_t cb, std::size_t ce) {
    for (std::size_t c = cb; c < ce; ++c) {
      std::int64_t* cur = df[c].data();
      std::int64_t* pcur = occ[c].data();
      std::vector<std::int32_t> last(V, -1);
      for (std::size_t d = bounds[c]; d < bounds[c + 1]; ++d) {
        const std::int32_t doc = static_cast<std::int32_t>(d);
        const std::int64_t base = offsets[d];
        for (std::int64_t i = base; i < offsets[d + 1]; ++i) {
          const std::size_t t = static_cast<std::size_t>(ids[i]);
          if (last[t] != doc) {
            last[t] = doc;
            const std::int64_t s = cur[t]++;
            a.doc_ids[static_cast<std::size_t>(s)] = doc;
            a.tfs[static_cast<std::size_t>(s)] = 1;
            a.pos_indptr[static_cast<std::size_t>(s)] = pcur[t];
          } else {
            ++a.tfs[static_cast<std::size_t>(cur[t] - 1)];
          }
          a.positions[static_cast<std::size_t>(pcur[t]++)] = static_cast<std::int32_t>(i - base);
        }
      }
    }
  });
  a.pos_indptr[static_cast<std::size_t>(nnz)] = T;
  df.clear();
  occ.clear();

  a.max_tf.assign(V, 0);
  parallel_for(V, n_workers, 1 << 14, [&](std::size_t, std::size_t tb, std::size_t te) {
    for (std::size_t t = tb; t < te; ++t) {
      std::int32_t m = 0;
      for (std::int64_t p = a.indptr[t]; p < a.indptr[t + 1]; ++p) m = std::max(m, a.tfs[static_cast<std::size_t>(p)]);
      a.max_tf[t] = m;
    }
  });
  a.doc_lengths.resize(n_docs);
  for (std::size_t d = 0; d < n_docs; ++d) a.doc_lengths[d] = static_cast<std::int32_t>(offsets[d + 1] - offsets[d]);
  // impact order: per term, sort (tf desc, |D| asc, position in the term's list asc)
  a.impact.resize(static_cast<std::size_t>(nnz));
  parallel_for(V, n_workers, 1 << 10, [&](std::size_t, std::size_t tb, std::size_t te) {
    std::vector<std::uint64_t> keys;
    std::vector<std::int64_t> bucket;
    for (std::size_t t = tb; t < te; ++t) {
      const std::int64_t p0 = a.indptr[t], df = a.indptr[t + 1] - p0;
      std::int32_t* out = a.impact.data() + p0;
      bool sorted = true;
      keys.resize(static_cast<std::size_t>(df));
      for (std::int64_t j = 0; j < df; ++j) {
        const std::size_t p = static_cast<std::size_t>(p0 + j);
        // 31 bits of (INT32_MAX - tf) above 31 bits of |D|: a key that sorts like (tf desc, |D| asc)
        keys[static_cast<std::size_t>(j)] =
            (static_cast<std::uint64_t>(kInt32Max - a.tfs[p]) << 31) |
            static_cast<std::uint64_t>(a.doc_lengths[static_cast<std::size_t>(a.doc_ids[p])]);
        if (j > 0 && keys[static_cast<std::size_t>(j)] < keys[static_cast<std::size_t>(j - 1)]) sorted = false;
        out[j] = static_cast<std::int32_t>(j);
      }
      if (!sorted) impact_sort(keys.data(), df, out, bucket);
    }
  });
  // high layer: the postings with tf >= 2
  a.hi_indptr.assign(V + 1, 0);
  for (std::size_t t = 0; t < V; ++t) {
    std::int64_t n = 0;
    for (std::int64_t p = a.indptr[t]; p < a.indptr[t + 1]; ++p) n += a.tfs[static_cast<std::size_t>(p)] >= 2;
    a.hi_indptr[t + 1] = a.hi_indptr[t] + n;
  }
  a.hi_doc_ids.resize(static_cast<std::size_t>(a.hi_indptr[V]));
  a.hi_tfs.resize(static_cast<std::size_t>(a.hi_indptr[V]));
  for (std::size_t t = 0, h = 0; t < V; ++t) {
    for (std::int64_t p = a.indptr[t]; p < a.indptr[t + 1]; ++p) {
      if (a.tfs[static_cast<std::size_t>(p)] < 2) continue;
      a.hi_doc_ids[h] = a.doc_ids[static_cast<std::size_t>(p)];
      a.hi_tfs[h++] = a.tfs[static_cast<std::size_t>(p)];
    }
  }
  a.doc_offsets.assign(offsets, offsets + n_docs + 1);
  a.doc_tokens.assign(ids, ids + T);
  build_pair_table(a, vocab_size, n_workers);
  return a;
}

std::vector<std::int32_t> select_pair_terms(const std::int64_t* indptr, std::int64_t vocab_size, std::int64_t n_docs) {
  const std::int64_t min_df = std::max<std::int64_t>(2, (n_docs + 1023) / 1024);
  std::vector<std::int32_t> terms;
  for (std::int64_t t = 0; t < vocab_size; ++t)
    if (indptr[t + 1] - indptr[t] >= min_df) terms.push_back(static_cast<std::int32_t>(t));
  if (static_cast<std::int64_t>(terms.size()) > kMaxPairTerms) {
    std::stable_sort(terms.begin(), terms.end(), [&](std::int32_t x, std::int32_t y) {
      return indptr[x + 1] - indptr[x] > indptr[y + 1] - indptr[y];
    });
    terms.resize(static_cast<std::size_t>(kMaxPairTerms));
    std::sort(terms.begin(), terms.end());
  }
  return terms;
}

// Window statistics of every ordered pair of frequent terms, in one pass over the documents:
// each document's frequent terms are grouped with their positions and every ordered pair of them
// (a term with itself included) is counted. Threads fill private tables over contiguous ranges
// of documents, merged at the end (sums and maxima: the result does not depend on the split);
// at most 4 tables, as each takes 24 bytes per pair (25 MB at the 1024-term maximum).
void build_pair_table(IndexArrays& a, std::int64_t vocab_size, int workers) {
  const std::int64_t N = static_cast<std::int64_t>(a.doc_lengths.size());
  a.pair_terms = select_pair_terms(a.indptr.data(), vocab_size, N);
  const std::size_t P = a.pair_terms.size(), PP = P * P;
  a.pair_cf_od.assign(PP, 0);
  a.pair_cf_uw.assign(PP, 0);
  a.pair_max_od.assign(PP, 0);
  a.pair_max_uw.assign(PP, 0);
  if (P == 0) return;
  std::vector<std::int32_t> slot(static_cast<std::size_t>(vocab_size), -1);
  for (std::size_t i = 0; i < P; ++i) slot[static_cast<std::size_t>(a.pair_terms[i])] = static_cast<std::int32_t>(i);
  const std::size_t n_parts =
      std::min<std::size_t>({static_cast<std::size_t>(workers), 4, static_cast<std::size_t>(N)});
  struct Cell {  // one cache access per update (the four counts side by side)
    std::int64_t cf_od, cf_uw;
    std::int32_t mx_od, mx_uw;
  };
  struct Part {
    std::vector<Cell> cells;
  };
  std::vector<Part> parts(n_parts);
  parallel_for(n_parts, workers, 1, [&](std::size_t, std::size_t pb, std::size_t pe) {
    for (std::size_t part = pb; part < pe; ++part) {
      Part& T = parts[part];
      T.cells.assign(PP, Cell{0, 0, 0, 0});
      std::vector<std::int32_t> count(P, 0), start(P, 0), fill(P, 0), present, flat;
      const std::int64_t d0 = N * static_cast<std::int64_t>(part) / static_cast<std::int64_t>(n_parts);
      const std::int64_t d1 = N * static_cast<std::int64_t>(part + 1) / static_cast<std::int64_t>(n_parts);
      for (std::int64_t d = d0; d < d1; ++d) {
        const std::int64_t off = a.doc_offsets[static_cast<std::size_t>(d)];
        const std::int64_t len = a.doc_offsets[static_cast<std::size_t>(d) + 1] - off;
        const std::int32_t* toks = a.doc_tokens.data() + off;
        present.clear();
        std::int32_t total = 0;
        for (std::int64_t i = 0; i < len; ++i) {
          const std::int32_t s = slot[static_cast<std::size_t>(toks[i])];
          if (s < 0) continue;
          if (count[static_cast<std::size_t>(s)]++ == 0) present.push_back(s);
          ++total;
        }
        if (present.empty()) continue;
        std::int32_t at = 0;
        for (std::int32_t s : present) {
          start[static_cast<std::size_t>(s)] = at;
          at += count[static_cast<std::size_t>(s)];
        }
        flat.resize(static_cast<std::size_t>(total));
        for (std::int64_t i = 0; i < len; ++i) {
          const std::int32_t s = slot[static_cast<std::size_t>(toks[i])];
          if (s >= 0)
            flat[static_cast<std::size_t>(start[static_cast<std::size_t>(s)] + fill[static_cast<std::size_t>(s)]++)] =
                static_cast<std::int32_t>(i);
        }
        for (std::int32_t sa : present) {
          const std::int32_t* A = flat.data() + start[static_cast<std::size_t>(sa)];
          const std::size_t na = static_cast<std::size_t>(count[static_cast<std::size_t>(sa)]);
          const std::size_t row = static_cast<std::size_t>(sa) * P;
          for (std::int32_t sb : present) {
            const std::int32_t* B = flat.data() + start[static_cast<std::size_t>(sb)];
            const std::size_t nb = static_cast<std::size_t>(count[static_cast<std::size_t>(sb)]);
            std::int32_t od, uw;
            window_counts(A, na, B, nb, sa == sb, &od, &uw);
            Cell& c = T.cells[row + static_cast<std::size_t>(sb)];
            c.cf_od += od;
            c.cf_uw += uw;
            c.mx_od = std::max(c.mx_od, od);
            c.mx_uw = std::max(c.mx_uw, uw);
          }
        }
        for (std::int32_t s : present) count[static_cast<std::size_t>(s)] = fill[static_cast<std::size_t>(s)] = 0;
      }
    }
  });
  parallel_for(PP, workers, 1 << 14, [&](std::size_t, std::size_t b, std::size_t e) {
    for (const Part& T : parts) {
      for (std::size_t i = b; i < e; ++i) {
        const Cell& c = T.cells[i];
        a.pair_cf_od[i] += c.cf_od;
        a.pair_cf_uw[i] += c.cf_uw;
        a.pair_max_od[i] = std::max(a.pair_max_od[i], c.mx_od);
        a.pair_max_uw[i] = std::max(a.pair_max_uw[i], c.mx_uw);
      }
    }
  });
}

void validate_index(const IndexView& v, int workers) {
  const int n_workers = resolve_workers(workers);
  const std::int64_t N = v.n_docs, V = v.vocab_size, nnz = v.n_postings, T = v.n_tokens;
  if (N < 1 || N > kInt32Max) fail("index: n_docs must be in [1, 2**31 - 1], got " + std::to_string(N));
  if (V < 1 || V > kInt32Max) fail("index: vocab_size must be in [1, 2**31 - 1], got " + std::to_string(V));
  if (T < 1) fail("index: n_tokens must be >= 1, got " + std::to_string(T));
  if (nnz < 1 || nnz > T) fail("index: n_postings must be in [1, n_tokens], got " + std::to_string(nnz));
  // 1. Offsets arrays (sequential, O(V + N + nnz)); after this every range below is in bounds.
  if (v.indptr[0] != 0) fail("index: indptr[0] must be 0, got " + std::to_string(v.indptr[0]));
  for (std::int64_t t = 0; t < V; ++t)
    if (v.indptr[t + 1] < v.indptr[t]) fail("index: indptr is not non-decreasing at term " + std::to_string(t));
  if (v.indptr[V] != nnz)
    fail("index: indptr[-1] = " + std::to_string(v.indptr[V]) + " but there are " + std::to_string(nnz) + " postings");
  if (v.doc_offsets[0] != 0) fail("index: doc_offsets[0] must be 0");
  for (std::int64_t d = 0; d < N; ++d) {
    std::int64_t len = v.doc_offsets[d + 1] - v.doc_offsets[d];
    if (len < 0 || len > kInt32Max) fail("index: doc_offsets is not non-decreasing at document " + std::to_string(d));
    if (v.doc_lengths[d] != len)
      fail("index: doc_lengths[" + std::to_string(d) + "] = " + std::to_string(v.doc_lengths[d]) +
           " but doc_offsets gives " + std::to_string(len));
  }
  if (v.doc_offsets[N] != T)
    fail("index: doc_offsets[-1] = " + std::to_string(v.doc_offsets[N]) + " but n_tokens = " + std::to_string(T));
  if (v.pos_indptr[0] != 0) fail("index: pos_indptr[0] must be 0");
  for (std::int64_t p = 0; p < nnz; ++p) {
    if (v.tfs[p] < 1) fail("index: tfs[" + std::to_string(p) + "] = " + std::to_string(v.tfs[p]) + " < 1");
    if (v.pos_indptr[p + 1] - v.pos_indptr[p] != v.tfs[p])
      fail("index: pos_indptr does not match tfs at posting " + std::to_string(p));
  }
  if (v.pos_indptr[nnz] != T)
    fail("index: pos_indptr[-1] = " + std::to_string(v.pos_indptr[nnz]) + " but n_tokens = " + std::to_string(T));
  // 1b. High layer: per term, exactly its postings with tf >= 2, in order.
  if (v.hi_indptr[0] != 0 || v.hi_indptr[V] != v.n_hi) fail("index: hi_indptr does not span the high layer");
  for (std::int64_t t = 0; t < V; ++t)
    if (v.hi_indptr[t + 1] < v.hi_indptr[t])
      fail("index: hi_indptr is not non-decreasing at term " + std::to_string(t));
  for (std::int64_t t = 0; t < V; ++t) {
    std::int64_t h = v.hi_indptr[t];
    for (std::int64_t p = v.indptr[t]; p < v.indptr[t + 1]; ++p) {
      if (v.tfs[p] < 2) continue;
      if (h >= v.hi_indptr[t + 1] || v.hi_doc_ids[h] != v.doc_ids[p] || v.hi_tfs[h] != v.tfs[p])
        fail("index: the high layer of term " + std::to_string(t) + " is not its postings with tf >= 2");
      ++h;
    }
    if (h != v.hi_indptr[t + 1]) fail("index: the high layer of term " + std::to_string(t) + " has extra entries");
  }
  // 2. Per term (parallel): doc ids ascending and in range, positions ascending, inside their
  //    document and pointing at this term, cf and max_tf. With sum(tfs) == T (checked above) and
  //    distinct (term, doc, position) triples, the postings then cover every token exactly once.
  std::vector<std::int64_t> bad_term(static_cast<std::size_t>(n_workers), -1);
  std::vector<std::string> bad_msg(static_cast<std::size_t>(n_workers));
  parallel_for(static_cast<std::size_t>(V), n_workers, 1 << 12, [&](std::size_t tid, std::size_t tb, std::size_t te) {
    std::vector<char> seen;
    for (std::size_t tt = tb; tt < te; ++tt) {
      const std::int64_t t = static_cast<std::int64_t>(tt);
      std::int64_t prev = -1, occ = 0;
      std::int32_t mx = 0;
      std::string why;
      for (std::int64_t p = v.indptr[t]; p < v.indptr[t + 1] && why.empty(); ++p) {
        const std::int64_t d = v.doc_ids[p];
        if (d <= prev || d >= N) {
          why = "doc_ids[" + std::to_string(p) + "] = " + std::to_string(d) +
                (d >= N ? " is not a document id" : " is not ascending within its term");
          break;
        }
        prev = d;
        const std::int64_t L = v.doc_lengths[d], base = v.doc_offsets[d];
        std::int64_t last = -1;
        for (std::int64_t j = v.pos_indptr[p]; j < v.pos_indptr[p + 1]; ++j) {
          const std::int64_t pos = v.positions[j];
          if (pos <= last || pos >= L || v.doc_tokens[base + pos] != t) {
            why = "positions[" + std::to_string(j) + "] = " + std::to_string(pos) + " does not point at term " +
                  std::to_string(t) + " in document " + std::to_string(d);
            break;
          }
          last = pos;
        }
        occ += v.tfs[p];
        mx = std::max(mx, v.tfs[p]);
      }
      if (why.empty() && occ != v.cf[t])
        why = "cf[" + std::to_string(t) + "] = " + std::to_string(v.cf[t]) + " but the postings hold " +
              std::to_string(occ) + " occurrences";
      if (why.empty()) {
        // impact: a permutation of 0..df-1, ordered by (tf desc, |D| asc, index asc)
        const std::int64_t p0 = v.indptr[t], df = v.indptr[t + 1] - p0;
        seen.assign(static_cast<std::size_t>(df), 0);
        for (std::int64_t j = 0; j < df && why.empty(); ++j) {
          const std::int64_t x = v.impact[p0 + j];
          if (x < 0 || x >= df || seen[static_cast<std::size_t>(x)]) {
            why = "impact[" + std::to_string(p0 + j) + "] = " + std::to_string(x) +
                  " is not a permutation of the postings of term " + std::to_string(t);
            break;
          }
          seen[static_cast<std::size_t>(x)] = 1;
          if (j > 0) {
            const std::int64_t y = v.impact[p0 + j - 1];
            const std::int32_t tx = v.tfs[p0 + x], ty = v.tfs[p0 + y];
            const std::int32_t lx = v.doc_lengths[v.doc_ids[p0 + x]], ly = v.doc_lengths[v.doc_ids[p0 + y]];
            if (tx > ty || (tx == ty && (lx < ly || (lx == ly && x < y))))
              why = "impact is not in (tf desc, length asc, doc asc) order at " + std::to_string(p0 + j);
          }
        }
      }
      if (why.empty() && mx != v.max_tf[t])
        why = "max_tf[" + std::to_string(t) + "] = " + std::to_string(v.max_tf[t]) + " but the largest tf is " +
              std::to_string(mx);
      if (!why.empty()) {
        if (bad_term[tid] < 0 || t < bad_term[tid]) {
          bad_term[tid] = t;
          bad_msg[tid] = why;
        }
        return;
      }
    }
  });
  std::int64_t first = -1;
  std::string msg;
  for (std::size_t i = 0; i < bad_term.size(); ++i) {
    if (bad_term[i] >= 0 && (first < 0 || bad_term[i] < first)) {
      first = bad_term[i];
      msg = bad_msg[i];
    }
  }
  if (first >= 0) fail("index: " + msg);
  // 3. Pair table: the selected terms, counts within range.
  {
    const std::vector<std::int32_t> want = select_pair_terms(v.indptr, V, N);
    if (v.n_pair_terms != static_cast<std::int64_t>(want.size()) || !std::equal(want.begin(), want.end(), v.pair_terms))
      fail("index: pair_terms are not the frequent terms of the index");
    const std::int64_t PP = v.n_pair_terms * v.n_pair_terms;
    for (std::int64_t i = 0; i < PP; ++i) {
      if (v.pair_cf_od[i] < 0 || v.pair_cf_od[i] > T || v.pair_cf_uw[i] < 0 || v.pair_cf_uw[i] > T ||
          v.pair_max_od[i] < 0 || v.pair_max_od[i] > v.pair_cf_od[i] || v.pair_max_uw[i] < 0 ||
          v.pair_max_uw[i] > v.pair_cf_uw[i])
        fail("index: pair table entry " + std::to_string(i) + " is out of range");
    }
    // 4. The counts themselves, recomputed from the documents as build_index does (one pass
    // over the tokens of the frequent terms): an edited count would rank differently from the
    // twin, which counts windows at query time (found by fuzz/; issue 17).
    IndexArrays r;
    r.indptr.assign(v.indptr, v.indptr + V + 1);
    r.doc_offsets.assign(v.doc_offsets, v.doc_offsets + N + 1);
    r.doc_lengths.assign(v.doc_lengths, v.doc_lengths + N);
    r.doc_tokens.assign(v.doc_tokens, v.doc_tokens + T);
    build_pair_table(r, V, n_workers);
    for (std::int64_t i = 0; i < PP; ++i) {
      const auto k = static_cast<std::size_t>(i);
      if (r.pair_cf_od[k] != v.pair_cf_od[i] || r.pair_cf_uw[k] != v.pair_cf_uw[i] ||
          r.pair_max_od[k] != v.pair_max_od[i] || r.pair_max_uw[k] != v.pair_max_uw[i])
        fail("index: pair table entry " + std::to_string(i) + " does not match the documents");
    }
  }
}

std::int32_t min_positive_length(const IndexView& v) {
  std::int32_t m = 0;
  for (std::int64_t d = 0; d < v.n_docs; ++d) {
    std::int32_t L = v.doc_lengths[d];
    if (L > 0 && (m == 0 || L < m)) m = L;
  }
  return m;
}

}  // namespace pysynth::retrieval
