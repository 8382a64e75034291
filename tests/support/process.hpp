// Test support: run a program (usually the built `keel`) and capture what it did.
// Used by CLI tests of every module. Not part of the library.
//
// No test can hang on a child: the child starts in a process group of its own (with every
// process it starts, e.g. the ranks of `keel comm launch`); when the deadline passes, or when
// the child has exited but something it left behind still holds the output pipes for 2 s,
// the whole group gets SIGKILL.
#pragma once

#include <string>
#include <vector>

namespace keel::test {

struct process_result {
  int exit_code = -1;      // the exit status, or 128 + signal number when killed by a signal
  std::string out;         // everything written to stdout
  std::string err;         // everything written to stderr
  bool timed_out = false;  // the deadline passed and the process group was killed
  double seconds = 0;      // wall time until the child was reaped
};

constexpr double k_default_deadline_seconds = 600;

// Runs argv[0] (a path) with the given arguments, stdin from /dev/null, and waits for it,
// at most `seconds`.
process_result run_process(const std::vector<std::string>& argv,
                           double seconds = k_default_deadline_seconds);

// Runs the `keel` executable of this build tree with the given arguments.
process_result run_keel(const std::vector<std::string>& args,
                        double seconds = k_default_deadline_seconds);

// Counts '\n'-terminated lines (a final unterminated line counts too).
int count_lines(const std::string& text);

}  // namespace keel::test
