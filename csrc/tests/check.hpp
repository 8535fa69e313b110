// Minimal assertion helpers shared by the C++ unit tests (run with ctest).
#pragma once

#include <cstdio>

namespace pysynth_test {
inline int failures = 0;

// Exit code of a test binary: prints the failure count or a success line.
inline int finish(const char* name) {
  if (failures) {
    std::fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  std::printf("%s: all checks passed\n", name);
  return 0;
}
}  // namespace pysynth_test

#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++pysynth_test::failures;                                                     \
    }                                                                               \
  } while (0)
