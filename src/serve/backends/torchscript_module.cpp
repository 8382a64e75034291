// The entry point of libkeel_serve_torchscript.so, the module `keel serve` loads at run time
// (keel/serve/backend.hpp): its one exported symbol.
#include "keel/serve/model.hpp"
#include "keel/serve/server.hpp"

extern "C" __attribute__((visibility("default"))) void keel_serve_backend_torchscript(
    keel::serve::model_loader* loader) {
  *loader = keel::serve::load_torchscript;
}
