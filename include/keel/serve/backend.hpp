// keel::serve backends — the shared libraries that run a platform's models, loaded when a
// server starts, so that a program which never serves a model does not pay for a runtime
// (libtorch's static initialisation alone takes seconds).
//
// load_backend("torchscript") opens libkeel_serve_torchscript.so and returns its
// model_loader (load_torchscript, platform "pytorch_libtorch"). It looks, in order, in
// $KEEL_SERVE_BACKEND_DIR, in the folder of the binary that holds keel (the `keel`
// executable, or the Python extension), and in ../lib/keel from there (an installed tree).
// Failure is keel::io_error naming every place tried and why. The library stays loaded for
// the life of the process. Thread-safe.
#pragma once

#include <string_view>

#include "keel/serve/server.hpp"

namespace keel::serve {

model_loader load_backend(std::string_view name);

}  // namespace keel::serve
