#include "shapes.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

std::vector<Shape> default_shapes() {
  return {
      // Llama-3.1-8B, one GPU: hidden 4096, 32 q / 8 kv heads of 128, FFN 14336.
      {"llama3.1-8b", "qkv", 6144, 4096},
      {"llama3.1-8b", "o", 4096, 4096},
      {"llama3.1-8b", "gate_up", 28672, 4096},
      {"llama3.1-8b", "down", 4096, 14336},
      // Llama-3.1-70B at TP8: hidden 8192, 64 q / 8 kv heads of 128, FFN 28672.
      {"llama3.1-70b-tp8", "qkv", 1280, 8192},
      {"llama3.1-70b-tp8", "o", 8192, 1024},
      {"llama3.1-70b-tp8", "gate_up", 7168, 8192},
      {"llama3.1-70b-tp8", "down", 8192, 3584},
      // DeepSeek-V3 at TP8: hidden 7168, 128 heads (v 128, qk 192), q LoRA rank 1536.
      {"deepseek-v3-tp8", "o_proj", 7168, 2048},
      {"deepseek-v3-tp8", "q_b", 3072, 1536},
      // gpt-oss-120b at TP4: hidden 2880, 64 q / 8 kv heads of 64.
      {"gpt-oss-120b-tp4", "qkv", 1280, 2880},
      {"gpt-oss-120b-tp4", "o", 2880, 1024},
  };
}

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string model_name_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = base.find_last_of('.');
  if (dot != std::string::npos && dot > 0) base.erase(dot);
  return base;
}

}  // namespace

bool load_shapes_file(const std::string& path, std::vector<Shape>* shapes, std::string* error) {
  std::ifstream file(path);
  if (!file) {
    *error = "cannot open shapes file '" + path + "'";
    return false;
  }
  const std::string model = model_name_of(path);
  shapes->clear();
  std::string line;
  for (int line_number = 1; std::getline(file, line); ++line_number) {
    line.erase(std::min(line.find('#'), line.size()));
    std::istringstream fields(line);
    Shape shape{model, "", 0, 0};
    if (!(fields >> shape.label)) continue;  // blank or comment-only
    if (!(fields >> shape.n >> shape.k) || shape.n <= 0 || shape.k <= 0) {
      *error = path + ":" + std::to_string(line_number) + ": expected `label N K [producer ...]` with N, K > 0";
      return false;
    }
    const size_t colon = shape.label.find(':');
    if (colon != std::string::npos && colon > 0 && colon + 1 < shape.label.size()) {
      shape.model = shape.label.substr(0, colon);
      shape.label.erase(0, colon + 1);
    }
    for (std::string producer; fields >> producer;) shape.also.push_back(producer);
    shapes->push_back(shape);
  }
  if (shapes->empty()) {
    *error = "shapes file '" + path + "' has no shapes";
    return false;
  }
  return true;
}

std::vector<Shape> filter_by_model(const std::vector<Shape>& shapes, const std::string& needle) {
  const std::string wanted = lower(needle);
  std::vector<Shape> kept;
  for (const Shape& shape : shapes) {
    bool match = lower(shape.model).find(wanted) != std::string::npos;
    for (const std::string& producer : shape.also) {
      const std::string producer_model = producer.substr(0, producer.find(':'));
      match = match || lower(producer_model).find(wanted) != std::string::npos;
    }
    if (match) kept.push_back(shape);
  }
  return kept;
}

std::string producers(const Shape& shape) {
  std::string text = shape.model + ":" + shape.label;
  for (const std::string& producer : shape.also) text += " " + producer;
  return text;
}
