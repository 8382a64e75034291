#include "keel/random/erfcinv_tables.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <istream>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "engines/normal_icdf.hpp"
#include "keel/core/error.hpp"
#include "toolkit_data.hpp"

namespace keel::random {

namespace {

constexpr const char* k_header_name = "crt/math_functions.hpp";
constexpr const char* k_hint =
    "set KEEL_ERFCINV_COEFFICIENTS to a file written by `keel rand export-tables --erfcinv`, or "
    "KEEL_CUDA_INCLUDE_DIR to the CUDA toolkit's include directory";
constexpr const char* k_fallback =
    "inverse-CDF double normals use keel's own erfcinv (within an ulp, not bit-exact with "
    "libcurand)";

// The polynomials by name.
template <class Tables>
auto polynomials(Tables& t) {
  using value = std::conditional_t<std::is_const_v<Tables>, const double, double>;
  return std::array<std::pair<const char*, std::span<value>>, 6>{{{"p18", t.p18},
                                                                  {"q18", t.q18},
                                                                  {"p39", t.p39},
                                                                  {"q39", t.q39},
                                                                  {"p59", t.p59},
                                                                  {"q59", t.q59}}};
}

// Each branch of the algorithm at a few points against keel's own erfcinv; `fail` reports.
template <class Fail>
void validate(const erfcinv_tables& t, Fail&& fail) {
  const detail::blair_coefficients b = detail::blair_from(t);
  // Table 18: a in (1/4, 7/4); 39: 1 - a in [0.75, 0.9375); 59: a = 1/16 and near 2 (log1p),
  // below 1/16 (log).
  for (const double a : {0.3, 0.5, 0.9, 1.2, 1.7, 0.2, 0.1, 1.8, 1.9, 0.0625, 1.95, 1.9999, 0.05,
                         1e-3, 1e-8, 0x1p-33, 1e-30}) {
    const double ours = detail::erfcinv_keel(a), theirs = detail::erfcinv_blair(b, a);
    if (!(std::fabs(theirs - ours) <= 1e-12 * std::fabs(ours)))
      fail(fmt::format(
          "the tables give erfcinv({}) = {}, expected {} (a wrong or misread coefficient?)", a,
          theirs, ours));
  }
}

// ---- crt/math_functions.hpp ------------------------------------------------------------------

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class header_parser {
 public:
  header_parser(std::string text, const std::string& source)
      : text_(std::move(text)), source_(source) {}

  // The [begin, end) of the body of `double name(...)`, braces included.
  std::pair<std::size_t, std::size_t> function_body(std::string_view name) {
    for (std::size_t at = text_.find(name); at != std::string::npos;
         at = text_.find(name, at + 1)) {
      if (at > 0 && identifier_char(text_[at - 1])) continue;
      std::size_t k = at + name.size();
      k = skip_space(k);
      if (k >= text_.size() || text_[k] != '(') continue;
      // The return type, `double`, right before the name.
      std::size_t r = at;
      while (r > 0 && std::isspace(static_cast<unsigned char>(text_[r - 1]))) --r;
      if (r < 6 || text_.compare(r - 6, 6, "double") != 0 ||
          (r > 6 && identifier_char(text_[r - 7])))
        continue;
      // Past the parameter list and any closing parentheses of a wrapping macro: a body, or a
      // declaration (';') to skip.
      const std::size_t close = text_.find(')', k);
      if (close == std::string::npos) break;
      k = close + 1;
      while (k < text_.size() &&
             (text_[k] == ')' || std::isspace(static_cast<unsigned char>(text_[k]))))
        ++k;
      if (k >= text_.size() || text_[k] != '{') continue;
      int depth = 0;
      for (std::size_t e = k; e < text_.size();) {
        if (const std::size_t past = skip_comment(e); past != e) {
          e = past;
          continue;
        }
        if (text_[e] == '{') ++depth;
        if (text_[e] == '}' && --depth == 0) return {k, e + 1};
        ++e;
      }
      fail(k, fmt::format("the body of {} does not end", name));
    }
    fail(0, fmt::format("no definition of 'double {}(...)'", name));
  }

  // The Horner lines after the comment that names "Table <number>" in [begin, end): p's
  // coefficients and q's (without the monic leading 1), from the constant term up.
  void table(std::pair<std::size_t, std::size_t> body, std::string_view function, int table_number,
             std::span<double> p, std::span<double> q) {
    const std::string label = fmt::format("Table {}", table_number);
    std::size_t at = body.first;
    for (;; at += label.size()) {
      at = text_.find(label, at);
      if (at == std::string::npos || at >= body.second)
        fail(body.first, fmt::format("no '{}' block in {}", label, function));
      if (at + label.size() >= text_.size() ||
          !std::isdigit(static_cast<unsigned char>(text_[at + label.size()])))
        break;
    }
    // The statements after the comment that holds the label.
    const std::size_t open = text_.rfind("/*", at), closed = text_.rfind("*/", at);
    const bool in_block =
        open != std::string::npos && (closed == std::string::npos || closed < open);
    const std::size_t end = in_block ? text_.find("*/", at) : text_.find('\n', at);
    if (end == std::string::npos)
      fail(at, fmt::format("the comment with '{}' does not end", label));
    const std::size_t start = i_ = end + (in_block ? 2 : 1);
    // p = [-]c | p = p * t (+|-) c | q = t (+|-) c | q = q * t (+|-) c, after any other
    // statements (t's computation) and up to the first other one or the end of the branch.
    std::vector<double> ps, qs;
    for (std::optional<std::vector<std::string>> s; (s = statement());) {
      // The coefficient c of the statement `head (+|-) c` (the sign optional where not required).
      auto is = [&](std::initializer_list<const char*> head,
                    bool sign_required) -> std::optional<double> {
        const std::vector<std::string>& t = *s;
        std::size_t k = 0;
        for (const char* h : head)
          if (k >= t.size() || t[k++] != h) return {};
        const bool sign = k < t.size() && (t[k] == "+" || t[k] == "-");
        if ((sign_required && !sign) || t.size() != k + (sign ? 2 : 1)) return {};
        std::optional<double> v = number(t.back());
        if (v && sign && t[k] == "-") v = -*v;
        return v;
      };
      std::optional<double> v;
      if ((ps.empty() && qs.empty() && (v = is({"p", "="}, false))) ||
          (!ps.empty() && qs.empty() && (v = is({"p", "=", "p", "*", "t"}, true))))
        ps.push_back(*v);
      else if ((!ps.empty() && qs.empty() && (v = is({"q", "=", "t"}, true))) ||
               (!qs.empty() && (v = is({"q", "=", "q", "*", "t"}, true))))
        qs.push_back(*v);
      else if (!ps.empty())
        break;
    }
    if (ps.size() != p.size() || qs.size() != q.size())
      fail(start,
           fmt::format("{} of {}: {} numerator and {} denominator coefficients, expected {} and {} "
                       "(lines 'p = p * t + c;' and 'q = q * t + c;')",
                       label, function, ps.size(), qs.size(), p.size(), q.size()));
    // The header goes from the highest coefficient down.
    for (std::size_t k = 0; k < p.size(); ++k) p[k] = ps[p.size() - 1 - k];
    for (std::size_t k = 0; k < q.size(); ++k) q[k] = qs[q.size() - 1 - k];
  }

  [[noreturn]] void fail(std::size_t at, const std::string& message) const {
    throw parse_error::in_text(source_, text_, at, message);
  }

 private:
  std::size_t skip_space(std::size_t k) const {
    while (k < text_.size() && std::isspace(static_cast<unsigned char>(text_[k]))) ++k;
    return k;
  }
  // Past a comment starting at k (k itself if none).
  std::size_t skip_comment(std::size_t k) const {
    if (text_.compare(k, 2, "/*") == 0) {
      const std::size_t e = text_.find("*/", k + 2);
      return e == std::string::npos ? text_.size() : e + 2;
    }
    if (text_.compare(k, 2, "//") == 0) {
      const std::size_t e = text_.find('\n', k);
      return e == std::string::npos ? text_.size() : e;
    }
    return k;
  }
  std::size_t skip(std::size_t k) const {
    for (std::size_t prev = std::string::npos; prev != k;) {
      prev = k;
      k = skip_comment(skip_space(k));
    }
    return k;
  }
  // The tokens of the statement at i_, through its ';'; nothing at a brace or the end.
  std::optional<std::vector<std::string>> statement() {
    std::vector<std::string> tokens;
    for (;;) {
      i_ = skip(i_);
      if (i_ >= text_.size() || text_[i_] == '{' || text_[i_] == '}') return std::nullopt;
      const char c = text_[i_];
      if (c == ';') {
        ++i_;
        return tokens;
      }
      std::size_t e = i_ + 1;
      if (identifier_char(c) || c == '.') {
        while (e < text_.size() && (identifier_char(text_[e]) || text_[e] == '.' ||
                                    ((text_[e] == '+' || text_[e] == '-') &&
                                     (text_[e - 1] == 'e' || text_[e - 1] == 'E') &&
                                     (std::isdigit(static_cast<unsigned char>(c)) || c == '.'))))
          ++e;
      }
      tokens.emplace_back(text_, i_, e - i_);
      i_ = e;
    }
  }
  // A decimal floating-point literal, or nothing.
  std::optional<double> number(const std::string& token) const {
    if (token.empty() || !(std::isdigit(static_cast<unsigned char>(token[0])) || token[0] == '.'))
      return {};
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(token.c_str(), &end);
    if (*end != '\0' || errno != 0 || !std::isfinite(v)) return {};
    return v;
  }

  std::string text_;
  std::string source_;
  std::size_t i_ = 0;
};

}  // namespace

erfcinv_tables parse_erfcinv_cuda_header(std::istream& in, const std::string& source) {
  header_parser parser(detail::slurp(in), source);
  erfcinv_tables t;
  t.source = source;
  const auto erfinv = parser.function_body("erfinv");
  parser.table(erfinv, "erfinv", 18, t.p18, t.q18);
  parser.table(erfinv, "erfinv", 39, t.p39, t.q39);
  parser.table(erfinv, "erfinv", 59, t.p59, t.q59);
  // erfcinv's own Table 59 (for a < 1/16) must be erfinv's.
  const auto erfcinv = parser.function_body("erfcinv");
  std::array<double, 11> p59;
  std::array<double, 10> q59;
  parser.table(erfcinv, "erfcinv", 59, p59, q59);
  if (p59 != t.p59 || q59 != t.q59)
    parser.fail(erfcinv.first, "erfcinv's Table 59 differs from erfinv's");
  validate(t, [&](const std::string& m) { parser.fail(erfinv.first, m); });
  return t;
}

erfcinv_tables read_erfcinv_tables(std::istream& in, const std::string& source) {
  erfcinv_tables t;
  t.source = source;
  auto polys = polynomials(t);
  std::vector<bool> seen(polys.size());
  const std::size_t lines = detail::for_each_data_line(in, [&](const detail::data_line& l) {
    const auto& f = l.fields;
    const auto error_at = [&](std::size_t field, const std::string& m) {
      return parse_error(source, l.number, l.columns[field], m);
    };
    std::size_t k = 0;
    while (k < polys.size() && f[0] != polys[k].first) ++k;
    if (k == polys.size())
      throw error_at(0,
                     fmt::format("'{}' is not a polynomial name (p18 q18 p39 q39 p59 q59)", f[0]));
    if (seen[k]) throw error_at(0, fmt::format("{} appears twice", f[0]));
    seen[k] = true;
    if (f.size() != polys[k].second.size() + 1)
      throw error_at(0, fmt::format("{} has {} coefficients, expected {}", f[0], f.size() - 1,
                                    polys[k].second.size()));
    for (std::size_t j = 1; j < f.size(); ++j) {
      char* end = nullptr;
      errno = 0;
      const double v = std::strtod(f[j].c_str(), &end);
      if (*end != '\0' || errno != 0 || !std::isfinite(v))
        throw error_at(
            j, fmt::format("coefficient {} of {} '{}' is not a finite number", j - 1, f[0], f[j]));
      polys[k].second[j - 1] = v;
    }
  });
  for (std::size_t k = 0; k < polys.size(); ++k)
    if (!seen[k])
      throw parse_error(source, lines, 1, fmt::format("no line for {}", polys[k].first));
  validate(t, [&](const std::string& m) { throw parse_error(source, lines, 1, m); });
  return t;
}

void write_erfcinv_tables(std::ostream& out, const erfcinv_tables& tables) {
  out << "# keel erfcinv coefficients (Blair, Edwards & Johnson 1976, Tables 18, 39, 59), read "
         "from "
      << tables.source << "\n"
      << "# name, then the coefficients from the constant term up (q: without its leading 1); "
         "format: "
         "keel/random/erfcinv_tables.hpp\n";
  for (const auto& [name, c] : polynomials(tables)) {
    std::string line = name;
    for (double v : c) line += fmt::format(" {:a}", v);
    out << line << '\n';
  }
  out.flush();
  if (!out) throw io_error("writing the erfcinv coefficients failed");
}

erfcinv_table_lookup find_erfcinv_tables() {
  return detail::find_toolkit_data<erfcinv_table_lookup>(
      "KEEL_ERFCINV_COEFFICIENTS", "erfcinv coefficients", fmt::format("; {}", k_fallback),
      detail::text_file(
          [](std::istream& in, const std::string& path) { return read_erfcinv_tables(in, path); }),
      detail::toolkit_header(k_header_name, k_hint, [](std::istream& in, const std::string& path) {
        return parse_erfcinv_cuda_header(in, path);
      }));
}

const erfcinv_table_lookup& erfcinv_default_tables() {
  static const erfcinv_table_lookup lookup = find_erfcinv_tables();
  return lookup;
}

}  // namespace keel::random
