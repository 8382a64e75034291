// output_file — the one way keel writes a file that a user names (a chart, a report, a table).
//
// The data goes to a new temporary file in the target's directory (".NAME.keel-tmp.PID.N",
// created with O_EXCL, mode 0666 less the umask, or the mode of the file it replaces), which
// commit() flushes, fsyncs, closes and renames over the target in one step. So the target is
// never truncated in place: it holds either its old contents or the whole new file, a full
// disk leaves no 0-byte or half file behind, and two writers of one path each rename a
// complete file (the last one wins). An output_file destroyed without commit() (an exception
// while writing) removes its temporary. A path that names something other than a regular
// file — a character device such as /dev/null or /dev/full, a FIFO, anything under /dev/ or
// /proc/ (/dev/stdout) — is written in place, as a shell redirection would; "-" is standard
// output. A symbolic link is followed: the file it points to is replaced (or created), the
// link stays.
// Every failure is a keel::io_error naming the path and ending with strerror(errno)
// ("out.svg: write failed: No space left on device"). One output_file belongs to one thread.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

namespace keel {

class output_file {
 public:
  // Creates the temporary (or opens the special file). Throws keel::io_error: a directory,
  // a missing or unwritable parent directory, a FIFO without a reader.
  explicit output_file(std::string path);
  ~output_file();  // without commit(): removes the temporary; never throws
  output_file(const output_file&) = delete;
  output_file& operator=(const output_file&) = delete;

  // Where to write. A write that fails sets badbit and remembers why (see check()).
  std::ostream& stream();
  // Throws keel::io_error when a write has already failed: long writers call it between
  // chunks so that /dev/full stops them at once.
  void check() const;
  // Publishes the file: flush, fsync, close, rename over the target. Throws keel::io_error
  // (and removes the temporary) when any of them fails. Call it once.
  void commit();

  const std::string& path() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// Writes `contents` to `path` through an output_file.
void write_output_file(const std::string& path, std::string_view contents);
// Calls write(stream) and commits; an exception from `write` leaves the target untouched.
void write_output_file(const std::string& path, const std::function<void(std::ostream&)>& write);

}  // namespace keel
