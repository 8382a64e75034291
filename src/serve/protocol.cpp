#include "keel/serve/protocol.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <span>
#include <type_traits>
#include <utility>

#include "keel/core/config.hpp"
#include "keel/core/error.hpp"
#include "keel/core/float16.hpp"
#include "keel/core/json_value.hpp"

namespace keel::serve {
namespace {

using json = nlohmann::json;

template <class... A>
[[noreturn]] void fail(fmt::format_string<A...> format, A&&... args) {
  throw invalid_argument(fmt::format(format, std::forward<A>(args)...));
}

// ---- reading -------------------------------------------------------------------------------

json parse_header(std::string_view text, std::string_view source) {
  try {
    json j = parse_json(text, source);
    if (!j.is_object()) fail("{}: the JSON is not an object", source);
    return j;
  } catch (const parse_error& e) {
    throw invalid_argument(e.what());
  }
}

// JSON text of `v`; invalid UTF-8 in its strings is replaced, never thrown about.
std::string dump(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

// A value as an error message shows it: its JSON, cut short (on a UTF-8 character boundary).
std::string excerpt(const json& v) {
  std::string text = dump(v);
  if (text.size() <= 40) return text;
  std::size_t cut = 37;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;
  return text.replace(cut, std::string::npos, "...");
}

const json* member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}
const json& require(const json& object, const char* key, std::string_view what) {
  const json* v = member(object, key);
  if (v == nullptr) fail("{} has no \"{}\"", what, key);
  return *v;
}
std::uint64_t as_uint(const json& v, std::string_view what) {
  if (!v.is_number_unsigned()) fail("{} must be a non-negative integer", what);
  return v.get<std::uint64_t>();
}
bool as_bool(const json& v, std::string_view what) {
  if (!v.is_boolean()) fail("{} must be true or false", what);
  return v.get<bool>();
}
const std::string& as_string(const json& v, std::string_view what) {
  if (!v.is_string()) fail("{} must be a string", what);
  return v.get_ref<const std::string&>();
}
const json& as_array(const json& v, std::string_view what) {
  if (!v.is_array()) fail("{} must be an array", what);
  return v;
}
const json& as_object(const json& v, std::string_view what) {
  if (!v.is_object()) fail("{} must be an object", what);
  return v;
}

std::vector<std::int64_t> read_shape(const json& entry, const std::string& what) {
  std::vector<std::int64_t> shape;
  for (const json& d : as_array(require(entry, "shape", what), what + " shape")) {
    if (!d.is_number_unsigned() ||
        d.get<std::uint64_t>() > std::uint64_t{std::numeric_limits<std::int64_t>::max()})
      fail("{}: shape extent {} is not a non-negative integer", what, excerpt(d));
    shape.push_back(d.get<std::int64_t>());
  }
  return shape;
}

// The bytes after the JSON header, handed out in order.
struct binary_cursor {
  std::string_view bytes;
  std::size_t at = 0;

  std::span<const std::byte> take(std::size_t n, const std::string& what) {
    if (n > bytes.size() - at)
      fail("{}: binary_data_size {} runs past the body ({} bytes of binary data left)", what, n,
           bytes.size() - at);
    const auto* p = reinterpret_cast<const std::byte*>(bytes.data() + at);
    at += n;
    return {p, n};
  }
};

template <class T>
T as_integer(const json& v, std::size_t i, const std::string& what) {
  if (v.is_number_unsigned()) {
    const std::uint64_t u = v.get<std::uint64_t>();
    if (u <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return static_cast<T>(u);
  } else if (v.is_number_integer()) {
    const std::int64_t s = v.get<std::int64_t>();
    if (std::is_signed_v<T> && s >= static_cast<std::int64_t>(std::numeric_limits<T>::min()))
      return static_cast<T>(s);
  } else {
    fail("{}: value {} is {}, not an integer", what, i, excerpt(v));
  }
  fail("{}: value {} ({}) is out of range", what, i, excerpt(v));
}

double as_real(const json& v, std::size_t i, const std::string& what) {
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();  // how NaN is written
  if (!v.is_number()) fail("{}: value {} is {}, not a number", what, i, excerpt(v));
  return v.get<double>();
}

// Writes the leaves of `data` (flat or nested arrays) into `out`, converted by `convert`.
template <class T, class Convert>
std::size_t fill_values(const json& data, std::span<T> out, const std::string& what,
                        Convert convert) {
  std::size_t n = 0;
  const auto walk = [&](const auto& self, const json& v) -> void {
    if (v.is_array()) {
      for (const json& e : v) self(self, e);
      return;
    }
    if (n == out.size()) fail("{}: more values than its shape's {} elements", what, out.size());
    out[n] = convert(v, n);
    ++n;
  };
  walk(walk, data);
  return n;
}

std::size_t fill_tensor(const json& data, tensor& t, const std::string& what) {
  const auto real = [&](const json& v, std::size_t i) { return as_real(v, i, what); };
  const auto integer = [&]<class T>(std::span<T> out) {
    return fill_values(data, out, what,
                       [&](const json& v, std::size_t i) { return as_integer<T>(v, i, what); });
  };
  switch (t.type()) {
    case dtype::boolean:
      return fill_values(data, t.values<std::uint8_t>(), what, [&](const json& v, std::size_t i) {
        if (!v.is_boolean()) fail("{}: value {} is {}, not true or false", what, i, excerpt(v));
        return static_cast<std::uint8_t>(v.get<bool>());
      });
    case dtype::u8: return integer(t.values<std::uint8_t>());
    case dtype::i8: return integer(t.values<std::int8_t>());
    case dtype::i16: return integer(t.values<std::int16_t>());
    case dtype::i32: return integer(t.values<std::int32_t>());
    case dtype::i64: return integer(t.values<std::int64_t>());
    case dtype::f16:
      return fill_values(data, t.values<std::uint16_t>(), what, [&](const json& v, std::size_t i) {
        return float_to_half(static_cast<float>(real(v, i)));
      });
    case dtype::bf16:
      return fill_values(data, t.values<std::uint16_t>(), what, [&](const json& v, std::size_t i) {
        return float_to_bf16(static_cast<float>(real(v, i)));
      });
    case dtype::f32:
      return fill_values(data, t.values<float>(), what, [&](const json& v, std::size_t i) {
        return static_cast<float>(real(v, i));
      });
    case dtype::f64: return fill_values(data, t.values<double>(), what, real);
    default: fail("{}: datatype {} is not supported", what, triton_name(t.type()));
  }
}

// One tensor of a request or response: its data from "data" or, with "binary_data_size" in
// its parameters, from the binary part of the body.
tensor read_tensor(const json& entry, dtype type, std::vector<std::int64_t> shape,
                   binary_cursor& binary, std::size_t body_size, const std::string& what) {
  std::int64_t elements = 0;
  try {
    elements = element_count(shape);
  } catch (const invalid_argument& e) {
    fail("{}: {}", what, e.what());
  }
  const std::size_t bytes = static_cast<std::size_t>(elements) * element_bytes(type);
  const json* parameters = member(entry, "parameters");
  const json* size = parameters
                         ? member(as_object(*parameters, what + " parameters"), "binary_data_size")
                         : nullptr;
  if (size != nullptr) {
    const std::uint64_t n = as_uint(*size, what + " binary_data_size");
    if (n != bytes)
      fail("{}: binary_data_size {}, but a {} tensor of shape {} takes {} bytes", what, n,
           triton_name(type), shape_string(shape), bytes);
    const std::span<const std::byte> data = binary.take(bytes, what);
    return tensor(type, std::move(shape), std::vector<std::byte>(data.begin(), data.end()));
  }
  const json& data = require(entry, "data", what);
  // Every JSON value takes at least one byte: a larger shape cannot be filled by this body.
  if (static_cast<std::uint64_t>(elements) > body_size)
    fail("{}: shape {} has more elements than the body has bytes", what, shape_string(shape));
  tensor t(type, shape);
  const std::size_t n = fill_tensor(data, t, what);
  if (n != static_cast<std::size_t>(elements))
    fail("{}: {} values for shape {} ({} elements)", what, n, shape_string(shape), elements);
  return t;
}

std::pair<std::string_view, std::string_view> split_body(std::string_view body,
                                                         std::optional<std::size_t> header_length) {
  if (!header_length) return {body, {}};
  if (*header_length > body.size())
    fail("{} {} is past the end of the {}-byte body", k_header_length_field, *header_length,
         body.size());
  return {body.substr(0, *header_length), body.substr(*header_length)};
}

void check_shape(const tensor_spec& spec, int max_batch_size,
                 const std::vector<std::int64_t>& shape, const std::string& what) {
  std::span<const std::int64_t> dims = shape;
  bool ok = true;
  std::vector<std::int64_t> expected = spec.dims;
  if (max_batch_size > 0) {
    ok = !shape.empty() && shape[0] >= 1 && shape[0] <= max_batch_size;
    dims = dims.subspan(std::min<std::size_t>(1, dims.size()));
    expected.insert(expected.begin(), -1);
  }
  ok = ok && spec.accepts(dims);
  if (!ok)
    fail("{}: shape {}, the model takes {}{}", what, shape_string(shape), shape_string(expected),
         max_batch_size > 0 ? fmt::format(" with a batch of 1 to {}", max_batch_size) : "");
}

// ---- writing -------------------------------------------------------------------------------

std::string json_string(std::string_view s) { return dump(json(s)); }

using buffer = fmt::memory_buffer;

template <class T, class Put>
void put_each(buffer& b, std::span<const T> values, Put put) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) b.push_back(',');
    put(values[i]);
  }
}

// JSON has no NaN or infinity: they are written as null (and read back as NaN).
void put_real(buffer& b, auto v) {
  if (std::isfinite(v))
    fmt::format_to(std::back_inserter(b), "{}", v);
  else
    b.append(std::string_view("null"));
}

void put_values(buffer& b, const tensor& t) {
  const auto integer = [&]<class T>(std::span<const T> v) {
    put_each(b, v, [&](T x) { fmt::format_to(std::back_inserter(b), "{}", +x); });
  };
  const auto real = [&](auto x) { put_real(b, x); };
  switch (t.type()) {
    case dtype::boolean:
      put_each(b, t.values<std::uint8_t>(),
               [&](std::uint8_t x) { b.append(std::string_view(x ? "true" : "false")); });
      break;
    case dtype::u8: integer(t.values<std::uint8_t>()); break;
    case dtype::i8: integer(t.values<std::int8_t>()); break;
    case dtype::i16: integer(t.values<std::int16_t>()); break;
    case dtype::i32: integer(t.values<std::int32_t>()); break;
    case dtype::i64: integer(t.values<std::int64_t>()); break;
    case dtype::f16:
      put_each(b, t.values<std::uint16_t>(),
               [&](std::uint16_t x) { put_real(b, half_to_float(x)); });
      break;
    case dtype::bf16:
      put_each(b, t.values<std::uint16_t>(),
               [&](std::uint16_t x) { put_real(b, bf16_to_float(x)); });
      break;
    case dtype::f32: put_each(b, t.values<float>(), real); break;
    case dtype::f64: put_each(b, t.values<double>(), real); break;
    default: fail("datatype {} is not supported", triton_name(t.type()));
  }
}

// One {"name", "datatype", "shape", "data" | "parameters"} entry; a binary tensor is listed in
// `binaries`, whose bytes follow the JSON.
void put_tensor(buffer& b, std::string_view name, const tensor& t, bool binary,
                std::vector<const tensor*>& binaries) {
  fmt::format_to(std::back_inserter(b), R"({{"name":{},"datatype":"{}","shape":[{}],)",
                 json_string(name), triton_name(t.type()), fmt::join(t.shape(), ","));
  if (binary) {
    fmt::format_to(std::back_inserter(b), R"("parameters":{{"binary_data_size":{}}}}})",
                   t.bytes().size());
    binaries.push_back(&t);
    return;
  }
  b.append(std::string_view(R"("data":[)"));
  put_values(b, t);
  b.append(std::string_view("]}"));
}

encoded_body finish(const buffer& b, const std::vector<const tensor*>& binaries) {
  encoded_body out{fmt::to_string(b), std::nullopt};
  if (binaries.empty()) return out;
  out.header_length = out.body.size();
  for (const tensor* t : binaries)
    out.body.append(reinterpret_cast<const char*>(t->bytes().data()), t->bytes().size());
  return out;
}

json tensor_metadata(const tensor_spec& spec, int max_batch_size) {
  std::vector<std::int64_t> shape = spec.dims;
  if (max_batch_size > 0) shape.insert(shape.begin(), -1);
  return {{"name", spec.name}, {"datatype", triton_name(spec.type)}, {"shape", shape}};
}

std::string platform_name(model_platform p) {
  return p == model_platform::ensemble ? "ensemble" : "pytorch_libtorch";
}

std::string type_name(dtype t) { return fmt::format("TYPE_{}", triton_name(t)); }

json queue_policy_json(const queue_policy& p) {
  return {{"timeout_action", p.delay_on_timeout ? "DELAY" : "REJECT"},
          {"default_timeout_microseconds", p.default_timeout_us},
          {"allow_timeout_override", p.allow_timeout_override},
          {"max_queue_size", p.max_queue_size}};
}

json version_policy_json(const version_policy& v) {
  switch (v.choice) {
    case version_policy::kind::all: return {{"all", json::object()}};
    case version_policy::kind::specific: return {{"specific", {{"versions", v.versions}}}};
    default: return {{"latest", {{"num_versions", v.latest_count}}}};
  }
}

json warmup_json(const warmup_sample& w) {
  json inputs = json::object();
  for (const auto& [name, in] : w.inputs) {
    json j = {{"data_type", type_name(in.type)}, {"dims", in.dims}};
    switch (in.data) {
      case warmup_input::source::zero: j["zero_data"] = true; break;
      case warmup_input::source::random: j["random_data"] = true; break;
      case warmup_input::source::file: j["input_data_file"] = in.file; break;
    }
    inputs[name] = std::move(j);
  }
  return {{"name", w.name},
          {"batch_size", w.batch_size},
          {"inputs", std::move(inputs)},
          {"count", w.count}};
}

json duration(std::uint64_t count, std::uint64_t us) {
  return {{"count", count}, {"ns", us * 1000}};
}

// A Prometheus metric's HELP and TYPE lines.
void metric_head(fmt::memory_buffer& out, std::string_view name, std::string_view type,
                 std::string_view help) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

// A Prometheus label value: backslash, double quote and newline escaped.
std::string label_value(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::size_t parse_header_length(std::string_view text) {
  std::size_t n = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size())
    fail("{} '{}' is not a byte count", k_header_length_field, text);
  return n;
}

decoded_request decode_infer_request(std::string_view body,
                                     std::optional<std::size_t> header_length,
                                     const model_config& config) {
  const auto [text, bytes] = split_body(body, header_length);
  const json request = parse_header(text, "infer request");
  decoded_request out;
  if (const json* id = member(request, "id")) out.id = as_string(*id, "\"id\"");
  if (const json* p = member(request, "parameters")) {
    as_object(*p, "\"parameters\"");
    if (const json* v = member(*p, "priority")) {
      const std::uint64_t priority = as_uint(*v, "parameter priority");
      if (priority > std::numeric_limits<std::uint32_t>::max())
        fail("parameter priority {} is out of range", priority);
      out.request.priority = static_cast<std::uint32_t>(priority);
    }
    if (const json* v = member(*p, "timeout"))
      out.request.timeout_us = as_uint(*v, "parameter timeout");
    if (const json* v = member(*p, "binary_data_output"))
      out.binary_data_output = as_bool(*v, "parameter binary_data_output");
  }

  binary_cursor binary{bytes};
  std::vector<std::optional<tensor>> inputs(config.inputs.size());
  for (const json& entry :
       as_array(require(request, "inputs", "the infer request"), "\"inputs\"")) {
    as_object(entry, "an input");
    const std::string& name = as_string(require(entry, "name", "an input"), "an input's name");
    const std::string what = fmt::format("input {}", name);
    const tensor_spec* spec = config.find_input(name);
    if (spec == nullptr) fail("model {} has no input {}", config.name, name);
    std::optional<tensor>& slot = inputs[static_cast<std::size_t>(spec - config.inputs.data())];
    if (slot) fail("{} is given twice", what);
    const std::string& datatype = as_string(require(entry, "datatype", what), what + " datatype");
    if (datatype == "BYTES") fail("{}: datatype BYTES is not supported", what);
    if (datatype != triton_name(spec->type))
      fail("{}: datatype {}, the model takes {}", what, datatype, triton_name(spec->type));
    std::vector<std::int64_t> shape = read_shape(entry, what);
    check_shape(*spec, config.max_batch_size, shape, what);
    slot = read_tensor(entry, spec->type, std::move(shape), binary, body.size(), what);
  }
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i]) fail("input {} is missing", config.inputs[i].name);
  for (std::size_t i = 1; i < inputs.size() && config.max_batch_size > 0; ++i) {
    const std::int64_t rows = inputs[i]->shape()[0], first = inputs[0]->shape()[0];
    if (rows != first)
      fail("input {} has a batch of {}, input {} of {}", config.inputs[i].name, rows,
           config.inputs[0].name, first);
  }
  for (std::optional<tensor>& t : inputs) out.request.inputs.push_back(std::move(*t));
  if (binary.at != bytes.size())
    fail("{} bytes of binary data follow the JSON header, but the inputs take {}", bytes.size(),
         binary.at);

  if (const json* outputs = member(request, "outputs")) {
    for (const json& entry : as_array(*outputs, "\"outputs\"")) {
      as_object(entry, "an output");
      const std::string& name = as_string(require(entry, "name", "an output"), "an output's name");
      if (config.find_output(name) == nullptr) fail("model {} has no output {}", config.name, name);
      if (std::any_of(out.outputs.begin(), out.outputs.end(),
                      [&](const requested_output& o) { return o.name == name; }))
        fail("output {} is requested twice", name);
      bool binary_output = out.binary_data_output;
      if (const json* p = member(entry, "parameters"))
        if (const json* v = member(as_object(*p, "output parameters"), "binary_data"))
          binary_output = as_bool(*v, "parameter binary_data");
      out.outputs.push_back({name, binary_output});
    }
  }
  return out;
}

encoded_body encode_infer_response(const model_config& config, std::int64_t version,
                                   const decoded_request& request,
                                   const std::vector<tensor>& outputs) {
  if (outputs.size() != config.outputs.size())
    fail("model {} returned {} outputs, its configuration has {}", config.name, outputs.size(),
         config.outputs.size());
  buffer b;
  b.push_back('{');
  if (!request.id.empty())
    fmt::format_to(std::back_inserter(b), R"("id":{},)", json_string(request.id));
  fmt::format_to(std::back_inserter(b), R"("model_name":{},"model_version":"{}","outputs":[)",
                 json_string(config.name), version);
  std::vector<const tensor*> binaries;
  bool first = true;
  const auto put = [&](const tensor_spec& spec, bool binary) {
    if (!std::exchange(first, false)) b.push_back(',');
    put_tensor(b, spec.name, outputs[static_cast<std::size_t>(&spec - config.outputs.data())],
               binary, binaries);
  };
  if (request.outputs.empty())
    for (const tensor_spec& spec : config.outputs) put(spec, request.binary_data_output);
  for (const requested_output& o : request.outputs) {
    const tensor_spec* spec = config.find_output(o.name);
    if (spec == nullptr) fail("model {} has no output {}", config.name, o.name);
    put(*spec, o.binary);
  }
  b.append(std::string_view("]}"));
  return finish(b, binaries);
}

std::string error_json(std::string_view message) { return dump(json{{"error", message}}); }

encoded_body encode_infer_request(const std::vector<named_tensor>& inputs, bool binary,
                                  std::string_view id) {
  buffer b;
  b.push_back('{');
  if (!id.empty()) fmt::format_to(std::back_inserter(b), R"("id":{},)", json_string(id));
  if (binary) b.append(std::string_view(R"("parameters":{"binary_data_output":true},)"));
  b.append(std::string_view(R"("inputs":[)"));
  std::vector<const tensor*> binaries;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (i > 0) b.push_back(',');
    put_tensor(b, inputs[i].name, inputs[i].value, binary, binaries);
  }
  b.append(std::string_view("]}"));
  return finish(b, binaries);
}

std::vector<named_tensor> decode_infer_response(std::string_view body,
                                                std::optional<std::size_t> header_length) {
  const auto [text, bytes] = split_body(body, header_length);
  const json response = parse_header(text, "infer response");
  if (const json* error = member(response, "error"))
    fail("the server answered: {}",
         error->is_string() ? error->get<std::string>() : excerpt(*error));
  binary_cursor binary{bytes};
  std::vector<named_tensor> out;
  for (const json& entry :
       as_array(require(response, "outputs", "the infer response"), "\"outputs\"")) {
    as_object(entry, "an output");
    std::string name = as_string(require(entry, "name", "an output"), "an output's name");
    const std::string what = fmt::format("output {}", name);
    const dtype type = parse_dtype(as_string(require(entry, "datatype", what), what + " datatype"),
                                   k_tensor_dtypes, dtype_style::triton);
    tensor t = read_tensor(entry, type, read_shape(entry, what), binary, body.size(), what);
    out.push_back({std::move(name), std::move(t)});
  }
  if (binary.at != bytes.size())
    fail("{} bytes of binary data follow the JSON header, but the outputs take {}", bytes.size(),
         binary.at);
  return out;
}

json server_metadata_json() {
  return {{"name", "keel"},
          {"version", KEEL_VERSION_STRING},
          {"extensions",
           {"binary_tensor_data", "model_repository", "statistics", "model_configuration",
            "schedule_policy"}}};
}

json model_metadata_json(const model_config& config, const std::vector<std::int64_t>& versions) {
  json v = json::array(), inputs = json::array(), outputs = json::array();
  for (const std::int64_t n : versions) v.push_back(std::to_string(n));
  for (const tensor_spec& s : config.inputs)
    inputs.push_back(tensor_metadata(s, config.max_batch_size));
  for (const tensor_spec& s : config.outputs)
    outputs.push_back(tensor_metadata(s, config.max_batch_size));
  return {{"name", config.name},
          {"versions", std::move(v)},
          {"platform", platform_name(config.platform)},
          {"inputs", std::move(inputs)},
          {"outputs", std::move(outputs)}};
}

json model_config_json(const model_config& config) {
  const auto specs = [](const std::vector<tensor_spec>& list) {
    json out = json::array();
    for (const tensor_spec& s : list)
      out.push_back({{"name", s.name}, {"data_type", type_name(s.type)}, {"dims", s.dims}});
    return out;
  };
  json j = {{"name", config.name},
            {"platform", platform_name(config.platform)},
            {"max_batch_size", config.max_batch_size},
            {"input", specs(config.inputs)},
            {"output", specs(config.outputs)},
            {"version_policy", version_policy_json(config.versions)},
            {"default_model_filename", config.default_model_filename}};
  if (config.platform == model_platform::ensemble) {
    json steps = json::array();
    for (const ensemble_step& s : config.ensemble)
      steps.push_back({{"model_name", s.model_name},
                       {"model_version", s.model_version},
                       {"input_map", s.input_map},
                       {"output_map", s.output_map}});
    j["ensemble_scheduling"] = {{"step", std::move(steps)}};
  } else {
    j["instance_group"] = json::array({{{"count", config.instance_count}, {"kind", "KIND_CPU"}}});
  }
  if (config.has_dynamic_batching) {
    const dynamic_batching& d = config.batching;
    json priorities = json::object();
    for (const auto& [level, policy] : d.priority_policies)
      priorities[std::to_string(level)] = queue_policy_json(policy);
    j["dynamic_batching"] = {{"preferred_batch_size", d.preferred_batch_sizes},
                             {"max_queue_delay_microseconds", d.max_queue_delay_us},
                             {"preserve_ordering", d.preserve_ordering},
                             {"priority_levels", d.priority_levels},
                             {"default_priority_level", d.default_priority_level},
                             {"default_queue_policy", queue_policy_json(d.default_policy)},
                             {"priority_queue_policy", std::move(priorities)}};
  }
  if (!config.warmup.empty()) {
    json warmup = json::array();
    for (const warmup_sample& w : config.warmup) warmup.push_back(warmup_json(w));
    j["model_warmup"] = std::move(warmup);
  }
  return j;
}

json statistics_json(const std::vector<model_report>& models) {
  json stats = json::array();
  for (const model_report& m : models) {
    if (m.version <= 0) continue;
    const model_statistics& s = m.stats;
    stats.push_back({{"name", m.name},
                     {"version", std::to_string(m.version)},
                     {"last_inference", m.last_inference_ms},
                     {"inference_count", s.inference_count},
                     {"execution_count", s.execution_count},
                     {"inference_stats",
                      {{"success", duration(s.success, s.request_us)},
                       {"fail", duration(s.failure, 0)},
                       {"queue", duration(s.success, s.queue_us)},
                       {"compute_input", duration(s.success, 0)},
                       {"compute_infer", duration(s.success, s.compute_us)},
                       {"compute_output", duration(s.success, 0)}}},
                     {"batch_stats", json::array()}});
  }
  return {{"model_stats", std::move(stats)}};
}

json repository_index_json(const std::vector<model_report>& models) {
  json index = json::array();
  for (const model_report& m : models) {
    json entry = {{"name", m.name}, {"state", name_of(m.state)}};
    if (m.version > 0) entry["version"] = std::to_string(m.version);
    if (!m.reason.empty()) entry["reason"] = m.reason;
    index.push_back(std::move(entry));
  }
  return index;
}

std::string prometheus_metrics(const std::vector<model_report>& models, int threads,
                               std::uint64_t memory_budget, std::uint64_t resident_bytes) {
  struct metric {
    const char* name;
    const char* type;
    const char* help;
    std::uint64_t (*value)(const model_report&);
  };
  static constexpr metric k_metrics[] = {
      {"nv_inference_request_success", "counter",
       "Number of successful inference requests, all batch sizes",
       [](const model_report& m) { return m.stats.success; }},
      {"nv_inference_request_failure", "counter",
       "Number of failed inference requests, all batch sizes",
       [](const model_report& m) { return m.stats.failure; }},
      {"nv_inference_count", "counter", "Number of inferences performed (batch rows)",
       [](const model_report& m) { return m.stats.inference_count; }},
      {"nv_inference_exec_count", "counter", "Number of model executions performed (batches)",
       [](const model_report& m) { return m.stats.execution_count; }},
      {"nv_inference_request_duration_us", "counter",
       "Cumulative inference request duration in microseconds",
       [](const model_report& m) { return m.stats.request_us; }},
      {"nv_inference_queue_duration_us", "counter",
       "Cumulative inference queuing duration in microseconds",
       [](const model_report& m) { return m.stats.queue_us; }},
      {"nv_inference_compute_infer_duration_us", "counter",
       "Cumulative compute inference duration in microseconds",
       [](const model_report& m) { return m.stats.compute_us; }},
      {"nv_inference_pending_request_count", "gauge",
       "Instantaneous number of pending requests awaiting execution per-model",
       [](const model_report& m) { return m.stats.pending; }},
      {"keel_model_load_count", "counter", "Number of loads of the model version, reloads included",
       [](const model_report& m) { return m.loads; }},
      {"keel_model_load_duration_us", "counter", "Cumulative load duration in microseconds",
       [](const model_report& m) { return m.load_us; }},
      {"keel_model_evictions_total", "counter",
       "Number of evictions of the model version under the memory budget",
       [](const model_report& m) { return m.evictions; }},
      {"keel_model_resident_bytes", "gauge", "Bytes the model version keeps resident now",
       [](const model_report& m) { return m.resident ? m.resident_bytes : 0; }},
  };
  fmt::memory_buffer out;
  for (const metric& m : k_metrics) {
    metric_head(out, m.name, m.type, m.help);
    for (const model_report& r : models)
      if (r.version > 0)
        fmt::format_to(std::back_inserter(out), "{}{{model=\"{}\",version=\"{}\"}} {}\n", m.name,
                       label_value(r.name), r.version, m.value(r));
  }
  metric_head(out, "keel_serve_threads", "gauge", "The server's thread budget");
  fmt::format_to(std::back_inserter(out), "keel_serve_threads {}\n", threads);
  metric_head(out, "keel_serve_memory_budget_bytes", "gauge",
              "The server's memory budget in bytes (0: none)");
  fmt::format_to(std::back_inserter(out), "keel_serve_memory_budget_bytes {}\n", memory_budget);
  metric_head(out, "keel_serve_resident_bytes", "gauge",
              "Bytes the server's loaded models keep resident");
  fmt::format_to(std::back_inserter(out), "keel_serve_resident_bytes {}\n", resident_bytes);
  return fmt::to_string(out);
}

std::string prometheus_summary(std::string_view name, std::string_view help,
                               std::span<const double> quantiles, std::span<const double> values) {
  fmt::memory_buffer out;
  metric_head(out, name, "summary", help);
  for (std::size_t i = 0; i < values.size() && i < quantiles.size(); ++i)
    fmt::format_to(std::back_inserter(out), "{}{{quantile=\"{}\"}} {}\n", name, quantiles[i],
                   values[i]);
  return fmt::to_string(out);
}

}  // namespace keel::serve
