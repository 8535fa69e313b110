// Shared glue for the pybind11 bindings: turning Python inputs into library views.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "pysynth/ngram.hpp"

namespace pysynth::bind {

namespace py = pybind11;

// Keeps the Python objects a TextColumn points into alive (a tuple snapshot of the
// sequence, so another thread mutating the caller's list cannot free our strings).
struct Column {
  using Ids = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;
  using Offsets = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
  py::object keep;
  std::vector<std::string_view> views;
  // null until to_column reads an ids column: a default array_t is an empty numpy array, whose
  // creation imports numpy (~70 ms that a str-only one-shot run never needs)
  Ids ids = py::reinterpret_steal<Ids>(py::handle());
  Offsets offsets = py::reinterpret_steal<Offsets>(py::handle());
  TextColumn col;
};

// `obj`: a sequence of str, or an object with .values (int32 ids) and .offsets (int64).
// workers != 1: long sequences' compact-ASCII str are read by that many threads (the caller
// holds the GIL throughout).
Column to_column(py::handle obj, const char* name, int workers = 1);

// Sequence of str only.
Column to_strings(py::handle obj, const char* name, int workers = 1);

// n rows of tokens -> list of lists of str, one str per distinct token shared by every row that
// holds it. `tokenize(on_rows)` tokenizes the rows with `workers` threads (corpus::intern_rows),
// passing on_rows through; with one worker it runs without the GIL, with more the GIL stays held
// and the calling thread makes the row lists in on_rows while the others tokenize.
using TokenizeRows = std::function<corpus::TokenRows(const corpus::RowsDone* on_rows)>;
py::list token_lists(size_t n, int workers, const TokenizeRows& tokenize);

// Pauses Python's cyclic garbage collector; restores its state on every exit.
struct GcPause {
  GcPause();
  ~GcPause();
  GcPause(const GcPause&) = delete;
  GcPause& operator=(const GcPause&) = delete;
  bool was;
};

py::array_t<int64_t, py::array::c_style | py::array::forcecast> to_offsets(py::handle obj, size_t n, size_t total,
                                                                           const char* name);

// An int argument taken as an object: TypeError for a non-int (bool included), ValueError
// outside [lo, hi] (as the twins' pysynth._validate); INT64_MIN / INT64_MAX: unbounded, clamped.
int64_t to_int(py::handle obj, const char* name, int64_t lo, int64_t hi);
// A thread count: >= 1 or -1 (all cores); clamped to C's int.
int to_workers(py::handle obj);

void register_errors(py::module_& m);
void register_metrics(py::module_& m);
void register_meteor(py::module_& m);

}  // namespace pysynth::bind

void register_porter(pybind11::module_& m);
void register_ranking(pybind11::module_& m);
