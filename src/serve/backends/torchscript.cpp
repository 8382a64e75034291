// The only translation unit that includes libtorch: TorchScript models behind
// keel::serve::model_instance.
#include <fmt/format.h>
#include <omp.h>
#include <torch/script.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "keel/core/error.hpp"
#include "keel/serve/model.hpp"

namespace keel::serve {
namespace {

c10::ScalarType to_torch(dtype t) {
  switch (t) {
    case dtype::boolean: return c10::ScalarType::Bool;
    case dtype::u8: return c10::ScalarType::Byte;
    case dtype::i8: return c10::ScalarType::Char;
    case dtype::i16: return c10::ScalarType::Short;
    case dtype::i32: return c10::ScalarType::Int;
    case dtype::i64: return c10::ScalarType::Long;
    case dtype::f16: return c10::ScalarType::Half;
    case dtype::bf16: return c10::ScalarType::BFloat16;
    case dtype::f64: return c10::ScalarType::Double;
    default: return c10::ScalarType::Float;
  }
}

bool from_torch(c10::ScalarType s, dtype& out) {
  for (const dtype t : k_tensor_dtypes)
    if (to_torch(t) == s) {
      out = t;
      return true;
    }
  return false;
}

// The first line of a libtorch error (its messages carry multi-line C++ stack traces).
std::string first_line(const std::exception& e) {
  std::string m = e.what();
  const auto nl = m.find('\n');
  return nl == std::string::npos ? m : m.substr(0, nl);
}

// The index in NAME__i, or -1.
int convention_index(const std::string& name) {
  const auto at = name.rfind("__");
  if (at == std::string::npos || at + 2 >= name.size() || name.size() - at > 6) return -1;
  int v = 0;
  for (std::size_t i = at + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

// For each spec, its position among `count` slots: by `names` when every spec is one of
// them, else by NAME__i, else in order; keel::invalid_argument when a position is past `count`.
std::vector<int> bind_slots(const std::vector<tensor_spec>& specs,
                            const std::vector<std::string>& names, std::size_t count,
                            const char* what, const std::string& model) {
  std::vector<int> pos;
  if (!names.empty() && std::all_of(specs.begin(), specs.end(), [&](const tensor_spec& s) {
        return std::find(names.begin(), names.end(), s.name) != names.end();
      })) {
    for (const tensor_spec& s : specs)
      pos.push_back(
          static_cast<int>(std::find(names.begin(), names.end(), s.name) - names.begin()));
  } else if (std::all_of(specs.begin(), specs.end(),
                         [](const tensor_spec& s) { return convention_index(s.name) >= 0; })) {
    for (const tensor_spec& s : specs) pos.push_back(convention_index(s.name));
  } else {
    for (std::size_t i = 0; i < specs.size(); ++i) pos.push_back(static_cast<int>(i));
  }
  for (const int p : pos)
    if (p >= static_cast<int>(count))
      throw invalid_argument(
          fmt::format("model '{}': the configuration's {} {} has no place "
                      "among the model's {} {}s",
                      model, what, p, count, what));
  return pos;
}

class torchscript_instance final : public model_instance {
 public:
  torchscript_instance(torch::jit::Module module, const model_config& config)
      : module_(std::move(module)), config_(config) {
    module_.eval();
    const auto& schema = module_.get_method("forward").function().getSchema();
    std::vector<std::string> args;
    for (std::size_t i = 1; i < schema.arguments().size(); ++i)  // 0 is self
      args.push_back(schema.arguments()[i].name());
    if (args.size() != config_.inputs.size())
      throw invalid_argument(
          fmt::format("model '{}': forward() takes {} inputs, the "
                      "configuration declares {}",
                      config_.name, args.size(), config_.inputs.size()));
    input_slot_ = bind_slots(config_.inputs, args, args.size(), "input", config_.name);
    for (const auto& p : module_.parameters()) resident_ += p.nbytes();
    for (const auto& b : module_.buffers()) resident_ += b.nbytes();
  }

  std::vector<tensor> run(std::span<const tensor> inputs, int threads) override {
    if (inputs.size() != config_.inputs.size())
      throw invalid_argument(fmt::format("model '{}': {} inputs given, {} expected", config_.name,
                                         inputs.size(), config_.inputs.size()));
    // Intra-op threads of this worker only: libtorch's OpenMP regions take the calling
    // thread's setting, so concurrent instances each get their own share.
    at::internal::lazy_init_num_threads();
    omp_set_num_threads(std::max(1, threads));
    c10::InferenceMode guard;
    std::vector<c10::IValue> args(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const tensor& t = inputs[i];
      // The request owns the bytes until the run returns; the model only reads them.
      auto* data = const_cast<std::byte*>(t.bytes().data());
      args[static_cast<std::size_t>(input_slot_[i])] =
          torch::from_blob(data, t.shape(), torch::TensorOptions().dtype(to_torch(t.type())));
    }
    c10::IValue result;
    try {
      result = module_.forward(std::move(args));
    } catch (const std::exception& e) {
      throw invalid_argument(fmt::format("model '{}' failed: {}", config_.name, first_line(e)));
    }
    return outputs(result);
  }

  std::uint64_t resident_bytes() const override { return resident_; }

 private:
  std::vector<tensor> outputs(const c10::IValue& result) const {
    std::vector<at::Tensor> got;
    std::vector<std::string> names;
    if (result.isTensor()) {
      got.push_back(result.toTensor());
    } else if (result.isTuple()) {
      for (const auto& v : result.toTupleRef().elements()) got.push_back(as_tensor(v));
    } else if (result.isList()) {
      for (const auto& v : result.toListRef()) got.push_back(as_tensor(v));
    } else if (result.isGenericDict()) {
      for (const auto& kv : result.toGenericDict()) {
        if (!kv.key().isString()) fail("returned a dict whose keys are not strings");
        names.push_back(kv.key().toStringRef());
        got.push_back(as_tensor(kv.value()));
      }
    } else {
      fail(fmt::format("returned a {}, not tensors", result.tagKind()));
    }
    const std::vector<int> slot =
        bind_slots(config_.outputs, names, got.size(), "output", config_.name);
    std::vector<tensor> out;
    for (std::size_t i = 0; i < config_.outputs.size(); ++i) {
      out.push_back(to_keel(got[static_cast<std::size_t>(slot[i])], config_.outputs[i]));
    }
    return out;
  }

  at::Tensor as_tensor(const c10::IValue& v) const {
    if (!v.isTensor()) fail(fmt::format("returned a {} where a tensor was expected", v.tagKind()));
    return v.toTensor();
  }

  tensor to_keel(const at::Tensor& t, const tensor_spec& spec) const {
    dtype type{};
    if (!from_torch(t.scalar_type(), type))
      fail(fmt::format("output '{}' is a {} tensor, which the protocol cannot carry", spec.name,
                       c10::toString(t.scalar_type())));
    if (type != spec.type)
      fail(fmt::format("output '{}' is {}, the configuration says {}", spec.name, triton_name(type),
                       triton_name(spec.type)));
    const at::Tensor c = t.contiguous();
    std::vector<std::byte> bytes(c.nbytes());
    if (!bytes.empty()) std::memcpy(bytes.data(), c.data_ptr(), bytes.size());
    return tensor(type, c.sizes().vec(), std::move(bytes));
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw invalid_argument(fmt::format("model '{}' {}", config_.name, what));
  }

  torch::jit::Module module_;
  model_config config_;
  std::vector<int> input_slot_;
  std::uint64_t resident_ = 0;
};

}  // namespace

std::unique_ptr<model_instance> load_torchscript(const std::filesystem::path& file,
                                                 const model_config& config) {
  if (!std::filesystem::is_regular_file(file))
    throw io_error(fmt::format("{}: no such model file", file.string()));
  torch::jit::Module module;
  try {
    module = torch::jit::load(file.string(), torch::kCPU);
  } catch (const std::exception& e) {
    throw parse_error::in_object(file.string(),
                                 fmt::format("not a TorchScript model: {}", first_line(e)));
  }
  try {
    return std::make_unique<torchscript_instance>(std::move(module), config);
  } catch (const keel::error&) {
    throw;
  } catch (const std::exception& e) {
    throw invalid_argument(
        fmt::format("model '{}': {}: {}", config.name, file.string(), first_line(e)));
  }
}

}  // namespace keel::serve
