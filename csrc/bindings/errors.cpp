// The one place where C++ exceptions become Python exceptions. pybind11 already maps
// std::invalid_argument -> ValueError, std::out_of_range -> IndexError and
// std::bad_alloc -> MemoryError; pysynth::Error becomes pysynth.errors.PysynthError.
#include "common.hpp"
#include "pysynth/common.hpp"

namespace pysynth::bind {

void register_errors(py::module_& m) {
  (void)m;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const pysynth::Error& e) {
      py::object cls = py::module_::import("pysynth.errors").attr("PysynthError");
      PyErr_SetString(cls.ptr(), e.what());
    }
  });
}

}  // namespace pysynth::bind
