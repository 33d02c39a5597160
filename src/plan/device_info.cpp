#include "plan/device_info.hpp"

#include <cuda_runtime.h>

#include <array>
#include <memory>
#include <mutex>

#include "common/cuda_check.hpp"

namespace tgv::detail {
namespace {

constexpr int kMaxDevices = 64;

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
  d.tuning = load_tuning(d.name, d.num_sms);
  return d;
}

}  // namespace

const DeviceInfo& device_info(int ordinal) {
  static std::array<std::unique_ptr<DeviceInfo>, kMaxDevices> cache;
  static std::array<std::once_flag, kMaxDevices> once;
  if (ordinal < 0 || ordinal >= kMaxDevices)
    throw Error(TGV_ERROR_NOT_SUPPORTED,
                strfmt("device %d: outside the ordinals [0, %d) tgv-gemm tracks", ordinal, kMaxDevices));
  std::call_once(once[ordinal], [&] { cache[ordinal] = std::make_unique<DeviceInfo>(query(ordinal)); });
  return *cache[ordinal];
}

const DeviceInfo& current_device_info() {
  int ordinal = 0;
  TGV_CUDA_CHECK(cudaGetDevice(&ordinal));
  return device_info(ordinal);
}

}  // namespace tgv::detail
