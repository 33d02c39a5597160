#include "plan/tuning.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "tgv/tgv.h"

namespace tgv::detail {
namespace {

// Just enough JSON for the tuning file: objects, arrays, strings without
// escapes beyond \" and \\, numbers, true/false/null.
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

bool integer(const Json& entry, const char* key, int64_t* out) {
  const Json* v = entry.get(key);
  if (v == nullptr || v->kind != Json::Number || v->number != static_cast<double>(static_cast<int64_t>(v->number)))
    return false;
  *out = static_cast<int64_t>(v->number);
  return true;
}

}  // namespace

int64_t TuningTable::bucket(int64_t m) {
  int64_t b = 1;
  while (b < m) b *= 2;
  return b;
}

bool TuningTable::parse(const std::string& text, const std::string& gpu, int32_t sm_count,
                        const std::string& version, std::string* error) {
  entries_.clear();
  Json root;
  if (!Parser(text).parse(&root, error)) return false;
  const Json* format = root.get("format");
  if (root.kind != Json::Object || format == nullptr || format->text != kTuningFormat) {
    *error = std::string("not a ") + kTuningFormat + " file";
    return false;
  }
  const Json* file_gpu = root.get("gpu");
  const Json* file_version = root.get("library_version");
  int64_t file_sms = 0;
  if (file_gpu == nullptr || file_version == nullptr || !integer(root, "sm_count", &file_sms)) {
    *error = "the header lacks gpu, sm_count or library_version";
    return false;
  }
  if (file_gpu->text != gpu || file_sms != sm_count || file_version->text != version) {
    *error = "stale: tuned for " + file_gpu->text + " with " + std::to_string(file_sms) + " SMs, library " +
             file_version->text + "; this is " + gpu + " with " + std::to_string(sm_count) + " SMs, library " + version;
    return false;
  }
  const Json* entries = root.get("entries");
  if (entries == nullptr || entries->kind != Json::Array) {
    *error = "no entries array";
    return false;
  }
  for (size_t i = 0; i < entries->items.size(); ++i) {
    const Json& e = entries->items[i];
    int64_t n = 0, k = 0, m = 0, tactic = -1, split = 1;
    const Json* backend = e.get("backend");
    const bool shape_ok = integer(e, "n", &n) && integer(e, "k", &k) && integer(e, "m", &m) && n > 0 && k > 0 &&
                          m > 0 && bucket(m) == m;
    const bool cublas = backend != nullptr && backend->text == "cublas";
    const bool tgv = backend != nullptr && backend->text == "tgv" && integer(e, "tactic", &tactic) &&
                     integer(e, "split_k", &split) && tactic >= 0 && split >= 1;
    if (!shape_ok || !(cublas || tgv)) {
      entries_.clear();
      *error = "entry " + std::to_string(i) + " is malformed";
      return false;
    }
    TunedChoice c;
    c.cublas = cublas;
    c.tactic = cublas ? -1 : static_cast<int32_t>(tactic);
    c.split_k = cublas ? 1 : static_cast<int32_t>(split);
    entries_[{n, k, m}] = c;
  }
  return true;
}

const TunedChoice* TuningTable::find(int64_t n, int64_t k, int64_t m) const {
  auto it = entries_.find({n, k, bucket(m)});
  return it == entries_.end() ? nullptr : &it->second;
}

std::string tuning_file_path() {
  if (const char* p = std::getenv("TGV_TUNING_FILE"); p != nullptr && p[0] != '\0') return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && x[0] != '\0')
    return std::string(x) + "/tgv-gemm/tuning.json";
  if (const char* h = std::getenv("HOME"); h != nullptr && h[0] != '\0') return std::string(h) + "/.cache/tgv-gemm/tuning.json";
  return {};
}

std::shared_ptr<const TuningTable> load_tuning(const std::string& gpu, int32_t sm_count) {
  auto table = std::make_shared<TuningTable>();
  const std::string path = tuning_file_path();
  std::ifstream file(path);
  if (path.empty() || !file) return table;  // no file: the ladder decides, silently
  std::stringstream text;
  text << file.rdbuf();
  std::string error;
  if (!table->parse(text.str(), gpu, sm_count, tgv_version_string(), &error))
    std::fprintf(stderr, "[tgv] ignoring tuning file %s: %s\n", path.c_str(), error.c_str());
  return table;
}

}  // namespace tgv::detail
