// pybind11 glue for pysynth::sampling -> pysynth._core.sampling (self-registered).
// Convert, release the GIL, call the library, wrap the result.  The twin with the same
// signatures (and the docstrings) is pysynth/sampling/_reference.py.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

#include "pysynth/common.hpp"
#include "pysynth/sampling.hpp"
#include "registry.hpp"

namespace py = pybind11;

namespace {

template <class T>
using Arr = py::array_t<T, py::array::c_style | py::array::forcecast>;

// A 1-D array of T; the dtype kinds accepted are those the twin accepts ("iub" for
// integers, "fiu" for floats), so both backends reject the same inputs.
template <class T>
Arr<T> as_array(py::handle obj, const char* name, const char* kinds) {
  py::array a = py::array::ensure(obj);
  if (!a) throw std::invalid_argument(std::string(name) + " must be an array");
  if (a.ndim() != 1)
    throw std::invalid_argument(std::string(name) + " must be 1-D, got " + std::to_string(a.ndim()) + "-D");
  if (a.size() > 0 && std::string(kinds).find(a.dtype().kind()) == std::string::npos)
    throw std::invalid_argument(std::string(name) + " has an unsupported dtype kind '" +
                                std::string(1, a.dtype().kind()) + "'");
  return Arr<T>::ensure(a);
}

bool is_int(py::handle obj) {
  if (PyBool_Check(obj.ptr())) return false;
  py::module_ np = py::module_::import("numpy");
  if (py::isinstance(obj, np.attr("bool_"))) return false;
  return PyLong_Check(obj.ptr()) || py::isinstance(obj, np.attr("integer"));
}

std::int64_t to_int(py::handle obj, const char* name, std::int64_t lo) {
  std::string msg =
      std::string(name) + " must be an integer >= " + std::to_string(lo) + ", got " + std::string(py::repr(obj));
  if (!is_int(obj)) throw std::invalid_argument(msg);
  py::int_ v(py::reinterpret_borrow<py::object>(obj));
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (overflow != 0 || x < lo) throw std::invalid_argument(msg);
  return static_cast<std::int64_t>(x);
}

std::uint64_t to_seed(py::handle obj) {
  std::string msg = "seed must be an integer in [0, 2**64), got " + std::string(py::repr(obj));
  if (!is_int(obj)) throw std::invalid_argument(msg);
  py::int_ v(py::reinterpret_borrow<py::object>(obj));
  if (PyObject_RichCompareBool(v.ptr(), py::int_(0).ptr(), Py_LT) == 1) throw std::invalid_argument(msg);
  unsigned long long x = PyLong_AsUnsignedLongLong(v.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    throw std::invalid_argument(msg);
  }
  return static_cast<std::uint64_t>(x);
}

double to_weight(py::handle obj) { return py::cast<double>(py::float_(py::reinterpret_borrow<py::object>(obj))); }

py::tuple generate_py(py::handle q_ids, py::handle q_offsets, py::handle c_ids, py::handle c_offsets,
                      py::handle cluster_index, py::handle cf, py::handle df, py::handle n_docs, py::handle exclude,
                      py::handle length_dist, const std::string& strategy, py::handle w_question, py::handle w_cluster,
                      py::handle w_collection, py::handle m, py::handle seed, py::handle first_index,
                      py::handle max_rejections, py::handle workers_obj) {
  using namespace pysynth::sampling;
  // workers as an object: an int outside C's range is then a ValueError, as in the twin (a typed
  // `int` parameter makes pybind11 raise TypeError "incompatible function arguments")
  if (!is_int(workers_obj)) throw py::type_error("workers must be an int, got " + std::string(py::repr(workers_obj)));
  int overflow = 0;
  py::int_ w_int(py::reinterpret_borrow<py::object>(workers_obj));
  long long w64 = PyLong_AsLongLongAndOverflow(w_int.ptr(), &overflow);
  if (overflow < 0 || (overflow == 0 && w64 != -1 && w64 < 1))
    throw std::invalid_argument("workers must be >= 1 or -1 (all cores), got " + std::string(py::repr(workers_obj)));
  // more threads than C's int holds: as many as an int holds (the result never depends on it)
  const int workers =
      overflow > 0 || w64 > std::numeric_limits<int>::max() ? std::numeric_limits<int>::max() : static_cast<int>(w64);
  Config cfg;
  cfg.strategy = parse_strategy(strategy);
  cfg.m = to_int(m, "m", 1);
  cfg.seed = to_seed(seed);
  // first_index: an int (question i is keyed by first_index + i) or one global index per question
  Arr<std::int64_t> qindex;
  const bool per_question = py::isinstance<py::array>(first_index) || py::isinstance<py::list>(first_index) ||
                            py::isinstance<py::tuple>(first_index);
  if (per_question) {
    qindex = as_array<std::int64_t>(first_index, "first_index", "iu");
  } else {
    cfg.first_index = to_int(first_index, "first_index", 0);
  }
  cfg.max_rejections = to_int(max_rejections, "max_rejections", 0);
  cfg.workers = workers;
  pysynth::resolve_workers(workers);
  cfg.w_question = to_weight(w_question);
  cfg.w_cluster = to_weight(w_cluster);
  cfg.w_collection = to_weight(w_collection);

  auto qi = as_array<std::int32_t>(q_ids, "q_ids", "iub");
  auto qo = as_array<std::int64_t>(q_offsets, "q_offsets", "iub");
  auto ci = as_array<std::int32_t>(c_ids, "c_ids", "iub");
  auto co = as_array<std::int64_t>(c_offsets, "c_offsets", "iub");
  auto cidx = as_array<std::int64_t>(cluster_index, "cluster_index", "iub");
  auto cfa = as_array<std::int64_t>(cf, "cf", "iub");
  auto dfa = as_array<std::int64_t>(df, "df", "iub");
  auto exa = as_array<std::uint8_t>(exclude, "exclude", "iub");
  auto pl = as_array<double>(length_dist, "length_dist", "fiu");
  Corpus c;
  c.n_docs = to_int(n_docs, "n_docs", 0);
  c.vocab_size = static_cast<std::size_t>(cfa.shape(0));
  if (static_cast<std::size_t>(dfa.shape(0)) != c.vocab_size || static_cast<std::size_t>(exa.shape(0)) != c.vocab_size)
    throw std::invalid_argument("cf, df and exclude must have one entry per vocabulary id; got " +
                                std::to_string(cfa.shape(0)) + ", " + std::to_string(dfa.shape(0)) + " and " +
                                std::to_string(exa.shape(0)));
  if (qo.shape(0) < 1) throw std::invalid_argument("q_offsets must have length n + 1 >= 1");
  if (co.shape(0) < 1) throw std::invalid_argument("c_offsets must have length n + 1 >= 1");
  c.q_ids = qi.data();
  c.n_q_ids = static_cast<std::size_t>(qi.shape(0));
  c.q_offsets = qo.data();
  c.n_questions = static_cast<std::size_t>(qo.shape(0) - 1);
  c.c_ids = ci.data();
  c.n_c_ids = static_cast<std::size_t>(ci.shape(0));
  c.c_offsets = co.data();
  c.n_clusters = static_cast<std::size_t>(co.shape(0) - 1);
  if (static_cast<std::size_t>(cidx.shape(0)) != c.n_questions)
    throw std::invalid_argument("cluster_index must have one entry per question (" + std::to_string(c.n_questions) +
                                "), got " + std::to_string(cidx.shape(0)));
  c.cluster_index = cidx.data();
  if (per_question) {
    if (static_cast<std::size_t>(qindex.shape(0)) != c.n_questions)
      throw std::invalid_argument("first_index must be an int or have one entry per question (" +
                                  std::to_string(c.n_questions) + "), got " + std::to_string(qindex.shape(0)));
    cfg.question_index = qindex.data();
  }
  c.cf = cfa.data();
  c.df = dfa.data();
  c.exclude = exa.data();
  cfg.length_dist = pl.data();
  cfg.n_lengths = static_cast<std::size_t>(pl.shape(0));

  std::unique_ptr<Sampler> sampler;
  Arr<std::int64_t> offsets;
  std::int64_t planned = 0;
  {
    py::gil_scoped_release nogil;
    sampler = std::make_unique<Sampler>(c, cfg);
  }
  offsets = Arr<std::int64_t>(static_cast<py::ssize_t>(sampler->n_candidates() + 1));
  std::int64_t* off = offsets.mutable_data();
  {
    py::gil_scoped_release nogil;
    planned = sampler->plan(off);
  }
  Arr<std::int32_t> ids(static_cast<py::ssize_t>(planned));
  std::int32_t* out = ids.mutable_data();
  std::int64_t total = 0;
  {
    py::gil_scoped_release nogil;
    total = sampler->sample(off, out);
  }
  if (total != planned) {
    py::object sliced = ids[py::slice(0, total, 1)];
    return py::make_tuple(sliced.attr("copy")(), offsets);
  }
  return py::make_tuple(ids, offsets);
}

// The twin's messages (pysynth._validate.offsets with what = "the number of ids").
void check_offsets(const Arr<std::int64_t>& o, py::ssize_t total, const std::string& name) {
  if (o.shape(0) < 1)
    throw std::invalid_argument(name + " must have at least one entry (n + 1 for n rows, starting with 0)");
  const std::int64_t* od = o.data();
  const py::ssize_t n = o.shape(0) - 1;
  if (od[0] != 0)
    throw std::invalid_argument(name + " must start at 0, got " + name + "[0] = " + std::to_string(od[0]));
  for (py::ssize_t i = 0; i < n; ++i)
    if (od[i + 1] < od[i])
      throw std::invalid_argument(name + " must be non-decreasing, but " + name + "[" + std::to_string(i + 1) +
                                  "] = " + std::to_string(od[i + 1]) + " < " + name + "[" + std::to_string(i) +
                                  "] = " + std::to_string(od[i]));
  if (od[n] != static_cast<std::int64_t>(total))
    throw std::invalid_argument(name + " must end at the number of ids = " + std::to_string(total) + ", got " + name +
                                "[-1] = " + std::to_string(od[n]));
}

py::tuple collection_stats_py(py::handle ids, py::handle offsets, py::handle vocab_size) {
  const std::int64_t V = to_int(vocab_size, "vocab_size", 0);
  auto a = as_array<std::int32_t>(ids, "ids", "iub");
  auto o = as_array<std::int64_t>(offsets, "offsets", "iub");
  check_offsets(o, a.shape(0), "offsets");
  const std::size_t n_docs = static_cast<std::size_t>(o.shape(0) - 1);
  Arr<std::int64_t> cf(static_cast<py::ssize_t>(V)), df(static_cast<py::ssize_t>(V));
  {
    py::gil_scoped_release nogil;
    pysynth::sampling::collection_stats(a.data(), o.data(), n_docs, static_cast<std::size_t>(V), cf.mutable_data(),
                                        df.mutable_data());
  }
  return py::make_tuple(cf, df);
}

Arr<std::int32_t> order_like_questions_py(py::handle q_ids, py::handle q_offsets, py::handle c_ids,
                                          py::handle c_offsets, py::handle m) {
  const std::int64_t mm = to_int(m, "m", 1);
  auto qi = as_array<std::int32_t>(q_ids, "q_ids", "iub");
  auto qo = as_array<std::int64_t>(q_offsets, "q_offsets", "iub");
  check_offsets(qo, qi.shape(0), "q_offsets");
  auto ci = as_array<std::int32_t>(c_ids, "c_ids", "iub");
  auto co = as_array<std::int64_t>(c_offsets, "c_offsets", "iub");
  check_offsets(co, ci.shape(0), "c_offsets");
  const std::size_t nq = static_cast<std::size_t>(qo.shape(0) - 1);
  const std::size_t nc = static_cast<std::size_t>(co.shape(0) - 1);
  if (nc / static_cast<std::size_t>(mm) != nq || nc % static_cast<std::size_t>(mm) != 0)
    throw std::invalid_argument("c_offsets must hold m = " + std::to_string(mm) + " candidates per question (" +
                                std::to_string(nq) + " questions), got " + std::to_string(nc) + " candidates");
  for (const auto* a : {&qi, &ci}) {
    const std::int32_t* d = a->data();
    std::int32_t lo = 0;
    for (py::ssize_t i = 0; i < a->shape(0); ++i) lo = std::min(lo, d[i]);
    if (lo < 0)
      throw std::invalid_argument(std::string(a == &qi ? "q_ids" : "c_ids") + " contains the negative id " +
                                  std::to_string(lo));
  }
  Arr<std::int32_t> out(ci.shape(0));
  {
    py::gil_scoped_release nogil;
    pysynth::sampling::order_like_questions(qi.data(), qo.data(), nq, ci.data(), co.data(),
                                            static_cast<std::size_t>(mm), out.mutable_data());
  }
  return out;
}

py::array_t<std::uint64_t> random_words_py(py::handle seed, py::handle question_index, py::handle candidate_index,
                                           py::handle count) {
  std::uint64_t s = to_seed(seed);
  std::int64_t q = to_int(question_index, "question_index", 0);
  std::int64_t c = to_int(candidate_index, "candidate_index", 0);
  std::int64_t n = to_int(count, "count", 0);
  if (n > (std::int64_t{1} << 40)) throw std::invalid_argument("count is too large");
  py::array_t<std::uint64_t> out(static_cast<py::ssize_t>(n));
  pysynth::sampling::random_words(s, static_cast<std::uint64_t>(q), static_cast<std::uint64_t>(c),
                                  static_cast<std::size_t>(n), out.mutable_data());
  return out;
}

}  // namespace

// Short static docstrings (the summary of the twin's): importing the twins at load to copy theirs
// cost every `import pysynth._core` ~50 ms (bench/RESULTS_mqr.md, issue 29).
void register_sampling(py::module_& m) {
  auto sub = m.def_submodule("sampling",
                             "Keyword query generation (Ding & Balog 2018, Alg. 1); twin: pysynth.sampling._reference");
  sub.def("generate", &generate_py,
          "Sample ``m`` keyword query candidates per question (Ding & Balog 2018, Alg. 1).\n\nFull docs: the twin "
          "pysynth.sampling._reference.generate.",
          py::arg("q_ids"), py::arg("q_offsets"), py::arg("c_ids"), py::arg("c_offsets"), py::arg("cluster_index"),
          py::arg("cf"), py::arg("df"), py::arg("n_docs"), py::arg("exclude"), py::arg("length_dist"),
          py::arg("strategy"), py::arg("w_question"), py::arg("w_cluster"), py::arg("w_collection"), py::arg("m"),
          py::arg("seed"), py::arg("first_index"), py::arg("max_rejections"), py::arg("workers"));
  sub.def("collection_stats", &collection_stats_py,
          "Collection statistics of documents ``ids[offsets[i]:offsets[i+1]]`` over the ids\n``[0, vocab_size)`` (Ding "
          "& Balog 2018, Eq. 2 and 5).\n\nFull docs: the twin pysynth.sampling._reference.collection_stats.",
          py::arg("ids"), py::arg("offsets"), py::arg("vocab_size"));
  sub.def("order_like_questions", &order_like_questions_py,
          "Terms of every candidate in the order they occur in its question: candidate ``c``\nbelongs to question "
          "``c // m``.\n\nFull docs: the twin pysynth.sampling._reference.order_like_questions.",
          py::arg("q_ids"), py::arg("q_offsets"), py::arg("c_ids"), py::arg("c_offsets"), py::arg("m"));
  sub.def(
      "random_words", &random_words_py,
      "The first ``count`` random words of candidate ``candidate_index`` of question\n``question_index`` (global "
      "index, i.e. ``first_index + i``), as uint64.\n\nFull docs: the twin pysynth.sampling._reference.random_words.",
      py::arg("seed"), py::arg("question_index"), py::arg("candidate_index"), py::arg("count"));
}

static pysynth::bind::Registrar reg("sampling", &register_sampling);
