// Cell formatting shared by every report of tgv-bench: an aligned text table,
// CSV fields and JSON values. NaN means "no value" in each.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

// printf of one number; "-" for NaN.
std::string format(const char* fmt, double value);

// Rows of cells, the first the header (underlined); the first `left_aligned`
// columns left-aligned, the rest right-aligned.
void print_table(std::FILE* out, const std::vector<std::vector<std::string>>& cells, size_t left_aligned);

std::string csv_field(const std::string& text);            // quoted where it holds , " or a newline
std::string csv_number(const char* fmt, double value);     // empty for NaN
std::string json_string(const std::string& text);          // quoted and escaped
std::string json_number(const char* fmt, double value);    // null for NaN
