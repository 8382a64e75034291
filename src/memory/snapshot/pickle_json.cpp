// The JSON front end onto the same value tree as the pickle reader (keel/memory/pickle.hpp):
// the events of keel's JSON reader (keel/core/json_reader.hpp) become nodes as they come,
// under the document's limits, with an explicit stack of open containers (no recursion on
// input depth). Lone surrogate escapes are kept (WTF-8): the snapshot's JSON writer writes a
// pickle's that way.
#include <bit>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/core/json_reader.hpp"
#include "keel/memory/pickle.hpp"
#include "pickle_tree.hpp"

namespace keel::memory::pickle {

document parse_json(std::string_view text, std::string_view source, const limits& lim) {
  using detail::builder;
  document doc;
  doc.source_ = std::string(source);
  doc.text_ = true;
  doc.text_copy_.assign(text);
  json_reader_options options;
  options.max_depth = lim.max_depth;
  options.surrogates = json_surrogates::keep;
  json_reader rd(text, doc.source_, options);
  builder b(doc, lim);
  struct open_frame {
    std::uint32_t node;
    std::size_t items_begin;  // into items
  };
  std::vector<open_frame> open;
  std::vector<std::uint32_t> items;  // the items of the open containers, innermost last
  try {
    for (;;) {
      std::uint32_t v = 0;
      const json_event e = rd.next();
      switch (e) {
        case json_event::begin_object:
        case json_event::begin_array:
          open.push_back(
              {b.add(e == json_event::begin_object ? kind::dict : kind::list, rd.offset()),
               items.size()});
          continue;
        case json_event::end_object:
        case json_event::end_array: {
          const open_frame f = open.back();
          open.pop_back();
          b.append(f.node, items.data() + f.items_begin, items.size() - f.items_begin);
          items.resize(f.items_begin);
          v = f.node;
          break;
        }
        case json_event::key:
        case json_event::string: {
          const std::string_view s = rd.string();
          v = b.add_string(kind::string, rd.offset(), doc.data_.size(), s.size());
          doc.data_.append(s);
          break;
        }
        case json_event::number:
          switch (rd.number_type()) {
            case json_number::unsigned_integer:
              v = b.add_int(rd.as_unsigned(), (rd.as_unsigned() >> 63) != 0, rd.offset());
              break;
            case json_number::signed_integer:
              v = b.add_int(static_cast<std::uint64_t>(rd.as_signed()), false, rd.offset());
              break;
            case json_number::floating:
              v = b.add(kind::floating, rd.offset(), std::bit_cast<std::uint64_t>(rd.as_double()));
              break;
          }
          break;
        case json_event::boolean:
          v = b.add(kind::boolean, rd.offset(), rd.as_bool() ? 1 : 0);
          break;
        case json_event::null: v = b.add(kind::none, rd.offset()); break;
        case json_event::end: break;  // not before the root value is complete
      }
      if (open.empty()) {
        doc.root_ = v;
        break;
      }
      items.push_back(v);
    }
  } catch (const builder::failure& f) {
    throw doc.text_error(rd.offset(), f.message);
  }
  rd.next();  // the end of the text: refuses trailing characters
  return doc;
}

}  // namespace keel::memory::pickle
