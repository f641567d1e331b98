/* scan.h — generated CumSum kernels.
 *
 * X (static shape, default layout, f32/f64/i32/i64) is seen as [outer, len,
 * inner] around the summed axis (given by a constant). Each of the
 * outer*inner lines is summed along len, forwards or in reverse, inclusive
 * or exclusive, as the reference does (core/ops-reduce.c): floats
 * accumulate in double, integers in int64 with wrapping, and each partial
 * sum is stored in X's dtype.
 *
 * The C kernel: an OpenMP-parallel loop over (outer, chunk of inner), and
 * per step along len an `omp simd` loop over the chunk's lines, whose
 * running sums sit in a stack array (the lines of a chunk are neighbours
 * in memory, so each step reads and writes a contiguous run). The CUDA
 * kernel: a thread per line walking len (neighbouring threads, neighbouring
 * lines: coalesced when inner > 1).
 * Internal to kernels/.
 */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

typedef struct {
  PlDType dtype;                 /* of X and Y */
  int64_t outer, len, inner;     /* X as [outer, len, inner], summed along len */
  bool    exclusive, reverse;
} PlScanDesc;

/* Fills d from a CumSum node. false with *why (g_free) when it cannot be
 * generated (dynamic shapes, an axis that is not a constant, another
 * dtype or layout). */
bool     pl_scan_desc_from_node (const PlNode *node, PlScanDesc *d, char **why);
/* "cumsum 4x[128]x16 exclusive reverse" */
char    *pl_scan_describe       (const PlScanDesc *d);
/* Appends  void <name> (void *const *args)  (args[0] X, args[1] Y). */
void     pl_scan_emit_c         (GString *out, const PlScanDesc *d, const char *name);
/* Appends  extern "C" __global__ void <name> (const T *x, T *y, void *unused)
 * (a loop kernel's parameters); *block and *grid receive its launch. */
void     pl_scan_emit_cuda      (GString *out, const PlScanDesc *d, const char *name, int n_sms, int *block,
                                 int64_t *grid);

G_END_DECLS
