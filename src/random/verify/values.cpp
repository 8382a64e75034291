#include "keel/random/values.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <ostream>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/core/output_file.hpp"
#include "keel/random/generator_config.hpp"

namespace keel::random {

value_format parse_value_format(std::string_view name) {
  if (name == "txt") return value_format::txt;
  if (name == "bin") return value_format::bin;
  if (name == "npy") return value_format::npy;
  throw invalid_argument(fmt::format("unknown format '{}': expected txt, bin or npy", name));
}

std::size_t value_chunk(std::uint32_t dimensions) {
  return (std::size_t{1} << 22) / dimensions * dimensions;
}

void write_values(std::ostream& os, const value_layout& layout, const value_source& next,
                  const std::function<void()>& after_chunk) {
  const std::size_t vs = value_size(layout.dist);
  const bool integer = layout.dist == distribution::raw || layout.dist == distribution::poisson;
  if (layout.format == value_format::npy) {
    const char* descr = vs == 8 ? "<f8" : integer ? "<u4" : "<f4";
    std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({},), }}",
                                     descr, layout.count);
    const std::size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header.push_back('\n');
    const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                                  static_cast<unsigned char>(header.size() >> 8)};
    os.write("\x93NUMPY\x01\x00", 8);
    os.write(reinterpret_cast<const char*>(len), 2);
    os.write(header.data(), static_cast<std::streamsize>(header.size()));
  }
  const std::size_t chunk = value_chunk(layout.dimensions);
  std::vector<unsigned char> bytes;
  for (std::size_t done = 0; done < layout.count;) {
    const std::size_t n = std::min(chunk, layout.count - done);
    bytes.resize(n * vs);
    next(bytes.data(), n);
    done += n;
    if (layout.format != value_format::txt) {
      os.write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    } else {
      std::string text;
      for (std::size_t i = 0; i < n; ++i) {
        const unsigned char* p = bytes.data() + i * vs;
        if (vs == 8) {
          double v;
          std::memcpy(&v, p, 8);
          text += fmt::format("{:.17g}\n", v);
        } else if (integer) {
          std::uint32_t v;
          std::memcpy(&v, p, 4);
          text += fmt::format("{}\n", v);
        } else {
          float v;
          std::memcpy(&v, p, 4);
          text += fmt::format("{:.9g}\n", v);
        }
      }
      os << text;
    }
    if (after_chunk) after_chunk();
  }
}

void write_values(const std::string& path, const value_layout& layout, const value_source& next) {
  std::optional<output_file> file;
  std::ostream* os = &std::cout;
  if (!path.empty()) {
    file.emplace(path);
    os = &file->stream();
  }
  const auto check_written = [&] {
    if (file) return file->check();
    if (!*os) throw io_error(fmt::format("write to stdout failed: {}", std::strerror(errno)));
  };
  write_values(*os, layout, next, check_written);
  if (file) return file->commit();
  os->flush();
  check_written();
}

void write_random_values(distribution dist, const values_request& request) {
  const rng_type type = parse_rng_type(request.generator);
  generator g(type);
  g.set_threads(request.threads);
  const ordering order = parse_ordering(request.ordering);
  if (order != ordering::pseudo_default) check_status(g.set_ordering(order), "set ordering");
  if (is_quasi(type)) {
    if (request.seed)
      throw invalid_argument(request.generator + " is quasi-random and takes no --seed");
    check_status(g.set_dimensions(request.dimensions), "set dimensions");
    if (request.count % request.dimensions != 0) {
      throw invalid_argument(fmt::format("--count {} is not a multiple of --dimensions {}",
                                         request.count, request.dimensions));
    }
  } else {
    if (request.dimensions != 1)
      check_status(g.set_dimensions(request.dimensions), "set dimensions");
    check_status(g.set_seed(request.seed.value_or(0)), "set seed");
  }
  // Only when asked: MT19937 refuses any offset (as libcurand), even 0.
  if (request.offset != 0) check_status(g.set_offset(request.offset), "set offset");
  value_layout layout;
  layout.dist = dist;
  layout.count = request.count;
  layout.dimensions = request.dimensions;
  layout.format = parse_value_format(request.format);
  write_values(request.out, layout, [&](unsigned char* out, std::size_t n) {
    check_status(generate(g, dist, out, n, request.params), "generate");
  });
}

}  // namespace keel::random
