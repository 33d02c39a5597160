#include "tune.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>

#include "buffers.hpp"
#include "measure.hpp"
#include "reference.hpp"

namespace {

constexpr int kSplits[] = {1, 2, 4, 8};
// Ring depths tried beside the deepest (0): measured on the H200, a shallower
// ring starts the first loads sooner on some shapes and starves others of
// bytes in flight. A depth whose ring cannot hold the tile's epilogue or
// partials is refused by the planner (NOT_SUPPORTED), and skipped.
constexpr int kShallowStages[] = {8};

struct Candidate {
  tgv::Options options;
  std::string name;
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Every tactic whose token tile is the smallest covering M (the weights are then
// read once), at every split-K factor whose grid stays within two waves, with
// the deepest ring and each shallower depth above.
std::vector<Candidate> candidates(const Shape& shape, int64_t m, int sm_count) {
  const std::vector<tgv_tactic_info> tactics = tgv::list_tactics();
  int32_t cta_n = std::numeric_limits<int32_t>::max();
  for (const auto& t : tactics)
    if (t.arch == 90 && t.cta_n >= std::min<int64_t>(m, 256) && t.cta_n < cta_n) cta_n = t.cta_n;
  std::vector<Candidate> out;
  for (const auto& t : tactics) {
    if (t.arch != 90 || t.cta_n != cta_n) continue;
    const int64_t tiles = ceil_div(shape.n, t.cta_m) * ceil_div(m, t.cta_n);
    std::vector<int32_t> depths = {tgv::kAutoStages};
    for (int32_t stages : kShallowStages)
      if (stages < t.stages) depths.push_back(stages);  // t.stages: the deepest that fits
    for (int split : kSplits) {
      if (split > ceil_div(shape.k, t.cta_k) || (split > 1 && tiles * split > 2 * sm_count)) continue;
      for (int32_t stages : depths) {
        Candidate c;
        c.options.backend = tgv::Backend::Tgv;
        c.options.tactic = t.id;
        c.options.split_k = split;
        c.options.stages = stages;
        c.name = "tactic " + std::to_string(t.id) + " split " + std::to_string(split) + " stages " +
                 (stages == tgv::kAutoStages ? std::to_string(t.stages) + "*" : std::to_string(stages));
        out.push_back(c);
      }
    }
  }
  Candidate cublas;
  cublas.options.backend = tgv::Backend::Cublas;
  cublas.name = "cublas";
  out.push_back(cublas);
  return out;
}

}  // namespace

int run_tune(const Cli& cli, const std::vector<Shape>& shapes, const std::string& gpu, int sm_count,
             size_t rotation_bytes, cudaStream_t stream) {
  std::string entries;
  int failures = 0;
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
      const std::vector<Candidate> list = candidates(shape, m, sm_count);
      for (const Candidate& c : list) {
        std::fprintf(stderr, "\r%s %s M=%lld %s        ", shape.model.c_str(), shape.label.c_str(), (long long)m,
                     c.name.c_str());
        tgv::Options options = c.options;
        options.pdl = cli.pdl;
        const Measurement r = measure(options, false, buffers, m, calls, cli.reps, ref, stream);
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
      const bool is_cublas = best->options.backend == tgv::Backend::Cublas;
      std::printf("%-18s %-8s %6lld %6lld %4lld  %-31s %9.2f %10.2f %8.2fx\n", shape.model.c_str(),
                  shape.label.c_str(), (long long)shape.n, (long long)shape.k, (long long)m, best->name.c_str(),
                  best_us, cublas_us, cublas_us > 0 ? cublas_us / best_us : 0.0);
      char line[256];
      std::snprintf(line, sizeof(line),
                    "%s    {\"n\": %lld, \"k\": %lld, \"m\": %lld, \"backend\": \"%s\", \"tactic\": %d, \"split_k\": %d, "
                    "\"stages\": %d, \"us\": %.3f, \"cublas_us\": %.3f}",
                    entries.empty() ? "" : ",\n", (long long)shape.n, (long long)shape.k, (long long)m,
                    is_cublas ? "cublas" : "tgv", is_cublas ? -1 : best->options.tactic,
                    is_cublas ? 1 : best->options.split_k, is_cublas ? 0 : best->options.stages, best_us, cublas_us);
      entries += line;
    }
  }
  std::ofstream file(cli.tune_path);
  file << "{\n  \"format\": \"tgv-gemm-tuning/1\",\n  \"library_version\": \"" << tgv_version_string()
       << "\",\n  \"gpu\": \"" << gpu << "\",\n  \"sm_count\": " << sm_count << ",\n  \"entries\": [\n"
       << entries << "\n  ]\n}\n";
  if (!file) {
    std::fprintf(stderr, "tgv-bench: cannot write %s\n", cli.tune_path.c_str());
    return 1;
  }
  std::printf("# wrote %s: load it with TGV_TUNING_FILE=%s (or copy it to ~/.cache/tgv-gemm/tuning.json)\n",
              cli.tune_path.c_str(), cli.tune_path.c_str());
  return failures == 0 ? 0 : 1;
}
