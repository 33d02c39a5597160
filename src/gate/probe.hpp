// The self-check's probe (probe.cu): the device's tgv kernel family against
// cuBLASLt on a few small shapes and layouts. The gate (self_check.cpp) calls it
// once per device and family, unless the cache or TGV_SELF_CHECK decides.
#pragma once

#include "gate/self_check.hpp"
#include "plan/device_info.hpp"

namespace tgv::detail {

// Runs on dev.ordinal (the calling thread's device and graph-capture mode are
// restored afterwards); never throws: every failure is an outcome.
ProbeOutcome run_probe(const DeviceInfo& dev);

}  // namespace tgv::detail
