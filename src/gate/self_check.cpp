#include "gate/self_check.hpp"

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

#include "common/devices.hpp"
#include "common/files.hpp"
#include "common/json.hpp"
#include "common/strfmt.hpp"
#include "gate/kernel_fingerprint.h"
#include "gate/probe.hpp"
#include "plan/plan.hpp"
#include "plan/tuning.hpp"
#include "tactics/tactics.hpp"
#include "tgv/tgv.h"

namespace tgv::detail {

namespace {

constexpr const char* kCacheFormat = "tgv-gemm-self-check/1";
constexpr const char* kCacheName = "tgv-self-check.json";
constexpr int kFamilies = 2;  // sm_90, sm_100
// A "running" entry from another host cannot be checked for a live process;
// younger than this it is taken for a probe still in progress there.
constexpr int64_t kRemoteRunningSeconds = 600;
constexpr size_t kMaxCacheEntries = 64;  // oldest dropped first: GPUs x versions seen

enum class Mode { Auto, Run, Pass, Fail };

struct Slot {
  std::atomic<GateState> state{GateState::Unknown};
  GateVerdict verdict;  // written once, under the mutex, before `state` is published
};

struct CacheEntry {
  std::string gpu, version, kernels, state, reason, host;
  int64_t sm_count = 0, family = 0, pid = 0, time = 0;
};

// All of the gate's process state, so that the test hook resets it in one place.
struct Gate {
  std::mutex mutex;
  Slot slots[kMaxDevices][kFamilies];
  ProbeFn probe = nullptr;
  bool warned_mode = false;
  bool warned_cache = false;
  bool cache_unwritable = false;
};

Gate& gate() {
  static Gate g;
  return g;
}

int family_of(const DeviceInfo& dev) { return arch_family(dev.sm()); }

Slot* slot_for(const DeviceInfo& dev) {
  if (dev.ordinal < 0 || dev.ordinal >= kMaxDevices) return nullptr;
  return &gate().slots[dev.ordinal][family_of(dev) == 100 ? 1 : 0];
}

std::string lower(const char* text) {
  std::string s(text);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Read at settle time, not once per process: the test hook setenv()s it.
Mode read_mode(Gate& g) {
  const char* v = std::getenv("TGV_SELF_CHECK");
  if (v == nullptr || v[0] == '\0') return Mode::Auto;
  const std::string s = lower(v);
  if (s == "auto") return Mode::Auto;
  if (s == "run") return Mode::Run;
  if (s == "pass") return Mode::Pass;
  if (s == "fail") return Mode::Fail;
  if (!g.warned_mode) {
    g.warned_mode = true;
    std::fprintf(stderr, "[tgv] TGV_SELF_CHECK=%s is not one of auto, run, pass, fail; using auto\n", v);
  }
  return Mode::Auto;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

bool process_alive(int64_t pid) {
  if (pid <= 0) return false;
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

std::string utc(int64_t seconds) {
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return text;
}

// Reads the cache. A missing file is an empty cache; a corrupt one is reported
// (once) and read as empty, and the next write replaces it.
std::vector<CacheEntry> read_cache(Gate& g, const std::string& path) {
  std::vector<CacheEntry> entries;
  std::ifstream file(path);
  if (path.empty() || !file) return entries;
  std::stringstream text;
  text << file.rdbuf();
  Json root;
  std::string error;
  bool ok = parse_json(text.str(), &root, &error);
  const Json* format = ok ? root.get("format") : nullptr;
  const Json* list = ok ? root.get("entries") : nullptr;
  if (ok && (root.kind != Json::Object || format == nullptr || format->text != kCacheFormat || list == nullptr ||
             list->kind != Json::Array)) {
    ok = false;
    error = std::string("not a ") + kCacheFormat + " file";
  }
  for (size_t i = 0; ok && i < list->items.size(); ++i) {
    const Json& e = list->items[i];
    const Json* gpu = e.get("gpu");
    const Json* version = e.get("library_version");
    const Json* state = e.get("state");
    const Json* reason = e.get("reason");
    const Json* host = e.get("host");
    CacheEntry c;
    if (gpu == nullptr || version == nullptr || state == nullptr || !json_integer(e, "sm_count", &c.sm_count) ||
        !json_integer(e, "family", &c.family) ||
        (state->text != "passed" && state->text != "failed" && state->text != "running")) {
      ok = false;
      error = "entry " + std::to_string(i) + " is malformed";
      break;
    }
    c.gpu = gpu->text;
    c.version = version->text;
    const Json* kernels = e.get("kernels");  // absent in entries from before it: they never match
    c.kernels = kernels != nullptr ? kernels->text : "";
    c.state = state->text;
    c.reason = reason != nullptr ? reason->text : "";
    c.host = host != nullptr ? host->text : "";
    json_integer(e, "pid", &c.pid);
    json_integer(e, "time", &c.time);
    entries.push_back(std::move(c));
  }
  if (!ok) {
    entries.clear();
    if (!g.warned_cache) {
      g.warned_cache = true;
      std::fprintf(stderr, "[tgv] ignoring self-check cache %s: %s\n", path.c_str(), error.c_str());
    }
  }
  return entries;
}

// Writes the whole cache through a temporary file and a rename, so a reader
// never sees half a file. An unwritable folder turns caching off, silently.
void write_cache(Gate& g, const std::string& path, const std::vector<CacheEntry>& entries) {
  if (path.empty() || g.cache_unwritable) return;
  std::ostringstream s;
  s << "{\"format\": " << json_quote(kCacheFormat) << ",\n \"entries\": [";
  for (size_t i = 0; i < entries.size(); ++i) {
    const CacheEntry& e = entries[i];
    s << (i ? ",\n  " : "\n  ") << "{\"gpu\": " << json_quote(e.gpu) << ", \"sm_count\": " << e.sm_count
      << ", \"family\": " << e.family << ", \"library_version\": " << json_quote(e.version)
      << ", \"kernels\": " << json_quote(e.kernels)
      << ", \"state\": " << json_quote(e.state) << ", \"reason\": " << json_quote(e.reason)
      << ", \"pid\": " << e.pid << ", \"host\": " << json_quote(e.host) << ", \"time\": " << e.time << "}";
  }
  s << "]}\n";
  if (!write_file_whole(path, s.str())) g.cache_unwritable = true;
}

bool same_key(const CacheEntry& e, const DeviceInfo& dev) {
  return e.gpu == dev.name && e.sm_count == dev.num_sms && e.family == family_of(dev) &&
         e.version == tgv_version_string() && e.kernels == TGV_KERNEL_FINGERPRINT;
}

// Replaces this device's entry (or drops it when `entry` is null).
void put_entry(std::vector<CacheEntry>& entries, const DeviceInfo& dev, const CacheEntry* entry) {
  for (size_t i = 0; i < entries.size(); ++i)
    if (same_key(entries[i], dev)) entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(i--));
  if (entry == nullptr) return;
  entries.push_back(*entry);
  while (entries.size() > kMaxCacheEntries) entries.erase(entries.begin());
}

CacheEntry entry_for(const DeviceInfo& dev, const char* state, const std::string& reason) {
  CacheEntry e;
  e.gpu = dev.name;
  e.sm_count = dev.num_sms;
  e.family = family_of(dev);
  e.version = tgv_version_string();
  e.kernels = TGV_KERNEL_FINGERPRINT;
  e.state = state;
  e.reason = reason;
  e.pid = getpid();
  e.host = host_name();
  e.time = static_cast<int64_t>(std::time(nullptr));
  return e;
}

// Marks the probe as running in the cache, runs it, caches what it found.
GateVerdict probe_and_cache(Gate& g, const DeviceInfo& dev, const std::string& path,
                            std::vector<CacheEntry> entries) {
  const CacheEntry running = entry_for(dev, "running", "");
  put_entry(entries, dev, &running);
  write_cache(g, path, entries);

  ProbeOutcome outcome;
  try {
    outcome = (g.probe != nullptr ? g.probe : run_probe)(dev);
  } catch (const std::exception& e) {
    outcome = {false, false, e.what()};
  }
  if (outcome.conclusive) {
    const CacheEntry done = entry_for(dev, outcome.passed ? "passed" : "failed", outcome.reason);
    put_entry(entries, dev, &done);
  } else {
    put_entry(entries, dev, nullptr);  // an inconclusive probe leaves no verdict behind
  }
  write_cache(g, path, entries);
  if (outcome.passed) return {GateState::Passed, "the self-check passed"};
  if (!outcome.conclusive) return {GateState::Failed, "the self-check could not run: " + outcome.reason};
  return {GateState::Failed, "the self-check failed: " + outcome.reason};
}

GateVerdict settle(Gate& g, const DeviceInfo& dev) {
  switch (read_mode(g)) {
    case Mode::Pass: return {GateState::Passed, "TGV_SELF_CHECK=pass: trusted without a self-check"};
    case Mode::Fail: return {GateState::Failed, "TGV_SELF_CHECK=fail"};
    case Mode::Run: {
      const std::string path = self_check_cache_path();
      return probe_and_cache(g, dev, path, read_cache(g, path));
    }
    case Mode::Auto: break;
  }
  const std::string path = self_check_cache_path();
  std::vector<CacheEntry> entries = read_cache(g, path);
  const CacheEntry* found = nullptr;
  for (const CacheEntry& e : entries)
    if (same_key(e, dev)) found = &e;
  if (found == nullptr) return probe_and_cache(g, dev, path, std::move(entries));
  if (found->state == "passed") return {GateState::Passed, "the self-check passed (cached in " + path + ")"};
  if (found->state == "failed")
    return {GateState::Failed, "the self-check failed: " + found->reason + " (cached in " + path +
                                   "; TGV_SELF_CHECK=run checks again)"};

  // "running": a probe started and wrote no verdict. Ours (a pid reused, or an
  // inconclusive run of this process) or one still going elsewhere: probe again.
  const bool same_host = found->host == host_name();
  const bool ours = same_host && found->pid == getpid();
  const bool elsewhere_in_progress =
      same_host ? process_alive(found->pid)
                : static_cast<int64_t>(std::time(nullptr)) - found->time < kRemoteRunningSeconds;
  const bool unvalidated = family_of(dev) == 100;
  if (ours || elsewhere_in_progress || !unvalidated) return probe_and_cache(g, dev, path, std::move(entries));
  // The writer died during its probe, most likely killed by the kernels under
  // test; probing again would likely kill this process too.
  const std::string reason =
      strfmt("a previous self-check (pid %lld on %s, started %s) did not finish; set TGV_SELF_CHECK=run to retry",
             (long long)found->pid, found->host.c_str(), utc(found->time).c_str());
  const CacheEntry failed = entry_for(dev, "failed", reason);
  put_entry(entries, dev, &failed);
  write_cache(g, path, entries);
  return {GateState::Failed, reason};
}

}  // namespace

std::string self_check_cache_path() {
  const std::string tuning = tuning_file_path();
  if (tuning.empty()) return {};
  return folder_of(tuning) + "/" + kCacheName;
}

const char* self_check_kernel_fingerprint() { return TGV_KERNEL_FINGERPRINT; }

const GateVerdict* settled_verdict(const DeviceInfo& dev) {
  const Slot* s = slot_for(dev);
  if (s == nullptr || s->state.load(std::memory_order_acquire) == GateState::Unknown) return nullptr;
  return &s->verdict;
}

const GateVerdict& self_check(const DeviceInfo& dev) {
  static const GateVerdict kOutOfRange{GateState::Failed,
                                       strfmt("device ordinal outside the %d the gate tracks", kMaxDevices)};
  Slot* s = slot_for(dev);
  if (s == nullptr) return kOutOfRange;
  if (s->state.load(std::memory_order_acquire) != GateState::Unknown) return s->verdict;
  Gate& g = gate();
  std::lock_guard<std::mutex> lock(g.mutex);
  if (s->state.load(std::memory_order_relaxed) != GateState::Unknown) return s->verdict;  // another thread settled it
  s->verdict = settle(g, dev);
  if (s->verdict.state == GateState::Failed)
    std::fprintf(stderr, "[tgv] %s. backend=auto uses cuBLASLt; backend=tgv returns TGV_ERROR_NOT_SUPPORTED\n",
                 gate_refusal(dev, s->verdict).c_str());
  s->state.store(s->verdict.state, std::memory_order_release);
  return s->verdict;
}

namespace gate_testing {

void reset() {
  Gate& g = gate();
  std::lock_guard<std::mutex> lock(g.mutex);
  for (auto& device : g.slots)
    for (Slot& s : device) {
      s.state.store(GateState::Unknown, std::memory_order_relaxed);
      s.verdict = {};
    }
  g.warned_mode = g.warned_cache = g.cache_unwritable = false;
}

void set_probe(ProbeFn probe) {
  Gate& g = gate();
  std::lock_guard<std::mutex> lock(g.mutex);
  g.probe = probe;
}

}  // namespace gate_testing
}  // namespace tgv::detail
