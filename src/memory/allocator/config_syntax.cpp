// Tokens and values of PYTORCH_CUDA_ALLOC_CONF strings (config_syntax.hpp).
#include "config_syntax.hpp"

#include <cctype>
#include <utility>

namespace keel::memory::config_detail {

std::vector<token> tokenize(std::string_view text, pytorch_grammar grammar) {
  std::vector<token> out;
  const auto skipped = [&](char c) {
    return is_legacy(grammar) ? c == ' ' : std::isspace(static_cast<unsigned char>(c)) != 0;
  };
  std::string word;
  std::size_t word_column = 0;
  const auto flush = [&] {
    if (!word.empty()) out.push_back({std::move(word), word_column, out.size()});
    word.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (is_punct(c)) {
      flush();
      out.push_back({std::string(1, c), i + 1, out.size()});
    } else if (!skipped(c)) {
      if (word.empty()) word_column = i + 1;
      word += c;
    }
  }
  flush();
  return out;
}

std::string value_text(const item& it) {
  if (!it.is_list) return it.value->text;
  std::string out = "[";
  for (std::size_t i = 0; i < it.list.size(); ++i) {
    if (i != 0) out += ',';
    out += it.list[i].key->text;
    if (it.list[i].value != nullptr) out += ':' + it.list[i].value->text;
  }
  return out + ']';
}

}  // namespace keel::memory::config_detail
