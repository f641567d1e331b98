/* codegen.h — the code generators: C for the CPU (codegen-c.c) and CUDA C
 * (codegen-cuda.c) from kernel plans, and the scalar-expression printer and
 * helper prelude they share (codegen-expr.c). Internal to kernels/.
 *
 * Conventions of generated code: input slot k is `in<k>`, output slot k is
 * `out<k>`, instruction i's value is `v<i>`, reduction r's result `red<r>`,
 * loop coordinate k `c<k>`, the element's index within its row `ridx`. */
#pragma once

#include "kernel-plan.h"

G_BEGIN_DECLS

/* --- shared (codegen-expr.c) ------------------------------------------------------ */

/* Helper functions and macros both languages use; PLK_FN must be defined
 * first ("static inline" / "static __device__ __forceinline__"). */
const char *pl_codegen_common_prelude (void);
/* The C/CUDA expression computing instruction i (its operands printed as
 * v<k>, red<r>, ridx). */
char       *pl_codegen_expr           (const PlLoopPlan *lp, int i);
/* A literal of the dtype (floats exactly, inf and nan through macros). */
char       *pl_codegen_literal        (PlDType dtype, double f, int64_t i);
/* "c0", "c1", ... */
const char *const *pl_codegen_coord_names (void);

/* Emission shared by both languages: they differ in loops and launch
 * shapes, not in how a value, a level of values or the coordinates read. */
/* Appends one line indented by `indent` levels. */
void        pl_codegen_vline          (GString *o, int indent, const char *fmt, va_list ap);
/* The same with the arguments given. */
void        pl_codegen_line           (GString *o, int indent, const char *fmt, ...) G_GNUC_PRINTF (3, 4);
/* `const int64_t <prefix>d = ...;` for d < n: the coordinates of flat index
 * `var` over sizes[n] (the last fastest). */
void        pl_codegen_split          (GString *o, int indent, const char *var, const char *prefix, int n,
                                       const int64_t *sizes);
/* "((0) * s0 + p0) * s1 + p1": the flat index of <prefix>0.. over sizes[n]. */
char       *pl_codegen_flat_index     (const char *prefix, int n, const int64_t *sizes);
/* `const T v<i> = <expr>;` for instruction i. */
void        pl_codegen_value          (GString *o, int indent, const PlLoopPlan *lp, int i);
/* The values computed from reduction r's result (its REDUCED instructions in use). */
void        pl_codegen_reduced_values (GString *o, int indent, const PlLoopPlan *lp, int r);
/* Whether pass `pass` of a row kernel needs ridx, the element's index within
 * its row (an index instruction, a scratch row, an argmax). */
bool        pl_codegen_pass_needs_ridx (const PlLoopPlan *lp, int pass);
/* The values of the used instructions at `level` (row values: of `phase`). */
void        pl_codegen_level          (GString *o, int indent, const PlLoopPlan *lp, PlLevel level, int phase);
/* Coordinates c<first>..c<last-1> from the flat index `var` over those loop dims. */
void        pl_codegen_coords         (GString *o, int indent, const PlLoopPlan *lp, const char *var,
                                       int first, int last);

/* --- C (codegen-c.c) --------------------------------------------------------------- */

/* The start of a translation unit: includes and helpers. */
char       *pl_codegen_c_prelude      (void);
/* Appends the functions of plan p: `void <name> (void *const *args)` with
 * args = input slots then output slots (LOOP, POOL, and the epilogue of GEMM/CONV),
 * and for CONV `void <name>_im2col (const T *x, T *col, int64_t n, int64_t g)`
 * (the matrix pl_cpu_conv multiplies in the conv's layout: image n's (NCHW
 * only) group g) or, impl DIRECT, `<name>_direct` (conv-direct.h), or for a
 * ConvTranspose `void <name>_col2im (const T *col, T *y, int64_t n, int64_t g)`
 * (conv-transpose.h).
 * Returns false (nothing appended) for plans without generated code. */
bool        pl_codegen_c_kernel       (GString *out, const PlKernelPlan *p);

/* --- CUDA (codegen-cuda.c) --------------------------------------------------------- */

typedef struct {
  char    *entry;          /* the __global__ function, extern "C" */
  int      block;          /* threads per block (x) */
  int64_t  grid;           /* blocks (x) */
  int      block_yz[2];    /* y and z of 3-d launches (the direct conv); 0: 1 */
  int64_t  grid_yz[2];
  int      shared_bytes;   /* dynamic shared memory */
  int64_t  scratch_bytes;  /* global scratch the kernel wants as its last argument (0: none) */
  bool     cooperative;    /* the kernel synchronizes the grid (split rows): a cooperative launch,
                            * the scratch's first 16 bytes zeroed (the barrier's counters) */
  int      n_params;       /* cooperative: the kernel's arguments (the scratch is the last) */
} PlCudaLaunch;

char       *pl_codegen_cuda_prelude   (void);
/* Appends the kernels of plan p: for LOOP and POOL (and the epilogue of GEMM/CONV)
 * one kernel taking (in0.., out0.., scratch) as pointers; for CONV also
 * `<name>_conv (x, w, y)`: a direct convolution reading X and writing Y in
 * their layouts, one output per thread (impl GEMM: w in ONNX's order), or
 * the tiled one of conv-direct.h (impl DIRECT: w packed by
 * pl_conv_direct_pack), or for a ConvTranspose `<name>_col2im (col, y, n)`
 * (conv-transpose.h) after the runtime's GEMM. launch[0] describes the loop
 * kernel, launch[1] the convolution. n_sms sizes grids (0: assume 132).
 * Returns the number of launches described (0: no generated code). */
int         pl_codegen_cuda_kernel    (GString *out, const PlKernelPlan *p, int n_sms, PlCudaLaunch *launch);
/* Blocks of `block` threads for a grid-stride loop over `work` items: one
 * item a thread, at most per_sm blocks per SM (and at least one block). */
int64_t     pl_codegen_cuda_grid      (int64_t work, int block, int n_sms, int per_sm);
/* The grid-stride loop's head at indent:
 *   for (int64_t VAR = <global thread>; VAR < n; VAR += <threads in the grid>) */
void        pl_codegen_cuda_grid_stride (GString *o, int indent, const char *var, int64_t n);
void        pl_cuda_launch_clear      (PlCudaLaunch *l);

G_END_DECLS
