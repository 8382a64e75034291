// keel::error — the exception hierarchy every keel API throws.
//
// Every exception keel throws derives from keel::error, so `catch (const keel::error&)`
// catches them all, and also from exactly one standard exception class, so
// `catch (const std::exception&)` works unambiguously: invalid_argument is a
// std::invalid_argument, out_of_memory a std::bad_alloc, the others std::runtime_error.
// Expected outcomes (no free block, cache miss) are not exceptions; they are return values.
// Error objects are immutable after construction and safe to copy between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>

namespace keel {

// Root of the hierarchy. what() is the full one-line message.
class error {
 public:
  virtual ~error() = default;
  virtual const char* what() const noexcept = 0;
};

namespace detail {
// Binds a standard exception class to keel::error: one what() serves both bases.
template <class Std>
class error_of : public Std, public error {
 public:
  explicit error_of(const std::string& message) : Std(message) {}
  const char* what() const noexcept override { return Std::what(); }
};
}  // namespace detail

// A caller passed a value outside the documented domain (bad size string, unknown config
// key, out-of-range option). The message names the offending value and what is allowed.
class invalid_argument : public detail::error_of<std::invalid_argument> {
 public:
  using error_of::error_of;
};

// A file or stream could not be opened, read or written. The message names the path.
class io_error : public detail::error_of<std::runtime_error> {
 public:
  using error_of::error_of;
};

// Malformed input: a source (file name or "<string>"), a 1-based line and column for text,
// or a byte offset for binary input, and a message.
class parse_error : public detail::error_of<std::runtime_error> {
 public:
  // Text input: "source:line:column: message".
  parse_error(const std::string& source, std::size_t line, std::size_t column,
              const std::string& message);
  // Text input held whole: the line and column of byte `offset` of `text`.
  static parse_error in_text(const std::string& source, std::string_view text, std::size_t offset,
                             const std::string& message);
  // Binary input: "source: byte OFFSET: message".
  static parse_error at_offset(const std::string& source, std::uint64_t offset,
                               const std::string& message);
  // An in-memory object (no bytes or lines to point at): "source: message".
  static parse_error in_object(const std::string& source, const std::string& message);

  const std::string& source() const noexcept { return source_; }
  std::size_t line() const noexcept { return line_; }        // 0 for binary input
  std::size_t column() const noexcept { return column_; }    // 0 for binary input
  std::uint64_t offset() const noexcept { return offset_; }  // 0 for text input
  const std::string& message() const noexcept { return message_; }

 private:
  parse_error(const std::string& what, const std::string& source, std::size_t line,
              std::size_t column, std::uint64_t offset, const std::string& message);
  std::string source_;
  std::size_t line_ = 0;
  std::size_t column_ = 0;
  std::uint64_t offset_ = 0;
  std::string message_;
};

// A device, driver or operating-system primitive failed (cudaMalloc returned an unexpected
// error, mmap failed for a reason other than lack of memory, a socket broke).
class backend_error : public detail::error_of<std::runtime_error> {
 public:
  using error_of::error_of;
};

// A memory request could not be satisfied. Derives from std::bad_alloc so that code written
// against operator new handles it; what() carries the full explanation.
class out_of_memory : public std::bad_alloc, public error {
 public:
  explicit out_of_memory(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

}  // namespace keel
