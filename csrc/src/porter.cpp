// Porter (1980) stemmer, NLTK_EXTENSIONS variant; see pysynth/porter.hpp.
//
// The word is stemmed in place in a buffer with room for word.size() + 1
// letters: every rule either shortens the word or (step 1b) appends one
// letter.  The buffer is a stack array for words under 64 letters and the
// output string's own storage otherwise; the steps work on a (pointer,
// length) view and never call into std::string.

#include "pysynth/porter.hpp"

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace pysynth {
namespace {

using std::size_t;

// Bit k set <=> 'a' + k is a vowel (a, e, i, o, u).
constexpr unsigned kVowelBits = (1u << 0) | (1u << 4) | (1u << 8) | (1u << 14) | (1u << 20);

constexpr bool is_vowel(char c) noexcept {
  const unsigned k = static_cast<unsigned>(static_cast<unsigned char>(c)) - 'a';
  return k < 26 && ((kVowelBits >> k) & 1u) != 0;
}

// Porter's consonant test for s[i]: a 'y' is a consonant at the start of the
// word or after a vowel, and a vowel after a consonant.  A run of y's
// alternates, so walk back over it and count its parity (no recursion).
bool is_consonant(const char* s, size_t i) noexcept {
  const char c = s[i];
  if (is_vowel(c)) return false;
  if (c != 'y') return true;
  bool flip = false;
  while (i > 0 && s[i] == 'y') {
    flip = !flip;
    --i;
  }
  return (!is_vowel(s[i])) != flip;
}

// Porter's measure m of s[0, n): the number of vowel->consonant transitions.
// Branch-free over the letters: vowel/consonant patterns are unpredictable.
int measure(const char* s, size_t n) noexcept {
  unsigned m = 0;
  unsigned prev_consonant = 0;  // nothing before the first letter, so a
  unsigned prev_vowel = 0;      // leading 'y' is a consonant
  for (size_t i = 0; i < n; ++i) {
    const unsigned vowel = is_vowel(s[i]) ? 1u : 0u;
    const unsigned y = s[i] == 'y' ? 1u : 0u;
    // y: consonant unless it follows a consonant; other letters: not a vowel.
    const unsigned consonant = (vowel ^ 1u) & ~(y & prev_consonant) & 1u;
    m += consonant & prev_vowel;
    prev_consonant = consonant;
    prev_vowel = consonant ^ 1u;
  }
  return static_cast<int>(m);
}

// Condition *v*: s[0, n) contains a vowel.
bool has_vowel(const char* s, size_t n) noexcept {
  bool prev_consonant = false;
  for (size_t i = 0; i < n; ++i) {
    const char c = s[i];
    if (is_vowel(c)) return true;
    if (c == 'y' && prev_consonant) return true;  // y after a consonant
    // Any other letter, or a 'y' at the start (we have returned at the
    // first vowel, so no 'y' here follows one), is a consonant.
    prev_consonant = true;
  }
  return false;
}

// Condition *o on s[0, n): ends consonant-vowel-consonant with the last
// letter not w, x or y; NLTK also accepts a two-letter vowel-consonant word.
bool ends_cvc(const char* s, size_t n) noexcept {
  if (n >= 3) {
    const char last = s[n - 1];
    return last != 'w' && last != 'x' && last != 'y' && is_consonant(s, n - 1) && !is_consonant(s, n - 2) &&
           is_consonant(s, n - 3);
  }
  return n == 2 && !is_consonant(s, 0) && is_consonant(s, 1);
}

// Byte-wise equality of short strings, last byte first; a plain loop beats
// a memcmp call for the 1-8 byte suffixes compared here.
bool same_bytes(const char* a, const char* b, size_t n) noexcept {
  for (size_t i = n; i-- > 0;) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

// The word being stemmed: s[0, n) inside a buffer with room for one more
// letter than the input had.
struct Word {
  char* s;
  size_t n;

  char back() const noexcept { return s[n - 1]; }
  char penultimate() const noexcept { return n >= 2 ? s[n - 2] : '\0'; }
  bool ends_with(std::string_view suffix) const noexcept {
    const size_t k = suffix.size();
    return n >= k && same_bytes(s + (n - k), suffix.data(), k);
  }
  int measure_of(size_t len) const noexcept { return measure(s, len); }
  // Replaces the last `cut` letters by `replacement`.
  void replace_tail(size_t cut, std::string_view replacement) noexcept {
    n -= cut;
    for (char c : replacement) s[n++] = c;
  }
};

// NLTK's pool of irregular forms, which bypass the algorithm.  Returns the
// stem of `word` if it is one of them, else an empty view.
std::string_view irregular_stem(std::string_view word) noexcept {
  const size_t n = word.size();
  if (n < 3 || n > 8) return {};
  auto is = [word, n](std::string_view form) { return form.size() == n && same_bytes(form.data(), word.data(), n); };
  switch (word[0]) {
    case 's':
      if (is("sky") || is("skies")) return "sky";
      if (is("succeed")) return "succeed";
      break;
    case 'd':
      if (is("dying")) return "die";
      break;
    case 'l':
      if (is("lying")) return "lie";
      break;
    case 't':
      if (is("tying")) return "tie";
      break;
    case 'n':
      if (is("news")) return "news";
      break;
    case 'i':
      if (is("innings") || is("inning")) return "inning";
      break;
    case 'o':
      if (is("outings") || is("outing")) return "outing";
      break;
    case 'c':
      if (is("cannings") || is("canning")) return "canning";
      break;
    case 'h':
      if (is("howe")) return "howe";
      break;
    case 'p':
      if (is("proceed")) return "proceed";
      break;
    case 'e':
      if (is("exceed")) return "exceed";
      break;
    default: break;
  }
  return {};
}

// One "(m>0) SUFFIX -> REPLACEMENT" rule of steps 2 and 3.  Returns whether
// the suffix matched: within a step the first matching suffix decides, and
// when its condition fails the word is left alone and no later rule is
// tried.  The measure is taken on the stem extended by `extra` letters of
// the suffix (only NLTK's 'logi' rule uses that).
bool rule_m0(Word& w, std::string_view suffix, std::string_view replacement, size_t extra = 0) noexcept {
  if (!w.ends_with(suffix)) return false;
  const size_t stem_len = w.n - suffix.size();
  if (w.measure_of(stem_len + extra) > 0) w.replace_tail(suffix.size(), replacement);
  return true;
}

// One "(m>1) SUFFIX ->" rule of step 4, same matching convention.
bool rule_m1(Word& w, std::string_view suffix) noexcept {
  if (!w.ends_with(suffix)) return false;
  const size_t stem_len = w.n - suffix.size();
  if (w.measure_of(stem_len) > 1) w.n = stem_len;
  return true;
}

void step1a(Word& w) noexcept {
  if (w.back() != 's') return;
  if (w.ends_with("ies")) {
    w.n -= (w.n == 4 ? 1 : 2);  // ties -> tie, ponies -> poni
  } else if (w.ends_with("sses")) {
    w.n -= 2;
  } else if (!w.ends_with("ss")) {
    w.n -= 1;
  }
}

void step1b(Word& w) noexcept {
  if (w.ends_with("ied")) {
    w.n -= (w.n == 4 ? 1 : 2);  // died -> die, spied -> spi
    return;
  }
  if (w.ends_with("eed")) {
    if (w.measure_of(w.n - 3) > 0) w.n -= 1;
    return;
  }
  size_t stem_len;
  if (w.ends_with("ed")) {
    stem_len = w.n - 2;
  } else if (w.ends_with("ing")) {
    stem_len = w.n - 3;
  } else {
    return;
  }
  if (!has_vowel(w.s, stem_len)) return;
  w.n = stem_len;
  if (w.ends_with("at") || w.ends_with("bl") || w.ends_with("iz")) {
    w.s[w.n++] = 'e';
    return;
  }
  const char last = w.back();
  if (w.n >= 2 && w.s[w.n - 2] == last && is_consonant(w.s, w.n - 1)) {
    if (last != 'l' && last != 's' && last != 'z') w.n -= 1;
    return;
  }
  if (w.measure_of(w.n) == 1 && ends_cvc(w.s, w.n)) w.s[w.n++] = 'e';
}

void step1c(Word& w) noexcept {
  // (*c and not c) Y -> I
  if (w.n > 2 && w.back() == 'y' && is_consonant(w.s, w.n - 2)) w.s[w.n - 1] = 'i';
}

// Steps 2-4 dispatch on the penultimate letter, as Porter's own C version
// does: only the rules listed under a letter can match, and they are tried
// in the order of NLTK's rule list, so the first match is the same.
void step2(Word& w) noexcept {
  // NLTK applies ALLI -> AL first and then runs the whole step again.
  while (w.ends_with("alli") && w.measure_of(w.n - 4) > 0) w.n -= 2;
  switch (w.penultimate()) {
    case 'a': (void)(rule_m0(w, "ational", "ate") || rule_m0(w, "tional", "tion")); break;
    case 'c': (void)(rule_m0(w, "enci", "ence") || rule_m0(w, "anci", "ance")); break;
    case 'e': rule_m0(w, "izer", "ize"); break;
    case 'l':
      (void)(rule_m0(w, "bli", "ble") || rule_m0(w, "alli", "al") || rule_m0(w, "entli", "ent") ||
             rule_m0(w, "eli", "e") || rule_m0(w, "ousli", "ous") || rule_m0(w, "fulli", "ful"));
      break;
    case 'o': (void)(rule_m0(w, "ization", "ize") || rule_m0(w, "ation", "ate") || rule_m0(w, "ator", "ate")); break;
    case 's':
      (void)(rule_m0(w, "alism", "al") || rule_m0(w, "iveness", "ive") || rule_m0(w, "fulness", "ful") ||
             rule_m0(w, "ousness", "ous"));
      break;
    case 't': (void)(rule_m0(w, "aliti", "al") || rule_m0(w, "iviti", "ive") || rule_m0(w, "biliti", "ble")); break;
    case 'g':
      rule_m0(w, "logi", "log", 1);  // the 'l' counts with the stem
      break;
    default: break;
  }
}

void step3(Word& w) noexcept {
  switch (w.back()) {
    case 'e': (void)(rule_m0(w, "icate", "ic") || rule_m0(w, "ative", "") || rule_m0(w, "alize", "al")); break;
    case 'i': rule_m0(w, "iciti", "ic"); break;
    case 'l': (void)(rule_m0(w, "ical", "ic") || rule_m0(w, "ful", "")); break;
    case 's': rule_m0(w, "ness", ""); break;
    default: break;
  }
}

void step4(Word& w) noexcept {
  switch (w.penultimate()) {
    case 'a': rule_m1(w, "al"); break;
    case 'c': (void)(rule_m1(w, "ance") || rule_m1(w, "ence")); break;
    case 'e': rule_m1(w, "er"); break;
    case 'i': rule_m1(w, "ic"); break;
    case 'l': (void)(rule_m1(w, "able") || rule_m1(w, "ible")); break;
    case 'n': (void)(rule_m1(w, "ant") || rule_m1(w, "ement") || rule_m1(w, "ment") || rule_m1(w, "ent")); break;
    case 'o':
      if (w.ends_with("ion")) {
        // (m>1 and (*S or *T)) ION ->
        const size_t stem_len = w.n - 3;
        if (w.measure_of(stem_len) > 1 && (w.s[stem_len - 1] == 's' || w.s[stem_len - 1] == 't')) {
          w.n = stem_len;
        }
      } else {
        rule_m1(w, "ou");
      }
      break;
    case 's': rule_m1(w, "ism"); break;
    case 't': (void)(rule_m1(w, "ate") || rule_m1(w, "iti")); break;
    case 'u': rule_m1(w, "ous"); break;
    case 'v': rule_m1(w, "ive"); break;
    case 'z': rule_m1(w, "ize"); break;
    default: break;
  }
}

void step5(Word& w) noexcept {
  if (w.back() == 'e') {  // 5a
    const int m = w.measure_of(w.n - 1);
    if (m > 1 || (m == 1 && !ends_cvc(w.s, w.n - 1))) w.n -= 1;
  }
  // 5b: (m>1 and *d and *L) -> single letter
  if (w.ends_with("ll") && w.measure_of(w.n - 1) > 1) w.n -= 1;
}

// Steps 1a-5b.  Every step leaves at least one letter, so back() is valid.
void run_steps(Word& w) noexcept {
  step1a(w);
  step1b(w);
  step1c(w);
  step2(w);
  step3(w);
  step4(w);
  step5(w);
}

}  // namespace

void porter_stem(std::string_view word, std::string& out) {
  const std::string_view irregular = irregular_stem(word);
  if (!irregular.empty()) {
    out.assign(irregular.data(), irregular.size());
    return;
  }
  if (word.size() <= 2) {
    out.assign(word.data(), word.size());
    return;
  }
  // Short words (nearly all) are stemmed in a stack buffer and copied out
  // once; longer ones in `out`'s own buffer, with one spare slot for the
  // letter step 1b may append.  Either way `word` is read before `out` is
  // written, so it may even view `out`.
  char local[64];
  if (word.size() < sizeof local) {
    std::memcpy(local, word.data(), word.size());
    Word w{local, word.size()};
    run_steps(w);
    out.assign(local, w.n);
  } else {
    out.assign(word.data(), word.size());
    out.push_back('\0');
    Word w{&out[0], word.size()};
    run_steps(w);
    out.resize(w.n);
  }
}

}  // namespace pysynth
