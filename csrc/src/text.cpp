#include "pysynth/text.hpp"

#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace pysynth {

void split_whitespace(std::string_view s, std::vector<std::string_view>& out) {
  const char* p = s.data();
  const char* end = p + s.size();
  const char* start = nullptr;
  while (p < end) {
    auto c = static_cast<unsigned char>(*p);
    // Fast path: plain ASCII letters and digits are never whitespace.
    if (c > 0x20 && c < 0x80) {
      if (!start) start = p;
      ++p;
      continue;
    }
    size_t w = py_space_len(p, end);
    if (w) {
      if (start) {
        out.emplace_back(start, static_cast<size_t>(p - start));
        start = nullptr;
      }
      p += w;
    } else {
      if (!start) start = p;
      ++p;
    }
  }
  if (start) out.emplace_back(start, static_cast<size_t>(end - start));
}

std::string_view rstrip_whitespace(std::string_view s) {
  // Walk back over trailing whitespace: ASCII bytes directly, multi-byte characters by
  // finding their lead byte (whitespace characters are at most 3 bytes long).
  const char* begin = s.data();
  const char* end = begin + s.size();
  while (end > begin) {
    const char* c = end - 1;
    while (c > begin && end - c < 3 && (static_cast<unsigned char>(*c) & 0xC0) == 0x80) --c;
    if (py_space_len(c, end) != static_cast<size_t>(end - c)) break;
    end = c;
  }
  return std::string_view(begin, static_cast<size_t>(end - begin));
}

namespace {

// rouge-score character classes: 0 separator, 1 copy ([a-z0-9]), 2 upper case, 3 non-ASCII.
struct RougeClasses {
  uint8_t c[256];
  constexpr RougeClasses() : c() {
    for (int i = 0; i < 256; ++i) {
      c[i] = i >= 0x80 ? 3 : ((i >= 'a' && i <= 'z') || (i >= '0' && i <= '9')) ? 1 : (i >= 'A' && i <= 'Z') ? 2 : 0;
    }
  }
};
constexpr RougeClasses kRouge{};

}  // namespace

namespace {

#if defined(__SSE2__)
// Bit masks over 16 bytes: [a-z0-9] bytes, [A-Z] bytes, and bytes >= 0x80. Signed byte
// compares are fine: every range is ASCII, and bytes >= 0x80 compare negative.
inline void classify16(const unsigned char* p, uint32_t& word, uint32_t& upper, uint32_t& high) {
  __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  auto in = [&](char lo, char hi) {
    return _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(static_cast<char>(lo - 1))),
                         _mm_cmplt_epi8(v, _mm_set1_epi8(static_cast<char>(hi + 1))));
  };
  __m128i lower = _mm_or_si128(in('a', 'z'), in('0', '9'));
  __m128i up = in('A', 'Z');
  upper = static_cast<uint32_t>(_mm_movemask_epi8(up));
  word = static_cast<uint32_t>(_mm_movemask_epi8(_mm_or_si128(lower, up)));
  high = static_cast<uint32_t>(_mm_movemask_epi8(v));
}

// Fast tokenizer: builds word/upper bitmaps 16 bytes at a time, then walks the runs of word
// bits. Returns false (and emits nothing) if the text holds U+0130 or U+212A.
bool tokenize_rouge_simd(std::string_view s, std::string& buf, std::vector<std::string_view>& out,
                         std::vector<uint64_t>& bits) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size(), nw = (n + 63) / 64;
  bits.assign(2 * nw, 0);
  uint64_t* W = bits.data();
  uint64_t* U = W + nw;
  for (size_t b = 0; b < n; b += 16) {
    uint32_t w, u, h;
    if (b + 16 <= n) {
      classify16(p + b, w, u, h);
    } else {
      unsigned char tail[16] = {0};  // zero bytes are separators
      std::memcpy(tail, p + b, n - b);
      classify16(tail, w, u, h);
    }
    // Non-ASCII characters are separators, except the two whose lower case is ASCII
    // alphanumeric: U+0130 (C4 B0) and U+212A (E2 84 AA). Only those need the scalar path.
    while (h) {
      size_t q = b + static_cast<size_t>(__builtin_ctz(h));
      h &= h - 1;
      if ((p[q] == 0xC4 && q + 1 < n && p[q + 1] == 0xB0) ||
          (p[q] == 0xE2 && q + 2 < n && p[q + 1] == 0x84 && p[q + 2] == 0xAA))
        return false;
    }
    W[b / 64] |= static_cast<uint64_t>(w) << (b % 64);
    U[b / 64] |= static_cast<uint64_t>(u) << (b % 64);
  }
  // Walk token runs word by word: starts = set bits whose left neighbour is clear, ends =
  // set bits whose right neighbour is clear (neighbours across words via carries).
  bool any_upper = false;
  for (size_t k = 0; k < nw; ++k) any_upper |= U[k] != 0;
  size_t pending = 0;
  bool open = false;
  uint64_t carry = 0;
  for (size_t k = 0; k < nw; ++k) {
    uint64_t w = W[k];
    uint64_t next_low = k + 1 < nw ? (W[k + 1] & 1) : 0;
    uint64_t starts = w & ~((w << 1) | carry);
    uint64_t ends = w & ~((w >> 1) | (next_low << 63));
    carry = w >> 63;
    for (;;) {
      if (!open) {
        if (!starts) break;
        pending = k * 64 + static_cast<size_t>(__builtin_ctzll(starts));
        starts &= starts - 1;
        open = true;
      }
      if (!ends) break;  // the token continues into the next word
      size_t e = k * 64 + static_cast<size_t>(__builtin_ctzll(ends)) + 1;
      ends &= ends - 1;
      open = false;
      bool has_upper = false;
      if (any_upper) {
        for (size_t q = pending / 64; q <= (e - 1) / 64 && !has_upper; ++q) {
          uint64_t m = U[q];
          if (q == pending / 64) m &= ~uint64_t{0} << (pending % 64);
          if (q == (e - 1) / 64 && (e % 64)) m &= (uint64_t{1} << (e % 64)) - 1;
          has_upper = m != 0;
        }
      }
      if (has_upper) {
        size_t t = buf.size();
        buf.resize(t + (e - pending));  // within the reserved capacity: no reallocation
        char* o = &buf[t];
        for (size_t q = pending; q < e; ++q) {
          unsigned char c = p[q];
          o[q - pending] = static_cast<char>(c + (static_cast<unsigned>(c - 'A') < 26u ? 32 : 0));
        }
        out.emplace_back(buf.data() + t, e - pending);
      } else {
        out.emplace_back(s.data() + pending, e - pending);
      }
    }
  }
  return true;
}
#endif

}  // namespace

void tokenize_rouge(std::string_view s, std::string& buf, std::vector<std::string_view>& out,
                    std::vector<uint64_t>& scratch) {
#if defined(__SSE2__)
  if (tokenize_rouge_simd(s, buf, out, scratch)) return;
#else
  (void)scratch;
#endif
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  // Fast path: a run of [a-z0-9] ending at a separator is already the token; return a view
  // into the input. Runs with upper case or U+212A are lower-cased into buf (the caller
  // reserved room, so buf never reallocates and earlier views stay valid).
  while (p < end) {
    while (p < end && kRouge.c[*p] == 0) ++p;
    if (p == end) break;
    const unsigned char* start = p;
    while (p < end && kRouge.c[*p] == 1) ++p;
    if (p == end || kRouge.c[*p] == 0) {
      out.emplace_back(reinterpret_cast<const char*>(start), static_cast<size_t>(p - start));
      continue;
    }
    // Slow path: copy the token so far, then go character by character.
    size_t tok = buf.size();
    buf.append(reinterpret_cast<const char*>(start), static_cast<size_t>(p - start));
    bool open = p > start;
    while (p < end) {
      unsigned char c = *p;
      int k = kRouge.c[c];
      if (k == 1) {
        buf.push_back(static_cast<char>(c));
        open = true;
        ++p;
      } else if (k == 2) {
        buf.push_back(static_cast<char>(c + 32));
        open = true;
        ++p;
      } else if (k == 0) {
        break;
      } else if (c == 0xE2 && p + 2 < end && p[1] == 0x84 && p[2] == 0xAA) {
        buf.push_back('k');  // U+212A KELVIN SIGN lower-cases to "k"
        open = true;
        p += 3;
      } else if (c == 0xC4 && p + 1 < end && p[1] == 0xB0) {
        buf.push_back('i');  // U+0130 lower-cases to "i" + U+0307, a separator
        open = true;
        p += 2;
        break;
      } else {
        // any other non-ASCII character is a separator
        ++p;
        while (p < end && (*p & 0xC0) == 0x80) ++p;
        break;
      }
    }
    if (open) out.emplace_back(buf.data() + tok, buf.size() - tok);
  }
}

namespace {

// Python str.replace(old, new) for every occurrence, left to right, non-overlapping.
void replace_all(std::string& s, std::string_view from, std::string_view to, std::string& tmp) {
  size_t pos = s.find(from);
  if (pos == std::string::npos) return;
  tmp.clear();
  size_t last = 0;
  while (pos != std::string::npos) {
    tmp.append(s, last, pos - last);
    tmp.append(to);
    last = pos + from.size();
    pos = s.find(from, last);
  }
  tmp.append(s, last, std::string::npos);
  s.swap(tmp);
}

inline bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

// [\{-\~\[-\` -\&\(-\+\:-\@\/]
inline bool is_13a_punct(unsigned char c) {
  return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) || (c >= 0x28 && c <= 0x2B) ||
         (c >= 0x3A && c <= 0x40) || c == 0x2F;
}

}  // namespace

void tokenize_13a(std::string_view s, std::string& out, std::string& tmp) {
  std::string_view line = rstrip_whitespace(s);
  std::string& a = out;
  a.assign(line.data(), line.size());
  if (a.find('<') != std::string::npos) replace_all(a, "<skipped>", "", tmp);
  if (a.find('\n') != std::string::npos) {
    replace_all(a, "-\n", "", tmp);
    replace_all(a, "\n", " ", tmp);
  }
  if (a.find('&') != std::string::npos) {
    replace_all(a, "&quot;", "\"", tmp);
    replace_all(a, "&amp;", "&", tmp);
    replace_all(a, "&lt;", "<", tmp);
    replace_all(a, "&gt;", ">", tmp);
  }
  // Each pass writes through a raw pointer into a buffer sized for its worst case (rule 1
  // triples a byte; rules 2-4 add two bytes per two-byte match) and trims afterwards.
  // Rule 1: pad the 13a punctuation class with spaces, on the line padded by one space.
  bool dots = false, dash = false;
  tmp.resize(3 * a.size() + 2);
  char* o = &tmp[0];
  *o++ = ' ';
  for (unsigned char c : a) {
    if (is_13a_punct(c)) {
      o[0] = ' ';
      o[1] = static_cast<char>(c);
      o[2] = ' ';
      o += 3;
    } else {
      dots |= c == '.' || c == ',';
      dash |= c == '-';
      *o++ = static_cast<char>(c);
    }
  }
  *o++ = ' ';
  tmp.resize(static_cast<size_t>(o - tmp.data()));
  // Rules 2-4 emulate re.sub's leftmost, non-overlapping scan. Working on bytes gives the
  // same output as on code points: a multi-byte character is never '.', ',', '-' or a
  // digit, and splitting the match inside it does not change the emitted bytes.
  if (dots) {
    // Rule 2: ([^0-9])([\.,]) -> '\1 \2 '
    a.resize(2 * tmp.size());
    o = &a[0];
    for (size_t i = 0, n = tmp.size(); i < n;) {
      auto c = static_cast<unsigned char>(tmp[i]);
      if (i + 1 < n && !is_digit(c) && (tmp[i + 1] == '.' || tmp[i + 1] == ',')) {
        o[0] = static_cast<char>(c);
        o[1] = ' ';
        o[2] = tmp[i + 1];
        o[3] = ' ';
        o += 4;
        i += 2;
      } else {
        *o++ = static_cast<char>(c);
        ++i;
      }
    }
    a.resize(static_cast<size_t>(o - a.data()));
    // Rule 3: ([\.,])([^0-9]) -> ' \1 \2' (the whole following character is consumed)
    tmp.resize(2 * a.size());
    o = &tmp[0];
    for (size_t i = 0, n = a.size(); i < n;) {
      char c = a[i];
      if ((c == '.' || c == ',') && i + 1 < n && !is_digit(static_cast<unsigned char>(a[i + 1]))) {
        o[0] = ' ';
        o[1] = c;
        o[2] = ' ';
        o += 3;
        size_t j = i + 1;
        *o++ = a[j++];
        while (j < n && (static_cast<unsigned char>(a[j]) & 0xC0) == 0x80) *o++ = a[j++];
        i = j;
      } else {
        *o++ = c;
        ++i;
      }
    }
    tmp.resize(static_cast<size_t>(o - tmp.data()));
  }
  if (dash) {
    // Rule 4: ([0-9])(-) -> '\1 \2 '
    a.resize(2 * tmp.size());
    o = &a[0];
    for (size_t i = 0, n = tmp.size(); i < n;) {
      char c = tmp[i];
      if (is_digit(static_cast<unsigned char>(c)) && i + 1 < n && tmp[i + 1] == '-') {
        o[0] = c;
        o[1] = ' ';
        o[2] = '-';
        o[3] = ' ';
        o += 4;
        i += 2;
      } else {
        *o++ = c;
        ++i;
      }
    }
    a.resize(static_cast<size_t>(o - a.data()));
  } else {
    a.swap(tmp);
  }
}

}  // namespace pysynth
