/* layout.h — the physical data layout of a tensor (seed 003, MACO; DESIGN.md §1.4).
 *
 * A value's shape is always its *logical* shape in ONNX order (N, C, H, W for
 * a 4-d activation) and every op's semantics, the reference interpreter and
 * the text format speak logical coordinates. The layout says only how the
 * elements are ordered in memory when a generated kernel stores the value:
 *
 *   NCHW  the default, row-major in logical order (every rank)
 *   NHWC  channels innermost ("channels last")
 *   CHWN  batch innermost (what cuda-convnet used; good for large batches)
 *
 * Non-default layouts apply to rank-4 values only. Graph inputs, outputs and
 * constants are always default: layouts live inside a graph, between the
 * LayoutTransform nodes that the `layout` pass inserts. The reference
 * interpreter therefore ignores layouts (a LayoutTransform is an identity
 * there) and the runtime honours them (a LayoutTransform is a transpose).
 */
#pragma once

#include "passlab-types.h"

G_BEGIN_DECLS

typedef enum {
  PL_LAYOUT_NCHW = 0,   /* default: logical row-major order */
  PL_LAYOUT_NHWC,
  PL_LAYOUT_CHWN,
  PL_LAYOUT_COUNT
} PlLayout;

/* "NCHW", "NHWC", "CHWN" */
const char *pl_layout_name   (PlLayout layout);
/* Case-sensitive inverse of pl_layout_name; false for anything else. */
bool        pl_layout_parse  (const char *name, PlLayout *layout);
/* Whether a value of this rank may carry the layout (NCHW: any rank; others: 4). */
bool        pl_layout_valid_for_rank (PlLayout layout, int rank);
/* perm[i] = the logical dim stored i-th, outermost first ({0,2,3,1} for NHWC).
 * For the default layout and any rank: the identity. rank must be valid. */
void        pl_layout_perm   (PlLayout layout, int rank, int *perm);
/* Element strides of each *logical* dim of a tensor of logical dims[rank]
 * stored in this layout (NHWC [1,64,56,56] -> {200704, 1, 3584, 64}). */
void        pl_layout_strides (PlLayout layout, int rank, const int64_t *dims, int64_t *strides);
/* Whether value v may carry `layout`, with a PL_ERROR_INVALID naming v when
 * not: non-default layouts need rank 4 and a value computed inside the
 * graph (not a constant; not a graph input or output, unless `in_body`: a
 * fusion body's inputs and outputs mirror the fusion node's values and carry
 * their layouts); a LayoutTransform's output has the layout of its `to`.
 * The verifier, the text and ONNX readers and Lua's g:set_layout share it. */
bool        pl_layout_check_value (PlLayout layout, const PlValue *v, bool in_body, GError **error);

G_END_DECLS
