/* ops-nn-private.h — what ops-nn.c (MatMul, Gemm, Einsum, losses) and
 * ops-conv.c (convolutions, pooling) share: the conv/pool register function
 * and the double-precision load/store helpers of the reference kernels;
 * ops-quant.c and ops-vision.c build on them. Not part of the public API. */
#pragma once

#include "ops-util.h"

G_BEGIN_DECLS

/* ops-conv.c: Conv, ConvTranspose, MaxPool, AveragePool, LpPool and the
 * global pools; called from pl_ops_register_nn(). */
void    pl_ops_register_conv (void);

/* The ops built on MatMul and Conv (ops-quant.c): numpy matmul's output
 * shape, and MatMul's reference on two tensors into a new *y of a's dtype;
 * Conv's output shape (no bias) and its reference with node's attributes
 * (x, w and the optional bias b of one float dtype) into a new *y. */
bool    pl_nn_matmul_shape    (const PlShape *a, const PlShape *b, PlShape *out, GError **error);
bool    pl_nn_matmul_eval_f64 (const PlTensor *a, const PlTensor *b, PlTensor **y, GError **error);
bool    pl_conv_shape         (const PlNode *node, const PlShape *x, const PlShape *w, PlShape *out, GError **error);
bool    pl_conv_eval_f64      (const PlNode *node, const PlTensor *x, const PlTensor *w, const PlTensor *b,
                               PlTensor **y, GError **error);

/* MaxUnpool (ops-vision.c): the shape a MaxPool with node's kernel_shape,
 * strides and pads maps back to from x [N, C, spatial...]: (in - 1) *
 * stride - pads + kernel per spatial dim; unknown where x's rank is. */
bool    pl_unpool_shape       (const PlNode *node, const PlShape *x, PlShape *out, GError **error);

/* A g_malloc'd copy of t's elements as doubles (at least one slot). */
double *pl_nn_load_f64       (const PlTensor *t);
/* Stores v[0..t->numel) into t, converting to t's dtype. */
void    pl_nn_store_f64      (PlTensor *t, const double *v);
/* An error naming two shapes: "<what>: [2, 3] and [4, 5]". Returns false. */
bool    pl_nn_shape_error    (GError **error, const PlShape *a, const PlShape *b,
                              const char *format, ...) G_GNUC_PRINTF (4, 5);

G_END_DECLS
