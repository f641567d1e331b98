/* grad-private.h — what the parts of the grad pass share: grad.c (the
 * driver: parameters, which values need gradients, the reverse walk, the
 * update outputs, the report; and the node-building helpers below),
 * grad-rules.c (elementwise, data movement, reductions, softmax; the rule
 * table) and grad-rules-nn.c (normalization, convolution, pooling,
 * MatMul/Gemm, losses). Not part of the public API. */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

/* The state of one run of the pass. */
typedef struct {
  PlGraph    *g;
  GHashTable *grads;        /* PlValue* -> PlValue*: the accumulated gradient of a forward value */
  GHashTable *active;       /* PlValue* set: depends on a parameter, and the loss depends on it */
  GPtrArray  *added_nodes;  /* PlNode*: every node the pass made (removed again on failure) */
  GPtrArray  *added_values; /* PlValue*: every constant the pass made */
  GHashTable *added_set;    /* PlNode* set of added_nodes */
  GHashTable *scalars;      /* "dtype:value" -> PlValue*: shared scalar constants */
  GHashTable *name_next;    /* base name -> next suffix to try (keeps naming linear) */
  const PlNode *cur;        /* the forward node being differentiated (for messages) */
  const char *base;         /* name base of the nodes made now */
  int         n_recomputed; /* fusion-body nodes recomputed in the outer graph */
  GError     *error;        /* the first failure; every helper is a no-op once set */
} PlGrad;

/* A gradient rule: dy[o] is the gradient of output o (NULL: none reaches
 * it); need[i] says which inputs want one. It hands each to pl_grad_give
 * and returns false (with G->error set) on failure. */
typedef bool (*PlGradRule) (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need);

/* The rule for n's op, or NULL when there is none (grad-rules.c). */
PlGradRule pl_grad_rule                (const PlNode *n);
/* The same for the ops of grad-rules-nn.c and grad-rules-index.c. */
PlGradRule pl_grad_rule_nn             (const PlNode *n);
PlGradRule pl_grad_rule_index          (const PlNode *n);
/* A fusion node's rule (grad.c): its body is recomputed in the outer graph
 * and differentiated there. */
bool       pl_grad_rule_fusion         (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need);
/* Whether input slot i of n carries a gradient (data, not shapes, indices,
 * conditions or running statistics). */
bool       pl_grad_slot_differentiable (const PlNode *n, int i);

/* --- building (grad.c) ------------------------------------------------------
 * Every helper returns NULL once G->error is set (and takes NULL inputs
 * then), so a rule chains calls and checks the error once. New nodes and
 * constants are named after G->base and recorded for a rollback. */

void      pl_grad_fail          (PlGrad *G, PlErrorCode code, const char *fmt, ...) G_GNUC_PRINTF (3, 4);
/* Adds dx to x's gradient (with an Add when x already has one); checks
 * that dx has x's dtype and shape. */
void      pl_grad_give          (PlGrad *G, const PlValue *x, PlValue *dx);

/* A node of n_out outputs, not yet inferred: set attributes, then finish. */
PlNode   *pl_grad_node          (PlGrad *G, const char *op, int n_in, PlValue *const *in, int n_out);
/* Infers node; its first output. */
PlValue  *pl_grad_finish        (PlGrad *G, PlNode *node);
PlValue  *pl_grad_op            (PlGrad *G, const char *op, int n_in, PlValue *const *in);
PlValue  *pl_grad_tensor        (PlGrad *G, PlTensor *t);               /* a constant */
PlValue  *pl_grad_scalar        (PlGrad *G, PlDType dtype, double v);   /* shared */
PlValue  *pl_grad_ints          (PlGrad *G, const int64_t *v, int n);  /* 1-D i64 */
PlValue  *pl_grad_zero_of       (PlGrad *G, const PlValue *like);      /* scalar 0 of like's dtype */
PlValue  *pl_grad_mul_s         (PlGrad *G, PlValue *x, double s);     /* x * s */
PlValue  *pl_grad_rsub_s        (PlGrad *G, double s, PlValue *x);     /* s - x */
PlValue  *pl_grad_where         (PlGrad *G, PlValue *c, PlValue *a, PlValue *b);
PlValue  *pl_grad_cast_to       (PlGrad *G, PlValue *x, PlDType to);
PlValue  *pl_grad_transpose     (PlGrad *G, PlValue *x, const int64_t *perm, int n);
PlValue  *pl_grad_swap_last     (PlGrad *G, PlValue *x);   /* last two dims swapped */
PlValue  *pl_grad_swap_first    (PlGrad *G, PlValue *x);   /* first two dims swapped */
PlValue  *pl_grad_reduce_sum    (PlGrad *G, PlValue *x, const int64_t *axes, int n, bool keepdims);
PlValue  *pl_grad_unsqueeze     (PlGrad *G, PlValue *x, const int64_t *axes, int n);
PlValue  *pl_grad_slice         (PlGrad *G, PlValue *x, const int64_t *starts, const int64_t *ends,
                                 const int64_t *axes, int n);
/* v's shape as a value: a constant when static, else Shape(v). */
PlValue  *pl_grad_shape_of      (PlGrad *G, const PlValue *v);
PlValue  *pl_grad_reshape_like  (PlGrad *G, PlValue *x, const PlValue *like);
PlValue  *pl_grad_expand_like   (PlGrad *G, PlValue *x, const PlValue *like);
PlValue  *pl_grad_zeros_like    (PlGrad *G, const PlValue *like);
/* d (a broadcast result) summed back to x's shape: ReduceSum with keepdims
 * over the broadcast axes, then Reshape. */
PlValue  *pl_grad_unbroadcast   (PlGrad *G, PlValue *d, const PlValue *x);
/* numel(part) / numel(whole) as a scalar of dtype (a constant when static). */
PlValue  *pl_grad_count_ratio   (PlGrad *G, const PlValue *part, const PlValue *whole, PlDType dtype);
/* src's attributes set on dst (for a recomputed node), except `skip`. */
void      pl_grad_copy_attrs    (PlNode *dst, const PlNode *src, const char *skip);
/* Axis attribute `name` of n normalized for rank. */
bool      pl_grad_axis_of       (PlGrad *G, const PlNode *n, const char *name, int64_t def, int rank, int *out);
/* v's static dims; fails naming v when not static. */
bool      pl_grad_require_static (PlGrad *G, const PlValue *v, int64_t *dims);

static inline PlValue *
op1 (PlGrad *G, const char *op, PlValue *a)
{
  return pl_grad_op (G, op, 1, &a);
}

static inline PlValue *
op2 (PlGrad *G, const char *op, PlValue *a, PlValue *b)
{
  return pl_grad_op (G, op, 2, (PlValue *[]) { a, b });
}

static inline PlValue *
op3 (PlGrad *G, const char *op, PlValue *a, PlValue *b, PlValue *c)
{
  return pl_grad_op (G, op, 3, (PlValue *[]) { a, b, c });
}

G_END_DECLS
