// Test support: the message of the keel::invalid_argument a call throws ("" when it throws
// none), for tests that compare a library's messages with the CLI's. Not part of the library.
#pragma once

#include <string>

#include "keel/core/error.hpp"

namespace keel::test {

std::string message_of(const auto& f) {
  try {
    f();
  } catch (const keel::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace keel::test
