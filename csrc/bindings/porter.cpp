// Binding of the Porter stemmer (pysynth._core.metrics.porter_stem). Glue only:
// validate the list, stem each word with pysynth::porter_stem, wrap the result.
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

#include "common.hpp"
#include "pysynth/porter.hpp"

namespace py = pybind11;

namespace {

// The twin stems code points while the C++ stemmer stems bytes, which only
// agree on ASCII; the rare non-ASCII word is handed to the twin so that both
// backends return the same for every str.
py::object python_twin() { return py::module_::import("pysynth.metrics._porter").attr("porter_stem"); }

py::list porter_stem_py(py::handle words) {
  // Same validation and messages as the twin's pysynth.metrics._reference._strings.
  pysynth::bind::Column col = pysynth::bind::to_strings(words, "words");
  PyObject** items = PySequence_Fast_ITEMS(col.keep.ptr());
  const std::size_t n = col.views.size();
  py::list out(n);
  py::object twin;
  std::string stem;
  for (std::size_t i = 0; i < n; ++i) {
    PyObject* item = items[i];
    PyObject* result;
    if (!PyUnicode_IS_ASCII(item)) {
      if (!twin) twin = python_twin();
      result = twin(py::handle(item)).release().ptr();
    } else {
      const std::string_view word = col.views[i];
      pysynth::porter_stem(word, stem);
      if (stem.size() == word.size() && std::memcmp(stem.data(), word.data(), word.size()) == 0) {
        Py_INCREF(item);  // unchanged: reuse the caller's str object
        result = item;
      } else {
        result = PyUnicode_FromStringAndSize(stem.data(), static_cast<Py_ssize_t>(stem.size()));
        if (!result) throw py::error_already_set();
      }
    }
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), result);  // steals the reference
  }
  return out;
}

}  // namespace

void register_porter(py::module_& m) {
  m.def("porter_stem", &porter_stem_py, py::arg("words"),
        R"doc(Porter stems of a list of lowercase words (NLTK_EXTENSIONS variant).

Equal to ``[nltk.stem.porter.PorterStemmer().stem(w) for w in words]`` (nltk 3.10.4)
for lowercase words, and to the pure-Python twin ``pysynth.metrics._porter.porter_stem``
for every str. Porter, M. F., "An algorithm for suffix stripping", Program 14(3), 1980.

Parameters
----------
words : sequence of str
    Lowercase tokens (no case folding is done).

Returns
-------
list of str
    One stem per word; a word that needs no change is returned as the same object.
)doc");
}
