#include "keel/serve/model_config.hpp"

#include <fmt/format.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>

#include "config/model_config.pb.h"
#include "keel/core/error.hpp"
#include "keel/core/input_file.hpp"

namespace keel::serve {
namespace {

namespace gp = google::protobuf;
using tree = gp::TextFormat::ParseInfoTree;

// The first syntax error protobuf reports, with its (0-based) position.
class first_error : public gp::io::ErrorCollector {
 public:
  void AddError(int line, gp::io::ColumnNumber column, const std::string& message) override {
    if (message_.empty()) {
      line_ = line;
      column_ = column;
      message_ = message;
    }
  }
  bool failed() const { return !message_.empty(); }
  int line_ = 0, column_ = 0;
  std::string message_;
};

// Where a field of a parsed message stands in the file, for validation errors.
class place {
 public:
  place(const std::string& source, const tree* t, const gp::Message& m)
      : source_(source), tree_(t), message_(m) {}

  [[noreturn]] void fail(std::string_view field, const std::string& what, int index = -1) const {
    const gp::FieldDescriptor* f = message_.GetDescriptor()->FindFieldByName(std::string(field));
    int line = -1, column = -1;
    if (f != nullptr && tree_ != nullptr) {
      // The values of a list (`dims: [ 3, 0 ]`) share one location: the field's first.
      auto loc = tree_->GetLocation(f, f->is_repeated() ? std::max(index, 0) : -1);
      if (loc.line < 0 && f->is_repeated()) loc = tree_->GetLocation(f, 0);
      line = loc.line;
      column = loc.column;
    }
    if (line < 0) throw parse_error::in_object(source_, fmt::format("{}: {}", field, what));
    throw parse_error(source_, static_cast<std::size_t>(line) + 1,
                      static_cast<std::size_t>(column) + 1, fmt::format("{}: {}", field, what));
  }

  // The place of the `index`-th value of message field `field`.
  place nested(std::string_view field, const gp::Message& child, int index = -1) const {
    const gp::FieldDescriptor* f = message_.GetDescriptor()->FindFieldByName(std::string(field));
    const tree* sub = nullptr;
    if (f != nullptr && tree_ != nullptr)
      sub = tree_->GetTreeForNested(f, f->is_repeated() ? index : -1);
    return place(source_, sub, child);
  }

 private:
  const std::string& source_;
  const tree* tree_;
  const gp::Message& message_;
};

dtype to_dtype(pb::DataType t, const place& at, std::string_view field) {
  switch (t) {
    case pb::TYPE_BOOL: return dtype::boolean;
    case pb::TYPE_UINT8: return dtype::u8;
    case pb::TYPE_INT8: return dtype::i8;
    case pb::TYPE_INT16: return dtype::i16;
    case pb::TYPE_INT32: return dtype::i32;
    case pb::TYPE_INT64: return dtype::i64;
    case pb::TYPE_FP16: return dtype::f16;
    case pb::TYPE_BF16: return dtype::bf16;
    case pb::TYPE_FP32: return dtype::f32;
    case pb::TYPE_FP64: return dtype::f64;
    case pb::TYPE_UINT16:
    case pb::TYPE_UINT32:
    case pb::TYPE_UINT64:
      at.fail(field, fmt::format("{} has no TorchScript tensor type (use the signed type)",
                                 pb::DataType_Name(t)));
    case pb::TYPE_STRING:
      at.fail(field, "TYPE_STRING is not supported: TorchScript models here take numeric tensors");
    default: break;
  }
  at.fail(field, "missing or TYPE_INVALID");
}

std::vector<std::int64_t> to_dims(const gp::RepeatedField<std::int64_t>& dims, const place& at,
                                  std::string_view field) {
  std::vector<std::int64_t> out(dims.begin(), dims.end());
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i] < -1 || out[i] == 0)
      at.fail(field, fmt::format("extent {} must be positive or -1 (any)", out[i]),
              static_cast<int>(i));
  return out;
}

template <class Pb>
tensor_spec to_tensor(const Pb& t, const place& at) {
  if (t.name().empty()) at.fail("name", "a tensor needs a name");
  return tensor_spec{t.name(), to_dtype(t.data_type(), at, "data_type"),
                     to_dims(t.dims(), at, "dims")};
}

queue_policy to_policy(const pb::ModelQueuePolicy& p) {
  return queue_policy{p.timeout_action() == pb::ModelQueuePolicy::DELAY,
                      p.default_timeout_microseconds(), p.allow_timeout_override(),
                      p.max_queue_size()};
}

void read_batching(const pb::ModelDynamicBatching& b, const place& at, model_config& c) {
  c.has_dynamic_batching = true;
  dynamic_batching& out = c.batching;
  for (int i = 0; i < b.preferred_batch_size_size(); ++i) {
    const int size = b.preferred_batch_size(i);
    if (size < 1 || size > c.max_batch_size)
      at.fail("preferred_batch_size",
              fmt::format("{} is outside 1..max_batch_size ({})", size, c.max_batch_size), i);
    out.preferred_batch_sizes.push_back(size);
  }
  std::sort(out.preferred_batch_sizes.begin(), out.preferred_batch_sizes.end());
  out.max_queue_delay_us = b.max_queue_delay_microseconds();
  if (out.max_queue_delay_us > 60'000'000)
    at.fail("max_queue_delay_microseconds", "more than a minute of delay");
  out.preserve_ordering = b.preserve_ordering();
  if (b.priority_levels() > 1'000) at.fail("priority_levels", "more than 1000 levels");
  out.priority_levels = static_cast<std::uint32_t>(b.priority_levels());
  out.default_priority_level = static_cast<std::uint32_t>(b.default_priority_level());
  if (out.priority_levels > 0 &&
      (out.default_priority_level < 1 || out.default_priority_level > out.priority_levels))
    at.fail("default_priority_level",
            fmt::format("must be in 1..priority_levels ({})", out.priority_levels));
  if (out.priority_levels == 0 && out.default_priority_level != 0)
    at.fail("default_priority_level", "set without priority_levels");
  out.default_policy = to_policy(b.default_queue_policy());
  for (const auto& [level, policy] : b.priority_queue_policy()) {
    if (level < 1 || level > out.priority_levels)
      at.fail("priority_queue_policy", fmt::format("level {} is outside 1..priority_levels ({})",
                                                   level, out.priority_levels));
    out.priority_policies[static_cast<std::uint32_t>(level)] = to_policy(policy);
  }
}

void read_ensemble(const pb::ModelEnsembling& e, const place& at, model_config& c) {
  if (e.step_size() == 0) at.fail("step", "an ensemble needs at least one step");
  for (int i = 0; i < e.step_size(); ++i) {
    const pb::ModelEnsembling::Step& s = e.step(i);
    const place step = at.nested("step", s, i);
    if (s.model_name().empty()) at.fail("step", "a step needs a model_name", i);
    if (s.model_version() < -1)
      step.fail("model_version", "must be a version number or -1 (the latest)");
    if (s.input_map().empty()) at.fail("step", "a step needs an input_map", i);
    if (s.output_map().empty()) at.fail("step", "a step needs an output_map", i);
    // Unset (0) means the latest, as -1 does.
    ensemble_step out{s.model_name(), s.model_version() == 0 ? -1 : s.model_version(), {}, {}};
    out.input_map.insert(s.input_map().begin(), s.input_map().end());
    out.output_map.insert(s.output_map().begin(), s.output_map().end());
    c.ensemble.push_back(std::move(out));
  }
}

void read_warmup(const pb::ModelConfig& m, const place& at, model_config& c) {
  for (int i = 0; i < m.model_warmup_size(); ++i) {
    const pb::ModelWarmup& w = m.model_warmup(i);
    const place here = at.nested("model_warmup", w, i);
    warmup_sample out{w.name(), std::max(1u, w.batch_size()), {}, std::max(1u, w.count())};
    if (out.batch_size > static_cast<std::uint32_t>(std::max(1, c.max_batch_size)))
      here.fail("batch_size",
                fmt::format("{} exceeds max_batch_size ({})", out.batch_size, c.max_batch_size));
    for (const auto& [name, in] : w.inputs()) {
      if (c.find_input(name) == nullptr)
        here.fail("inputs", fmt::format("'{}' is not an input of the model", name));
      warmup_input wi;
      wi.type = to_dtype(in.data_type(), here, "inputs");
      wi.dims.assign(in.dims().begin(), in.dims().end());
      for (const std::int64_t d : wi.dims)
        if (d < 1) here.fail("inputs", fmt::format("'{}': warmup extents must be positive", name));
      switch (in.input_data_type_case()) {
        case pb::ModelWarmup::Input::kRandomData: wi.data = warmup_input::source::random; break;
        case pb::ModelWarmup::Input::kInputDataFile:
          wi.data = warmup_input::source::file;
          wi.file = in.input_data_file();
          if (wi.file.empty() || wi.file.find('/') != std::string::npos || wi.file == "..")
            here.fail("inputs", fmt::format("'{}': input_data_file must be a file name in "
                                            "the model's warmup/ folder",
                                            name));
          break;
        default: wi.data = warmup_input::source::zero; break;
      }
      out.inputs.emplace(name, std::move(wi));
    }
    for (const tensor_spec& t : c.inputs)
      if (out.inputs.count(t.name) == 0)
        here.fail("inputs", fmt::format("no warmup data for input '{}'", t.name));
    c.warmup.push_back(std::move(out));
  }
}

void read_versions(const pb::ModelVersionPolicy& v, const place& at, model_config& c) {
  switch (v.policy_choice_case()) {
    case pb::ModelVersionPolicy::kAll: c.versions.choice = version_policy::kind::all; break;
    case pb::ModelVersionPolicy::kSpecific:
      c.versions.choice = version_policy::kind::specific;
      c.versions.versions.assign(v.specific().versions().begin(), v.specific().versions().end());
      if (c.versions.versions.empty()) at.fail("specific", "names no version");
      for (const std::int64_t n : c.versions.versions)
        if (n < 1) at.fail("specific", fmt::format("version {} is not a positive number", n));
      break;
    case pb::ModelVersionPolicy::kLatest:
      c.versions.latest_count = std::max(1u, v.latest().num_versions());
      break;
    default: break;
  }
}

model_config convert(const pb::ModelConfig& m, const tree& t, const std::string& source) {
  const place at(source, &t, m);
  model_config c;
  c.name = m.name();
  if (c.name.empty()) at.fail("name", "the model needs a name");
  if (m.platform() == "ensemble") {
    c.platform = model_platform::ensemble;
  } else if (m.platform() == "pytorch_libtorch" ||
             (m.platform().empty() && m.backend() == "pytorch")) {
    c.platform = model_platform::torchscript;
  } else if (!m.platform().empty()) {
    at.fail("platform", fmt::format("'{}' is not served here: expected pytorch_libtorch or "
                                    "ensemble",
                                    m.platform()));
  } else if (!m.backend().empty()) {
    at.fail("backend", fmt::format("'{}' is not served here: expected pytorch", m.backend()));
  } else {
    at.fail("platform", "missing: expected platform: \"pytorch_libtorch\" or \"ensemble\"");
  }
  if (m.max_batch_size() < 0) at.fail("max_batch_size", "must not be negative");
  if (m.max_batch_size() > 65'536) at.fail("max_batch_size", "more than 65536");
  c.max_batch_size = m.max_batch_size();
  for (int i = 0; i < m.input_size(); ++i)
    c.inputs.push_back(to_tensor(m.input(i), at.nested("input", m.input(i), i)));
  for (int i = 0; i < m.output_size(); ++i)
    c.outputs.push_back(to_tensor(m.output(i), at.nested("output", m.output(i), i)));
  if (c.inputs.empty()) at.fail("input", "the model declares no input");
  if (c.outputs.empty()) at.fail("output", "the model declares no output");
  for (const auto* list : {&c.inputs, &c.outputs})
    for (std::size_t i = 0; i < list->size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if ((*list)[i].name == (*list)[j].name)
          at.fail(list == &c.inputs ? "input" : "output",
                  fmt::format("'{}' is declared twice", (*list)[i].name), static_cast<int>(i));
  int instances = 0;
  for (int i = 0; i < m.instance_group_size(); ++i) {
    const pb::ModelInstanceGroup& g = m.instance_group(i);
    const place group = at.nested("instance_group", g, i);
    if (g.kind() == pb::ModelInstanceGroup::KIND_GPU)
      group.fail("kind", "KIND_GPU: this server runs models on the CPU (use KIND_CPU)");
    if (g.count() < 0 || g.count() > 256) group.fail("count", "must be in 0..256");
    instances += g.count() == 0 ? 1 : g.count();
  }
  if (instances > 0) c.instance_count = instances;
  if (!m.default_model_filename().empty()) {
    c.default_model_filename = m.default_model_filename();
    if (c.default_model_filename.find('/') != std::string::npos || c.default_model_filename == "..")
      at.fail("default_model_filename", "must be a file name, not a path");
  }
  if (m.has_dynamic_batching()) {
    if (c.max_batch_size == 0)
      at.fail("dynamic_batching", "needs max_batch_size > 0 (the model must take a batch)");
    read_batching(m.dynamic_batching(), at.nested("dynamic_batching", m.dynamic_batching()), c);
  }
  if (c.platform == model_platform::ensemble) {
    if (!m.has_ensemble_scheduling()) at.fail("platform", "an ensemble needs ensemble_scheduling");
    read_ensemble(m.ensemble_scheduling(),
                  at.nested("ensemble_scheduling", m.ensemble_scheduling()), c);
  } else if (m.has_ensemble_scheduling()) {
    at.fail("ensemble_scheduling", "only for platform: \"ensemble\"");
  }
  read_warmup(m, at, c);
  if (m.has_version_policy())
    read_versions(m.version_policy(), at.nested("version_policy", m.version_policy()), c);
  return c;
}

}  // namespace

bool tensor_spec::accepts(std::span<const std::int64_t> shape) const noexcept {
  return std::equal(shape.begin(), shape.end(), dims.begin(), dims.end(),
                    [](std::int64_t d, std::int64_t want) { return want == -1 || d == want; });
}

const tensor_spec* model_config::find_input(std::string_view n) const noexcept {
  for (const tensor_spec& t : inputs)
    if (t.name == n) return &t;
  return nullptr;
}

const tensor_spec* model_config::find_output(std::string_view n) const noexcept {
  for (const tensor_spec& t : outputs)
    if (t.name == n) return &t;
  return nullptr;
}

model_config parse_model_config(std::string_view text, const std::string& source) {
  pb::ModelConfig message;
  tree locations;
  first_error errors;
  gp::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&locations);
  if (!parser.ParseFromString(std::string(text), &message) || errors.failed()) {
    if (!errors.failed()) throw parse_error::in_object(source, "not a model configuration");
    throw parse_error(source, static_cast<std::size_t>(errors.line_) + 1,
                      static_cast<std::size_t>(errors.column_) + 1, errors.message_);
  }
  return convert(message, locations, source);
}

model_config read_model_config(const std::filesystem::path& file) {
  input_options limits;
  limits.max_bytes = 1 << 20;  // a configuration, not a data file
  return parse_model_config(read_input_file(file.string(), limits), file.string());
}

}  // namespace keel::serve
