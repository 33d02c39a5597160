#include "plan/device_info.hpp"

#include <cuda_runtime.h>

#include <array>
#include <memory>
#include <mutex>

#include "common/cuda_check.hpp"
#include "launch/cluster_occupancy.hpp"

namespace tgv::detail {
namespace {

// The queried devices. An entry is written once, under `mutex`, inside its
// call_once; the hot path reads it through call_once, the reloads under `mutex`.
struct Registry {
  std::array<std::unique_ptr<DeviceInfo>, kMaxDevices> devices;
  std::array<std::once_flag, kMaxDevices> once;
  std::mutex mutex;
};

Registry& registry() {
  static Registry r;
  return r;
}

DeviceInfo query(int ordinal) {
  DeviceInfo d;
  d.ordinal = ordinal;
  cudaDeviceProp prop{};
  TGV_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.num_sms = prop.multiProcessorCount;
  d.smem_optin_bytes = static_cast<int64_t>(prop.sharedMemPerBlockOptin);
  d.name = prop.name;
  int clock_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, ordinal) == cudaSuccess &&
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, ordinal) == cudaSuccess)
    d.peak_hbm_gbps = 2.0 * clock_khz * 1e3 * (bus_bits / 8) * 1e-9;  // double data rate
  (void)cudaGetLastError();  // an attribute this driver lacks is not an error of the caller's
  if (d.cc_major >= 9) d.max_clusters = measure_max_clusters(ordinal, d.smem_optin_bytes);
  return d;
}

}  // namespace

const DeviceInfo& device_info(int ordinal) {
  Registry& r = registry();
  if (ordinal < 0 || ordinal >= kMaxDevices)
    throw Error(TGV_ERROR_NOT_SUPPORTED,
                strfmt("device %d: outside the ordinals [0, %d) tgv-gemm tracks", ordinal, kMaxDevices));
  std::call_once(r.once[ordinal], [&] {
    auto info = std::make_unique<DeviceInfo>(query(ordinal));
    // The table is read under the reloads' lock: a file written before a
    // reload is then read either here or by that reload, never by neither.
    std::lock_guard<std::mutex> lock(r.mutex);
    reload_tuning(*info);
    r.devices[ordinal] = std::move(info);
  });
  return *r.devices[ordinal];
}

const DeviceInfo& current_device_info() {
  int ordinal = 0;
  TGV_CUDA_CHECK(cudaGetDevice(&ordinal));
  return device_info(ordinal);
}

void reload_tuning(DeviceInfo& dev) { dev.set_tuning(load_tuning(dev.name, dev.num_sms)); }

void reload_tuning_of_queried_devices() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto& dev : r.devices)
    if (dev != nullptr) reload_tuning(*dev);
}

}  // namespace tgv::detail
