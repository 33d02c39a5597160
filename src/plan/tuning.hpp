// The per-GPU tuning file: measured best choices that override the ladder.
//
// Written by `tgv-bench --tune FILE` and tgv_gemm.tune, both through
// write_tuning_file below (tgv_write_tuning_file); read when a device is first queried in a
// process, and again on tgv_reload_tuning, from $TGV_TUNING_FILE, else
// $XDG_CACHE_HOME/tgv-gemm/tuning.json, else ~/.cache/tgv-gemm/tuning.json. A
// file for another GPU, SM count or library version (stale), or one that does
// not parse (corrupt), is reported on stderr at each read and ignored: it never
// fails a call.
//
//   {"format": "tgv-gemm-tuning/1", "library_version": "0.1.0" (tgv_version_string()),
//    "gpu": "NVIDIA H200", "sm_count": 132,
//    "entries": [{"n": 4096, "k": 4096, "m": 8, "backend": "tgv",
//                 "tactic": 0, "split_k": 2, "stages": 8, "us": 10.4,
//                 "cublas_us": 12.5}, ...]}
//
// An entry covers the M bucket m (a power of two): every M in (m/2, m].
// "stages" 0 means the deepest pipeline that fits; files written before the
// key existed lack it and read as 0, which is what they measured.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "tgv/tgv.h"

namespace tgv::detail {

inline constexpr const char* kTuningFormat = "tgv-gemm-tuning/1";

struct TunedChoice {
  bool cublas = false;  // cuBLASLt measured faster
  int32_t tactic = -1;
  int32_t split_k = 1;
  int32_t stages = 0;  // 0: the deepest that fits
};

class TuningTable {
 public:
  // Parses `text`; on failure returns false and says why in `error`. Entries are
  // kept only when the header matches (gpu, sm_count, version); else `error`
  // says the file is stale.
  bool parse(const std::string& text, const std::string& gpu, int32_t sm_count, const std::string& version,
             std::string* error);

  // The choice for (n, k) at M tokens, or nullptr.
  const TunedChoice* find(int64_t n, int64_t k, int64_t m) const;
  size_t size() const { return entries_.size(); }

  static int64_t bucket(int64_t m);  // smallest power of two >= m

 private:
  std::map<std::tuple<int64_t, int64_t, int64_t>, TunedChoice> entries_;
};

// The table for a device, read from the paths above; empty where there is no
// usable file (a stale or corrupt one is reported on stderr). Called when a
// device is first queried and on each reload (device_info.cpp).
std::shared_ptr<const TuningTable> load_tuning(const std::string& gpu, int32_t sm_count);

// Where the library looks for the file (for messages and for the tuners' default).
std::string tuning_file_path();

// The file's text for `entries` (the format above; gpu quoted as JSON), the one
// writer of the format that both tuners use. Throws INVALID_ARGUMENT naming
// the entry and field of a malformed entry (one parse() would reject).
std::string tuning_json(const std::string& gpu, int32_t sm_count, const std::string& version,
                        const tgv_tuning_entry* entries, size_t count);

// tuning_json(...) with this library's version, written whole to `path` (""
// for tuning_file_path()); throws INVALID_ARGUMENT if it cannot be written.
void write_tuning_file(const std::string& path, const std::string& gpu, int32_t sm_count,
                       const tgv_tuning_entry* entries, size_t count);

}  // namespace tgv::detail
