// input_file — the one way keel reads a file that a user names (a trace, a model, a table).
//
// A user-named path may be anything: /dev/zero (endless), a FIFO nobody writes to (open()
// would block forever), /proc/self/mem (refuses every read), a directory, a sparse 1 TiB file.
// The functions below open the path with O_NONBLOCK (so no open() blocks), fstat it before a
// single byte is read, accept only a regular file unless the caller asked for more ("-" for
// standard input, a FIFO or pipe), then clear O_NONBLOCK and read. At most max_bytes are
// read (KEEL_MAX_INPUT_BYTES, default 8 GiB): a larger regular file is refused before
// reading, a stream that goes on past the limit is refused once it crosses it. Every
// failure is a keel::io_error whose one-line message starts with the path and, when the
// operating system said why, ends with strerror(errno) ("t.jsonl: no such file or
// directory", "/dev/zero: not a regular file (a character device)", "/proc/self/mem: read
// failed: Input/output error"). The functions keep no state and are thread-safe; the stream
// of open_input_file belongs to its caller.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <string>

namespace keel {

// The input limit when KEEL_MAX_INPUT_BYTES is not set.
inline constexpr std::uint64_t k_default_max_input_bytes = std::uint64_t{8} << 30;

struct input_options {
  bool allow_stdin = false;     // "-" names standard input (whatever it is, but a directory)
  bool allow_pipe = false;      // a FIFO or pipe is accepted besides a regular file
  std::uint64_t max_bytes = 0;  // 0: max_input_bytes()
};

// KEEL_MAX_INPUT_BYTES as a size (parse_size syntax: "512MiB", "8G"), or 8 GiB when unset or
// empty. Read on every call. Throws keel::invalid_argument naming the variable when the value
// is malformed or 0.
std::uint64_t max_input_bytes();

// Reads the whole input. Throws keel::io_error as described above (and invalid_argument for a
// bad KEEL_MAX_INPUT_BYTES).
std::string read_input_file(const std::string& path, const input_options& options = {});

// Opens the input for reading as a stream, after the same checks as read_input_file. The
// stream has exceptions(badbit) set: a failed read, or the input going past the limit, throws
// keel::io_error out of the read that met it (no silent end of file).
std::unique_ptr<std::istream> open_input_file(const std::string& path,
                                              const input_options& options = {});

// The checks of open_input_file plus a read of the first byte (a /proc file that refuses
// reads fails here), for inputs that a reader outside keel's control opens by path later.
// Throws what open_input_file throws.
void check_input_file(const std::string& path, const input_options& options = {});

}  // namespace keel
