// The text of a tuning file (src/plan/tuning.hpp's format), for the host tests
// that parse one or have the library read one.
#pragma once

#include <string>

#include "tgv/tgv.h"

namespace tgv_test {

inline std::string tuning_file(const std::string& entries, const std::string& gpu, int sms,
                               const std::string& version = tgv_version_string()) {
  return "{\"format\": \"tgv-gemm-tuning/1\", \"library_version\": \"" + version + "\", \"gpu\": \"" + gpu +
         "\", \"sm_count\": " + std::to_string(sms) + ", \"entries\": [" + entries + "]}";
}

}  // namespace tgv_test
