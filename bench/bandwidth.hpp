// The device's streaming-read bandwidth, measured in the run that uses it: the
// denominator of every floor in the report.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

// Reads a fresh `bytes`-byte buffer with 16-byte loads; returns GB/s (1e9 bytes
// per second) counting bytes read, the median of several passes.
double measure_read_bandwidth(size_t bytes, cudaStream_t stream);
