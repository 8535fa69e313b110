// C++ unit tests of the corpus / phrase core (no Python): run with ctest, also under
// sanitizers (cmake -DPYSYNTH_TESTS=ON -DPYSYNTH_PYTHON=OFF -DPYSYNTH_SANITIZE=ON).
// The values are gensim 4.4.0's (checked by hand against gensim on the same sentences).
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "check.hpp"
#include "pysynth/corpus.hpp"

using namespace pysynth::corpus;

struct Built {
  CorpusData data;
  std::vector<std::string_view> vocab;
  IdCorpus view() const {
    return IdCorpus{data.ids.data(), data.offsets.data(), data.offsets.size() - 1, vocab.data(), vocab.size()};
  }
};

static Built build(const std::vector<std::string_view>& texts, Tokenizer tok, int workers = 1) {
  Built b;
  b.data = build_corpus(texts.data(), texts.size(), tok, workers);
  for (size_t i = 0; i < b.data.vocab.size(); ++i) b.vocab.push_back(b.data.vocab[i]);
  return b;
}

static std::vector<std::string> doc_terms(const CorpusData& c, size_t d) {
  std::vector<std::string> out;
  for (int64_t i = c.offsets[d]; i < c.offsets[d + 1]; ++i) out.emplace_back(c.vocab[static_cast<size_t>(c.ids[i])]);
  return out;
}

static void test_build_corpus() {
  Built b = build({"Who is the author of the Pooh?", "who is winnie the pooh's creator", "..."}, Tokenizer::Rouge);
  const CorpusData& c = b.data;
  CHECK(c.offsets == (std::vector<int64_t>{0, 7, 14, 14}));
  CHECK(b.vocab.size() == 9 && b.vocab[0] == "the" && b.vocab[1] == "is" && b.vocab[2] == "pooh" &&
        b.vocab[3] == "who");
  CHECK(c.cf[0] == 3 && c.df[0] == 2 && c.cf[8] == 1);
  CHECK((doc_terms(c, 1) == std::vector<std::string>{"who", "is", "winnie", "the", "pooh", "s", "creator"}));
  Built w = build({"New  York\u00a0new", ""}, Tokenizer::Whitespace);
  CHECK(w.vocab.size() == 3 && w.data.offsets[1] == 3);
  Built e = build({}, Tokenizer::Rouge);
  CHECK(e.data.ids.empty() && e.data.offsets.size() == 1 && e.vocab.empty());
}

static void test_threads_agree() {
  std::mt19937 rng(7);
  std::vector<std::string> store;
  for (int d = 0; d < 16000; ++d) {  // > 65536 tokens: owner threads, dense pair block
    std::string s;
    int n = static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) s += "w" + std::to_string(rng() % 700 % (1 + rng() % 700)) + (rng() % 9 ? " " : "_x ");
    store.push_back(s);
  }
  std::vector<std::string_view> texts(store.begin(), store.end());
  Built one = build(texts, Tokenizer::Whitespace, 1), three = build(texts, Tokenizer::Whitespace, 3);
  CHECK(one.data.ids == three.data.ids && one.data.cf == three.data.cf && one.data.df == three.data.df);
  CHECK(one.data.vocab.bytes == three.data.vocab.bytes);
  std::vector<std::string_view> conn = {"w0", "w1"};
  PhraseCounts a = count_phrases(one.view(), conn.data(), conn.size(), "_", 1000000000, 1);
  PhraseCounts b = count_phrases(one.view(), conn.data(), conn.size(), "_", 1000000000, 4);
  CHECK(a.key_offsets == b.key_offsets && a.key_terms == b.key_terms && a.key_counts == b.key_counts);
  // tokens contain the delimiter ("w3_x"): general mode everywhere
  PhraseModel m{one.vocab.data(),    one.vocab.size(),    a.key_offsets.data(), a.key_terms.data(),
                a.key_counts.data(), a.key_counts.size(), a.corpus_word_count};
  ScoreParams sp{Scoring::Npmi, 2, 0.1};
  StringList phrases;
  std::vector<double> scores;
  export_phrases(m, "_", sp, phrases, scores);
  CHECK(phrases.size() > 0);
  CorpusData x = apply_phrases(one.view(), conn.data(), conn.size(), "_", m, sp, 1);
  CorpusData y = apply_phrases(one.view(), conn.data(), conn.size(), "_", m, sp, 3);
  CHECK(x.ids == y.ids && x.vocab.bytes == y.vocab.bytes && x.cf == y.cf && x.df == y.df);
  std::vector<std::string_view> ph;
  for (size_t i = 0; i < phrases.size(); ++i) ph.push_back(phrases[i]);
  CorpusData f1 = apply_frozen(one.view(), conn.data(), conn.size(), "_", ph.data(), scores.data(), ph.size(), 0.1, 1);
  CorpusData f3 = apply_frozen(one.view(), conn.data(), conn.size(), "_", ph.data(), scores.data(), ph.size(), 0.1, 3);
  CHECK(f1.ids == f3.ids && f1.vocab.bytes == f3.vocab.bytes);
  PhraseCounts pruned = count_phrases(one.view(), conn.data(), conn.size(), "_", 5000, 2);
  CHECK(pruned.min_reduce > 1);
}

static void test_phrases() {
  // gensim: Phrases([["new","york","city"],["new","york","times"],["in","new","york"]], min_count=1, threshold=1)
  Built b = build({"new york city", "new york times", "in new york"}, Tokenizer::Whitespace);
  PhraseCounts pc = count_phrases(b.view(), nullptr, 0, "_", 40000000, 1);
  CHECK(pc.key_counts.size() == 9 && pc.corpus_word_count == 9 && pc.min_reduce == 1);  // 5 words + 4 bigrams
  PhraseModel m{b.vocab.data(),       b.vocab.size(),       pc.key_offsets.data(), pc.key_terms.data(),
                pc.key_counts.data(), pc.key_counts.size(), pc.corpus_word_count};
  StringList phrases;
  std::vector<double> scores;
  export_phrases(m, "_", ScoreParams{Scoring::Default, 1, 1.0}, phrases, scores);
  CHECK(phrases.size() == 1 && phrases[0] == "new_york" && scores[0] == (3 - 1) / 9.0 * 9);
  CorpusData out = apply_phrases(b.view(), nullptr, 0, "_", m, ScoreParams{Scoring::Default, 1, 1.0}, 1);
  CHECK((doc_terms(out, 2) == std::vector<std::string>{"in", "new_york"}));
  std::vector<std::string_view> ph = {"new_york", "york_times"};
  double sc[] = {2.0, 0.5};
  CorpusData fr = apply_frozen(b.view(), nullptr, 0, "_", ph.data(), sc, 2, 1.0, 1);
  CHECK(fr.ids == out.ids && fr.vocab.bytes == out.vocab.bytes);
  // connector words: "bank of america" is one phrase
  Built c = build({"bank of america", "the bank of america", "bank of america online"}, Tokenizer::Whitespace);
  std::vector<std::string_view> conn = {"of", "the"};
  PhraseCounts cc = count_phrases(c.view(), conn.data(), conn.size(), "_", 40000000, 1);
  PhraseModel cm{c.vocab.data(),       c.vocab.size(),       cc.key_offsets.data(), cc.key_terms.data(),
                 cc.key_counts.data(), cc.key_counts.size(), cc.corpus_word_count};
  CorpusData co = apply_phrases(c.view(), conn.data(), conn.size(), "_", cm, ScoreParams{Scoring::Default, 1, 0.5}, 1);
  CHECK((doc_terms(co, 1) == std::vector<std::string>{"the", "bank_of_america"}));
}

static void test_string_collisions() {
  // "a_b" as a token and the candidate ("a", "b") are one gensim key: count 2.
  Built b = build({"a_b x", "a b"}, Tokenizer::Whitespace);
  PhraseCounts pc = count_phrases(b.view(), nullptr, 0, "_", 40000000, 1);
  size_t n_keys = pc.key_counts.size();
  CHECK(n_keys == 5);  // a, a_b (the token and the candidate a + b), b, x, a_b_x
  int64_t merged = -1;
  for (size_t k = 0; k < n_keys; ++k) {
    std::string s;
    for (int64_t i = pc.key_offsets[k]; i < pc.key_offsets[k + 1]; ++i) {
      if (i > pc.key_offsets[k]) s += "_";
      s += std::string(b.vocab[static_cast<size_t>(pc.key_terms[i])]);
    }
    if (s == "a_b") merged = pc.key_counts[k];
  }
  CHECK(merged == 2);
}

static void test_pruning() {
  // max_vocab_size 2: gensim prunes after every sentence (entries below min_reduce go)
  Built b = build({"a b", "a b", "c d", "a"}, Tokenizer::Whitespace);
  PhraseCounts pc = count_phrases(b.view(), nullptr, 0, "_", 2, 1);
  CHECK(pc.min_reduce > 1);
  for (int64_t c : pc.key_counts) CHECK(c >= 1);
}

static void test_scores_and_errors() {
  CHECK(phrase_score(Scoring::Default, 10, 20, 8, 1000, 5, 10000) == 3.0 / 200.0 * 1000);
  CHECK(std::isinf(phrase_score(Scoring::Npmi, 10, 20, 4, 1000, 5, 10000)));
  double pa = 10 / 10000.0, pb = 20 / 10000.0, pab = 8 / 10000.0;
  CHECK(phrase_score(Scoring::Npmi, 10, 20, 8, 1000, 5, 10000) == std::log(pab / (pa * pb)) / -std::log(pab));
  Built b = build({"a b"}, Tokenizer::Whitespace);
  std::vector<int32_t> bad = {0, 7};
  IdCorpus v = b.view();
  v.ids = bad.data();
  bool threw = false;
  try {
    count_phrases(v, nullptr, 0, "_", 10, 1);
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  CHECK(threw);
  threw = false;
  try {
    count_phrases(b.view(), nullptr, 0, "", 10, 1);
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  CHECK(threw);
}

int main() {
  test_build_corpus();
  test_threads_agree();
  test_phrases();
  test_string_collisions();
  test_pruning();
  test_scores_and_errors();
  return pysynth_test::finish("test_corpus_core");
}
