/* ops-reduce-private.h — what ops-reduce.c (Reduce*, ArgMax/ArgMin, CumSum,
 * TopK) and ops-norm.c (the softmax family and the normalizations) share:
 * the register function of ops-norm.c and the tensor views of the
 * reference kernels. Implemented in ops-reduce.c. Not part of the public API. */
#pragma once

#include "ops-util.h"

G_BEGIN_DECLS

/* ops-norm.c: Softmax, LogSoftmax, Hardmax, LayerNormalization,
 * InstanceNormalization, MeanVarianceNormalization, LpNormalization and LRN;
 * called from pl_ops_register_reduce(). */
void pl_ops_register_norm          (void);

/* Output 0 gets input 0's dtype and shape: ops that keep their input's shape. */
void pl_reduce_infer_same_as_input (PlNode *node);
/* Views t as [outer, n, inner] around axis. */
void pl_reduce_split_at_axis       (const PlTensor *t, int axis, int64_t *outer, int64_t *n, int64_t *inner);
/* Marks the axes listed in axes[n_axes] in mask[rank]; fails on an axis out
 * of range or listed twice. */
bool pl_reduce_axes_to_mask        (const int64_t *axes, int n_axes, int rank, bool *mask, GError **error);
/* Strides mapping each element of x to the element of its reduction over
 * the masked axes that it falls into (row-major over the kept dims). */
void pl_reduce_strides             (const PlTensor *x, const bool *mask, int64_t *strides);

G_END_DECLS
