// Porter stemmer, bit-compatible with NLTK's default PorterStemmer mode.
//
// Porter, M. F. "An algorithm for suffix stripping." Program 14(3), 130-137
// (1980), with the NLTK_EXTENSIONS modifications of nltk.stem.porter
// (nltk 3.10.4).  The pure-Python twin is pysynth/metrics/_porter.py; both
// are pinned to NLTK by tests/golden/porter_nltk.tsv.gz.
#pragma once

#include <string>
#include <string_view>

namespace pysynth {

// Stems one token and writes the stem to `out` (its previous content is
// replaced).  The token is expected to be lowercase ASCII, as produced by
// the rouge-score tokenizer ([a-z0-9]+); no case folding is done.  Every
// byte other than a, e, i, o, u and y counts as a consonant.
//
// Allocation-free when `out` already has capacity for word.size() + 1
// characters.  Reentrant and thread-safe (no mutable state).
void porter_stem(std::string_view word, std::string& out);

}  // namespace pysynth
