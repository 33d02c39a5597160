// What planning needs to know about a GPU, read once per device and cached.
// Plain data so the planner can be unit-tested on a machine without a GPU.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "plan/tuning.hpp"

namespace tgv::detail {

struct DeviceInfo {
  int32_t ordinal = 0;
  int32_t cc_major = 0, cc_minor = 0;
  int32_t num_sms = 0;
  int64_t smem_optin_bytes = 0;  // dynamic shared memory a block may opt into
  std::string name;
  // Measured choices for this GPU (never null once queried; may be empty).
  std::shared_ptr<const TuningTable> tuning;

  int32_t sm() const { return cc_major * 10 + cc_minor; }
};

// A device's info and tuning table, read once per ordinal and cached;
// thread-safe. An ordinal outside [0, 64) is NOT_SUPPORTED.
const DeviceInfo& device_info(int ordinal);

// The same for the current device (cudaGetDevice).
const DeviceInfo& current_device_info();

}  // namespace tgv::detail
