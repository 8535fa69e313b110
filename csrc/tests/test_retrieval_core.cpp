// C++ unit tests of the retrieval and filtering cores (no Python): run with ctest, also under
// sanitizers (cmake -DPYSYNTH_TESTS=ON -DPYSYNTH_PYTHON=OFF -DPYSYNTH_SANITIZE=ON).
// The exact scores are checked against the Python twin in tests/retrieval; here: invariants,
// exactness of the pruned top-k against k = N, validation, and memory safety on random corpora.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <vector>

#include "check.hpp"
#include "pysynth/filters.hpp"
#include "pysynth/index.hpp"
#include "pysynth/sdm.hpp"

using namespace pysynth;

struct Corpus {
  std::vector<std::int32_t> ids;
  std::vector<std::int64_t> off{0};
};

static Corpus zipf(std::mt19937_64& rng, int n_docs, int vocab, int max_len) {
  Corpus c;
  std::vector<double> w(static_cast<std::size_t>(vocab));
  for (int t = 0; t < vocab; ++t) w[static_cast<std::size_t>(t)] = 1.0 / (t + 1);
  std::discrete_distribution<int> term(w.begin(), w.end());
  std::uniform_int_distribution<int> len(0, max_len);
  for (int d = 0; d < n_docs; ++d) {
    int L = len(rng);
    for (int i = 0; i < L; ++i) c.ids.push_back(term(rng));
    c.off.push_back(static_cast<std::int64_t>(c.ids.size()));
  }
  if (c.ids.empty()) {
    c.ids.push_back(0);
    for (std::size_t i = 1; i < c.off.size(); ++i) ++c.off[i];
  }
  return c;
}

static void test_index_and_search() {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 6; ++round) {
    const int n_docs = 50 + 400 * round, vocab = 30 + 60 * round;
    Corpus c = zipf(rng, n_docs, vocab, 14);
    retrieval::IndexArrays a1 = retrieval::build_index(c.ids.data(), c.off.data(), n_docs, vocab, 1);
    retrieval::IndexArrays a2 = retrieval::build_index(c.ids.data(), c.off.data(), n_docs, vocab, 3);
    CHECK(a1.doc_ids == a2.doc_ids && a1.positions == a2.positions && a1.impact == a2.impact);
    CHECK(a1.pair_cf_uw == a2.pair_cf_uw && a1.hi_doc_ids == a2.hi_doc_ids);
    retrieval::IndexView v = retrieval::view_of(a1, vocab);
    retrieval::validate_index(v, 2);
    // queries
    Corpus q = zipf(rng, 60, vocab, 7);
    retrieval::Queries qs{q.ids.data(), q.off.data(), 60};
    for (auto model : {retrieval::Model::Sdm, retrieval::Model::Bm25}) {
      retrieval::ScoreParams p;
      p.model = model;
      const int full = n_docs;
      std::vector<std::int32_t> d_full(60 * static_cast<std::size_t>(full)), c_full(60);
      std::vector<double> s_full(60 * static_cast<std::size_t>(full));
      retrieval::search<double>(v, qs, p, full, 2, d_full.data(), s_full.data(), c_full.data());
      for (int k : {1, 10, 100}) {
        std::vector<std::int32_t> d(60 * static_cast<std::size_t>(k)), cnt(60);
        std::vector<double> s(60 * static_cast<std::size_t>(k));
        retrieval::search<double>(v, qs, p, k, 2, d.data(), s.data(), cnt.data());
        for (int i = 0; i < 60; ++i) {
          CHECK(cnt[static_cast<std::size_t>(i)] == std::min(k, c_full[static_cast<std::size_t>(i)]));
          for (int j = 0; j < cnt[static_cast<std::size_t>(i)]; ++j) {
            CHECK(d[static_cast<std::size_t>(i * k + j)] == d_full[static_cast<std::size_t>(i * full + j)]);
            CHECK(s[static_cast<std::size_t>(i * k + j)] == s_full[static_cast<std::size_t>(i * full + j)]);
          }
          for (int j = cnt[static_cast<std::size_t>(i)]; j < k; ++j) {
            CHECK(d[static_cast<std::size_t>(i * k + j)] == -1);
            CHECK(std::isnan(s[static_cast<std::size_t>(i * k + j)]));
          }
        }
      }
      // target ranks agree with the full ranking
      std::vector<std::int32_t> targets(60), ranks(60);
      for (int i = 0; i < 60; ++i) targets[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 37) % n_docs);
      retrieval::target_ranks(v, qs, targets.data(), p, 20, 2, ranks.data());
      for (int i = 0; i < 60; ++i) {
        int want = 0;
        for (int j = 0; j < std::min(20, c_full[static_cast<std::size_t>(i)]); ++j)
          if (d_full[static_cast<std::size_t>(i * full + j)] == targets[static_cast<std::size_t>(i)]) want = j + 1;
        CHECK(ranks[static_cast<std::size_t>(i)] == want);
      }
    }
    // a corrupted copy is refused, never read out of bounds
    retrieval::IndexArrays bad = a1;
    bad.doc_ids[0] = n_docs + 7;
    bool threw = false;
    try {
      retrieval::validate_index(retrieval::view_of(bad, vocab), 1);
    } catch (const std::invalid_argument&) {
      threw = true;
    }
    CHECK(threw);
    bad = a1;
    bad.positions.back() = 1 << 20;
    threw = false;
    try {
      retrieval::validate_index(retrieval::view_of(bad, vocab), 1);
    } catch (const std::invalid_argument&) {
      threw = true;
    }
    CHECK(threw);
  }
}

static void test_bad_input() {
  std::vector<std::int32_t> ids{0, 1, 5};
  std::vector<std::int64_t> off{0, 3};
  bool threw = false;
  try {
    retrieval::build_index(ids.data(), off.data(), 1, 3, 1);
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  CHECK(threw);
  std::vector<std::int64_t> empty{0, 0};
  threw = false;
  try {
    retrieval::build_index(ids.data(), empty.data(), 1, 6, 1);
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  CHECK(threw);
}

static void test_filters() {
  // KQF: question 7, lists [3 7] [7 3] [1]: candidate 1 (rr 1)
  std::vector<std::int32_t> questions{7}, results{3, 7, 7, 3, 1};
  std::vector<std::int64_t> co{0, 3}, ro{0, 2, 4, 5};
  std::vector<std::int32_t> chosen(1);
  std::vector<double> best(1), rr(3);
  filtering::kqf_select(questions.data(), 1, co.data(), results.data(), results.size(), ro.data(), 3, 0, 1,
                        chosen.data(), best.data(), rr.data());
  CHECK(chosen[0] == 1 && best[0] == 1.0 && rr[0] == 0.5 && rr[2] == 0.0);
  // TDF: q = 0 (cluster 5), retrieved {0, 1, 2}: docs 0 and 2 in cluster 5 -> 2/3
  std::vector<std::int32_t> r2{0, 1, 2, -1}, q2{0};
  std::vector<std::int64_t> ro2{0, 4}, clusters{5, 6, 5};
  std::vector<double> prec(1);
  filtering::tdf_precision(r2.data(), r2.size(), ro2.data(), 1, q2.data(), clusters.data(), 3, true, 1, prec.data());
  CHECK(std::fabs(prec[0] - 2.0 / 3.0) < 1e-15);
  // first rank: rows {0 1} {1 2} {3}, order 2 0 1
  std::vector<std::int32_t> toks{0, 1, 1, 2, 3};
  std::vector<std::int64_t> toff{0, 2, 4, 5}, order{2, 0, 1}, first(5);
  filtering::first_rank(toks.data(), toks.size(), toff.data(), 3, order.data(), 3, 5, first.data());
  CHECK(first[0] == 1 && first[1] == 1 && first[2] == 2 && first[3] == 0 && first[4] == -1);
}

int main() {
  test_index_and_search();
  test_bad_input();
  test_filters();
  return pysynth_test::finish("retrieval core");
}
