#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "table.hpp"

namespace {

constexpr const char* kCublas = "cublas";

// What one backend's time means on one row; NaN where there is no time to compare.
struct Derived {
  double gbps = NAN;
  double pct_of_floor = NAN;
  double speedup_vs_cublas = NAN;  // only for backends other than cublas
  double vs_stream = NAN;          // time / the stream floor launched with the run's PDL setting
};

double stream_floor_of(const RunInfo& info, const Row& row) {
  return info.pdl ? row.stream_pdl_us : row.stream_plain_us;
}

int cublas_index(const RunInfo& info) {
  const auto it = std::find(info.backends.begin(), info.backends.end(), kCublas);
  return it == info.backends.end() ? -1 : static_cast<int>(it - info.backends.begin());
}

Derived derive(const RunInfo& info, const Row& row, size_t backend) {
  Derived d;
  const Measurement& r = row.results[backend];
  if (r.outcome != Outcome::Timed) return d;
  d.gbps = row.bytes / (r.us * 1e-6) / 1e9;
  d.pct_of_floor = 100.0 * row.floor_us / r.us;
  d.vs_stream = r.us / stream_floor_of(info, row);  // NaN when the floor was not measured
  const int cublas = cublas_index(info);
  if (cublas >= 0 && static_cast<size_t>(cublas) != backend && row.results[cublas].outcome == Outcome::Timed) {
    d.speedup_vs_cublas = row.results[cublas].us / r.us;
  }
  return d;
}

const char* outcome_cell(Outcome outcome) {
  switch (outcome) {
    case Outcome::Timed: return "";
    case Outcome::Fail: return "FAIL";
    case Outcome::Error: return "ERR";
    case Outcome::NotSupported: return "n/s";
  }
  return "";
}

const char* outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::Timed: return "ok";
    case Outcome::Fail: return "fail";
    case Outcome::Error: return "error";
    case Outcome::NotSupported: return "not_supported";
  }
  return "";
}

// The label, and how many further producers share the shape (the CSV lists them).
std::string shape_cell(const Row& row) {
  const size_t extra = static_cast<size_t>(std::count(row.producers.begin(), row.producers.end(), ' '));
  return extra == 0 ? row.label : row.label + " +" + std::to_string(extra);
}

std::string shape_name(const Row& row) {
  return row.model + " " + row.label + " N=" + std::to_string(row.n) + " K=" + std::to_string(row.k) +
         " M=" + std::to_string(row.m);
}

}  // namespace

void print_report(std::FILE* out, const RunInfo& info, const std::vector<Row>& rows) {
  std::fprintf(out, "# tgv-bench %s | %s | %d SMs | L2 %.1f MiB | read %.0f GB/s | %s | %s\n",
               info.library_version.c_str(), info.gpu.c_str(), info.sm_count, info.l2_bytes / 1048576.0,
               info.read_gbps, info.date_utc.c_str(), info.command.c_str());
  std::fprintf(out,
               "# us: per GEMM, median of %d CUDA-graph replays, each >= %d %s over >= %.0f MiB "
               "of rotating weight copies (fewer GEMMs where a replay reads >= 8 GiB); floor = bytes(W + x + out) / "
               "read bandwidth\n",
               info.reps, info.min_gemms_per_graph,
               info.between_kernels ? "GEMMs, each followed by a one-thread kernel launched without PDL (its time "
                                      "alone subtracted; as between a model's norms and attention: --neighbours "
                                      "kernels)"
                                    : "back-to-back GEMMs",
               info.rotation_bytes / 1048576.0);
  std::fprintf(out,
               "# stream: us per launch of a kernel that only reads W (one CTA per SM, equal shares), in the same "
               "graph over the same copies, with PDL and without; x/stream = x us / stream floor %s PDL (--pdl %d)\n",
               info.pdl ? "with" : "without", info.pdl ? 1 : 0);

  const int cublas = cublas_index(info);
  std::vector<std::string> header = {"model", "shape", "N", "K", "M", "floor us", "stream us", "stream no-pdl us"};
  for (const std::string& b : info.backends) header.push_back(b + " us");
  for (const std::string& b : info.backends) header.push_back(b + " GB/s");
  for (const std::string& b : info.backends) header.push_back(b + " %floor");
  for (const std::string& b : info.backends) header.push_back(b + "/stream");
  for (const std::string& b : info.backends)
    if (info.host_overhead) header.push_back(b + " host us");
  for (size_t b = 0; b < info.backends.size(); ++b) {
    if (static_cast<int>(b) != cublas && cublas >= 0) header.push_back(info.backends[b] + "/cublas");
  }
  std::vector<std::vector<std::string>> cells = {header};
  for (const Row& row : rows) {
    std::vector<std::string> line = {row.model, shape_cell(row), std::to_string(row.n), std::to_string(row.k),
                                     std::to_string(row.m), format("%.2f", row.floor_us),
                                     format("%.2f", row.stream_pdl_us), format("%.2f", row.stream_plain_us)};
    std::vector<Derived> derived;
    for (size_t b = 0; b < info.backends.size(); ++b) derived.push_back(derive(info, row, b));
    for (const Measurement& r : row.results) {
      line.push_back(r.outcome == Outcome::Timed ? format("%.2f", r.us) : outcome_cell(r.outcome));
    }
    for (const Derived& d : derived) line.push_back(format("%.0f", d.gbps));
    for (const Derived& d : derived) line.push_back(format("%.1f%%", d.pct_of_floor));
    for (const Derived& d : derived) line.push_back(format("%.2fx", d.vs_stream));
    for (const Measurement& r : row.results)
      if (info.host_overhead) line.push_back(r.host_us > 0 ? format("%.2f", r.host_us) : "-");
    for (size_t b = 0; b < derived.size(); ++b) {
      if (static_cast<int>(b) != cublas && cublas >= 0) line.push_back(format("%.2fx", derived[b].speedup_vs_cublas));
    }
    cells.push_back(line);
  }
  print_table(out, cells, 2);

  // Failures and errors one per line; NOT_SUPPORTED, often on every row, once per backend.
  std::map<std::string, std::pair<int, std::string>> unsupported;  // backend -> (rows, first note)
  for (const Row& row : rows) {
    for (size_t b = 0; b < row.results.size(); ++b) {
      const Measurement& r = row.results[b];
      if (r.outcome == Outcome::Fail || r.outcome == Outcome::Error) {
        std::fprintf(out, "%s %s %s: %s\n", outcome_cell(r.outcome), info.backends[b].c_str(),
                     shape_name(row).c_str(), r.note.c_str());
      } else if (r.outcome == Outcome::NotSupported) {
        auto& entry = unsupported[info.backends[b]];
        if (entry.first++ == 0) entry.second = shape_name(row) + ": " + r.note;
      }
    }
  }
  for (const auto& [backend, entry] : unsupported) {
    std::fprintf(out, "note: %s skipped on %d of %zu rows (TGV_ERROR_NOT_SUPPORTED); first: %s\n",
                 backend.c_str(), entry.first, rows.size(), entry.second.c_str());
  }
}

bool write_csv(const std::string& path, const RunInfo& info, const std::vector<Row>& rows, std::string* error) {
  std::ofstream file(path);
  if (!file) {
    *error = "cannot write '" + path + "'";
    return false;
  }
  file << "model,shape,n,k,m,backend,status,us,gbps,pct_of_floor,speedup_vs_cublas,floor_us,bytes,"
          "weight_sets,gemms_per_graph,replays,read_gbps,note,plan,stream_floor_pdl_us,stream_floor_nopdl_us,"
          "vs_stream_floor,producers\n";
  for (const Row& row : rows) {
    for (size_t b = 0; b < row.results.size(); ++b) {
      const Measurement& r = row.results[b];
      const Derived d = derive(info, row, b);
      file << csv_field(row.model) << ',' << csv_field(row.label) << ',' << row.n << ',' << row.k << ','
           << row.m << ',' << info.backends[b] << ',' << outcome_name(r.outcome) << ','
           << (r.outcome == Outcome::Timed ? format("%.4f", r.us) : "") << ',' << csv_number("%.2f", d.gbps)
           << ',' << csv_number("%.2f", d.pct_of_floor) << ',' << csv_number("%.4f", d.speedup_vs_cublas) << ','
           << format("%.4f", row.floor_us) << ',' << format("%.0f", row.bytes) << ',' << row.sets << ','
           << row.gemms_per_graph << ',' << info.reps << ',' << format("%.1f", info.read_gbps) << ','
           << csv_field(r.note) << ',' << csv_field(r.plan) << ',' << csv_number("%.4f", row.stream_pdl_us) << ','
           << csv_number("%.4f", row.stream_plain_us) << ',' << csv_number("%.4f", d.vs_stream) << ','
           << csv_field(row.producers) << '\n';
    }
  }
  if (!file) {
    *error = "error writing '" + path + "'";
    return false;
  }
  return true;
}

bool write_json(const std::string& path, const RunInfo& info, const std::vector<Row>& rows, std::string* error) {
  std::ofstream file(path);
  if (!file) {
    *error = "cannot write '" + path + "'";
    return false;
  }
  file << "{\n"
       << "  \"library_version\": " << json_string(info.library_version) << ",\n"
       << "  \"gpu\": " << json_string(info.gpu) << ",\n"
       << "  \"sm_count\": " << info.sm_count << ",\n"
       << "  \"l2_bytes\": " << info.l2_bytes << ",\n"
       << "  \"read_gbps\": " << format("%.1f", info.read_gbps) << ",\n"
       << "  \"date_utc\": " << json_string(info.date_utc) << ",\n"
       << "  \"command\": " << json_string(info.command) << ",\n"
       << "  \"replays\": " << info.reps << ",\n"
       << "  \"pdl\": " << (info.pdl ? "true" : "false") << ",\n"
       << "  \"neighbours\": " << (info.between_kernels ? "\"kernels\"" : "\"self\"") << ",\n"
       << "  \"min_gemms_per_graph\": " << info.min_gemms_per_graph << ",\n"
       << "  \"rotation_bytes\": " << info.rotation_bytes << ",\n"
       << "  \"results\": [";
  bool first = true;
  for (const Row& row : rows) {
    for (size_t b = 0; b < row.results.size(); ++b) {
      const Measurement& r = row.results[b];
      const Derived d = derive(info, row, b);
      file << (first ? "\n" : ",\n") << "    {\"model\": " << json_string(row.model)
           << ", \"shape\": " << json_string(row.label) << ", \"n\": " << row.n << ", \"k\": " << row.k
           << ", \"m\": " << row.m << ", \"backend\": " << json_string(info.backends[b])
           << ", \"status\": " << json_string(outcome_name(r.outcome))
           << ", \"us\": " << (r.outcome == Outcome::Timed ? format("%.4f", r.us) : "null")
           << ", \"gbps\": " << json_number("%.2f", d.gbps) << ", \"pct_of_floor\": " << json_number("%.2f", d.pct_of_floor)
           << ", \"speedup_vs_cublas\": " << json_number("%.4f", d.speedup_vs_cublas)
           << ", \"floor_us\": " << format("%.4f", row.floor_us) << ", \"bytes\": " << format("%.0f", row.bytes)
           << ", \"weight_sets\": " << row.sets << ", \"gemms_per_graph\": " << row.gemms_per_graph
           << ", \"note\": " << json_string(r.note) << ", \"plan\": " << json_string(r.plan)
           << ", \"stream_floor_pdl_us\": " << json_number("%.4f", row.stream_pdl_us)
           << ", \"stream_floor_nopdl_us\": " << json_number("%.4f", row.stream_plain_us)
           << ", \"vs_stream_floor\": " << json_number("%.4f", d.vs_stream)
           << ", \"producers\": " << json_string(row.producers) << "}";
      first = false;
    }
  }
  file << "\n  ]\n}\n";
  if (!file) {
    *error = "error writing '" + path + "'";
    return false;
  }
  return true;
}
