// The one text intake of the bindings: Python str sequences -> UTF-8 views, no copies.
//
// PyUnicode_AsUTF8AndSize returns the str's own buffer for ASCII (compact) strings and a
// UTF-8 copy cached inside the str object otherwise, so a second call on the same list is
// free and nothing is copied into std::string (pybind11's list<str> caster copies every
// item). Every text hot path (metrics, text stage, corpus, index build, search, sampling)
// takes its strings through to_strings / to_column.
#include <algorithm>
#include <vector>
#include <cstdint>
#include <limits>
#include <string>

#include "common.hpp"
#include "pysynth/common.hpp"
#include "pysynth/corpus.hpp"

namespace pysynth::bind {

Column to_strings(py::handle obj, const char* name, int workers) {
  Column c;
  if (obj.is_none()) throw py::type_error(std::string(name) + " must be a sequence of str, got None");
  if (PyUnicode_Check(obj.ptr()) || PyBytes_Check(obj.ptr()))
    throw py::type_error(std::string(name) + " must be a sequence of str, not a single string; wrap it in a list");
  PyObject* seq = PySequence_Fast(obj.ptr(), "");
  if (!seq) {
    PyErr_Clear();
    throw py::type_error(std::string(name) + " must be a sequence of str, got " +
                         std::string(py::str(py::type::of(obj).attr("__name__"))));
  }
  c.keep = py::reinterpret_steal<py::object>(seq);
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject** items = PySequence_Fast_ITEMS(seq);
  c.views.resize(static_cast<size_t>(n));
  auto one = [&](Py_ssize_t i) {
    PyObject* s = items[i];
    if (!PyUnicode_Check(s)) {
      throw py::type_error(std::string(name) + "[" + std::to_string(i) + "] must be str, got " + Py_TYPE(s)->tp_name);
    }
    Py_ssize_t len;
    const char* p;
    if (PyUnicode_IS_COMPACT_ASCII(s)) {  // what PyUnicode_AsUTF8AndSize returns, without the call
      p = static_cast<const char*>(PyUnicode_DATA(s));
      len = PyUnicode_GET_LENGTH(s);
    } else {
      p = PyUnicode_AsUTF8AndSize(s, &len);
    }
    if (!p) {
      PyErr_Clear();
      throw py::value_error(std::string(name) + "[" + std::to_string(i) +
                            "] is not valid Unicode (lone surrogate); clean the text first");
    }
    c.views[static_cast<size_t>(i)] = std::string_view(p, static_cast<size_t>(len));
  };
  if (workers != 1 && n >= (Py_ssize_t{1} << 16)) {
    // The serial part of every light metric path (issue 29): one cache miss per str header,
    // ~3-8 ms per 200k str. Worker threads read the compact-ASCII headers while this thread
    // keeps the GIL, so no Python code runs meanwhile and none of the objects can change or be
    // freed; only reads, no C-API calls. Every other item goes through `one` under the GIL
    // afterwards, in index order (so the first bad item is the one reported).
    std::vector<std::vector<Py_ssize_t>> slow(static_cast<size_t>(resolve_workers(workers)));
    parallel_for(static_cast<size_t>(n), workers, 4096, [&](size_t tid, size_t b, size_t e) {
      for (size_t i = b; i < e; ++i) {
        if (i + 16 < e) __builtin_prefetch(items[i + 16]);
        PyObject* s = items[i];
        if (PyUnicode_Check(s) && PyUnicode_IS_COMPACT_ASCII(s)) {
          c.views[i] = std::string_view(static_cast<const char*>(PyUnicode_DATA(s)),
                                        static_cast<size_t>(PyUnicode_GET_LENGTH(s)));
        } else {
          slow[tid].push_back(static_cast<Py_ssize_t>(i));
        }
      }
    });
    std::vector<Py_ssize_t> rest;
    for (auto& v : slow) rest.insert(rest.end(), v.begin(), v.end());
    std::sort(rest.begin(), rest.end());
    for (Py_ssize_t i : rest) one(i);
  } else {
    for (Py_ssize_t i = 0; i < n; ++i) {
      // The str headers are scattered (a cache miss each): 200k strings took 5.1 ms, the same
      // strings in allocation order 1.7 ms; prefetching 16 ahead hides most of it.
      if (i + 16 < n) __builtin_prefetch(items[i + 16]);
      one(i);
    }
  }
  c.col.strs = c.views.data();
  c.col.size = c.views.size();
  return c;
}

py::array_t<int64_t, py::array::c_style | py::array::forcecast> to_offsets(py::handle obj, size_t n, size_t total,
                                                                           const char* name) {
  auto off = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(obj);
  if (!off || off.ndim() != 1 || static_cast<size_t>(off.shape(0)) != n + 1)
    throw py::value_error(std::string(name) + " must be a 1-d integer array of length " + std::to_string(n + 1));
  const int64_t* o = off.data();
  if (o[0] != 0 || o[n] != static_cast<int64_t>(total))
    throw py::value_error(std::string(name) + " must start at 0 and end at " + std::to_string(total));
  for (size_t i = 0; i < n; ++i)
    if (o[i + 1] < o[i]) throw py::value_error(std::string(name) + " must be non-decreasing");
  return off;
}

Column to_column(py::handle obj, const char* name, int workers) {
  if (!obj.is_none() && py::hasattr(obj, "values") && py::hasattr(obj, "offsets") && !PySequence_Check(obj.ptr())) {
    Column c;
    c.keep = py::reinterpret_borrow<py::object>(obj);
    c.ids = py::array_t<int32_t, py::array::c_style | py::array::forcecast>::ensure(obj.attr("values"));
    if (!c.ids || c.ids.ndim() != 1) throw py::value_error(std::string(name) + ".values must be a 1-d int32 array");
    py::object off = obj.attr("offsets");
    auto o = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(off);
    if (!o || o.ndim() != 1 || o.shape(0) < 1)
      throw py::value_error(std::string(name) + ".offsets must be a 1-d int64 array of length n + 1");
    size_t n = static_cast<size_t>(o.shape(0)) - 1;
    c.offsets = to_offsets(off, n, static_cast<size_t>(c.ids.shape(0)), (std::string(name) + ".offsets").c_str());
    c.col.ids = c.ids.data();
    c.col.offsets = c.offsets.data();
    c.col.size = n;
    return c;
  }
  return to_strings(obj, name, workers);
}

#if PY_VERSION_HEX >= 0x030A0000
GcPause::GcPause() : was(PyGC_Disable() != 0) {}
GcPause::~GcPause() {
  if (was) PyGC_Enable();
}
#else
GcPause::GcPause() : was(false) {
  py::object gc = py::module_::import("gc");
  was = gc.attr("isenabled")().cast<bool>();
  gc.attr("disable")();
}
GcPause::~GcPause() {
  if (!was) return;
  PyObject* r = PyObject_CallMethod(py::module_::import("gc").ptr(), "enable", nullptr);
  if (r) {
    Py_DECREF(r);
  } else {
    PyErr_Clear();
  }
}
#endif

namespace {

// Rows [b, e) of `out` as lists of lens[i - b] NULL items (valid lists, filled before any Python
// code can run); their item arrays go to `items`. GIL held.
void make_rows(PyObject* out, std::vector<PyObject**>& items, size_t b, size_t e, const int64_t* lens) {
  for (size_t i = b; i < e; ++i) {
    PyObject* row = PyList_New(static_cast<Py_ssize_t>(lens[i - b]));
    if (!row) throw py::error_already_set();
    PyList_SET_ITEM(out, static_cast<Py_ssize_t>(i), row);
    items[i] = reinterpret_cast<PyListObject*>(row)->ob_item;
  }
}

// One str per distinct token, made by the calling thread (GIL held); the worker threads write the
// item pointers and count the uses of each str (plain memory writes, no C-API call: no Python
// code can run meanwhile), and the counts are added to the reference counts at the end.
void fill_rows(const corpus::TokenRows& rows, const std::vector<PyObject**>& items, int workers) {
  size_t V = rows.vocab.size(), n = rows.offsets.size() - 1;
  py::list table(V);  // owns one reference to each str
  PyObject** strs = PySequence_Fast_ITEMS(table.ptr());
  for (size_t t = 0; t < V; ++t) {
    std::string_view v = rows.vocab[t];
    PyObject* s = PyUnicode_DecodeUTF8(v.data(), static_cast<Py_ssize_t>(v.size()), nullptr);
    if (!s) throw py::error_already_set();
    PyList_SET_ITEM(table.ptr(), static_cast<Py_ssize_t>(t), s);
  }
  int W = resolve_workers(workers);
  if (rows.ids.size() < (size_t{1} << 16)) W = 1;
  std::vector<std::vector<Py_ssize_t>> uses(static_cast<size_t>(W));
  parallel_for(n, W, 4096, [&](size_t tid, size_t b, size_t e) {
    std::vector<Py_ssize_t>& u = uses[tid];
    if (u.empty()) u.assign(V, 0);
    for (size_t i = b; i < e; ++i) {
      const int32_t* id = rows.ids.data() + rows.offsets[i];
      auto len = static_cast<size_t>(rows.offsets[i + 1] - rows.offsets[i]);
      for (size_t j = 0; j < len; ++j) {
        auto t = static_cast<size_t>(id[j]);
        items[i][j] = strs[t];
        ++u[t];
      }
    }
  });
  for (size_t t = 0; t < V; ++t) {
    Py_ssize_t k = 0;
    for (const auto& u : uses) k += u.empty() ? 0 : u[t];
    Py_SET_REFCNT(strs[t], Py_REFCNT(strs[t]) + k);  // a no-op on immortal objects (3.12+), as Py_INCREF
  }
}

}  // namespace

// What serialised the tokenizers (issue 29): one str per token and one list per row, made under
// the GIL. Here one str is made per distinct token (fill_rows), and with more than one worker the
// calling thread makes the row lists while the other workers tokenize (corpus::RowsDone): the
// lists were 12-21 ms of ~185 ms per 200k questions, serial after the tokenizing. So that no
// Python code can see a row before it is filled, the GIL stays held for the whole call then
// (the call uses every worker it was given anyway). Lists of str cannot form cycles, so the
// cyclic GC is paused while the rows are made (its passes over the growing list of lists took
// 0.81 of 1.26 s on 1M questions).
py::list token_lists(size_t n, int workers, const TokenizeRows& tokenize) {
  std::vector<PyObject**> items(n);
  if (resolve_workers(workers) == 1) {
    corpus::TokenRows rows;
    {
      py::gil_scoped_release nogil;
      rows = tokenize(nullptr);
    }
    GcPause pause;
    py::list out(n);
    std::vector<int64_t> lens(n);
    for (size_t i = 0; i < n; ++i) lens[i] = rows.offsets[i + 1] - rows.offsets[i];
    make_rows(out.ptr(), items, 0, n, lens.data());
    fill_rows(rows, items, workers);
    return out;
  }
  GcPause pause;
  py::list out(n);
  corpus::RowsDone make = [&](size_t b, size_t e, const int64_t* lens) { make_rows(out.ptr(), items, b, e, lens); };
  corpus::TokenRows rows = tokenize(&make);
  fill_rows(rows, items, workers);
  return out;
}

// Integer arguments (moved here from the METEOR binding so every binding can share them).
// An int argument taken as an object, so that an int outside C's range is a ValueError (as in
// the twin, pysynth._validate.int_range) rather than pybind11's TypeError; bool is not an int.
// lo = INT64_MIN / hi = INT64_MAX: no bound on that side (a larger int comes back clamped).
int64_t to_int(py::handle obj, const char* name, int64_t lo, int64_t hi) {
  bool is_int = !PyBool_Check(obj.ptr()) && (PyLong_Check(obj.ptr()) || PyObject_HasAttrString(obj.ptr(), "__index__"));
  if (is_int) {
    // a numpy bool exists only once numpy is imported: never import it here (~70 ms of a one-shot run)
    PyObject* np = PyImport_GetModule(py::str("numpy").ptr());
    if (np) {
      py::module_ m = py::reinterpret_steal<py::module_>(np);
      is_int = !py::isinstance(obj, m.attr("bool_"));
    } else if (PyErr_Occurred()) {
      throw py::error_already_set();
    }
  }
  if (!is_int)
    throw py::type_error(std::string(name) + " must be an int, got " +
                         std::string(py::str(py::type::of(obj).attr("__name__"))));
  py::int_ v(py::reinterpret_borrow<py::object>(obj));
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  if (overflow < 0 || (overflow == 0 && x < lo))
    throw py::value_error(std::string(name) + " must be >= " + std::to_string(lo) + ", got " +
                          std::string(py::repr(v)));
  if (overflow < 0 && lo == std::numeric_limits<int64_t>::min()) return lo;  // no bound: clamped
  if (overflow > 0 && hi == std::numeric_limits<int64_t>::max()) return hi;
  if (overflow > 0 || x > hi)
    throw py::value_error(std::string(name) + " must be <= " + std::to_string(hi) + ", got " +
                          std::string(py::repr(v)));
  return x;
}

// A thread count: >= 1 or -1 (all cores); more than C's int holds runs as many as it holds.
int to_workers(py::handle obj) {
  int64_t w = to_int(obj, "workers", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  if (w < 1 && w != -1)
    throw py::value_error("workers must be >= 1 or -1 (all cores), got " + std::string(py::repr(obj)));
  return static_cast<int>(std::min<int64_t>(w, std::numeric_limits<int>::max()));
}

}  // namespace pysynth::bind
