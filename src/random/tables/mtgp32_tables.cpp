#include "keel/random/mtgp32_tables.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "keel/core/error.hpp"
#include "toolkit_data.hpp"

namespace keel::random {

namespace {

constexpr const char* k_header_name = "curand_mtgp32dc_p_11213.h";
constexpr const char* k_array_name = "mtgp32dc_params_fast_11213";
constexpr const char* k_hint =
    "set KEEL_MTGP32_PARAMS to a file written by `keel rand export-tables --mtgp32`, or "
    "KEEL_CUDA_INCLUDE_DIR to the CUDA toolkit's include directory";

// Checks one set; `where` gives the location for the message.
template <class Where>
void validate(const mtgp32_params& p, long long mexp, Where&& where) {
  if (mexp != k_mtgp32_mexp)
    where(fmt::format("Mersenne exponent {}, expected {}", mexp, k_mtgp32_mexp));
  if (p.pos < 1 || p.pos > k_mtgp32_n - k_mtgp32_threads)
    where(fmt::format("pos {} outside 1..{}", p.pos, k_mtgp32_n - k_mtgp32_threads));
  if (p.sh1 < 1 || p.sh1 > 31 || p.sh2 < 1 || p.sh2 > 31)
    where(fmt::format("shifts {} {} outside 1..31", p.sh1, p.sh2));
  if (p.mask != k_mtgp32_mask)
    where(fmt::format("mask {:08x}, expected {:08x}", p.mask, k_mtgp32_mask));
  for (int i = 0; i < 16; ++i) {
    std::uint32_t t = 0, m = 0;
    for (int k = 0; k < 4; ++k)
      if (i >> k & 1) {
        t ^= p.tbl[1 << k];
        m ^= p.tmp_tbl[1 << k];
      }
    if (p.tbl[i] != t) where(fmt::format("tbl[{}] is not the sum of its index bits' entries", i));
    if (p.tmp_tbl[i] != m)
      where(fmt::format("tmp_tbl[{}] is not the sum of its index bits' entries", i));
    if (p.flt_tmp_tbl[i] != ((p.tmp_tbl[i] >> 9) | 0x3f800000u))
      where(fmt::format("flt_tmp_tbl[{}] is not (tmp_tbl[{}] >> 9) | 0x3f800000", i, i));
  }
}

// ---- the CUDA header: a C initializer of nested braces and integer literals -----------------

struct node {
  bool list = false;
  unsigned long long value = 0;
  std::vector<node> items;
  std::size_t at = 0;  // offset in the text
};

class initializer_parser {
 public:
  initializer_parser(std::string text, const std::string& source)
      : text_(std::move(text)), source_(source) {}

  // Blanks out comments and preprocessor lines (keeping newlines, so positions stay right) and
  // returns the initializer of `name`.
  node parse(const char* name) {
    strip();
    std::size_t at = text_.find(name);
    if (at == std::string::npos) fail(0, fmt::format("no array '{}'", name));
    at = text_.find('=', at);
    if (at == std::string::npos) fail(text_.size(), fmt::format("no initializer for '{}'", name));
    i_ = at + 1;
    skip();
    if (peek() != '{') fail(i_, "expected '{'");
    return value();
  }

  [[noreturn]] void fail(std::size_t at, const std::string& message) const {
    throw parse_error::in_text(source_, text_, at, message);
  }

 private:
  void strip() {
    bool line_start = true;
    for (std::size_t k = 0; k < text_.size(); ++k) {
      const char c = text_[k];
      if (c == '/' && k + 1 < text_.size() && text_[k + 1] == '*') {
        const std::size_t end = text_.find("*/", k + 2);
        const std::size_t stop = end == std::string::npos ? text_.size() : end + 2;
        for (; k < stop; ++k)
          if (text_[k] != '\n') text_[k] = ' ';
        --k;
      } else if ((c == '/' && k + 1 < text_.size() && text_[k + 1] == '/') ||
                 (c == '#' && line_start)) {
        for (; k < text_.size() && text_[k] != '\n'; ++k) text_[k] = ' ';
        line_start = true;
        continue;
      }
      if (c == '\n')
        line_start = true;
      else if (!std::isspace(static_cast<unsigned char>(c)))
        line_start = false;
    }
  }
  void skip() {
    while (i_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[i_]))) ++i_;
  }
  char peek() const { return i_ < text_.size() ? text_[i_] : '\0'; }

  node value(int depth = 0) {
    skip();
    node n;
    n.at = i_;
    if (peek() == '{') {
      if (depth > 2) fail(i_, "braces nested deeper than a table of parameter sets");
      n.list = true;
      ++i_;
      for (;;) {
        skip();
        if (peek() == '}') break;
        n.items.push_back(value(depth + 1));
        skip();
        if (peek() == ',') {
          ++i_;
          continue;
        }
        if (peek() != '}') fail(i_, "expected ',' or '}'");
      }
      ++i_;
      return n;
    }
    int parens = 0;
    while (peek() == '(') {
      ++parens;
      ++i_;
      skip();
    }
    const char* begin = text_.c_str() + i_;
    char* end = nullptr;
    if (!std::isdigit(static_cast<unsigned char>(peek()))) fail(i_, "expected an integer");
    n.value = std::strtoull(begin, &end, 0);
    i_ += static_cast<std::size_t>(end - begin);
    while (peek() == 'u' || peek() == 'U' || peek() == 'l' || peek() == 'L') ++i_;
    for (; parens > 0; --parens) {
      skip();
      if (peek() != ')') fail(i_, "expected ')'");
      ++i_;
    }
    return n;
  }

  std::string text_;
  std::string source_;
  std::size_t i_ = 0;
};

}  // namespace

mtgp32_tables parse_mtgp32_cuda_header(std::istream& in, const std::string& source) {
  initializer_parser parser(detail::slurp(in), source);
  const node root = parser.parse(k_array_name);
  mtgp32_tables t;
  t.source = source;
  // Each element: {mexp, pos, sh1, sh2, {tbl x16}, {tmp_tbl x16}, {flt_tmp_tbl x16}, mask,
  // {SHA-1 digest x21}}.
  for (const node& set : root.items) {
    auto scalar = [&](std::size_t k) {
      if (k >= set.items.size() || set.items[k].list)
        parser.fail(set.at, fmt::format("element {} is not an integer", k));
      return set.items[k].value;
    };
    auto words = [&](std::size_t k, std::uint32_t* out) {
      if (k >= set.items.size() || !set.items[k].list || set.items[k].items.size() != 16)
        parser.fail(set.at, fmt::format("element {} is not a list of 16 words", k));
      for (std::size_t j = 0; j < 16; ++j) {
        if (set.items[k].items[j].list) parser.fail(set.items[k].items[j].at, "expected a word");
        out[j] = static_cast<std::uint32_t>(set.items[k].items[j].value);
      }
    };
    if (!set.list || set.items.size() != 9) parser.fail(set.at, "a parameter set has 9 elements");
    mtgp32_params p;
    const auto mexp = static_cast<long long>(scalar(0));
    p.pos = static_cast<int>(scalar(1));
    p.sh1 = static_cast<int>(scalar(2));
    p.sh2 = static_cast<int>(scalar(3));
    words(4, p.tbl);
    words(5, p.tmp_tbl);
    words(6, p.flt_tmp_tbl);
    p.mask = static_cast<std::uint32_t>(scalar(7));
    validate(p, mexp, [&](const std::string& m) {
      parser.fail(set.at, fmt::format("parameter set {}: {}", t.sets.size(), m));
    });
    t.sets.push_back(p);
  }
  if (t.sets.size() != static_cast<std::size_t>(k_mtgp32_param_sets))
    parser.fail(root.at,
                fmt::format("{} parameter sets, expected {}", t.sets.size(), k_mtgp32_param_sets));
  return t;
}

mtgp32_tables read_mtgp32_tables(std::istream& in, const std::string& source) {
  mtgp32_tables t;
  t.source = source;
  const std::size_t lines = detail::for_each_data_line(in, [&](const detail::data_line& l) {
    const auto& f = l.fields;
    if (f.size() != 53)
      throw parse_error(
          source, l.number, 1,
          fmt::format("{} fields, expected 53 (see keel/random/mtgp32_tables.hpp)", f.size()));
    auto number = [&](std::size_t k, int base) {
      const char* s = f[k].c_str();
      char* end = nullptr;
      errno = 0;
      const unsigned long long v = std::strtoull(s, &end, base);
      if (*s == '-' || *end != '\0' || errno != 0 || (base == 16 && v > 0xffffffffull) ||
          (base == 10 && v > 1u << 20))
        throw parse_error(source, l.number, l.columns[k],
                          fmt::format("field {} '{}' is not a {} number", k + 1, f[k],
                                      base == 16 ? "hexadecimal 32-bit" : "decimal"));
      return v;
    };
    mtgp32_params p;
    const auto mexp = static_cast<long long>(number(0, 10));
    p.pos = static_cast<int>(number(1, 10));
    p.sh1 = static_cast<int>(number(2, 10));
    p.sh2 = static_cast<int>(number(3, 10));
    p.mask = static_cast<std::uint32_t>(number(4, 16));
    for (int j = 0; j < 16; ++j) {
      p.tbl[j] = static_cast<std::uint32_t>(number(5 + j, 16));
      p.tmp_tbl[j] = static_cast<std::uint32_t>(number(21 + j, 16));
      p.flt_tmp_tbl[j] = static_cast<std::uint32_t>(number(37 + j, 16));
    }
    validate(p, mexp, [&](const std::string& m) { throw parse_error(source, l.number, 1, m); });
    t.sets.push_back(p);
  });
  if (t.sets.size() != static_cast<std::size_t>(k_mtgp32_param_sets))
    throw parse_error(
        source, lines, 1,
        fmt::format("{} parameter sets, expected {}", t.sets.size(), k_mtgp32_param_sets));
  return t;
}

void write_mtgp32_tables(std::ostream& out, const mtgp32_tables& tables) {
  out << "# keel mtgp32 parameter sets (exponent " << k_mtgp32_mexp << "), read from "
      << tables.source << "\n"
      << "# mexp pos sh1 sh2 mask tbl[16] tmp_tbl[16] flt_tmp_tbl[16]; format: "
         "keel/random/mtgp32_tables.hpp\n";
  for (const auto& p : tables.sets) {
    std::string line =
        fmt::format("{} {} {} {} {:08x}", k_mtgp32_mexp, p.pos, p.sh1, p.sh2, p.mask);
    for (const auto* tbl : {p.tbl, p.tmp_tbl, p.flt_tmp_tbl})
      for (int j = 0; j < 16; ++j) line += fmt::format(" {:08x}", tbl[j]);
    out << line << '\n';
  }
  out.flush();
  if (!out) throw io_error("writing the mtgp32 parameter sets failed");
}

mtgp32_table_lookup find_mtgp32_tables() {
  return detail::find_toolkit_data<mtgp32_table_lookup>(
      "KEEL_MTGP32_PARAMS", "mtgp32 parameter sets", "",
      detail::text_file(
          [](std::istream& in, const std::string& path) { return read_mtgp32_tables(in, path); }),
      detail::toolkit_header(k_header_name, k_hint, [](std::istream& in, const std::string& path) {
        return parse_mtgp32_cuda_header(in, path);
      }));
}

const mtgp32_table_lookup& mtgp32_default_tables() {
  static const mtgp32_table_lookup lookup = find_mtgp32_tables();
  return lookup;
}

}  // namespace keel::random
