#include "cli.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>

#include "keel/core/error.hpp"
#include "keel/core/input_file.hpp"

namespace keel::cli {
namespace {

// One line: the first line of the message, with the program name in front.
int fail(int code, std::string_view message) {
  std::string_view line = message.substr(0, message.find('\n'));
  std::cerr << "keel: " << line << '\n';
  return code;
}

}  // namespace

int run(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return k_exit_ok;
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return k_exit_ok;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return k_exit_ok;
  } catch (const CLI::CallForVersion&) {
    std::cout << app.version() << '\n';
    return k_exit_ok;
  } catch (const CLI::RuntimeError& e) {  // exit_quietly()
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return k_exit_ok;
    return fail(k_exit_usage, e.what());
  } catch (const keel::invalid_argument& e) {
    return fail(k_exit_usage, e.what());
  } catch (const keel::parse_error& e) {
    return fail(k_exit_usage, e.what());
  } catch (const keel::io_error& e) {
    return fail(k_exit_usage, e.what());
  } catch (const keel::out_of_memory& e) {
    return fail(k_exit_internal, e.what());
  } catch (const std::bad_alloc&) {
    return fail(k_exit_internal, "internal error: out of host memory");
  } catch (const std::exception& e) {
    return fail(k_exit_internal, fmt::format("internal error: {}", e.what()));
  } catch (...) {
    return fail(k_exit_internal, "internal error: unknown exception");
  }
}

void print_json(const nlohmann::json& document) { std::cout << document.dump(2) << '\n'; }

void require_readable_file(const std::string& path) { keel::check_input_file(path); }

namespace detail {
namespace {

std::string decimal(number_i128 v) {
  if (v == 0) return "0";
  const bool negative = v < 0;
  std::string digits;
  for (; v != 0; v /= 10) {
    const auto d = static_cast<int>(v % 10);
    digits.push_back(static_cast<char>('0' + (d < 0 ? -d : d)));
  }
  if (negative) digits.push_back('-');
  return {digits.rbegin(), digits.rend()};
}

std::string real_text(double v) {
  if (v == std::trunc(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{}", v);
}

// The value as typed, short enough for one line.
std::string shown(const std::string& text) {
  std::string s = text.substr(0, text.find('\n'));
  if (s.size() > 40) s = s.substr(0, 40) + "...";
  return s.empty() ? "''" : s;
}

}  // namespace

std::string describe_integer(number_i128 lo, number_i128 hi) {
  return fmt::format("[{}, {}]", decimal(lo), decimal(hi));
}

std::string describe_real(double lo, double hi, bool lo_open) {
  const bool no_lo = lo == std::numeric_limits<double>::lowest();
  const bool no_hi = hi == std::numeric_limits<double>::max();
  if (no_lo && no_hi) return "finite";
  if (no_hi) return fmt::format("{} {}", lo_open ? ">" : ">=", real_text(lo));
  if (no_lo) return fmt::format("<= {}", real_text(hi));
  return fmt::format("{}{}, {}]", lo_open ? "(" : "[", real_text(lo), real_text(hi));
}

std::string check_integer(std::string& text, number_i128 lo, number_i128 hi) {
  const std::string expected = "an integer in " + describe_integer(lo, hi);
  std::size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
  if (i == text.size() || text.find_first_not_of("0123456789", i) != std::string::npos) {
    return fmt::format("{} is not an integer, expected {}", shown(text), expected);
  }
  number_i128 v = 0;
  bool overflow = false;
  for (; i < text.size(); ++i) {
    if (v > (number_i128{1} << 100)) {
      overflow = true;
      break;
    }
    v = v * 10 + (text[i] - '0');
  }
  if (negative) v = -v;
  if (overflow || v < lo || v > hi) {
    const bool refused_sign = negative && v != 0 && lo >= 0;
    return fmt::format("{} is {}, expected {}", shown(text),
                       refused_sign ? "negative" : "out of range", expected);
  }
  text = decimal(v);
  return {};
}

std::string check_real(std::string& text, double lo, double hi, bool lo_open) {
  const std::string range = describe_real(lo, hi, lo_open);
  const std::string expected = range == "finite"                    ? "a finite number"
                               : range[0] == '[' || range[0] == '(' ? "a number in " + range
                                                                    : "a number " + range;
  std::string lower;
  for (const char c : text)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (lower.find("nan") != std::string::npos || lower.find("inf") != std::string::npos) {
    return fmt::format("{} is not a finite number, expected {}", shown(text), expected);
  }
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])) != 0 ||
      lower.find('x') != std::string::npos) {
    return fmt::format("{} is not a number, expected {}", shown(text), expected);
  }
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) {
    return fmt::format("{} is not a number, expected {}", shown(text), expected);
  }
  if ((errno == ERANGE && std::fabs(v) > 1) || !std::isfinite(v) || v < lo || v > hi ||
      (lo_open && v == lo)) {
    return fmt::format("{} is out of range, expected {}", shown(text), expected);
  }
  text = fmt::format("{}", v);
  return {};
}

}  // namespace detail

void add_all_commands(CLI::App& app) {
  app.require_subcommand(1);
  app.fallthrough(false);
  add_mem_commands(app);
  add_rand_commands(app);
  add_kv_commands(app);
  add_perf_commands(app);
  add_gpus_commands(app);
  add_comm_commands(app);
  add_serve_commands(app);
}

}  // namespace keel::cli
