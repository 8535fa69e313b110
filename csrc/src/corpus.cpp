// Corpus statistics and gensim-identical phrase detection over id sequences.
//
// gensim keys its phrase vocabulary by *strings*: the unigram "new_york" and the candidate
// ("new", "york") are one entry, and FrozenPhrases re-splits keys on the delimiter. Here the
// counting runs on ids; strings are only built where they can change the result:
//   * fast mode (the usual first pass): the delimiter has no border (no proper prefix that is
//     also a suffix, e.g. "_") and no term contains it. Then a joined string splits back
//     into exactly its terms, so distinct id tuples are distinct strings and never equal a
//     unigram: id tuples *are* gensim's keys.
//   * general mode (later passes, where terms such as "honda_crf" contain the delimiter):
//     every key is turned into its joined string and merged by string, as gensim does.
// Both modes give the same answers as the string-keyed Python twin; fast mode only skips work.
#include "pysynth/corpus.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "pysynth/common.hpp"
#include "pysynth/text.hpp"

namespace pysynth::corpus {
namespace {

// ------------------------------------------------------------------ hashing, tables

inline uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

inline uint64_t load8(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
}
inline uint64_t load4(const char* p) {
  uint32_t w;
  std::memcpy(&w, p, 4);
  return w;
}

// The first 16 bytes of a string as two words, built from whole-word loads (overlapping for
// lengths that are not multiples of 8). For a given length the words determine those bytes,
// so (length, words) compares strings of up to 16 bytes. Assembling the tail byte by byte
// instead stalled store-to-load forwarding: 22% of build_corpus.
struct Head {
  uint64_t w0 = 0, w1 = 0;
};
inline Head head_of(const char* p, size_t n) {
  Head h;
  if (n >= 16) {
    h.w0 = load8(p);
    h.w1 = load8(p + 8);
  } else if (n >= 8) {
    h.w0 = load8(p);
    h.w1 = load8(p + n - 8);
  } else if (n >= 4) {
    h.w0 = load4(p) | (load4(p + n - 4) << 32);
  } else if (n > 0) {
    auto b = [&](size_t i) { return static_cast<uint64_t>(static_cast<unsigned char>(p[i])); };
    h.w0 = b(0) | (b(n / 2) << 8) | (b(n - 1) << 16);
  }
  return h;
}

inline uint64_t hash_bytes(const char* p, size_t n, const Head& head) {
  uint64_t h = 0x9E3779B97F4A7C15ULL * (static_cast<uint64_t>(n) + 1);
  h = mix64(h ^ head.w0) ^ (head.w1 * 0xc4ceb9fe1a85ec53ULL);
  for (size_t i = 16; i + 8 <= n; i += 8) h = (h ^ load8(p + i)) * 0xff51afd7ed558ccdULL, h ^= h >> 29;
  if (n > 16 && (n & 7)) h = (h ^ load8(p + n - 8)) * 0xff51afd7ed558ccdULL;  // overlapping tail
  return mix64(h);
}
inline uint64_t hash_bytes(const char* p, size_t n) { return hash_bytes(p, n, head_of(p, n)); }

inline uint64_t hash_ids(const int32_t* p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ULL * (static_cast<uint64_t>(n) + 1);
  size_t i = 0;
  for (; i + 2 <= n; i += 2)
    h = mix64(h ^ ((static_cast<uint64_t>(static_cast<uint32_t>(p[i])) << 32) | static_cast<uint32_t>(p[i + 1])));
  if (i < n) h = mix64(h ^ static_cast<uint32_t>(p[i]) ^ (uint64_t{1} << 63));
  return h;
}

inline uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

size_t table_capacity(size_t expected) {
  size_t cap = 16;
  while (cap < expected * 2) cap <<= 1;
  return cap;
}

// Bump allocator for string bytes: views stay valid for the arena's lifetime.
class Arena {
 public:
  std::string_view copy(std::string_view s) {
    if (s.empty()) return std::string_view();
    if (s.size() > left_) {
      size_t sz = std::max<size_t>(kBlock, s.size());
      blocks_.emplace_back(new char[sz]);
      cur_ = blocks_.back().get();
      left_ = sz;
    }
    std::memcpy(cur_, s.data(), s.size());
    std::string_view v(cur_, s.size());
    cur_ += s.size();
    left_ -= s.size();
    return v;
  }

 private:
  static constexpr size_t kBlock = size_t{1} << 16;
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* cur_ = nullptr;
  size_t left_ = 0;
};

// string -> dense id (insertion order), open addressing. Slots keep the length and the first
// 16 bytes of their string (as two words), so most lookups (English words are short) compare
// without touching the string itself: that second cache miss was 20% of build_corpus.
class StringInterner {
 public:
  explicit StringInterner(size_t expected = 16) : slots_(table_capacity(expected)), mask_(slots_.size() - 1) {}
  size_t size() const { return strs_.size(); }
  std::string_view str(size_t i) const { return strs_[i]; }

  int32_t find(std::string_view s) const {
    Slot probe = make_slot(s);
    for (size_t i = probe.hash & mask_;; i = (i + 1) & mask_) {
      const Slot& sl = slots_[i];
      if (sl.id < 0) return -1;
      if (equal(sl, probe, s)) return sl.id;
    }
  }

  // (id, inserted). Without copy the caller keeps the bytes of s alive.
  std::pair<int32_t, bool> intern(std::string_view s, bool copy) {
    Slot probe = make_slot(s);
    size_t i = probe.hash & mask_;
    for (;; i = (i + 1) & mask_) {
      const Slot& sl = slots_[i];
      if (sl.id < 0) break;
      if (equal(sl, probe, s)) return {sl.id, false};
    }
    if (strs_.size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max()))
      throw std::length_error("more than 2**31 - 1 distinct strings");
    auto id = static_cast<int32_t>(strs_.size());
    strs_.push_back(copy ? arena_.copy(s) : s);
    probe.id = id;
    slots_[i] = probe;
    if (strs_.size() * 2 > slots_.size()) grow();
    return {id, true};
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    Head head;
    int32_t id = -1;
    uint32_t len = 0;
  };
  static Slot make_slot(std::string_view s) {
    Slot sl;
    sl.head = head_of(s.data(), s.size());
    sl.hash = hash_bytes(s.data(), s.size(), sl.head);
    sl.len = static_cast<uint32_t>(std::min<size_t>(s.size(), 0xffffffffu));
    return sl;
  }
  bool equal(const Slot& sl, const Slot& probe, std::string_view s) const {
    if (sl.hash != probe.hash || sl.len != probe.len || sl.head.w0 != probe.head.w0 || sl.head.w1 != probe.head.w1)
      return false;
    return s.size() <= 16 || strs_[static_cast<size_t>(sl.id)] == s;
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    mask_ = slots_.size() - 1;
    for (const Slot& sl : old) {
      if (sl.id < 0) continue;
      size_t i = sl.hash & mask_;
      while (slots_[i].id >= 0) i = (i + 1) & mask_;
      slots_[i] = sl;
    }
  }
  std::vector<Slot> slots_;
  size_t mask_;
  std::vector<std::string_view> strs_;
  Arena arena_;
};

// (a, b) pair -> int64, open addressing; key and value share a cache line.
class PairTable {
 public:
  struct Entry {
    uint64_t key;
    int64_t val;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};  // a, b < 2**31: never a real key

  explicit PairTable(size_t expected = 16)
      : slots_(table_capacity(expected), Entry{kEmpty, 0}), mask_(slots_.size() - 1) {}
  size_t size() const { return size_; }

  int64_t& at(uint64_t key) {  // inserted with value 0 when absent
    if ((size_ + 1) * 2 > slots_.size()) grow();
    size_t i = mix64(key) & mask_;
    while (slots_[i].key != key) {
      if (slots_[i].key == kEmpty) {
        slots_[i].key = key;
        ++size_;
        break;
      }
      i = (i + 1) & mask_;
    }
    return slots_[i].val;
  }
  const int64_t* find(uint64_t key) const {
    for (size_t i = mix64(key) & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return &slots_[i].val;
      if (slots_[i].key == kEmpty) return nullptr;
    }
  }
  template <class F>
  void for_each(F&& f) const {
    for (const Entry& e : slots_)
      if (e.key != kEmpty) f(e);
  }
  void prefetch(uint64_t key) const { __builtin_prefetch(&slots_[mix64(key) & mask_], 1); }
  void swap(PairTable& o) noexcept {
    slots_.swap(o.slots_);
    std::swap(mask_, o.mask_);
    std::swap(size_, o.size_);
  }

 private:
  void grow() {
    std::vector<Entry> old(slots_.size() * 2, Entry{kEmpty, 0});
    old.swap(slots_);
    mask_ = slots_.size() - 1;
    for (const Entry& e : old) {
      if (e.key == kEmpty) continue;
      size_t i = mix64(e.key) & mask_;
      while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
      slots_[i] = e;
    }
  }
  std::vector<Entry> slots_;
  size_t mask_;
  size_t size_ = 0;
};

// Sequence of term ids (length >= 3: a, connectors..., b) -> int64.
class SeqTable {
 public:
  struct Entry {
    uint64_t hash = 0;
    int64_t off = -1;  // -1: empty slot
    int64_t len = 0;
    int64_t val = 0;
  };
  explicit SeqTable(size_t expected = 16) : slots_(table_capacity(expected)), mask_(slots_.size() - 1) {}
  size_t size() const { return size_; }
  const int32_t* seq(const Entry& e) const { return arena_.data() + e.off; }

  int64_t& at(const int32_t* p, size_t n) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    uint64_t h = hash_ids(p, n);
    size_t i = h & mask_;
    for (;; i = (i + 1) & mask_) {
      Entry& e = slots_[i];
      if (e.off < 0) {
        e.hash = h;
        e.off = static_cast<int64_t>(arena_.size());
        e.len = static_cast<int64_t>(n);
        arena_.insert(arena_.end(), p, p + n);
        ++size_;
        return e.val;
      }
      if (e.hash == h && same(e, p, n)) return e.val;
    }
  }
  const int64_t* find(const int32_t* p, size_t n) const {
    uint64_t h = hash_ids(p, n);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Entry& e = slots_[i];
      if (e.off < 0) return nullptr;
      if (e.hash == h && same(e, p, n)) return &e.val;
    }
  }
  template <class F>
  void for_each(F&& f) const {
    for (const Entry& e : slots_)
      if (e.off >= 0) f(e);
  }

 private:
  bool same(const Entry& e, const int32_t* p, size_t n) const {
    return static_cast<size_t>(e.len) == n && std::memcmp(arena_.data() + e.off, p, n * sizeof(int32_t)) == 0;
  }
  void grow() {
    std::vector<Entry> old(slots_.size() * 2);
    old.swap(slots_);
    mask_ = slots_.size() - 1;
    for (const Entry& e : old) {
      if (e.off < 0) continue;
      size_t i = e.hash & mask_;
      while (slots_[i].off >= 0) i = (i + 1) & mask_;
      slots_[i] = e;
    }
  }
  std::vector<Entry> slots_;
  size_t mask_;
  size_t size_ = 0;
  std::vector<int32_t> arena_;
};

// 128-bit key -> int64: candidates "a, up to 7 connector words, b" packed into one integer
// (see collect_tuples), so that they hash and sort without an arena.
class WideTable {
 public:
  using Key = unsigned __int128;
  struct Entry {
    Key key;
    int64_t val;
  };
  static constexpr Key kEmpty = ~Key{0};  // the length field of a real key is <= 9, never 15

  explicit WideTable(size_t expected = 16)
      : slots_(table_capacity(expected), Entry{kEmpty, 0}), mask_(slots_.size() - 1) {}
  size_t size() const { return size_; }
  static uint64_t hash(Key k) { return mix64(static_cast<uint64_t>(k) ^ mix64(static_cast<uint64_t>(k >> 64))); }

  int64_t& at(Key key) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    size_t i = hash(key) & mask_;
    while (slots_[i].key != key) {
      if (slots_[i].key == kEmpty) {
        slots_[i].key = key;
        ++size_;
        break;
      }
      i = (i + 1) & mask_;
    }
    return slots_[i].val;
  }
  void prefetch(Key key) const { __builtin_prefetch(&slots_[hash(key) & mask_], 1); }
  template <class F>
  void for_each(F&& f) const {
    for (const Entry& e : slots_)
      if (e.key != kEmpty) f(e);
  }

 private:
  void grow() {
    std::vector<Entry> old(slots_.size() * 2, Entry{kEmpty, 0});
    old.swap(slots_);
    mask_ = slots_.size() - 1;
    for (const Entry& e : old) {
      if (e.key == kEmpty) continue;
      size_t i = hash(e.key) & mask_;
      while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
      slots_[i] = e;
    }
  }
  std::vector<Entry> slots_;
  size_t mask_;
  size_t size_ = 0;
};

// ------------------------------------------------------------------------ helpers

constexpr size_t kChunkDocs = 2048;

// True when no proper prefix of d is also a suffix of d. Then occurrences of d cannot
// overlap, and split(x + d + y) == split(x) + split(y) for any x, y.
bool borderless(std::string_view d) {
  for (size_t k = 1; k < d.size(); ++k)
    if (d.substr(0, k) == d.substr(d.size() - k)) return false;
  return true;
}

bool any_contains(const std::string_view* v, size_t n, std::string_view d) {
  for (size_t i = 0; i < n; ++i)
    if (v[i].find(d) != std::string_view::npos) return true;
  return false;
}

// Python's s.split(d) (d non-empty): left to right, non-overlapping.
void split_on(std::string_view s, std::string_view d, std::vector<std::string_view>& out) {
  out.clear();
  size_t pos = 0;
  for (;;) {
    size_t f = s.find(d, pos);
    if (f == std::string_view::npos) {
      out.push_back(s.substr(pos));
      return;
    }
    out.push_back(s.substr(pos, f - pos));
    pos = f + d.size();
  }
}

void append_joined(std::string& out, const std::string_view* vocab, const int32_t* t, size_t n, std::string_view d) {
  for (size_t i = 0; i < n; ++i) {
    if (i) out.append(d.data(), d.size());
    std::string_view s = vocab[t[i]];
    out.append(s.data(), s.size());
  }
}

void check_ids(const IdCorpus& c, int workers) {
  size_t n = c.n_ids();
  if (n && c.n_terms == 0)
    throw std::invalid_argument("ids: the vocabulary is empty but ids has " + std::to_string(n) + " entries");
  auto limit = static_cast<int64_t>(c.n_terms);
  parallel_for(n, workers, size_t{1} << 18, [&](size_t, size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) {
      int32_t t = c.ids[i];
      if (t < 0 || t >= limit)
        throw std::invalid_argument("ids[" + std::to_string(i) + "] = " + std::to_string(t) + " is outside [0, " +
                                    std::to_string(c.n_terms) + "), the vocabulary size");
    }
  });
}

std::vector<uint8_t> connector_flags(const std::string_view* vocab, size_t n_terms, const std::string_view* conn,
                                     size_t n_conn) {
  std::vector<uint8_t> flags(n_terms, 0);
  if (!n_conn) return flags;
  StringInterner set(n_conn);
  for (size_t i = 0; i < n_conn; ++i) set.intern(conn[i], false);
  for (size_t t = 0; t < n_terms; ++t) flags[t] = set.find(vocab[t]) >= 0 ? 1 : 0;
  return flags;
}

// Calls on_token(t) for every non-connector token and on_candidate(first, last) for every
// candidate [first, last]: consecutive non-connector tokens with only connectors between
// them (gensim: start_token, in_between, word). Leading connectors belong to no candidate.
template <class OnToken, class OnCandidate>
inline void scan_doc(const int32_t* b, const int32_t* e, const uint8_t* conn, OnToken&& on_token,
                     OnCandidate&& on_candidate) {
  const int32_t* start = nullptr;
  for (const int32_t* p = b; p < e; ++p) {
    if (conn[*p]) continue;
    on_token(*p);
    if (start) on_candidate(start, p);
    start = p;
  }
}

// ------------------------------------------------------------------ output corpora

// Documents as raw token ids, one vector per chunk of kChunkDocs documents.
struct RawDocs {
  size_t n_docs = 0;
  std::vector<std::vector<int32_t>> chunks;
  std::vector<int64_t> doc_len;
  explicit RawDocs(size_t n) : n_docs(n), chunks((n + kChunkDocs - 1) / kChunkDocs), doc_len(n, 0) {}
  size_t n_chunks() const { return chunks.size(); }
  size_t chunk_begin(size_t c) const { return c * kChunkDocs; }
  size_t chunk_end(size_t c) const { return std::min(n_docs, (c + 1) * kChunkDocs); }
};

// Raw ids -> a corpus: raw ids with equal strings become one term (when merge is set), terms
// are ordered by (cf desc, bytes asc), terms that never occur are dropped.
CorpusData finalize(RawDocs& raw, const std::vector<std::string_view>& raw_str, bool merge, int workers) {
  workers = resolve_workers(workers);
  size_t n_raw = raw_str.size();
  std::vector<int32_t> uniq(n_raw);
  std::vector<std::string_view> ustr;
  if (merge) {
    StringInterner si(n_raw);
    for (size_t r = 0; r < n_raw; ++r) uniq[r] = si.intern(raw_str[r], false).first;
    ustr.resize(si.size());
    for (size_t u = 0; u < si.size(); ++u) ustr[u] = si.str(u);
  } else {
    std::iota(uniq.begin(), uniq.end(), 0);
    ustr = raw_str;
  }
  size_t U = ustr.size();
  // Remap to merged ids and count cf/df in one pass; each thread counts into arrays of its own
  // (documents never span chunks), summed afterwards. Owner threads that each scanned every
  // document for the terms they owned took 0.022 s with 1 thread and 0.094 s with 2 on 1M
  // questions (a mispredicted owner test per token). The arrays of all threads together stay
  // within the size of the ids: a huge vocabulary gets fewer threads.
  size_t n_tok = 0;
  for (auto& ch : raw.chunks) n_tok += ch.size();
  size_t W =
      n_tok < (size_t{1} << 16) ? 1 : std::min<size_t>(static_cast<size_t>(workers), n_tok / std::max<size_t>(U, 1));
  struct Counts {
    std::vector<int64_t> cf, df, last;
  };
  std::vector<Counts> local(std::max<size_t>(W, 1));
  parallel_for(raw.n_chunks(), static_cast<int>(std::max<size_t>(W, 1)), 1, [&](size_t tid, size_t b, size_t e) {
    Counts& L = local[tid];
    if (L.cf.size() != U) {
      L.cf.assign(U, 0);
      L.df.assign(U, 0);
      L.last.assign(U, -1);
    }
    for (size_t c = b; c < e; ++c) {
      int32_t* p = raw.chunks[c].data();
      for (size_t d = raw.chunk_begin(c); d < raw.chunk_end(c); ++d) {
        auto len = static_cast<size_t>(raw.doc_len[d]);
        for (size_t j = 0; j < len; ++j) {
          int32_t u = uniq[static_cast<size_t>(p[j])];
          p[j] = u;
          ++L.cf[static_cast<size_t>(u)];
          if (L.last[static_cast<size_t>(u)] != static_cast<int64_t>(d)) {
            L.last[static_cast<size_t>(u)] = static_cast<int64_t>(d);
            ++L.df[static_cast<size_t>(u)];
          }
        }
        p += len;
      }
    }
  });
  std::vector<int64_t> cf(U, 0), df(U, 0);
  for (const Counts& L : local) {
    if (L.cf.size() != U) continue;
    for (size_t u = 0; u < U; ++u) {
      cf[u] += L.cf[u];
      df[u] += L.df[u];
    }
  }
  std::vector<int32_t> order;
  order.reserve(U);
  for (size_t u = 0; u < U; ++u)
    if (cf[u] > 0) order.push_back(static_cast<int32_t>(u));
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    if (cf[a] != cf[b]) return cf[a] > cf[b];
    return ustr[a] < ustr[b];
  });
  std::vector<int32_t> final_id(U, -1);
  CorpusData out;
  out.cf.resize(order.size());
  out.df.resize(order.size());
  size_t bytes = 0;
  for (int32_t u : order) bytes += ustr[u].size();
  out.vocab.bytes.reserve(bytes);
  out.vocab.offsets.reserve(order.size() + 1);
  for (size_t i = 0; i < order.size(); ++i) {
    final_id[order[i]] = static_cast<int32_t>(i);
    out.cf[i] = cf[order[i]];
    out.df[i] = df[order[i]];
    out.vocab.push_back(ustr[order[i]]);
  }
  out.offsets.assign(raw.n_docs + 1, 0);
  for (size_t d = 0; d < raw.n_docs; ++d) out.offsets[d + 1] = out.offsets[d] + raw.doc_len[d];
  out.ids.resize(static_cast<size_t>(out.offsets[raw.n_docs]));
  parallel_for(raw.n_chunks(), workers, 1, [&](size_t, size_t b, size_t e) {
    for (size_t c = b; c < e; ++c) {
      int32_t* dst = out.ids.data() + out.offsets[raw.chunk_begin(c)];
      for (int32_t t : raw.chunks[c]) *dst++ = final_id[static_cast<size_t>(t)];
      std::vector<int32_t>().swap(raw.chunks[c]);
    }
  });
  return out;
}

// ------------------------------------------------------------- candidate tuples

// Sorts table entries taken out of a hash table: a counting sort on a coarse bucket of the key
// (its first term, with its length for long candidates), then std::sort inside the buckets.
// Sorting the 1.1M candidates of 1M questions (with connector words) took 0.085 s of CPU
// this way against 0.118 s with std::sort on the whole vector.
inline uint64_t sort_key(const PairTable::Entry& e) { return e.key; }
inline WideTable::Key sort_key(const WideTable::Entry& e) { return e.key; }

template <class Entry, class BucketOf>
void bucket_sort(std::vector<Entry>& v, size_t n_buckets, BucketOf bucket_of) {
  if (v.size() < 2) return;
  std::vector<size_t> start(n_buckets + 1, 0);
  for (const Entry& e : v) ++start[bucket_of(e) + 1];
  for (size_t b = 0; b < n_buckets; ++b) start[b + 1] += start[b];
  std::vector<Entry> out(v.size());
  std::vector<size_t> pos(start.begin(), start.end() - 1);
  for (const Entry& e : v) out[pos[bucket_of(e)]++] = e;
  for (size_t b = 0; b < n_buckets; ++b)
    if (start[b + 1] - start[b] > 1)
      std::sort(out.begin() + static_cast<std::ptrdiff_t>(start[b]),
                out.begin() + static_cast<std::ptrdiff_t>(start[b + 1]),
                [](const Entry& x, const Entry& y) { return sort_key(x) < sort_key(y); });
  v.swap(out);
}

// Distinct candidates of a corpus with their counts, in key order (pairs by (a, b), then
// longer tuples by (length, terms)), laid out as PhraseCounts keys after `lead` one-term keys
// that the caller fills in (count_phrases: the unigrams), so that its result is these arrays.
struct Tuples {
  size_t lead = 0, n_pair = 0, n_seq = 0;
  std::vector<int64_t> key_offsets;
  std::vector<int32_t> key_terms;
  std::vector<int64_t> key_counts;
  size_t n_keys() const { return key_counts.size(); }
  const int32_t* terms(size_t k) const { return key_terms.data() + key_offsets[k]; }
  size_t len(size_t k) const { return static_cast<size_t>(key_offsets[k + 1] - key_offsets[k]); }
};

// Candidates are counted in two passes (radix-partitioned aggregation). Pass 1 splits the
// documents between the threads; each thread appends the key of every candidate to its own
// buffer of the candidate's part (parts are ranges of first terms, balanced by the first
// term's count) and counts the frequent pairs in its own dense array. Pass 2 splits the parts
// between the threads: each part's keys are counted in a table of that part alone, then
// sorted; concatenating the parts in order gives the global key order.
// Profile (1M questions, 6.8M candidates, 2-core EPYC): before, every thread scanned the whole
// corpus and counted only the candidates of the parts it owned, so a second thread halved the
// hashing but not the scan and added a mispredicted owner test per candidate: the scan took
// 0.096 s with 1 thread and 0.097 s with 2 (count_phrases 0.116 -> 0.124 s). A part's table
// (1/64 of the keys) also stays in L2, where one table of 400k pairs did not.
Tuples collect_tuples(const IdCorpus& c, const uint8_t* conn, const std::vector<int64_t>& weight, size_t lead,
                      int workers) {
  workers = resolve_workers(workers);
  size_t n_tok = c.n_ids();
  size_t W = n_tok < (size_t{1} << 16) ? 1 : static_cast<size_t>(workers);
  size_t P = n_tok < (size_t{1} << 16) ? 1 : 64;
  std::vector<uint16_t> part_of(c.n_terms, 0);
  if (P > 1) {
    int64_t total = 0;
    for (int64_t w : weight) total += w;
    int64_t acc = 0;
    for (size_t t = 0; t < c.n_terms; ++t) {
      auto p = static_cast<size_t>(
          total > 0 ? static_cast<double>(acc) * static_cast<double>(P) / static_cast<double>(total) : 0.0);
      part_of[t] = static_cast<uint16_t>(std::min(P - 1, p));
      acc += weight[t];
    }
  }
  std::vector<size_t> part_begin(P + 1, c.n_terms);  // parts are ranges of first terms
  for (size_t t = c.n_terms; t-- > 0;) part_begin[part_of[t]] = t;
  for (size_t p = P; p-- > 0;) part_begin[p] = std::min(part_begin[p], part_begin[p + 1]);
  // Pairs of two frequent terms are counted in a dense K x K array that stays in cache; the
  // hash tables get the rest. Corpora built here number terms by descending frequency, so
  // with K = 1024 this covers ~60% of the candidates of a question corpus (1M questions:
  // count_phrases 0.20 -> 0.165 s of CPU; a hash table of 400k pairs does not fit in L2).
  const size_t K = n_tok >= (size_t{1} << 16) && n_tok < (size_t{1} << 32) ? std::min<size_t>(c.n_terms, 1024) : 0;
  // Candidates with 1-7 connector words in between ("bank of america") are packed into a
  // 128-bit key (length 4 bits | a 31 | connector indices 8 bits each, first one highest, 56 |
  // b 31) when there are at most 255 connector words: numeric order of the keys is then the
  // key order (length, terms), as connector indices follow term ids. With gensim's English
  // connector words most candidates are such; with the arena-backed table count_phrases took
  // 0.74 s of CPU on 1M questions, 0.54 s with packed keys.
  std::vector<uint8_t> conn_idx(c.n_terms, 0);
  std::vector<int32_t> conn_term(1, -1);
  for (size_t t = 0; t < c.n_terms; ++t)
    if (conn[t]) conn_term.push_back(static_cast<int32_t>(t));
  const bool wide_ok = conn_term.size() <= 256;
  if (wide_ok)
    for (size_t i = 1; i < conn_term.size(); ++i) conn_idx[static_cast<size_t>(conn_term[i])] = static_cast<uint8_t>(i);
  using Wide = WideTable::Key;
  struct Local {  // one per thread of pass 1
    std::vector<uint32_t> dense;
    std::vector<std::vector<uint64_t>> pairs;  // per part
    std::vector<std::vector<Wide>> wides;      // per part
    std::vector<SeqTable> seqs;                // per part (candidates too long to pack: rare)
  };
  std::vector<std::unique_ptr<Local>> local(W);
  parallel_for(c.n_docs, static_cast<int>(W), kChunkDocs, [&](size_t tid, size_t db, size_t de) {
    if (!local[tid]) {
      local[tid] = std::make_unique<Local>();
      local[tid]->dense.assign(K * K, 0);
      local[tid]->pairs.resize(P);
      local[tid]->wides.resize(P);
      local[tid]->seqs.resize(P);
    }
    Local& L = *local[tid];
    uint32_t* dense = L.dense.data();
    for (size_t d = db; d < de; ++d) {
      scan_doc(
          c.ids + c.offsets[d], c.ids + c.offsets[d + 1], conn, [](int32_t) {},
          [&](const int32_t* first, const int32_t* last) {
            size_t p = part_of[static_cast<size_t>(*first)];
            if (last == first + 1) {
              auto a = static_cast<size_t>(*first), b = static_cast<size_t>(*last);
              if (a < K && b < K) {
                ++dense[a * K + b];
              } else {
                L.pairs[p].push_back(pair_key(*first, *last));
              }
            } else if (wide_ok && last - first <= 8) {
              uint64_t mid = 0;
              for (const int32_t* q = first + 1; q < last; ++q) mid = (mid << 8) | conn_idx[static_cast<size_t>(*q)];
              L.wides[p].push_back((static_cast<Wide>(last - first + 1) << 118) |
                                   (static_cast<Wide>(static_cast<uint32_t>(*first)) << 87) |
                                   (static_cast<Wide>(mid) << 31) | static_cast<uint32_t>(*last));
            } else {
              ++L.seqs[p].at(first, static_cast<size_t>(last - first) + 1);
            }
          });
    }
  });
  // Pass 2: count, sort and decode each part; merge in its dense rows.
  std::vector<std::vector<PairTable::Entry>> pair_sorted(P);
  struct SeqList {  // decoded candidates of >= 3 terms, in key order
    std::vector<int32_t> terms;
    std::vector<int64_t> ends, lens, counts;
    void push(int64_t len, int64_t count) {
      ends.push_back(static_cast<int64_t>(terms.size()));
      lens.push_back(len);
      counts.push_back(count);
    }
    size_t size() const { return counts.size(); }
  };
  std::vector<SeqList> seq_sorted(P);
  parallel_for(P, workers, 1, [&](size_t, size_t b, size_t e) {
    for (size_t p = b; p < e; ++p) {
      size_t n_pair = 0, n_wide = 0;
      for (const auto& L : local) {
        if (!L) continue;
        n_pair += L->pairs[p].size();
        n_wide += L->wides[p].size();
      }
      PairTable pairs(std::min<size_t>(n_pair, 1 << 12));  // grown as needed: most keys repeat
      WideTable wide(std::min<size_t>(n_wide, 1 << 12));
      SeqTable seqs;
      for (auto& L : local) {
        if (!L) continue;
        for (uint64_t key : L->pairs[p]) ++pairs.at(key);
        for (Wide key : L->wides[p]) ++wide.at(key);
        std::vector<uint64_t>().swap(L->pairs[p]);
        std::vector<Wide>().swap(L->wides[p]);
        const SeqTable& ls = L->seqs[p];
        ls.for_each([&](const SeqTable::Entry& en) { seqs.at(ls.seq(en), static_cast<size_t>(en.len)) += en.val; });
        L->seqs[p] = SeqTable();
      }
      std::vector<PairTable::Entry> hashed;
      hashed.reserve(pairs.size());
      pairs.for_each([&](const PairTable::Entry& en) { hashed.push_back(en); });
      const size_t lo = part_begin[p], span = part_begin[p + 1] - part_begin[p];
      bucket_sort(hashed, span, [&](const PairTable::Entry& en) { return static_cast<size_t>(en.key >> 32) - lo; });
      PairTable().swap(pairs);
      auto& ps = pair_sorted[p];
      size_t j = 0;
      std::vector<int64_t> row(K);
      for (size_t a = part_begin[p]; a < std::min(part_begin[p + 1], K); ++a) {
        std::fill(row.begin(), row.end(), 0);
        for (const auto& L : local)
          if (L)
            for (size_t bb = 0; bb < K; ++bb) row[bb] += L->dense[a * K + bb];
        for (size_t bb = 0; bb < K; ++bb)
          if (row[bb])
            ps.push_back(PairTable::Entry{pair_key(static_cast<int32_t>(a), static_cast<int32_t>(bb)), row[bb]});
        for (; j < hashed.size() && (hashed[j].key >> 32) == a; ++j) ps.push_back(hashed[j]);  // b >= K
      }
      ps.insert(ps.end(), hashed.begin() + static_cast<std::ptrdiff_t>(j), hashed.end());
      // Longer candidates of this part, decoded in key order: packed ones (lengths 3-9)
      // first, then the arena-backed ones (longer, or all of them without packing).
      SeqList& out = seq_sorted[p];
      std::vector<WideTable::Entry> wides;
      wides.reserve(wide.size());
      wide.for_each([&](const WideTable::Entry& en) { wides.push_back(en); });
      bucket_sort(wides, 7 * span, [&](const WideTable::Entry& en) {  // (length 3..9, first term)
        return (static_cast<size_t>(en.key >> 118) - 3) * span + (static_cast<size_t>(en.key >> 87) & 0x7fffffffu) - lo;
      });
      out.terms.reserve(wides.size() * 4);
      out.ends.reserve(wides.size() + seqs.size());
      out.lens.reserve(wides.size() + seqs.size());
      out.counts.reserve(wides.size() + seqs.size());
      for (const auto& en : wides) {
        WideTable::Key key = en.key;
        auto len = static_cast<size_t>(key >> 118);
        auto mid = static_cast<uint64_t>(key >> 31) & ((uint64_t{1} << 56) - 1);
        out.terms.push_back(static_cast<int32_t>((key >> 87) & 0x7fffffffu));
        for (size_t i = len - 2; i-- > 0;) out.terms.push_back(conn_term[(mid >> (8 * i)) & 0xffu]);
        out.terms.push_back(static_cast<int32_t>(static_cast<uint64_t>(key) & 0x7fffffffu));
        out.push(static_cast<int64_t>(len), en.val);
      }
      std::vector<SeqTable::Entry> ss;
      ss.reserve(seqs.size());
      seqs.for_each([&](const SeqTable::Entry& en) { ss.push_back(en); });
      const SeqTable& tab = seqs;
      std::sort(ss.begin(), ss.end(), [&](const SeqTable::Entry& x, const SeqTable::Entry& y) {
        if (x.len != y.len) return x.len < y.len;
        return std::lexicographical_compare(tab.seq(x), tab.seq(x) + x.len, tab.seq(y), tab.seq(y) + y.len);
      });
      for (const auto& en : ss) {
        out.terms.insert(out.terms.end(), tab.seq(en), tab.seq(en) + en.len);
        out.push(en.len, en.val);
      }
    }
  });
  // Concatenate the parts in parallel: pairs part after part; longer tuples by length, and
  // for each length part after part (parts are ranges of first terms). Block (L, p) is the
  // run of length-L tuples of part p (each part's list is sorted by length).
  size_t max_len = 0;
  for (const SeqList& sl : seq_sorted)
    if (sl.size()) max_len = std::max(max_len, static_cast<size_t>(sl.lens.back()));
  const size_t n_blocks = (max_len + 1) * P;
  std::vector<size_t> blk_first(n_blocks + 1, 0);  // first index of block (L, p) in its part
  std::vector<size_t> blk_n(n_blocks, 0), blk_terms(n_blocks, 0);
  parallel_for(P, workers, 1, [&](size_t, size_t b, size_t e) {
    for (size_t p = b; p < e; ++p) {
      const SeqList& sl = seq_sorted[p];
      for (size_t i = 0; i < sl.size(); ++i) {
        size_t k = static_cast<size_t>(sl.lens[i]) * P + p;
        if (blk_n[k]++ == 0) blk_first[k] = i;
        blk_terms[k] += static_cast<size_t>(sl.lens[i]);
      }
    }
  });
  std::vector<size_t> pair_at(P + 1, 0), seq_at(n_blocks + 1, 0), term_at(n_blocks + 1, 0);
  for (size_t p = 0; p < P; ++p) pair_at[p + 1] = pair_at[p] + pair_sorted[p].size();
  for (size_t k = 0; k < n_blocks; ++k) {  // k = L * P + p: length-major, as the output
    seq_at[k + 1] = seq_at[k] + blk_n[k];
    term_at[k + 1] = term_at[k] + blk_terms[k];
  }
  Tuples out;
  out.lead = lead;
  out.n_pair = pair_at[P];
  out.n_seq = seq_at[n_blocks];
  const size_t seq_key0 = lead + out.n_pair, seq_term0 = lead + 2 * out.n_pair;
  out.key_offsets.resize(seq_key0 + out.n_seq + 1);
  out.key_terms.resize(seq_term0 + term_at[n_blocks]);
  out.key_counts.resize(seq_key0 + out.n_seq);
  int64_t* ko = out.key_offsets.data();
  int32_t* kt = out.key_terms.data();
  int64_t* kc = out.key_counts.data();
  for (size_t k = 0; k <= lead; ++k) ko[k] = static_cast<int64_t>(k);
  parallel_for(P, workers, 1, [&](size_t, size_t b, size_t e) {
    for (size_t p = b; p < e; ++p) {
      for (size_t i = pair_at[p]; i < pair_at[p + 1]; ++i) {
        const PairTable::Entry& en = pair_sorted[p][i - pair_at[p]];
        kt[lead + 2 * i] = static_cast<int32_t>(en.key >> 32);
        kt[lead + 2 * i + 1] = static_cast<int32_t>(en.key & 0xffffffffu);
        ko[lead + i + 1] = static_cast<int64_t>(lead + 2 * i + 2);
        kc[lead + i] = en.val;
      }
      std::vector<PairTable::Entry>().swap(pair_sorted[p]);
      const SeqList& sl = seq_sorted[p];
      for (size_t L = 0; L <= max_len; ++L) {
        size_t k = L * P + p;
        size_t so = seq_key0 + seq_at[k], to = seq_term0 + term_at[k];
        for (size_t i = blk_first[k], end = i + blk_n[k]; i < end; ++i) {
          const int32_t* src = sl.terms.data() + sl.ends[i] - sl.lens[i];
          std::copy(src, src + sl.lens[i], kt + to);
          to += static_cast<size_t>(sl.lens[i]);
          ko[so + 1] = static_cast<int64_t>(to);
          kc[so++] = sl.counts[i];
        }
      }
    }
  });
  return out;
}

// Non-connector token counts per term: threads count ranges of the corpus into their own
// arrays, summed afterwards. (Owner threads that each scanned everything for the terms they
// own took 0.008 s with 1 thread and 0.027 s with 2 on 1M questions: the owner test was a
// mispredicted branch per token.)
std::vector<int64_t> unigram_counts(const IdCorpus& c, const uint8_t* conn, int workers) {
  workers = resolve_workers(workers);
  size_t n = c.n_ids();
  size_t W = n < (size_t{1} << 16) ? 1 : static_cast<size_t>(workers);
  std::vector<std::vector<int64_t>> local(W);
  parallel_for(n, static_cast<int>(W), size_t{1} << 18, [&](size_t tid, size_t b, size_t e) {
    auto& uc = local[tid];
    if (uc.empty()) uc.assign(c.n_terms, 0);
    for (size_t i = b; i < e; ++i) {
      auto t = static_cast<size_t>(c.ids[i]);
      uc[t] += conn[t] ? 0 : 1;
    }
  });
  std::vector<int64_t> uc(c.n_terms, 0);
  for (const auto& l : local)
    if (!l.empty())
      for (size_t t = 0; t < c.n_terms; ++t) uc[t] += l[t];
  return uc;
}

}  // namespace

// =================================================================== build_corpus

namespace {

// Per-thread buffers of text_tokenizer.
struct alignas(64) TextScratch {  // one cache line per worker: no false sharing of the headers
  std::string buf;
  std::vector<uint64_t> scratch;
};

// The tokenizer of build_corpus and tokenize_rows: whitespace, or ROUGE's with `per_thread[tid]`
// as its buffers (one entry per worker).
RowTokenizer text_tokenizer(const std::string_view* texts, Tokenizer tok, std::vector<TextScratch>& per_thread) {
  return [texts, tok, &per_thread](size_t tid, size_t d, std::vector<std::string_view>& out) {
    if (tok == Tokenizer::Whitespace) {
      split_whitespace(texts[d], out);
      return;
    }
    TextScratch& s = per_thread[tid];
    s.buf.clear();
    if (s.buf.capacity() < texts[d].size()) s.buf.reserve(texts[d].size());
    tokenize_rouge(texts[d], s.buf, out, s.scratch);
  };
}

// The first phase of build_corpus and intern_rows: each worker tokenizes whole chunks of rows and
// interns their tokens in a table of its own (`local[tid]`, ids local to it); returns the worker
// of each chunk. Tokens go to a buffer of this thread, copied to the chunk when it is done: the
// chunks' vector headers share cache lines, and pushing into them directly made the two threads
// fight over those lines on every token (tokenizing 1M questions: 0.27 s with 1 thread, 0.20 s with 2).
// on_rows (optional) gets the finished chunks in order, on the calling thread (worker 0): before
// each chunk it takes and after the others joined.
std::vector<int32_t> intern_chunks(RawDocs& raw, std::vector<std::unique_ptr<StringInterner>>& local, int workers,
                                   const RowTokenizer& tokenize, const RowsDone* on_rows = nullptr) {
  std::vector<int32_t> chunk_worker(raw.n_chunks(), 0);
  std::vector<std::atomic<uint8_t>> done(on_rows ? raw.n_chunks() : 0);
  size_t handed = 0;  // chunks passed to on_rows (worker 0 only)
  auto hand_over = [&]() {
    while (handed < done.size() && done[handed].load(std::memory_order_acquire)) {
      size_t b = raw.chunk_begin(handed), e = raw.chunk_end(handed);
      (*on_rows)(b, e, raw.doc_len.data() + b);
      ++handed;
    }
  };
  parallel_for(raw.n_chunks(), workers, 1, [&](size_t tid, size_t cb, size_t ce) {
    if (!local[tid]) local[tid] = std::make_unique<StringInterner>(1 << 12);
    StringInterner& si = *local[tid];
    std::vector<std::string_view> toks;
    std::vector<int32_t> out;
    for (size_t c = cb; c < ce; ++c) {
      if (on_rows && tid == 0) hand_over();
      chunk_worker[c] = static_cast<int32_t>(tid);
      out.clear();
      for (size_t d = raw.chunk_begin(c); d < raw.chunk_end(c); ++d) {
        toks.clear();
        tokenize(tid, d, toks);
        for (std::string_view s : toks) out.push_back(si.intern(s, true).first);
        raw.doc_len[d] = static_cast<int64_t>(toks.size());
      }
      raw.chunks[c].assign(out.begin(), out.end());
      if (on_rows) done[c].store(1, std::memory_order_release);
    }
  });
  if (on_rows) hand_over();
  return chunk_worker;
}

}  // namespace

CorpusData build_corpus(const std::string_view* texts, size_t n, Tokenizer tok, int workers) {
  workers = resolve_workers(workers);
  RawDocs raw(n);
  std::vector<std::unique_ptr<StringInterner>> local(static_cast<size_t>(workers));
  std::vector<TextScratch> per_thread(static_cast<size_t>(workers));
  std::vector<int32_t> chunk_worker = intern_chunks(raw, local, workers, text_tokenizer(texts, tok, per_thread));
  // Raw ids: worker w's local ids shifted by the sizes of the workers before it.
  std::vector<int32_t> base(local.size() + 1, 0);
  std::vector<std::string_view> raw_str;
  for (size_t w = 0; w < local.size(); ++w) {
    size_t sz = local[w] ? local[w]->size() : 0;
    base[w + 1] = base[w] + static_cast<int32_t>(sz);
    for (size_t i = 0; i < sz; ++i) raw_str.push_back(local[w]->str(i));
  }
  parallel_for(raw.n_chunks(), workers, 1, [&](size_t, size_t b, size_t e) {
    for (size_t c = b; c < e; ++c) {
      int32_t shift = base[static_cast<size_t>(chunk_worker[c])];
      if (shift)
        for (int32_t& t : raw.chunks[c]) t += shift;
    }
  });
  size_t used = 0;
  for (auto& l : local) used += l ? 1 : 0;
  return finalize(raw, raw_str, used > 1, workers);
}

TokenRows intern_rows(size_t n, int workers, const RowTokenizer& tokenize, const RowsDone* on_rows) {
  workers = resolve_workers(workers);
  RawDocs raw(n);
  std::vector<std::unique_ptr<StringInterner>> local(static_cast<size_t>(workers));
  std::vector<int32_t> chunk_worker = intern_chunks(raw, local, workers, tokenize, on_rows);
  // Merge: the first table keeps its ids; the others' strings are looked up in it, and the
  // strings it lacks are interned once more (so each is in the vocabulary once).
  TokenRows rows;
  std::vector<std::vector<int32_t>> remap(local.size());
  const StringInterner* first = nullptr;
  StringInterner extra;
  for (size_t w = 0; w < local.size(); ++w) {
    if (!local[w]) continue;
    const StringInterner& si = *local[w];
    if (!first) {
      first = &si;
      for (size_t i = 0; i < si.size(); ++i) rows.vocab.push_back(si.str(i));
      continue;
    }
    remap[w].resize(si.size());
    for (size_t i = 0; i < si.size(); ++i) {
      int32_t id = first->find(si.str(i));
      if (id < 0) {
        auto [k, fresh] = extra.intern(si.str(i), false);
        if (fresh) rows.vocab.push_back(si.str(i));
        id = static_cast<int32_t>(first->size()) + k;
      }
      remap[w][i] = id;
    }
  }
  rows.offsets.resize(n + 1);
  rows.offsets[0] = 0;
  for (size_t d = 0; d < n; ++d) rows.offsets[d + 1] = rows.offsets[d] + raw.doc_len[d];
  rows.ids.resize(static_cast<size_t>(rows.offsets[n]));
  parallel_for(raw.n_chunks(), workers, 1, [&](size_t, size_t b, size_t e) {
    for (size_t c = b; c < e; ++c) {
      const std::vector<int32_t>& src = raw.chunks[c];
      int32_t* dst = rows.ids.data() + rows.offsets[raw.chunk_begin(c)];
      const std::vector<int32_t>& map = remap[static_cast<size_t>(chunk_worker[c])];
      if (map.empty()) {
        std::copy(src.begin(), src.end(), dst);
      } else {
        for (size_t j = 0; j < src.size(); ++j) dst[j] = map[static_cast<size_t>(src[j])];
      }
      std::vector<int32_t>().swap(raw.chunks[c]);
    }
  });
  return rows;
}

TokenRows tokenize_rows(const std::string_view* texts, size_t n, Tokenizer tok, int workers, const RowsDone* on_rows) {
  std::vector<TextScratch> per_thread(static_cast<size_t>(resolve_workers(workers)));
  return intern_rows(n, workers, text_tokenizer(texts, tok, per_thread), on_rows);
}

// =================================================================== phrase scores

double phrase_score(Scoring scoring, int64_t worda_count, int64_t wordb_count, int64_t bigram_count, int64_t len_vocab,
                    int64_t min_count, int64_t corpus_word_count) {
  if (scoring == Scoring::Default) {
    __int128 denom = static_cast<__int128>(worda_count) * static_cast<__int128>(wordb_count);
    if (denom == 0) return -std::numeric_limits<double>::infinity();
    return static_cast<double>(bigram_count - min_count) / static_cast<double>(denom) * static_cast<double>(len_vocab);
  }
  // Where Python would raise ZeroDivisionError (cwc == 0, pa * pb == 0, pab == 1) the score is
  // -inf here: none of these can happen with counts learned from a corpus (a scored candidate
  // has three counted parts, so bigram_count < corpus_word_count).
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  if (bigram_count < min_count) return kNegInf;
  if (corpus_word_count == 0) return kNegInf;
  auto cwc = static_cast<double>(corpus_word_count);
  double pa = static_cast<double>(worda_count) / cwc;
  double pb = static_cast<double>(wordb_count) / cwc;
  double pab = static_cast<double>(bigram_count) / cwc;
  double papb = pa * pb;
  if (papb == 0.0) return kNegInf;
  double ratio = pab / papb;
  if (!(ratio > 0.0) || !(pab > 0.0)) return kNegInf;  // math.log raises ValueError: gensim's -inf
  double den = -std::log(pab);
  if (den == 0.0) return kNegInf;
  return std::log(ratio) / den;
}

// =================================================================== count_phrases

PhraseCounts count_phrases(const IdCorpus& c, const std::string_view* connectors, size_t n_connectors,
                           std::string_view delimiter, int64_t max_vocab_size, int workers) {
  workers = resolve_workers(workers);
  if (delimiter.empty()) throw std::invalid_argument("delimiter must be a non-empty string");
  check_ids(c, workers);
  std::vector<uint8_t> conn = connector_flags(c.vocab, c.n_terms, connectors, n_connectors);
  std::vector<int64_t> uc = unigram_counts(c, conn.data(), workers);
  const bool general = !borderless(delimiter) || any_contains(c.vocab, c.n_terms, delimiter);

  // Keys in key order: unigrams (term order), pairs, longer tuples.
  std::vector<int32_t> uni_terms;
  for (size_t t = 0; t < c.n_terms; ++t)
    if (uc[t] > 0) uni_terms.push_back(static_cast<int32_t>(t));
  Tuples tup = collect_tuples(c, conn.data(), uc, uni_terms.size(), workers);
  const size_t n_uni = uni_terms.size(), n_pair = tup.n_pair, n_seq = tup.n_seq;
  const size_t K = n_uni + n_pair + n_seq;
  for (size_t k = 0; k < n_uni; ++k) {
    tup.key_terms[k] = uni_terms[k];
    tup.key_counts[k] = uc[static_cast<size_t>(uni_terms[k])];
  }
  auto key_count = [&](size_t k) -> int64_t { return tup.key_counts[k]; };
  // Terms of key k into buf (cleared).
  auto key_terms = [&](size_t k, std::vector<int32_t>& buf) { buf.assign(tup.terms(k), tup.terms(k) + tup.len(k)); };

  // Classes: keys with the same joined string (general mode) or the keys themselves.
  std::vector<int32_t> class_of;  // empty in fast mode: class == key
  std::vector<int32_t> class_rep;
  std::vector<int64_t> class_count;
  size_t n_classes = K;
  if (general) {
    class_of.resize(K);
    StringList strs;
    std::string tmp;
    std::vector<int32_t> buf;
    for (size_t k = 0; k < K; ++k) {
      key_terms(k, buf);
      tmp.clear();
      append_joined(tmp, c.vocab, buf.data(), buf.size(), delimiter);
      strs.push_back(tmp);
    }
    StringInterner si(K);
    for (size_t k = 0; k < K; ++k) {
      auto r = si.intern(strs[k], false);
      class_of[k] = r.first;
      if (r.second) {
        class_rep.push_back(static_cast<int32_t>(k));
        class_count.push_back(0);
      }
      class_count[static_cast<size_t>(r.first)] += key_count(k);
    }
    n_classes = class_rep.size();
  }

  PhraseCounts out;
  out.corpus_word_count = static_cast<int64_t>(c.n_ids());
  out.min_reduce = 1;
  std::vector<int64_t> emulated;
  if (static_cast<int64_t>(n_classes) > max_vocab_size) {
    // gensim prunes between sentences once the vocabulary outgrows max_vocab_size: replay
    // the corpus sentence by sentence with per-class counts.
    auto cls = [&](size_t k) -> int32_t { return general ? class_of[k] : static_cast<int32_t>(k); };
    std::vector<int32_t> uni_class(c.n_terms, -1);
    for (size_t k = 0; k < n_uni; ++k) uni_class[static_cast<size_t>(uni_terms[k])] = cls(k);
    PairTable pair_class(n_pair);
    for (size_t k = n_uni; k < n_uni + n_pair; ++k) pair_class.at(pair_key(tup.terms(k)[0], tup.terms(k)[1])) = cls(k);
    SeqTable seq_class(n_seq);
    for (size_t k = n_uni + n_pair; k < K; ++k) seq_class.at(tup.terms(k), tup.len(k)) = cls(k);
    emulated.assign(n_classes, 0);
    std::vector<int32_t> live;
    int64_t present = 0, min_reduce = 1;
    auto bump = [&](int32_t k) {
      if (emulated[static_cast<size_t>(k)]++ == 0) {
        ++present;
        live.push_back(k);
      }
    };
    for (size_t d = 0; d < c.n_docs; ++d) {
      scan_doc(
          c.ids + c.offsets[d], c.ids + c.offsets[d + 1], conn.data(),
          [&](int32_t t) { bump(uni_class[static_cast<size_t>(t)]); },
          [&](const int32_t* first, const int32_t* last) {
            if (last == first + 1) {
              bump(static_cast<int32_t>(*pair_class.find(pair_key(*first, *last))));
            } else {
              bump(static_cast<int32_t>(*seq_class.find(first, static_cast<size_t>(last - first) + 1)));
            }
          });
      if (present > max_vocab_size) {
        size_t w = 0;
        for (int32_t k : live) {
          if (emulated[static_cast<size_t>(k)] < min_reduce) {
            emulated[static_cast<size_t>(k)] = 0;
            --present;
          } else {
            live[w++] = k;
          }
        }
        live.resize(w);
        ++min_reduce;
      }
    }
    out.min_reduce = min_reduce;
  }

  if (!general && emulated.empty()) {
    // Every key is its own class with a count >= 1: the result is the key lists as they are.
    // (Copying them key by key took 0.031 s of count_phrases' 0.22 s with connector words.)
    out.key_offsets = std::move(tup.key_offsets);
    out.key_terms = std::move(tup.key_terms);
    out.key_counts = std::move(tup.key_counts);
    return out;
  }
  std::vector<int32_t> buf;
  for (size_t cl = 0; cl < n_classes; ++cl) {
    int64_t cnt = !emulated.empty() ? emulated[cl] : general ? class_count[cl] : key_count(cl);
    if (cnt <= 0) continue;
    key_terms(general ? static_cast<size_t>(class_rep[cl]) : cl, buf);
    out.key_terms.insert(out.key_terms.end(), buf.begin(), buf.end());
    out.key_offsets.push_back(static_cast<int64_t>(out.key_terms.size()));
    out.key_counts.push_back(cnt);
  }
  return out;
}

// =================================================================== models

namespace {

// Model arrays: validated once, with unigram counts and (general mode) class strings.
struct ModelIndex {
  bool general = false;
  std::vector<int64_t> uni_count;  // per model term, from one-term keys
  StringInterner strings;          // general mode: key string -> key index
  StringList key_str;
};

void check_model(const PhraseModel& m) {
  if (m.key_offsets[0] != 0) throw std::invalid_argument("key_offsets must start at 0");
  for (size_t k = 0; k < m.n_keys; ++k) {
    if (m.key_offsets[k + 1] <= m.key_offsets[k])
      throw std::invalid_argument("key_offsets must be increasing: key " + std::to_string(k) + " has no terms");
  }
  size_t n = static_cast<size_t>(m.key_offsets[m.n_keys]);
  for (size_t i = 0; i < n; ++i)
    if (m.key_terms[i] < 0 || static_cast<size_t>(m.key_terms[i]) >= m.n_terms)
      throw std::invalid_argument("key_terms[" + std::to_string(i) + "] = " + std::to_string(m.key_terms[i]) +
                                  " is outside [0, " + std::to_string(m.n_terms) + "), the model vocabulary size");
  // Keys sorted by (length, terms), strictly: distinct id tuples.
  for (size_t k = 1; k < m.n_keys; ++k) {
    const int32_t* a = m.key_terms + m.key_offsets[k - 1];
    const int32_t* b = m.key_terms + m.key_offsets[k];
    auto la = m.key_offsets[k] - m.key_offsets[k - 1], lb = m.key_offsets[k + 1] - m.key_offsets[k];
    bool less = la != lb ? la < lb : std::lexicographical_compare(a, a + la, b, b + lb);
    if (!less)
      throw std::invalid_argument(
          "keys must be sorted by (number of terms, terms) without repeats, as count_phrases "
          "returns them; key " +
          std::to_string(k) + " is out of order");
  }
  if (m.corpus_word_count < 0) throw std::invalid_argument("corpus_word_count must be >= 0");
}

void index_model(const PhraseModel& m, std::string_view d, bool general, ModelIndex& ix) {
  ix.general = general;
  ix.uni_count.assign(m.n_terms, 0);
  for (size_t k = 0; k < m.n_keys && m.key_offsets[k + 1] - m.key_offsets[k] == 1; ++k)
    ix.uni_count[static_cast<size_t>(m.key_terms[m.key_offsets[k]])] = m.key_counts[k];
  if (!general) return;
  std::string tmp;
  for (size_t k = 0; k < m.n_keys; ++k) {
    tmp.clear();
    append_joined(tmp, m.vocab, m.key_terms + m.key_offsets[k],
                  static_cast<size_t>(m.key_offsets[k + 1] - m.key_offsets[k]), d);
    ix.key_str.push_back(tmp);
  }
  ix.strings = StringInterner(m.n_keys);
  for (size_t k = 0; k < m.n_keys; ++k) {
    if (!ix.strings.intern(ix.key_str[k], false).second)
      throw std::invalid_argument("keys " + std::to_string(ix.strings.find(ix.key_str[k])) + " and " +
                                  std::to_string(k) + " join to the same string '" + std::string(ix.key_str[k]) + "'");
  }
}

inline int64_t count_of(const ModelIndex& ix, const PhraseModel& m, std::string_view s) {
  int32_t k = ix.strings.find(s);
  return k < 0 ? 0 : m.key_counts[k];
}

// Accepted candidates in the applied corpus' id space -> phrase index; phrase strings.
struct Accepted {
  PairTable pairs;
  SeqTable seqs;
  StringList strings;
  void add(const int32_t* t, size_t n, std::string_view s) {
    auto idx = static_cast<int64_t>(strings.size());
    if (n == 2) {
      pairs.at(pair_key(t[0], t[1])) = idx + 1;  // 0 = absent
    } else {
      seqs.at(t, n) = idx + 1;
    }
    strings.push_back(s);
  }
  // phrase index or -1
  int64_t find(const int32_t* first, const int32_t* last) const {
    if (last == first + 1) {
      const int64_t* v = pairs.find(pair_key(*first, *last));
      return v && *v > 0 ? *v - 1 : -1;
    }
    const int64_t* v = seqs.find(first, static_cast<size_t>(last - first) + 1);
    return v && *v > 0 ? *v - 1 : -1;
  }
};

// gensim analyze_sentence on every document, then the output corpus.
CorpusData greedy_apply(const IdCorpus& c, const uint8_t* conn, const Accepted& acc, bool merge, int workers) {
  RawDocs raw(c.n_docs);
  const auto T = static_cast<int32_t>(c.n_terms);
  parallel_for(raw.n_chunks(), workers, 1, [&](size_t, size_t cb, size_t ce) {
    std::vector<int32_t> out;  // this thread's: the chunks' vector headers share cache lines
    for (size_t ch = cb; ch < ce; ++ch) {
      out.clear();
      for (size_t d = raw.chunk_begin(ch); d < raw.chunk_end(ch); ++d) {
        size_t before = out.size();
        const int32_t* b = c.ids + c.offsets[d];
        const int32_t* e = c.ids + c.offsets[d + 1];
        const int32_t* start = nullptr;
        for (const int32_t* p = b; p < e; ++p) {
          if (conn[*p]) {
            if (!start) out.push_back(*p);  // inside a candidate it waits in `in_between`
            continue;
          }
          if (!start) {
            start = p;
            continue;
          }
          int64_t ph = acc.find(start, p);
          if (ph >= 0) {
            out.push_back(T + static_cast<int32_t>(ph));
            start = nullptr;
          } else {
            out.insert(out.end(), start, p);  // start_token and in_between
            start = p;
          }
        }
        if (start) out.insert(out.end(), start, e);
        raw.doc_len[d] = static_cast<int64_t>(out.size() - before);
      }
      raw.chunks[ch].assign(out.begin(), out.end());
    }
  });
  std::vector<std::string_view> raw_str(c.vocab, c.vocab + c.n_terms);
  for (size_t i = 0; i < acc.strings.size(); ++i) raw_str.push_back(acc.strings[i]);
  return finalize(raw, raw_str, merge, workers);
}

}  // namespace

void export_phrases(const PhraseModel& m, std::string_view d, const ScoreParams& params, StringList& phrases,
                    std::vector<double>& scores) {
  if (d.empty()) throw std::invalid_argument("delimiter must be a non-empty string");
  check_model(m);
  const bool general = !borderless(d) || any_contains(m.vocab, m.n_terms, d);
  ModelIndex ix;
  index_model(m, d, general, ix);
  const auto len_vocab = static_cast<int64_t>(m.n_keys);
  std::vector<std::string_view> pieces;
  std::string tmp;
  for (size_t k = 0; k < m.n_keys; ++k) {
    const int32_t* t = m.key_terms + m.key_offsets[k];
    auto n = static_cast<size_t>(m.key_offsets[k + 1] - m.key_offsets[k]);
    int64_t ca, cb;
    std::string_view s;
    if (!general) {
      if (n < 2) continue;  // no delimiter in the string
      ca = ix.uni_count[static_cast<size_t>(t[0])];
      cb = ix.uni_count[static_cast<size_t>(t[n - 1])];
    } else {
      s = ix.key_str[k];
      split_on(s, d, pieces);
      if (pieces.size() < 2) continue;
      ca = count_of(ix, m, pieces.front());
      cb = count_of(ix, m, pieces.back());
    }
    if (ca <= 0 || cb <= 0 || m.key_counts[k] <= 0) continue;
    double sc = phrase_score(params.scoring, ca, cb, m.key_counts[k], len_vocab, params.min_count, m.corpus_word_count);
    if (sc <= params.threshold) continue;
    if (!general) {
      tmp.clear();
      append_joined(tmp, m.vocab, t, n, d);
      s = tmp;
    }
    phrases.push_back(s);
    scores.push_back(sc);
  }
}

CorpusData apply_phrases(const IdCorpus& c, const std::string_view* connectors, size_t n_connectors, std::string_view d,
                         const PhraseModel& m, const ScoreParams& params, int workers) {
  workers = resolve_workers(workers);
  if (d.empty()) throw std::invalid_argument("delimiter must be a non-empty string");
  check_ids(c, workers);
  check_model(m);
  std::vector<uint8_t> conn = connector_flags(c.vocab, c.n_terms, connectors, n_connectors);
  const bool general = !borderless(d) || any_contains(c.vocab, c.n_terms, d) || any_contains(m.vocab, m.n_terms, d);
  ModelIndex ix;
  index_model(m, d, general, ix);
  const auto len_vocab = static_cast<int64_t>(m.n_keys);
  Accepted acc;
  std::string tmp;
  if (!general) {
    // Model keys are exactly the candidates that can score: translate them to corpus ids.
    StringInterner corpus_terms(c.n_terms);
    for (size_t t = 0; t < c.n_terms; ++t) corpus_terms.intern(c.vocab[t], false);
    std::vector<int32_t> to_corpus(m.n_terms);
    for (size_t t = 0; t < m.n_terms; ++t) to_corpus[t] = corpus_terms.find(m.vocab[t]);
    std::vector<int32_t> buf;
    for (size_t k = 0; k < m.n_keys; ++k) {
      const int32_t* t = m.key_terms + m.key_offsets[k];
      auto n = static_cast<size_t>(m.key_offsets[k + 1] - m.key_offsets[k]);
      if (n < 2) continue;
      int64_t ca = ix.uni_count[static_cast<size_t>(t[0])], cb = ix.uni_count[static_cast<size_t>(t[n - 1])];
      if (ca <= 0 || cb <= 0 || m.key_counts[k] <= 0) continue;
      buf.clear();
      for (size_t i = 0; i < n && buf.size() == i; ++i)
        if (to_corpus[static_cast<size_t>(t[i])] >= 0) buf.push_back(to_corpus[static_cast<size_t>(t[i])]);
      if (buf.size() != n) continue;  // a term the corpus lacks: never a candidate there
      double sc =
          phrase_score(params.scoring, ca, cb, m.key_counts[k], len_vocab, params.min_count, m.corpus_word_count);
      if (sc <= params.threshold) continue;
      tmp.clear();
      append_joined(tmp, m.vocab, t, n, d);
      acc.add(buf.data(), n, tmp);
    }
  } else {
    // Every distinct candidate of the corpus, scored through strings as gensim does.
    std::vector<int64_t> weight(c.n_terms, 1);
    Tuples tup = collect_tuples(c, conn.data(), weight, 0, workers);
    auto decide = [&](const int32_t* t, size_t n) {
      int64_t ca = count_of(ix, m, c.vocab[t[0]]);
      if (ca <= 0) return;
      int64_t cb = count_of(ix, m, c.vocab[t[n - 1]]);
      if (cb <= 0) return;
      tmp.clear();
      append_joined(tmp, c.vocab, t, n, d);
      int64_t ck = count_of(ix, m, tmp);
      if (ck <= 0) return;
      double sc = phrase_score(params.scoring, ca, cb, ck, len_vocab, params.min_count, m.corpus_word_count);
      if (sc <= params.threshold) return;
      acc.add(t, n, tmp);
    };
    for (size_t k = 0; k < tup.n_keys(); ++k) decide(tup.terms(k), tup.len(k));
  }
  return greedy_apply(c, conn.data(), acc, general, workers);
}

CorpusData apply_frozen(const IdCorpus& c, const std::string_view* connectors, size_t n_connectors, std::string_view d,
                        const std::string_view* phrases, const double* scores, size_t n_phrases, double threshold,
                        int workers) {
  workers = resolve_workers(workers);
  if (d.empty()) throw std::invalid_argument("delimiter must be a non-empty string");
  check_ids(c, workers);
  std::vector<uint8_t> conn = connector_flags(c.vocab, c.n_terms, connectors, n_connectors);
  StringInterner table(n_phrases);
  for (size_t i = 0; i < n_phrases; ++i)
    if (!table.intern(phrases[i], false).second)
      throw std::invalid_argument("phrases must be distinct; '" + std::string(phrases[i]) + "' is repeated");
  const bool general = !borderless(d) || any_contains(c.vocab, c.n_terms, d);
  Accepted acc;
  if (!general) {
    // A candidate's string splits back into its terms: look the phrases' pieces up.
    StringInterner corpus_terms(c.n_terms);
    for (size_t t = 0; t < c.n_terms; ++t) corpus_terms.intern(c.vocab[t], false);
    std::vector<std::string_view> pieces;
    std::vector<int32_t> buf;
    for (size_t i = 0; i < n_phrases; ++i) {
      if (!(scores[i] > threshold)) continue;
      split_on(phrases[i], d, pieces);
      if (pieces.size() < 2) continue;
      buf.clear();
      for (std::string_view p : pieces) {
        int32_t id = corpus_terms.find(p);
        if (id < 0) break;
        buf.push_back(id);
      }
      if (buf.size() != pieces.size()) continue;
      acc.add(buf.data(), buf.size(), phrases[i]);
    }
  } else {
    std::vector<int64_t> weight(c.n_terms, 1);
    Tuples tup = collect_tuples(c, conn.data(), weight, 0, workers);
    std::string tmp;
    auto decide = [&](const int32_t* t, size_t n) {
      tmp.clear();
      append_joined(tmp, c.vocab, t, n, d);
      int32_t i = table.find(tmp);
      if (i >= 0 && scores[i] > threshold) acc.add(t, n, tmp);
    };
    for (size_t k = 0; k < tup.n_keys(); ++k) decide(tup.terms(k), tup.len(k));
  }
  return greedy_apply(c, conn.data(), acc, general, workers);
}

}  // namespace pysynth::corpus
