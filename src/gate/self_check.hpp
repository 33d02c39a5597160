// The self-check gate: before a tgv kernel family first serves a device in a
// process, a small correctness probe (src/gate/probe.cu) runs it against
// cuBLASLt. A family that fails is disabled for the process, with one warning
// on stderr; auto then uses cuBLASLt and backend=tgv is NOT_SUPPORTED, naming
// the reason.
//
// One state per (device ordinal, family): Unknown -> Passed | Failed(reason),
// settled at most once per process (the probe runs once even when threads race).
// How it settles, by TGV_SELF_CHECK:
//   unset, "auto"  the cached verdict for this GPU (name, SM count), family,
//                  library version and kernel sources (a hash, taken at build
//                  time, of the kernels, launchers, tactic table and probe: two
//                  builds of one version share no verdict), else the probe;
//   "run"          the probe, whatever the cache says (its verdict is cached);
//   "pass"         Passed, without a probe;
//   "fail"         Failed: the family is disabled;
//   anything else  one warning naming the value, then as "auto".
//
// The cache, tgv-self-check.json, sits next to the tuning file (same folder as
// tuning_file_path()). Before a probe runs, its entry is written as "running"
// (pid, host, time): a probe that faults kills the process (a sticky CUDA
// error), and the next process must not run it again blindly. For the
// unvalidated family (sm_100) a "running" entry left by a process that is gone
// settles as Failed until TGV_SELF_CHECK=run; for Hopper the probe just reruns.
// A corrupt cache is reported once and ignored; an unwritable folder means no
// caching, silently. Nothing here touches CUDA: the probe is a function
// pointer, so the host tests inject its outcome.
#pragma once

#include <string>

#include "gate/verdict.hpp"
#include "plan/device_info.hpp"

namespace tgv::detail {

// What one probe run found.
struct ProbeOutcome {
  bool passed = false;
  // False when the probe could not judge the kernels (no memory, say): the
  // family is still disabled for this process, but nothing is cached.
  bool conclusive = true;
  std::string reason;  // why it failed
};

using ProbeFn = ProbeOutcome (*)(const DeviceInfo& dev);

// The verdict for the device's family once settled, else null. Lock-free:
// the dispatcher asks on every call. A settled verdict never changes.
const GateVerdict* settled_verdict(const DeviceInfo& dev);

// Settles the verdict (env, cache, probe) if needed and returns it. Call only
// for a device that has a tgv family (family_unavailable_reason is empty).
const GateVerdict& self_check(const DeviceInfo& dev);

// The cache file's path ("" when there is no HOME to put it in).
std::string self_check_cache_path();

// The hash of the kernel sources this build's verdicts are cached under.
const char* self_check_kernel_fingerprint();

namespace gate_testing {
// Forgets every verdict and every one-time warning, so a test can settle the
// gate again (after setenv). Not safe while other threads use the gate.
void reset();
// Replaces the probe (null: the real one) until the next call.
void set_probe(ProbeFn probe);
}  // namespace gate_testing

}  // namespace tgv::detail
