#include "tune.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "buffers.hpp"
#include "measure.hpp"
#include "reference.hpp"
#include "spacer.hpp"

namespace {

struct Candidate {
  tgv::Options options;
  std::string name;
};

// The library's list (tgv::tune_candidates, the one tgv_gemm.tune times too),
// named for the table: * marks the deepest ring that fits (written as 0).
std::vector<Candidate> candidates(const tgv_device_desc& device, const Shape& shape, int64_t m) {
  std::vector<tgv::Options> list;
  const tgv::Status s = tgv::tune_candidates(device, shape.n, shape.k, m, &list);
  if (!s) {
    std::fprintf(stderr, "tgv-bench: tgv_tune_candidates: %s\n", s.message().c_str());
    return {};
  }
  const std::vector<tgv_tactic_info> tactics = tgv::list_tactics();
  std::vector<Candidate> out;
  for (const tgv::Options& o : list) {
    Candidate c{o, "cublas"};
    if (o.backend == tgv::Backend::Tgv)
      c.name = "tactic " + std::to_string(o.tactic) + " split " + std::to_string(o.split_k) + " stages " +
               (o.stages == tgv::kAutoStages ? std::to_string(tactics[size_t(o.tactic)].stages) + "*"
                                             : std::to_string(o.stages));
    out.push_back(c);
  }
  return out;
}

}  // namespace

int run_tune(const Cli& cli, const std::vector<Shape>& shapes, const std::string& gpu, int sm_count,
             size_t rotation_bytes, cudaStream_t stream) {
  for (const int64_t m : cli.ms)
    if (m < 1 || m > 256 || (m & (m - 1)) != 0) {
      std::fprintf(stderr, "tgv-bench --tune: M=%lld: the file's buckets are the powers of two in [1, 256]\n",
                   (long long)m);
      return 1;
    }
  int device = 0;
  tgv_device_desc desc{};
  if (cudaGetDevice(&device) != cudaSuccess || !tgv::describe_device(device, &desc)) {
    std::fprintf(stderr, "tgv-bench: cannot describe the current device: %s\n", tgv_last_error());
    return 1;
  }
  std::vector<tgv_tuning_entry> entries;
  int failures = 0;
  std::unique_ptr<Spacer> spacer;
  if (between_kernels(cli)) spacer = std::make_unique<Spacer>(stream, 40, cli.reps);
  const bool chained = back_to_back(cli);
  std::printf("# timed %s\n", !spacer  ? "back to back"
                              : chained ? "back to back and between spacer kernels (their time subtracted): the mean"
                                        : "between spacer kernels (as inside a model), their time subtracted");
  std::printf("# best: tactic, split-K, stages (* the deepest ring that fits, written as 0)\n");
  std::printf("%-18s %-8s %6s %6s %4s  %-31s %9s %10s %9s\n", "model", "shape", "N", "K", "M", "best", "best us",
              "cublas us", "speedup");
  for (size_t s = 0; s < shapes.size(); ++s) {
    const Shape& shape = shapes[s];
    const int64_t max_m = *std::max_element(cli.ms.begin(), cli.ms.end());
    const RotatingBuffers buffers(shape.n, shape.k, max_m, cli.bias, rotation_bytes, s + 1, stream);
    const int calls = buffers.gemms_per_graph();
    for (const int64_t m : cli.ms) {
      const std::vector<float> ref =
          reference_gemm(buffers.x(0), buffers.w(0), buffers.bias(), m, shape.n, shape.k, stream);
      const Candidate* best = nullptr;
      double best_us = 0, cublas_us = 0;
      const std::vector<Candidate> list = candidates(desc, shape, m);
      for (const Candidate& c : list) {
        std::fprintf(stderr, "\r%s %s M=%lld %s        ", shape.model.c_str(), shape.label.c_str(), (long long)m,
                     c.name.c_str());
        tgv::Options options = c.options;
        options.pdl = cli.pdl;
        // A model's GEMMs have both kinds of neighbour: with both, the mean of the two orders.
        Measurement r = measure(options, false, buffers, m, calls, cli.reps, ref, stream, chained ? nullptr : spacer.get());
        if (chained && spacer && r.outcome == Outcome::Timed) {
          const Measurement spaced = measure(options, false, buffers, m, calls, cli.reps, ref, stream, spacer.get());
          if (spaced.outcome == Outcome::Timed) r.us = 0.5 * (r.us + spaced.us);
          else r = spaced;
        }
        if (r.outcome == Outcome::Fail || r.outcome == Outcome::Error) {
          std::fprintf(stderr, "\n%s %s M=%lld %s: %s\n", shape.model.c_str(), shape.label.c_str(), (long long)m,
                       c.name.c_str(), r.note.c_str());
          ++failures;  // a wrong or failing candidate is never chosen
          continue;
        }
        if (r.outcome != Outcome::Timed) continue;
        if (c.options.backend == tgv::Backend::Cublas) cublas_us = r.us;
        if (best == nullptr || r.us < best_us) best = &c, best_us = r.us;
      }
      std::fprintf(stderr, "\r");
      if (best == nullptr) continue;
      std::printf("%-18s %-8s %6lld %6lld %4lld  %-31s %9.2f %10.2f %8.2fx\n", shape.model.c_str(),
                  shape.label.c_str(), (long long)shape.n, (long long)shape.k, (long long)m, best->name.c_str(),
                  best_us, cublas_us, cublas_us > 0 ? cublas_us / best_us : 0.0);
      tgv_tuning_entry e{};
      e.n = shape.n, e.k = shape.k, e.m = m;
      e.backend = static_cast<int32_t>(best->options.backend);
      e.tactic = best->options.tactic;
      e.split_k = best->options.split_k;
      e.stages = best->options.stages;
      e.us = best_us;
      e.cublas_us = cublas_us;
      entries.push_back(e);
    }
  }
  if (const tgv::Status written = tgv::write_tuning_file(cli.tune_path, gpu, sm_count, entries); !written) {
    std::fprintf(stderr, "tgv-bench: %s\n", written.message().c_str());
    return 1;
  }
  std::printf("# wrote %s: load it with TGV_TUNING_FILE=%s (or copy it to ~/.cache/tgv-gemm/tuning.json)\n",
              cli.tune_path.c_str(), cli.tune_path.c_str());
  return failures == 0 ? 0 : 1;
}
