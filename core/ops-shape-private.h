/* ops-shape-private.h — what the shape-family op files share: ops-shape.c
 * (which defines these helpers and registers the others), ops-slice.c,
 * ops-index.c and ops-resize.c; ops-vision.c borrows the cubic weights.
 * Not part of the public API. */
#pragma once

#include "ops-util.h"

G_BEGIN_DECLS

/* The default-domain opset the node's graph was written for (0 means 17). */
static inline int
pl_node_opset (const PlNode *node)
{
  int v = node->graph != NULL ? node->graph->opset : 0;
  return v > 0 ? v : 17;
}

/* Registered by pl_ops_register_shape. */
void pl_ops_register_slice  (void);  /* ops-slice.c */
void pl_ops_register_index  (void);  /* ops-index.c */
void pl_ops_register_resize (void);  /* ops-resize.c */

/* Fails (PL_ERROR_SHAPE) when an output rank exceeds PL_MAX_RANK. */
bool    pl_check_out_rank     (int rank, GError **error);
/* A shape of the given rank with unknown dims; unknown rank when rank < 0. */
PlShape pl_rank_shape         (int rank);
/* The length of a 1-D input whose dim is static (a shape or axes input
 * whose values are not known), else -1. */
int     pl_input_length       (const PlNode *node, int i);
/* An int list that opsets before `since` give as attribute `name` and later
 * ones as input `input` (the attribute is still read when the input is
 * absent). Returns 1 with *v g_malloc'd, 0 when absent, -1 when it is an
 * input whose values are not known. inputs: NULL at inference (constants
 * only), the run-time tensors at evaluation. */
int     pl_ints_attr_or_input (const PlNode *node, PlTensor *const *inputs, const char *name,
                               int input, int since, int64_t **v, int *n);
/* Normalizes axes against rank into flags[PL_MAX_RANK]; repeats fail. */
bool    pl_axes_to_flags      (const int64_t *axes, int n, int rank, bool *flags, GError **error);

/* Most dims a strided view may have (Tile views [r, d] pairs). */
#define PL_VIEW_MAX_RANK (2 * PL_MAX_RANK)

/* dst[i] = src[offset + Σ idx[k] * strides[k]] over the dense row-major
 * iteration space dims (rank <= PL_VIEW_MAX_RANK), elements of esize bytes. */
void pl_strided_copy (void *dst, const void *src, size_t esize, int rank, const int64_t *dims,
                      const int64_t *strides, int64_t offset);

/* Fills dst (a dense tensor of src's dtype) from src through one index map
 * per axis: maps[k][o] is the source index along axis k for output
 * coordinate o, or -1 for "outside", where the element becomes the fill
 * element (zeros when NULL). Serves Pad and nearest Resize. */
void pl_gather_axis_maps (PlTensor *dst, const PlTensor *src,
                          int64_t *const *maps, const void *fill);

/* Keys' cubic convolution weights (coefficient a) of the 4 neighbours
 * at -1, 0, 1, 2 around a point at `ratio` (0 to 1) past neighbour 0.
 * Serves cubic Resize and bicubic GridSample (ops-vision.c). */
void pl_cubic_weights (double ratio, double a, double *w);

/* Writes v's first element (dflt when v is NULL or empty) converted to
 * dtype into buf (8 bytes); integers go through int64 so they stay exact. */
void pl_scalar_bytes (PlDType dtype, const PlTensor *v, double dflt, void *buf);

/* At run time, a shape error caused by data is an execution error: turns a
 * PL_ERROR_SHAPE in *error into PL_ERROR_EXEC. Always returns false. */
bool pl_exec_error (GError **error);

G_END_DECLS
