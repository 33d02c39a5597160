// The weight shapes tgv-bench times: the embedded default set and a text-file loader.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct Shape {
  std::string model;  // what --model matches
  std::string label;  // the layer, e.g. "qkv"
  int64_t n;          // weight rows
  int64_t k;          // reduction
};

// Decode-time projections of Llama-3.1-8B, Llama-3.1-70B at TP8, DeepSeek-V3 at TP8
// and gpt-oss-120b at TP4, each GPU's slice.
std::vector<Shape> default_shapes();

// Reads `label N K` lines; '#' starts a comment. The model name is the file's base
// name without its extension. On a bad line returns false, `error` naming file:line.
bool load_shapes_file(const std::string& path, std::vector<Shape>* shapes, std::string* error);

// The shapes whose model name contains `needle`, ignoring case; all of them for "".
std::vector<Shape> filter_by_model(const std::vector<Shape>& shapes, const std::string& needle);
