// C++ unit tests of the decoding core (no Python): run with ctest, also under sanitizers
// (cmake -DPYSYNTH_TESTS=ON -DPYSYNTH_PYTHON=OFF -DPYSYNTH_SANITIZE=ON).  Exact parity with
// the numpy twin is tested in tests/decoding/; here: a brute-force oracle over random rows
// (ties, -inf, clamped floors, repeated source ids, rows long enough for block pruning),
// thread invariance and input validation.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "check.hpp"
#include "pysynth/decoding.hpp"

using pysynth::decoding::topk_from_parts;

namespace {

struct Case {
  std::size_t n, vocab, src_len, n_ext, k;
  float floor;
  std::vector<float> ls, shift, touched;
  std::vector<std::int64_t> src_ext;
};

Case make_case(std::mt19937& g, std::size_t n, std::size_t vocab, std::size_t src_len, std::size_t n_ext, std::size_t k,
               float floor, bool ties) {
  Case c{n, vocab, src_len, n_ext, k, floor, {}, {}, {}, {}};
  std::normal_distribution<float> normal(-8.0f, 3.0f);
  std::uniform_int_distribution<int> small(-6, 0);
  for (std::size_t i = 0; i < n * vocab; ++i) c.ls.push_back(ties ? static_cast<float>(small(g)) : normal(g));
  if (vocab > 3) c.ls[vocab / 2] = -std::numeric_limits<float>::infinity();
  for (std::size_t i = 0; i < n; ++i) c.shift.push_back(normal(g) / 8.0f);
  std::uniform_int_distribution<std::int64_t> id(0, static_cast<std::int64_t>(vocab + n_ext) - 1);
  for (std::size_t i = 0; i < n * src_len; ++i) {
    c.touched.push_back(ties ? static_cast<float>(small(g)) : normal(g) / 4.0f);
    c.src_ext.push_back(id(g));
  }
  return c;
}

// The definition, literally: build each row, sort by (value desc, column asc).
void oracle(const Case& c, std::vector<float>& vals, std::vector<std::int64_t>& idx) {
  const std::size_t width = c.vocab + c.n_ext;
  for (std::size_t r = 0; r < c.n; ++r) {
    std::vector<float> row(width, c.floor);
    for (std::size_t j = 0; j < c.vocab; ++j) {
      const float v = c.ls[r * c.vocab + j] + c.shift[r];
      row[j] = v < c.floor ? c.floor : v;
    }
    for (std::size_t j = 0; j < c.src_len; ++j) row[c.src_ext[r * c.src_len + j]] = c.touched[r * c.src_len + j];
    std::vector<std::int64_t> order(width);
    for (std::size_t j = 0; j < width; ++j) order[j] = static_cast<std::int64_t>(j);
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) { return row[a] > row[b]; });
    for (std::size_t i = 0; i < c.k; ++i) {
      vals.push_back(row[order[i]]);
      idx.push_back(order[i]);
    }
  }
}

void run(const Case& c, int workers, std::vector<float>& vals, std::vector<std::int64_t>& idx) {
  vals.assign(c.n * c.k, 0.0f);
  idx.assign(c.n * c.k, -1);
  topk_from_parts(c.ls.data(), c.shift.data(), c.touched.data(), c.src_ext.data(), c.n, c.vocab, c.src_len, c.n_ext,
                  c.k, c.floor, workers, vals.data(), idx.data());
}

template <class Fn>
bool throws_invalid(Fn fn) {
  try {
    fn();
  } catch (const std::invalid_argument&) {
    return true;
  }
  return false;
}

}  // namespace

int main() {
  std::mt19937 g(7);
  const float log_eps = std::log(1e-12f);
  for (int t = 0; t < 200; ++t) {
    std::uniform_int_distribution<std::size_t> nv(1, t % 4 == 0 ? 9000 : 300), ns(0, 8), ne(0, 3), nr(1, 5);
    const std::size_t vocab = nv(g), n_ext = ne(g);
    const std::size_t k = std::min<std::size_t>(vocab + n_ext, 1 + static_cast<std::size_t>(t % 40));
    const float floor = t % 3 == 0 ? log_eps : (t % 3 == 1 ? -std::numeric_limits<float>::infinity() : -3.0f);
    const Case c = make_case(g, nr(g), vocab, ns(g), n_ext, k, floor, t % 2 == 0);
    std::vector<float> want_v, got_v, got2_v;
    std::vector<std::int64_t> want_i, got_i, got2_i;
    oracle(c, want_v, want_i);
    run(c, 1, got_v, got_i);
    run(c, 3, got2_v, got2_i);
    CHECK(got_i == want_i);
    CHECK(got_v == want_v);
    CHECK(got2_i == got_i && got2_v == got_v);
  }
  // validation: k out of range, ids out of range, NaN (also in a block the pruning skips)
  Case c = make_case(g, 2, 4000, 3, 2, 5, log_eps, false);
  std::vector<float> v;
  std::vector<std::int64_t> i;
  CHECK(throws_invalid([&] {
    Case d = c;
    d.k = 0;
    run(d, 1, v, i);
  }));
  CHECK(throws_invalid([&] {
    Case d = c;
    d.k = 4003;
    run(d, 1, v, i);
  }));
  CHECK(throws_invalid([&] {
    Case d = c;
    d.src_ext[4] = 4002;
    run(d, 1, v, i);
  }));
  CHECK(throws_invalid([&] {
    Case d = c;
    d.src_ext[0] = -1;
    run(d, 1, v, i);
  }));
  CHECK(throws_invalid([&] {
    Case d = c;
    d.ls[4000 + 3001] = std::nanf("");
    run(d, 2, v, i);
  }));
  CHECK(throws_invalid([&] {
    Case d = c;
    d.touched[5] = std::nanf("");
    run(d, 1, v, i);
  }));
  CHECK(throws_invalid([&] {
    Case d = c;
    d.floor = std::nanf("");
    run(d, 1, v, i);
  }));
  return pysynth_test::finish("test_decoding_core");
}
