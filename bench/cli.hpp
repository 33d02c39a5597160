// The command line of tgv-bench: what to run, how, and where to write it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tgv/tgv.hpp"

struct BackendChoice {
  std::string name;  // as typed after --backend; also the table's column name
  tgv::Backend id;
};

// What a run does. --validate and --tune FILE select their modes too; two options
// that select different modes are a usage error (exit 2), never one silently
// overriding the other.
enum class Mode { Isolated, Chain, Floor };

struct Cli {
  std::vector<BackendChoice> backends;
  std::vector<int64_t> ms;
  std::string model_filter;
  std::string shapes_file;
  std::string csv_path;
  std::string json_path;
  int32_t tactic = tgv::kAutoTactic;
  int32_t split_k = tgv::kAutoSplitK;
  int32_t stages = tgv::kAutoStages;
  bool host_overhead = false;
  std::string tune_path;  // --tune: write the tuning file here
  // --neighbours as typed: "kernels", "self", "both" (--tune only), or empty (the mode's
  // default: self for the table, both for --tune; between_kernels(), back_to_back()).
  std::string neighbours;
  bool validate = false;  // --validate: the correctness grid and its verdict, no timing
  bool pdl = true;
  bool bias = false;
  int reps = 9;
  Mode mode = Mode::Isolated;
  bool list_shapes = false;  // --list-shapes: print the selected shapes and exit (no GPU needed)
  std::string command_line;  // argv, shell-quoted where needed, for the report header
};

enum class CliAction { Run, Help, Error };

// Whether the calls are timed each followed by a spacer kernel (--neighbours
// kernels, or both: --tune's default) and whether back to back (self, the
// table's default, or both); --tune with both scores a candidate by the mean.
inline bool between_kernels(const Cli& cli) {
  const bool both = cli.neighbours == "both" || (cli.neighbours.empty() && !cli.tune_path.empty());
  return both || cli.neighbours == "kernels";
}
inline bool back_to_back(const Cli& cli) { return cli.neighbours != "kernels"; }

// Fills `cli` from argv (defaults for what is not given). On Error, `error` says why.
CliAction parse_cli(int argc, char** argv, Cli* cli, std::string* error);

const char* usage_text();
