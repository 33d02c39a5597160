// Replacing a device's tuning table while calls read it: the snapshot a call
// holds outlives the swap, concurrent readers see one table or the other, and
// a reload re-reads the file from the search path (stale or missing: empty).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gate_sandbox.hpp"
#include "plan/device_info.hpp"
#include "plan/tuning.hpp"
#include "tgv/tgv.h"
#include "tuning_file.hpp"

namespace {

using tgv::detail::DeviceInfo;
using tgv::detail::TuningTable;

// No such GPU exists: nothing in the environment can match it by accident.
const char* kGpu = "tgv-test reload GPU";
constexpr int kSms = 77;

DeviceInfo fake_device() {
  DeviceInfo d;
  d.cc_major = 9;
  d.num_sms = kSms;
  d.name = kGpu;
  return d;
}

std::string entry(int64_t n, int32_t tactic) {
  return "{\"n\": " + std::to_string(n) + ", \"k\": 4096, \"m\": 8, \"backend\": \"tgv\", \"tactic\": " +
         std::to_string(tactic) + ", \"split_k\": 1}";
}

std::shared_ptr<const TuningTable> table_with(int64_t n) {
  auto t = std::make_shared<TuningTable>();
  std::string error;
  if (!t->parse(tgv_test::tuning_file(entry(n, 0), kGpu, kSms), kGpu, kSms, tgv_version_string(), &error))
    ADD_FAILURE() << error;
  return t;
}

TEST(TuningReload, SetTuningReplacesTheSnapshot) {
  DeviceInfo dev = fake_device();
  EXPECT_EQ(dev.tuning_snapshot(), nullptr);
  const auto a = table_with(1024), b = table_with(2048);
  dev.set_tuning(a);
  EXPECT_EQ(dev.tuning_snapshot(), a);
  dev.set_tuning(b);
  EXPECT_EQ(dev.tuning_snapshot(), b);
  // A copy takes the table it had then, and is swapped on its own.
  DeviceInfo copy = dev;
  EXPECT_EQ(copy.tuning_snapshot(), b);
  copy.set_tuning(a);
  EXPECT_EQ(dev.tuning_snapshot(), b);
}

TEST(TuningReload, ASnapshotOutlivesTheSwap) {
  DeviceInfo dev = fake_device();
  dev.set_tuning(table_with(1024));
  const std::shared_ptr<const TuningTable> held = dev.tuning_snapshot();
  std::weak_ptr<const TuningTable> watch = held;
  dev.set_tuning(table_with(2048));
  ASSERT_FALSE(watch.expired());  // the call that took it still plans with it
  ASSERT_NE(held->find(1024, 4096, 8), nullptr);
  EXPECT_EQ(dev.tuning_snapshot()->find(1024, 4096, 8), nullptr);
  EXPECT_NE(dev.tuning_snapshot()->find(2048, 4096, 8), nullptr);
}

TEST(TuningReload, ReadersDuringSwapsSeeOneTableOrTheOther) {
  DeviceInfo dev = fake_device();
  const auto a = table_with(1024), b = table_with(2048);
  dev.set_tuning(a);
  std::atomic<bool> stop{false};
  std::atomic<long> reads{0}, torn{0};
  std::atomic<int> started{0};
  std::vector<std::thread> readers;
  constexpr int kReaders = 3;
  for (int r = 0; r < kReaders; ++r)
    readers.emplace_back([&] {
      started.fetch_add(1);
      do {  // at least one read each, however the threads get scheduled
        const auto t = dev.tuning_snapshot();
        const bool has_a = t != nullptr && t->find(1024, 4096, 8) != nullptr;
        const bool has_b = t != nullptr && t->find(2048, 4096, 8) != nullptr;
        if (t == nullptr || t->size() != 1 || has_a == has_b) torn.fetch_add(1);
        reads.fetch_add(1);
      } while (!stop.load(std::memory_order_relaxed));
    });
  // Swap only once every reader runs: on a loaded 2-core machine the swaps
  // could otherwise all finish before any reader starts.
  while (started.load() < kReaders) std::this_thread::yield();
  for (int i = 0; i < 5000; ++i) {
    // Fresh copies too, so that a table is freed while readers run.
    dev.set_tuning(i % 2 ? b : std::make_shared<TuningTable>(*a));
    dev.set_tuning(i % 2 ? a : b);
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_GE(reads.load(), kReaders);
}

class TuningReloadFile : public ::testing::Test {
 protected:
  void TearDown() override { std::remove(path().c_str()); }
  std::string path() const { return sandbox_.dir() + "/tuning.json"; }  // where TGV_TUNING_FILE points
  void write(const std::string& text) { std::ofstream(path()) << text; }

  tgv_test::GateSandbox sandbox_;
};

TEST_F(TuningReloadFile, ReloadReadsTheFileAgain) {
  ASSERT_EQ(tgv::detail::tuning_file_path(), path());
  DeviceInfo dev = fake_device();
  tgv::detail::reload_tuning(dev);  // no file yet: an empty table, silently
  ASSERT_NE(dev.tuning_snapshot(), nullptr);
  EXPECT_EQ(dev.tuning_snapshot()->size(), 0u);

  write(tgv_test::tuning_file(entry(4096, 3), kGpu, kSms));
  tgv::detail::reload_tuning(dev);
  const TuningTable* t = dev.tuning_snapshot().get();
  ASSERT_NE(t->find(4096, 4096, 8), nullptr);
  EXPECT_EQ(t->find(4096, 4096, 8)->tactic, 3);

  // Tuned on another GPU: reported, and the table empties.
  write(tgv_test::tuning_file(entry(4096, 3), "NVIDIA H100", kSms));
  ::testing::internal::CaptureStderr();
  tgv::detail::reload_tuning(dev);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("stale"), std::string::npos) << err;
  EXPECT_NE(err.find(path()), std::string::npos) << err;
  EXPECT_EQ(dev.tuning_snapshot()->size(), 0u);

  std::remove(path().c_str());
  tgv::detail::reload_tuning(dev);
  EXPECT_EQ(dev.tuning_snapshot()->size(), 0u);
}

// Without a GPU no device has been queried: the reload has nothing to re-read
// and succeeds; with one, it re-reads the sandbox's (absent) file.
TEST_F(TuningReloadFile, TheCApiReloadSucceeds) {
  EXPECT_EQ(tgv_reload_tuning(), TGV_SUCCESS) << tgv_last_error();
}

}  // namespace
