// SDM (Dirichlet) and BM25 (Lucene) batch retrieval with exact dynamic pruning.
//
// Per query, documents are visited in two phases (see `seed` and `maxscore`):
//   A. term at a time, rarest terms first: until k results are known, short posting lists are
//      scored whole, so the k-th score (the threshold) starts high; then lists are walked in
//      impact order (tf desc, |D| asc), stopping each tf as soon as its bound drops below the
//      threshold, while that stays cheap. Once the threshold is known, a document is first
//      bounded through the later lists it is in (forward cursors, visited in doc order): most
//      are dropped without reading them, and the rest are scored from the probes' counts
//      and the postings' positions;
//   B. document-at-a-time MaxScore (Turtle & Flood 1995) over the remaining term lists (split
//      into all postings / tf >= 2 for tighter bounds) and the window lists of the query's
//      adjacent pairs: lists whose summed bounds cannot reach the threshold are only probed
//      (galloping search).
// Every document that can still enter the top k is scored exactly, with the same floating-point
// operations, in the same order, as the Python twin. Window statistics of the query's adjacent
// pairs come from the index's frequent-pair table or are counted once per distinct pair of a
// sub-batch of queries.
#include "pysynth/sdm.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "pysynth/common.hpp"

namespace pysynth::retrieval {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Bounds are compared against the threshold minus this relative margin: bounds and exact scores
// are sums of a few dozen rounded terms (relative error ~1e-15), so 1e-9 keeps pruning exact.
constexpr double kMargin = 1e-9;
// Phase A (seeding) scores whole posting lists of at most this many documents.
constexpr std::int64_t kSeedList = 4096;
// ... and walks longer lists in impact order while that scores at most this many documents.
constexpr std::int64_t kImpactBudget = 1024;
// Phase B splits a term's list in two (all postings / tf >= 2) when it has at least this many
// postings, at most half of them have tf >= 2 and the bound of tf = 1 is at most half the
// term's bound (else the extra list costs more probes than the tighter bound saves).
constexpr std::int64_t kSplitList = 256;
// compute_pair reads the documents of the shorter list from the forward index when the longer
// list is at least this many times longer (else it gallops through the longer list).
constexpr std::int64_t kPairScanRatio = 16;
// Window lists of a pair are materialized up to this many documents (larger ones are "implicit":
// bounded through their two terms and counted from the positions of the postings).
constexpr std::size_t kPairListMax = 8192;
// Queries per sub-batch: the window lists of one sub-batch's distinct pairs are kept in memory.
constexpr std::size_t kSubBatch = 1 << 14;
// build_od_lists scans the forward index when the unlisted pairs' shorter posting lists, summed
// over the sub-batch's queries, reach this fraction of the collection's tokens.
constexpr double kOdScanRatio = 0.25;
constexpr int kLogLen = 256;   // log(L + mu) is tabulated for lengths below this
constexpr int kGainTable = 8;  // gains of tf = 1..8 are tabulated per query term

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

// Documents of a pair with at least one #uw:8 match (every #od:1 match is one too), ascending.
struct PairList {
  std::vector<std::int32_t> docs, od, uw;
};

struct PairStat {
  std::int64_t cf_od = 0, cf_uw = 0;
  std::int32_t max_od = 0, max_uw = 0;
  bool listed = false;  // the PairList is materialized
};

// A word of a rank map (see RankMaps).
struct RankWord {
  std::uint64_t bits;
  std::uint32_t base, pad;
};

struct Worker;

}  // namespace

struct SearchCache {
  std::mutex mu;
  std::size_t max_bytes = 0, bytes = 0;
  std::unordered_map<std::uint64_t, PairStat> stats;                         // pairs outside the pair table
  std::unordered_map<std::uint64_t, std::shared_ptr<const PairList>> lists;  // their window lists (listed)
  std::unordered_map<std::uint64_t, std::shared_ptr<const PairList>> od;     // #od:1 lists (build_od_lists)
  std::unordered_map<std::int32_t, std::shared_ptr<const std::vector<RankWord>>> ranks;
  std::shared_ptr<const std::vector<std::uint8_t>> len8;
  std::int32_t min_len = 1;                   // with len8: Context::min_len
  std::vector<std::unique_ptr<Worker>> idle;  // workers' scratch between calls
  std::size_t pair_bytes = 0;                 // of `bytes`, those of stats and lists
  std::int64_t pairs_reused = 0, od_reused = 0, ranks_reused = 0, clears = 0, pair_clears = 0;

  explicit SearchCache(std::size_t cap) : max_bytes(cap) {}
  ~SearchCache();
  // Under `mu`: account for `add` more bytes (of pair statistics / window lists when `pair`),
  // dropping first the pairs', then everything kept, when they would pass the bound; false
  // (keep nothing) when they can never fit.
  bool reserve(std::size_t add, bool pair = false);
};

namespace {

inline std::uint64_t pair_key(std::int32_t a, std::int32_t b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
}

inline void prefetch(const void* p) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 0, 1);
#else
  (void)p;
#endif
}

// First index in [lo, hi) with docs[index] >= d (hi if none): exponential then binary search.
inline std::int64_t gallop(const std::int32_t* docs, std::int64_t lo, std::int64_t hi, std::int32_t d) {
  if (lo >= hi || docs[lo] >= d) return lo;
  std::int64_t prev = lo, step = 1;
  while (lo + step < hi && docs[lo + step] < d) {
    prev = lo + step;
    step <<= 1;
  }
  // the answer is in (prev, end]: a branchless binary search (the probes are unpredictable)
  const std::int64_t end = std::min(lo + step, hi);
  const std::int32_t* first = docs + prev + 1;
  std::int64_t len = end - (prev + 1);
  while (len > 1) {
    const std::int64_t half = len / 2;
    first = first[half - 1] < d ? first + half : first;
    len -= half;
  }
  return (first - docs) + (len == 1 && *first < d ? 1 : 0);
}

// A pair's statistics and window list (up to cap documents), summed one document at a time in
// ascending order.
struct PairSum {
  PairStat s;
  PairList* list;
  std::size_t cap;
  bool keep;

  PairSum(PairList* l, std::size_t c) : list(l), cap(c), keep(l != nullptr) {}
  void add(std::int32_t d, std::int32_t od, std::int32_t uw) {
    s.cf_od += od;
    s.cf_uw += uw;
    s.max_od = std::max(s.max_od, od);
    s.max_uw = std::max(s.max_uw, uw);
    if (keep && uw > 0) {
      if (list->docs.size() == cap) {
        keep = false;
        *list = PairList();
      } else {
        list->docs.push_back(d);
        list->od.push_back(od);
        list->uw.push_back(uw);
      }
    }
  }
  PairStat done() {
    s.listed = keep;
    return s;
  }
};

// One pair of a group (see compute_group): its place in the pair table, the other term, and
// whether the shared term is the pair's left one.
struct GroupPair {
  std::uint32_t at;
  std::int32_t other;
  bool left;
};

// Window statistics of pairs that share the term s, s being the shorter list of each: one pass
// over s's documents in the forward index serves them all (stats[k], lists[k] of g[k]: the
// counts and the documents' order of compute_pair, whose scan of one pair is this with n = 1).
// Why: a KQGM query's middle term is in two adjacent pairs, and frequent terms pair with many
// others; at 3.17M questions the pairs of one sub-batch read 60M documents one pair at a time
// and 13M grouped, and compute_pair was 29 % of the K2Q pipeline's rank_of calls.
void compute_group(const IndexView& ix, std::int32_t s, const GroupPair* g, std::size_t n, PairStat* stats,
                   PairList* const* lists, std::size_t cap) {
  std::vector<std::int32_t> others(n);
  for (std::size_t k = 0; k < n; ++k) others[k] = g[k].other;
  std::sort(others.begin(), others.end());
  others.erase(std::unique(others.begin(), others.end()), others.end());
  const std::size_t no = others.size();
  // pairs of each distinct other term (CSR), and a 64-bit filter that rejects most tokens at once
  std::vector<std::uint32_t> first(no + 1, 0), members(n);
  std::vector<std::uint32_t> slot(n);
  std::uint64_t filter = 0;
  for (std::size_t k = 0; k < n; ++k) {
    slot[k] = static_cast<std::uint32_t>(std::lower_bound(others.begin(), others.end(), g[k].other) - others.begin());
    ++first[slot[k] + 1];
  }
  for (std::size_t j = 0; j < no; ++j) {
    first[j + 1] += first[j];
    filter |= std::uint64_t{1} << (static_cast<std::uint32_t>(others[j]) & 63u);
  }
  {
    std::vector<std::uint32_t> fill(first.begin(), first.end() - 1);
    for (std::size_t k = 0; k < n; ++k) members[fill[slot[k]]++] = static_cast<std::uint32_t>(k);
  }
  std::vector<PairSum> sums;
  sums.reserve(n);
  for (std::size_t k = 0; k < n; ++k) sums.emplace_back(lists[k], cap);
  std::vector<std::int32_t> A;
  std::vector<std::vector<std::int32_t>> B(no);
  std::vector<std::uint32_t> seen;
  const std::int64_t s0 = ix.indptr[s], s1 = ix.indptr[s + 1];
  for (std::int64_t p = s0; p < s1; ++p) {
    if (p + 8 < s1) prefetch(ix.doc_offsets + ix.doc_ids[p + 8]);
    if (p + 4 < s1) prefetch(ix.doc_tokens + ix.doc_offsets[ix.doc_ids[p + 4]]);
    const std::int32_t d = ix.doc_ids[p];
    const std::int64_t o0 = ix.doc_offsets[d], o1 = ix.doc_offsets[d + 1];
    A.clear();
    for (std::uint32_t j : seen) B[j].clear();
    seen.clear();
    for (std::int64_t o = o0; o < o1; ++o) {
      const std::int32_t t = ix.doc_tokens[o];
      const std::int32_t pos = static_cast<std::int32_t>(o - o0);
      if (t == s) {
        A.push_back(pos);
      } else if ((filter >> (static_cast<std::uint32_t>(t) & 63u)) & 1u) {
        const auto it = std::lower_bound(others.begin(), others.end(), t);
        if (it == others.end() || *it != t) continue;
        const std::uint32_t j = static_cast<std::uint32_t>(it - others.begin());
        if (B[j].empty()) seen.push_back(j);
        B[j].push_back(pos);
      }
    }
    if (A.empty()) continue;
    std::sort(seen.begin(), seen.end());
    for (std::uint32_t j : seen)
      for (std::uint32_t m = first[j]; m < first[j + 1]; ++m) {
        const std::uint32_t k = members[m];
        std::int32_t od, uw;
        if (g[k].left)
          window_counts(A.data(), A.size(), B[j].data(), B[j].size(), false, &od, &uw);
        else
          window_counts(B[j].data(), B[j].size(), A.data(), A.size(), false, &od, &uw);
        sums[k].add(d, od, uw);
      }
  }
  for (std::size_t k = 0; k < n; ++k) stats[k] = sums[k].done();
}

// Window statistics of (a, b) over the collection (galloping intersection of the two posting
// lists, driven by the shorter); fills *list when the pair's window list has <= cap documents.
PairStat compute_pair(const IndexView& ix, std::int32_t a, std::int32_t b, PairList* list, std::size_t cap) {
  PairSum sum(list, cap);
  auto add = [&](std::int32_t d, std::int32_t od, std::int32_t uw) { sum.add(d, od, uw); };
  const std::int64_t a0 = ix.indptr[a], a1 = ix.indptr[a + 1];
  if (a == b) {
    for (std::int64_t p = a0; p < a1; ++p) {
      const std::int32_t* A = ix.positions + ix.pos_indptr[p];
      const std::size_t na = static_cast<std::size_t>(ix.tfs[p]);
      add(ix.doc_ids[p], ordered_count(A, na, A, na, kOrderedWidth), ix.tfs[p]);
    }
  } else {
    const std::int64_t b0 = ix.indptr[b], b1 = ix.indptr[b + 1];
    const bool a_short = (a1 - a0) <= (b1 - b0);
    const std::int64_t s0 = a_short ? a0 : b0, s1 = a_short ? a1 : b1, l1 = a_short ? b1 : a1;
    std::int64_t l = a_short ? b0 : a0;
    if (l1 - l >= kPairScanRatio * (s1 - s0)) {
      // a short list against a much longer one: each document of the short list is read from the
      // forward index (the positions of both terms in one pass over its tokens) instead of
      // galloping through the long list (the gallops were ~3/4 of compute_pair's time, itself
      // 11 % of the 1M K2Q pipeline); the same counts, documents in the same order
      const GroupPair g{0, a_short ? b : a, a_short};
      PairList* const lists[1] = {list};
      PairStat st;
      compute_group(ix, a_short ? a : b, &g, 1, &st, lists, cap);
      return st;
    }
    for (std::int64_t p = s0; p < s1 && l < l1; ++p) {
      const std::int32_t d = ix.doc_ids[p];
      l = gallop(ix.doc_ids, l, l1, d);
      if (l == l1) break;
      if (ix.doc_ids[l] != d) continue;
      const std::int64_t pa = a_short ? p : l, pb = a_short ? l : p;
      const std::int32_t* A = ix.positions + ix.pos_indptr[pa];
      const std::int32_t* B = ix.positions + ix.pos_indptr[pb];
      const std::size_t na = static_cast<std::size_t>(ix.tfs[pa]), nb = static_cast<std::size_t>(ix.tfs[pb]);
      std::int32_t od, uw;
      window_counts(A, na, B, nb, false, &od, &uw);
      add(d, od, uw);
    }
  }
  return sum.done();
}

// Window statistics (and short window lists) of every distinct adjacent pair of a sub-batch of
// queries, computed once, in parallel.
struct PairTable {
  std::vector<std::uint64_t> keys;
  std::vector<PairStat> stats;
  std::vector<std::shared_ptr<const PairList>> lists;  // the window list of a listed pair
  // #od:1 lists of the pairs too frequent to list (build_od_lists): the documents with od > 0
  // and their od counts (uw left empty), when has_od[i]
  std::vector<std::shared_ptr<const PairList>> od_lists;
  std::vector<char> has_od;

  std::size_t find(std::int32_t a, std::int32_t b) const {
    return static_cast<std::size_t>(std::lower_bound(keys.begin(), keys.end(), pair_key(a, b)) - keys.begin());
  }
};

// `big` keeps, for the whole call, the statistics of the pairs whose window list is too long to
// materialize (the expensive ones): later sub-batches reuse them.
// Statistics of (a, b) from the index's frequent-pair table, when both terms are in it.
bool table_pair(const IndexView& ix, const std::vector<std::int32_t>& slot, std::int32_t a, std::int32_t b,
                PairStat* out) {
  if (slot.empty()) return false;
  const std::int32_t sa = slot[static_cast<std::size_t>(a)], sb = slot[static_cast<std::size_t>(b)];
  if (sa < 0 || sb < 0) return false;
  const std::size_t i =
      static_cast<std::size_t>(sa) * static_cast<std::size_t>(ix.n_pair_terms) + static_cast<std::size_t>(sb);
  out->cf_od = ix.pair_cf_od[i];
  out->cf_uw = ix.pair_cf_uw[i];
  out->max_od = ix.pair_max_od[i];
  out->max_uw = ix.pair_max_uw[i];
  out->listed = false;
  return true;
}

// Bytes a SearchCache counts for a pair's statistics and for a list (hash-map node included).
constexpr std::size_t kStatBytes = 64, kListBytes = 128;

void build_pair_table(PairTable& t, const IndexView& ix, const Queries& q, std::size_t qb, std::size_t qe, int workers,
                      std::unordered_map<std::uint64_t, PairStat>& big, const std::vector<std::int32_t>& slot,
                      SearchCache* cache) {
  t.keys.clear();
  for (std::size_t i = qb; i < qe; ++i)
    for (std::int64_t j = q.offsets[i]; j + 1 < q.offsets[i + 1]; ++j)
      t.keys.push_back(pair_key(q.ids[j], q.ids[j + 1]));
  std::sort(t.keys.begin(), t.keys.end());
  t.keys.erase(std::unique(t.keys.begin(), t.keys.end()), t.keys.end());
  t.stats.assign(t.keys.size(), PairStat());
  t.lists.assign(t.keys.size(), nullptr);
  std::vector<char> known(t.keys.size(), 0);
  std::unique_lock<std::mutex> lock;
  if (cache) lock = std::unique_lock<std::mutex>(cache->mu);
  for (std::size_t i = 0; i < t.keys.size(); ++i) {
    if (table_pair(ix, slot, static_cast<std::int32_t>(t.keys[i] >> 32),
                   static_cast<std::int32_t>(t.keys[i] & 0xffffffffu), &t.stats[i])) {
      known[i] = 2;
      continue;
    }
    auto it = big.find(t.keys[i]);
    if (it != big.end()) {
      t.stats[i] = it->second;
      known[i] = 1;
    } else if (cache) {
      auto c = cache->stats.find(t.keys[i]);
      if (c == cache->stats.end()) continue;
      auto l = c->second.listed ? cache->lists.find(t.keys[i]) : cache->lists.end();
      if (c->second.listed && l == cache->lists.end()) continue;
      t.stats[i] = c->second;
      if (c->second.listed) t.lists[i] = l->second;
      known[i] = 1;
      ++cache->pairs_reused;
    }
  }
  if (lock) lock.unlock();
  // the pairs to compute, grouped by their shorter term (ties: the left one, as compute_pair);
  // a group is computed in one pass over that term's documents (compute_group) when one of its
  // pairs would read them anyway (the other list >= kPairScanRatio times longer) or when it has
  // three or more pairs, else each pair by compute_pair
  struct Todo {
    std::int32_t s;
    std::uint32_t at;
    bool operator<(const Todo& o) const { return s != o.s ? s < o.s : at < o.at; }
  };
  std::vector<Todo> todo;
  for (std::size_t i = 0; i < t.keys.size(); ++i) {
    if (known[i]) continue;
    const std::int32_t a = static_cast<std::int32_t>(t.keys[i] >> 32);
    const std::int32_t b = static_cast<std::int32_t>(t.keys[i] & 0xffffffffu);
    const std::int64_t na = ix.indptr[a + 1] - ix.indptr[a], nb = ix.indptr[b + 1] - ix.indptr[b];
    todo.push_back({a == b ? -1 : (na <= nb ? a : b), static_cast<std::uint32_t>(i)});
  }
  std::sort(todo.begin(), todo.end());
  std::vector<std::pair<std::size_t, std::size_t>> items;  // ranges of todo: a group or one pair
  for (std::size_t u = 0; u < todo.size();) {
    std::size_t v = u + 1;
    while (v < todo.size() && todo[v].s == todo[u].s) ++v;
    bool scan = false;
    if (todo[u].s >= 0 && v - u >= 2) {
      const std::int64_t ns = ix.indptr[todo[u].s + 1] - ix.indptr[todo[u].s];
      for (std::size_t w = u; w < v && !scan; ++w) {
        const std::int32_t a = static_cast<std::int32_t>(t.keys[todo[w].at] >> 32);
        const std::int32_t b = static_cast<std::int32_t>(t.keys[todo[w].at] & 0xffffffffu);
        const std::int32_t o = a == todo[u].s ? b : a;
        scan = ix.indptr[o + 1] - ix.indptr[o] >= kPairScanRatio * ns;
      }
      scan = scan || v - u >= 3;
    }
    if (scan) {
      items.emplace_back(u, v);
    } else {
      for (std::size_t w = u; w < v; ++w) items.emplace_back(w, w + 1);
    }
    u = v;
  }
  parallel_for(items.size(), workers, 8, [&](std::size_t, std::size_t b, std::size_t e) {
    std::vector<GroupPair> g;
    std::vector<std::shared_ptr<PairList>> made;
    std::vector<PairList*> ptrs;
    std::vector<PairStat> st;
    for (std::size_t it = b; it < e; ++it) {
      const auto [u, v] = items[it];
      if (v - u == 1) {
        const std::size_t i = todo[u].at;
        auto list = std::make_shared<PairList>();
        t.stats[i] = compute_pair(ix, static_cast<std::int32_t>(t.keys[i] >> 32),
                                  static_cast<std::int32_t>(t.keys[i] & 0xffffffffu), list.get(), kPairListMax);
        if (t.stats[i].listed) t.lists[i] = std::move(list);
        continue;
      }
      g.clear();
      made.clear();
      ptrs.clear();
      for (std::size_t w = u; w < v; ++w) {
        const std::int32_t a = static_cast<std::int32_t>(t.keys[todo[w].at] >> 32);
        const std::int32_t bb = static_cast<std::int32_t>(t.keys[todo[w].at] & 0xffffffffu);
        const bool left = a == todo[u].s;
        g.push_back({todo[w].at, left ? bb : a, left});
        made.push_back(std::make_shared<PairList>());
        ptrs.push_back(made.back().get());
      }
      st.assign(g.size(), PairStat());
      compute_group(ix, todo[u].s, g.data(), g.size(), st.data(), ptrs.data(), kPairListMax);
      for (std::size_t k = 0; k < g.size(); ++k) {
        t.stats[g[k].at] = st[k];
        if (st[k].listed) t.lists[g[k].at] = std::move(made[k]);
      }
    }
  });
  for (std::size_t i = 0; i < t.keys.size(); ++i)
    if (!known[i] && !t.stats[i].listed) big.emplace(t.keys[i], t.stats[i]);
  if (!cache) return;
  lock = std::unique_lock<std::mutex>(cache->mu);
  for (std::size_t i = 0; i < t.keys.size(); ++i) {
    if (known[i]) continue;
    const std::size_t add = kStatBytes + (t.stats[i].listed ? kListBytes + 12 * t.lists[i]->docs.size() : 0);
    if (!cache->reserve(add, true)) continue;
    cache->stats[t.keys[i]] = t.stats[i];
    if (t.stats[i].listed) cache->lists[t.keys[i]] = t.lists[i];
  }
}

// The #od:1 lists of the sub-batch's unlisted pairs (window lists above kPairListMax: pairs of
// frequent words), from one scan of the forward index: od(a, b, D) is the number of positions
// p with D[p] = a and D[p + 1] = b (Galago's ordered window of width 1), so the scan finds every
// document with od > 0 and its exact count.
// Why: profiled on 1M synthetic questions with the pipeline's KQGM queries (frequent words such
// as "how" / "what", posting lists of 385k-475k documents), phase B was 41% of the search time
// and the slowest 8% of the queries did 57M of its 65M steps: a pair of two such terms has no
// window list, so its whole bound (#od:1 and #uw:8, ~0.025, ten times a frequent term's) held
// for every document of both terms, and ~200k documents per query had their windows counted.
// With the od list explicit, MaxScore bounds the others by the small #uw:8 part alone and
// visits only the od list (a few thousand documents). The scan (~15 ms over 7.4M tokens on
// one core) is paid once per sub-batch, and only when the pairs' shorter posting lists, summed
// over the queries, are long enough to repay it.
// With a cache, the lists kept from earlier calls are taken from it (whatever the sub-batch's
// size) and the scan runs for the others alone, if they repay it.
void build_od_lists(PairTable& t, const IndexView& ix, const Queries& q, std::size_t qb, std::size_t qe, int workers,
                    SearchCache* cache) {
  const std::size_t np = t.keys.size();
  t.od_lists.assign(np, nullptr);
  t.has_od.assign(np, 0);
  std::vector<char> want(np, 0);
  if (cache) {
    std::lock_guard<std::mutex> lock(cache->mu);
    for (std::size_t i = 0; i < np; ++i) {
      if (t.stats[i].listed || t.stats[i].max_od == 0) continue;
      auto it = cache->od.find(t.keys[i]);
      if (it == cache->od.end()) continue;
      t.od_lists[i] = it->second;
      t.has_od[i] = 1;
      ++cache->od_reused;
    }
  }
  double work = 0.0;
  for (std::size_t i = qb; i < qe; ++i)
    for (std::int64_t j = q.offsets[i]; j + 1 < q.offsets[i + 1]; ++j) {
      const std::int32_t a = q.ids[j], b = q.ids[j + 1];
      const std::size_t at = t.find(a, b);
      if (t.stats[at].listed || t.stats[at].max_od == 0 || t.has_od[at]) continue;
      want[at] = 1;
      work += static_cast<double>(std::min(ix.indptr[a + 1] - ix.indptr[a], ix.indptr[b + 1] - ix.indptr[b]));
    }
  if (work < kOdScanRatio * static_cast<double>(ix.n_tokens)) return;
  // wanted pairs grouped by left term: keys are sorted by (a, b)
  std::vector<std::uint64_t> sel;
  std::vector<std::uint32_t> sel_at;
  for (std::size_t i = 0; i < np; ++i)
    if (want[i]) {
      sel.push_back(t.keys[i]);
      sel_at.push_back(static_cast<std::uint32_t>(i));
    }
  // a bit per left term (fits L1) rejects most tokens; the others look their pair up in an
  // open-addressing table (a binary search among a frequent term's partners was 40 % of the scan)
  std::vector<std::uint64_t> left((static_cast<std::size_t>(ix.vocab_size) + 63) / 64, 0);
  int shift = 64;
  std::size_t cap = 1;
  while (cap < 2 * sel.size()) {
    cap <<= 1;
    --shift;
  }
  constexpr std::uint64_t kEmpty = ~std::uint64_t{0};  // never a pair_key (term ids are < 2^31)
  std::vector<std::uint64_t> hkey(cap, kEmpty);
  std::vector<std::uint32_t> hval(cap);
  const std::size_t mask = cap - 1;
  auto slot_of = [&](std::uint64_t key) {
    return shift >= 64 ? std::size_t{0} : static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift);
  };
  for (std::size_t k = 0; k < sel.size(); ++k) {
    const std::size_t a = static_cast<std::size_t>(sel[k] >> 32);
    left[a >> 6] |= std::uint64_t{1} << (a & 63);
    std::size_t h = slot_of(sel[k]);
    while (hkey[h] != kEmpty) h = (h + 1) & mask;
    hkey[h] = sel[k];
    hval[h] = sel_at[k];
  }
  struct Hit {
    std::uint32_t pair;
    std::int32_t doc, od;
  };
  constexpr std::size_t kChunks = 64;
  std::vector<std::vector<Hit>> hits(kChunks);
  const std::size_t N = static_cast<std::size_t>(ix.n_docs);
  parallel_for(kChunks, workers, 1, [&](std::size_t, std::size_t cb, std::size_t ce) {
    for (std::size_t c = cb; c < ce; ++c) {
      std::vector<Hit>& out = hits[c];
      for (std::size_t d = N * c / kChunks; d < N * (c + 1) / kChunks; ++d) {
        const std::int32_t* tok = ix.doc_tokens + ix.doc_offsets[d];
        const std::int64_t L = ix.doc_offsets[d + 1] - ix.doc_offsets[d];
        const std::size_t start = out.size();
        for (std::int64_t p = 0; p + 1 < L; ++p) {
          const std::size_t a = static_cast<std::size_t>(tok[p]);
          if (!((left[a >> 6] >> (a & 63)) & 1u)) continue;
          const std::uint64_t key = pair_key(tok[p], tok[p + 1]);
          std::size_t h = slot_of(key);
          while (hkey[h] != key && hkey[h] != kEmpty) h = (h + 1) & mask;
          if (hkey[h] != key) continue;
          const std::uint32_t pair = hval[h];
          bool merged = false;
          for (std::size_t h = start; h < out.size() && !merged; ++h)
            if (out[h].pair == pair) {
              ++out[h].od;
              merged = true;
            }
          if (!merged) out.push_back({pair, static_cast<std::int32_t>(d), 1});
        }
      }
    }
  });
  // chunks in order: each pair's documents ascending
  std::vector<std::size_t> size(np, 0);
  for (const auto& h : hits)
    for (const Hit& x : h) ++size[x.pair];
  std::vector<std::shared_ptr<PairList>> made(np);
  for (std::size_t i = 0; i < np; ++i)
    if (want[i]) {
      made[i] = std::make_shared<PairList>();
      made[i]->docs.reserve(size[i]);
      made[i]->od.reserve(size[i]);
    }
  for (const auto& h : hits)
    for (const Hit& x : h) {
      made[x.pair]->docs.push_back(x.doc);
      made[x.pair]->od.push_back(x.od);
    }
  std::unique_lock<std::mutex> lock;
  if (cache) lock = std::unique_lock<std::mutex>(cache->mu);
  for (std::size_t i = 0; i < np; ++i)
    if (want[i]) {
      t.has_od[i] = 1;
      t.od_lists[i] = made[i];
      if (cache && cache->reserve(kListBytes + 8 * size[i])) cache->od[t.keys[i]] = made[i];
    }
}

// Rank maps of the batch's long posting lists: bit d of a term's map is set when document d is
// in its list, and `base` counts the set bits of the earlier words, so the position of the
// first posting >= d (a cursor's lower bound) is base + popcount of the bits below d: one cache
// line instead of a gallop's dozen dependent loads.
// Why: after the od lists, gallops into lists of 100k-475k documents (phase A probing each
// document of a shorter list, phase B probing its non-essential lists) were 25% of the search
// time on 1M questions with KQGM queries (perf: gallop's two loops the two hottest lines).
inline std::int64_t rank_lb(const RankWord* r, std::int32_t d) {
  const RankWord& w = r[static_cast<std::uint32_t>(d) >> 6];
  return static_cast<std::int64_t>(w.base) +
         __builtin_popcountll(w.bits & ((std::uint64_t{1} << (static_cast<std::uint32_t>(d) & 63)) - 1));
}
inline bool rank_has(const RankWord* r, std::int32_t d) {
  return (r[static_cast<std::uint32_t>(d) >> 6].bits >> (static_cast<std::uint32_t>(d) & 63)) & 1;
}

struct RankMaps {
  std::vector<std::int32_t> of_term;  // term -> map index, -1: none
  std::vector<std::shared_ptr<const std::vector<RankWord>>> maps;
  const RankWord* get(std::int32_t t) const {
    if (of_term.empty()) return nullptr;
    const std::int32_t i = of_term[static_cast<std::size_t>(t)];
    return i < 0 ? nullptr : maps[static_cast<std::size_t>(i)]->data();
  }
};

// Maps for the terms with df >= max(kRankMin, N / 32) used by at least kRankUses queries of the
// batch (at most kRankTerms of them, the longest lists first): each costs N / 4 bytes. With a
// cache, every map kept from an earlier call is used too (it costs nothing more).
constexpr std::int64_t kRankMin = 4096;
constexpr int kRankUses = 4;
constexpr std::size_t kRankTerms = 256;

void build_rank_maps(RankMaps& rm, const IndexView& ix, const Queries& q, int workers, SearchCache* cache) {
  const std::int64_t min_df = std::max<std::int64_t>(kRankMin, ix.n_docs / 32);
  std::unordered_map<std::int32_t, int> uses;
  for (std::size_t i = 0; i < q.n; ++i)
    for (std::int64_t j = q.offsets[i]; j < q.offsets[i + 1]; ++j) {
      const std::int32_t t = q.ids[j];
      if (ix.indptr[t + 1] - ix.indptr[t] < min_df) continue;
      bool again = false;  // count a query once
      for (std::int64_t x = q.offsets[i]; x < j && !again; ++x) again = q.ids[x] == t;
      if (!again) ++uses[t];
    }
  std::vector<std::pair<std::int64_t, std::int32_t>> pick;
  std::vector<std::pair<std::int32_t, std::shared_ptr<const std::vector<RankWord>>>> kept;
  {
    std::unique_lock<std::mutex> lock;
    if (cache) lock = std::unique_lock<std::mutex>(cache->mu);
    for (const auto& [t, n] : uses) {
      if (cache) {
        auto it = cache->ranks.find(t);
        if (it != cache->ranks.end()) {
          kept.push_back({t, it->second});
          ++cache->ranks_reused;
          continue;
        }
      }
      if (n >= kRankUses) pick.push_back({-(ix.indptr[t + 1] - ix.indptr[t]), t});
    }
  }
  if (pick.empty() && kept.empty()) return;
  std::sort(pick.begin(), pick.end());
  if (pick.size() > kRankTerms) pick.resize(kRankTerms);
  rm.of_term.assign(static_cast<std::size_t>(ix.vocab_size), -1);
  rm.maps.clear();
  for (const auto& [t, m] : kept) {
    rm.of_term[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(rm.maps.size());
    rm.maps.push_back(m);
  }
  const std::size_t words = static_cast<std::size_t>(ix.n_docs) / 64 + 1;
  std::vector<std::shared_ptr<std::vector<RankWord>>> made(pick.size());
  parallel_for(pick.size(), workers, 1, [&](std::size_t, std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) {
      const std::int32_t t = pick[i].second;
      made[i] = std::make_shared<std::vector<RankWord>>(words, RankWord{0, 0, 0});
      std::vector<RankWord>& m = *made[i];
      for (std::int64_t p = ix.indptr[t]; p < ix.indptr[t + 1]; ++p) {
        const std::uint32_t d = static_cast<std::uint32_t>(ix.doc_ids[p]);
        m[d >> 6].bits |= std::uint64_t{1} << (d & 63);
      }
      std::uint32_t acc = 0;
      for (RankWord& w : m) {
        w.base = acc;
        acc += static_cast<std::uint32_t>(__builtin_popcountll(w.bits));
      }
    }
  });
  std::unique_lock<std::mutex> lock;
  if (cache) lock = std::unique_lock<std::mutex>(cache->mu);
  for (std::size_t i = 0; i < pick.size(); ++i) {
    rm.of_term[static_cast<std::size_t>(pick[i].second)] = static_cast<std::int32_t>(rm.maps.size());
    rm.maps.push_back(made[i]);
    if (cache && cache->reserve(kListBytes + words * sizeof(RankWord))) cache->ranks[pick[i].second] = made[i];
  }
}

// Collection-level constants of one search call.
struct Context {
  const IndexView& ix;
  ScoreParams p;
  double C = 0;      // |C| as a double
  double avgdl = 0;  // |C| / N
  std::int32_t min_len = 1;
  double lam_t = 0, lam_o = 0, lam_u = 0;
  const PairTable* pairs = nullptr;
  const RankMaps* ranks = nullptr;
  // document lengths clamped to 255: a 1-byte copy that stays in cache for the bounds (a clamped
  // length is never larger, so the bounds computed with it stay upper bounds)
  std::shared_ptr<const std::vector<std::uint8_t>> len8_owner;
  const std::uint8_t* len8 = nullptr;
  std::vector<double> log_len;  // log(L + mu), L < kLogLen: the length prior of the bounds

  Context(const IndexView& v, const ScoreParams& params, SearchCache* cache) : ix(v), p(params) {
    if (cache) {
      std::lock_guard<std::mutex> lock(cache->mu);
      len8_owner = cache->len8;
      min_len = cache->min_len;
    }
    if (!len8_owner) {
      auto l8 = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(ix.n_docs));
      for (std::int64_t d = 0; d < ix.n_docs; ++d)
        (*l8)[static_cast<std::size_t>(d)] = static_cast<std::uint8_t>(std::min<std::int32_t>(ix.doc_lengths[d], 255));
      len8_owner = l8;
      min_len = std::max<std::int32_t>(1, min_positive_length(ix));
      if (cache) {
        std::lock_guard<std::mutex> lock(cache->mu);
        if (cache->reserve(kListBytes + l8->size())) {
          cache->len8 = l8;
          cache->min_len = min_len;
        }
      }
    }
    len8 = len8_owner->data();
    log_len.resize(kLogLen);
    for (int L = 0; L < kLogLen; ++L) log_len[static_cast<std::size_t>(L)] = std::log(static_cast<double>(L) + p.mu);
    C = static_cast<double>(ix.n_tokens);
    avgdl = static_cast<double>(ix.n_tokens) / static_cast<double>(ix.n_docs);
    double total = p.w_unigram + p.w_ordered + p.w_unordered;
    lam_t = p.w_unigram / total;
    lam_o = p.w_ordered / total;
    lam_u = p.w_unordered / total;
  }
};

// One query, prepared: distinct terms ("slots"), distinct adjacent pairs, the constants of the
// exact score and the upper bounds used for pruning. Every score decomposes exactly (Zhai &
// Lafferty's rewriting of Dirichlet smoothing) as
//   SDM:  K + prior(|D|) + sum over components c of a_c * log1p(count_c / (mu * P_c))
//         with K = sum_c a_c * log(mu * P_c), prior(L) = -(sum_c a_c) * log(L + mu),
//         a_c = l_T / n per unigram occurrence, l_O / (n - 1) and l_U / (n - 1) per pair;
//   BM25: sum over occurrences of idf * tf / (tf + k1 * (1 - b + b * |D| / avgdl)),
// and every gain grows with its count, so count <= max count and |D| >= the shortest non-empty
// document give the bounds. Bounds only decide what to skip; scores come from `canonical`.
struct Plan {
  int n = 0, m = 0, np = 0;
  std::vector<std::int32_t> term, mult, occ_slot;
  std::vector<double> mu_p, idf, ub, gain_tab;
  std::vector<std::int32_t> pa, pb, pmult, pair_of;
  std::vector<const PairList*> plist;  // materialized window list, or nullptr
  std::vector<const PairList*> podl;   // #od:1 list of an unlisted pair (build_od_lists), or nullptr
  std::vector<double> pair_ub_uw;      // the #uw:8 part of pair_ub (the bound when podl is used)
  std::vector<double> mu_p_od, mu_p_uw, pair_ub;
  double alpha_t = 0, alpha_o = 0, alpha_u = 0, K = 0, lambda = 0, prior_max = 0, norm_min = 0;
  bool sdm = true;

  void clear() {
    n = m = np = 0;
    term.clear();
    mult.clear();
    occ_slot.clear();
    mu_p.clear();
    idf.clear();
    ub.clear();
    gain_tab.clear();
    pa.clear();
    pb.clear();
    pmult.clear();
    pair_of.clear();
    plist.clear();
    podl.clear();
    pair_ub_uw.clear();
    mu_p_od.clear();
    mu_p_uw.clear();
    pair_ub.clear();
  }

  double gain_raw(int s, std::int32_t tf) const {
    const double t = static_cast<double>(tf);
    if (sdm)
      return static_cast<double>(mult[static_cast<std::size_t>(s)]) * alpha_t *
             std::log1p(t / mu_p[static_cast<std::size_t>(s)]);
    return static_cast<double>(mult[static_cast<std::size_t>(s)]) * idf[static_cast<std::size_t>(s)] *
           (t / (norm_min + t));
  }
  double gain(int s, std::int32_t tf) const {
    return tf <= kGainTable ? gain_tab[static_cast<std::size_t>(s) * kGainTable + static_cast<std::size_t>(tf - 1)]
                            : gain_raw(s, tf);
  }
  // gain of a term count in a document of length len (BM25's depends on the length; SDM's does not)
  double gain_len(int s, std::int32_t tf, std::int32_t len, double k1, double b, double avgdl) const {
    if (sdm) return gain(s, tf);
    const double t = static_cast<double>(tf);
    return static_cast<double>(mult[static_cast<std::size_t>(s)]) * idf[static_cast<std::size_t>(s)] *
           (t / (k1 * ((1 - b) + b * len / avgdl) + t));
  }
  double pair_gain(int u, std::int32_t od, std::int32_t uw) const {
    const std::size_t i = static_cast<std::size_t>(u);
    return static_cast<double>(pmult[i]) * (alpha_o * std::log1p(static_cast<double>(od) / mu_p_od[i]) +
                                            alpha_u * std::log1p(static_cast<double>(uw) / mu_p_uw[i]));
  }
  double od_gain(int u, std::int32_t od) const {
    const std::size_t i = static_cast<std::size_t>(u);
    return static_cast<double>(pmult[i]) * alpha_o * std::log1p(static_cast<double>(od) / mu_p_od[i]);
  }
  const double* log_len = nullptr;  // log(L + mu) for L < kLogLen (Context::log_len)
  double prior(std::int32_t len, double mu) const {
    if (!sdm) return 0.0;
    return -lambda * (len < kLogLen ? log_len[len] : std::log(static_cast<double>(len) + mu));
  }
};

// A posting list of the document-at-a-time phase: a term's postings (whole, or split into its
// postings with the bound of tf = 1 plus its high layer with the rest), or a pair's window list.
// PairOd: an unlisted pair's #od:1 list (its #uw:8 part stays implicit).
enum class Kind : std::uint8_t { Term, TermLow, TermHigh, Pair, PairOd };

struct Comp {
  const std::int32_t* docs;
  std::int64_t cur, end;
  const std::int32_t* c1;  // tf (term) or od (pair)
  const std::int32_t* c2;  // uw (pair)
  int id;                  // slot or pair index
  Kind kind;
  double ub;
  const RankWord* rank = nullptr;  // rank map of a term's whole list (docs = ix.doc_ids), or nullptr
  std::int64_t start = 0;          // the list's first posting
  bool pair() const { return kind == Kind::Pair; }
  bool term_postings() const { return kind == Kind::Term || kind == Kind::TermLow; }
};

struct Probe {
  std::int64_t cur, end;
  int slot;
  const RankWord* rank;  // the list's rank map, or nullptr
  std::int64_t start;    // the list's first posting
};

struct Worker {
  std::vector<std::uint32_t> stamp;
  std::uint32_t cur = 0;
  std::vector<std::int32_t> slot_of;  // dense term -> slot map, only for queries of > 16 terms
  Plan plan;
  std::vector<std::int32_t> tf, od, uw, slot_at, pos_start, pos_fill, pos_flat;
  std::vector<std::int64_t> post;  // posting index of each present slot (phase B)
  std::vector<double> f_slot, f_od, f_uw, v_slot;
  std::vector<std::pair<double, std::int32_t>> heap;
  std::unordered_map<std::int32_t, std::int32_t> slot_map;
  // phase B scratch
  std::vector<Comp> comps;
  std::vector<int> order;
  std::vector<char> done_slot, found;
  std::vector<double> cum, ipair_ub;
  std::vector<std::uint64_t> ipair_mask;
  std::vector<int> ipair;
  // phase A probes of the later lists
  std::vector<Probe> probe;
  std::vector<std::int64_t> gather;
  std::vector<std::uint64_t> probe_pair_mask;
  std::vector<double> probe_pair_ub;

  // log((count + mu_p) / (L + mu)) of component c (slot, then od and uw of each pair), memoized
  // per query for count < 4 and L < 64: the same value as computing it again, at a fraction of
  // the cost (most documents repeat a few (count, length) combinations).
  std::vector<double> logc;
  std::vector<std::uint32_t> logc_gen;

  double flog(std::size_t c, std::int32_t count, std::int32_t L, double mu_p, double mu) {
    if (count < 4 && L < 64) {
      const std::size_t key = (c * 4 + static_cast<std::size_t>(count)) * 64 + static_cast<std::size_t>(L);
      if (key < logc.size()) {
        if (logc_gen[key] != cur) {
          logc_gen[key] = cur;
          logc[key] = std::log((static_cast<double>(count) + mu_p) / (static_cast<double>(L) + mu));
        }
        return logc[key];
      }
    }
    return std::log((static_cast<double>(count) + mu_p) / (static_cast<double>(L) + mu));
  }

  void next_query(std::size_t n_docs) {
    if (stamp.size() != n_docs) {
      stamp.assign(n_docs, 0);
      cur = 0;
    }
    if (++cur == 0) {
      std::fill(stamp.begin(), stamp.end(), 0u);
      std::fill(logc_gen.begin(), logc_gen.end(), 0u);
      cur = 1;
    }
  }
};

// Window counts of pair u (od / uw) from the positions of its two terms' postings W.post (for
// the terms with W.tf > 0; 0 when one is absent).
void count_windows(const IndexView& ix, Worker& W, int u) {
  const Plan& P = W.plan;
  const std::size_t uu = static_cast<std::size_t>(u);
  const int sa = P.pa[uu], sb = P.pb[uu];
  const std::int32_t ta = W.tf[static_cast<std::size_t>(sa)], tb = W.tf[static_cast<std::size_t>(sb)];
  W.od[uu] = W.uw[uu] = 0;
  if (ta == 0 || tb == 0) return;
  const std::int32_t* A = ix.positions + ix.pos_indptr[W.post[static_cast<std::size_t>(sa)]];
  const std::int32_t* B = ix.positions + ix.pos_indptr[W.post[static_cast<std::size_t>(sb)]];
  window_counts(A, static_cast<std::size_t>(ta), B, static_cast<std::size_t>(tb), sa == sb, &W.od[uu], &W.uw[uu]);
}

inline bool better(const std::pair<double, std::int32_t>& x, const std::pair<double, std::int32_t>& y) {
  return x.first > y.first || (x.first == y.first && x.second < y.second);
}
// `better` as a type, so the heap operations inline it (a function pointer does not)
struct Better {
  bool operator()(const std::pair<double, std::int32_t>& x, const std::pair<double, std::int32_t>& y) const {
    return better(x, y);
  }
};

inline double cut_of(double theta, double K) { return theta - kMargin * (1.0 + std::fabs(theta) + std::fabs(K)); }

void prepare(const Context& ctx, Worker& W, const std::int32_t* q, int n) {
  Plan& P = W.plan;
  P.clear();
  P.sdm = ctx.p.model == Model::Sdm;
  P.log_len = ctx.log_len.data();
  P.n = n;
  const IndexView& ix = ctx.ix;
  const double mu = ctx.p.mu;
  // distinct terms, in order of first occurrence
  P.occ_slot.resize(static_cast<std::size_t>(n));
  W.slot_map.clear();
  for (int i = 0; i < n; ++i) {
    const std::int32_t t = q[i];
    int s = -1;
    if (n <= 16) {
      for (int j = 0; j < P.m; ++j)
        if (P.term[static_cast<std::size_t>(j)] == t) {
          s = j;
          break;
        }
    } else {
      auto it = W.slot_map.find(t);
      if (it != W.slot_map.end()) s = it->second;
    }
    if (s < 0) {
      s = P.m++;
      P.term.push_back(t);
      P.mult.push_back(0);
      if (n > 16) W.slot_map.emplace(t, s);
    }
    ++P.mult[static_cast<std::size_t>(s)];
    P.occ_slot[static_cast<std::size_t>(i)] = s;
  }
  const int m = P.m;
  const std::int32_t Lmin = ctx.min_len;
  if (P.sdm) {
    P.mu_p.resize(static_cast<std::size_t>(m));
    for (int s = 0; s < m; ++s) {
      const std::int64_t cf = ix.cf[P.term[static_cast<std::size_t>(s)]];
      const double prob = cf > 0 ? static_cast<double>(cf) / ctx.C : 0.5 / ctx.C;
      P.mu_p[static_cast<std::size_t>(s)] = mu * prob;
    }
    if (n >= 2) {
      P.alpha_t = ctx.lam_t / n;
      P.alpha_o = ctx.lam_o / (n - 1);
      P.alpha_u = ctx.lam_u / (n - 1);
    } else {
      P.alpha_t = 1.0 / n;
      P.alpha_o = P.alpha_u = 0.0;
    }
    P.pair_of.resize(static_cast<std::size_t>(std::max(0, n - 1)));
    std::unordered_map<std::uint64_t, int> seen;
    for (int j = 0; j + 1 < n; ++j) {
      const int sa = P.occ_slot[static_cast<std::size_t>(j)], sb = P.occ_slot[static_cast<std::size_t>(j + 1)];
      int u = -1;
      if (n <= 16) {
        for (int v = 0; v < P.np; ++v)
          if (P.pa[static_cast<std::size_t>(v)] == sa && P.pb[static_cast<std::size_t>(v)] == sb) {
            u = v;
            break;
          }
      } else {
        auto it = seen.find(pair_key(sa, sb));
        if (it != seen.end()) u = it->second;
      }
      if (u < 0) {
        u = P.np++;
        if (n > 16) seen.emplace(pair_key(sa, sb), u);
        P.pa.push_back(sa);
        P.pb.push_back(sb);
        P.pmult.push_back(0);
        const std::size_t at = ctx.pairs->find(q[j], q[j + 1]);
        const PairStat& st = ctx.pairs->stats[at];
        const double p_od = st.cf_od > 0 ? static_cast<double>(st.cf_od) / ctx.C : 0.5 / ctx.C;
        const double p_uw = st.cf_uw > 0 ? static_cast<double>(st.cf_uw) / ctx.C : 0.5 / ctx.C;
        P.mu_p_od.push_back(mu * p_od);
        P.mu_p_uw.push_back(mu * p_uw);
        P.plist.push_back(st.listed ? ctx.pairs->lists[at].get() : nullptr);
        P.podl.push_back(!st.listed && !ctx.pairs->has_od.empty() && ctx.pairs->has_od[at]
                             ? ctx.pairs->od_lists[at].get()
                             : nullptr);
        P.pair_ub.push_back(P.alpha_o * std::log1p(static_cast<double>(st.max_od) / (mu * p_od)) +
                            P.alpha_u * std::log1p(static_cast<double>(st.max_uw) / (mu * p_uw)));
        P.pair_ub_uw.push_back(P.alpha_u * std::log1p(static_cast<double>(st.max_uw) / (mu * p_uw)));
      }
      ++P.pmult[static_cast<std::size_t>(u)];
      P.pair_of[static_cast<std::size_t>(j)] = u;
    }
    for (int u = 0; u < P.np; ++u) {
      P.pair_ub[static_cast<std::size_t>(u)] *= static_cast<double>(P.pmult[static_cast<std::size_t>(u)]);
      P.pair_ub_uw[static_cast<std::size_t>(u)] *= static_cast<double>(P.pmult[static_cast<std::size_t>(u)]);
    }
    double K = 0.0;
    for (int i = 0; i < n; ++i)
      K += P.alpha_t * std::log(P.mu_p[static_cast<std::size_t>(P.occ_slot[static_cast<std::size_t>(i)])]);
    for (int j = 0; j + 1 < n; ++j) {
      const std::size_t u = static_cast<std::size_t>(P.pair_of[static_cast<std::size_t>(j)]);
      K += P.alpha_o * std::log(P.mu_p_od[u]) + P.alpha_u * std::log(P.mu_p_uw[u]);
    }
    P.K = K;
    P.lambda = n * P.alpha_t + (n - 1) * (P.alpha_o + P.alpha_u);
    P.prior_max = -P.lambda * std::log(static_cast<double>(Lmin) + mu);
  } else {
    const std::int64_t N = ix.n_docs;
    P.idf.resize(static_cast<std::size_t>(m));
    for (int s = 0; s < m; ++s) {
      const std::int32_t t = P.term[static_cast<std::size_t>(s)];
      const std::int64_t df = ix.indptr[t + 1] - ix.indptr[t];
      P.idf[static_cast<std::size_t>(s)] =
          std::log(1.0 + (static_cast<double>(N - df) + 0.5) / (static_cast<double>(df) + 0.5));
    }
    P.norm_min = ctx.p.k1 * ((1 - ctx.p.b) + ctx.p.b * Lmin / ctx.avgdl);
    P.K = 0.0;
    P.lambda = 0.0;
    P.prior_max = 0.0;
  }
  P.ub.resize(static_cast<std::size_t>(m));
  P.gain_tab.resize(static_cast<std::size_t>(m) * kGainTable);
  for (int s = 0; s < m; ++s) {
    const std::int32_t mt = ix.max_tf[P.term[static_cast<std::size_t>(s)]];
    P.ub[static_cast<std::size_t>(s)] = mt > 0 ? P.gain_raw(s, mt) : 0.0;
    for (int t = 1; t <= kGainTable; ++t)
      P.gain_tab[static_cast<std::size_t>(s) * kGainTable + static_cast<std::size_t>(t - 1)] = P.gain_raw(s, t);
  }
  if (n > 16) {
    if (W.slot_of.size() != static_cast<std::size_t>(ix.vocab_size))
      W.slot_of.assign(static_cast<std::size_t>(ix.vocab_size), -1);
    for (int s = 0; s < m; ++s) W.slot_of[static_cast<std::size_t>(P.term[static_cast<std::size_t>(s)])] = s;
  }
  W.tf.assign(static_cast<std::size_t>(m), 0);
  W.od.assign(static_cast<std::size_t>(P.np), 0);
  W.uw.assign(static_cast<std::size_t>(P.np), 0);
  W.post.assign(static_cast<std::size_t>(m), 0);
  if (P.sdm) {
    const std::size_t need = (static_cast<std::size_t>(m) + 2 * static_cast<std::size_t>(P.np)) * 4 * 64;
    if (W.logc.size() < need) {
      W.logc.resize(need);
      W.logc_gen.resize(need, 0u);
    }
  }
}

void unprepare(Worker& W) {
  if (W.plan.n > 16)
    for (int s = 0; s < W.plan.m; ++s)
      W.slot_of[static_cast<std::size_t>(W.plan.term[static_cast<std::size_t>(s)])] = -1;
}

// The exact score from the counts of document of length L (tf per slot, od / uw per distinct
// pair): the twin's operations, in the twin's order.
double canonical(const Context& ctx, Worker& W, std::int32_t L) {
  const Plan& P = W.plan;
  const int m = P.m, n = P.n;
  if (P.sdm) {
    const double mu = ctx.p.mu;
    W.f_slot.resize(static_cast<std::size_t>(m));
    for (int s = 0; s < m; ++s)
      W.f_slot[static_cast<std::size_t>(s)] = W.flog(static_cast<std::size_t>(s), W.tf[static_cast<std::size_t>(s)], L,
                                                     P.mu_p[static_cast<std::size_t>(s)], mu);
    double st = 0.0;
    for (int i = 0; i < n; ++i) st += W.f_slot[static_cast<std::size_t>(P.occ_slot[static_cast<std::size_t>(i)])];
    if (n == 1) return st / n;
    W.f_od.resize(static_cast<std::size_t>(P.np));
    W.f_uw.resize(static_cast<std::size_t>(P.np));
    for (int u = 0; u < P.np; ++u) {
      const std::size_t uu = static_cast<std::size_t>(u);
      W.f_od[uu] = W.flog(static_cast<std::size_t>(m) + 2 * uu, W.od[uu], L, P.mu_p_od[uu], mu);
      W.f_uw[uu] = W.flog(static_cast<std::size_t>(m) + 2 * uu + 1, W.uw[uu], L, P.mu_p_uw[uu], mu);
    }
    double so = 0.0, su = 0.0;
    for (int j = 0; j + 1 < n; ++j) {
      const std::size_t u = static_cast<std::size_t>(P.pair_of[static_cast<std::size_t>(j)]);
      so += W.f_od[u];
      su += W.f_uw[u];
    }
    return ctx.lam_t * (st / n) + ctx.lam_o * (so / (n - 1)) + ctx.lam_u * (su / (n - 1));
  }
  const double k1 = ctx.p.k1, b = ctx.p.b;
  W.v_slot.resize(static_cast<std::size_t>(m));
  for (int s = 0; s < m; ++s) {
    const std::int32_t t = W.tf[static_cast<std::size_t>(s)];
    const double tfd = static_cast<double>(t);
    W.v_slot[static_cast<std::size_t>(s)] =
        t > 0 ? P.idf[static_cast<std::size_t>(s)] * (tfd / (k1 * ((1 - b) + b * L / ctx.avgdl) + tfd)) : 0.0;
  }
  double score = 0.0;
  for (int i = 0; i < n; ++i) {
    const std::size_t s = static_cast<std::size_t>(P.occ_slot[static_cast<std::size_t>(i)]);
    if (W.tf[s] > 0) score += W.v_slot[s];
  }
  return score;
}

// Exact score of document d, counting by one scan of its tokens; *matched tells whether d
// contains at least one query term.
double eval(const Context& ctx, Worker& W, std::int32_t d, bool* matched) {
  const Plan& P = W.plan;
  const IndexView& ix = ctx.ix;
  const std::int64_t off = ix.doc_offsets[d];
  const std::int32_t L = static_cast<std::int32_t>(ix.doc_offsets[d + 1] - off);
  const std::int32_t* toks = ix.doc_tokens + off;
  const int m = P.m, n = P.n;
  std::fill(W.tf.begin(), W.tf.end(), 0);
  const bool need_pos = P.sdm && n >= 2;
  if (need_pos && W.slot_at.size() < static_cast<std::size_t>(L)) W.slot_at.resize(static_cast<std::size_t>(L));
  int hits = 0;
  for (std::int32_t i = 0; i < L; ++i) {
    const std::int32_t t = toks[i];
    int s = -1;
    if (n <= 16) {
      for (int j = 0; j < m; ++j)
        if (P.term[static_cast<std::size_t>(j)] == t) {
          s = j;
          break;
        }
    } else {
      s = W.slot_of[static_cast<std::size_t>(t)];
    }
    if (s >= 0) {
      ++W.tf[static_cast<std::size_t>(s)];
      ++hits;
    }
    if (need_pos) W.slot_at[static_cast<std::size_t>(i)] = s;
  }
  if (matched) *matched = hits > 0;
  if (need_pos) {
    bool any_pair = false;
    for (int u = 0; u < P.np && !any_pair; ++u)
      any_pair = W.tf[static_cast<std::size_t>(P.pa[static_cast<std::size_t>(u)])] > 0 &&
                 W.tf[static_cast<std::size_t>(P.pb[static_cast<std::size_t>(u)])] > 0;
    if (any_pair) {
      W.pos_start.assign(static_cast<std::size_t>(m) + 1, 0);
      for (int s = 0; s < m; ++s)
        W.pos_start[static_cast<std::size_t>(s) + 1] =
            W.pos_start[static_cast<std::size_t>(s)] + W.tf[static_cast<std::size_t>(s)];
      W.pos_fill.assign(W.pos_start.begin(), W.pos_start.end() - 1);
      W.pos_flat.resize(static_cast<std::size_t>(hits));
      for (std::int32_t i = 0; i < L; ++i) {
        const int s = W.slot_at[static_cast<std::size_t>(i)];
        if (s >= 0) W.pos_flat[static_cast<std::size_t>(W.pos_fill[static_cast<std::size_t>(s)]++)] = i;
      }
    }
    for (int u = 0; u < P.np; ++u) {
      const std::size_t uu = static_cast<std::size_t>(u);
      const int sa = P.pa[uu], sb = P.pb[uu];
      const std::int32_t ta = W.tf[static_cast<std::size_t>(sa)], tb = W.tf[static_cast<std::size_t>(sb)];
      W.od[uu] = W.uw[uu] = 0;
      if (ta > 0 && tb > 0) {
        const std::int32_t* A = W.pos_flat.data() + W.pos_start[static_cast<std::size_t>(sa)];
        const std::int32_t* B = W.pos_flat.data() + W.pos_start[static_cast<std::size_t>(sb)];
        window_counts(A, static_cast<std::size_t>(ta), B, static_cast<std::size_t>(tb), sa == sb, &W.od[uu], &W.uw[uu]);
      }
    }
  }
  return canonical(ctx, W, L);
}

// Result collectors. cut() is the value a document's upper bound must reach to matter.
struct TopK {
  std::vector<std::pair<double, std::int32_t>>& heap;  // front = worst kept result
  std::size_t k;
  double K;
  double cut_value = -kInf;

  TopK(std::vector<std::pair<double, std::int32_t>>& h, std::size_t kk, double KK) : heap(h), k(kk), K(KK) {
    heap.clear();
  }
  bool full() const { return heap.size() >= k; }
  double cut() const { return cut_value; }
  bool done() const { return false; }
  bool accepts(double s, std::int32_t d) const { return heap.size() < k || better({s, d}, heap.front()); }
  void offer(double s, std::int32_t d) {
    std::pair<double, std::int32_t> x{s, d};
    if (heap.size() < k) {
      heap.push_back(x);
      std::push_heap(heap.begin(), heap.end(), Better());
      if (heap.size() == k) cut_value = cut_of(heap.front().first, K);
    } else if (better(x, heap.front())) {
      // replace the worst kept result and sift it down (one pass instead of pop + push)
      const std::size_t n = heap.size();
      std::size_t i = 0;
      for (;;) {
        std::size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && better(heap[c], heap[c + 1])) ++c;  // the worse child
        if (!better(x, heap[c])) break;                      // x is no better than it: stays above
        heap[i] = heap[c];
        i = c;
      }
      heap[i] = x;
      cut_value = cut_of(heap.front().first, K);
    }
  }
};

struct RankCount {
  std::pair<double, std::int32_t> target;
  std::int64_t limit;
  std::int64_t count = 0;
  double cut_value;

  RankCount(double s, std::int32_t d, std::int64_t n, double K) : target(s, d), limit(n), cut_value(cut_of(s, K)) {}
  bool full() const { return true; }
  double cut() const { return cut_value; }
  bool done() const { return count >= limit; }
  bool accepts(double s, std::int32_t d) const { return d != target.second && better({s, d}, target); }
  void offer(double s, std::int32_t d) {
    if (d != target.second && better({s, d}, target)) ++count;
  }
};

// Phase A, term at a time, highest upper bound first (rarest terms first). A list finished here
// is "done": every document of it that can still enter the results has been scored.
//  * While fewer than k results are known, a short list (<= kSeedList) is visited whole.
//  * Otherwise the list is walked in impact order (tf desc, |D| asc): a document met here holds
//    none of the terms of the lists done before (those were handled there), so its score is at
//    most base(|D|) + gain(tf, |D|) + rest, rest bounding every later list and every pair among
//    this term and the later ones; inside one tf the bound falls as |D| grows, so the walk jumps
//    to the next tf as soon as it drops below the threshold. Once the threshold is known, the
//    documents whose bound reaches it are counted (binary searches per tf): up to kImpactBudget
//    of them are gathered and visited in doc order; more, and phase A stops and leaves the list
//    to phase B.
//  * The last list, when every earlier list was scored whole and no pair involves only it: every
//    unscored document holds this term only, so its score is a function of (tf, |D|) alone;
//    each (tf, |D|) group is scored once and its documents (ascending ids) are taken while they
//    beat the k-th result.
template <class Sink>
void seed(const Context& ctx, Worker& W, Sink& sink) {
  const Plan& P = W.plan;
  const IndexView& ix = ctx.ix;
  const int m = P.m;
  const double mu = ctx.p.mu, k1 = ctx.p.k1, b = ctx.p.b;
  std::vector<int>& order = W.order;
  order.resize(static_cast<std::size_t>(m));
  for (int s = 0; s < m; ++s) order[static_cast<std::size_t>(s)] = s;
  std::stable_sort(order.begin(), order.end(),
                   [&](int x, int y) { return P.ub[static_cast<std::size_t>(x)] > P.ub[static_cast<std::size_t>(y)]; });
  std::vector<int> rank(static_cast<std::size_t>(m));
  for (int r = 0; r < m; ++r) rank[static_cast<std::size_t>(order[static_cast<std::size_t>(r)])] = r;
  // rest[r]: bound of the components a document can have when it holds terms of order[r..] only
  std::vector<double> rest(static_cast<std::size_t>(m) + 1, 0.0);
  std::vector<char> self_pair(static_cast<std::size_t>(m), 0);
  {
    std::vector<double> add(static_cast<std::size_t>(m), 0.0);
    for (int r = 0; r < m; ++r)
      add[static_cast<std::size_t>(r)] = P.ub[static_cast<std::size_t>(order[static_cast<std::size_t>(r)])];
    for (int u = 0; u < P.np; ++u) {
      const int sa = P.pa[static_cast<std::size_t>(u)], sb = P.pb[static_cast<std::size_t>(u)];
      add[static_cast<std::size_t>(std::min(rank[static_cast<std::size_t>(sa)], rank[static_cast<std::size_t>(sb)]))] +=
          P.pair_ub[static_cast<std::size_t>(u)];
      if (sa == sb && P.pair_ub[static_cast<std::size_t>(u)] > 0) self_pair[static_cast<std::size_t>(sa)] = 1;
    }
    for (int r = m - 1; r >= 0; --r)
      rest[static_cast<std::size_t>(r)] = rest[static_cast<std::size_t>(r) + 1] + add[static_cast<std::size_t>(r)];
  }
  int last = -1;  // rank of the last non-empty list
  for (int r = 0; r < m; ++r) {
    const std::int32_t t = P.term[static_cast<std::size_t>(order[static_cast<std::size_t>(r)])];
    if (ix.indptr[t + 1] > ix.indptr[t]) last = r;
  }
  bool all_whole = true;  // every list done so far was scored whole (all its documents stamped)
  for (int r = 0; r < m; ++r) {
    if (sink.done()) return;
    const int s = order[static_cast<std::size_t>(r)];
    const std::int32_t t = P.term[static_cast<std::size_t>(s)];
    const std::int64_t p0 = ix.indptr[t], p1 = ix.indptr[t + 1], df = p1 - p0;
    if (df == 0) {
      W.done_slot[static_cast<std::size_t>(s)] = 1;
      continue;
    }
    const double rest_after = rest[static_cast<std::size_t>(r)] - P.ub[static_cast<std::size_t>(s)];
    if (sink.full() && P.K + P.prior_max + rest[static_cast<std::size_t>(r)] < sink.cut()) {
      for (int x = r; x < m; ++x) W.done_slot[static_cast<std::size_t>(order[static_cast<std::size_t>(x)])] = 1;
      return;  // no document of the remaining lists can enter
    }
    // Once the threshold is known, a document is first bounded through the later lists it is
    // in (probed in doc order, cursors only move forward, highest bound first): most hold
    // none of them and are dropped without reading the document.
    W.probe.clear();
    const bool probing = m <= 64;
    if (probing) {
      for (int x = r + 1; x < m; ++x) {
        const int sx = order[static_cast<std::size_t>(x)];
        const std::int32_t tx = P.term[static_cast<std::size_t>(sx)];
        if (ix.indptr[tx + 1] > ix.indptr[tx])
          W.probe.push_back({ix.indptr[tx], ix.indptr[tx + 1], sx, ctx.ranks->get(tx), ix.indptr[tx]});
      }
      W.probe_pair_mask.clear();
      W.probe_pair_ub.clear();
      for (int u = 0; u < P.np; ++u) {
        const int sa = P.pa[static_cast<std::size_t>(u)], sb = P.pb[static_cast<std::size_t>(u)];
        if (rank[static_cast<std::size_t>(sa)] < r || rank[static_cast<std::size_t>(sb)] < r) continue;
        if (P.pair_ub[static_cast<std::size_t>(u)] <= 0.0) continue;
        W.probe_pair_mask.push_back((std::uint64_t{1} << sa) | (std::uint64_t{1} << sb));
        W.probe_pair_ub.push_back(P.pair_ub[static_cast<std::size_t>(u)]);
      }
    }
    // Probe the later lists for document d (of length len, tf of this term), highest bound
    // first, recording their tfs in W.tf; with a threshold (full), stop as soon as the bound
    // through what is known drops below it and return true (d cannot enter).
    auto refuted = [&](std::int32_t d, std::int32_t tf, std::int32_t len, bool full, double cut) {
      std::fill(W.tf.begin(), W.tf.end(), 0);
      W.tf[static_cast<std::size_t>(s)] = tf;
      double acc = P.K + P.prior(len, mu) + P.gain_len(s, tf, len, k1, b, ctx.avgdl);
      auto ub_of = [&](int slot) {  // BM25's bound depends on the length
        return P.sdm ? P.ub[static_cast<std::size_t>(slot)]
                     : P.gain_len(slot, ix.max_tf[P.term[static_cast<std::size_t>(slot)]], len, k1, b, ctx.avgdl);
      };
      double rem = 0.0;
      if (full)
        for (const Probe& pr : W.probe) rem += ub_of(pr.slot);
      std::uint64_t possible = ~std::uint64_t{0};
      auto pairs = [&]() {
        double x = 0.0;
        for (std::size_t u = 0; u < W.probe_pair_mask.size(); ++u)
          if ((W.probe_pair_mask[u] & possible) == W.probe_pair_mask[u]) x += W.probe_pair_ub[u];
        return x;
      };
      for (Probe& pr : W.probe) {
        if (full && acc + rem + pairs() < cut) return true;
        bool has;
        if (pr.rank != nullptr) {
          pr.cur = pr.start + rank_lb(pr.rank, d);
          has = rank_has(pr.rank, d);
        } else {
          pr.cur = gallop(ix.doc_ids, pr.cur, pr.end, d);
          has = pr.cur < pr.end && ix.doc_ids[pr.cur] == d;
        }
        if (full) rem -= ub_of(pr.slot);
        if (has) {
          W.tf[static_cast<std::size_t>(pr.slot)] = ix.tfs[pr.cur];
          W.post[static_cast<std::size_t>(pr.slot)] = pr.cur;
          if (full) acc += P.gain_len(pr.slot, ix.tfs[pr.cur], len, k1, b, ctx.avgdl);
        } else {
          possible &= ~(std::uint64_t{1} << pr.slot);
        }
      }
      return full && acc + std::max(rem, 0.0) + pairs() < cut;
    };
    // Visit posting p of this list in doc order: skip stamped documents; once the threshold is
    // known, drop the document when its bound (through the later lists) cannot reach it; else
    // score it. A document proven unable to enter is stamped too: every document of a list done
    // here is then stamped (what the grouped scoring of the last list relies on).
    // The document's counts then come from the probes (its tf here and in the later lists;
    // it holds no term of an earlier list, or it cannot enter: see above), its windows from
    // the positions of those postings.
    auto visit = [&](std::int64_t p) {
      const std::int32_t d = ix.doc_ids[p];
      if (W.stamp[static_cast<std::size_t>(d)] == W.cur) return false;
      W.stamp[static_cast<std::size_t>(d)] = W.cur;
      const bool full = sink.full();
      const std::int32_t len = ctx.len8[static_cast<std::size_t>(d)];
      if (full && P.K + P.prior(len, mu) + P.gain_len(s, ix.tfs[p], len, k1, b, ctx.avgdl) + rest_after < sink.cut())
        return false;
      if (!probing) {
        sink.offer(eval(ctx, W, d, nullptr), d);
        return sink.done();
      }
      if (refuted(d, ix.tfs[p], len, full, sink.cut())) return false;
      // windows of the pairs present, from the two postings' positions (stored in posting order:
      // the cursors read them nearly sequentially); a repeated query term's own pair counts too
      W.post[static_cast<std::size_t>(s)] = p;
      for (int u = 0; u < P.np; ++u) count_windows(ix, W, u);
      sink.offer(canonical(ctx, W, len < 255 ? len : ix.doc_lengths[d]), d);
      return sink.done();
    };
    if (!sink.full() && df <= kSeedList) {
      for (std::int64_t p = p0; p < p1; ++p) {
        // two-stage software prefetch (the documents are scattered: each scan would otherwise
        // wait for two cache misses): the offsets 16 postings ahead, the tokens 8 ahead
        if (p + 16 < p1) {
          const std::int32_t dn = ix.doc_ids[p + 16];
          prefetch(ix.doc_offsets + dn);
          prefetch(W.stamp.data() + dn);
          prefetch(ctx.len8 + dn);
        }
        // (once the threshold is known most documents are dropped unread: no token prefetch)
        if (p + 8 < p1 && !sink.full()) prefetch(ix.doc_tokens + ix.doc_offsets[ix.doc_ids[p + 8]]);
        if (visit(p)) return;
      }
      W.done_slot[static_cast<std::size_t>(s)] = 1;
      continue;
    }
    const std::int32_t* imp = ix.impact + p0;
    auto tf_at = [&](std::int64_t j) { return ix.tfs[p0 + imp[j]]; };
    auto len_at = [&](std::int64_t j) { return ix.doc_lengths[ix.doc_ids[p0 + imp[j]]]; };
    // first j' >= j whose tf is below tf (tf is non-increasing along the impact order)
    auto next_tf = [&](std::int64_t j, std::int32_t tf) {
      std::int64_t lo = j, hi = df;
      while (lo < hi) {
        std::int64_t mid = lo + (hi - lo) / 2;
        if (tf_at(mid) >= tf)
          lo = mid + 1;
        else
          hi = mid;
      }
      return lo;
    };
    // first j' >= j past the (tf, len) group
    auto next_group = [&](std::int64_t j, std::int32_t tf, std::int32_t len) {
      std::int64_t lo = j, hi = df;
      while (lo < hi) {
        std::int64_t mid = lo + (hi - lo) / 2;
        const std::int32_t tm = tf_at(mid);
        if (tm > tf || (tm == tf && len_at(mid) <= len))
          lo = mid + 1;
        else
          hi = mid;
      }
      return lo;
    };
    auto bound_at = [&](std::int64_t j) {
      const std::int32_t len = len_at(j);
      return P.K + P.prior(len, mu) + P.gain_len(s, tf_at(j), len, k1, b, ctx.avgdl) + rest_after;
    };
    // how many documents from position j on still have a bound reaching the threshold: per tf
    // group, a binary search for where the bound (falling with |D|) drops below it
    // (and, with out, their postings)
    auto candidates = [&](std::int64_t j, std::vector<std::int64_t>* out) {
      const double cut = sink.cut();
      std::int64_t n = 0;
      while (j < df) {
        const std::int64_t g_end = next_tf(j, tf_at(j));
        std::int64_t lo = j, hi = g_end;
        while (lo < hi) {
          std::int64_t mid = lo + (hi - lo) / 2;
          if (bound_at(mid) >= cut)
            lo = mid + 1;
          else
            hi = mid;
        }
        n += lo - j;
        if (out)
          for (std::int64_t x = j; x < lo; ++x) out->push_back(p0 + imp[x]);
        j = g_end;
      }
      return n;
    };
    const bool grouped = r == last && all_whole && !self_pair[static_cast<std::size_t>(s)];
    bool planned = false;
    std::int32_t g_tf = -1, g_len = -1;
    double g_score = 0.0;
    std::int64_t j = 0;
    while (j < df) {
      if (!grouped && !planned && sink.full()) {
        planned = true;
        if (candidates(j, nullptr) > kImpactBudget) return;  // too many to score one by one: phase B
        // the candidates, visited in doc order (the later lists are probed with forward cursors)
        W.gather.clear();
        candidates(j, &W.gather);
        std::sort(W.gather.begin(), W.gather.end());
        const std::size_t ng = W.gather.size();
        for (std::size_t x = 0; x < ng; ++x) {
          if (x + 16 < ng) {
            const std::int32_t dn = ix.doc_ids[W.gather[x + 16]];
            prefetch(W.stamp.data() + dn);
            prefetch(ctx.len8 + dn);
          }
          if (visit(W.gather[x])) return;
        }
        break;
      }
      // three-stage prefetch along the impact order (scattered postings and documents)
      if (j + 12 < df) prefetch(ix.doc_ids + p0 + imp[j + 12]);
      if (j + 8 < df) {
        const std::int32_t dn = ix.doc_ids[p0 + imp[j + 8]];
        prefetch(ix.doc_lengths + dn);
        prefetch(ix.doc_offsets + dn);
        prefetch(W.stamp.data() + dn);
      }
      if (j + 4 < df && !grouped) prefetch(ix.doc_tokens + ix.doc_offsets[ix.doc_ids[p0 + imp[j + 4]]]);
      const std::int64_t p = p0 + imp[j];
      const std::int32_t tf = ix.tfs[p], d = ix.doc_ids[p];
      const std::int32_t len = ix.doc_lengths[d];
      if (sink.full() && P.K + P.prior(len, mu) + P.gain_len(s, tf, len, k1, b, ctx.avgdl) + rest_after < sink.cut()) {
        j = next_tf(j, tf);
        continue;
      }
      if (grouped) {
        if (tf != g_tf || len != g_len) {
          g_tf = tf;
          g_len = len;
          std::fill(W.tf.begin(), W.tf.end(), 0);
          std::fill(W.od.begin(), W.od.end(), 0);
          std::fill(W.uw.begin(), W.uw.end(), 0);
          W.tf[static_cast<std::size_t>(s)] = tf;
          g_score = canonical(ctx, W, len);
        }
        if (W.stamp[static_cast<std::size_t>(d)] != W.cur) {
          if (!sink.accepts(g_score, d)) {
            j = next_group(j, tf, len);
            continue;
          }
          W.stamp[static_cast<std::size_t>(d)] = W.cur;
          sink.offer(g_score, d);
          if (sink.done()) return;
        }
        ++j;
        continue;
      }
      if (W.stamp[static_cast<std::size_t>(d)] != W.cur) {
        W.stamp[static_cast<std::size_t>(d)] = W.cur;
        sink.offer(eval(ctx, W, d, nullptr), d);
        if (sink.done()) return;
      }
      ++j;
    }
    W.done_slot[static_cast<std::size_t>(s)] = 1;
    all_whole = false;
  }
}

// Gain of a list's entry at its cursor (the additive parts of a document's score, see Comp).
inline double comp_gain(const Plan& P, const Comp& c) {
  switch (c.kind) {
    case Kind::Term: return P.gain(c.id, c.c1[c.cur]);
    case Kind::TermLow: return P.gain(c.id, 1);
    case Kind::TermHigh: return std::max(0.0, P.gain(c.id, c.c1[c.cur]) - P.gain(c.id, 1));
    case Kind::Pair: return P.pair_gain(c.id, c.c1[c.cur], c.c2[c.cur]);
    case Kind::PairOd: return P.od_gain(c.id, c.c1[c.cur]);
  }
  return 0.0;
}

// BM25 gain / bound of a list's entry in a document of length len (exact normalization instead
// of the shortest document's: tighter; len may be clamped low, which keeps them upper bounds).
inline double comp_gain_len(const Context& ctx, const Plan& P, const Comp& c, std::int32_t len) {
  const double k1 = ctx.p.k1, b = ctx.p.b;
  switch (c.kind) {
    case Kind::Term: return P.gain_len(c.id, c.c1[c.cur], len, k1, b, ctx.avgdl);
    case Kind::TermLow: return P.gain_len(c.id, 1, len, k1, b, ctx.avgdl);
    case Kind::TermHigh:
      return std::max(
          0.0, P.gain_len(c.id, c.c1[c.cur], len, k1, b, ctx.avgdl) - P.gain_len(c.id, 1, len, k1, b, ctx.avgdl));
    case Kind::Pair: return P.pair_gain(c.id, c.c1[c.cur], c.c2[c.cur]);
    case Kind::PairOd: return P.od_gain(c.id, c.c1[c.cur]);
  }
  return 0.0;
}

inline double comp_ub_len(const Context& ctx, const Plan& P, const Comp& c, std::int32_t len) {
  const double k1 = ctx.p.k1, b = ctx.p.b;
  const std::int32_t mt = ctx.ix.max_tf[P.term[static_cast<std::size_t>(c.id)]];
  switch (c.kind) {
    case Kind::Term: return P.gain_len(c.id, mt, len, k1, b, ctx.avgdl);
    case Kind::TermLow: return P.gain_len(c.id, 1, len, k1, b, ctx.avgdl);
    case Kind::TermHigh:
      return std::max(0.0, P.gain_len(c.id, mt, len, k1, b, ctx.avgdl) - P.gain_len(c.id, 1, len, k1, b, ctx.avgdl));
    case Kind::Pair:
    case Kind::PairOd: return c.ub;
  }
  return 0.0;
}

// Phase B: document-at-a-time MaxScore (Turtle & Flood 1995) over the posting lists of the
// terms not done in phase A and the window lists of the pairs among them. Lists sorted by upper
// bound; the longest prefix whose bounds cannot reach the threshold is "non-essential": only
// documents of the other lists are visited, and the non-essential lists are probed (galloping)
// while the document's bound still reaches the threshold. Pairs without a materialized window
// list add their bound when both terms may be present and are counted from the postings'
// positions. Surviving documents are scored exactly from the counts (no document scan).
template <class Sink>
void maxscore(const Context& ctx, Worker& W, Sink& sink) {
  const Plan& P = W.plan;
  const IndexView& ix = ctx.ix;
  const double mu = ctx.p.mu;
  std::vector<Comp>& comps = W.comps;
  comps.clear();
  for (int s = 0; s < P.m; ++s) {
    if (W.done_slot[static_cast<std::size_t>(s)]) continue;
    const std::int32_t t = P.term[static_cast<std::size_t>(s)];
    const std::int64_t p0 = ix.indptr[t], p1 = ix.indptr[t + 1];
    if (p0 == p1) continue;
    const std::int64_t h0 = ix.hi_indptr[t], h1 = ix.hi_indptr[t + 1];
    const double ub = P.ub[static_cast<std::size_t>(s)];
    const double g1 = P.gain(s, 1);
    if (h1 > h0 && p1 - p0 >= kSplitList && 2 * (h1 - h0) <= p1 - p0 && 2 * g1 <= ub) {
      // gain(tf) = gain(1) [every document of the term] + (gain(tf) - gain(1)) [tf >= 2 only]
      comps.push_back({ix.doc_ids, p0, p1, ix.tfs, nullptr, s, Kind::TermLow, g1, ctx.ranks->get(t), p0});
      comps.push_back({ix.hi_doc_ids, h0, h1, ix.hi_tfs, nullptr, s, Kind::TermHigh, std::max(0.0, ub - g1)});
    } else {
      comps.push_back({ix.doc_ids, p0, p1, ix.tfs, nullptr, s, Kind::Term, ub, ctx.ranks->get(t), p0});
    }
  }
  std::vector<int>& ipair = W.ipair;
  ipair.clear();
  for (int u = 0; u < P.np; ++u) {
    const std::size_t uu = static_cast<std::size_t>(u);
    if (W.done_slot[static_cast<std::size_t>(P.pa[uu])] || W.done_slot[static_cast<std::size_t>(P.pb[uu])]) continue;
    if (P.pair_ub[uu] <= 0.0) continue;  // no window anywhere in the collection
    if (P.plist[uu] != nullptr) {
      const PairList& L = *P.plist[uu];
      if (L.docs.empty()) continue;
      comps.push_back({L.docs.data(), 0, static_cast<std::int64_t>(L.docs.size()), L.od.data(), L.uw.data(), u,
                       Kind::Pair, P.pair_ub[uu]});
    } else {
      if (P.podl[uu] != nullptr && !P.podl[uu]->docs.empty()) {
        const PairList& L = *P.podl[uu];
        comps.push_back({L.docs.data(), 0, static_cast<std::int64_t>(L.docs.size()), L.od.data(), nullptr, u,
                         Kind::PairOd, std::max(0.0, P.pair_ub[uu] - P.pair_ub_uw[uu])});
      }
      ipair.push_back(u);
    }
  }
  const int R = static_cast<int>(comps.size());
  if (R == 0) return;
  std::stable_sort(comps.begin(), comps.end(), [](const Comp& x, const Comp& y) { return x.ub < y.ub; });
  // implicit pairs: bound masks over the positions of their two terms' lists
  std::vector<int> pos_of_slot(static_cast<std::size_t>(P.m), -1);
  for (int i = 0; i < R; ++i)
    if (comps[static_cast<std::size_t>(i)].term_postings())
      pos_of_slot[static_cast<std::size_t>(comps[static_cast<std::size_t>(i)].id)] = i;
  const bool masks = R <= 64;
  W.ipair_mask.clear();
  W.ipair_ub.clear();
  W.cum.assign(static_cast<std::size_t>(R), 0.0);
  double ipairs_all = 0.0;
  {
    std::vector<double> add(static_cast<std::size_t>(R), 0.0);
    for (int i = 0; i < R; ++i) add[static_cast<std::size_t>(i)] = comps[static_cast<std::size_t>(i)].ub;
    std::vector<int> kept;
    for (int u : ipair) {
      const int ia = pos_of_slot[static_cast<std::size_t>(P.pa[static_cast<std::size_t>(u)])];
      const int ib = pos_of_slot[static_cast<std::size_t>(P.pb[static_cast<std::size_t>(u)])];
      if (ia < 0 || ib < 0) continue;  // a term without postings: no window
      // with an od list, the implicit part is #uw:8 alone (od > 0 only in the list's documents)
      const double w = P.podl[static_cast<std::size_t>(u)] != nullptr ? P.pair_ub_uw[static_cast<std::size_t>(u)]
                                                                      : P.pair_ub[static_cast<std::size_t>(u)];
      add[static_cast<std::size_t>(std::max(ia, ib))] += w;
      ipairs_all += w;
      kept.push_back(u);
      if (masks) {
        W.ipair_mask.push_back((std::uint64_t{1} << ia) | (std::uint64_t{1} << ib));
        W.ipair_ub.push_back(w);
      }
    }
    ipair.swap(kept);
    double acc = P.K + P.prior_max;
    for (int i = 0; i < R; ++i) {
      acc += add[static_cast<std::size_t>(i)];
      W.cum[static_cast<std::size_t>(i)] = acc;
    }
  }
  auto ipair_bound = [&](std::uint64_t possible) {
    if (!masks) return ipairs_all;
    double x = 0.0;
    for (std::size_t u = 0; u < W.ipair_mask.size(); ++u)
      if ((W.ipair_mask[u] & possible) == W.ipair_mask[u]) x += W.ipair_ub[u];
    return x;
  };
  const double base_max = P.K + P.prior_max;
  double cut = sink.cut();
  int ne = 0;  // comps[0..ne) are non-essential
  while (ne < R && W.cum[static_cast<std::size_t>(ne)] < cut) ++ne;
  if (ne == R) return;
  W.found.assign(static_cast<std::size_t>(R), 0);
  // the non-essential lists' summed bound and mask, updated when ne grows
  double rem_ne = 0.0;
  std::uint64_t unprobed_ne = 0;
  auto partition = [&]() {
    rem_ne = 0.0;
    for (int i = 0; i < ne; ++i) rem_ne += comps[static_cast<std::size_t>(i)].ub;
    unprobed_ne = masks ? (ne >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << ne) - 1) : 0;
  };
  partition();
  constexpr std::int32_t kNone = std::numeric_limits<std::int32_t>::max();
  for (;;) {
    std::int32_t d = kNone;
    for (int i = ne; i < R; ++i) {
      const Comp& c = comps[static_cast<std::size_t>(i)];
      if (c.cur < c.end) d = std::min(d, c.docs[c.cur]);
      if (c.cur + 16 < c.end) prefetch(ctx.len8 + c.docs[c.cur + 16]);
    }
    if (d == kNone) return;
    double acc = 0.0, rem = rem_ne;
    std::uint64_t present = 0, unprobed = unprobed_ne;
    for (int i = ne; i < R; ++i) {
      const Comp& c = comps[static_cast<std::size_t>(i)];
      const bool at = c.cur < c.end && c.docs[c.cur] == d;
      W.found[static_cast<std::size_t>(i)] = at;
      if (!at) continue;
      acc += comp_gain(P, c);
      if (masks) present |= std::uint64_t{1} << i;
    }
    double base = base_max;
    bool keep = base + acc + rem + ipair_bound(present | unprobed) >= cut;
    // refine with the document's length (a 1-byte copy, in cache): SDM's length prior, BM25's
    // length normalization of every gain and bound
    const std::int32_t len = ctx.len8[static_cast<std::size_t>(d)];
    if (keep && P.sdm) {
      base = P.K + P.prior(len, mu);
      keep = base + acc + rem + ipair_bound(present | unprobed) >= cut;
    } else if (keep) {
      acc = rem = 0.0;
      for (int i = ne; i < R; ++i)
        if (W.found[static_cast<std::size_t>(i)]) acc += comp_gain_len(ctx, P, comps[static_cast<std::size_t>(i)], len);
      for (int i = 0; i < ne; ++i) rem += comp_ub_len(ctx, P, comps[static_cast<std::size_t>(i)], len);
      keep = acc + rem >= cut;
    }
    for (int i = 0; i < ne; ++i) W.found[static_cast<std::size_t>(i)] = 0;
    for (int i = ne - 1; i >= 0 && keep; --i) {
      Comp& c = comps[static_cast<std::size_t>(i)];
      c.cur = c.rank != nullptr ? c.start + rank_lb(c.rank, d) : gallop(c.docs, c.cur, c.end, d);
      rem -= P.sdm ? c.ub : comp_ub_len(ctx, P, c, len);
      if (masks) unprobed &= ~(std::uint64_t{1} << i);
      // with a rank map, membership is a bit of the word just read (the posting itself, a cache
      // miss in a list of 100k+ documents, is read only when its tf is needed)
      if (c.rank != nullptr ? rank_has(c.rank, d) : c.cur < c.end && c.docs[c.cur] == d) {
        W.found[static_cast<std::size_t>(i)] = 1;
        acc += P.sdm ? comp_gain(P, c) : comp_gain_len(ctx, P, c, len);
        if (masks) present |= std::uint64_t{1} << i;
      }
      keep = base + acc + std::max(rem, 0.0) + ipair_bound(present | unprobed) >= cut;
    }
    if (keep && W.stamp[static_cast<std::size_t>(d)] != W.cur) {
      // all counts of d are known now: terms and window lists from the cursors, implicit pairs
      // from the positions of the two postings
      std::fill(W.tf.begin(), W.tf.end(), 0);
      std::fill(W.od.begin(), W.od.end(), 0);
      std::fill(W.uw.begin(), W.uw.end(), 0);
      for (int i = 0; i < R; ++i) {
        if (!W.found[static_cast<std::size_t>(i)]) continue;
        const Comp& c = comps[static_cast<std::size_t>(i)];
        if (c.pair()) {
          W.od[static_cast<std::size_t>(c.id)] = c.c1[c.cur];
          W.uw[static_cast<std::size_t>(c.id)] = c.c2[c.cur];
        } else if (c.term_postings()) {
          W.tf[static_cast<std::size_t>(c.id)] = c.c1[c.cur];
          W.post[static_cast<std::size_t>(c.id)] = c.cur;
        }
      }
      for (int u : ipair) count_windows(ix, W, u);
      sink.offer(canonical(ctx, W, ix.doc_lengths[d]), d);
      if (sink.done()) return;
      if (sink.cut() != cut) {
        cut = sink.cut();
        const int ne0 = ne;
        while (ne < R && W.cum[static_cast<std::size_t>(ne)] < cut) ++ne;
        if (ne == R) return;
        if (ne != ne0) partition();
      }
    }
    for (int i = ne; i < R; ++i) {
      Comp& c = comps[static_cast<std::size_t>(i)];
      if (c.cur < c.end && c.docs[c.cur] == d) ++c.cur;
    }
  }
}

template <class Sink>
void traverse(const Context& ctx, Worker& W, Sink& sink, bool seed_first) {
  W.done_slot.assign(static_cast<std::size_t>(W.plan.m), 0);
  if (W.plan.m == 0) return;
  if (seed_first) seed(ctx, W, sink);
  maxscore(ctx, W, sink);
}

// The workers of one call: from the cache's idle ones when there are (their N-sized stamps are
// then allocated and zeroed once per index, not per call), given back at the end of the call.
struct Workers {
  std::vector<std::unique_ptr<Worker>> w;
  SearchCache* cache;
  Workers(int workers, SearchCache* c) : w(static_cast<std::size_t>(resolve_workers(workers))), cache(c) {
    if (cache) {
      std::lock_guard<std::mutex> lock(cache->mu);
      for (auto& x : w)
        if (!cache->idle.empty()) {
          x = std::move(cache->idle.back());
          cache->idle.pop_back();
          cache->bytes -= std::min(cache->bytes, bytes_of(*x));
        }
    }
    for (auto& x : w)
      if (!x) x = std::make_unique<Worker>();
  }
  ~Workers() {
    if (!cache) return;
    std::lock_guard<std::mutex> lock(cache->mu);
    for (auto& x : w)
      if (cache->reserve(bytes_of(*x))) cache->idle.push_back(std::move(x));
  }
  // the stamps (4 N bytes) and the memoized logarithms dominate a worker's memory
  static std::size_t bytes_of(const Worker& x) {
    return x.stamp.size() * sizeof(std::uint32_t) + x.logc.size() * 12 + kListBytes;
  }
  Worker& operator[](std::size_t i) { return *w[i]; }
};

}  // namespace

std::int32_t ordered_count(const std::int32_t* A, std::size_t na, const std::int32_t* B, std::size_t nb, int width) {
  // Galago OrderedWindowIterator, two terms: for each a at p (in order), the first b at or after
  // p + 1 (b's cursor never moves back); a match when it starts less than `width` after p + 1.
  std::size_t j = 0;
  std::int32_t c = 0;
  for (std::size_t i = 0; i < na; ++i) {
    const std::int64_t end = static_cast<std::int64_t>(A[i]) + 1;
    while (j < nb && B[j] < end) ++j;
    if (j == nb) break;
    if (static_cast<std::int64_t>(B[j]) - end < width) ++c;
  }
  return c;
}

std::int32_t unordered_count(const std::int32_t* A, std::size_t na, const std::int32_t* B, std::size_t nb,
                             bool same_term, int width) {
  // Galago UnorderedWindowIterator, two terms: look at the current occurrence of each, count a
  // match when they span at most `width` positions (max end - min begin <= width), advance the
  // earlier one(s); stop when a term runs out. Two copies of one term move together: tf matches.
  if (same_term) return static_cast<std::int32_t>(std::min(na, nb));
  std::size_t i = 0, j = 0;
  std::int32_t c = 0;
  while (i < na && j < nb) {
    const std::int64_t lo = std::min(A[i], B[j]);
    const std::int64_t hi = static_cast<std::int64_t>(std::max(A[i], B[j])) + 1;
    if (hi - lo <= width) ++c;
    if (A[i] == lo) ++i;
    if (B[j] == lo) ++j;
  }
  return c;
}

Model parse_model(const std::string& name) {
  if (name == "sdm") return Model::Sdm;
  if (name == "bm25") return Model::Bm25;
  fail("model must be 'sdm' or 'bm25', got '" + name + "'");
}

void check_params(const ScoreParams& p) {
  if (p.model == Model::Sdm) {
    // a normal double: a denormal mu underflows mu * P(t|C) to 0 and scores to -inf (fuzz/)
    if (!(std::isfinite(p.mu) && p.mu >= std::numeric_limits<double>::min()))
      fail("mu must be a finite number > 0 (at least 2.2250738585072014e-308), got " + std::to_string(p.mu));
    const double w[3] = {p.w_unigram, p.w_ordered, p.w_unordered};
    for (double x : w)
      if (!(std::isfinite(x) && x >= 0))
        fail("weights must be 3 finite numbers >= 0 (unigram, ordered, unordered), got " + std::to_string(x));
    if (!(p.w_unigram + p.w_ordered + p.w_unordered > 0)) fail("weights must not all be 0");
  } else {
    if (!(std::isfinite(p.k1) && p.k1 >= 0)) fail("k1 must be a finite number >= 0, got " + std::to_string(p.k1));
    if (!(p.b >= 0 && p.b <= 1)) fail("b must be in [0, 1], got " + std::to_string(p.b));
  }
}

void check_queries(const IndexView& ix, const Queries& q) {
  if (q.offsets[0] != 0) fail("query offsets[0] must be 0, got " + std::to_string(q.offsets[0]));
  for (std::size_t i = 0; i < q.n; ++i) {
    if (q.offsets[i + 1] < q.offsets[i])
      fail("query offsets must be non-decreasing; offsets[" + std::to_string(i + 1) + "] < offsets[" +
           std::to_string(i) + "]");
    if (q.offsets[i + 1] - q.offsets[i] > std::numeric_limits<std::int32_t>::max())
      fail("query " + std::to_string(i) + " is too long");
  }
  for (std::int64_t j = 0; j < q.offsets[q.n]; ++j)
    if (q.ids[j] < 0 || q.ids[j] >= ix.vocab_size)
      fail("query ids[" + std::to_string(j) + "] = " + std::to_string(q.ids[j]) +
           " is outside [0, vocab_size = " + std::to_string(ix.vocab_size) + ")");
}

namespace {

// What search and target_ranks set up per call: constants, the pair statistics of each
// sub-batch, rank maps, workers (each from the cache when there is one).
struct Call {
  Context ctx;
  PairTable pairs;
  std::unordered_map<std::uint64_t, PairStat> big;
  std::vector<std::int32_t> slot;
  RankMaps ranks;
  Workers ws;

  Call(const IndexView& ix, const Queries& q, const ScoreParams& p, int workers, SearchCache* cache)
      : ctx(ix, p, cache), ws(workers, cache) {
    if (p.model == Model::Sdm && ix.n_pair_terms > 0) {
      slot.assign(static_cast<std::size_t>(ix.vocab_size), -1);
      for (std::int64_t i = 0; i < ix.n_pair_terms; ++i) {
        if (ix.pair_terms[i] < 0 || ix.pair_terms[i] >= ix.vocab_size) fail("index: pair_terms holds a bad term id");
        slot[static_cast<std::size_t>(ix.pair_terms[i])] = static_cast<std::int32_t>(i);
      }
    }
    ctx.pairs = &pairs;
    build_rank_maps(ranks, ix, q, workers, cache);
    ctx.ranks = &ranks;
  }
  void sub_batch(const Queries& q, std::size_t qb, std::size_t qe, int workers, SearchCache* cache) {
    if (ctx.p.model != Model::Sdm) return;
    build_pair_table(pairs, ctx.ix, q, qb, qe, workers, big, slot, cache);
    build_od_lists(pairs, ctx.ix, q, qb, qe, workers, cache);
  }
};

}  // namespace

std::shared_ptr<SearchCache> make_search_cache(std::size_t max_bytes) {
  return std::make_shared<SearchCache>(max_bytes);
}

SearchCache::~SearchCache() = default;

bool SearchCache::reserve(std::size_t add, bool pair) {
  if (add > max_bytes) return false;
  if (bytes + add > max_bytes && pair_bytes > 0) {
    // first the statistics and window lists of pairs (mostly of one batch's rare terms; the
    // #od:1 lists, rank maps and workers serve every later call)
    stats.clear();
    lists.clear();
    bytes -= std::min(bytes, pair_bytes);
    pair_bytes = 0;
    ++pair_clears;
  }
  if (bytes + add > max_bytes) {
    stats.clear();
    lists.clear();
    od.clear();
    ranks.clear();
    len8.reset();
    idle.clear();
    bytes = pair_bytes = 0;
    ++clears;
  }
  bytes += add;
  if (pair) pair_bytes += add;
  return true;
}

void set_search_cache_bound(SearchCache& c, std::size_t max_bytes) {
  std::lock_guard<std::mutex> lock(c.mu);
  c.max_bytes = max_bytes;
  c.reserve(0);
}

SearchCacheInfo search_cache_info(SearchCache& c) {
  std::lock_guard<std::mutex> lock(c.mu);
  SearchCacheInfo i;
  i.bytes = c.bytes;
  i.max_bytes = c.max_bytes;
  i.pair_stats = c.stats.size();
  i.pair_lists = c.lists.size();
  i.od_lists = c.od.size();
  i.rank_maps = c.ranks.size();
  i.workers = c.idle.size();
  i.pairs_reused = c.pairs_reused;
  i.od_lists_reused = c.od_reused;
  i.rank_maps_reused = c.ranks_reused;
  i.clears = c.clears;
  i.pair_clears = c.pair_clears;
  return i;
}

template <class Score>
void search(const IndexView& ix, const Queries& q, const ScoreParams& p, int k, int workers, std::int32_t* docs,
            Score* scores, std::int32_t* counts, SearchCache* cache) {
  if (k < 1) fail("k must be >= 1, got " + std::to_string(k));
  check_params(p);
  check_queries(ix, q);
  Call call(ix, q, p, workers, cache);
  const Context& ctx = call.ctx;
  const std::size_t kk = static_cast<std::size_t>(k);
  for (std::size_t qb = 0; qb < q.n; qb += kSubBatch) {
    const std::size_t qe = std::min(q.n, qb + kSubBatch);
    call.sub_batch(q, qb, qe, workers, cache);
    parallel_for(qe - qb, workers, 16, [&](std::size_t tid, std::size_t b, std::size_t e) {
      Worker& W = call.ws[tid];
      for (std::size_t i = qb + b; i < qb + e; ++i) {
        const int n = static_cast<int>(q.offsets[i + 1] - q.offsets[i]);
        std::int32_t* drow = docs + i * kk;
        Score* srow = scores + i * kk;
        std::size_t got = 0;
        if (n > 0) {
          W.next_query(static_cast<std::size_t>(ix.n_docs));
          prepare(ctx, W, q.ids + q.offsets[i], n);
          TopK sink(W.heap, kk, W.plan.K);
          traverse(ctx, W, sink, true);
          unprepare(W);
          std::sort_heap(W.heap.begin(), W.heap.end(), Better());
          got = W.heap.size();
          for (std::size_t j = 0; j < got; ++j) {
            drow[j] = W.heap[j].second;
            srow[j] = static_cast<Score>(W.heap[j].first);
          }
        }
        for (std::size_t j = got; j < kk; ++j) {
          drow[j] = -1;
          srow[j] = static_cast<Score>(kNaN);
        }
        counts[i] = static_cast<std::int32_t>(got);
      }
    });
  }
}

template void search<float>(const IndexView&, const Queries&, const ScoreParams&, int, int, std::int32_t*, float*,
                            std::int32_t*, SearchCache*);
template void search<double>(const IndexView&, const Queries&, const ScoreParams&, int, int, std::int32_t*, double*,
                             std::int32_t*, SearchCache*);

void target_ranks(const IndexView& ix, const Queries& q, const std::int32_t* targets, const ScoreParams& p, int n,
                  int workers, std::int32_t* ranks, SearchCache* cache) {
  if (n < 1) fail("n must be >= 1, got " + std::to_string(n));
  check_params(p);
  check_queries(ix, q);
  for (std::size_t i = 0; i < q.n; ++i)
    if (targets[i] < 0 || targets[i] >= ix.n_docs)
      fail("targets[" + std::to_string(i) + "] = " + std::to_string(targets[i]) + " is not a document id in [0, " +
           std::to_string(ix.n_docs) + ")");
  Call call(ix, q, p, workers, cache);
  const Context& ctx = call.ctx;
  for (std::size_t qb = 0; qb < q.n; qb += kSubBatch) {
    const std::size_t qe = std::min(q.n, qb + kSubBatch);
    call.sub_batch(q, qb, qe, workers, cache);
    parallel_for(qe - qb, workers, 16, [&](std::size_t tid, std::size_t b, std::size_t e) {
      Worker& W = call.ws[tid];
      for (std::size_t i = qb + b; i < qb + e; ++i) {
        const int len = static_cast<int>(q.offsets[i + 1] - q.offsets[i]);
        ranks[i] = 0;
        if (len == 0) continue;
        W.next_query(static_cast<std::size_t>(ix.n_docs));
        prepare(ctx, W, q.ids + q.offsets[i], len);
        bool matched = false;
        const double st = eval(ctx, W, targets[i], &matched);
        if (matched) {
          RankCount sink(st, targets[i], n, W.plan.K);
          W.stamp[static_cast<std::size_t>(targets[i])] = W.cur;
          traverse(ctx, W, sink, true);
          if (sink.count < n) ranks[i] = static_cast<std::int32_t>(sink.count + 1);
        }
        unprepare(W);
      }
    });
  }
}

void window_stats(const IndexView& ix, const std::int32_t* a, const std::int32_t* b, std::size_t n, int workers,
                  std::int64_t* cf_od, std::int64_t* cf_uw) {
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] < 0 || a[i] >= ix.vocab_size || b[i] < 0 || b[i] >= ix.vocab_size)
      fail("term ids of pair " + std::to_string(i) + " are outside [0, vocab_size = " + std::to_string(ix.vocab_size) +
           ")");
  parallel_for(n, workers, 16, [&](std::size_t, std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      PairStat s = compute_pair(ix, a[i], b[i], nullptr, 0);
      cf_od[i] = s.cf_od;
      cf_uw[i] = s.cf_uw;
    }
  });
}

}  // namespace pysynth::retrieval
