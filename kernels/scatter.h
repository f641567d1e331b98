/* scatter.h — generated ScatterND and ScatterElements (and Scatter) kernels.
 *
 * Y is a copy of the data with the updates written (reduction none) or
 * combined (add, mul, max, min) at the positions the indices give, as the
 * reference does (core/ops-index.c): a negative index counts from the end,
 * and one out of range fails the run through the kernel's status words
 * (pl_kernel_plan_checks), naming the op, the index and the axis.
 *
 * Updates that land on one element are applied in the reference's order,
 * so duplicates give its result with every reduction: the work is split
 * into lines whose elements never meet another line's (ScatterND: each
 * element of the updated slices, over every index tuple; ScatterElements:
 * each update line along the axis), a line in order. The C kernel copies
 * the data and runs the lines under OpenMP; the CUDA kernels are a copy and
 * a thread per line.
 * Internal to kernels/.
 */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

typedef enum { PL_SCATTER_NONE, PL_SCATTER_ADD, PL_SCATTER_MUL, PL_SCATTER_MAX, PL_SCATTER_MIN } PlScatterReduce;

typedef struct {
  bool            nd;                   /* ScatterND; else ScatterElements */
  PlDType         dtype, index_dtype;
  PlScatterReduce reduce;
  int             rank;                 /* of the data */
  int64_t         data[PL_MAX_RANK];    /* the data's dims */
  int64_t         numel;                /* the data's elements */
  /* ScatterND: tuples of m indices, each selecting a slice of `slice` elements */
  int             m;
  int64_t         tuples, slice;
  /* ScatterElements: the updates' dims and the axis */
  int64_t         upd[PL_MAX_RANK];
  int             axis;
} PlScatterDesc;

/* Fills d from a ScatterND, ScatterElements or Scatter node. false with
 * *why (g_free) when it cannot be generated (dynamic shapes, a layout). */
bool     pl_scatter_desc_from_node (const PlNode *node, PlScatterDesc *d, char **why);
/* "scatternd 4 slices of 128 into [8, 128], add" */
char    *pl_scatter_describe       (const PlScatterDesc *d);
/* Index check `id`'s (1-based) message, %I for the index:
 * "index %I of ScatterND 'y' (axis 0 of size 8) is out of range". */
char    *pl_scatter_check_message  (const PlScatterDesc *d, const PlNode *node, int64_t id);
/* Appends  void <name> (void *const *args)  (data, indices, updates, Y, status). */
void     pl_scatter_emit_c         (GString *out, const PlScatterDesc *d, const char *name);
/* Appends  <name>_copy (const T *x, T *y)  and  <name> (data, indices,
 * updates, Y, status, scratch): launch[1] copies, launch[0] scatters. */
void     pl_scatter_emit_cuda      (GString *out, const PlScatterDesc *d, const char *name, int n_sms,
                                    int *copy_block, int64_t *copy_grid, int *block, int64_t *grid);

G_END_DECLS
