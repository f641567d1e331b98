/* rewrite.h — small building blocks that passes share: adding constants and
 * single-output ops with inferred types, reading constants, copying
 * attributes, what a reduction reduces, and dead-code elimination.
 * Everything goes through the graph.h API, so the verifier's invariants
 * hold. */
#pragma once

#include "graph.h"
#include "pass.h"

G_BEGIN_DECLS

/* A new 1-D i64 constant named after base (made unique). */
PlValue *pl_rw_const_ints    (PlGraph *g, const char *base, const int64_t *v, int n);
/* A new scalar constant of dtype (rank 0). */
PlValue *pl_rw_const_scalar  (PlGraph *g, const char *base, PlDType dtype, double v);
/* Adds a single-output node named after base (made unique; its output gets
 * the same name) and infers its type. NULL with an error when inference fails
 * (the node is then removed again, leaving g unchanged). */
PlNode  *pl_rw_add_op        (PlGraph *g, const char *op_type, const char *base,
                              int n_inputs, PlValue *const *inputs, GError **error);
/* The constant data of v (a constant value, or the output of a Constant node). */
PlTensor *pl_rw_constant     (const PlValue *v);
/* v's data as integers, if constant (g_free *out). */
bool     pl_rw_const_ints_of (const PlValue *v, int64_t **out, int *n);
/* True if v is constant and every element equals x. */
bool     pl_rw_const_all_equal (const PlValue *v, double x);
/* Inputs 1.. are absent or constant (a view op's shape or axes). */
bool     pl_rw_operands_constant (const PlNode *node);
/* Known to be the same shape: known rank, every dim the same static size or
 * the same symbol (unknown dims are never known to be equal). */
bool     pl_rw_same_shape    (const PlShape *a, const PlShape *b);
/* The dims a reduction reduces, as a bit mask over its input's rank (bit d:
 * dim d). Reduce* take their axes from the constant input 1, else the `axes`
 * attribute (none: every dim); ArgMax and ArgMin their `axis`; Softmax,
 * LogSoftmax and Hardmax their `axis` (before opset 13: every dim from it
 * on, as they flatten to 2-D there); LayerNormalization every dim from its
 * `axis`. False for other ops and when it is not known statically: unknown
 * rank, axes that are not constant, an axis out of range, empty axes with
 * noop_with_empty_axes. */
bool     pl_rw_reduction_axes (const PlNode *node, guint32 *mask);
/* Copies every attribute of src onto dst, replacing those of the same name. */
void     pl_rw_copy_attrs    (PlNode *dst, const PlNode *src);
/* The single node reading v, if it has exactly one use and is not a graph output. */
PlNode  *pl_rw_sole_user     (const PlValue *v);
/* Removes every node none of whose outputs is read or is a graph output,
 * transitively, and constants nobody reads. Returns the nodes removed. */
int      pl_rw_dce           (PlGraph *g);

G_END_DECLS
