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
  // Further producers of this N x K, each "model:projection" as in a shapes file
  // (bench/corpus/decode.shapes labels every shape with every model that has it).
  std::vector<std::string> also = {};
};

// Decode-time projections of Llama-3.1-8B, Llama-3.1-70B at TP8, DeepSeek-V3 at TP8
// and gpt-oss-120b at TP4, each GPU's slice.
std::vector<Shape> default_shapes();

// Reads `label N K [producer ...]` lines; '#' starts a comment. A label of the form
// `model:projection` gives the shape that model and label; any other label takes the
// file's base name (without its extension) as the model. Further tokens go to
// Shape::also. On a bad line returns false, `error` naming file:line.
bool load_shapes_file(const std::string& path, std::vector<Shape>* shapes, std::string* error);

// The shapes whose model name, or one of whose further producers, contains
// `needle`, ignoring case; all of them for "".
std::vector<Shape> filter_by_model(const std::vector<Shape>& shapes, const std::string& needle);

// Every producer of the shape, "model:label" first, then Shape::also, space-separated.
std::string producers(const Shape& shape);
