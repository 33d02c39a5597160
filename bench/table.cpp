#include "table.hpp"

#include <algorithm>
#include <cmath>

std::string format(const char* fmt, double value) {
  if (std::isnan(value)) return "-";
  char text[64];
  std::snprintf(text, sizeof(text), fmt, value);
  return text;
}

void print_table(std::FILE* out, const std::vector<std::vector<std::string>>& cells, size_t left_aligned) {
  std::vector<size_t> width(cells.front().size(), 0);
  for (const auto& line : cells) {
    for (size_t c = 0; c < line.size(); ++c) width[c] = std::max(width[c], line[c].size());
  }
  for (size_t l = 0; l < cells.size(); ++l) {
    std::string text;
    for (size_t c = 0; c < cells[l].size(); ++c) {
      const std::string& cell = cells[l][c];
      const std::string pad(width[c] - cell.size(), ' ');
      text += c == 0 ? "" : "  ";
      text += c < left_aligned ? cell + pad : pad + cell;
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    std::fprintf(out, "%s\n", text.c_str());
    if (l == 0) {
      size_t total = 0;
      for (const size_t w : width) total += w;
      std::fprintf(out, "%s\n", std::string(total + 2 * (width.size() - 1), '-').c_str());
    }
  }
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string csv_number(const char* fmt, double value) { return std::isnan(value) ? "" : format(fmt, value); }

std::string json_string(const std::string& text) {
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof(escape), "\\u%04x", static_cast<unsigned>(c));
      quoted += escape;
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

std::string json_number(const char* fmt, double value) { return std::isnan(value) ? "null" : format(fmt, value); }

