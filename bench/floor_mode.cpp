#include "floor_mode.hpp"

#include <cstdio>
#include <fstream>
#include <string>

#include "buffers.hpp"
#include "stream_floor.hpp"
#include "table.hpp"

namespace {

struct FloorRow {
  const Shape* shape;
  double weight_bytes, hbm_us;
  StreamFloor floor;
  int sets, launches;
};

bool write_floor_csv(const std::string& path, const RunInfo& info, const std::vector<FloorRow>& rows) {
  std::ofstream file(path);
  file << "model,shape,n,k,weight_bytes,hbm_floor_us,stream_floor_pdl_us,stream_floor_nopdl_us,weight_sets,"
          "launches_per_graph,replays,read_gbps,producers\n";
  for (const FloorRow& r : rows) {
    file << csv_field(r.shape->model) << ',' << csv_field(r.shape->label) << ',' << r.shape->n << ',' << r.shape->k
         << ',' << format("%.0f", r.weight_bytes) << ',' << format("%.4f", r.hbm_us) << ','
         << format("%.4f", r.floor.pdl_us) << ',' << format("%.4f", r.floor.plain_us) << ',' << r.sets << ','
         << r.launches << ',' << info.reps << ',' << format("%.1f", info.read_gbps) << ','
         << csv_field(producers(*r.shape)) << '\n';
  }
  return static_cast<bool>(file);
}

bool write_floor_json(const std::string& path, const RunInfo& info, const std::vector<FloorRow>& rows) {
  std::ofstream file(path);
  file << "{\n  \"library_version\": " << json_string(info.library_version) << ",\n  \"gpu\": "
       << json_string(info.gpu) << ",\n  \"sm_count\": " << info.sm_count << ",\n  \"read_gbps\": "
       << format("%.1f", info.read_gbps) << ",\n  \"date_utc\": " << json_string(info.date_utc)
       << ",\n  \"command\": " << json_string(info.command) << ",\n  \"replays\": " << info.reps
       << ",\n  \"rotation_bytes\": " << info.rotation_bytes << ",\n  \"floors\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const FloorRow& r = rows[i];
    file << (i ? ",\n" : "\n") << "    {\"model\": " << json_string(r.shape->model)
         << ", \"shape\": " << json_string(r.shape->label) << ", \"n\": " << r.shape->n << ", \"k\": " << r.shape->k
         << ", \"weight_bytes\": " << format("%.0f", r.weight_bytes) << ", \"hbm_floor_us\": "
         << format("%.4f", r.hbm_us) << ", \"stream_floor_pdl_us\": " << format("%.4f", r.floor.pdl_us)
         << ", \"stream_floor_nopdl_us\": " << format("%.4f", r.floor.plain_us) << ", \"weight_sets\": " << r.sets
         << ", \"launches_per_graph\": " << r.launches << ", \"producers\": " << json_string(producers(*r.shape))
         << "}";
  }
  file << "\n  ]\n}\n";
  return static_cast<bool>(file);
}

}  // namespace

int run_floor(const Cli& cli, const RunInfo& info, const std::vector<Shape>& shapes, cudaStream_t stream) {
  std::vector<FloorRow> rows;
  for (size_t s = 0; s < shapes.size(); ++s) {
    const Shape& shape = shapes[s];
    std::fprintf(stderr, "\r[%zu/%zu] %s %s        ", s + 1, shapes.size(), shape.model.c_str(), shape.label.c_str());
    const RotatingBuffers buffers(shape.n, shape.k, 1, false, static_cast<size_t>(info.rotation_bytes), s + 1, stream);
    FloorRow row{&shape, 2.0 * static_cast<double>(shape.n * shape.k), 0, {}, buffers.sets(),
                 buffers.gemms_per_graph()};
    row.hbm_us = row.weight_bytes / (info.read_gbps * 1e3);
    row.floor = measure_stream_floor(buffers, row.launches, cli.reps, info.sm_count, stream);
    rows.push_back(row);
  }
  std::fprintf(stderr, "\r%60s\r", "");

  std::printf("# tgv-bench --mode floor %s | %s | %d SMs | read %.0f GB/s | %s | %s\n", info.library_version.c_str(),
              info.gpu.c_str(), info.sm_count, info.read_gbps, info.date_utc.c_str(), info.command.c_str());
  std::printf("# stream: us per launch of a kernel that only reads W (one CTA per SM, equal shares), median of %d "
              "CUDA-graph replays of back-to-back launches over >= %.0f MiB of rotating weight copies; "
              "hbm = W bytes / read bandwidth\n",
              info.reps, info.rotation_bytes / 1048576.0);
  std::vector<std::vector<std::string>> cells = {
      {"model", "shape", "N", "K", "W MB", "hbm us", "stream us", "stream no-pdl us", "stream/hbm", "no-pdl/pdl"}};
  for (const FloorRow& r : rows) {
    cells.push_back({r.shape->model, r.shape->label, std::to_string(r.shape->n), std::to_string(r.shape->k),
                     format("%.1f", r.weight_bytes / 1e6), format("%.2f", r.hbm_us), format("%.2f", r.floor.pdl_us),
                     format("%.2f", r.floor.plain_us), format("%.2fx", r.floor.pdl_us / r.hbm_us),
                     format("%.2fx", r.floor.plain_us / r.floor.pdl_us)});
  }
  print_table(stdout, cells, 2);
  int status = 0;
  if (!cli.csv_path.empty() && !write_floor_csv(cli.csv_path, info, rows)) {
    std::fprintf(stderr, "tgv-bench: cannot write '%s'\n", cli.csv_path.c_str());
    status = 1;
  }
  if (!cli.json_path.empty() && !write_floor_json(cli.json_path, info, rows)) {
    std::fprintf(stderr, "tgv-bench: cannot write '%s'\n", cli.json_path.c_str());
    status = 1;
  }
  return status;
}
