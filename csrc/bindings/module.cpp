// pysynth._core: one register_<stage>() per stage; each creates its submodule.
#include "common.hpp"
#include "registry.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_core, m) {
  m.doc() = "pysynth compiled core (C++17); see pysynth._dispatch for backend selection";
  pysynth::bind::register_errors(m);
  pysynth::bind::register_metrics(m);
  register_ranking(m);
  for (auto& entry : pysynth::bind::registry()) entry.second(m);  // self-registered stages
  m.def("build_info", []() {
    py::dict d;
#if defined(__VERSION__)
    d["compiler"] = __VERSION__;
#endif
    d["cplusplus"] = __cplusplus;
#ifdef NDEBUG
    d["optimized"] = true;
#else
    d["optimized"] = false;
#endif
    d["pybind11"] = std::to_string(PYBIND11_VERSION_MAJOR) + "." + std::to_string(PYBIND11_VERSION_MINOR) + "." +
                    std::to_string(PYBIND11_VERSION_PATCH);
    return d;
  });
}
