// Just enough JSON for the library's small files (the tuning file, the
// self-check cache): a reader of objects, arrays, strings without escapes beyond
// \" and \\, numbers, true/false/null, and the quoting their writers need.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tgv::detail {

struct Json {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  double number = 0;
  bool boolean = false;
  std::string text;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> fields;

  const Json* get(const std::string& key) const {
    for (const auto& [k, v] : fields)
      if (k == key) return &v;
    return nullptr;
  }
};

// Parses all of `text` into `out`; on failure says where in `error`.
bool parse_json(const std::string& text, Json* out, std::string* error);

// The integer field `key` of an object; false if absent or not a whole number.
bool json_integer(const Json& object, const char* key, int64_t* out);

// `text` as a JSON string literal, quotes included. Control characters become
// spaces: the reader above knows no other escapes.
std::string json_quote(const std::string& text);

}  // namespace tgv::detail
