// What the planner reads off the GPU (src/plan/device_info.*): the clusters of
// each size it holds at once, and the peak memory bandwidth, queried once.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include "gpu/harness.hpp"
#include "plan/cost_model.hpp"
#include "plan/device_info.hpp"

namespace {

using namespace tgv::detail;

TEST(DeviceInfo, ResidentClustersAreMeasuredOnHopper) {
  TGV_REQUIRE_GPU();
  const DeviceInfo& dev = current_device_info();
  if (dev.cc_major < 9) GTEST_SKIP() << "cannot run on this device: clusters need sm_90 or newer; it is sm_" << dev.sm();
  // One CTA per SM: clusters of 1 are the SMs; every size holds at least one
  // cluster and never more CTAs than there are SMs.
  EXPECT_EQ(dev.max_clusters[1], dev.num_sms);
  for (int size = 1; size <= 8; ++size) {
    EXPECT_GT(dev.max_clusters[size], 0) << size;
    EXPECT_LE(dev.max_clusters[size] * size, dev.num_sms) << size;
    EXPECT_EQ(resident_clusters(dev, size), dev.max_clusters[size]);
  }
  if (dev.name.find("H200") != std::string::npos && dev.num_sms == 132) {
    // The values the cost model was fitted with (bench/experiments/data/cluster-occupancy-h200.txt).
    EXPECT_EQ(dev.max_clusters[3], 39);
    EXPECT_EQ(dev.max_clusters[4], 30);
    EXPECT_EQ(dev.max_clusters[8], 15);
  }
  EXPECT_GT(dev.peak_hbm_gbps, 100.0);
}

}  // namespace
