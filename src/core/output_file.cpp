#include "keel/core/output_file.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <streambuf>
#include <vector>

#include "keel/core/bytes.hpp"
#include "keel/core/error.hpp"

namespace keel {
namespace {

std::atomic<unsigned> g_counter{0};

// strerror with a lower-case first letter, to follow "PATH: " in a message.
std::string reason(int err) {
  std::string text = std::strerror(err);
  if (text.size() >= 2 && std::isupper(static_cast<unsigned char>(text[0])) != 0 &&
      std::islower(static_cast<unsigned char>(text[1])) != 0) {
    text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  }
  return text;
}

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// Writes all of [data, data + n) to fd; returns 0 or the errno of the failure.
int write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t put = ::write(fd, data, n);
    if (put > 0) {
      data += put;
      n -= static_cast<std::size_t>(put);
      continue;
    }
    if (put < 0 && errno == EINTR) continue;
    if (put < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // an inherited non-blocking fd
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    return put < 0 ? errno : EIO;
  }
  return 0;
}

class output_buf final : public std::streambuf {
 public:
  output_buf() : buffer_(256 * k_kib) { setp(buffer_.data(), buffer_.data() + buffer_.size()); }
  void attach(int fd) noexcept { fd_ = fd; }
  int error() const noexcept { return error_; }

  // Writes what is buffered; false (and error() set) when a write failed.
  bool drain() {
    if (error_ != 0) return false;
    const auto n = static_cast<std::size_t>(pptr() - pbase());
    if (n > 0) error_ = write_all(fd_, pbase(), n);
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return error_ == 0;
  }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (error_ != 0) return 0;
    if (n < static_cast<std::streamsize>(epptr() - pptr())) {
      std::memcpy(pptr(), s, static_cast<std::size_t>(n));
      pbump(static_cast<int>(n));
      return n;
    }
    if (!drain()) return 0;
    error_ = write_all(fd_, s, static_cast<std::size_t>(n));
    return error_ == 0 ? n : 0;
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  std::vector<char> buffer_;
  int fd_ = -1;
  int error_ = 0;
};

}  // namespace

struct output_file::impl {
  std::string path;    // as given, for messages
  std::string target;  // what the temporary replaces (a symbolic link resolved)
  std::string temp;    // empty: written in place
  int fd = -1;
  bool done = false;
  output_buf buf;
  std::ostream stream{&buf};

  [[noreturn]] void fail(const std::string& message) {
    discard();
    throw io_error(message);
  }
  void discard() noexcept {
    if (fd >= 0) ::close(fd);
    fd = -1;
    if (!temp.empty()) ::unlink(temp.c_str());
    done = true;
  }
  void open_in_place(const std::string& file) {
    do {
      fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
                  0666);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0 && errno == ENXIO) throw io_error(fmt::format("{}: a FIFO with no reader", path));
    if (fd < 0) throw io_error(fmt::format("{}: {}", path, reason(errno)));
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  }
  void open_temporary(const struct stat* existing) {
    namespace fs = std::filesystem;
    const fs::path t(target);
    std::string dir = t.parent_path().string();
    if (dir.empty()) dir = ".";
    std::string base = t.filename().string();
    if (base.size() > 180) base.resize(180);  // room for the suffix within NAME_MAX
    for (int attempt = 0; attempt < 100; ++attempt) {
      temp = fmt::format("{}/.{}.keel-tmp.{}.{}", dir, base, ::getpid(), g_counter++);
      fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666);
      if (fd >= 0) break;
      if (errno == EINTR || errno == EEXIST) continue;
      const int err = errno;
      temp.clear();
      throw io_error(fmt::format("{}: cannot create a file in {}: {}", path, dir, reason(err)));
    }
    if (fd < 0) {
      temp.clear();
      throw io_error(fmt::format("{}: cannot create a temporary file in {}", path, dir));
    }
    if (existing != nullptr) (void)::fchmod(fd, existing->st_mode & 07777);
  }
};

output_file::output_file(std::string path) : impl_(std::make_unique<impl>()) {
  impl& m = *impl_;
  m.path = std::move(path);
  if (m.path.empty()) throw io_error("output path is empty");
  if (m.path == "-") {
    std::cout.flush();
    m.path = "<stdout>";
    m.fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
    if (m.fd < 0) throw io_error(fmt::format("{}: {}", m.path, reason(errno)));
  } else {
    struct stat st {};
    const bool exists = ::stat(m.path.c_str(), &st) == 0;
    if (!exists && errno != ENOENT) throw io_error(fmt::format("{}: {}", m.path, reason(errno)));
    if (exists && S_ISDIR(st.st_mode)) {
      throw io_error(fmt::format("{}: is a directory, expected a file", m.path));
    }
    // Devices, FIFOs and the /dev and /proc names of descriptors (/dev/stdout) are written in
    // place, as a shell redirection writes them: replacing them would be wrong.
    if ((exists && !S_ISREG(st.st_mode)) || starts_with(m.path, "/dev/") ||
        starts_with(m.path, "/proc/")) {
      m.open_in_place(m.path);
    } else {
      // Follow a chain of symbolic links to the file they name (which may not exist yet):
      // that file is replaced, the links stay.
      m.target = m.path;
      for (int hop = 0; hop < 40; ++hop) {
        struct stat link {};
        if (::lstat(m.target.c_str(), &link) != 0 || !S_ISLNK(link.st_mode)) break;
        std::error_code ec;
        const std::filesystem::path to = std::filesystem::read_symlink(m.target, ec);
        if (ec) throw io_error(fmt::format("{}: {}", m.path, reason(ec.value())));
        m.target = to.is_absolute() ? to.string()
                                    : (std::filesystem::path(m.target).parent_path() / to).string();
      }
      m.open_temporary(exists ? &st : nullptr);
    }
  }
  m.buf.attach(m.fd);
}

output_file::~output_file() {
  if (impl_ && !impl_->done) impl_->discard();
}

std::ostream& output_file::stream() { return impl_->stream; }

const std::string& output_file::path() const noexcept { return impl_->path; }

void output_file::check() const {
  if (impl_->buf.error() != 0) {
    throw io_error(
        fmt::format("{}: write failed: {}", impl_->path, std::strerror(impl_->buf.error())));
  }
}

void output_file::commit() {
  impl& m = *impl_;
  if (m.done) return;
  m.stream.flush();
  if (!m.buf.drain() || m.buf.error() != 0) {
    m.fail(fmt::format("{}: write failed: {}", m.path, std::strerror(m.buf.error())));
  }
  if (m.stream.bad()) m.fail(fmt::format("{}: write failed", m.path));
  if (!m.temp.empty() && ::fsync(m.fd) != 0 && errno != EINVAL && errno != EROFS) {
    m.fail(fmt::format("{}: write failed: {}", m.path, std::strerror(errno)));
  }
  const int fd = m.fd;
  m.fd = -1;
  if (::close(fd) != 0 && errno != EINTR) {
    m.fail(fmt::format("{}: write failed: {}", m.path, std::strerror(errno)));
  }
  if (!m.temp.empty() && ::rename(m.temp.c_str(), m.target.c_str()) != 0) {
    m.fail(fmt::format("{}: cannot replace it: {}", m.path, std::strerror(errno)));
  }
  m.done = true;
}

void write_output_file(const std::string& path, std::string_view contents) {
  output_file out(path);
  out.stream().write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.commit();
}

void write_output_file(const std::string& path, const std::function<void(std::ostream&)>& write) {
  output_file out(path);
  write(out.stream());
  out.commit();
}

}  // namespace keel
