// Tokenizers that reproduce the reference tools byte for byte (UTF-8 in, token views out).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pysynth {

// Length in bytes of the Python-whitespace character (str.isspace()) starting at p, or 0.
// Covers \t\n\v\f\r, \x1c-\x1f, space, U+0085, U+00A0, U+1680, U+2000-U+200A,
// U+2028, U+2029, U+202F, U+205F, U+3000 — exactly what str.split() splits on.
inline size_t py_space_len(const char* p, const char* end) {
  auto c = static_cast<unsigned char>(*p);
  if (c < 0x80) return (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) ? 1 : 0;
  size_t left = static_cast<size_t>(end - p);
  auto b1 = left > 1 ? static_cast<unsigned char>(p[1]) : 0;
  auto b2 = left > 2 ? static_cast<unsigned char>(p[2]) : 0;
  if (c == 0xC2) return (b1 == 0x85 || b1 == 0xA0) ? 2 : 0;  // U+0085, U+00A0
  if (c == 0xE1) return (b1 == 0x9A && b2 == 0x80) ? 3 : 0;  // U+1680
  if (c == 0xE2) {
    if (b1 == 0x80)  // U+2000-U+200A, U+2028, U+2029, U+202F
      return ((b2 >= 0x80 && b2 <= 0x8A) || b2 == 0xA8 || b2 == 0xA9 || b2 == 0xAF) ? 3 : 0;
    return (b1 == 0x81 && b2 == 0x9F) ? 3 : 0;  // U+205F
  }
  if (c == 0xE3) return (b1 == 0x80 && b2 == 0x80) ? 3 : 0;  // U+3000
  return 0;
}

// str.split(): appends the whitespace-separated pieces of s to out.
void split_whitespace(std::string_view s, std::vector<std::string_view>& out);

// str.rstrip(): s without trailing Python whitespace.
std::string_view rstrip_whitespace(std::string_view s);

// rouge-score's tokenizer without stemming: text.lower(), runs of [a-z0-9]. Tokens are
// appended to out as views into s, or into buf where lower-casing changed the bytes. The
// caller reserves s.size() spare bytes in buf so that it never reallocates. scratch is
// working memory.
void tokenize_rouge(std::string_view s, std::string& buf, std::vector<std::string_view>& out,
                    std::vector<uint64_t>& scratch);

// sacrebleu's 13a tokenizer (mteval-v13a): rstrip, <skipped>/-\n/\n handling, the four
// entity unescapes, then the four regex rules. The tokenized line goes to out (tokens
// separated by runs of whitespace; split it with split_whitespace). tmp is scratch.
void tokenize_13a(std::string_view s, std::string& out, std::string& tmp);

}  // namespace pysynth
