#include "keel/core/json_value.hpp"

#include <string>
#include <utility>
#include <vector>

namespace keel {

json_value parse_json(std::string_view text, std::string_view source,
                      const json_reader_options& options) {
  json_reader rd(text, source, options);
  json_value root;
  // Open containers, innermost last; `keys` holds the key each open object is filling.
  std::vector<json_value*> open;
  std::vector<std::string> keys;
  // Places a value in the innermost container (or as the root) and returns where it lies.
  auto place = [&](json_value&& v) -> json_value& {
    if (open.empty()) return root = std::move(v);
    json_value& parent = *open.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return parent.back();
    }
    json_value& slot = parent[keys.back()];
    slot = std::move(v);
    return slot;
  };
  for (;;) {
    switch (rd.next()) {
      case json_event::begin_object:
        open.push_back(&place(json_value::object()));
        keys.emplace_back();
        break;
      case json_event::begin_array:
        open.push_back(&place(json_value::array()));
        keys.emplace_back();
        break;
      case json_event::end_object:
      case json_event::end_array:
        open.pop_back();
        keys.pop_back();
        break;
      case json_event::key: keys.back().assign(rd.string()); break;
      case json_event::string: place(json_value(std::string(rd.string()))); break;
      case json_event::number:
        switch (rd.number_type()) {
          case json_number::unsigned_integer: place(json_value(rd.as_unsigned())); break;
          case json_number::signed_integer: place(json_value(rd.as_signed())); break;
          case json_number::floating: place(json_value(rd.as_double())); break;
        }
        break;
      case json_event::boolean: place(json_value(rd.as_bool())); break;
      case json_event::null: place(json_value(nullptr)); break;
      case json_event::end: return root;
    }
  }
}

}  // namespace keel
