/* backend.h — what the runtime (runtime.c) asks of the CPU backend
 * (cpu-backend.c) and the CUDA backend (cuda-backend.c). Internal to
 * kernels/. */
#pragma once

#include "codegen.h"

G_BEGIN_DECLS

/* --- CPU ----------------------------------------------------------------------------- */

/* $XDG_CACHE_HOME/passlab/kernels: compiled modules, precompiled headers, NVRTC's PTX. */
char        *pl_kernel_cache_dir   (void);
/* A kernel cache file's name: prefix + the first 32 hex digits of key's SHA-256 (key_len -1: up to its NUL). */
char        *pl_kernel_cache_name  (const char *prefix, const char *key, gssize key_len);

typedef struct _PlCpuModule PlCpuModule;
typedef void (*PlCpuKernelFn) (void *const *args);
/* im2col (x -> col) of a conv, or col2im (col -> y) of a ConvTranspose */
typedef void (*PlCpuIm2colFn) (const void *x, void *col, int64_t n, int64_t g);

/* Compiles a translation unit with the system C compiler into
 * cache_dir/<sha256 of compiler, flags and source>.so (reused when present:
 * *cache_hit) and loads it. cache_dir NULL: $XDG_CACHE_HOME/passlab/kernels. */
PlCpuModule *pl_cpu_module_compile (const char *source, const char *cache_dir, bool *cache_hit, GError **error);
/* The same with the system C++ compiler ($PASSLAB_CXX, default c++): the CUDA emulator's modules.
 * header (may be NULL): text that goes in front of source, precompiled once per cache dir (GCC's
 * .gch), since parsing the emulator's header (with the C++ library's headers) took most of a small
 * module's compile. */
PlCpuModule *pl_cpu_module_compile_cxx (const char *header, const char *source, const char *cache_dir,
                                        bool *cache_hit, GError **error);
bool         pl_cpu_cxx_available  (char **reason);
void        *pl_cpu_module_symbol  (PlCpuModule *m, const char *name);
const char  *pl_cpu_module_path    (const PlCpuModule *m);
void         pl_cpu_module_free    (PlCpuModule *m);
/* The compiler command line used (for reports and tests). */
const char  *pl_cpu_compiler_flags (void);
/* The BLAS the library paths call, with OpenBLAS's kernel core
 * ("OpenBLAS SkylakeX"; "BLAS" for another): a GEMM's time depends on it,
 * so calibrations and reports name it. */
const char  *pl_cpu_blas_name      (void);

/* (Batched) GEMM through BLAS: c = alpha * op(a) op(b). */
void         pl_cpu_gemm           (const PlGemmDesc *g, const void *a, const void *b, void *c);
/* A generated GEMM of one batch item (gemm-small.h), C = alpha A op (B). */
typedef void (*PlCpuGemmFn) (const void *a, const void *b, void *c);
/* pl_cpu_gemm with fn for each batch item in place of BLAS (NULL: BLAS). */
void         pl_cpu_gemm_with      (const PlGemmDesc *g, const void *a, const void *b, void *c, PlCpuGemmFn fn);
/* Convolution as im2col (generated; it reads X in x_layout) + BLAS GEMM,
 * writing Y in y_layout:
 *   NCHW  per (image, group):  Y[K/g][OH·OW] = W[K/g][C/g·kh·kw] x col
 *   NHWC  per group, the batch: Y[N·OH·OW][K/g] = col[N·OH·OW][kh·kw·C/g] x Wp^T
 *   CHWN  per group, the batch: Y[K/g][OH·OW·N] = W x col[C/g·kh·kw][OH·OW·N]
 * (NHWC and CHWN: the batch's matrix in chunks, pl_cpu_conv_chunk)
 * w: as pl_cpu_conv_pack leaves it when pl_cpu_conv_packs_weights (Wp, the
 * NHWC order), else ONNX's [K, C/g, kh, kw]. col: pl_cpu_conv_col_elems
 * elements (none for a 1x1 stride-1 conv whose X is already the matrix). */
void         pl_cpu_conv           (const PlConvDesc *c, const void *x, const void *w, void *y, void *col,
                                    PlCpuIm2colFn im2col);
int64_t      pl_cpu_conv_col_elems (const PlConvDesc *c);
/* NHWC / CHWN: GEMM rows (NHWC) or columns (CHWN, a multiple of the batch)
 * per chunk of the batch's im2col matrix (chunks fit the cores' L2);
 * im2col's `n` is the chunk's index. */
int64_t      pl_cpu_conv_chunk     (const PlConvDesc *c);
/* NCHW: whole rows of the outermost output dim per im2col chunk (its n:
 * image * chunks + chunk); a ConvTranspose's: of the outermost input dim. */
int64_t      pl_cpu_conv_nchw_rows (const PlConvDesc *c);
bool         pl_cpu_conv_packs_weights (const PlConvDesc *c);
/* [K][C/g][kh][kw] -> [K][kh][kw][C/g] (the same number of elements). */
void         pl_cpu_conv_pack      (const PlConvDesc *c, const void *w_oihw, void *packed);
/* A ConvTranspose (p->conv.transpose; conv-transpose.h): per image, group
 * and chunk of input rows, cols = W_g^T X_g (p->gemm's operands, a chunk of
 * X_g's columns) through BLAS, then col2im (generated,
 * pl_conv_transpose_emit_c) adds cols into y. col: pl_cpu_conv_col_elems. */
void         pl_cpu_conv_transpose (const PlKernelPlan *p, const void *x, const void *w, void *y, void *col,
                                    PlCpuIm2colFn col2im);
/* Whether a convolution reads its input directly as the im2col matrix (1x1,
 * stride 1, no padding, X and Y in one layout). */
bool         pl_conv_is_pointwise  (const PlConvDesc *c);
/* The generated direct convolution (conv-direct.h): wp packed, tile x·y·z. */
typedef void (*PlCpuConvDirectFn) (const void *x, const void *wp, void *y, int64_t tx, int64_t ty, int64_t tz);

/* --- CUDA ---------------------------------------------------------------------------- */

/* NVRTC: compiles CUDA C to PTX for arch ("compute_90"); loads libnvrtc on
 * first use. Fails with PL_ERROR_UNSUPPORTED when libnvrtc is missing. The
 * PTX is kept in cache_dir (NULL: pl_kernel_cache_dir) under the SHA-256 of
 * NVRTC's version, the options and the source, and read from there the next
 * time (*cache_hit): NVRTC took a third of the emulated conformance run, and
 * a GPU run recompiled every module at every start. */
char        *pl_nvrtc_compile      (const char *source, const char *arch, const char *cache_dir, bool *cache_hit,
                                    size_t *ptx_size, GError **error);
/* Whether NVRTC can be loaded (why not in *reason). */
bool         pl_nvrtc_available    (char **reason);

typedef struct _PlCudaContext PlCudaContext;
/* The driver, a device and a context (opened once per process). */
PlCudaContext *pl_cuda_get         (GError **error);
bool         pl_cuda_available     (char **reason);
int          pl_cuda_sm_count      (PlCudaContext *c);
/* The driver's name of the device ("NVIDIA H100 80GB HBM3"). */
const char  *pl_cuda_device_name   (PlCudaContext *c);
/* "compute_90" for the current device. */
char        *pl_cuda_arch          (PlCudaContext *c);
/* Whether the CUDA emulator (PASSLAB_CUDA=emulator) stands in for a GPU:
 * its results are checked, its times are the CPU's, not a GPU's. */
bool         pl_cuda_emulated      (PlCudaContext *c);
/* The device-to-device copy bandwidth (GB/s, read + write) of `bytes`, best
 * of 5 after a warm-up: the ceiling a memory-bound kernel is held against. */
bool         pl_cuda_copy_gbps     (PlCudaContext *c, size_t bytes, double *gbps, GError **error);

G_END_DECLS
