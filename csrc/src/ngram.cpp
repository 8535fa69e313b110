#include "pysynth/ngram.hpp"

#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <unordered_map>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "pysynth/common.hpp"
#include "pysynth/porter.hpp"
#include "pysynth/text.hpp"

namespace pysynth {
namespace {

// First 8 bytes (zero padded) with the length in the top byte for words shorter than 8
// bytes, where it identifies the word exactly; longer words set the top bit and need a
// byte comparison on key equality.
inline uint64_t short_key(std::string_view s) {
  const char* b = s.data();
  size_t n = s.size();
  uint64_t k = 0;
  if (n >= 8) {
    std::memcpy(&k, b, 8);
    return k | (uint64_t{1} << 63);
  }
#if !defined(__SANITIZE_ADDRESS__)
  // An 8-byte load that stays inside the word's page cannot fault; mask the extra bytes.
  if ((reinterpret_cast<uintptr_t>(b) & 4095) <= 4096 - 8) {
    std::memcpy(&k, b, 8);
    k &= n ? (~uint64_t{0} >> (64 - 8 * n)) : 0;
  } else
#endif
  {
    for (size_t i = 0; i < n; ++i) k |= static_cast<uint64_t>(static_cast<unsigned char>(b[i])) << (8 * i);
  }
  return k | (static_cast<uint64_t>(n) << 56);
}

// Open-addressing interner mapping strings or 64-bit keys to dense ids. Reset is O(1)
// (a stamp per slot): segments are short, and clearing the table would dominate.
class Interner {
 public:
  void reset(size_t expected, int32_t first_id) {
    size_t cap = 16;
    while (cap < expected * 2 + 2) cap <<= 1;
    if (cap > slots_.size()) {
      slots_.assign(cap, Slot{});
      stamp_ = 0;
    }
    mask_ = cap - 1;  // only the first `cap` slots are used: small groups stay in cache
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(cap));
    if (++stamp_ == 0) {
      std::fill(slots_.begin(), slots_.end(), Slot{});
      stamp_ = 1;
    }
    first_ = next_ = first_id;
    limit_ = cap / 2;
    strs_.clear();
  }
  int32_t next_id() const { return next_; }

  // Strings are keyed by a cheap key that is exact for words shorter than 8 bytes; longer
  // words also get their bytes compared (kept in strs_, by id).
  int32_t str(std::string_view s) { return keyed(short_key(s), s); }
  // s under a key that is exact when its top bit is clear, a filter otherwise.
  int32_t keyed(uint64_t k, std::string_view s) {
    for (size_t i = slot_of(k);; i = (i + 1) & mask_) {
      Slot& sl = slots_[i];
      if (sl.stamp != stamp_) {
        strs_.push_back(s);
        return insert(sl, k);
      }
      if (sl.key == k && (!(k >> 63) || strs_[static_cast<size_t>(sl.id - first_)] == s)) return sl.id;
    }
  }
  int32_t key(uint64_t k) {
    for (size_t i = slot_of(k);; i = (i + 1) & mask_) {
      Slot& sl = slots_[i];
      if (sl.stamp != stamp_) return insert(sl, k);
      if (sl.key == k) return sl.id;
    }
  }

 private:
  struct Slot {  // 16 bytes: four per cache line
    uint64_t key = 0;
    uint32_t stamp = 0;
    int32_t id = 0;
  };
  // Fibonacci hashing: the top bits of k * 2^64/phi (cheaper than a full mixer, and
  // well spread for both byte keys and (id, id) pairs).
  size_t slot_of(uint64_t k) const { return static_cast<size_t>((k * 0x9E3779B97F4A7C15ULL) >> shift_); }
  int32_t insert(Slot& sl, uint64_t key) {
    if (next_ - first_ >= static_cast<int32_t>(limit_)) throw Error("interner overflow: group larger than announced");
    sl.key = key;
    sl.stamp = stamp_;
    sl.id = next_++;
    return sl.id;
  }
  std::vector<Slot> slots_;
  std::vector<std::string_view> strs_;
  size_t mask_ = 0, limit_ = 0;
  unsigned shift_ = 60;
  uint32_t stamp_ = 0;
  int32_t first_ = 0, next_ = 0;
};

enum class Mode { Rouge, RougeLsum, Whitespace, T13a, Pltrdy };

// One segment's tokens as dense ids, with sentence starts (sent.back() == ids.size()).
struct Seq {
  std::vector<int32_t> ids;
  std::vector<uint32_t> sent;
  bool no_sentence = false;
  // n-gram ids per order (index k holds order k + 1; order 1 is `ids` itself)
  std::vector<std::vector<int32_t>> grams;
  const std::vector<int32_t>& order(int n) const { return n == 1 ? ids : grams[n - 2]; }
};

struct Keyed {
  std::vector<unsigned char> buf;  // the text lower-cased, zero padded
  std::vector<uint64_t> bits;      // word-byte bitmap, then token starts / ends
  std::vector<uint64_t> keys;      // per token
  std::vector<uint32_t> pos, len;  // per token: start in buf, length
  std::vector<uint8_t> cls;        // 13a: byte classes, then rule-2 flags
  size_t n = 0;                    // tokens
};

struct alignas(64) Workspace {  // one per thread, a cache line apart
  std::string tmp;
  std::vector<std::string> tbuf;        // per text of the group: tokenized bytes
  std::vector<std::string_view> views;  // all tokens of the group
  std::vector<size_t> view_off;         // per text: first view
  std::unordered_map<std::string, std::string> stems;
  std::string stem_out;
  Interner words, grams;
  std::vector<int32_t> cnt, cnt2;
  std::vector<uint8_t> mark, pos_mark;
  std::vector<uint64_t> masks, vbits, eq;
  std::vector<uint64_t> vhash;  // filter key of each view (fast path)
  std::vector<uint64_t> scratch;
  std::vector<int32_t> table;
  std::vector<Seq> seqs;             // 0 = hypothesis, 1.. = its references
  std::vector<Keyed> kt;             // keyed path: 0 = hypothesis, 1.. = its references
  std::vector<int64_t> group_stats;  // one group's statistics when only P/R/F are wanted

  void ensure_ids(size_t n) {
    if (cnt.size() < n) {
      cnt.resize(n, 0);
      cnt2.resize(n, 0);
      mark.resize(n, 0);
    }
  }
  std::string_view stem(std::string_view tok) {
    // The cache owns keys and values: views into it stay valid for the whole call.
    auto it = stems.find(std::string(tok));
    if (it == stems.end()) {
      porter_stem(tok, stem_out);
      it = stems.emplace(std::string(tok), stem_out).first;
    }
    return it->second;
  }
};

// --- tokenization of one text into views (sentence starts recorded into seq.sent) -------

void rouge_piece(std::string_view piece, bool stem, std::string& buf, Workspace& ws) {
  size_t first = ws.views.size();
  tokenize_rouge(piece, buf, ws.views, ws.scratch);
  if (stem)
    for (size_t q = first; q < ws.views.size(); ++q)
      if (ws.views[q].size() > 3) ws.views[q] = ws.stem(ws.views[q]);
}

void tokenize_one(std::string_view s, Mode mode, bool stem, size_t k, Workspace& ws, Seq& seq) {
  std::string& buf = ws.tbuf[k];
  buf.clear();
  seq.sent.clear();
  seq.no_sentence = false;
  size_t first = ws.views.size();
  auto mark_sentence = [&]() { seq.sent.push_back(static_cast<uint32_t>(ws.views.size() - first)); };
  switch (mode) {
    case Mode::Rouge:
      buf.reserve(s.size());  // the rouge tokenizer never writes more bytes than it reads
      rouge_piece(s, stem, buf, ws);
      break;
    case Mode::RougeLsum: {
      // Sentences are the non-empty pieces of text.split("\n"); the reserve keeps views
      // into buf valid across pieces.
      buf.reserve(s.size());
      size_t start = 0;
      while (start <= s.size()) {
        size_t nl = s.find('\n', start);
        if (nl == std::string_view::npos) nl = s.size();
        if (nl > start) {
          mark_sentence();
          rouge_piece(s.substr(start, nl - start), stem, buf, ws);
        }
        start = nl + 1;
      }
      break;
    }
    case Mode::Whitespace: split_whitespace(s, ws.views); break;
    case Mode::T13a:
      tokenize_13a(s, buf, ws.tmp);
      split_whitespace(buf, ws.views);
      break;
    case Mode::Pltrdy: {
      // rouge 0.3.2: [" ".join(p.split()) for p in text.split(".") if len(p) > 0], then each
      // sentence .split(" "): a whitespace-only piece yields one empty word.
      size_t start = 0;
      while (start <= s.size()) {
        size_t dot = s.find('.', start);
        if (dot == std::string_view::npos) dot = s.size();
        if (dot > start) {
          mark_sentence();
          size_t before = ws.views.size();
          split_whitespace(s.substr(start, dot - start), ws.views);
          if (ws.views.size() == before) ws.views.emplace_back();
        }
        start = dot + 1;
      }
      seq.no_sentence = seq.sent.empty();
      break;
    }
  }
  seq.sent.push_back(static_cast<uint32_t>(ws.views.size() - first));
}

// The texts are scattered Python objects: touching them is a cache miss each (often two: a
// question's bytes straddle a line), so both ends of every text of the group are prefetched
// kAhead items ahead. always_inline: GCC deems a function that only prefetches `const` and
// deletes calls to it, which had silently removed this prefetch (0 prefetch instructions in
// the object). 100k real question pairs, 1 core: 52 -> 24 ms once it was emitted.
__attribute__((always_inline)) inline void prefetch_text(std::string_view s) {
  __builtin_prefetch(s.data());
  __builtin_prefetch(s.data() + s.size());  // a prefetch never faults
}
__attribute__((always_inline)) inline void prefetch_group(const TextColumn& hyps, const TextColumn& refs,
                                                          const int64_t* ref_offsets, size_t i, size_t end) {
  constexpr size_t kAhead = 16;
  if (hyps.is_ids() || i + kAhead >= end) return;
  size_t k = i + kAhead;
  prefetch_text(hyps.strs[k]);
  for (int64_t j = ref_offsets[k]; j < ref_offsets[k + 1]; ++j) prefetch_text(refs.strs[j]);
}

// Phase 1: tokenize hyp `i` and its references. Strings become views (ws.views, one range
// per text in ws.view_off); ids are copied raw into seqs[t].ids. Returns the text count.
size_t read_group(const TextColumn& hyps, const TextColumn& refs, const int64_t* ref_offsets, size_t i, Mode mode,
                  bool stem, Workspace& ws) {
  size_t r0 = static_cast<size_t>(ref_offsets[i]), r1 = static_cast<size_t>(ref_offsets[i + 1]);
  size_t n_texts = 1 + (r1 - r0);
  if (ws.seqs.size() < n_texts) ws.seqs.resize(n_texts);
  if (ws.tbuf.size() < n_texts) ws.tbuf.resize(n_texts);
  if (hyps.is_ids()) {
    for (size_t t = 0; t < n_texts; ++t) {
      const TextColumn& col = t == 0 ? hyps : refs;
      size_t row = t == 0 ? i : r0 + t - 1;
      int64_t b = col.offsets[row], e = col.offsets[row + 1];
      Seq& seq = ws.seqs[t];
      seq.ids.assign(col.ids + b, col.ids + e);
      seq.sent.assign({0u, static_cast<uint32_t>(e - b)});
      seq.no_sentence = false;
    }
  } else {
    ws.views.clear();
    ws.view_off.clear();
    for (size_t t = 0; t < n_texts; ++t) {
      ws.view_off.push_back(ws.views.size());
      tokenize_one(t == 0 ? hyps.strs[i] : refs.strs[r0 + t - 1], mode, stem, t, ws, ws.seqs[t]);
    }
    ws.view_off.push_back(ws.views.size());
  }
  return n_texts;
}

size_t text_len(const Workspace& ws, bool ids, size_t t) {
  return ids ? ws.seqs[t].ids.size() : ws.view_off[t + 1] - ws.view_off[t];
}

// Phase 2 (general path): intern every token into one dense id space shared by the group;
// the keyed path's tokens (ws.kt) when `keyed`, else views or raw ids from read_group.
void intern_words(bool ids, bool keyed, size_t n_texts, Workspace& ws) {
  size_t total = 0;
  for (size_t t = 0; t < n_texts; ++t) total += keyed ? ws.kt[t].n : text_len(ws, ids, t);
  ws.words.reset(total, 0);
  for (size_t t = 0; t < n_texts; ++t) {
    Seq& seq = ws.seqs[t];
    if (keyed) {
      const Keyed& k = ws.kt[t];
      const char* b = reinterpret_cast<const char*>(k.buf.data());
      seq.ids.resize(k.n);
      for (size_t q = 0; q < k.n; ++q) seq.ids[q] = ws.words.keyed(k.keys[q], std::string_view(b + k.pos[q], k.len[q]));
      seq.sent.assign({0u, static_cast<uint32_t>(k.n)});
      seq.no_sentence = false;
    } else if (ids) {
      for (auto& id : seq.ids) id = ws.words.key(static_cast<uint32_t>(id));
    } else {
      seq.ids.resize(ws.view_off[t + 1] - ws.view_off[t]);
      for (size_t q = 0; q < seq.ids.size(); ++q) seq.ids[q] = ws.words.str(ws.views[ws.view_off[t] + q]);
    }
  }
}

// n-gram ids up to max_order after intern_words. Returns the number of ids.
size_t intern_grams(size_t n_texts, int max_order, Workspace& ws) {
  int32_t n_words = ws.words.next_id();
  // n-gram ids: order k at position q = intern(order k-1 id at q, word id at q + k - 1).
  // Ids of every order live in one space, so a (prefix id, word id) key is unambiguous.
  size_t n_grams = 0;
  for (size_t t = 0; t < n_texts; ++t) {
    size_t len = ws.seqs[t].ids.size();
    for (int k = 2; k <= max_order; ++k) n_grams += len >= static_cast<size_t>(k) ? len - k + 1 : 0;
  }
  ws.grams.reset(n_grams, n_words);
  for (size_t t = 0; t < n_texts; ++t) {
    Seq& seq = ws.seqs[t];
    if (seq.grams.size() < static_cast<size_t>(std::max(max_order - 1, 0))) seq.grams.resize(max_order - 1);
    for (int k = 2; k <= max_order; ++k) {
      const auto& prev = seq.order(k - 1);
      auto& cur = seq.grams[k - 2];
      size_t len = seq.ids.size();
      cur.resize(len >= static_cast<size_t>(k) ? len - k + 1 : 0);
      for (size_t q = 0; q < cur.size(); ++q) {
        uint64_t key =
            (static_cast<uint64_t>(static_cast<uint32_t>(prev[q])) << 32) | static_cast<uint32_t>(seq.ids[q + k - 1]);
        cur[q] = ws.grams.key(key);
      }
    }
  }
  size_t n_ids = static_cast<size_t>(ws.grams.next_id());
  ws.ensure_ids(n_ids);
  return n_ids;
}

size_t intern_group(bool ids, size_t n_texts, int max_order, Workspace& ws) {
  intern_words(ids, false, n_texts, ws);
  return intern_grams(n_texts, max_order, ws);
}

// --- short-reference fast path ------------------------------------------------------------
// When the reference has at most 64 tokens, token equality is a bit matrix: M[i] has bit j
// set iff hyp token i equals ref token j. N-gram equality is then M[i] & (M[i+1] >> 1) & ...,
// multiset matches (sum over n-grams of min(count_hyp, count_ref)) follow from a greedy
// assignment within each equivalence class, and the LCS from the bit-parallel recurrence.
// No hashing or interning per n-gram: about 5x faster on question-length text.

void equality_masks(const Workspace& ws, bool ids, size_t h, size_t r, std::vector<uint64_t>& M) {
  size_t nh = text_len(ws, ids, h), nr = text_len(ws, ids, r);
  M.assign(nh, 0);
  if (ids) {
    const int32_t* a = ws.seqs[h].ids.data();
    const int32_t* b = ws.seqs[r].ids.data();
    for (size_t i = 0; i < nh; ++i) {
      uint64_t m = 0;
      for (size_t j = 0; j < nr; ++j) m |= static_cast<uint64_t>(a[i] == b[j]) << j;
      M[i] = m;
    }
    return;
  }
  const std::string_view* a = ws.views.data() + ws.view_off[h];
  const std::string_view* b = ws.views.data() + ws.view_off[r];
  const uint64_t* ha = ws.vhash.data() + ws.view_off[h];
  const uint64_t* hb = ws.vhash.data() + ws.view_off[r];
  for (size_t i = 0; i < nh; ++i) {
    uint64_t m = 0;
    for (size_t j = 0; j < nr; ++j) m |= static_cast<uint64_t>(ha[i] == hb[j]) << j;
    if (m && a[i].size() >= 8) {  // long tokens: the key was only a filter
      for (uint64_t x = m; x; x &= x - 1) {
        size_t j = static_cast<size_t>(__builtin_ctzll(x));
        if (a[i] != b[j]) m &= ~(uint64_t{1} << j);
      }
    }
    M[i] = m;
  }
}

// sum over distinct n-grams g of min(count_hyp(g), count_ref(g))
int64_t mask_matches(const std::vector<uint64_t>& M, int n) {
  size_t nh = M.size(), k = static_cast<size_t>(n);
  if (nh < k) return 0;
  uint64_t used = 0;
  int64_t count = 0;
  for (size_t i = 0; i + k <= nh; ++i) {
    uint64_t g = M[i];
    for (size_t q = 1; q < k && g; ++q) g &= M[i + q] >> q;
    uint64_t avail = g & ~used;
    if (avail) {
      used |= avail & (~avail + 1);
      ++count;
    }
  }
  return count;
}

int64_t mask_lcs(const std::vector<uint64_t>& M, size_t m) {
  if (m == 0) return 0;
  uint64_t V = ~uint64_t{0};
  for (uint64_t x : M) {
    uint64_t U = V & x;
    V = (V + U) | (V - U);
  }
  uint64_t live = m == 64 ? ~uint64_t{0} : ((uint64_t{1} << m) - 1);
  return __builtin_popcountll(~V & live);
}

void key_views(Workspace& ws) {
  ws.vhash.resize(ws.views.size());
  for (size_t q = 0; q < ws.views.size(); ++q) ws.vhash[q] = short_key(ws.views[q]);
}

// --- keyed tokens: rouge-score flavor, strings, no stemmer --------------------------------
// Profile (100k real question pairs from bench/_data.py, 7.8 tokens and 41 bytes per text,
// one core, AMD EPYC): rouge_stats took 62 ms, ~30 ms of it waiting on memory (the same
// texts copied into allocation order: 34 ms; the prefetch below was compiled away) and
// 16 ms in read_group (tokens as views, then a second pass for their keys); equality masks,
// matches and LCS ~10 ms. This path tokenizes each text once straight into 64-bit keys
// (lower-cased in registers; exact below 8 bytes, a hash checked by bytes above): 24 ms.

inline uint64_t load8(const unsigned char* p) {
  uint64_t x;
  std::memcpy(&x, p, 8);
  return x;
}

// Tokens of 8 bytes or more: a 64-bit mix of the bytes with the top bit set (short keys
// have it clear), so equal keys of long tokens are confirmed by comparing bytes.
inline uint64_t long_key(const unsigned char* p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ULL * (n + 1);
  size_t q = 0;
  for (; q + 8 <= n; q += 8) {
    h = (h ^ load8(p + q)) * 0xFF51AFD7ED558CCDULL;
    h ^= h >> 29;
  }
  if (q < n) {
    h = (h ^ (load8(p + q) & (~uint64_t{0} >> (64 - 8 * (n - q))))) * 0xC4CEB9FE1A85EC53ULL;
    h ^= h >> 32;
  }
  return h | (uint64_t{1} << 63);
}

// The key of one token of len bytes at p: short tokens packed with their length, long ones hashed.
inline uint64_t token_key(const unsigned char* p, size_t len) {
  return len < 8 ? (load8(p) & (~uint64_t{0} >> (64 - 8 * len))) | (static_cast<uint64_t>(len) << 56)
                 : long_key(p, len);
}

// The tokens of o whose first bytes are the bits of S and whose last bytes are the bits of E
// (nw words each; E[nw] = 1, a sentinel never reached), in order, as keys into kt (sized by the
// caller). Returns the count. Shared by key_rouge and key_13a.
inline size_t emit_masked(const uint64_t* S, const uint64_t* E, size_t nw, const unsigned char* o, Keyed& kt) {
  size_t t = 0, ek = 0;
  uint64_t ecur = nw ? E[0] : 0;
  for (size_t k = 0; k < nw; ++k) {
    for (uint64_t st = S[k]; st; st &= st - 1) {
      size_t a = 64 * k + static_cast<size_t>(__builtin_ctzll(st));
      while (!ecur) ecur = E[++ek];
      size_t len = 64 * ek + static_cast<size_t>(__builtin_ctzll(ecur)) + 1 - a;
      ecur &= ecur - 1;
      kt.keys[t] = token_key(o + a, len);
      kt.pos[t] = static_cast<uint32_t>(a);
      kt.len[t] = static_cast<uint32_t>(len);
      ++t;
    }
  }
  return t;
}

#if defined(__SSE2__)
// rouge-score's tokenizer (text.lower(), runs of [a-z0-9]) straight into keys. Returns false
// for texts holding U+0130 or U+212A, the two non-ASCII characters whose lower case is
// ASCII alphanumeric (tokenize_rouge handles them).
bool key_rouge(std::string_view s, Keyed& kt) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size(), blocks = (n + 15) / 16, nw = (n + 63) / 64;
  if (kt.buf.size() < blocks * 16 + 16) kt.buf.resize(blocks * 16 + 16);
  if (kt.bits.size() < 2 * nw + 1) kt.bits.resize(2 * nw + 1);
  unsigned char* o = kt.buf.data();
  uint64_t* W = kt.bits.data();
  std::fill(W, W + nw, 0);
  const __m128i up_lo = _mm_set1_epi8('A' - 1), up_hi = _mm_set1_epi8('Z' + 1);
  const __m128i lo_lo = _mm_set1_epi8('a' - 1), lo_hi = _mm_set1_epi8('z' + 1);
  const __m128i d_lo = _mm_set1_epi8('0' - 1), d_hi = _mm_set1_epi8('9' + 1), bit5 = _mm_set1_epi8(0x20);
  for (size_t b = 0; b < blocks; ++b) {
    __m128i v;
    if (16 * b + 16 <= n) {
      v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * b));
    } else {
      alignas(16) unsigned char tail[16] = {0};  // zero bytes are separators
      std::memcpy(tail, p + 16 * b, n - 16 * b);
      v = _mm_load_si128(reinterpret_cast<const __m128i*>(tail));
    }
    __m128i up = _mm_and_si128(_mm_cmpgt_epi8(v, up_lo), _mm_cmplt_epi8(v, up_hi));
    __m128i low = _mm_or_si128(_mm_and_si128(_mm_cmpgt_epi8(v, lo_lo), _mm_cmplt_epi8(v, lo_hi)),
                               _mm_and_si128(_mm_cmpgt_epi8(v, d_lo), _mm_cmplt_epi8(v, d_hi)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 16 * b), _mm_or_si128(v, _mm_and_si128(up, bit5)));
    uint32_t h = static_cast<uint32_t>(_mm_movemask_epi8(v));
    while (h) {  // bytes >= 0x80 (signed compares put them below every ASCII range)
      size_t q = 16 * b + static_cast<size_t>(__builtin_ctz(h));
      h &= h - 1;
      if ((p[q] == 0xC4 && q + 1 < n && p[q + 1] == 0xB0) ||
          (p[q] == 0xE2 && q + 2 < n && p[q + 1] == 0x84 && p[q + 2] == 0xAA))
        return false;
    }
    W[b / 4] |= static_cast<uint64_t>(_mm_movemask_epi8(_mm_or_si128(low, up))) << (16 * (b % 4));
  }
  std::memset(o + 16 * blocks, 0, 16);
  // Token starts (a word byte after a separator) and ends (one before a separator), with
  // neighbours across bitmap words; the k-th start pairs with the k-th end.
  uint64_t* E = W + nw;
  uint64_t carry = 0;
  for (size_t k = 0; k < nw; ++k) {
    uint64_t w = W[k], next_low = k + 1 < nw ? (W[k + 1] & 1) : 0;
    W[k] = w & ~((w << 1) | carry);
    E[k] = w & ~((w >> 1) | (next_low << 63));
    carry = w >> 63;
  }
  E[nw] = 1;                         // sentinel (never reached: starts and ends pair up)
  if (kt.keys.size() < n / 2 + 2) {  // + a spare slot read by keyed_masks
    kt.keys.resize(n / 2 + 2);
    kt.pos.resize(n / 2 + 2);
    kt.len.resize(n / 2 + 2);
  }
  kt.n = emit_masked(W, E, nw, o, kt);
  return true;
}
#else
bool key_rouge(std::string_view, Keyed&) { return false; }
#endif

// --- keyed tokens: sacrebleu's 13a tokenizer on ASCII text --------------------------------
// tokenize_13a rewrites the line four times (the regex rules) and split_whitespace walks it
// again: 45% of bleu_stats on 100k real question pairs (perf). On ASCII text without '<',
// '&' or '\n' (no <skipped>, entity or newline rewrite) the rules only insert spaces, so the
// tokens are substrings of the line and one pass over byte classes finds them:
//   rule 1 pads each [{-~[-` -&(-+:-@/] byte: a token of its own;
//   rule 2 ([^0-9])([.,]) -> '\1 \2 ': a '.'/',' after a non-digit, unless that byte was the
//     '.'/',' of the previous match (re.sub's non-overlapping scan), stands alone;
//   rule 3 ([.,])([^0-9]) -> ' \1 \2': a '.'/',' before a non-digit of the rule-2 output
//     (a space where rule 2 matched it or the next byte) stands alone, unless consumed as
//     the previous match's second byte;
//   rule 4 ([0-9])(-) -> '\1 \2 ': a '-' after a digit stands alone.
// Everything else joins runs split at whitespace. Checked against tokenize_13a (and sacrebleu)
// by tests/metrics/test_bleu_13a_keyed.py.
enum : uint8_t { k13W, k13P, k13D, k13Dot, k13Dash, k13O, k13Bad };
struct Classes13a {
  uint8_t c[256];
  constexpr Classes13a() : c() {
    for (int i = 0; i < 256; ++i) {
      uint8_t k = k13O;
      if (i >= 0x80 || i == '<' || i == '&' || i == '\n') {
        k = k13Bad;
      } else if (i == ' ' || (i >= 0x09 && i <= 0x0D) || (i >= 0x1C && i <= 0x1F)) {
        k = k13W;
      } else if ((i >= 0x7B && i <= 0x7E) || (i >= 0x5B && i <= 0x60) || (i >= 0x21 && i <= 0x26) ||
                 (i >= 0x28 && i <= 0x2B) || (i >= 0x3A && i <= 0x40) || i == 0x2F) {
        k = k13P;
      } else if (i >= '0' && i <= '9') {
        k = k13D;
      } else if (i == '.' || i == ',') {
        k = k13Dot;
      } else if (i == '-') {
        k = k13Dash;
      }
      c[i] = k;
    }
  }
};
constexpr Classes13a k13a{};

// Returns false (text needs tokenize_13a) for non-ASCII text or text holding '<', '&', '\n'.
bool key_13a_scalar(std::string_view s, Keyed& kt) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size();
  if (kt.cls.size() < n + 1) kt.cls.resize(n + 1);
  if (kt.buf.size() < n + 8) kt.buf.resize(n + 8);
  uint8_t* c = kt.cls.data();
  uint8_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    uint8_t k = k13a.c[p[i]];
    bad |= static_cast<uint8_t>(k == k13Bad);
    c[i] = k;
  }
  if (bad) return false;
  while (n && c[n - 1] == k13W) --n;  // str.rstrip(): ASCII whitespace is k13W
  unsigned char* b = kt.buf.data();
  std::memcpy(b, p, n);
  std::memset(b + n, 0, 8);  // load8 of a short token reads up to 7 bytes past it
  if (kt.keys.size() < n + 1) {
    kt.keys.resize(n + 1);
    kt.pos.resize(n + 1);
    kt.len.resize(n + 1);
  }
  // Rule 2 flags, kept in the class bytes' bit 7 (classes are < 8).
  constexpr uint8_t kM2 = 0x80;
  uint8_t prev = k13W;
  for (size_t i = 0; i < n; ++i) {
    uint8_t k = c[i];
    if (k == k13Dot && prev != k13D && prev != (k13Dot | kM2)) c[i] = k |= kM2;
    prev = k;
  }
  c[n] = k13W;
  size_t t = 0, start = SIZE_MAX;
  auto emit = [&](size_t a, size_t e) {
    size_t len = e - a;
    kt.keys[t] = token_key(b + a, len);
    kt.pos[t] = static_cast<uint32_t>(a);
    kt.len[t] = static_cast<uint32_t>(len);
    ++t;
  };
  bool prev_m3 = false;
  for (size_t i = 0; i < n; ++i) {
    uint8_t k = c[i];
    bool alone;
    if ((k & 0x7F) == k13Dot) {
      bool m2 = k & kM2, m2_next = c[i + 1] & kM2;
      uint8_t next = (m2 || m2_next) ? static_cast<uint8_t>(k13W) : static_cast<uint8_t>(c[i + 1] & 0x7F);
      bool adjacent = i > 0 && c[i - 1] == k13Dot && !m2;  // a '.'/',' right before, not split by rule 2
      bool m3 = next != k13D && !(adjacent && prev_m3);
      prev_m3 = m3;
      alone = m2 || m3;
    } else {
      alone = k == k13P || (k == k13Dash && i > 0 && (c[i - 1] & 0x7F) == k13D);
    }
    if (k == k13W || alone) {
      if (start != SIZE_MAX) emit(start, i);
      start = SIZE_MAX;
      if (alone) emit(i, i + 1);
    } else if (start == SIZE_MAX) {
      start = i;
    }
  }
  if (start != SIZE_MAX) emit(start, n);
  kt.n = t;
  return true;
}

#if defined(__SSE2__)
// The same rules over 64-bit class masks, 16 bytes per step (the byte loop above spent ~6 ns
// per byte on branches, 58% of bleu_stats). Without two adjacent '.'/',' (the only place
// where re.sub's non-overlapping scan matters) rules 2 and 3 reduce to: a '.'/',' stands
// alone unless a digit is on both sides; such texts are left to key_13a_scalar.
bool key_13a(std::string_view s, Keyed& kt) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size(), blocks = (n + 15) / 16, nw = (n + 63) / 64;
  if (kt.buf.size() < blocks * 16 + 16) kt.buf.resize(blocks * 16 + 16);
  if (kt.bits.size() < 5 * nw + 1) kt.bits.resize(5 * nw + 1);
  unsigned char* o = kt.buf.data();
  uint64_t *W = kt.bits.data(), *P = W + nw, *D = P + nw, *Dot = D + nw, *Dash = Dot + nw;
  std::fill(W, W + 5 * nw, 0);
  auto in = [](__m128i v, int lo, int hi) {
    return _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(static_cast<char>(lo - 1))),
                         _mm_cmplt_epi8(v, _mm_set1_epi8(static_cast<char>(hi + 1))));
  };
  auto eq = [](__m128i v, char c) { return _mm_cmpeq_epi8(v, _mm_set1_epi8(c)); };
  auto bits = [](__m128i m) { return static_cast<uint64_t>(static_cast<uint32_t>(_mm_movemask_epi8(m))); };
  for (size_t b = 0; b < blocks; ++b) {
    __m128i v;
    if (16 * b + 16 <= n) {
      v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * b));
    } else {
      alignas(16) unsigned char tail[16] = {0};  // NUL: class "other", outside every token mask
      std::memcpy(tail, p + 16 * b, n - 16 * b);
      v = _mm_load_si128(reinterpret_cast<const __m128i*>(tail));
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 16 * b), v);
    __m128i bad = _mm_or_si128(_mm_or_si128(eq(v, '<'), eq(v, '&')), eq(v, '\n'));
    if (_mm_movemask_epi8(_mm_or_si128(bad, v))) return false;  // also any byte >= 0x80
    __m128i digit = in(v, '0', '9'), dot = _mm_or_si128(eq(v, '.'), eq(v, ',')), dash = eq(v, '-');
    __m128i space = _mm_or_si128(_mm_or_si128(in(v, 0x09, 0x0D), in(v, 0x1C, 0x1F)), eq(v, ' '));
    // [{-~[-` -&(-+:-@/] = printable ASCII minus letters, digits, ' , - . (and '<', '&', gone above)
    __m128i word = _mm_or_si128(_mm_or_si128(in(v, 'a', 'z'), in(v, 'A', 'Z')), eq(v, '\''));
    __m128i punct =
        _mm_andnot_si128(_mm_or_si128(_mm_or_si128(word, digit), _mm_or_si128(dot, dash)), in(v, 0x21, 0x7E));
    size_t k = b / 4, sh = 16 * (b % 4);
    W[k] |= bits(space) << sh;
    P[k] |= bits(punct) << sh;
    D[k] |= bits(digit) << sh;
    Dot[k] |= bits(dot) << sh;
    Dash[k] |= bits(dash) << sh;
  }
  std::memset(o + 16 * blocks, 0, 16);
  for (size_t k = 0; k < nw; ++k)  // two adjacent '.'/','
    if ((Dot[k] & ((Dot[k] << 1) | (k ? Dot[k - 1] >> 63 : 0))) != 0) return key_13a_scalar(s, kt);
  // Per word: alone = single-byte tokens, T = bytes of longer tokens; starts pair with ends.
  uint64_t* S = W;  // starts overwrite W, ends overwrite P (each word read before written)
  uint64_t* E = P;
  uint64_t t_prev = 0, d_prev = 0;
  for (size_t k = 0; k < nw; ++k) {
    uint64_t d_next = k + 1 < nw ? (D[k + 1] & 1) : 0;
    uint64_t d_before = (D[k] << 1) | (d_prev >> 63), d_after = (D[k] >> 1) | (d_next << 63);
    uint64_t live = (k + 1 < nw || n % 64 == 0) ? ~uint64_t{0} : (uint64_t{1} << (n % 64)) - 1;
    uint64_t alone = P[k] | (Dot[k] & ~(d_before & d_after)) | (Dash[k] & d_before);
    uint64_t T = ~W[k] & ~alone & live;
    d_prev = D[k];
    // ends need the next word's first T bit: computed below, one word behind
    S[k] = (T & ~((T << 1) | (t_prev >> 63))) | alone;
    E[k] = T;  // fixed up in the next pass
    D[k] = alone;
    t_prev = T;
  }
  for (size_t k = 0; k < nw; ++k) {
    uint64_t T = E[k], t_next = k + 1 < nw ? (E[k + 1] & 1) : 0;
    E[k] = (T & ~((T >> 1) | (t_next << 63))) | D[k];
  }
  if (kt.keys.size() < n + 1) {
    kt.keys.resize(n + 1);
    kt.pos.resize(n + 1);
    kt.len.resize(n + 1);
  }
  E[nw] = 1;  // sentinel (never reached: starts and ends pair up)
  kt.n = emit_masked(S, E, nw, o, kt);
  return true;
}
#else
bool key_13a(std::string_view s, Keyed& kt) { return key_13a_scalar(s, kt); }
#endif

// M[i] bit j: hyp token i equals ref token j (ref has at most 64 tokens).
void keyed_masks(const Keyed& a, const Keyed& b, std::vector<uint64_t>& M) {
  M.resize(a.n);
  const uint64_t* kb = b.keys.data();
  for (size_t i = 0; i < a.n; ++i) {
    uint64_t k = a.keys[i], m = 0;
#if defined(__SSE2__)
    // Two keys per compare (64-bit equality from two 32-bit ones); b.keys has a spare slot
    // past b.n, masked off below.
    const __m128i kk = _mm_set1_epi64x(static_cast<long long>(k));
    for (size_t j = 0; j < b.n; j += 2) {
      __m128i c = _mm_cmpeq_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kb + j)), kk);
      c = _mm_and_si128(c, _mm_shuffle_epi32(c, _MM_SHUFFLE(2, 3, 0, 1)));
      m |= static_cast<uint64_t>(_mm_movemask_pd(_mm_castsi128_pd(c))) << j;
    }
    if (b.n < 64) m &= (uint64_t{1} << b.n) - 1;
#else
    for (size_t j = 0; j < b.n; ++j) m |= static_cast<uint64_t>(kb[j] == k) << j;
#endif
    if (m && (k >> 63)) {  // long token: the key was a hash
      for (uint64_t x = m; x; x &= x - 1) {
        size_t j = static_cast<size_t>(__builtin_ctzll(x));
        if (a.len[i] != b.len[j] || std::memcmp(a.buf.data() + a.pos[i], b.buf.data() + b.pos[j], a.len[i]) != 0)
          m &= ~(uint64_t{1} << j);
      }
    }
    M[i] = m;
  }
}

// The 3 statistics of each type for one (hyp, short ref) pair from its equality masks.
void short_stats(const std::vector<uint64_t>& M, int64_t nh, int64_t nr, const RougeConfig& cfg, int64_t* o) {
  for (const RougeType& ty : cfg.types) {
    if (ty.kind == RougeKind::N) {
      o[0] = mask_matches(M, ty.n);
      o[1] = std::max<int64_t>(0, nh - ty.n + 1);
      o[2] = std::max<int64_t>(0, nr - ty.n + 1);
    } else {
      o[0] = mask_lcs(M, static_cast<size_t>(nr));
      o[1] = nh;
      o[2] = nr;
    }
    o += 3;
  }
}

// BLEU statistics of a hypothesis and its one short reference from their equality masks: with
// one reference, clipped counts are plain multiset matches.
// All orders in one pass over the masks, branch-free (mask_matches per order took 26% of
// bleu_stats, mostly mispredicted `avail` branches).
void short_bleu(const std::vector<uint64_t>& M, int64_t nh, int64_t nr, int max_order, int64_t* o) {
  o[0] = nh;
  o[1] = nr;
  constexpr int kMax = 8;
  if (max_order > kMax) {
    for (int k = 1; k <= max_order; ++k) o[1 + k] = mask_matches(M, k);
  } else {
    uint64_t used[kMax] = {0};
    int64_t count[kMax] = {0};
    const size_t n = M.size();
    for (size_t i = 0; i < n; ++i) {
      uint64_t g = M[i];
      size_t top = std::min<size_t>(static_cast<size_t>(max_order), n - i);
      for (size_t k = 0; k < top; ++k) {
        if (k) g &= M[i + k] >> k;
        uint64_t avail = g & ~used[k];
        used[k] |= avail & (~avail + 1);
        count[k] += avail != 0;
      }
    }
    for (int k = 1; k <= max_order; ++k) o[1 + k] = count[k - 1];
  }
  for (int k = 1; k <= max_order; ++k) o[1 + max_order + k] = std::max<int64_t>(0, nh - k + 1);
}

// Keyed tokens of hyp i and its references into ws.kt[0..]; returns the text count, or 0
// when a text needs tokenize_rouge.
template <bool (*key_text)(std::string_view, Keyed&) = key_rouge>
size_t key_group(const TextColumn& hyps, const TextColumn& refs, const int64_t* ref_offsets, size_t i, Workspace& ws) {
  size_t r0 = static_cast<size_t>(ref_offsets[i]), n_texts = 1 + static_cast<size_t>(ref_offsets[i + 1]) - r0;
  if (ws.kt.size() < n_texts) ws.kt.resize(n_texts);
  if (ws.seqs.size() < n_texts) ws.seqs.resize(n_texts);
  for (size_t t = 0; t < n_texts; ++t)
    if (!key_text(t == 0 ? hyps.strs[i] : refs.strs[r0 + t - 1], ws.kt[t])) return 0;
  return n_texts;
}

// --- LCS ---------------------------------------------------------------------------------

// Length of the LCS of a (the hypothesis) and b (the reference): bit-parallel over b
// (Allison-Dix / Hyyro: V' = (V + (V & M)) | (V & ~M)); O(|a| * ceil(|b| / 64)).
int64_t lcs_length(const std::vector<int32_t>& a, const std::vector<int32_t>& b, Workspace& ws) {
  size_t n = a.size(), m = b.size();
  if (n == 0 || m == 0) return 0;
  size_t W = (m + 63) / 64;
  if (W == 1) {
    if (ws.masks.size() < ws.cnt.size()) ws.masks.resize(ws.cnt.size(), 0);
    for (size_t j = 0; j < m; ++j) ws.masks[b[j]] |= uint64_t{1} << j;
    uint64_t V = ~uint64_t{0};
    for (size_t i = 0; i < n; ++i) {
      uint64_t M = ws.masks[a[i]];
      uint64_t U = V & M;
      V = (V + U) | (V - U);
    }
    for (size_t j = 0; j < m; ++j) ws.masks[b[j]] = 0;
    uint64_t live = m == 64 ? ~uint64_t{0} : ((uint64_t{1} << m) - 1);
    return __builtin_popcountll(~V & live);
  }
  size_t need = ws.cnt.size() * W;
  if (ws.masks.size() < need) ws.masks.resize(need, 0);
  for (size_t j = 0; j < m; ++j) {
    ws.masks[static_cast<size_t>(b[j]) * W + j / 64] |= uint64_t{1} << (j % 64);
    ws.mark[b[j]] = 1;
  }
  ws.vbits.assign(W, ~uint64_t{0});
  uint64_t* V = ws.vbits.data();
  for (size_t i = 0; i < n; ++i) {
    // A word absent from the reference has M = 0, which leaves V unchanged: skip it.
    if (!ws.mark[a[i]]) continue;
    const uint64_t* M = &ws.masks[static_cast<size_t>(a[i]) * W];
    bool carry = false;
    for (size_t w = 0; w < W; ++w) {
      uint64_t u = V[w] & M[w];
      uint64_t sum;
      bool c1 = __builtin_add_overflow(V[w], u, &sum);
      bool c2 = __builtin_add_overflow(sum, static_cast<uint64_t>(carry), &sum);
      carry = c1 || c2;
      V[w] = sum | (V[w] & ~M[w]);
    }
  }
  for (size_t j = 0; j < m; ++j) {
    ws.masks[static_cast<size_t>(b[j]) * W + j / 64] = 0;
    ws.mark[b[j]] = 0;
  }
  int64_t zeros = 0;
  for (size_t w = 0; w < W; ++w) {
    size_t bits = std::min<size_t>(64, m - w * 64);
    uint64_t live = bits == 64 ? ~uint64_t{0} : ((uint64_t{1} << bits) - 1);
    zeros += __builtin_popcountll(~V[w] & live);
  }
  return zeros;
}

// Full DP table for rows x (reference) and columns y; t[i * (|y| + 1) + j].
void lcs_table(const int32_t* x, size_t n, const int32_t* y, size_t m, std::vector<int32_t>& t) {
  size_t cols = m + 1;
  t.assign((n + 1) * cols, 0);
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j)
      t[i * cols + j] =
          x[i - 1] == y[j - 1] ? t[(i - 1) * cols + j - 1] + 1 : std::max(t[(i - 1) * cols + j], t[i * cols + j - 1]);
}

// rouge-score Lsum: summary-level union LCS with ROUGE-1.5.5's clamping by token counts.
int64_t summary_lcs_hits(const Seq& hyp, const Seq& ref, Workspace& ws) {
  for (int32_t id : hyp.ids) ws.cnt[id]++;
  for (int32_t id : ref.ids) ws.cnt2[id]++;
  int64_t hits = 0;
  for (size_t rs = 0; rs + 1 < ref.sent.size(); ++rs) {
    const int32_t* r = ref.ids.data() + ref.sent[rs];
    size_t rn = ref.sent[rs + 1] - ref.sent[rs];
    ws.pos_mark.assign(rn, 0);
    for (size_t cs = 0; cs + 1 < hyp.sent.size(); ++cs) {
      const int32_t* c = hyp.ids.data() + hyp.sent[cs];
      size_t cn = hyp.sent[cs + 1] - hyp.sent[cs];
      if (rn == 0 || cn == 0) continue;
      lcs_table(r, rn, c, cn, ws.table);
      size_t cols = cn + 1, i = rn, j = cn;
      // rouge-score's _backtrack_norec tie rule: prefer moving left when strictly better.
      while (i > 0 && j > 0) {
        if (r[i - 1] == c[j - 1]) {
          ws.pos_mark[i - 1] = 1;
          --i;
          --j;
        } else if (ws.table[i * cols + j - 1] > ws.table[(i - 1) * cols + j]) {
          --j;
        } else {
          --i;
        }
      }
    }
    for (size_t q = 0; q < rn; ++q) {
      if (!ws.pos_mark[q]) continue;
      int32_t t = r[q];
      if (ws.cnt[t] > 0 && ws.cnt2[t] > 0) {
        ++hits;
        ws.cnt[t]--;
        ws.cnt2[t]--;
      }
    }
  }
  for (int32_t id : hyp.ids) ws.cnt[id] = 0;
  for (int32_t id : ref.ids) ws.cnt2[id] = 0;
  return hits;
}

// rouge 0.3.2 (pltrdy) L: size of the union, over (ref sentence, hyp sentence) pairs, of the
// set of words on the LCS its _recon_lcs reads out (tie rule: move up when strictly better).
int64_t pltrdy_union_lcs(const Seq& hyp, const Seq& ref, Workspace& ws) {
  int64_t count = 0;
  std::vector<int32_t> touched;
  for (size_t rs = 0; rs + 1 < ref.sent.size(); ++rs) {
    const int32_t* x = ref.ids.data() + ref.sent[rs];
    size_t xn = ref.sent[rs + 1] - ref.sent[rs];
    for (size_t cs = 0; cs + 1 < hyp.sent.size(); ++cs) {
      const int32_t* y = hyp.ids.data() + hyp.sent[cs];
      size_t yn = hyp.sent[cs + 1] - hyp.sent[cs];
      lcs_table(x, xn, y, yn, ws.table);
      size_t cols = yn + 1, i = xn, j = yn;
      while (i > 0 && j > 0) {
        if (x[i - 1] == y[j - 1]) {
          int32_t w = x[i - 1];
          if (!ws.mark[w]) {
            ws.mark[w] = 1;
            touched.push_back(w);
            ++count;
          }
          --i;
          --j;
        } else if (ws.table[(i - 1) * cols + j] > ws.table[i * cols + j - 1]) {
          --i;
        } else {
          --j;
        }
      }
    }
  }
  for (int32_t w : touched) ws.mark[w] = 0;
  return count;
}

int64_t count_distinct(const std::vector<int32_t>& ids, Workspace& ws) {
  int64_t c = 0;
  for (int32_t id : ids)
    if (!ws.mark[id]) {
      ws.mark[id] = 1;
      ++c;
    }
  for (int32_t id : ids) ws.mark[id] = 0;
  return c;
}

// rouge-score's P/R/F of one row of statistics (T x 3) into out (3 x T x rows), column j.
inline void prf_row(const int64_t* s, size_t T, size_t rows, size_t j, double* out) {
  for (size_t t = 0; t < T; ++t, s += 3) {
    double m = static_cast<double>(s[0]);
    double p = m / static_cast<double>(std::max<int64_t>(s[1], 1));
    double r = m / static_cast<double>(std::max<int64_t>(s[2], 1));
    double d = p + r;
    size_t o = t * rows + j;
    out[o] = p;
    out[rows * T + o] = r;
    out[2 * rows * T + o] = d > 0 ? 2 * p * r / d : 0.0;
  }
}

void check_offsets(const TextColumn& hyps, const TextColumn& refs, const int64_t* ref_offsets) {
  if (hyps.is_ids() != refs.is_ids())
    throw std::invalid_argument("hyps and refs must both be strings or both be token ids");
  if (ref_offsets[0] != 0 || ref_offsets[hyps.size] != static_cast<int64_t>(refs.size))
    throw std::invalid_argument("ref_offsets must start at 0 and end at len(refs)");
  for (size_t i = 0; i < hyps.size; ++i)
    if (ref_offsets[i + 1] < ref_offsets[i]) throw std::invalid_argument("ref_offsets must be non-decreasing");
}

}  // namespace

void rouge_stats(const TextColumn& hyps, const TextColumn& refs, const int64_t* ref_offsets, const RougeConfig& cfg,
                 int workers, int64_t* out, double* prf) {
  if (prf && cfg.flavor != RougeFlavor::RougeScore) throw std::invalid_argument("prf is for the rouge-score flavor");
  check_offsets(hyps, refs, ref_offsets);
  bool pltrdy = cfg.flavor == RougeFlavor::Pltrdy;
  bool lsum = false;
  int max_order = 1;
  for (const auto& t : cfg.types) {
    if (t.kind == RougeKind::N) {
      if (t.n < 1) throw std::invalid_argument("ROUGE-N needs n >= 1");
      max_order = std::max(max_order, t.n);
    }
    lsum = lsum || t.kind == RougeKind::Lsum;
  }
  if (pltrdy && lsum) throw std::invalid_argument("the pltrdy flavor has no rougeLsum");
  if (hyps.is_ids() && (pltrdy || lsum))
    throw std::invalid_argument("token ids carry no sentence boundaries: use strings for pltrdy or rougeLsum");
  Mode mode = pltrdy ? Mode::Pltrdy : (lsum ? Mode::RougeLsum : Mode::Rouge);
  const size_t T = cfg.types.size();
  const bool ids = hyps.is_ids();
  const bool keyed = !pltrdy && !lsum && !cfg.stem && !ids;
  std::vector<Workspace> spaces(static_cast<size_t>(resolve_workers(workers)));
  // The statistics of hyp i's references go to `o` (rows ref_offsets[i].. of out, or scratch).
  auto group = [&](size_t i, Workspace& ws, int64_t* o_group) {
    size_t n_texts = keyed ? key_group(hyps, refs, ref_offsets, i, ws) : 0;
    if (n_texts) {
      bool short_refs = true;
      for (size_t r = 1; r < n_texts && short_refs; ++r) short_refs = ws.kt[r].n <= 64;
      if (short_refs) {
        for (size_t r = 1; r < n_texts; ++r) {
          keyed_masks(ws.kt[0], ws.kt[r], ws.eq);
          short_stats(ws.eq, static_cast<int64_t>(ws.kt[0].n), static_cast<int64_t>(ws.kt[r].n), cfg,
                      o_group + (r - 1) * T * 3);
        }
        return;
      }
      intern_words(false, true, n_texts, ws);
    } else {
      n_texts = read_group(hyps, refs, ref_offsets, i, mode, cfg.stem, ws);
      bool fast = !pltrdy && !lsum;
      for (size_t r = 1; r < n_texts && fast; ++r) fast = text_len(ws, ids, r) <= 64;
      if (fast) {
        if (!ids) key_views(ws);
        int64_t nh = static_cast<int64_t>(text_len(ws, ids, 0));
        for (size_t r = 1; r < n_texts; ++r) {
          equality_masks(ws, ids, 0, r, ws.eq);
          short_stats(ws.eq, nh, static_cast<int64_t>(text_len(ws, ids, r)), cfg, o_group + (r - 1) * T * 3);
        }
        return;
      }
      intern_words(ids, false, n_texts, ws);
    }
    intern_grams(n_texts, max_order, ws);
    const Seq& hyp = ws.seqs[0];
    int64_t hyp_distinct = pltrdy ? count_distinct(hyp.ids, ws) : 0;
    for (size_t r = 1; r < n_texts; ++r) {
      const Seq& ref = ws.seqs[r];
      int64_t* o = o_group + (r - 1) * T * 3;
      for (size_t t = 0; t < T; ++t, o += 3) {
        const RougeType& ty = cfg.types[t];
        if (pltrdy && (hyp.no_sentence || ref.no_sentence)) {
          o[0] = o[1] = o[2] = -1;
          continue;
        }
        if (ty.kind == RougeKind::N) {
          const auto& hg = hyp.order(ty.n);
          const auto& rg = ref.order(ty.n);
          if (pltrdy) {
            for (int32_t g : hg) ws.mark[g] |= 1;
            int64_t nh = 0, nr = 0, both = 0;
            for (int32_t g : hg)
              if (!(ws.mark[g] & 4)) {
                ws.mark[g] |= 4;
                ++nh;
              }
            for (int32_t g : rg)
              if (!(ws.mark[g] & 2)) {
                ws.mark[g] |= 2;
                ++nr;
                both += ws.mark[g] & 1;
              }
            for (int32_t g : hg) ws.mark[g] = 0;
            for (int32_t g : rg) ws.mark[g] = 0;
            o[0] = both;
            o[1] = nh;
            o[2] = nr;
          } else {
            for (int32_t g : rg) ws.cnt[g]++;
            int64_t match = 0;
            for (int32_t g : hg)
              if (ws.cnt[g] > 0) {
                ws.cnt[g]--;
                ++match;
              }
            for (int32_t g : rg) ws.cnt[g] = 0;
            o[0] = match;
            o[1] = static_cast<int64_t>(hg.size());
            o[2] = static_cast<int64_t>(rg.size());
          }
        } else if (ty.kind == RougeKind::L) {
          if (pltrdy) {
            o[0] = pltrdy_union_lcs(hyp, ref, ws);
            o[1] = hyp_distinct;
            o[2] = count_distinct(ref.ids, ws);
          } else {
            o[0] = lcs_length(hyp.ids, ref.ids, ws);
            o[1] = static_cast<int64_t>(hyp.ids.size());
            o[2] = static_cast<int64_t>(ref.ids.size());
          }
        } else {
          o[0] = summary_lcs_hits(hyp, ref, ws);
          o[1] = static_cast<int64_t>(hyp.ids.size());
          o[2] = static_cast<int64_t>(ref.ids.size());
        }
      }
    }
  };
  const size_t rows = refs.size;
  parallel_for(hyps.size, workers, 256, [&](size_t tid, size_t b, size_t e) {
    Workspace& ws = spaces[tid];
    for (size_t i = b; i < e; ++i) {
      prefetch_group(hyps, refs, ref_offsets, i, e);
      size_t r0 = static_cast<size_t>(ref_offsets[i]), nr = static_cast<size_t>(ref_offsets[i + 1]) - r0;
      int64_t* o = out;
      if (o) {
        o += r0 * T * 3;
      } else {
        if (ws.group_stats.size() < nr * T * 3) ws.group_stats.resize(nr * T * 3);
        o = ws.group_stats.data();
      }
      group(i, ws, o);
      if (prf)  // written here, while the row is in cache, by the thread that owns it
        for (size_t j = 0; j < nr; ++j) prf_row(o + j * T * 3, T, rows, r0 + j, prf);
    }
  });
}

void rouge_score_prf(const int64_t* stats, size_t rows, size_t T, double* out) {
  for (size_t j = 0; j < rows; ++j) prf_row(stats + j * T * 3, T, rows, j, out);
}

void bleu_stats(const TextColumn& hyps, const TextColumn& refs, const int64_t* ref_offsets, BleuTokenize tokenize,
                int max_order, int workers, int64_t* out) {
  check_offsets(hyps, refs, ref_offsets);
  if (max_order < 1) throw std::invalid_argument("max_order must be >= 1");
  for (size_t i = 0; i < hyps.size; ++i)
    if (ref_offsets[i + 1] == ref_offsets[i])
      throw std::invalid_argument("every hypothesis needs at least one reference");
  Mode mode = tokenize == BleuTokenize::T13a ? Mode::T13a : Mode::Whitespace;
  const size_t width = 2 + 2 * static_cast<size_t>(max_order);
  const bool ids = hyps.is_ids();
  const bool keyed = !ids && mode == Mode::T13a;
  std::vector<Workspace> spaces(static_cast<size_t>(resolve_workers(workers)));
  parallel_for(hyps.size, workers, 256, [&](size_t tid, size_t b, size_t e) {
    Workspace& ws = spaces[tid];
    for (size_t i = b; i < e; ++i) {
      prefetch_group(hyps, refs, ref_offsets, i, e);
      int64_t* o = out + i * width;
      size_t n_texts = keyed ? key_group<key_13a>(hyps, refs, ref_offsets, i, ws) : 0;
      if (n_texts) {
        if (n_texts == 2 && ws.kt[1].n <= 64) {
          keyed_masks(ws.kt[0], ws.kt[1], ws.eq);
          short_bleu(ws.eq, static_cast<int64_t>(ws.kt[0].n), static_cast<int64_t>(ws.kt[1].n), max_order, o);
          continue;
        }
        intern_words(false, true, n_texts, ws);
        intern_grams(n_texts, max_order, ws);
      } else {
        n_texts = read_group(hyps, refs, ref_offsets, i, mode, false, ws);
        if (n_texts == 2 && text_len(ws, ids, 1) <= 64) {
          // one short reference: clipped counts are plain multiset matches
          if (!ids) key_views(ws);
          equality_masks(ws, ids, 0, 1, ws.eq);
          short_bleu(ws.eq, static_cast<int64_t>(text_len(ws, ids, 0)), static_cast<int64_t>(text_len(ws, ids, 1)),
                     max_order, o);
          continue;
        }
        intern_group(ids, n_texts, max_order, ws);
      }
      const Seq& hyp = ws.seqs[0];
      int64_t hyp_len = static_cast<int64_t>(hyp.ids.size());
      // Clip counts: the max count of each n-gram over the references (cnt), built with
      // a per-reference count (cnt2).
      int64_t closest_diff = -1, closest_len = -1;
      for (size_t r = 1; r < n_texts; ++r) {
        const Seq& ref = ws.seqs[r];
        int64_t rl = static_cast<int64_t>(ref.ids.size());
        int64_t diff = rl > hyp_len ? rl - hyp_len : hyp_len - rl;
        if (closest_diff == -1 || diff < closest_diff || (diff == closest_diff && rl < closest_len)) {
          closest_diff = diff;
          closest_len = rl;
        }
        for (int k = 1; k <= max_order; ++k) {
          const auto& g = ref.order(k);
          for (int32_t id : g) ws.cnt2[id]++;
          for (int32_t id : g) {
            if (ws.cnt2[id] > ws.cnt[id]) ws.cnt[id] = ws.cnt2[id];
          }
          for (int32_t id : g) ws.cnt2[id] = 0;
        }
      }
      o[0] = hyp_len;
      o[1] = closest_len;
      for (int k = 1; k <= max_order; ++k) {
        const auto& g = hyp.order(k);
        int64_t correct = 0;
        for (int32_t id : g)
          if (ws.cnt[id] > 0) {
            ws.cnt[id]--;
            ++correct;
          }
        o[1 + k] = correct;
        o[1 + max_order + k] = static_cast<int64_t>(g.size());
      }
      for (size_t r = 1; r < n_texts; ++r)
        for (int k = 1; k <= max_order; ++k)
          for (int32_t id : ws.seqs[r].order(k)) ws.cnt[id] = 0;
    }
  });
}

static void sacrebleu_sentence_rows(const int64_t* stats, size_t begin, size_t end, int max_order, Smooth smooth,
                                    double smooth_value, bool effective_order, bool compensated_sum, double* out) {
  const size_t width = 2 + 2 * static_cast<size_t>(max_order);
  std::vector<double> correct(max_order), total(max_order), prec(max_order);
  for (size_t i = begin; i < end; ++i) {
    const int64_t* s = stats + i * width;
    double sys_len = static_cast<double>(s[0]), ref_len = static_cast<double>(s[1]);
    double bp = 1.0;
    if (s[0] < s[1]) bp = s[0] > 0 ? std::exp(1.0 - ref_len / sys_len) : 0.0;
    bool any = false;
    for (int k = 0; k < max_order; ++k) {
      correct[k] = static_cast<double>(s[2 + k]);
      total[k] = static_cast<double>(s[2 + max_order + k]);
      prec[k] = 0.0;
      any = any || s[2 + k] != 0;
    }
    if (!any) {
      out[i] = 0.0;
      continue;
    }
    double smooth_mteval = 1.0;
    int eff_order = max_order;
    for (int k = 0; k < max_order; ++k) {
      if (smooth == Smooth::AddK && k > 0) {
        correct[k] += smooth_value;
        total[k] += smooth_value;
      }
      if (total[k] == 0.0) break;
      if (effective_order) eff_order = k + 1;
      if (correct[k] == 0.0) {
        if (smooth == Smooth::Exp) {
          smooth_mteval *= 2;
          prec[k] = 100.0 / (smooth_mteval * total[k]);
        } else if (smooth == Smooth::Floor) {
          prec[k] = 100.0 * smooth_value / total[k];
        }
      } else {
        prec[k] = 100.0 * correct[k] / total[k];
      }
    }
    // sum(my_log(p) for p in precisions[:eff_order]), as the running Python does it.
    double acc = 0.0, comp = 0.0;
    for (int k = 0; k < eff_order; ++k) {
      double x = prec[k] == 0.0 ? -9999999999.0 : std::log(prec[k]);
      if (compensated_sum) {
        double t = acc + x;
        if (std::fabs(acc) >= std::fabs(x))
          comp += (acc - t) + x;
        else
          comp += (x - t) + acc;
        acc = t;
      } else {
        acc += x;
      }
    }
    if (compensated_sum && comp != 0.0 && std::isfinite(comp)) acc += comp;
    out[i] = bp * std::exp(acc / eff_order);
  }
}

static void coco_sentence_rows(const int64_t* stats, size_t begin, size_t end, int max_order, double* out) {
  const size_t width = 2 + 2 * static_cast<size_t>(max_order);
  const double tiny = 1e-15, small = 1e-9;
  for (size_t i = begin; i < end; ++i) {
    const int64_t* s = stats + i * width;
    double* o = out + i * static_cast<size_t>(max_order);
    double bleu = 1.0;
    for (int k = 0; k < max_order; ++k) {
      bleu *= (static_cast<double>(s[2 + k]) + tiny) / (static_cast<double>(s[2 + max_order + k]) + small);
      o[k] = std::pow(bleu, 1.0 / (k + 1));
    }
    double ratio = (static_cast<double>(s[0]) + tiny) / (static_cast<double>(s[1]) + small);
    if (ratio < 1) {
      double f = std::exp(1 - 1 / ratio);
      for (int k = 0; k < max_order; ++k) o[k] *= f;
    }
  }
}

// The serial tail of sentence BLEU (issue 29: 7 ms of 65 per 100k rows on one thread).
constexpr size_t kScoreRows = 16384;

void sacrebleu_sentence_scores(const int64_t* stats, size_t n, int max_order, Smooth smooth, double smooth_value,
                               bool effective_order, bool compensated_sum, double* out, int workers) {
  parallel_for(n, workers, kScoreRows, [&](size_t, size_t b, size_t e) {
    sacrebleu_sentence_rows(stats, b, e, max_order, smooth, smooth_value, effective_order, compensated_sum, out);
  });
}

void coco_sentence_scores(const int64_t* stats, size_t n, int max_order, double* out, int workers) {
  parallel_for(n, workers, kScoreRows,
               [&](size_t, size_t b, size_t e) { coco_sentence_rows(stats, b, e, max_order, out); });
}

std::vector<std::vector<std::string>> tokenize_texts(const std::string_view* texts, size_t n, TokenizerKind kind,
                                                     int workers) {
  std::vector<std::vector<std::string>> result(n);
  Mode mode = kind == TokenizerKind::T13a         ? Mode::T13a
              : kind == TokenizerKind::Whitespace ? Mode::Whitespace
                                                  : Mode::Rouge;
  bool stem = kind == TokenizerKind::RougeStem;
  parallel_for(n, workers, 256, [&](size_t, size_t b, size_t e) {
    Workspace ws;
    ws.tbuf.resize(1);
    Seq seq;
    for (size_t i = b; i < e; ++i) {
      ws.views.clear();
      tokenize_one(texts[i], mode, stem, 0, ws, seq);
      result[i].assign(ws.views.begin(), ws.views.end());
    }
  });
  return result;
}

corpus::TokenRows tokenize_ids(const std::string_view* texts, size_t n, TokenizerKind kind, int workers,
                               const corpus::RowsDone* on_rows) {
  Mode mode = kind == TokenizerKind::T13a         ? Mode::T13a
              : kind == TokenizerKind::Whitespace ? Mode::Whitespace
                                                  : Mode::Rouge;
  bool stem = kind == TokenizerKind::RougeStem;
  struct State {
    Workspace ws;
    Seq seq;
  };
  std::vector<std::unique_ptr<State>> per_thread(static_cast<size_t>(resolve_workers(workers)));
  corpus::RowTokenizer one = [&](size_t tid, size_t i, std::vector<std::string_view>& out) {
    if (!per_thread[tid]) {
      per_thread[tid] = std::make_unique<State>();
      per_thread[tid]->ws.tbuf.resize(1);
    }
    State& st = *per_thread[tid];
    st.ws.views.clear();
    tokenize_one(texts[i], mode, stem, 0, st.ws, st.seq);
    out.insert(out.end(), st.ws.views.begin(), st.ws.views.end());
  };
  return corpus::intern_rows(n, workers, one, on_rows);
}

}  // namespace pysynth
