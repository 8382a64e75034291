#include "keel/core/input_file.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <streambuf>

#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"

namespace keel {
namespace {

constexpr const char* k_limit_variable = "KEEL_MAX_INPUT_BYTES";

// strerror with a lower-case first letter, to follow "PATH: " in a message.
std::string reason(int err) {
  std::string text = std::strerror(err);
  if (!text.empty() && std::isupper(static_cast<unsigned char>(text[0])) != 0 &&
      (text.size() < 2 || std::islower(static_cast<unsigned char>(text[1])) != 0)) {
    text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  }
  return text;
}

std::string kind_of(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO or pipe";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

std::string limit_text(std::uint64_t limit) {
  return fmt::format("the input limit of {} ({})", format_size_exact(limit), k_limit_variable);
}

// An open descriptor that passed the checks; closes itself.
class checked_fd {
 public:
  checked_fd(const std::string& path, const input_options& options)
      : name_(path), limit_(options.max_bytes != 0 ? options.max_bytes : max_input_bytes()) {
    const bool is_stdin = options.allow_stdin && path == "-";
    if (is_stdin) {
      name_ = "<stdin>";
      fd_ = ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0);
      if (fd_ < 0) throw io_error(fmt::format("{}: {}", name_, reason(errno)));
    } else {
      // O_NONBLOCK: opening a FIFO without a writer (or a device that waits) returns at once.
      do {
        fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
      } while (fd_ < 0 && errno == EINTR);
      if (fd_ < 0) throw io_error(fmt::format("{}: {}", name_, reason(errno)));
    }
    try {
      struct stat st {};
      if (::fstat(fd_, &st) != 0) throw io_error(fmt::format("{}: {}", name_, reason(errno)));
      if (S_ISDIR(st.st_mode)) {
        throw io_error(fmt::format("{}: is a directory, expected a file", name_));
      }
      if (S_ISREG(st.st_mode)) {
        regular_ = true;
        size_ = static_cast<std::uint64_t>(st.st_size);
        if (size_ > limit_) {
          throw io_error(fmt::format("{}: {} bytes exceed {}", name_, size_, limit_text(limit_)));
        }
      } else if (!is_stdin && !(options.allow_pipe && S_ISFIFO(st.st_mode))) {
        throw io_error(fmt::format("{}: not a regular file ({})", name_, kind_of(st.st_mode)));
      }
      if (!is_stdin) {
        const int flags = ::fcntl(fd_, F_GETFL);
        if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK) != 0) {
          throw io_error(fmt::format("{}: {}", name_, reason(errno)));
        }
      }
    } catch (...) {
      ::close(fd_);
      throw;
    }
  }
  ~checked_fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  checked_fd(const checked_fd&) = delete;
  checked_fd& operator=(const checked_fd&) = delete;

  // Up to n bytes (0 at the end); throws io_error on a failed read or past the limit.
  std::size_t read(char* out, std::size_t n) {
    while (true) {
      const ssize_t got = ::read(fd_, out, n);
      if (got >= 0) {
        total_ += static_cast<std::uint64_t>(got);
        if (total_ > limit_) {
          throw io_error(
              fmt::format("{}: more than {} bytes, {}", name_, limit_, limit_text(limit_)));
        }
        return static_cast<std::size_t>(got);
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {  // an inherited non-blocking stdin
        pollfd p{fd_, POLLIN, 0};
        ::poll(&p, 1, -1);
        continue;
      }
      throw io_error(fmt::format("{}: read failed: {}", name_, std::strerror(errno)));
    }
  }

  bool regular() const noexcept { return regular_; }
  std::uint64_t size() const noexcept { return size_; }
  std::uint64_t limit() const noexcept { return limit_; }

 private:
  std::string name_;
  std::uint64_t limit_;
  int fd_ = -1;
  bool regular_ = false;
  std::uint64_t size_ = 0;
  std::uint64_t total_ = 0;
};

class input_buf final : public std::streambuf {
 public:
  explicit input_buf(std::unique_ptr<checked_fd> fd) : fd_(std::move(fd)) {}

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    const std::size_t n = fd_->read(buffer_.data(), buffer_.size());
    if (n == 0) return traits_type::eof();
    setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  std::unique_ptr<checked_fd> fd_;
  std::array<char, 64 * k_kib> buffer_{};
};

class input_stream final : public std::istream {
 public:
  explicit input_stream(std::unique_ptr<checked_fd> fd)
      : std::istream(nullptr), buf_(std::move(fd)) {
    rdbuf(&buf_);
    exceptions(std::ios::badbit);
  }

 private:
  input_buf buf_;
};

}  // namespace

std::uint64_t max_input_bytes() {
  const char* text = std::getenv(k_limit_variable);
  if (text == nullptr || *text == '\0') return k_default_max_input_bytes;
  std::uint64_t bytes = 0;
  try {
    bytes = parse_size(text);
  } catch (const invalid_argument& e) {
    throw invalid_argument(fmt::format("{}: {}", k_limit_variable, e.what()));
  }
  if (bytes == 0)
    throw invalid_argument(fmt::format("{}: must be larger than 0", k_limit_variable));
  return bytes;
}

std::string read_input_file(const std::string& path, const input_options& options) {
  checked_fd fd(path, options);
  std::string data;
  // A regular file's size is known (and within the limit); /proc files say 0 and stream.
  std::size_t capacity = fd.regular() && fd.size() > 0 ? static_cast<std::size_t>(fd.size()) + 1
                                                       : std::size_t{64} * 1024;
  data.resize(capacity);
  std::size_t used = 0;
  while (true) {
    if (used == data.size()) data.resize(data.size() * 2);
    const std::size_t got = fd.read(data.data() + used, data.size() - used);
    if (got == 0) break;
    used += got;
  }
  data.resize(used);
  return data;
}

std::unique_ptr<std::istream> open_input_file(const std::string& path,
                                              const input_options& options) {
  return std::make_unique<input_stream>(std::make_unique<checked_fd>(path, options));
}

void check_input_file(const std::string& path, const input_options& options) {
  checked_fd fd(path, options);
  if (fd.regular()) {
    char byte = 0;
    fd.read(&byte, 1);  // a /proc file that refuses reads (/proc/self/mem) fails here
  }
}

}  // namespace keel
