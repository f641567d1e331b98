/* topk.h — generated TopK kernels.
 *
 * X (static shape, default layout, f32/f64/i32/i64) is seen as [outer, len,
 * inner] around the axis; each of the outer*inner lines keeps its K best
 * elements (K a constant, at most PL_TOPK_MAX_K) in a sorted buffer, an
 * insertion per element that beats the buffer's last. The order is the
 * reference's (core/ops-reduce.c), whatever `sorted` says: best first, NaN
 * best for largest and worst for smallest, equal values by index. Outputs:
 * the values, and their indices along the axis (i64).
 *
 * The C kernel runs the lines under OpenMP, the CUDA kernel a thread per
 * line; the buffer lives on the stack (C) or in registers/local memory.
 * Internal to kernels/.
 */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

#define PL_TOPK_MAX_K 256

typedef struct {
  PlDType dtype;                 /* of X and the values */
  int64_t outer, len, inner, k;
  bool    largest;
} PlTopKDesc;

/* Fills d from a TopK node. false with *why (g_free) when it cannot be
 * generated (dynamic shapes, K not a constant or above PL_TOPK_MAX_K,
 * another dtype or layout). */
bool     pl_topk_desc_from_node (const PlNode *node, PlTopKDesc *d, char **why);
/* "top 5 of 4x[100]x1, largest" */
char    *pl_topk_describe       (const PlTopKDesc *d);
/* Appends  void <name> (void *const *args)  (X, values, indices). */
void     pl_topk_emit_c         (GString *out, const PlTopKDesc *d, const char *name);
/* Appends  <name> (x, values, indices, scratch); *block and *grid: its launch. */
void     pl_topk_emit_cuda      (GString *out, const PlTopKDesc *d, const char *name, int n_sms, int *block,
                                 int64_t *grid);

G_END_DECLS
