// pybind11 glue for pysynth::filtering -> pysynth._core.filtering (self-registered).
// The docstrings are the Python twin's (pysynth/filtering/_reference.py).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "pysynth/common.hpp"
#include "pysynth/filters.hpp"
#include "registry.hpp"

namespace py = pybind11;

namespace {

template <class T>
using Arr = py::array_t<T, py::array::c_style | py::array::forcecast>;

template <class T>
Arr<T> vec(const py::object& o, const char* name) {
  auto a = Arr<T>::ensure(o);
  if (!a || a.ndim() != 1) throw py::value_error(std::string(name) + " must be a 1-D integer array");
  return a;
}

Arr<std::int64_t> offsets(const py::object& o, const char* name, py::ssize_t n_min) {
  auto a = vec<std::int64_t>(o, name);
  if (a.shape(0) < n_min) throw py::value_error(std::string(name) + " must have length n + 1 >= 1");
  return a;
}

py::tuple kqf_select_py(const py::object& questions, const py::object& candidate_offsets, const py::object& results,
                        const py::object& result_offsets, std::int64_t depth, int workers) {
  auto q = vec<std::int32_t>(questions, "questions");
  auto co = offsets(candidate_offsets, "candidate_offsets", 1);
  auto r = vec<std::int32_t>(results, "results");
  auto ro = offsets(result_offsets, "result_offsets", 1);
  if (co.shape(0) != q.shape(0) + 1)
    throw py::value_error("candidate_offsets must have len(questions) + 1 = " + std::to_string(q.shape(0) + 1) +
                          " entries, got " + std::to_string(co.shape(0)));
  if (depth < 0) throw py::value_error("depth must be >= 0 (0 = whole lists), got " + std::to_string(depth));
  pysynth::resolve_workers(workers);
  const py::ssize_t nq = q.shape(0), nc = ro.shape(0) - 1;
  py::array_t<std::int32_t> chosen(nq);
  py::array_t<double> best(nq), rr(nc);
  std::int32_t* cp = chosen.mutable_data();
  double* bp = best.mutable_data();
  double* rp = rr.mutable_data();
  {
    py::gil_scoped_release nogil;
    pysynth::filtering::kqf_select(q.data(), static_cast<std::size_t>(nq), co.data(), r.data(),
                                   static_cast<std::size_t>(r.shape(0)), ro.data(), static_cast<std::size_t>(nc), depth,
                                   workers, cp, bp, rp);
  }
  return py::make_tuple(chosen, best, rr);
}

py::array_t<double> tdf_precision_py(const py::object& results, const py::object& result_offsets,
                                     const py::object& questions, const py::object& clusters, bool include_self,
                                     int workers) {
  auto r = vec<std::int32_t>(results, "results");
  auto ro = offsets(result_offsets, "result_offsets", 1);
  auto q = vec<std::int32_t>(questions, "questions");
  auto c = vec<std::int64_t>(clusters, "clusters");
  const py::ssize_t n = ro.shape(0) - 1;
  if (q.shape(0) != n)
    throw py::value_error("questions must have one entry per result list (" + std::to_string(n) + "), got " +
                          std::to_string(q.shape(0)));
  pysynth::resolve_workers(workers);
  py::array_t<double> out(n);
  double* op = out.mutable_data();
  {
    py::gil_scoped_release nogil;
    pysynth::filtering::tdf_precision(r.data(), static_cast<std::size_t>(r.shape(0)), ro.data(),
                                      static_cast<std::size_t>(n), q.data(), c.data(),
                                      static_cast<std::size_t>(c.shape(0)), include_self, workers, op);
  }
  return out;
}

py::array_t<std::int64_t> first_rank_py(const py::object& tokens, const py::object& offsets_obj,
                                        const py::object& order, std::int64_t vocab_size) {
  auto t = vec<std::int32_t>(tokens, "tokens");
  auto o = offsets(offsets_obj, "offsets", 1);
  auto ord = vec<std::int64_t>(order, "order");
  if (vocab_size < 0) throw py::value_error("vocab_size must be >= 0, got " + std::to_string(vocab_size));
  py::array_t<std::int64_t> out(static_cast<py::ssize_t>(vocab_size));
  std::int64_t* op = out.mutable_data();
  {
    py::gil_scoped_release nogil;
    pysynth::filtering::first_rank(t.data(), static_cast<std::size_t>(t.shape(0)), o.data(),
                                   static_cast<std::size_t>(o.shape(0) - 1), ord.data(),
                                   static_cast<std::size_t>(ord.shape(0)), vocab_size, op);
  }
  return out;
}

// Short static docstrings (the summary of the twin's): importing the twins at load to copy theirs
// cost every `import pysynth._core` ~50 ms (bench/RESULTS_mqr.md, issue 29).
void register_filtering(py::module_& m) {
  auto sub = m.def_submodule("filtering",
                             "Keyword query filter, training data filter, vocabulary coverage; twin: "
                             "pysynth.filtering._reference");
  sub.def("kqf_select", &kqf_select_py,
          "Keyword query filter (Ding & Balog 2018, Eq. 7): the best candidate query per question.\n\nFull docs: the "
          "twin pysynth.filtering._reference.kqf_select.",
          py::arg("questions"), py::arg("candidate_offsets"), py::arg("results"), py::arg("result_offsets"),
          py::arg("depth"), py::arg("workers"));
  sub.def("tdf_precision", &tdf_precision_py,
          "Training data filter quality score (Ding & Balog 2018, Eq. 8) of every pair.\n\nFull docs: the twin "
          "pysynth.filtering._reference.tdf_precision.",
          py::arg("results"), py::arg("result_offsets"), py::arg("questions"), py::arg("clusters"),
          py::arg("include_self"), py::arg("workers"));
  sub.def("first_rank", &first_rank_py,
          "First rank position at which each term appears when rows are taken in ``order``.\n\nFull docs: the twin "
          "pysynth.filtering._reference.first_rank.",
          py::arg("tokens"), py::arg("offsets"), py::arg("order"), py::arg("vocab_size"));
}

pysynth::bind::Registrar reg("filtering", &register_filtering);

}  // namespace
