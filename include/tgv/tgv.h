/*
 * tgv-gemm C ABI: the stable surface of the library.
 *
 *   out[l] = x[l] . W[l]^T (+ bias)      for l in [0, L)
 *
 *   x   : L x M x K   (tokens x reduction)       bf16
 *   W   : L x N x K   (weight rows x reduction)  bf16
 *   bias: N           (shared by every batch)    bf16, optional
 *   out : L x M x N                              bf16, fp32 accumulation
 *
 * Epilogues (fields appended to tgv_problem; zero-initialized they are off):
 *   out_dtype  fp32 output (either input type), fp16 output for fp16 inputs
 *   residual   out = x . W^T (+ bias) + residual (residual: out's shape and
 *              dtype; it may be out itself, for an in-place hidden-state update)
 *   epilogue   TGV_EPILOGUE_SILU_MUL / _GELU_TANH_MUL: W holds [gate; up]
 *              stacked along N (rows 0..N/2-1 gate, N/2..N-1 up) and
 *              out[l] (L x M x N/2) = act(x . gate^T + bias[:N/2]) * (x . up^T + bias[N/2:])
 * Every epilogue computes in fp32 and rounds once, to out_dtype.
 *
 * Every operand is described by a base pointer and element strides, one per
 * dimension, so that both layouts of each matrix pass without a copy:
 *   x   K-major (stride_k == 1) or M-major (stride_m == 1)
 *   W   K-major (stride_k == 1) or N-major (stride_n == 1)
 *   out row-major (stride_n == 1) or column-major (stride_m == 1)
 *
 * All functions are thread-safe. On failure they return a non-zero status,
 * write nothing to `out`, launch nothing, and leave a message naming the
 * offending argument and its value in a thread-local buffer read by
 * tgv_last_error().
 */
#ifndef TGV_TGV_H_
#define TGV_TGV_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* TGV_VERSION_MAJOR, _MINOR, _PATCH: generated from the CMake project version
 * (installed beside this header). */
#include "tgv/version.h"

typedef enum tgv_status {
  TGV_SUCCESS = 0,
  TGV_ERROR_INVALID_ARGUMENT = 1, /* a size, pointer, stride or option is wrong */
  TGV_ERROR_NOT_SUPPORTED = 2,    /* valid request this build or device cannot serve */
  TGV_ERROR_CUDA = 3,             /* a CUDA runtime or driver call failed */
  TGV_ERROR_CUBLAS = 4,           /* a cuBLASLt call failed */
  TGV_ERROR_INTERNAL = 5          /* a bug in tgv-gemm; please report it */
} tgv_status;

typedef enum tgv_dtype {
  TGV_DTYPE_BF16 = 0, /* inputs and out */
  TGV_DTYPE_FP16 = 1, /* inputs and out */
  TGV_DTYPE_FP32 = 2, /* out only */
  TGV_DTYPE_FP8_E4M3 = 3
} tgv_dtype;

typedef enum tgv_backend {
  TGV_BACKEND_AUTO = 0,  /* fastest validated backend for the device and shape */
  TGV_BACKEND_TGV = 1,   /* our kernels; an error where they cannot run */
  TGV_BACKEND_CUBLAS = 2 /* cuBLASLt */
} tgv_backend;

/* What happens to x . W^T (+ bias) before it is stored (tgv_problem.epilogue). */
typedef enum tgv_epilogue {
  TGV_EPILOGUE_NONE = 0,         /* out = x . W^T (+ bias) (+ residual) */
  TGV_EPILOGUE_SILU_MUL = 1,     /* out = silu(gate) * up, silu(g) = g / (1 + exp(-g)) */
  TGV_EPILOGUE_GELU_TANH_MUL = 2 /* out = gelu_tanh(gate) * up,
                                  * gelu_tanh(g) = g/2 (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))) */
} tgv_epilogue;

typedef struct tgv_problem {
  int64_t m, n, k, l; /* tokens, weight rows, reduction, batch */
  int32_t dtype;      /* tgv_dtype of x, W and bias: bf16 or fp16 */

  const void* x;      /* L x M x K */
  int64_t x_stride_l, x_stride_m, x_stride_k;

  const void* w;      /* L x N x K */
  int64_t w_stride_l, w_stride_n, w_stride_k;

  const void* bias;   /* N elements, contiguous; NULL for none */

  void* out;          /* L x M x N (N/2 columns with a gated epilogue) */
  int64_t out_stride_l, out_stride_m, out_stride_n;

  /* Appended after out_stride_n (0.1): all zero is bf16 out, no residual, no
   * epilogue -- what a problem meant before these fields existed. */
  int32_t out_dtype;    /* tgv_dtype of out and residual: bf16 (with bf16
                         * inputs), fp16 (with fp16 inputs) or fp32 (either) */
  int32_t epilogue;     /* tgv_epilogue */
  const void* residual; /* out's shape and dtype, laid out like out (row- or
                         * column-major, its own strides); NULL for none. It
                         * may be out itself (same pointer and strides); any
                         * other overlap with out is an error. Not with a gated
                         * epilogue. */
  int64_t residual_stride_l, residual_stride_m, residual_stride_n;
} tgv_problem;

/* split_k value for stream-K (sm_90 tgv kernel): one CTA per SM, the (tile,
 * K block) iterations of the whole problem cut into equal contiguous ranges,
 * partly covered tiles summed in a fixed order (bitwise repeatable) through a
 * per-(device, stream) workspace the library allocates on first use. */
#define TGV_SPLIT_K_STREAM (-1)

typedef struct tgv_options {
  int32_t backend; /* tgv_backend */
  int32_t tactic;  /* -1: chosen by the library; else an id from tgv_get_tactic */
  int32_t pdl;     /* 1: launch with programmatic dependent launch; 0: plain */
  int32_t split_k; /* 0: chosen by the library; >= 1: that factor;
                    * TGV_SPLIT_K_STREAM: stream-K (tgv backend) */
  int32_t stages;  /* pipeline depth (tgv backend). 0: chosen by the library
                    * (the tuning file's, else the deepest that fits shared
                    * memory, made even where the tile runs two K groups);
                    * else a stage count in [2, 16] for the sm_90 kernels (on
                    * an odd count a K-group tile runs one group); an sm_100
                    * tactic fixes its own count, so only that count (or 0)
                    * is accepted with it */
} tgv_options;

typedef struct tgv_tactic_info {
  int32_t id;
  int32_t arch;    /* 90 for Hopper, 100 for Blackwell */
  int32_t cta_m;   /* weight rows per CTA (the MMA's M after the A/B swap) */
  int32_t cta_n;   /* tokens per CTA (the MMA's N) */
  int32_t cta_k;   /* reduction depth per pipeline stage */
  int32_t stages;  /* the deepest pipeline that fits shared memory (what
                    * options.stages = 0 runs without a tuning file) */
  int32_t cluster; /* CTAs per cluster */
} tgv_tactic_info;

/* Fills the defaults: backend auto, tactic -1, PDL on, split-K auto, stages
 * auto. */
void tgv_default_options(tgv_options* options);

/* Problem with every stride set for the common layout: x, W K-major; out
 * row-major; batches packed; residual strides equal to out's. bf16 in and out,
 * no epilogue. Pointers are NULL; the caller sets them. */
void tgv_default_problem(tgv_problem* problem, int64_t m, int64_t n, int64_t k,
                         int64_t l);

/* Runs the GEMM on `stream` (a cudaStream_t; NULL is the legacy stream).
 * Capturable in a CUDA graph once the same shape has been run once outside
 * capture with the cuBLASLt backend (its algorithm choice is cached). */
tgv_status tgv_gemm(const tgv_problem* problem, const tgv_options* options,
                    void* stream);

/* What tgv_gemm would run for this problem and options on the current
 * device, without launching anything. */
typedef struct tgv_plan_info {
  int32_t backend; /* TGV_BACKEND_TGV or TGV_BACKEND_CUBLAS; TGV_BACKEND_AUTO
                    * for an empty problem (M, N or L = 0: nothing runs) */
  int32_t tactic;  /* the tgv tactic id; -1 unless backend is TGV_BACKEND_TGV */
  int32_t split_k; /* the split-K factor (1 unless backend is TGV_BACKEND_TGV),
                    * or TGV_SPLIT_K_STREAM */
  int32_t stages;  /* the pipeline depth (0 unless backend is TGV_BACKEND_TGV) */
  int32_t pdl;     /* 1: launched with programmatic dependent launch */
} tgv_plan_info;

/* Fills *plan with the dispatcher's choice for (problem, options) on the
 * current device: the explicit options, else the tuning file's entry, else the
 * built-in rule (README). The same checks and errors as tgv_gemm, in the same
 * order; like the first tgv_gemm on a device it may settle the self-check
 * gate (and run its probe). For logging what an engine runs, and for tests. */
tgv_status tgv_get_plan(const tgv_problem* problem, const tgv_options* options,
                        tgv_plan_info* plan);

/* Checks the problem and options as tgv_gemm would, without launching and
 * without touching a device: what depends on the device (its architecture,
 * whether the tgv kernels serve it) is decided by tgv_gemm. */
tgv_status tgv_validate(const tgv_problem* problem, const tgv_options* options);

/* The self-check gate. Before the tgv kernels first serve a device in a
 * process, a built-in probe (a few small GEMMs against cuBLASLt, a few
 * milliseconds) checks them; a family that fails is disabled for the process
 * (one warning on stderr): auto uses cuBLASLt, backend=tgv returns
 * TGV_ERROR_NOT_SUPPORTED with the reason. On Blackwell, auto uses the tgv
 * kernels only once the probe has passed. TGV_SELF_CHECK=auto|run|pass|fail
 * steers it (README); verdicts are cached next to the tuning file.
 *
 * tgv_self_check settles the verdict for the tgv family of `device` now (from
 * the environment, the cache or the probe) and sets *passed to 1 if the family
 * may serve the device, else to 0 and leaves the reason in tgv_last_error()
 * (the call itself still returns TGV_SUCCESS). The verdict is settled once per
 * process and device; later calls return it. Returns
 * TGV_ERROR_INVALID_ARGUMENT for a NULL `passed` or a device that does not
 * exist, TGV_ERROR_NOT_SUPPORTED where this build has no tgv kernels for the
 * device, TGV_ERROR_CUDA where the device cannot be queried. */
tgv_status tgv_self_check(int32_t device, int32_t* passed);

/* Re-reads the tuning file (tgv-bench --tune, tgv_gemm.tune) from its search
 * path -- $TGV_TUNING_FILE, else $XDG_CACHE_HOME/tgv-gemm/tuning.json, else
 * ~/.cache/tgv-gemm/tuning.json -- for every device this process has already
 * used; a device used later reads it then anyway. backend=auto follows the new
 * table from the next call on; calls already running finish with the old one.
 * A missing file leaves an empty table (the built-in rule decides); a file for
 * another GPU or library version, or one that does not parse, is reported on
 * stderr and leaves an empty table too. Needs no GPU. Returns TGV_SUCCESS, or
 * another status with tgv_last_error() on an unexpected failure (out of host
 * memory), after which a device not yet re-read keeps its old table. */
tgv_status tgv_reload_tuning(void);

/* ---- tuning: the candidate list and the file writer that tgv-bench --tune
 * and tgv_gemm.tune share (each only times what these return) ---- */

/* What the candidate list depends on: a device, or a simulated one. */
typedef struct tgv_device_desc {
  int32_t sm;               /* compute capability major * 10 + minor: 90, 100, 103 */
  int32_t sm_count;         /* streaming multiprocessors */
  int64_t smem_optin_bytes; /* dynamic shared memory a block may opt into */
} tgv_device_desc;

/* Describes device ordinal `device`. TGV_ERROR_INVALID_ARGUMENT for a NULL
 * `desc` or a device that does not exist. */
tgv_status tgv_describe_device(int32_t device, tgv_device_desc* desc);

/* The candidates a tuner times for weights N x K at M tokens on `device`,
 * each as the options that run exactly it: every tactic of the device's tgv
 * family whose token tile is the smallest covering M, at each split-K factor
 * of the tuner's list whose grid stays within two waves (the sm_100 kernel:
 * split-K 1 only), with the library's ring (stages 0) and, on sm_90, a shallower
 * one where it fits; then cuBLASLt, last. A device without a tgv family gets
 * cuBLASLt alone. Writes the first min(capacity, total) into `out` and the
 * total into *count (capacity 0 and out NULL: the count alone). */
tgv_status tgv_tune_candidates(const tgv_device_desc* device, int64_t n, int64_t k, int64_t m, tgv_options* out,
                               int32_t capacity, int32_t* count);

/* One measured choice of a tuning file. */
typedef struct tgv_tuning_entry {
  int64_t n, k;     /* weight rows, reduction */
  int64_t m;        /* the M bucket, a power of two in [1, 256]: M in (m/2, m] */
  int32_t backend;  /* TGV_BACKEND_TGV or TGV_BACKEND_CUBLAS */
  int32_t tactic;   /* tgv: the tactic id; ignored for cuBLASLt */
  int32_t split_k;  /* tgv: >= 1 or TGV_SPLIT_K_STREAM; ignored for cuBLASLt */
  int32_t stages;   /* tgv: 0 (the deepest) or a depth; ignored for cuBLASLt */
  double us;        /* the choice's time per call, microseconds */
  double cublas_us; /* cuBLASLt's in the same run (0: not measured) */
} tgv_tuning_entry;

/* Writes the tuning file `path` (NULL or "": the path the library reads,
 * tgv_tuning_file_path()) for GPU `gpu` with `sm_count` SMs and this library's
 * version: the whole file at once (a temporary file, then a rename), its
 * folder created if missing. Does not make the library re-read it
 * (tgv_reload_tuning does). TGV_ERROR_INVALID_ARGUMENT, naming the entry and
 * field, for a malformed entry, and for a path that cannot be written. */
tgv_status tgv_write_tuning_file(const char* path, const char* gpu, int32_t sm_count,
                                 const tgv_tuning_entry* entries, int32_t count);

/* Where the library reads the tuning file: $TGV_TUNING_FILE, else
 * $XDG_CACHE_HOME/tgv-gemm/tuning.json, else ~/.cache/tgv-gemm/tuning.json
 * ("" if none applies). The string lives until this thread's next call. */
const char* tgv_tuning_file_path(void);

/* Number of tactic ids; tgv_get_tactic(i) for i in [0, count) describes one. */
int32_t tgv_num_tactics(void);
tgv_status tgv_get_tactic(int32_t id, tgv_tactic_info* info);

/* The message of the last failed call on this thread ("" if none). */
const char* tgv_last_error(void);
const char* tgv_status_name(tgv_status status);
const char* tgv_version_string(void);

#ifdef __cplusplus
}
#endif

#endif /* TGV_TGV_H_ */
