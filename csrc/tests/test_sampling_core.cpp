// C++ unit tests of the sampling core (no Python): run with ctest, also under sanitizers
// (cmake -DPYSYNTH_TESTS=ON -DPYSYNTH_PYTHON=OFF -DPYSYNTH_SANITIZE=ON).  Exact parity with
// the Python twin is tested in tests/sampling/; here: the random stream, the invariants of
// Algorithm 1, thread invariance, the internal paths, and input validation.
#include <cstdint>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <vector>

#include "check.hpp"
#include "pysynth/sampling.hpp"

using namespace pysynth::sampling;

namespace {

// A deterministic small corpus: question i has tokens (i * 7 + k * 3) % V for k < len_i.
struct Data {
  std::vector<std::int32_t> q_ids, c_ids;
  std::vector<std::int64_t> q_off{0}, c_off{0}, cidx, cf, df;
  std::vector<std::uint8_t> ex;
  std::vector<double> pl{0, 0, 0, 0.2, 0.3, 0.25, 0.15, 0.1};
  Corpus corpus() const {
    Corpus c;
    c.q_ids = q_ids.data();
    c.n_q_ids = q_ids.size();
    c.q_offsets = q_off.data();
    c.n_questions = q_off.size() - 1;
    c.c_ids = c_ids.data();
    c.n_c_ids = c_ids.size();
    c.c_offsets = c_off.data();
    c.n_clusters = c_off.size() - 1;
    c.cluster_index = cidx.data();
    c.cf = cf.data();
    c.df = df.data();
    c.exclude = ex.data();
    c.vocab_size = cf.size();
    c.n_docs = static_cast<std::int64_t>(q_off.size() - 1);
    return c;
  }
};

Data make(int n, int V, int n_rows, int max_len, int row_len) {
  Data d;
  d.cf.assign(V, 0);
  d.df.assign(V, 0);
  d.ex.assign(V, 0);
  d.ex[0] = 1;
  for (int i = 0; i < n; ++i) {
    int len = 1 + (i * 5) % max_len;
    std::set<int> seen;
    for (int k = 0; k < len; ++k) {
      int t = (i * 7 + k * 3 + k * k) % V;
      if (k == 0) t = 1 + i % (V - 1);  // never only excluded
      d.q_ids.push_back(t);
      d.cf[t] += 1;
      seen.insert(t);
    }
    for (int t : seen) d.df[t] += 1;
    d.q_off.push_back(static_cast<std::int64_t>(d.q_ids.size()));
    d.cidx.push_back(n_rows ? (i % (n_rows + 1)) - 1 : -1);
  }
  for (int j = 0; j < n_rows; ++j) {
    for (int k = 0; k < row_len; ++k) {
      int t = (j * 11 + k * 13) % V;
      d.c_ids.push_back(t);
      d.cf[t] += 1;
      if (d.df[t] == 0) d.df[t] = 1;
    }
    d.c_off.push_back(static_cast<std::int64_t>(d.c_ids.size()));
  }
  return d;
}

Config config(const Data& d, Strategy st, double wq, double wc, double wb, int workers) {
  Config g;
  g.strategy = st;
  g.w_question = wq;
  g.w_cluster = wc;
  g.w_collection = wb;
  g.length_dist = d.pl.data();
  g.n_lengths = d.pl.size();
  g.m = 7;
  g.seed = 42;
  g.first_index = 3;
  g.max_rejections = 4;
  g.workers = workers;
  return g;
}

void test_random_words() {
  std::uint64_t w[3];
  random_words(0, 0, 0, 3, w);
  std::uint64_t key = candidate_key(question_key(seed_key(0), 0), 0);
  CHECK(w[0] == mix64(key + kGamma));
  CHECK(w[2] == mix64(key + 3 * kGamma));
  CHECK(mix64(0) == 0 && mix64(1) != 1);
}

void test_invariants_and_threads() {
  const Strategy strategies[3] = {Strategy::Popular, Strategy::Discriminative, Strategy::Combination};
  for (Strategy st : strategies) {
    for (int variant = 0; variant < 4; ++variant) {
      const bool shared = variant & 1;
      Data d = make(300, 97, shared ? 10 : 0, 30, 60);
      Corpus c = d.corpus();
      std::vector<std::int32_t> ids1, idsN;
      std::vector<std::int64_t> off1, offN;
      Config g1 = config(d, st, 0.5, shared ? 0.3 : 0.0, shared ? 0.2 : 0.5, 1);
      g1.max_rejections = variant & 2 ? 0 : 4;  // 0: every draw renormalizes explicitly
      Config gN = g1;
      gN.workers = 4;
      Sampler(c, g1).generate(ids1, off1);
      Sampler(c, gN).generate(idsN, offN);
      CHECK(ids1 == idsN && off1 == offN);
      CHECK(off1.size() == 300 * 7 + 1 && off1.back() == static_cast<std::int64_t>(ids1.size()));
      for (std::size_t k = 0; k + 1 < off1.size(); ++k) {
        std::set<std::int32_t> terms(ids1.begin() + off1[k], ids1.begin() + off1[k + 1]);
        CHECK(terms.size() == static_cast<std::size_t>(off1[k + 1] - off1[k]));  // distinct
        CHECK(!terms.count(0));                                                  // never excluded
        const std::int64_t len = d.q_off[k / 7 + 1] - d.q_off[k / 7];
        CHECK(off1[k + 1] - off1[k] >= 1);
        CHECK(off1[k + 1] - off1[k] <= (len > 1 ? len - 1 : 1));
      }
    }
  }
}

void test_support_exhaustion() {
  // lambda = 0, at most 2 samplable terms per question, P(s = 5) = 1: candidates are cut to 2
  Data d;
  d.cf = {10, 5, 5, 5};
  d.df = {3, 3, 3, 3};
  d.ex = {1, 0, 0, 0};
  for (int i = 0; i < 50; ++i) {
    int a = 1 + i % 3, b = 1 + (i + 1) % 3;
    for (int t : {0, a, b, a, 0, b, a}) d.q_ids.push_back(t);
    d.q_off.push_back(static_cast<std::int64_t>(d.q_ids.size()));
    d.cidx.push_back(-1);
  }
  d.pl = {0, 0, 0, 0, 0, 1.0};
  Corpus c = d.corpus();
  c.n_docs = 3;
  for (int workers : {1, 3}) {
    std::vector<std::int32_t> ids;
    std::vector<std::int64_t> off;
    Sampler(c, config(d, Strategy::Popular, 1.0, 0.0, 0.0, workers)).generate(ids, off);
    CHECK(ids.size() == 50u * 7u * 2u);
    for (std::size_t k = 0; k + 1 < off.size(); ++k) CHECK(off[k + 1] - off[k] == 2);
  }
}

template <class F>
bool throws_invalid(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument&) {
    return true;
  }
  return false;
}

void test_bad_input() {
  Data d = make(20, 31, 0, 8, 0);
  Corpus c = d.corpus();
  CHECK(throws_invalid([&] { Sampler(c, config(d, Strategy::Popular, 0.5, 0.0, 0.6, 1)); }));
  CHECK(throws_invalid([&] { Sampler(c, config(d, Strategy::Popular, -0.5, 0.5, 1.0, 1)); }));
  Config g = config(d, Strategy::Popular, 0.5, 0.0, 0.5, 1);
  g.m = 0;
  CHECK(throws_invalid([&] { Sampler(c, g); }));
  g = config(d, Strategy::Popular, 0.5, 0.0, 0.5, 0);
  CHECK(throws_invalid([&] { Sampler(c, g); }));
  std::vector<double> bad{0.5, 0.5};
  g = config(d, Strategy::Popular, 0.5, 0.0, 0.5, 1);
  g.length_dist = bad.data();
  g.n_lengths = 2;
  CHECK(throws_invalid([&] { Sampler(c, g); }));
  Data e = d;
  e.ex.assign(e.ex.size(), 1);  // every question only excluded terms
  Corpus ce = e.corpus();
  CHECK(throws_invalid([&] { Sampler(ce, config(e, Strategy::Popular, 1.0, 0.0, 0.0, 2)); }));
  Data f = d;
  f.q_ids[3] = 31;  // outside the vocabulary
  Corpus cf = f.corpus();
  CHECK(throws_invalid([&] { Sampler(cf, config(f, Strategy::Popular, 1.0, 0.0, 0.0, 1)); }));
  CHECK(throws_invalid([] { parse_strategy("bm25"); }));
}

}  // namespace

int main() {
  test_random_words();
  test_invariants_and_threads();
  test_support_exhaustion();
  test_bad_input();
  return pysynth_test::finish("sampling core");
}
