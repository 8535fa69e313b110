// C++ unit tests of the metrics core (no Python): run with ctest, also under sanitizers
// (cmake -DPYSYNTH_TESTS=ON -DPYSYNTH_PYTHON=OFF -DPYSYNTH_SANITIZE=ON).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "check.hpp"
#include "pysynth/ngram.hpp"
#include "pysynth/porter.hpp"
#include "pysynth/text.hpp"

using namespace pysynth;

static std::vector<std::string> toks(std::string_view s, TokenizerKind k) { return tokenize_texts(&s, 1, k, 1)[0]; }

static void test_tokenizers() {
  using V = std::vector<std::string>;
  CHECK((toks("Hello, World! 3.14", TokenizerKind::Rouge) == V{"hello", "world", "3", "14"}));
  CHECK((toks("\xC4\xB0stanbul \xE2\x84\xAA"
              "elvin",
              TokenizerKind::Rouge) == V{"i", "stanbul", "kelvin"}));
  CHECK((toks("na\xC3\xAFve", TokenizerKind::Rouge) == V{"na", "ve"}));
  CHECK((toks("running flies", TokenizerKind::RougeStem) == V{"run", "fli"}));
  CHECK((toks("Hello, world! 3.14 a-b 1-2 &amp;lt;", TokenizerKind::T13a) ==
         V{"Hello", ",", "world", "!", "3.14", "a-b", "1", "-", "2", "<"}));
  CHECK((toks("a\xC2\xA0"
              "b\xE3\x80\x80"
              "c\x1c"
              "d",
              TokenizerKind::Whitespace) == V{"a", "b", "c", "d"}));
  CHECK(toks("", TokenizerKind::T13a).empty());
  CHECK(rstrip_whitespace("ab \xE2\x80\xA8") == "ab");
}

static void test_rouge_stats() {
  std::vector<std::string_view> h = {"the cat sat on the mat", "", "a b c"};
  std::vector<std::string_view> r = {"the cat was on the mat", "x", "c b a"};
  TextColumn hc, rc;
  hc.strs = h.data();
  hc.size = h.size();
  rc.strs = r.data();
  rc.size = r.size();
  int64_t off[] = {0, 1, 2, 3};
  RougeConfig cfg;
  cfg.types = {{RougeKind::N, 1}, {RougeKind::N, 2}, {RougeKind::L, 0}};
  std::vector<int64_t> out(3 * 3 * 3);
  rouge_stats(hc, rc, off, cfg, 2, out.data());
  // pair 0: unigram matches 5 of 6/6, bigrams: the cat, on the, the mat = 3, LCS 5
  CHECK(out[0] == 5 && out[1] == 6 && out[2] == 6);
  CHECK(out[3] == 3 && out[4] == 5 && out[5] == 5);
  CHECK(out[6] == 5);
  // pair 1: empty hypothesis
  CHECK(out[9] == 0 && out[10] == 0 && out[11] == 1);
  // pair 2: reversed: LCS 1
  CHECK(out[18] == 3 && out[24] == 1);
}

static void test_long_matches_short() {
  // A reference longer than 64 tokens takes the general (interning) path; compare with
  // the same text split so both paths must agree on a shared prefix construction.
  std::string a, b;
  for (int i = 0; i < 150; ++i) {
    a += "w" + std::to_string(i % 17) + " ";
    b += "w" + std::to_string((i * 7) % 19) + " ";
  }
  std::vector<std::string_view> h = {a}, r = {b};
  TextColumn hc, rc;
  hc.strs = h.data();
  hc.size = 1;
  rc.strs = r.data();
  rc.size = 1;
  int64_t off[] = {0, 1};
  RougeConfig cfg;
  cfg.types = {{RougeKind::N, 1}, {RougeKind::L, 0}};
  std::vector<int64_t> out(6);
  rouge_stats(hc, rc, off, cfg, 1, out.data());
  CHECK(out[1] == 150 && out[2] == 150);
  CHECK(out[0] > 0 && out[3] > 0 && out[3] <= out[0]);
}

static void test_bleu() {
  std::vector<std::string_view> h = {"the cat sat on the mat"}, r = {"the cat sat on the mat"};
  TextColumn hc, rc;
  hc.strs = h.data();
  hc.size = 1;
  rc.strs = r.data();
  rc.size = 1;
  int64_t off[] = {0, 1};
  std::vector<int64_t> st(10);
  bleu_stats(hc, rc, off, BleuTokenize::T13a, 4, 1, st.data());
  CHECK(st[0] == 6 && st[1] == 6 && st[2] == 6 && st[5] == 3 && st[9] == 3);
  double score;
  sacrebleu_sentence_scores(st.data(), 1, 4, Smooth::Exp, 0.0, true, false, &score);
  CHECK(std::fabs(score - 100.0) < 1e-9);
}

static void test_porter() {
  std::string out;
  porter_stem("generalizations", out);
  CHECK(out == "gener");
  porter_stem("skies", out);
  CHECK(out == "sky");
}

static void test_bad_input() {
  std::vector<std::string_view> h = {"a"}, r = {"a"};
  TextColumn hc, rc;
  hc.strs = h.data();
  hc.size = 1;
  rc.strs = r.data();
  rc.size = 1;
  int64_t bad[] = {0, 2};
  RougeConfig cfg;
  cfg.types = {{RougeKind::N, 1}};
  std::vector<int64_t> out(3);
  bool threw = false;
  try {
    rouge_stats(hc, rc, bad, cfg, 1, out.data());
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  CHECK(threw);
}

int main() {
  test_tokenizers();
  test_rouge_stats();
  test_long_matches_short();
  test_bleu();
  test_porter();
  test_bad_input();
  return pysynth_test::finish("test_metrics_core");
}
