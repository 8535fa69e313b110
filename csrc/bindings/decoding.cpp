// pybind11 glue for pysynth::decoding -> pysynth._core.decoding (self-registered).
// Convert, release the GIL, call the library, wrap the result.  The twin with the same
// signature (and the docstring) is pysynth/decoding/_reference.py; the public function,
// which validates its inputs first, is pysynth.decoding.search.topk_from_parts.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "pysynth/common.hpp"
#include "pysynth/decoding.hpp"
#include "registry.hpp"

namespace py = pybind11;

namespace {

template <class T>
using Arr = py::array_t<T, py::array::c_style | py::array::forcecast>;

std::string shape_of(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

py::tuple topk_from_parts_py(const Arr<float>& ls, const Arr<float>& shift, const Arr<float>& touched,
                             const Arr<std::int64_t>& src_ext, std::int64_t n_ext, std::int64_t k, float floor,
                             int workers) {
  if (ls.ndim() != 2) throw std::invalid_argument("ls must be 2-D [rows, vocab], got shape " + shape_of(ls));
  const auto n = ls.shape(0), vocab = ls.shape(1);
  if (shift.ndim() != 1 || shift.shape(0) != n)
    throw std::invalid_argument("shift must have shape (" + std::to_string(n) + ",), got " + shape_of(shift));
  if (touched.ndim() != 2 || touched.shape(0) != n || src_ext.ndim() != 2 || src_ext.shape(0) != n ||
      src_ext.shape(1) != touched.shape(1))
    throw std::invalid_argument("touched and src_ext must both have shape (" + std::to_string(n) + ", src_len), got " +
                                shape_of(touched) + " and " + shape_of(src_ext));
  if (n_ext < 0) throw std::invalid_argument("n_ext must be >= 0, got " + std::to_string(n_ext));
  if (k < 1) throw std::invalid_argument("k must be >= 1, got " + std::to_string(k));
  pysynth::resolve_workers(workers);
  py::array_t<float> vals({n, static_cast<py::ssize_t>(k)});
  py::array_t<std::int64_t> idx({n, static_cast<py::ssize_t>(k)});
  const float* pl = ls.data();
  const float* ps = shift.data();
  const float* pt = touched.data();
  const std::int64_t* pe = src_ext.data();
  float* pv = vals.mutable_data();
  std::int64_t* pi = idx.mutable_data();
  const auto src_len = touched.shape(1);
  {
    py::gil_scoped_release release;
    pysynth::decoding::topk_from_parts(pl, ps, pt, pe, static_cast<std::size_t>(n), static_cast<std::size_t>(vocab),
                                       static_cast<std::size_t>(src_len), static_cast<std::size_t>(n_ext),
                                       static_cast<std::size_t>(k), floor, workers, pv, pi);
  }
  return py::make_tuple(vals, idx);
}

}  // namespace

void register_decoding(py::module_& m) {
  auto sub =
      m.def_submodule("decoding", "Candidate selection for the batched searches; twin: pysynth.decoding._reference");
  sub.def("topk_from_parts", &topk_from_parts_py, "See pysynth.decoding._reference.topk_from_parts", py::arg("ls"),
          py::arg("shift"), py::arg("touched"), py::arg("src_ext"), py::arg("n_ext"), py::arg("k"), py::arg("floor"),
          py::arg("workers"));
}

static pysynth::bind::Registrar reg("decoding", &register_decoding);
