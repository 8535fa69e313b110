// METEOR 1.5: see pysynth/meteor.hpp.  Mirrors pysynth/metrics/_meteor_ref.py step by step.
#include "pysynth/meteor.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "pysynth/common.hpp"

namespace pysynth::meteor {
namespace {

constexpr double kAlpha = 0.85, kBeta = 0.20, kGamma = 0.60, kDelta = 0.75;  // 'rank' task, English
constexpr double kWeights[4] = {1.0, 0.6, 0.8, 0.6};                         // scoring
constexpr double kSearchWeights[4] = {1.0, 0.5, 0.5, 0.5};                   // the jar's aligner
constexpr size_t kBeam = 40;
constexpr uint64_t kFnvOffset = 0xCBF29CE484222325ULL, kFnvPrime = 0x100000001B3ULL;

bool is_delim(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

void split_java(std::string_view s, std::vector<std::string_view>& out) {
  size_t i = 0, n = s.size();
  while (i < n) {
    while (i < n && is_delim(s[i])) ++i;
    size_t b = i;
    while (i < n && !is_delim(s[i])) ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
}

// Lines as Java's BufferedReader.readLine splits them (\n, \r, \r\n).
std::vector<std::string_view> java_lines(std::string_view s) {
  std::vector<std::string_view> out;
  size_t b = 0, i = 0;
  while (i < s.size()) {
    if (s[i] == '\n' || s[i] == '\r') {
      out.push_back(s.substr(b, i - b));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      b = ++i;
    } else {
      ++i;
    }
  }
  if (b < s.size()) out.push_back(s.substr(b));
  return out;
}

std::u32string utf8_decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    char32_t cp;
    size_t len;
    if (c < 0x80) {
      cp = c, len = 1;
    } else if ((c >> 5) == 6) {
      cp = c & 0x1F, len = 2;
    } else if ((c >> 4) == 14) {
      cp = c & 0x0F, len = 3;
    } else {
      cp = c & 0x07, len = 4;
    }
    if (i + len > s.size()) len = s.size() - i;
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += len;
  }
  return out;
}

void utf8_append(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// ---------------------------------------------------------------------------------------------
// Snowball English (Porter2) on code points; 'Y' marks a consonant y.

using U = std::u32string;

bool isv(char32_t c) { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || c == 'y'; }

bool ends(const U& w, const char* suf) {
  size_t n = std::strlen(suf);
  if (w.size() < n) return false;
  for (size_t k = 0; k < n; ++k)
    if (w[w.size() - n + k] != static_cast<char32_t>(suf[k])) return false;
  return true;
}

bool starts(const U& w, const char* pre) {
  size_t n = std::strlen(pre);
  if (w.size() < n) return false;
  for (size_t k = 0; k < n; ++k)
    if (w[k] != static_cast<char32_t>(pre[k])) return false;
  return true;
}

void set_suffix(U& w, size_t base, const char* rep) {
  w.resize(base);
  for (const char* p = rep; *p; ++p) w.push_back(static_cast<char32_t>(*p));
}

bool any_vowel(const U& w, size_t end) {
  for (size_t k = 0; k < end; ++k)
    if (isv(w[k])) return true;
  return false;
}

bool shortv(const U& w, size_t end) {
  if (end >= 3) {
    char32_t c = w[end - 1];
    if (!isv(c) && c != 'w' && c != 'x' && c != 'Y' && isv(w[end - 2]) && !isv(w[end - 3])) return true;
  }
  return end == 2 && !isv(w[1]) && isv(w[0]);
}

size_t after_vc(const U& w, size_t i) {
  size_t n = w.size();
  while (i < n && !isv(w[i])) ++i;
  while (i < n && isv(w[i])) ++i;
  return i < n ? i + 1 : n;
}

struct Rule {
  const char* suf;
  const char* rep;
};

// Longest suffix first (Snowball's among picks the longest match).
const Rule kStep2[] = {{"ization", "ize"}, {"ational", "ate"}, {"fulness", "ful"}, {"ousness", "ous"},
                       {"iveness", "ive"}, {"tional", "tion"}, {"biliti", "ble"},  {"lessli", "less"},
                       {"entli", "ent"},   {"ation", "ate"},   {"alism", "al"},    {"aliti", "al"},
                       {"ousli", "ous"},   {"iviti", "ive"},   {"fulli", "ful"},   {"enci", "ence"},
                       {"anci", "ance"},   {"abli", "able"},   {"izer", "ize"},    {"ator", "ate"},
                       {"alli", "al"},     {"bli", "ble"},     {"ogi", "og"},      {"li", ""}};
const Rule kStep3[] = {{"ational", "ate"}, {"tional", "tion"}, {"alize", "al"}, {"icate", "ic"}, {"iciti", "ic"},
                       {"ative", ""},      {"ical", "ic"},     {"ness", ""},    {"ful", ""}};
const char* const kStep4[] = {"ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism",
                              "ate",   "iti",  "ous",  "ive",  "ize",  "ion",  "al",  "er",  "ic"};

struct Exc {
  const char* word;
  const char* stem;
};
const Exc kExc1[] = {{"skis", "ski"},    {"skies", "sky"},  {"dying", "die"},    {"lying", "lie"},
                     {"tying", "tie"},   {"idly", "idl"},   {"gently", "gentl"}, {"ugly", "ugli"},
                     {"early", "earli"}, {"only", "onli"},  {"singly", "singl"}, {"sky", "sky"},
                     {"news", "news"},   {"howe", "howe"},  {"atlas", "atlas"},  {"cosmos", "cosmos"},
                     {"bias", "bias"},   {"andes", "andes"}};
const char* const kExc2[] = {"inning", "outing", "canning", "herring", "earring", "proceed", "exceed", "succeed"};

bool equals(const U& w, const char* s) { return w.size() == std::strlen(s) && starts(w, s); }

void stem_u(U& w) {
  for (const auto& e : kExc1)
    if (equals(w, e.word)) {
      w.clear();
      set_suffix(w, 0, e.stem);
      return;
    }
  if (w.size() < 3) return;
  if (w[0] == '\'') w.erase(0, 1);
  if (!w.empty() && w[0] == 'y') w[0] = 'Y';
  for (size_t k = 1; k < w.size(); ++k)
    if (w[k] == 'y' && isv(w[k - 1])) w[k] = 'Y';
  size_t p1 = w.size();
  if (starts(w, "gener")) {
    p1 = 5;
  } else if (starts(w, "commun")) {
    p1 = 6;
  } else if (starts(w, "arsen")) {
    p1 = 5;
  } else {
    p1 = after_vc(w, 0);
  }
  size_t p2 = p1 < w.size() ? after_vc(w, p1) : w.size();
  // Step 1a
  if (ends(w, "'s'")) {
    w.resize(w.size() - 3);
  } else if (ends(w, "'s")) {
    w.resize(w.size() - 2);
  } else if (ends(w, "'")) {
    w.resize(w.size() - 1);
  }
  if (ends(w, "sses")) {
    w.resize(w.size() - 2);
  } else if (ends(w, "ied") || ends(w, "ies")) {
    size_t base = w.size() - 3;
    set_suffix(w, base, base >= 2 ? "i" : "ie");
  } else if (ends(w, "us") || ends(w, "ss")) {
  } else if (ends(w, "s")) {
    if (w.size() >= 2 && any_vowel(w, w.size() - 2)) w.resize(w.size() - 1);
  }
  for (const char* e : kExc2)
    if (equals(w, e)) goto post;
  {
    // Step 1b
    static const char* const s1b[] = {"eedly", "ingly", "edly", "eed", "ing", "ed"};
    for (const char* suf : s1b) {
      if (!ends(w, suf)) continue;
      size_t base = w.size() - std::strlen(suf);
      if (std::strcmp(suf, "eed") == 0 || std::strcmp(suf, "eedly") == 0) {
        if (base >= p1) set_suffix(w, base, "ee");
      } else if (any_vowel(w, base)) {
        w.resize(base);
        if (ends(w, "at") || ends(w, "bl") || ends(w, "iz")) {
          w.push_back('e');
        } else if (ends(w, "bb") || ends(w, "dd") || ends(w, "ff") || ends(w, "gg") || ends(w, "mm") || ends(w, "nn") ||
                   ends(w, "pp") || ends(w, "rr") || ends(w, "tt")) {
          w.pop_back();
        } else if (p1 == w.size() && shortv(w, w.size())) {
          w.push_back('e');
        }
      }
      break;
    }
    // Step 1c
    if (w.size() > 2 && (w.back() == 'y' || w.back() == 'Y') && !isv(w[w.size() - 2])) w.back() = 'i';
    // Step 2
    for (const auto& r : kStep2) {
      if (!ends(w, r.suf)) continue;
      size_t base = w.size() - std::strlen(r.suf);
      if (base >= p1) {
        if (std::strcmp(r.suf, "ogi") == 0) {
          if (base > 0 && w[base - 1] == 'l') set_suffix(w, base, r.rep);
        } else if (std::strcmp(r.suf, "li") == 0) {
          if (base > 0) {
            char32_t c = w[base - 1];
            if (c == 'c' || c == 'd' || c == 'e' || c == 'g' || c == 'h' || c == 'k' || c == 'm' || c == 'n' ||
                c == 'r' || c == 't')
              w.resize(base);
          }
        } else {
          set_suffix(w, base, r.rep);
        }
      }
      break;
    }
    // Step 3
    for (const auto& r : kStep3) {
      if (!ends(w, r.suf)) continue;
      size_t base = w.size() - std::strlen(r.suf);
      if (base >= p1 && (std::strcmp(r.suf, "ative") != 0 || base >= p2)) set_suffix(w, base, r.rep);
      break;
    }
    // Step 4
    for (const char* suf : kStep4) {
      if (!ends(w, suf)) continue;
      size_t base = w.size() - std::strlen(suf);
      if (base >= p2 && (std::strcmp(suf, "ion") != 0 || (base > 0 && (w[base - 1] == 's' || w[base - 1] == 't'))))
        w.resize(base);
      break;
    }
    // Step 5
    if (!w.empty() && w.back() == 'e') {
      size_t base = w.size() - 1;
      if (base >= p2 || (base >= p1 && !shortv(w, base))) w.resize(base);
    } else if (!w.empty() && w.back() == 'l') {
      size_t base = w.size() - 1;
      if (base >= p2 && base > 0 && w[base - 1] == 'l') w.resize(base);
    }
  }
post:
  for (auto& c : w)
    if (c == 'Y') c = 'y';
}

// ---------------------------------------------------------------------------------------------
// alignment

struct Match {
  int module, start, length, mstart, mlen;
};

// A partial alignment. Its buffer is a slot of `stride` ints in the segment's arena: [0, n2) the match
// index chosen at each reference position (-1: none), then used flags of the n1 test words and the
// n2 reference words (copied on every branch, as the jar copies its arrays; never changed after).
struct Path {
  int m1 = 0, m2 = 0, all1 = 0, all2 = 0, chunks = 0, idx = 0, last = -1, dist = 0;
  size_t slot = 0;
};

void take(Path& p, const Match& m) {
  double w = kSearchWeights[m.module];
  p.m1 = static_cast<int>(static_cast<double>(p.m1) + m.mlen * w);  // the jar keeps ints: += truncates
  p.m2 = static_cast<int>(static_cast<double>(p.m2) + m.length * w);
  p.all1 += m.mlen;
  p.all2 += m.length;
  if (p.last != -1 && m.mstart != p.last) ++p.chunks;
  p.idx = m.start + m.length;
  p.last = m.mstart + m.mlen;
}

bool path_less(const Path* a, const Path* b) {
  int sa = a->m1 + a->m2, sb = b->m1 + b->m2;
  if (sa != sb) return sa > sb;
  if (a->chunks != b->chunks) return a->chunks < b->chunks;
  return a->dist < b->dist;
}

// Stable sort by path_less; beams are small, so an insertion sort (no buffer to allocate) mostly.
void stable_order(std::vector<Path*>& v) {
  if (v.size() > 64) {
    std::stable_sort(v.begin(), v.end(), path_less);
    return;
  }
  for (size_t i = 1; i < v.size(); ++i) {
    Path* x = v[i];
    size_t j = i;
    for (; j > 0 && path_less(x, v[j - 1]); --j) v[j] = v[j - 1];
    v[j] = x;
  }
}

bool intersects(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] == b[j]) return true;
    if (a[i] < b[j]) {
      ++i;
    } else {
      ++j;
    }
  }
  return false;
}

// Hashes of a line's word spans of up to max_len words (spans with an out-of-table word excluded),
// sorted by (hash, position), with a 1024-bit filter of their top hash bits (a 64-bit one let half
// of a table group's entries through to the binary search).
struct Span {
  uint64_t h;
  int pos, len;
  bool operator<(const Span& o) const { return h != o.h ? h < o.h : pos < o.pos; }
};

struct SpanIndex {
  std::vector<Span> spans;
  uint64_t bloom[16] = {0};
  void build(const int32_t* line, int n, int max_len) {
    spans.clear();
    std::fill(bloom, bloom + 16, uint64_t{0});
    for (int i = 0; i < n; ++i) {
      uint64_t h = kFnvOffset;
      for (int len = 1; len <= max_len && i + len <= n; ++len) {
        if (line[i + len - 1] < 0) break;
        h = (h ^ static_cast<uint32_t>(line[i + len - 1])) * kFnvPrime;
        spans.push_back({h, i, len});
        bloom[h >> 60] |= uint64_t{1} << ((h >> 54) & 63);
      }
    }
    std::sort(spans.begin(), spans.end());
  }
  bool maybe(uint64_t h) const { return (bloom[h >> 60] >> ((h >> 54) & 63)) & 1; }
};

// Buffers of align, one per worker thread, reused across segments (no allocation once warm).
struct Scratch {
  std::vector<Match> all;
  std::vector<int> at_off, at_idx;  // the matches starting at each reference position, in `all` order
  std::vector<int> cov1, cov2;
  std::vector<int32_t> l1, l2;
  SpanIndex s1, s2;
  std::vector<Resources::Group> gs;
  std::vector<Path> cur, next;
  std::vector<int> arena, cursor;  // path buffers (a path moved forward keeps its slot; a branch copies)
  std::vector<Path*> order;
  std::vector<int32_t> syn_key;  // synset id -> the test words holding it (n1 <= 64), open addressing
  std::vector<uint64_t> syn_mask;
};

void align(const Resources& res, const std::vector<const WordInfo*>& w1, const std::vector<const WordInfo*>& w2,
           Scratch& s, double* st) {
  const int n1 = static_cast<int>(w1.size()), n2 = static_cast<int>(w2.size());
  std::vector<Match>& all = s.all;
  all.clear();
  s.cov1.assign(n1, 0);
  s.cov2.assign(n2, 0);
  int* cov1 = s.cov1.data();
  int* cov2 = s.cov2.data();
  auto add = [&](const Match& m) { all.push_back(m); };
  bool same = n1 == n2;
  for (int k = 0; same && k < n1; ++k) same = w1[k]->hash == w2[k]->hash;
  for (int j = 0; j < n2; ++j)
    for (int i = 0; i < n1; ++i)
      if (w1[i]->hash == w2[j]->hash) add({0, j, 1, i, 1}), ++cov1[i], ++cov2[j];
  if (!same) {
    for (int j = 0; j < n2; ++j)
      for (int i = 0; i < n1; ++i)
        if (w1[i]->stem_hash == w2[j]->stem_hash && w1[i]->hash != w2[j]->hash)
          add({1, j, 1, i, 1}), ++cov1[i], ++cov2[j];
    size_t total = 0;
    for (int i = 0; i < n1; ++i) total += w1[i]->syn.size();
    if (n1 <= 64 && total > 0) {
      // The test words of each synset as a bit mask: a reference word's synsets OR-ed give the test
      // words it shares one with, in ascending order (the pairwise loop's order).
      size_t size = 16;
      while (size < 2 * total) size <<= 1;
      const size_t mask = size - 1;
      int bits = 0;
      while ((size_t{1} << bits) < size) ++bits;
      s.syn_key.assign(size, 0);
      s.syn_mask.assign(size, 0);
      auto slot_of = [&](int32_t id) {
        size_t k = static_cast<size_t>((uint64_t{static_cast<uint32_t>(id)} * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
        while (s.syn_mask[k] != 0 && s.syn_key[k] != id) k = (k + 1) & mask;
        return k;
      };
      for (int i = 0; i < n1; ++i)
        for (int32_t id : w1[i]->syn) {
          size_t k = slot_of(id);
          s.syn_key[k] = id;
          s.syn_mask[k] |= uint64_t{1} << i;
        }
      for (int j = 0; j < n2; ++j) {
        uint64_t m = 0;
        for (int32_t id : w2[j]->syn) m |= s.syn_mask[slot_of(id)];
        while (m) {
          int i = __builtin_ctzll(m);
          m &= m - 1;
          if (w1[i]->hash != w2[j]->hash) add({2, j, 1, i, 1}), ++cov1[i], ++cov2[j];
        }
      }
    } else if (total > 0) {
      for (int j = 0; j < n2; ++j)
        for (int i = 0; i < n1; ++i)
          if (w1[i]->hash != w2[j]->hash && intersects(w1[i]->syn, w2[j]->syn))
            add({2, j, 1, i, 1}), ++cov1[i], ++cov2[j];
    }
    s.l1.resize(n1);
    s.l2.resize(n2);
    for (int i = 0; i < n1; ++i) s.l1[i] = w1[i]->pid;
    for (int j = 0; j < n2; ++j) s.l2[j] = w2[j]->pid;
    const int32_t* l1 = s.l1.data();
    const int32_t* l2 = s.l2.data();
    // Paraphrases: the jar tries every paraphrase of every phrase against every position. Here a
    // phrase's paraphrases are scanned by hash against the hashes of the other line's word spans
    // (sorted, with a filter); hits are verified word by word and come out in the jar's order.
    const ParaArrays& pa = res.para();
    s.s1.build(l1, n1, pa.max_len);
    s.s2.build(l2, n2, pa.max_len);
    auto scan = [&](const Resources::Group& g, const SpanIndex& other, const int32_t* oline, auto&& emit) {
      for (int64_t k = g.first; k < g.end; ++k) {
        uint64_t hq = g.hash[k - g.first];
        if (!other.maybe(hq)) continue;
        auto it = std::lower_bound(other.spans.begin(), other.spans.end(), Span{hq, 0, 0});
        for (; it != other.spans.end() && it->h == hq; ++it) {
          int32_t q = pa.grp_par[k];
          int64_t b = pa.phr_off[q], e = pa.phr_off[q + 1];
          if (e - b != it->len) continue;
          bool eq = true;
          for (int64_t t = b; t < e && eq; ++t) eq = oline[it->pos + (t - b)] == pa.phr_tok[t];
          if (eq) emit(it->pos, static_cast<int>(e - b));
        }
      }
    };
    for (int j = 0; j < n2; ++j) {
      s.gs.clear();
      res.groups(l2, static_cast<size_t>(n2), j, *w2[j], s.gs);
      for (const auto& g : s.gs)
        scan(g, s.s1, l1, [&](int i, int plen) {
          add({3, j, g.len, i, plen});
          for (int k = 0; k < plen; ++k) ++cov1[i + k];
          for (int k = 0; k < g.len; ++k) ++cov2[j + k];
        });
    }
    for (int i = 0; i < n1; ++i) {
      s.gs.clear();
      res.groups(l1, static_cast<size_t>(n1), i, *w1[i], s.gs);
      for (const auto& g : s.gs)
        scan(g, s.s2, l2, [&](int j, int plen) {
          add({3, j, plen, i, g.len});
          for (int k = 0; k < g.len; ++k) ++cov1[i + k];
          for (int k = 0; k < plen; ++k) ++cov2[j + k];
        });
    }
  }
  // The matches starting at each reference position, in the order they were found.
  s.at_off.assign(n2 + 1, 0);
  for (const Match& m : all) ++s.at_off[m.start + 1];
  for (int j = 0; j < n2; ++j) s.at_off[j + 1] += s.at_off[j];
  s.at_idx.resize(all.size());
  {
    // placement cursor per position: at_off[j] + the number placed so far
    std::vector<int>& cursor = s.cursor;
    cursor.assign(s.at_off.begin(), s.at_off.end() - 1);
    for (int mi = 0; mi < static_cast<int>(all.size()); ++mi) s.at_idx[cursor[all[mi].start]++] = mi;
  }
  const int* at_off = s.at_off.data();
  const int* at_idx = s.at_idx.data();
  // One-to-one matches over words no other match covers are fixed.
  const size_t stride = static_cast<size_t>(2 * n2 + n1);
  s.next.clear();
  s.arena.assign(stride, 0);
  s.next.push_back(Path());
  {
    int* M0 = s.arena.data();
    int* U10 = M0 + n2;
    int* U20 = M0 + n2 + n1;
    std::fill(M0, M0 + n2, -1);
    for (int j = 0; j < n2; ++j) {
      if (at_off[j + 1] - at_off[j] != 1) continue;
      const Match& m = all[at_idx[at_off[j]]];
      bool overlap = false;
      for (int k = 0; k < m.length; ++k) overlap |= cov2[j + k] != 1;
      for (int k = 0; k < m.mlen; ++k) overlap |= cov1[m.mstart + k] != 1;
      if (overlap) continue;
      M0[j] = at_idx[at_off[j]];
      for (int k = 0; k < m.length; ++k) U20[j + k] = 1;
      for (int k = 0; k < m.mlen; ++k) U10[m.mstart + k] = 1;
    }
  }
  // Beam search left to right over the reference.
  auto keep = [&](const Path& p) { s.next.push_back(p); };
  auto branch = [&](const Path& p, size_t from) -> int* {  // p with a copy of slot `from`
    size_t slot = s.arena.size();
    if (s.arena.capacity() < slot + stride) s.arena.reserve(2 * (slot + stride));
    s.arena.insert(s.arena.end(), s.arena.begin() + static_cast<std::ptrdiff_t>(from),
                   s.arena.begin() + static_cast<std::ptrdiff_t>(from + stride));
    s.next.push_back(p);
    s.next.back().slot = slot;
    return s.arena.data() + slot;
  };
  for (int cur = 0; cur <= n2; ++cur) {
    s.cur.swap(s.next);
    s.next.clear();
    s.order.clear();
    for (auto& p : s.cur) s.order.push_back(&p);
    stable_order(s.order);
    size_t lim = std::min(kBeam, s.order.size());
    for (size_t rank = 0; rank < lim; ++rank) {
      Path& path = *s.order[rank];
      if (cur == n2) {
        if (path.last != -1) ++path.chunks;
        keep(path);
        continue;
      }
      const int* PM = s.arena.data() + path.slot;  // valid until the next branch
      if (PM[n2 + n1 + cur]) {
        if (cur < path.idx) {
          keep(path);
        } else if (PM[path.idx] >= 0) {
          const Match& m = all[PM[path.idx]];
          take(path, m);
          path.dist += std::abs(m.start - m.mstart);
          keep(path);
        }
        continue;
      }
      for (int a = at_off[cur]; a < at_off[cur + 1]; ++a) {
        const int mi = at_idx[a];
        const Match& m = all[mi];
        const int* pb = s.arena.data() + path.slot;
        bool used = false;
        for (int k = 0; k < m.length && !used; ++k) used = pb[n2 + n1 + m.start + k];
        for (int k = 0; k < m.mlen && !used; ++k) used = pb[n2 + m.mstart + k];
        if (used) continue;
        Path q = path;
        take(q, m);
        int* qb = branch(q, path.slot);
        for (int k = 0; k < m.length; ++k) qb[n2 + n1 + m.start + k] = 1;
        for (int k = 0; k < m.mlen; ++k) qb[n2 + m.mstart + k] = 1;
        qb[cur] = mi;
        path.dist += std::abs(m.start - m.mstart);  // sic: the jar charges the parent path
      }
      if (path.last != -1) {
        ++path.chunks;
        path.last = -1;
      }
      ++path.idx;
      keep(path);
    }
    if (s.next.empty()) keep(*s.order[0]);
  }
  s.order.clear();
  for (auto& p : s.next) s.order.push_back(&p);
  stable_order(s.order);
  const Path& best = *s.order[0];
  const int* BM = s.arena.data() + best.slot;
  // Statistics of the best alignment.
  double cm1[4] = {0}, cm2[4] = {0}, fm1[4] = {0}, fm2[4] = {0};
  int tm1 = 0, tm2 = 0, chunks = 0, last = -1, idx = 0;
  int f1 = 0, f2 = 0;
  for (int i = 0; i < n1; ++i) f1 += w1[i]->func;
  for (int j = 0; j < n2; ++j) f2 += w2[j]->func;
  while (idx < n2) {
    int mi = BM[idx];
    if (mi < 0) {
      if (last != -1) ++chunks, last = -1;
      ++idx;
      continue;
    }
    const Match& m = all[mi];
    for (int k = m.mstart; k < m.mstart + m.mlen; ++k) (w1[k]->func ? fm1 : cm1)[m.module] += 1;
    for (int k = m.start; k < m.start + m.length; ++k) (w2[k]->func ? fm2 : cm2)[m.module] += 1;
    tm1 += m.mlen;
    tm2 += m.length;
    if (last != -1 && m.mstart != last) ++chunks;
    idx = m.start + m.length;
    last = m.mstart + m.mlen;
  }
  if (last != -1) ++chunks;
  st[0] = n1, st[1] = n2, st[2] = f1, st[3] = f2;
  double t1 = 0, t2 = 0;
  for (int k = 0; k < 4; ++k) {
    st[4 + k] = cm1[k], st[8 + k] = cm2[k], st[12 + k] = fm1[k], st[16 + k] = fm2[k];
    t1 += cm1[k] + fm1[k];
    t2 += cm2[k] + fm2[k];
  }
  st[20] = chunks, st[21] = t1, st[22] = t2;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::string snowball_stem(std::string_view word) {
  U w = utf8_decode(word);
  stem_u(w);
  std::string out;
  out.reserve(word.size());
  for (char32_t c : w) utf8_append(c, out);
  return out;
}

int32_t java_hash(std::string_view word) {
  uint32_t h = 0;
  for (char32_t c : utf8_decode(word)) {
    if (c >= 0x10000) {
      char32_t v = c - 0x10000;
      h = 31 * h + static_cast<uint32_t>(0xD800 + (v >> 10));
      h = 31 * h + static_cast<uint32_t>(0xDC00 + (v & 0x3FF));
    } else {
      h = 31 * h + static_cast<uint32_t>(c);
    }
  }
  return static_cast<int32_t>(h);
}

Resources::Resources(std::string_view function_words, std::string_view exceptions, std::string_view synsets,
                     const ParaArrays& para)
    : para_(para) {
  for (auto l : java_lines(function_words)) function_.emplace(l);
  auto ex = java_lines(exceptions);
  std::vector<std::string_view> tok;
  for (size_t k = 0; k + 1 < ex.size(); k += 2) {
    tok.clear();
    split_java(ex[k + 1], tok);
    for (auto f : tok) bases_[std::string(f)].emplace_back(ex[k]);
  }
  // word -> its line of synset ids (parsed when a word is looked up; the bytes outlive this). One
  // pass over the bytes: lines as Java's readLine splits them, paired (word, ids).
  synsets_.reserve(synsets.size() / 48 + 16);  // ~50 bytes a word and its ids; grows if short
  std::string_view word;
  bool have_word = false;
  size_t lineno = 0;
  auto on_line = [&](std::string_view line) {
    ++lineno;
    if (!have_word) {
      word = line;
      have_word = true;
      return;
    }
    have_word = false;
    // ids are parsed when a word is looked up; a malformed one is refused here, once (as the twin does).
    // A token of 1-9 plain digits is always an int32; others go through from_chars.
    const char* p = line.data();
    const size_t n = line.size();
    for (size_t i = 0; i < n;) {
      while (i < n && is_delim(p[i])) ++i;
      size_t b = i;
      bool plain = true;
      for (; i < n && !is_delim(p[i]); ++i) plain &= p[i] >= '0' && p[i] <= '9';
      if (i == b || (plain && i - b <= 9)) continue;
      int32_t v = 0;
      auto r = std::from_chars(p + b, p + i, v);
      if (r.ec != std::errc() || r.ptr != p + i)
        throw std::invalid_argument("synsets: line " + std::to_string(lineno) +
                                    " holds a token that is not a synset id (a 32-bit integer); pass the jar's "
                                    "synonym/english.synsets");
    }
    synsets_.put(word, line, true);  // a later line wins, as in Java
  };
  const bool has_cr = std::memchr(synsets.data(), '\r', synsets.size()) != nullptr;
  size_t b = 0;
  if (!has_cr) {  // lines end at '\n' only: memchr
    while (b < synsets.size()) {
      const void* nl = std::memchr(synsets.data() + b, '\n', synsets.size() - b);
      if (!nl) break;
      size_t e = static_cast<size_t>(static_cast<const char*>(nl) - synsets.data());
      on_line(synsets.substr(b, e - b));
      b = e + 1;
    }
  } else {
    size_t i = 0;
    while (i < synsets.size()) {
      char c = synsets[i];
      if (c == '\n' || c == '\r') {
        on_line(synsets.substr(b, i - b));
        if (c == '\r' && i + 1 < synsets.size() && synsets[i + 1] == '\n') ++i;
        b = ++i;
      } else {
        ++i;
      }
    }
  }
  if (b < synsets.size()) on_line(synsets.substr(b));
  vocab_.reserve(para_.n_vocab);
  for (size_t k = 0; k < para_.n_vocab; ++k) {
    const char* p = reinterpret_cast<const char*>(para_.vocab_blob) + para_.vocab_off[k];
    vocab_.put(std::string_view(p, static_cast<size_t>(para_.vocab_off[k + 1] - para_.vocab_off[k])),
               static_cast<int32_t>(k), false);  // a word listed twice keeps its first id
  }
}

bool Resources::synsets_of(std::string_view w, std::vector<int32_t>& out) const {
  const std::string_view* line = synsets_.find(w);
  if (!line) return false;
  std::vector<std::string_view> tok;
  split_java(*line, tok);
  for (auto t : tok) {
    int32_t v = 0;
    std::from_chars(t.data(), t.data() + t.size(), v);
    out.push_back(v);
  }
  return true;
}

std::string Resources::morph(const std::string& w) const {
  static const char* const sufx[] = {"s",  "ses", "xes", "zes", "ches", "shes", "men", "ies", "s",  "ies",
                                     "es", "es",  "ed",  "ed",  "ing",  "ing",  "er",  "est", "er", "est"};
  static const char* const addr[] = {"",  "s", "x", "z", "ch", "sh", "man", "y", "",  "y",
                                     "e", "",  "e", "",  "e",  "",   "",    "",  "e", "e"};
  size_t chars = utf8_decode(w).size();
  auto ends_with = [&](const char* s) {
    size_t n = std::strlen(s);
    return w.size() >= n && w.compare(w.size() - n, n, s) == 0;
  };
  if (ends_with("ss") || chars <= 2) return w;
  for (int i = 0; i < 20; ++i) {
    if (!ends_with(sufx[i])) continue;
    std::string cand = w.substr(0, w.size() - std::strlen(sufx[i])) + addr[i];
    if (synsets_.find(std::string_view(cand))) return cand;
  }
  return std::string();
}

std::vector<int32_t> Resources::synset_ids(const std::string& w) const {
  std::vector<int32_t> out;
  synsets_of(w, out);
  auto it = bases_.find(w);
  if (it != bases_.end()) {
    for (const auto& b : it->second) synsets_of(b, out);
  } else {
    std::string m = morph(w);
    synsets_of(m, out);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int32_t Resources::word_id(const std::string& w) const {
  const int32_t* id = vocab_.find(std::string_view(w));
  return id ? *id : -1;
}

bool Resources::is_prefix(uint64_t h) const {
  if (para_.pfx_size == 0) return true;
  size_t mask = para_.pfx_size - 1, slot = h & mask;
  for (;;) {
    if (para_.pfx_val[slot] < 0) return false;
    if (para_.pfx_key[slot] == h) return true;
    slot = (slot + 1) & mask;
  }
}

int32_t Resources::phrase(const int32_t* ids, size_t n, uint64_t h) const {
  if (para_.htab_size == 0) return -1;
  size_t mask = para_.htab_size - 1, slot = h & mask;
  for (;;) {
    int32_t v = para_.htab_val[slot];
    if (v < 0) return -1;
    if (para_.htab_key[slot] == h) {
      int64_t b = para_.phr_off[v], e = para_.phr_off[v + 1];
      if (static_cast<size_t>(e - b) == n && std::equal(ids, ids + n, para_.phr_tok + b)) return v;
    }
    slot = (slot + 1) & mask;
  }
}

void Resources::groups(const int32_t* line, size_t n, size_t start, const WordInfo& first,
                       std::vector<Group>& out) const {
  size_t maxl = std::min(static_cast<size_t>(para_.max_len), n - start);
  if (maxl == 0 || line[start] < 0) return;
  // one word: looked up once per word (WordInfo), not once per occurrence
  if (first.phrase1 >= 0 && para_.grp_ptr[first.phrase1] < para_.grp_ptr[first.phrase1 + 1])
    out.push_back({1, para_.grp_ptr[first.phrase1], para_.grp_ptr[first.phrase1 + 1], first.hash1.data()});
  if (!first.prefix1) return;
  uint64_t h = (kFnvOffset ^ static_cast<uint32_t>(line[start])) * kFnvPrime;
  for (size_t len = 2; len <= maxl; ++len) {
    if (line[start + len - 1] < 0) break;
    h = (h ^ static_cast<uint32_t>(line[start + len - 1])) * kFnvPrime;
    int32_t p = phrase(line + start, len, h);
    if (p >= 0 && para_.grp_ptr[p] < para_.grp_ptr[p + 1])
      out.push_back({static_cast<int>(len), para_.grp_ptr[p], para_.grp_ptr[p + 1], para_.grp_hash + para_.grp_ptr[p]});
    if (!is_prefix(h)) break;  // no longer phrase starts with these words (the transducer's trie stops)
  }
}

const WordInfo* Resources::info(std::string_view w, std::vector<std::unique_ptr<WordInfo>>& spare) const {
  std::string key(w);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second.get();
  }
  auto x = std::make_unique<WordInfo>();
  x->hash = java_hash(key);
  x->stem_hash = java_hash(snowball_stem(key));
  x->syn = synset_ids(key);
  x->pid = word_id(key);
  if (x->pid >= 0) {
    uint64_t h = (kFnvOffset ^ static_cast<uint32_t>(x->pid)) * kFnvPrime;
    x->phrase1 = phrase(&x->pid, 1, h);
    x->prefix1 = is_prefix(h);
    if (x->phrase1 >= 0)
      x->hash1.assign(para_.grp_hash + para_.grp_ptr[x->phrase1], para_.grp_hash + para_.grp_ptr[x->phrase1 + 1]);
  }
  x->func = is_function(key);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second.get();  // another thread was first
  if (cache_.size() < kMaxCached) return cache_.emplace(std::move(key), std::move(x)).first->second.get();
  spare.push_back(std::move(x));
  return spare.back().get();
}

// -norm on ASCII text: pysynth/metrics/_meteor_ref.py's prepare (the jar flavor's cleaning, then
// normalize), step by step; each regex of the twin is a fixed-width pattern here.

namespace {

bool is_alpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alnum(char c) { return is_alpha(c) || is_digit(c); }
bool py_space(char c) {  // str.split()'s ASCII whitespace
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}
bool tok_delim(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }

// str.replace(from, to): non-overlapping, left to right.
std::string replace_all(const std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  for (size_t k; (k = s.find(from, i)) != std::string::npos; i = k + from.size()) {
    out.append(s, i, k - i);
    out.append(to);
  }
  out.append(s, i, std::string::npos);
  return out;
}

// re.sub("([A])[c]([B])", "\1" + mid + "\2", s)
template <class A, class B>
std::string sub3(const std::string& s, A a, char c, B b, std::string_view mid) {
  std::string out;
  out.reserve(s.size() + 16);
  size_t i = 0, n = s.size();
  while (i < n) {
    if (i + 2 < n && s[i + 1] == c && a(s[i]) && b(s[i + 2])) {
      out.push_back(s[i]);
      out.append(mid);
      out.push_back(s[i + 2]);
      i += 3;
    } else {
      out.push_back(s[i++]);
    }
  }
  return out;
}

std::string strip_ctl(const std::string& s) {  // str.strip of every character <= U+0020
  size_t b = 0, e = s.size();
  while (b < e && static_cast<unsigned char>(s[b]) <= 0x20) ++b;
  while (e > b && static_cast<unsigned char>(s[e - 1]) <= 0x20) --e;
  return s.substr(b, e - b);
}

}  // namespace

bool normalize_ascii(std::string_view text, const std::unordered_map<std::string, int>& nbp, std::string& out) {
  for (char c : text)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  // the jar flavor's cleaning: '|||' out, whitespace folded, trimmed as Java's trim
  std::string t = replace_all(std::string(text), "|||", " ");
  std::string line;
  line.reserve(t.size());
  for (size_t i = 0; i < t.size();) {
    while (i < t.size() && py_space(t[i])) ++i;
    size_t b = i;
    while (i < t.size() && !py_space(t[i])) ++i;
    if (i > b) {
      if (!line.empty()) line.push_back(' ');
      line.append(t, b, i - b);
    }
  }
  line = strip_ctl(line);
  // punctuation the jar separates
  std::string s;
  s.reserve(line.size() * 2 + 2);
  s.push_back(' ');
  for (char c : line) {
    bool keep = is_alnum(c) || c == ' ' || c == '\t' || c == '\n' || c == '\x0b' || c == '\f' || c == '\r' ||
                c == '.' || c == '\'' || c == '`' || c == ',' || c == '-';
    if (keep) {
      s.push_back(c);
    } else {
      s.push_back(' ');
      s.push_back(c);
      s.push_back(' ');
    }
  }
  s.push_back(' ');
  if (s.find("..") != std::string::npos) {  // \.([\.]+) -> " DOTMULTI\1"
    std::string o;
    size_t i = 0, n = s.size();
    while (i < n) {
      if (s[i] == '.' && i + 1 < n && s[i + 1] == '.') {
        size_t j = i + 1;
        while (j < n && s[j] == '.') ++j;
        o += " DOTMULTI";
        o.append(s, i + 1, j - i - 1);
        i = j;
      } else {
        o.push_back(s[i++]);
      }
    }
    s.swap(o);
  }
  while (s.find("DOTMULTI.") != std::string::npos) {
    std::string o;  // DOTMULTI\.([^\.]) -> "DOTDOTMULTI \1"
    size_t i = 0, n = s.size();
    while (i < n) {
      if (i + 9 < n && s[i + 9] != '.' && s.compare(i, 9, "DOTMULTI.") == 0) {
        o += "DOTDOTMULTI ";
        o.push_back(s[i + 9]);
        i += 10;
      } else {
        o.push_back(s[i++]);
      }
    }
    s = replace_all(o, "DOTMULTI.", "DOTDOTMULTI");
  }
  auto nondigit = [](char c) { return !is_digit(c); };
  if (s.find(',') != std::string::npos) {
    s = sub3(s, nondigit, ',', nondigit, " , ");
    s = sub3(s, is_digit, ',', nondigit, " , ");
    s = sub3(s, nondigit, ',', is_digit, " , ");
  }
  if (s.find('`') != std::string::npos) {
    for (auto& c : s)
      if (c == '`') c = '\'';
    s = replace_all(s, "''", " \" ");
  } else if (s.find("''") != std::string::npos) {
    s = replace_all(s, "''", " \" ");
  }
  if (s.find('-') != std::string::npos) {
    s = replace_all(s, "--", "-");
    s = sub3(s, [](char c) { return is_alnum(c) || c == '.'; }, '-', is_alnum, " ");
  }
  if (s.find('\'') != std::string::npos) {
    auto nonalpha = [](char c) { return !is_alpha(c); };
    auto nonalnum = [](char c) { return !is_alnum(c); };
    s = sub3(s, nonalpha, '\'', nonalpha, " ' ");
    s = sub3(s, nonalnum, '\'', is_alpha, " ' ");
    s = sub3(s, is_alpha, '\'', nonalpha, " ' ");
    s = sub3(s, is_alpha, '\'', is_alpha, " '");
    s = sub3(s, is_digit, '\'', [](char c) { return c == 's'; }, " '");
  }
  std::vector<std::string> words;
  for (size_t i = 0; i < s.size();) {
    while (i < s.size() && tok_delim(s[i])) ++i;
    size_t b = i;
    while (i < s.size() && !tok_delim(s[i])) ++i;
    if (i > b) words.emplace_back(s, b, i - b);
  }
  if (s.find('.') != std::string::npos) {  // dots split off unless a nonbreaking prefix
    for (size_t i = 0; i < words.size(); ++i) {
      const std::string& w = words[i];
      if (w.size() <= 1 || w.back() != '.') continue;
      std::string pre = w.substr(0, w.size() - 1);
      auto it = nbp.find(pre);
      int typ = it == nbp.end() ? 0 : it->second;
      char nxt = i + 1 < words.size() ? words[i + 1][0] : '\0';
      bool alpha = std::any_of(pre.begin(), pre.end(), is_alpha);
      if (pre.find('.') != std::string::npos && alpha) {
        std::string o;
        for (char c : w)
          if (c != '.') o.push_back(c);
        words[i] = o;
      } else if (typ == 1 || (nxt >= 'a' && nxt <= 'z')) {
      } else if (typ == 2 && nxt >= '0' && nxt <= '9') {
      } else {
        words[i] = pre + " .";
      }
    }
  }
  s.clear();
  for (size_t i = 0; i < words.size(); ++i) {
    if (i) s.push_back(' ');
    s += words[i];
  }
  if (s.find("DOTMULTI") != std::string::npos) {
    while (s.find("DOTDOTMULTI") != std::string::npos) s = replace_all(s, "DOTDOTMULTI", "DOTMULTI.");
    s = replace_all(s, "DOTMULTI", ".");
  }
  if (s.find("  ") != std::string::npos) {
    std::string o;
    for (char c : s)
      if (c != ' ' || o.empty() || o.back() != ' ') o.push_back(c);
    s.swap(o);
  }
  out = strip_ctl(s);
  for (auto& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return true;
}

double score_from_stats(const double* st) {
  double tl = st[0], rl = st[1], tf = st[2], rf = st[3];
  const double *tc = st + 4, *rc = st + 8, *tfn = st + 12, *rfn = st + 16;
  double chunks = st[20], twm = st[21], rwm = st[22];
  double tlen = kDelta * (tl - tf) + (1.0 - kDelta) * tf;
  double rlen = kDelta * (rl - rf) + (1.0 - kDelta) * rf;
  double tw = 0, rw = 0;
  for (int i = 0; i < 4; ++i) tw += tc[i] * kWeights[i] * kDelta;
  for (int i = 0; i < 4; ++i) rw += rc[i] * kWeights[i] * kDelta;
  for (int i = 0; i < 4; ++i) tw += tfn[i] * kWeights[i] * (1.0 - kDelta);
  for (int i = 0; i < 4; ++i) rw += rfn[i] * kWeights[i] * (1.0 - kDelta);
  double p = tw / tlen, r = rw / rlen;
  double fmean = 1.0 / (((1.0 - kAlpha) / p) + (kAlpha / r));
  double ttot = 0, rtot = 0;
  for (int i = 0; i < 4; ++i) ttot += tc[i] + tfn[i], rtot += rc[i] + rfn[i];
  double frag = (ttot == tl && rtot == rl && chunks == 1) ? 0.0 : chunks / ((twm + rwm) / 2);
  double score = fmean * (1.0 - kGamma * std::pow(frag, kBeta));
  if (std::isnan(score)) return 0.0;
  return std::max(score, 0.0);
}

void segment_stats(const Resources& res, const std::vector<std::string_view>& hyps,
                   const std::vector<std::string_view>& refs, const int64_t* ref_off, int workers, double* out) {
  // Every distinct word once: hash, stem hash, synsets, paraphrase id, function word.
  std::unordered_map<std::string_view, int> ids;
  std::vector<std::string_view> words;
  auto tokens_of = [&](std::string_view s, std::vector<int>& toks) {
    std::vector<std::string_view> t;
    split_java(s, t);
    for (auto w : t) {
      auto [it, fresh] = ids.emplace(w, static_cast<int>(words.size()));
      if (fresh) words.push_back(w);
      toks.push_back(it->second);
    }
  };
  std::vector<std::vector<int>> htok(hyps.size()), rtok(refs.size());
  for (size_t i = 0; i < hyps.size(); ++i) tokens_of(hyps[i], htok[i]);
  for (size_t i = 0; i < refs.size(); ++i) tokens_of(refs[i], rtok[i]);
  std::vector<const WordInfo*> info(words.size());
  std::vector<std::vector<std::unique_ptr<WordInfo>>> spare(static_cast<size_t>(std::max(1, resolve_workers(workers))));
  parallel_for(words.size(), workers, 256, [&](size_t tid, size_t b, size_t e) {
    for (size_t k = b; k < e; ++k) info[k] = res.info(words[k], spare[tid]);
  });
  parallel_for(hyps.size(), workers, 16, [&](size_t, size_t b, size_t e) {
    // kept by the thread: its buffers stay allocated from one call to the next (one worker runs
    // on the calling thread)
    static thread_local Scratch scratch;
    std::vector<const WordInfo*> w1, w2;
    double st[kStats];
    for (size_t i = b; i < e; ++i) {
      w1.clear();
      for (int t : htok[i]) w1.push_back(info[t]);
      double best_score = -1.0;
      double* o = out + i * kStats;
      std::fill(o, o + kStats, 0.0);
      for (int64_t r = ref_off[i]; r < ref_off[i + 1]; ++r) {
        w2.clear();
        for (int t : rtok[r]) w2.push_back(info[t]);
        align(res, w1, w2, scratch, st);
        double sc = score_from_stats(st);
        if (sc > best_score) {
          best_score = sc;
          std::copy(st, st + kStats, o);
        }
      }
    }
  });
}

}  // namespace pysynth::meteor
