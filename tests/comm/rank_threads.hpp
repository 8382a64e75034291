// Test helper: run `size` ranks as threads over one memory_store; collect what each threw.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include "keel/comm/communicator.hpp"

namespace keel::comm::test {

// Options for tests among threads: a 20 s timeout, no tuning measurements.
inline options quick_options() {
  options o;
  o.timeout = std::chrono::seconds(20);
  o.tune = false;
  return o;
}

inline std::vector<std::exception_ptr> run_ranks(int size, const options& opts,
                                                 const std::function<void(communicator&)>& body) {
  memory_store store;
  std::vector<std::exception_ptr> errors(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        communicator c(store, r, size, opts);
        body(c);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

inline void rethrow_first(const std::vector<std::exception_ptr>& errors) {
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace keel::comm::test
