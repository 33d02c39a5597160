// tgv-bench: checks each backend of tgv-gemm against an fp32 reference, then times
// it on cold weights against the floor that the device's read bandwidth sets.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

#include "bandwidth.hpp"
#include "buffers.hpp"
#include "cli.hpp"
#include "chain.hpp"
#include "floor_mode.hpp"
#include "stream_floor.hpp"
#include "tune.hpp"
#include "validate.hpp"
#include "cuda_check.hpp"
#include "measure.hpp"
#include "reference.hpp"
#include "report.hpp"
#include "shapes.hpp"
#include "spacer.hpp"
#include "tgv/tgv.hpp"

namespace {

constexpr size_t kProbeBytes = size_t{2} << 30;          // 2 GiB: far past any L2
constexpr int kL2Multiple = 8;                            // weight copies total >= 8 x L2 ...
constexpr size_t kMinRotationBytes = size_t{512} << 20;   // ... and >= 512 MiB

// One status line on stderr, rewritten in place.
class Progress {
 public:
  explicit Progress(int total) : total_(total) {}

  void show(int step, const std::string& what) {
    const std::string text = "[" + std::to_string(step) + "/" + std::to_string(total_) + "] " + what;
    const size_t pad = shown_ > text.size() ? shown_ - text.size() : 0;  // erase the longer last line
    std::fprintf(stderr, "\r%s%s", text.c_str(), std::string(pad, ' ').c_str());
    std::fflush(stderr);
    shown_ = text.size();
  }

  void clear() {
    if (shown_ == 0) return;
    std::fprintf(stderr, "\r%s\r", std::string(shown_, ' ').c_str());
    std::fflush(stderr);
    shown_ = 0;
  }

 private:
  int total_;
  size_t shown_ = 0;
};

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", &utc);
  return text;
}

// The options a backend column runs with: --tactic, --split-k and --stages go to tgv only.
tgv::Options options_for(const BackendChoice& backend, const Cli& cli) {
  tgv::Options options;
  options.backend = backend.id;
  options.pdl = cli.pdl;
  if (backend.id == tgv::Backend::Tgv) {
    options.tactic = cli.tactic;
    options.split_k = cli.split_k;
    options.stages = cli.stages;
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  Cli cli;
  std::string error;
  switch (parse_cli(argc, argv, &cli, &error)) {
    case CliAction::Help:
      std::fputs(usage_text(), stdout);
      return 0;
    case CliAction::Error:
      std::fprintf(stderr, "tgv-bench: %s (see --help)\n", error.c_str());
      return 2;
    case CliAction::Run:
      break;
  }
  std::vector<Shape> shapes = default_shapes();
  if (!cli.shapes_file.empty() && !load_shapes_file(cli.shapes_file, &shapes, &error)) {
    std::fprintf(stderr, "tgv-bench: %s\n", error.c_str());
    return 2;
  }
  shapes = filter_by_model(shapes, cli.model_filter);
  if (shapes.empty()) {
    std::fprintf(stderr, "tgv-bench: no shape's model name contains '%s'\n", cli.model_filter.c_str());
    return 2;
  }
  if (cli.list_shapes) {
    std::printf("# %zu shapes\n", shapes.size());
    for (const Shape& shape : shapes) {
      std::printf("%s %lld %lld %s\n", shape.label.c_str(), static_cast<long long>(shape.n),
                  static_cast<long long>(shape.k), producers(shape).c_str());
    }
    return 0;
  }

  int devices = 0;
  const cudaError_t found = cudaGetDeviceCount(&devices);
  if (found != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "tgv-bench: no CUDA GPU: %s\n",
                 found != cudaSuccess ? cudaGetErrorString(found) : "cudaGetDeviceCount found none");
    return 1;
  }
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  if (cli.validate) {
    std::printf("# tgv-bench --validate | %s | sm_%d%d | %d SMs | tgv-gemm %s | %s | %s\n", prop.name, prop.major,
                prop.minor, prop.multiProcessorCount, tgv_version_string(), utc_now().c_str(), cli.command_line.c_str());
    return run_validate(device, stream);
  }
  if (cli.mode == Mode::Chain) {
    std::printf("# tgv-bench %s | %s | %d SMs | %s | %s\n", tgv_version_string(), prop.name, prop.multiProcessorCount,
                utc_now().c_str(), cli.command_line.c_str());
    return run_chain(cli, stream);
  }

  RunInfo info;
  info.gpu = prop.name;
  info.sm_count = prop.multiProcessorCount;
  info.l2_bytes = prop.l2CacheSize;
  info.date_utc = utc_now();
  info.command = cli.command_line;
  info.library_version = tgv_version_string();
  for (const BackendChoice& b : cli.backends) info.backends.push_back(b.name);
  info.reps = cli.reps;
  info.pdl = cli.pdl;
  info.between_kernels = between_kernels(cli);
  info.host_overhead = cli.host_overhead;
  info.min_gemms_per_graph = RotatingBuffers::kMinGemmsPerGraph;
  info.rotation_bytes =
      static_cast<int64_t>(std::max(kL2Multiple * static_cast<size_t>(prop.l2CacheSize), kMinRotationBytes));
  if (!cli.tune_path.empty()) {
    std::printf("# tgv-bench --tune | %s | %d SMs | %s | %s\n", prop.name, prop.multiProcessorCount, utc_now().c_str(),
                cli.command_line.c_str());
    return run_tune(cli, shapes, prop.name, prop.multiProcessorCount, static_cast<size_t>(info.rotation_bytes), stream);
  }
  if (cli.mode == Mode::Floor) {
    info.read_gbps = measure_read_bandwidth(kProbeBytes, stream);
    const int status = run_floor(cli, info, shapes, stream);
    CUDA_CHECK(cudaStreamDestroy(stream));
    return status;
  }
  Progress progress(static_cast<int>(shapes.size() * cli.ms.size() * cli.backends.size()));
  progress.show(0, "read bandwidth");
  info.read_gbps = measure_read_bandwidth(kProbeBytes, stream);

  const int64_t max_m = *std::max_element(cli.ms.begin(), cli.ms.end());
  std::unique_ptr<Spacer> spacer;
  if (info.between_kernels) spacer = std::make_unique<Spacer>(stream, 40, cli.reps);
  std::vector<Row> rows;
  bool failed = false;
  int step = 0;
  for (size_t s = 0; s < shapes.size(); ++s) {
    const Shape& shape = shapes[s];
    const RotatingBuffers buffers(shape.n, shape.k, max_m, cli.bias, static_cast<size_t>(info.rotation_bytes),
                                  s + 1, stream);
    const int calls = buffers.gemms_per_graph();
    progress.show(step, shape.model + " " + shape.label + " stream floor");
    const StreamFloor stream_floor =
        measure_stream_floor(buffers, calls, cli.reps, info.sm_count, stream, spacer.get());
    for (const int64_t m : cli.ms) {
      const std::string where = shape.model + " " + shape.label + " M=" + std::to_string(m);
      progress.show(step + 1, where + " reference");
      const std::vector<float> ref =
          reference_gemm(buffers.x(0), buffers.w(0), buffers.bias(), m, shape.n, shape.k, stream);
      Row row;
      row.model = shape.model;
      row.label = shape.label;
      row.n = shape.n;
      row.k = shape.k;
      row.m = m;
      row.bytes = 2.0 * static_cast<double>(shape.n * shape.k + m * shape.k + m * shape.n);  // bf16
      row.floor_us = row.bytes / (info.read_gbps * 1e3);
      row.stream_pdl_us = stream_floor.pdl_us;
      row.stream_plain_us = stream_floor.plain_us;
      row.producers = producers(shape);
      row.sets = buffers.sets();
      row.gemms_per_graph = calls;
      for (const BackendChoice& backend : cli.backends) {
        progress.show(++step, where + " " + backend.name);
        Measurement result = measure(options_for(backend, cli), cli.host_overhead, buffers, m, calls, cli.reps, ref,
                                     stream, spacer.get());
        if (result.outcome == Outcome::Fail || result.outcome == Outcome::Error) {
          failed = true;
          progress.clear();
          std::fprintf(stderr, "%s %s %s N=%lld K=%lld: %s\n", result.outcome == Outcome::Fail ? "FAIL" : "ERR",
                       backend.name.c_str(), where.c_str(), static_cast<long long>(shape.n),
                       static_cast<long long>(shape.k), result.note.c_str());
        }
        row.results.push_back(std::move(result));
      }
      rows.push_back(std::move(row));
    }
  }
  progress.clear();

  print_report(stdout, info, rows);
  if (!cli.csv_path.empty() && !write_csv(cli.csv_path, info, rows, &error)) {
    std::fprintf(stderr, "tgv-bench: %s\n", error.c_str());
    failed = true;
  }
  if (!cli.json_path.empty() && !write_json(cli.json_path, info, rows, &error)) {
    std::fprintf(stderr, "tgv-bench: %s\n", error.c_str());
    failed = true;
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
  return failed ? 1 : 0;
}
