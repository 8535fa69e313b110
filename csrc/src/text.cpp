#include "pysynth/text.hpp"

#include <cstring>

namespace pysynth {

size_t py_space_len(const char* p, const char* end) {
  auto c = static_cast<unsigned char>(*p);
  if (c < 0x80) {
    return (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) ? 1 : 0;
  }
  size_t left = static_cast<size_t>(end - p);
  auto b1 = left > 1 ? static_cast<unsigned char>(p[1]) : 0;
  auto b2 = left > 2 ? static_cast<unsigned char>(p[2]) : 0;
  if (c == 0xC2) return (b1 == 0x85 || b1 == 0xA0) ? 2 : 0;
  if (c == 0xE1) return (b1 == 0x9A && b2 == 0x80) ? 3 : 0;  // U+1680
  if (c == 0xE2) {
    if (b1 == 0x80) {
      // U+2000-U+200A, U+2028, U+2029, U+202F
      return ((b2 >= 0x80 && b2 <= 0x8A) || b2 == 0xA8 || b2 == 0xA9 || b2 == 0xAF) ? 3 : 0;
    }
    return (b1 == 0x81 && b2 == 0x9F) ? 3 : 0;  // U+205F
  }
  if (c == 0xE3) return (b1 == 0x80 && b2 == 0x80) ? 3 : 0;  // U+3000
  return 0;
}

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
  // Walk forward remembering the end of the last non-space character: UTF-8 cannot be
  // decoded backwards as cheaply, and lines are short.
  const char* p = s.data();
  const char* end = p + s.size();
  const char* last = p;
  while (p < end) {
    size_t w = py_space_len(p, end);
    if (w) {
      p += w;
    } else {
      ++p;
      while (p < end && (static_cast<unsigned char>(*p) & 0xC0) == 0x80) ++p;
      last = p;
    }
  }
  return std::string_view(s.data(), static_cast<size_t>(last - s.data()));
}

void tokenize_rouge(std::string_view s, std::string& buf,
                    std::vector<std::pair<uint32_t, uint32_t>>& spans) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  bool in_token = false;
  uint32_t start = 0;
  auto close = [&]() {
    if (in_token) {
      spans.emplace_back(start, static_cast<uint32_t>(buf.size()) - start);
      in_token = false;
    }
  };
  auto put = [&](char c) {
    if (!in_token) {
      start = static_cast<uint32_t>(buf.size());
      in_token = true;
    }
    buf.push_back(c);
  };
  while (p < end) {
    unsigned char c = *p;
    if (c < 0x80) {
      if (c >= 'a' && c <= 'z') {
        put(static_cast<char>(c));
      } else if (c >= 'A' && c <= 'Z') {
        put(static_cast<char>(c + 32));
      } else if (c >= '0' && c <= '9') {
        put(static_cast<char>(c));
      } else {
        close();
      }
      ++p;
      continue;
    }
    // Non-ASCII: only two characters lower-case to ASCII alphanumerics in Python:
    // U+0130 -> "i" + U+0307 (a separator), U+212A KELVIN SIGN -> "k".
    if (c == 0xC4 && p + 1 < end && p[1] == 0xB0) {
      put('i');
      close();
      p += 2;
      continue;
    }
    if (c == 0xE2 && p + 2 < end && p[1] == 0x84 && p[2] == 0xAA) {
      put('k');
      p += 3;
      continue;
    }
    close();
    ++p;
    while (p < end && (*p & 0xC0) == 0x80) ++p;
  }
  close();
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
  return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) ||
         (c >= 0x28 && c <= 0x2B) || (c >= 0x3A && c <= 0x40) || c == 0x2F;
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
  // Rule 1: pad the 13a punctuation class with spaces (the line is padded by one space
  // each side first, as sacrebleu does).
  tmp.clear();
  tmp.reserve(a.size() * 3 + 2);
  tmp.push_back(' ');
  for (unsigned char c : a) {
    if (is_13a_punct(c)) {
      tmp.push_back(' ');
      tmp.push_back(static_cast<char>(c));
      tmp.push_back(' ');
    } else {
      tmp.push_back(static_cast<char>(c));
    }
  }
  tmp.push_back(' ');
  // Rules 2-4 emulate re.sub's leftmost, non-overlapping scan. Working on bytes gives the
  // same output as on code points: a multi-byte character is never '.', ',', '-' or a
  // digit, and splitting the match inside it does not change the emitted bytes.
  // Rule 2: ([^0-9])([\.,]) -> '\1 \2 '
  a.clear();
  a.reserve(tmp.size() * 2);
  for (size_t i = 0, n = tmp.size(); i < n;) {
    auto c = static_cast<unsigned char>(tmp[i]);
    if (i + 1 < n && !is_digit(c) && (tmp[i + 1] == '.' || tmp[i + 1] == ',')) {
      a.push_back(static_cast<char>(c));
      a.push_back(' ');
      a.push_back(tmp[i + 1]);
      a.push_back(' ');
      i += 2;
    } else {
      a.push_back(static_cast<char>(c));
      ++i;
    }
  }
  // Rule 3: ([\.,])([^0-9]) -> ' \1 \2'
  tmp.clear();
  for (size_t i = 0, n = a.size(); i < n;) {
    char c = a[i];
    if ((c == '.' || c == ',') && i + 1 < n && !is_digit(static_cast<unsigned char>(a[i + 1]))) {
      tmp.push_back(' ');
      tmp.push_back(c);
      tmp.push_back(' ');
      // consume the whole following character, as the regex does
      size_t j = i + 1;
      tmp.push_back(a[j++]);
      while (j < n && (static_cast<unsigned char>(a[j]) & 0xC0) == 0x80) tmp.push_back(a[j++]);
      i = j;
    } else {
      tmp.push_back(c);
      ++i;
    }
  }
  // Rule 4: ([0-9])(-) -> '\1 \2 '
  a.clear();
  for (size_t i = 0, n = tmp.size(); i < n;) {
    char c = tmp[i];
    if (is_digit(static_cast<unsigned char>(c)) && i + 1 < n && tmp[i + 1] == '-') {
      a.push_back(c);
      a.push_back(' ');
      a.push_back('-');
      a.push_back(' ');
      i += 2;
    } else {
      a.push_back(c);
      ++i;
    }
  }
}

}  // namespace pysynth
