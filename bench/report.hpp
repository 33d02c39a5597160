// The results: one table on a stream (with its provenance header), and CSV / JSON files.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

enum class Outcome { Timed, Fail, Error, NotSupported };

struct Measurement {  // one backend on one row
  Outcome outcome = Outcome::Error;
  double us = 0;      // per GEMM, when Timed
  std::string note;   // why not Timed
  double host_us = 0; // host time per eager call, with --host-overhead (0: not measured)
  std::string plan = "";  // what the dispatcher ran (tgv_get_plan), e.g. "tgv 6 128x8x128 split 2 stages 6"
};

struct Row {  // one shape at one M
  std::string model, label;
  int64_t n = 0, k = 0, m = 0;
  double bytes = 0;      // W + x + out: what the floor and GB/s count
  double floor_us = 0;   // bytes over the measured read bandwidth
  // A read-only kernel over the same W bytes, launched as the GEMMs are (stream_floor.hpp),
  // with the PDL attribute and without; NaN where not measured.
  double stream_pdl_us = NAN, stream_plain_us = NAN;
  std::string producers;  // every (model:projection) with this N x K, space-separated
  int sets = 0;          // rotating weight copies
  int gemms_per_graph = 0;
  std::vector<Measurement> results;  // one per backend, in RunInfo::backends order
};

struct RunInfo {
  std::string gpu;
  int sm_count = 0;
  int64_t l2_bytes = 0;
  double read_gbps = 0;
  std::string date_utc;
  std::string command;
  std::string library_version;
  std::vector<std::string> backends;
  int reps = 0;
  bool pdl = true;             // the run's --pdl: which stream floor the x/stream ratios divide by
  bool between_kernels = false;  // --neighbours kernels: each timed launch followed by a spacer kernel
  bool host_overhead = false;  // a host-us column per backend
  int min_gemms_per_graph = 0;
  int64_t rotation_bytes = 0;  // the least total of the weight copies a graph cycles through
};

// Header line (provenance), method line, the table, then notes on what was not timed.
void print_report(std::FILE* out, const RunInfo& info, const std::vector<Row>& rows);

// One record per (row, backend). Return false with `error` set when the file cannot be written.
bool write_csv(const std::string& path, const RunInfo& info, const std::vector<Row>& rows, std::string* error);
bool write_json(const std::string& path, const RunInfo& info, const std::vector<Row>& rows, std::string* error);
