// Shared glue for the pybind11 bindings: turning Python inputs into library views.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <string_view>
#include <vector>

#include "pysynth/ngram.hpp"

namespace pysynth::bind {

namespace py = pybind11;

// Keeps the Python objects a TextColumn points into alive (a tuple snapshot of the
// sequence, so another thread mutating the caller's list cannot free our strings).
struct Column {
  py::object keep;
  std::vector<std::string_view> views;
  py::array_t<int32_t, py::array::c_style | py::array::forcecast> ids;
  py::array_t<int64_t, py::array::c_style | py::array::forcecast> offsets;
  TextColumn col;
};

// `obj`: a sequence of str, or an object with .values (int32 ids) and .offsets (int64).
Column to_column(py::handle obj, const char* name);

// Sequence of str only.
Column to_strings(py::handle obj, const char* name);

py::array_t<int64_t, py::array::c_style | py::array::forcecast> to_offsets(py::handle obj, size_t n, size_t total,
                                                                           const char* name);

void register_errors(py::module_& m);
void register_metrics(py::module_& m);
void register_meteor(py::module_& m);

}  // namespace pysynth::bind

void register_porter(pybind11::module_& m);
void register_ranking(pybind11::module_& m);
