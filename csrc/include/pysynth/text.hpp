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
size_t py_space_len(const char* p, const char* end);

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
