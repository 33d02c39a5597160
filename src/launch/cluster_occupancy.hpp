// How many clusters of each size a device holds at once for a kernel that
// takes a whole SM (our tgv kernels: the ring fills shared memory). The
// planner's cost model counts waves in these.
#pragma once

#include <array>
#include <cstdint>

namespace tgv::detail {

// Entry i: clusters of i CTAs resident at once, for i in 1..16; 0 where the
// driver does not say (sizes above 8 are non-portable).
std::array<int32_t, 17> measure_max_clusters(int device, int64_t smem_optin_bytes);

}  // namespace tgv::detail
