#include "common/json.hpp"

#include <cctype>
#include <cstdlib>

namespace tgv::detail {
namespace {

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  bool parse(Json* out, std::string* error) {
    if (!value(out) || (skip(), pos_ != s_.size())) {
      *error = "not valid JSON near byte " + std::to_string(pos_);
      return false;
    }
    return true;
  }

 private:
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (s_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }
  bool string(std::string* out) {
    if (!eat('"')) return false;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) ++pos_;
      out->push_back(s_[pos_++]);
    }
    return pos_ < s_.size() && s_[pos_++] == '"';
  }
  bool value(Json* out) {
    if (++depth_ > 32) return false;
    skip();
    if (pos_ >= s_.size()) return false;
    const char c = s_[pos_];
    bool ok = false;
    if (c == '{') {
      out->kind = Json::Object;
      ++pos_;
      ok = true;
      if (!eat('}')) {
        do {
          std::string key;
          Json v;
          if (!string(&key) || !eat(':') || !value(&v)) return false;
          out->fields.emplace_back(std::move(key), std::move(v));
        } while (eat(','));
        ok = eat('}');
      }
    } else if (c == '[') {
      out->kind = Json::Array;
      ++pos_;
      ok = true;
      if (!eat(']')) {
        do {
          Json v;
          if (!value(&v)) return false;
          out->items.push_back(std::move(v));
        } while (eat(','));
        ok = eat(']');
      }
    } else if (c == '"') {
      out->kind = Json::String;
      ok = string(&out->text);
    } else if (literal("true")) {
      out->kind = Json::Bool;
      out->boolean = true;
      ok = true;
    } else if (literal("false")) {
      out->kind = Json::Bool;
      ok = true;
    } else if (literal("null")) {
      ok = true;
    } else {
      char* end = nullptr;
      out->number = std::strtod(s_.c_str() + pos_, &end);
      ok = end != s_.c_str() + pos_;
      if (ok) {
        out->kind = Json::Number;
        pos_ = static_cast<size_t>(end - s_.c_str());
      }
    }
    --depth_;
    return ok;
  }

  const std::string& s_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

bool parse_json(const std::string& text, Json* out, std::string* error) { return Parser(text).parse(out, error); }

bool json_integer(const Json& object, const char* key, int64_t* out) {
  const Json* v = object.get(key);
  if (v == nullptr || v->kind != Json::Number || v->number != static_cast<double>(static_cast<int64_t>(v->number)))
    return false;
  *out = static_cast<int64_t>(v->number);
  return true;
}

std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  }
  return out + "\"";
}

}  // namespace tgv::detail
