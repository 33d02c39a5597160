// What planning needs to know about a GPU, read once per device and cached.
// Plain data so the planner can be unit-tested on a machine without a GPU.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "common/devices.hpp"
#include "plan/tuning.hpp"

namespace tgv::detail {

// The tuning table pointer, read by every call and replaced by
// tgv_reload_tuning while calls run: std::atomic_load/atomic_store (C++17's
// free functions over shared_ptr) make the swap safe, and a call's snapshot
// keeps the table it started with alive until it returns. Copying takes a
// snapshot, so DeviceInfo stays copyable plain data for the host tests.
class TuningSlot {
 public:
  TuningSlot() = default;
  TuningSlot(const TuningSlot& other) : table_(other.load()) {}
  TuningSlot& operator=(const TuningSlot& other) {
    store(other.load());
    return *this;
  }

  std::shared_ptr<const TuningTable> load() const { return std::atomic_load(&table_); }
  void store(std::shared_ptr<const TuningTable> table) { std::atomic_store(&table_, std::move(table)); }

 private:
  std::shared_ptr<const TuningTable> table_;
};

struct DeviceInfo {
  int32_t ordinal = 0;
  int32_t cc_major = 0, cc_minor = 0;
  int32_t num_sms = 0;
  int64_t smem_optin_bytes = 0;  // dynamic shared memory a block may opt into
  std::string name;
  // Clusters of i CTAs, one CTA per SM, the device holds at once (0: not
  // measured). The GPCs' SM counts are not multiples of every size: an H200
  // holds 30 clusters of 4 (120 CTAs) and 39 of 3 (117), not 33 and 44.
  std::array<int32_t, 17> max_clusters{};
  double peak_hbm_gbps = 0;  // from the memory clock and bus width (0: unknown)

  int32_t sm() const { return cc_major * 10 + cc_minor; }

  // Measured choices for this GPU (never null once queried; may be empty).
  // Hold the snapshot for the whole call: a reload may replace the table meanwhile.
  std::shared_ptr<const TuningTable> tuning_snapshot() const { return tuning_.load(); }
  void set_tuning(std::shared_ptr<const TuningTable> table) { tuning_.store(std::move(table)); }

 private:
  TuningSlot tuning_;
};

// A device's info and tuning table, read once per ordinal and cached;
// thread-safe. An ordinal outside [0, kMaxDevices) is NOT_SUPPORTED.
const DeviceInfo& device_info(int ordinal);

// The same for the current device (cudaGetDevice).
const DeviceInfo& current_device_info();

// Re-reads `dev`'s tuning table from the file's search path (load_tuning) and
// swaps it in; calls already planning keep the table they started with.
void reload_tuning(DeviceInfo& dev);

// reload_tuning for every device this process has queried so far (the ones
// not yet queried read the file when they first are).
void reload_tuning_of_queried_devices();

}  // namespace tgv::detail
