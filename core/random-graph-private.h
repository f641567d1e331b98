/* random-graph-private.h — what the random graph generator's files share:
 * the generator state and the operand pool (see random-graph.c for the
 * design), the building blocks in random-graph-build.c, and the op and
 * idiom generators of random-graph-ops.c and random-graph-idioms.c that
 * pl_random_graph() draws from. Not installed; only the random-graph*.c
 * files include it. */
#pragma once

#include "random-graph.h"

G_BEGIN_DECLS

/* A value whose bound exceeds this is squashed before it is read again. */
#define BOUND_LIMIT 4.0

typedef struct {
  int     rank;
  int64_t d[PL_MAX_RANK];
} Dims;

typedef struct {
  PlValue *v;
  double   bound;   /* upper bound on |element| for inputs in [-1, 1) */
} Entry;

typedef struct {
  PlGraph             *g;
  GRand               *rand;
  PlRandomGraphOptions o;
  GArray              *pool;     /* Entry */
  int                  n_ops;    /* op nodes added */
  guint                counter;  /* makes names unique without searching */
} Gen;

/* A random int in lo..hi (inclusive). */
static inline int
pl_rg_rnd (Gen *G, int lo, int hi)
{
  return hi <= lo ? lo : g_rand_int_range (G->rand, lo, hi + 1);
}

/* True with probability p. */
static inline bool
pl_rg_chance (Gen *G, double p)
{
  return g_rand_double (G->rand) < p;
}

/* --- random-graph-build.c: dims ------------------------------------------------------ */

Dims     pl_rg_dims_of        (const PlValue *v);
int64_t  pl_rg_dims_numel     (const Dims *d);
/* Whether a shape is within the options' rank and size limits. */
bool     pl_rg_dims_fit       (Gen *G, const Dims *d);
/* A random permutation of 0..n-1. */
void     pl_rg_random_perm    (Gen *G, int64_t *v, int n);
void     pl_rg_dims_insert    (Dims *d, int i, int64_t size);
/* Dims i and i + 1 become one. */
void     pl_rg_dims_merge     (Dims *d, int i);
/* A random nonempty subset of 0..rank-1 in increasing order; returns its size. */
int      pl_rg_random_axes    (Gen *G, int rank, int64_t *axes);
/* Writes some axes in their negative form, as exporters do. */
void     pl_rg_maybe_negative (Gen *G, int64_t *axes, int n, int rank);
/* A divisor f with 1 < f < n, or 0. */
int64_t  pl_rg_some_divisor   (Gen *G, int64_t n);
/* Splits dim i of d into (f, d[i] / f); false if it has no proper divisor or no room. */
bool     pl_rg_split_dim      (Gen *G, Dims *d, int i);

/* --- random-graph-build.c: constants and nodes ------------------------------------------ */

/* A random f32 constant with values in [lo, hi), rounded to two decimals. */
PlValue *pl_rg_const_f32      (Gen *G, const Dims *d, double lo, double hi);
PlValue *pl_rg_const_scalar   (Gen *G, double v);
/* A 1-D i64 constant (shapes, axes, slice bounds). */
PlValue *pl_rg_const_ints     (Gen *G, const int64_t *v, int n);
/* An i64 constant of dims d (indices). */
PlValue *pl_rg_const_i64      (Gen *G, const Dims *d, const int64_t *v);

/* A node named after its op; set attributes on it, then call pl_rg_node_end. */
PlNode  *pl_rg_node_begin     (Gen *G, const char *op_type, int n_inputs, PlValue *const *inputs);
/* Infers node; keeps it (adding its output to the pool with bound) when its
 * output is static, nonempty and small enough, else takes it out and
 * returns NULL. node may be NULL. */
PlValue *pl_rg_node_end       (Gen *G, PlNode *node, double bound);
/* A one-input node with no attributes. */
PlValue *pl_rg_op1            (Gen *G, const char *op_type, PlValue *x, double bound);
PlValue *pl_rg_op2            (Gen *G, const char *op_type, PlValue *a, PlValue *b, double bound);
/* A one-input node with one integer attribute. */
PlValue *pl_rg_op1_int        (Gen *G, const char *op_type, PlValue *x, const char *attr, int64_t v,
                               double bound);
/* Reshape(x, dims) with the target written as given (it may hold -1 and 0). */
PlValue *pl_rg_reshape_to     (Gen *G, PlValue *x, const int64_t *target, int rank, double bound);
/* A reduction over axes (none: all); keepdims < 0 leaves the attribute out. */
PlValue *pl_rg_reduce_op      (Gen *G, const char *op_type, PlValue *x, const int64_t *axes, int n_axes,
                               int keepdims, double bound);
/* |x| + 1: a guarded operand for Log, Div and Reciprocal. */
PlValue *pl_rg_abs_plus_one   (Gen *G, PlValue *x, double bound);
/* Transpose with perm (rank entries), or without the attribute (reversed dims) when NULL. */
PlValue *pl_rg_transpose      (Gen *G, PlValue *x, const int64_t *perm, double bound);

/* --- random-graph-build.c: operands ---------------------------------------------------- */

/* An operand: with some chance a value nobody reads yet, else a recent one. */
Entry    pl_rg_pick           (Gen *G);
/* A pool value (squashed if needed) for which ok(candidate, data) holds, or
 * {NULL} after a few tries. */
Entry    pl_rg_find_partner   (Gen *G, bool (*ok) (Gen *G, const PlValue *v, gconstpointer data),
                               gconstpointer data);
/* An operand to combine with a value of shape a by broadcasting: another
 * pool value or a new constant. */
Entry    pl_rg_broadcast_partner (Gen *G, const PlShape *a);

/* --- random-graph-ops.c: one op (or a short chain) per call ------------------------------ */

bool     pl_rg_gen_unary      (Gen *G);
bool     pl_rg_gen_binary     (Gen *G);
bool     pl_rg_gen_shape      (Gen *G);
bool     pl_rg_gen_reduce     (Gen *G);
bool     pl_rg_gen_matmul     (Gen *G);
bool     pl_rg_gen_concat_slice (Gen *G);
/* Reshape(x) to dims with the same element count, the target sometimes
 * written with a -1 or a 0; the new dims go to *out_dims (may be NULL). */
PlValue *pl_rg_gen_reshape_of (Gen *G, Entry x, Dims *out_dims);

/* --- random-graph-index.c: Gather*, CumSum, TopK, Scatter*, Einsum ------------------------ */

bool     pl_rg_gen_index      (Gen *G);

/* --- random-graph-idioms.c ---------------------------------------------------------------- */

/* One multi-node idiom the passes look for. */
bool     pl_rg_gen_idiom      (Gen *G);

G_END_DECLS
