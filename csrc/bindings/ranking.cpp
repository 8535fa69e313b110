// pybind11 glue for pysynth::ranking -> pysynth._core.ranking.
// Validation and the definitions live in csrc/src/ranking.cpp; the Python
// twin with the same signatures is pysynth/ranking/_reference.py.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "pysynth/ranking.hpp"

namespace py = pybind11;

namespace {

using Doubles = py::array_t<double, py::array::c_style | py::array::forcecast>;
using Labels = py::array_t<std::int8_t, py::array::c_style | py::array::forcecast>;
using Offsets = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

void require_1d(const py::array& a, const char* name) {
  if (a.ndim() != 1) {
    throw std::invalid_argument(std::string(name) + " must be 1-D, got " + std::to_string(a.ndim()) + "-D");
  }
}

void require_pairs(const Doubles& scores, const Labels& labels) {
  require_1d(scores, "scores");
  require_1d(labels, "labels");
  if (labels.shape(0) != scores.shape(0)) {
    throw std::invalid_argument("labels has " + std::to_string(labels.shape(0)) + " entries but scores has " +
                                std::to_string(scores.shape(0)) + "; pass one label per score");
  }
}

py::array_t<double> ranking_stats(std::int64_t k, const Doubles& scores, const Labels& labels, const Offsets& offsets) {
  if (k < 1) {
    throw std::invalid_argument("k must be >= 1, got " + std::to_string(k));
  }
  require_pairs(scores, labels);
  if (offsets.ndim() != 1 || offsets.shape(0) < 1) {
    throw std::invalid_argument("offsets must be a 1-D array of length Q + 1 >= 1");
  }
  const auto n = static_cast<std::size_t>(scores.shape(0));
  const auto n_offsets = static_cast<std::size_t>(offsets.shape(0));
  py::array_t<double> out(
      {static_cast<py::ssize_t>(n_offsets - 1), static_cast<py::ssize_t>(pysynth::ranking::kStatColumns)});
  const double* s = scores.data();
  const std::int8_t* l = labels.data();
  const std::int64_t* o = offsets.data();
  double* dst = out.mutable_data();
  {
    py::gil_scoped_release release;
    pysynth::ranking::ranking_stats(s, l, n, o, n_offsets, k, dst);
  }
  return out;
}

double auc_at(const Doubles& scores, const Labels& labels, double max_fpr, bool interpolate) {
  if (!(max_fpr > 0.0 && max_fpr <= 1.0)) {
    throw std::invalid_argument("max_fpr must be in (0, 1], got " + std::to_string(max_fpr));
  }
  require_pairs(scores, labels);
  const auto n = static_cast<std::size_t>(scores.shape(0));
  const double* s = scores.data();
  const std::int8_t* l = labels.data();
  double result = 0.0;
  {
    py::gil_scoped_release release;
    result = pysynth::ranking::auc_at(s, l, n, max_fpr, interpolate);
  }
  return result;
}

}  // namespace

void register_ranking(py::module_& m) {
  auto sub = m.def_submodule("ranking",
                             "Ranking metrics (P@k, reciprocal rank, average precision, AUC(max_fpr)); "
                             "twin: pysynth.ranking._reference");
  sub.def(
      "ranking_stats",
      [](const Doubles& scores, const Labels& labels, const Offsets& offsets, std::int64_t k) {
        return ranking_stats(k, scores, labels, offsets);
      },
      py::arg("scores"), py::arg("labels"), py::arg("offsets"), py::arg("k"),
      "Per-query [P@k, reciprocal rank, average precision, n_relevant], shape (Q, 4).");
  sub.def("auc_at", &auc_at, py::arg("scores"), py::arg("labels"), py::arg("max_fpr"), py::arg("interpolate") = true,
          "Area under the pooled ROC curve up to max_fpr, divided by max_fpr.");
}
