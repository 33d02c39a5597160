#include "plan/tuning.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/json.hpp"
#include "common/strfmt.hpp"
#include "tactics/tactics.hpp"
#include "tgv/tgv.h"

namespace tgv::detail {

int64_t TuningTable::bucket(int64_t m) {
  int64_t b = 1;
  while (b < m) b *= 2;
  return b;
}

bool TuningTable::parse(const std::string& text, const std::string& gpu, int32_t sm_count,
                        const std::string& version, std::string* error) {
  entries_.clear();
  Json root;
  if (!parse_json(text, &root, error)) return false;
  const Json* format = root.get("format");
  if (root.kind != Json::Object || format == nullptr || format->text != kTuningFormat) {
    *error = std::string("not a ") + kTuningFormat + " file";
    return false;
  }
  const Json* file_gpu = root.get("gpu");
  const Json* file_version = root.get("library_version");
  int64_t file_sms = 0;
  if (file_gpu == nullptr || file_version == nullptr || !json_integer(root, "sm_count", &file_sms)) {
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
    int64_t n = 0, k = 0, m = 0, tactic = -1, split = 1, stages = 0;
    const Json* backend = e.get("backend");
    const bool shape_ok = json_integer(e, "n", &n) && json_integer(e, "k", &k) && json_integer(e, "m", &m) && n > 0 &&
                          k > 0 && m > 0 && bucket(m) == m;
    const bool cublas = backend != nullptr && backend->text == "cublas";
    const bool tgv = backend != nullptr && backend->text == "tgv" && json_integer(e, "tactic", &tactic) &&
                     json_integer(e, "split_k", &split) && tactic >= 0 && (split >= 1 || split == kSplitKStream) &&
                     (e.get("stages") == nullptr || (json_integer(e, "stages", &stages) && stages >= 0));
    if (!shape_ok || !(cublas || tgv)) {
      entries_.clear();
      *error = "entry " + std::to_string(i) + " is malformed";
      return false;
    }
    TunedChoice c;
    c.cublas = cublas;
    c.tactic = cublas ? -1 : static_cast<int32_t>(tactic);
    c.split_k = cublas ? 1 : static_cast<int32_t>(split);
    c.stages = cublas ? 0 : static_cast<int32_t>(stages);
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

std::string tuning_json(const std::string& gpu, int32_t sm_count, const std::string& version,
                        const tgv_tuning_entry* entries, size_t count) {
  if (sm_count < 1) throw_invalid(strfmt("sm_count=%d: must be at least 1", sm_count));
  std::string text = "{\n  \"format\": " + json_quote(kTuningFormat) + ",\n  \"library_version\": " +
                     json_quote(version) + ",\n  \"gpu\": " + json_quote(gpu) + ",\n  \"sm_count\": " +
                     std::to_string(sm_count) + ",\n  \"entries\": [";
  for (size_t i = 0; i < count; ++i) {
    const tgv_tuning_entry& e = entries[i];
    const bool cublas = e.backend == TGV_BACKEND_CUBLAS;
    const char* bad = nullptr;
    if (e.n < 1) bad = "n";
    else if (e.k < 1) bad = "k";
    else if (e.m < 1 || e.m > 256 || TuningTable::bucket(e.m) != e.m) bad = "m (a power of two in [1, 256])";
    else if (!cublas && e.backend != TGV_BACKEND_TGV) bad = "backend (TGV_BACKEND_TGV or TGV_BACKEND_CUBLAS)";
    else if (!cublas && (e.tactic < 0 || e.tactic >= kNumTactics)) bad = "tactic";
    else if (!cublas && (e.split_k < 1 || e.split_k > kMaxSplitK) && e.split_k != kSplitKStream) bad = "split_k";
    else if (!cublas && (e.stages < 0 || e.stages == 1 || e.stages > kMaxStages)) bad = "stages";
    else if (!std::isfinite(e.us) || e.us < 0) bad = "us";
    else if (!std::isfinite(e.cublas_us) || e.cublas_us < 0) bad = "cublas_us";
    if (bad != nullptr)
      throw_invalid(strfmt("entries[%zu] (n=%lld k=%lld m=%lld backend=%d tactic=%d split_k=%d stages=%d): bad %s", i,
                           (long long)e.n, (long long)e.k, (long long)e.m, e.backend, e.tactic, e.split_k, e.stages,
                           bad));
    text += strfmt("%s\n    {\"n\": %lld, \"k\": %lld, \"m\": %lld, \"backend\": \"%s\", \"tactic\": %d, "
                   "\"split_k\": %d, \"stages\": %d, \"us\": %.3f, \"cublas_us\": %.3f}",
                   i ? "," : "", (long long)e.n, (long long)e.k, (long long)e.m, cublas ? "cublas" : "tgv",
                   cublas ? -1 : e.tactic, cublas ? 1 : e.split_k, cublas ? 0 : e.stages, e.us, e.cublas_us);
  }
  return text + "\n  ]\n}\n";
}

void write_tuning_file(const std::string& path, const std::string& gpu, int32_t sm_count,
                       const tgv_tuning_entry* entries, size_t count) {
  const std::string text = tuning_json(gpu, sm_count, tgv_version_string(), entries, count);
  const std::string where = path.empty() ? tuning_file_path() : path;
  if (where.empty())
    throw_invalid("path is empty and no default applies: set TGV_TUNING_FILE, XDG_CACHE_HOME or HOME");
  std::string error;
  if (!write_file_whole(where, text, &error)) throw_invalid(strfmt("path=%s: %s", where.c_str(), error.c_str()));
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
