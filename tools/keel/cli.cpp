#include "cli.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <new>

#include "keel/core/error.hpp"

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

void print_json(const nlohmann::json& document) {
  std::cout << document.dump(2) << '\n';
}

void require_readable_file(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    throw keel::io_error(fmt::format("{}: no such file", path));
  }
  if (std::filesystem::is_directory(status)) {
    throw keel::io_error(fmt::format("{}: is a directory, expected a file", path));
  }
}

}  // namespace keel::cli
