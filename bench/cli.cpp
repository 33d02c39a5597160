#include "cli.hpp"

#include <cerrno>
#include <cstdlib>

namespace {

constexpr const char* kUsage =
    R"(usage: tgv-bench [options]

Checks and times bf16 GEMMs out[M x N] = x[M x K] . W[N x K]^T (+bias) through the
tgv-gemm API. Each backend's result is compared with an fp32 reference, then timed
as CUDA-graph replays of back-to-back GEMMs over rotating weight copies (cold
weights, as in a decode step). Two floors sit beside the times: the HBM floor, the
bytes of W + x + out over the device's streaming-read bandwidth (measured at the
start of the run), and the stream floor, the time of a kernel that only reads the
same W bytes, spread evenly over every SM and launched as the GEMMs are (same
graph, same rotating copies; with PDL and without): the practical floor with
launch and first-load latency included.

modes (one per run; two options that select different modes are a usage error):
  (default)        isolated GEMMs: every backend beside both floors
  --mode chain     decoder layers of GEMMs fed through elementwise kernels
  --mode floor     only the stream floor of each shape (with and without PDL)
  --tune FILE      time every legal (tactic, split-K, stages: the deepest or 8) and
                   cuBLASLt per shape and M bucket; write the tuning file the library
                   loads (TGV_TUNING_FILE, or ~/.cache/tgv-gemm/tuning.json); each
                   candidate timed as --neighbours says
  --validate       run the full correctness grid of the tgv kernels on this GPU
                   (every tactic of its family x shapes with M/N/K tails x
                   layouts x bias, against the fp32 reference) and print a
                   verdict to report back; exit status 0 on PASS, 1 on FAIL
  --mode isolated  the default, named

options:
  --model NAME     only shapes whose model name (or a further producer's label)
                   contains NAME (any case)
  --shapes FILE    shapes from FILE, one per line: `label N K [producer ...]`, '#'
                   starts a comment. The model name is FILE's base name, unless
                   the label is `model:projection`; further tokens name the other
                   (model, projection)s with this N x K (bench/corpus/decode.shapes)
                   (default: Llama-3.1-8B, Llama-3.1-70B TP8, DeepSeek-V3 TP8,
                   gpt-oss-120b TP4)
  --list-shapes    print the selected shapes and exit (no GPU needed)
  --m LIST         token counts, comma-separated (default 1,2,4,8,16,32,64,128,256)
  --backend LIST   among tgv,auto,cublas, comma-separated (default tgv,cublas); a
                   backend that answers NOT_SUPPORTED is skipped with a note
  --tactic ID      tactic id for the tgv backend (default -1: the library picks)
  --split-k N      split-K factor for the tgv backend (default 0: the library picks; -1: stream-K)
  --stages N       pipeline depth for the tgv backend, 2..16 (default 0: the tuning
                   file's, else the deepest ring that fits shared memory)
  --host-overhead  also time the host side of eager calls (us per call, a column per backend)
  --pdl 0|1        programmatic dependent launch (default 1); the stream floor
                   that the x/stream ratios divide by is launched the same way
  --neighbours kernels|self|both
                   the table and --tune: each timed call (and the stream floor's)
                   followed by a one-thread kernel that neither waits nor triggers
                   (its time alone subtracted), as a model's GEMMs sit between norms
                   and attention (kernels), or calls back to back, each GEMM's weight
                   stream starting under the previous one's tail (self: the table's
                   default); --tune only: both (its default, as tgv_gemm.tune), each
                   candidate scored by the mean of the two, as a model's GEMMs have
                   both kinds of neighbour
  --bias           add a bias of N elements
  --reps N         timed graph replays; the median is reported (default 9)
  --csv FILE       also write the results as CSV
  --json FILE      also write the results and the run's provenance as JSON
  --help           this text

exit status: 0 when every check passed; 1 when a check failed, a backend
returned an error, a CUDA call failed or there is no GPU; 2 for bad usage.
)";

bool parse_int(const std::string& text, int64_t lo, int64_t hi, int64_t* value) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *value = v;
  return true;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (true) {
    const size_t comma = text.find(',', begin);
    parts.push_back(text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
    if (comma == std::string::npos) return parts;
    begin = comma + 1;
  }
}

// Quotes an argument so that the header's command line can be pasted back into a shell.
std::string shell_quote(const std::string& arg) {
  constexpr const char* kSafe =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=,:+@%";
  if (!arg.empty() && arg.find_first_not_of(kSafe) == std::string::npos) return arg;
  std::string quoted = "'";
  for (const char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

bool parse_ms(const std::string& text, std::vector<int64_t>* ms, std::string* error) {
  ms->clear();
  for (const std::string& part : split_commas(text)) {
    int64_t m = 0;
    if (!parse_int(part, 1, 65536, &m)) {
      *error = "--m: '" + part + "' is not a token count in [1, 65536]";
      return false;
    }
    ms->push_back(m);
  }
  return true;
}

bool parse_backends(const std::string& text, std::vector<BackendChoice>* backends, std::string* error) {
  backends->clear();
  for (const std::string& name : split_commas(text)) {
    BackendChoice choice;
    if (name == "tgv") {
      choice = {name, tgv::Backend::Tgv};
    } else if (name == "cublas") {
      choice = {name, tgv::Backend::Cublas};
    } else if (name == "auto") {
      choice = {name, tgv::Backend::Auto};
    } else {
      *error = "--backend: '" + name + "' is not one of tgv, auto, cublas";
      return false;
    }
    bool seen = false;
    for (const BackendChoice& b : *backends) seen = seen || b.name == name;
    if (!seen) backends->push_back(choice);
  }
  return true;
}

}  // namespace

const char* usage_text() { return kUsage; }

CliAction parse_cli(int argc, char** argv, Cli* cli, std::string* error) {
  *cli = Cli{};
  cli->backends = {{"tgv", tgv::Backend::Tgv}, {"cublas", tgv::Backend::Cublas}};
  cli->ms = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  for (int i = 0; i < argc; ++i) {
    if (i > 0) cli->command_line += ' ';
    cli->command_line += shell_quote(argv[i]);
  }

  // The first option that selected a mode, as typed: a second one that selects
  // another mode is an error naming both.
  std::string mode_option;
  const auto select_mode = [&](const std::string& typed) {
    if (!mode_option.empty() && mode_option != typed) {
      *error = typed + " conflicts with " + mode_option + ": they select different modes; give one";
      return false;
    }
    mode_option = typed;
    return true;
  };

  for (int i = 1; i < argc; ++i) {
    const std::string option = argv[i];
    if (option == "--help" || option == "-h") return CliAction::Help;
    if (option == "--list-shapes") {
      cli->list_shapes = true;
      continue;
    }
    if (option == "--bias") {
      cli->bias = true;
      continue;
    }
    if (option == "--host-overhead") {
      cli->host_overhead = true;
      continue;
    }
    if (option == "--validate") {
      if (!select_mode(option)) return CliAction::Error;
      cli->validate = true;
      continue;
    }
    const bool takes_value = option == "--model" || option == "--shapes" || option == "--m" ||
                             option == "--backend" || option == "--tactic" || option == "--split-k" ||
                             option == "--stages" || option == "--pdl" || option == "--mode" || option == "--reps" ||
                             option == "--csv" || option == "--tune" || option == "--json" ||
                             option == "--neighbours";
    if (!takes_value) {
      *error = "unknown option '" + option + "'";
      return CliAction::Error;
    }
    if (i + 1 >= argc) {
      *error = option + " needs a value";
      return CliAction::Error;
    }
    const std::string value = argv[++i];
    int64_t number = 0;
    if (option == "--model") {
      cli->model_filter = value;
    } else if (option == "--shapes") {
      cli->shapes_file = value;
    } else if (option == "--tune") {
      if (!select_mode(option)) return CliAction::Error;
      cli->tune_path = value;
    } else if (option == "--neighbours") {
      if (value != "kernels" && value != "self" && value != "both") {
        *error = "--neighbours: '" + value + "' is not kernels, self or both";
        return CliAction::Error;
      }
      cli->neighbours = value;
    } else if (option == "--csv") {
      cli->csv_path = value;
    } else if (option == "--json") {
      cli->json_path = value;
    } else if (option == "--m") {
      if (!parse_ms(value, &cli->ms, error)) return CliAction::Error;
    } else if (option == "--backend") {
      if (!parse_backends(value, &cli->backends, error)) return CliAction::Error;
    } else if (option == "--tactic") {
      if (!parse_int(value, -1, INT32_MAX, &number)) {
        *error = "--tactic: '" + value + "' is not -1 or a tactic id";
        return CliAction::Error;
      }
      cli->tactic = static_cast<int32_t>(number);
    } else if (option == "--split-k") {
      if (!parse_int(value, -1, 16, &number)) {
        *error = "--split-k: '" + value + "' is not 0 (auto), a factor in [1, 16] or -1 (stream-K)";
        return CliAction::Error;
      }
      cli->split_k = static_cast<int32_t>(number);
    } else if (option == "--stages") {
      if (!parse_int(value, 0, 16, &number) || number == 1) {
        *error = "--stages: '" + value + "' is not 0 (auto) or a pipeline depth in [2, 16]";
        return CliAction::Error;
      }
      cli->stages = static_cast<int32_t>(number);
    } else if (option == "--pdl") {
      if (value != "0" && value != "1") {
        *error = "--pdl: '" + value + "' is not 0 or 1";
        return CliAction::Error;
      }
      cli->pdl = value == "1";
    } else if (option == "--mode") {
      if (value != "isolated" && value != "chain" && value != "floor") {
        *error = "--mode: '" + value + "' is not isolated, chain or floor";
        return CliAction::Error;
      }
      if (!select_mode(option + " " + value)) return CliAction::Error;
      cli->mode = value == "chain" ? Mode::Chain : value == "floor" ? Mode::Floor : Mode::Isolated;
    } else if (option == "--reps") {
      if (!parse_int(value, 1, 1000, &number)) {
        *error = "--reps: '" + value + "' is not a count in [1, 1000]";
        return CliAction::Error;
      }
      cli->reps = static_cast<int>(number);
    }
  }
  if (!cli->neighbours.empty() && (cli->mode != Mode::Isolated || cli->validate)) {
    *error = "--neighbours applies to the table and to --tune (chain and floor time their own arrangements; "
             "--validate times nothing)";
    return CliAction::Error;
  }
  if (cli->neighbours == "both" && cli->tune_path.empty()) {
    *error = "--neighbours both: only with --tune (the table times each call one way: kernels or self)";
    return CliAction::Error;
  }
  return CliAction::Run;
}
