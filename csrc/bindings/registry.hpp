// Self-registration of binding files: each stage's file declares
//   static pysynth::bind::Registrar reg("<stage>", &register_<stage>);
// and module.cpp calls every registered function, so adding a stage touches no shared file.
#pragma once

#include <pybind11/pybind11.h>

#include <utility>
#include <vector>

namespace pysynth::bind {

using RegisterFn = void (*)(pybind11::module_&);

inline std::vector<std::pair<const char*, RegisterFn>>& registry() {
  static std::vector<std::pair<const char*, RegisterFn>> fns;
  return fns;
}

struct Registrar {
  Registrar(const char* stage, RegisterFn fn) { registry().emplace_back(stage, fn); }
};

}  // namespace pysynth::bind
