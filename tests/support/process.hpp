// Test support: run a program (usually the built `keel`) and capture what it did.
// Used by CLI tests of every module. Not part of the library.
#pragma once

#include <string>
#include <vector>

namespace keel::test {

struct process_result {
  int exit_code = -1;   // the exit status, or 128 + signal number when killed by a signal
  std::string out;      // everything written to stdout
  std::string err;      // everything written to stderr
};

// Runs argv[0] (a path) with the given arguments, stdin from /dev/null, and waits for it.
process_result run_process(const std::vector<std::string>& argv);

// Runs the `keel` executable of this build tree with the given arguments.
process_result run_keel(const std::vector<std::string>& args);

// Counts '\n'-terminated lines (a final unterminated line counts too).
int count_lines(const std::string& text);

}  // namespace keel::test
