// A program outside keel's tree that links keel::memory through find_package(keel).
#include <keel/core/bytes.hpp>

#include <iostream>

int main() {
  std::cout << keel::format_size_exact(keel::parse_size("20MiB")) << '\n';
  return 0;
}
