/* random-graph-idioms.c — the multi-node idioms a random graph carries so
 * that the passes find something to rewrite: group statistics through
 * reshapes (seed 000's patterns A and B), linear + bias + activation,
 * layer norm and softmax written out, and identities a simplifier removes.
 */
#define G_LOG_DOMAIN "passlab"

#include "random-graph-private.h"

#include <math.h>

/* --- idioms ------------------------------------------------------------------------------ */

/* x reshaped with one of its dims split in two (as group norm splits
 * channels into groups) or two adjacent dims merged; NULL if neither fits. */
static PlValue *
regroup_reshape (Gen *G, Entry x, Dims *out)
{
  Dims d = pl_rg_dims_of (x.v);
  int split[PL_MAX_RANK], n_split = 0, merge[PL_MAX_RANK], n_merge = 0;
  for (int i = 0; i < d.rank; i++)
    {
      if (d.rank < G->o.max_rank && pl_rg_some_divisor (G, d.d[i]))
        split[n_split++] = i;
      if (i + 1 < d.rank && d.d[i] > 1 && d.d[i + 1] > 1)
        merge[n_merge++] = i;
    }
  if (n_split + n_merge == 0)
    return NULL;
  *out = d;
  int k = pl_rg_rnd (G, 0, n_split + n_merge - 1);
  if (k < n_split)
    pl_rg_split_dim (G, out, split[k]);
  else
    pl_rg_dims_merge (out, merge[k - n_split]);
  return pl_rg_reshape_to (G, x.v, out->d, out->rank, x.bound);
}

/* reduce(reshape(x)): the group statistics of seed 000's pattern A. */
static bool
idiom_reduce_reshape (Gen *G, Entry x)
{
  Dims s;
  PlValue *r = regroup_reshape (G, x, &s);
  if (!r)
    return false;
  int64_t axes[PL_MAX_RANK];
  int n = pl_rg_random_axes (G, s.rank, axes);
  double count = 1;
  for (int i = 0; i < n; i++)
    count *= s.d[axes[i]];
  static const char *const ops[] = { "ReduceMean", "ReduceSum", "ReduceMax" };
  int k = pl_rg_rnd (G, 0, 2);
  return pl_rg_reduce_op (G, ops[k], r, axes, n, pl_rg_chance (G, 0.5) ? 0 : 1,
                          k == 1 ? x.bound * count : x.bound);
}

/* reshape(f(reshape(x), broadcast(y))) with the outer reshape restoring x's
 * shape: seed 000's pattern B (group norm's normalization). */
static bool
idiom_reshape_broadcast (Gen *G, Entry x)
{
  Dims s;
  PlValue *r = regroup_reshape (G, x, &s);
  if (!r)
    return false;
  PlValue *y;
  double yb = x.bound;
  int64_t axes[PL_MAX_RANK];
  int n = pl_rg_random_axes (G, s.rank, axes);
  Dims kept = s;   /* the statistics' shape with keepdims */
  for (int i = 0; i < n; i++)
    kept.d[axes[i]] = 1;
  switch (pl_rg_rnd (G, 0, 2))
    {
    case 0:
      y = pl_rg_reduce_op (G, "ReduceMean", r, axes, n, 1, x.bound);
      break;
    case 1:
      {
        /* keepdims=0, then a reshape back to the kept shape, as group_norm.graph does */
        PlValue *m = pl_rg_reduce_op (G, "ReduceMean", r, axes, n, 0, x.bound);
        y = m ? pl_rg_reshape_to (G, m, kept.d, kept.rank, x.bound) : NULL;
        break;
      }
    default:
      y = pl_rg_const_f32 (G, &kept, 0.5, 1.5);
      yb = 1.5;
      break;
    }
  if (!y)
    return false;
  if (pl_rg_chance (G, 0.5))
    y = pl_rg_op2 (G, "Expand", y, pl_rg_const_ints (G, s.d, s.rank), yb);
  if (!y)
    return false;
  static const char *const ops[] = { "Sub", "Mul", "Add", "Div" };
  int k = pl_rg_rnd (G, 0, 3);
  PlValue *f;
  if (k == 3)
    {
      PlValue *den = pl_rg_abs_plus_one (G, y, yb);
      f = den ? pl_rg_op2 (G, "Div", r, den, x.bound) : NULL;
    }
  else
    f = pl_rg_chance (G, 0.8) ? pl_rg_op2 (G, ops[k], r, y, k == 1 ? x.bound * yb : x.bound + yb)
                         : pl_rg_op2 (G, ops[k], y, r, k == 1 ? x.bound * yb : x.bound + yb);
  if (!f)
    return false;
  Dims xd = pl_rg_dims_of (x.v);
  return pl_rg_reshape_to (G, f, xd.d, xd.rank, x.bound + yb) != NULL;
}

/* MatMul + bias + activation, sometimes with a transposed operand: what
 * library fusion turns into one GEMM call with an epilogue. */
static bool
idiom_linear (Gen *G, Entry x)
{
  Dims d = pl_rg_dims_of (x.v);
  if (d.rank < 1)
    return false;
  PlValue *a = x.v;
  if (d.rank == 2 && pl_rg_chance (G, 0.3))
    {
      if (!(a = pl_rg_transpose (G, a, (int64_t[]) { 1, 0 }, x.bound)))
        return false;
      d = pl_rg_dims_of (a);
    }
  int64_t K = d.d[d.rank - 1], N = pl_rg_rnd (G, 1, G->o.max_dim);
  /* sometimes a transposed constant [N, K]: dot(A, transpose(B)) */
  PlValue *w = pl_rg_chance (G, 0.3)
               ? pl_rg_transpose (G, pl_rg_const_f32 (G, &(Dims) { 2, { N, K } }, -1, 1), NULL, 1)
               : pl_rg_const_f32 (G, &(Dims) { 2, { K, N } }, -1, 1);
  PlValue *m = w ? pl_rg_op2 (G, "MatMul", a, w, x.bound * K) : NULL;
  PlValue *b = m ? pl_rg_op2 (G, "Add", m, pl_rg_const_f32 (G, &(Dims) { 1, { N } }, -0.5, 0.5), x.bound * K + 0.5)
                 : NULL;
  if (!b)
    return false;
  static const char *const acts[] = { "Relu", "Gelu", "Tanh", "Sigmoid" };
  int k = pl_rg_rnd (G, 0, 4);
  return k == 4 || pl_rg_op1 (G, acts[k], b, x.bound * K + 0.5);
}

/* Layer norm over the last axis in primitive ops (layer_norm.graph). */
static bool
idiom_layer_norm (Gen *G, Entry x)
{
  Dims d = pl_rg_dims_of (x.v);
  if (d.rank < 1)
    return false;
  int64_t last = -1, n = d.d[d.rank - 1];
  double b = x.bound;
  PlValue *mean = pl_rg_reduce_op (G, "ReduceMean", x.v, &last, 1, 1, b);
  PlValue *dv = mean ? pl_rg_op2 (G, "Sub", x.v, mean, 2 * b) : NULL;
  PlValue *d2 = !dv ? NULL
                : pl_rg_chance (G, 0.5) ? pl_rg_op2 (G, "Mul", dv, dv, 4 * b * b)
                                        : pl_rg_op2 (G, "Pow", dv, pl_rg_const_scalar (G, 2.0), 4 * b * b);
  PlValue *var = d2 ? pl_rg_reduce_op (G, "ReduceMean", d2, &last, 1, 1, 4 * b * b) : NULL;
  PlValue *ve = var ? pl_rg_op2 (G, "Add", var, pl_rg_const_scalar (G, 1e-3), 4 * b * b + 1) : NULL;
  PlValue *sd = ve ? pl_rg_op1 (G, "Sqrt", ve, 2 * b + 1) : NULL;
  double nb = sqrt ((double) n);
  PlValue *nm = sd ? pl_rg_op2 (G, "Div", dv, sd, nb) : NULL;
  PlValue *sc = nm ? pl_rg_op2 (G, "Mul", nm, pl_rg_const_f32 (G, &(Dims) { 1, { n } }, 0.5, 1.5), 1.5 * nb)
                   : NULL;
  return sc && pl_rg_op2 (G, "Add", sc, pl_rg_const_f32 (G, &(Dims) { 1, { n } }, -0.5, 0.5), 1.5 * nb + 0.5);
}

/* Softmax written out: exp(x - max) / sum. */
static bool
idiom_softmax (Gen *G, Entry x)
{
  int r = x.v->shape.rank;
  if (r < 1)
    return false;
  int64_t axis = pl_rg_rnd (G, -r, r - 1);
  PlValue *m = pl_rg_reduce_op (G, "ReduceMax", x.v, &axis, 1, 1, x.bound);
  PlValue *s = m ? pl_rg_op2 (G, "Sub", x.v, m, 2 * x.bound) : NULL;
  PlValue *e = s ? pl_rg_op1 (G, "Exp", s, 1) : NULL;
  PlValue *z = e ? pl_rg_reduce_op (G, "ReduceSum", e, &axis, 1, 1, G->o.max_numel) : NULL;
  return z && pl_rg_op2 (G, "Div", e, z, 1);
}

/* Things a simplifier removes: x*1, x+0, x/1, transpose then its inverse,
 * reshape then reshape back, Identity. */
static bool
idiom_identity (Gen *G, Entry x)
{
  switch (pl_rg_rnd (G, 0, 4))
    {
    case 0: return pl_rg_op2 (G, "Mul", x.v, pl_rg_const_scalar (G, 1.0), x.bound);
    case 1:
      return pl_rg_op2 (G, pl_rg_chance (G, 0.5) ? "Add" : "Sub", x.v, pl_rg_const_scalar (G, 0.0), x.bound);
    case 2: return pl_rg_op2 (G, "Div", x.v, pl_rg_const_scalar (G, 1.0), x.bound);
    case 3:
      {
        int r = x.v->shape.rank;
        if (r < 2)
          return pl_rg_op1 (G, "Identity", x.v, x.bound);
        int64_t perm[PL_MAX_RANK], inv[PL_MAX_RANK];
        pl_rg_random_perm (G, perm, r);
        for (int i = 0; i < r; i++)
          inv[perm[i]] = i;
        PlValue *y = pl_rg_transpose (G, x.v, perm, x.bound);
        return y && pl_rg_transpose (G, y, inv, x.bound);
      }
    default:
      {
        Dims d = pl_rg_dims_of (x.v);
        PlValue *y = pl_rg_gen_reshape_of (G, x, NULL);
        return y && pl_rg_reshape_to (G, y, d.d, d.rank, x.bound);
      }
    }
}

bool
pl_rg_gen_idiom (Gen *G)
{
  Entry x = pl_rg_pick (G);
  switch (pl_rg_rnd (G, 0, 9))
    {
    case 0: case 1: return idiom_reduce_reshape (G, x);
    case 2: case 3: case 4: return idiom_reshape_broadcast (G, x);
    case 5: case 6: return idiom_linear (G, x);
    case 7: return idiom_layer_norm (G, x);
    case 8: return idiom_softmax (G, x);
    default: return idiom_identity (G, x);
    }
}
