// Shared utilities of the pysynth C++ library (no Python.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace pysynth {

// The one library-specific exception: an internal error, not the caller's fault.
// Caller errors use std::invalid_argument / std::out_of_range.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Resolve a `workers` argument: -1 = all cores, >= 1 as given; anything else is an error.
inline int resolve_workers(int workers) {
  if (workers == -1) {
    unsigned hc = std::thread::hardware_concurrency();
    return hc == 0 ? 1 : static_cast<int>(hc);
  }
  if (workers < 1) {
    throw std::invalid_argument("workers must be >= 1 or -1 (all cores), got " + std::to_string(workers));
  }
  // results never depend on the thread count, and kernels keep per-thread state: workers=2**31-1
  // would allocate until killed (found by fuzz/), so more than kMaxWorkers run as kMaxWorkers
  constexpr int kMaxWorkers = 1024;
  return workers < kMaxWorkers ? workers : kMaxWorkers;
}

// Run fn(worker_index, begin, end) over [0, n) in dynamically scheduled chunks.
// Items write their own output slots, so results do not depend on the thread count.
// The first exception thrown by any worker is rethrown here after all threads joined.
template <class Fn>
void parallel_for(size_t n, int workers, size_t chunk, Fn&& fn) {
  workers = resolve_workers(workers);
  if (n == 0) return;
  chunk = std::max<size_t>(chunk, 1);
  size_t n_chunks = (n + chunk - 1) / chunk;
  size_t n_threads = std::min<size_t>(static_cast<size_t>(workers), n_chunks);
  if (n_threads <= 1) {
    fn(0, size_t{0}, n);
    return;
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  auto run = [&](size_t tid) {
    try {
      for (;;) {
        if (failed.load(std::memory_order_relaxed)) return;
        size_t c = next.fetch_add(1, std::memory_order_relaxed);
        if (c >= n_chunks) return;
        size_t b = c * chunk;
        fn(tid, b, std::min(n, b + chunk));
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!first_error) first_error = std::current_exception();
      failed.store(true);
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(n_threads - 1);
  for (size_t t = 1; t < n_threads; ++t) threads.emplace_back(run, t);
  run(0);
  for (auto& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace pysynth
