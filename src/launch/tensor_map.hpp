// TMA tensor maps over a validated operand, shared by the per-arch launchers.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "common/gemm_desc.hpp"

namespace tgv::detail {

// A map over a rows x K operand (see tensor_map.cpp for the box shapes);
// fold_chunks > 0 maps it 4-D so one box carries that many 64-column chunks.
CUtensorMap make_map(const char* name, const Operand& o, int64_t rows, int64_t k, int64_t l, int box_rows,
                     int fold_chunks, DType type = DType::BF16);

// The map over a K-major W of `rows` = [gate; up] rows for a gated epilogue:
// 5-D (column, row in an 8-row group, gate or up, group, batch), boxes of one
// 64-column chunk by box_rows / 16 groups of 8 gate rows then their 8 up rows.
// Needs (rows / 2) % 8 == 0.
CUtensorMap make_gated_map(const Operand& o, int64_t rows, int64_t k, int64_t l, int box_rows, DType type);

// Chunks one folded box carries for a stage of cta_k columns, or 0 where the
// operand cannot fold (MN-major, or a K tail).
int fold_chunks(const Operand& o, int64_t k, int cta_k);

}  // namespace tgv::detail
