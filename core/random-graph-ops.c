/* random-graph-ops.c — the random graph generator's single ops: unary
 * and broadcasting binary elementwise ops, shape ops, reductions (with
 * softmax and layer norm), MatMul and Gemm, Concat and Slice. Each
 * pl_rg_gen_* adds one op (or a short guarded chain) on operands from the
 * pool, keeping the bounds explained in random-graph.c.
 */
#define G_LOG_DOMAIN "passlab"

#include "random-graph-private.h"

#include <math.h>
#include <string.h>

/* --- elementwise ----------------------------------------------------------------- */

bool
pl_rg_gen_unary (Gen *G)
{
  /* Ops that keep the input's bound, or bound their output by 1. */
  static const struct {
    const char *op;
    bool        keep;
  } simple[] = {
    { "Abs", true }, { "Neg", true }, { "Relu", true }, { "Relu", true }, { "Gelu", true },
    { "Identity", true }, { "Elu", true }, { "HardSwish", true }, { "Mish", true },
    { "Sigmoid", false }, { "Erf", false }, { "Softsign", false }, { "HardSigmoid", false },
    { "Sin", false }, { "Cos", false },
  };
  Entry x = pl_rg_pick (G);
  double b = x.bound;
  int k = pl_rg_rnd (G, 0, G_N_ELEMENTS (simple) + 7);
  if (k < (int) G_N_ELEMENTS (simple))
    return pl_rg_op1 (G, simple[k].op, x.v, simple[k].keep ? b : 1);
  PlValue *a;
  switch (k - G_N_ELEMENTS (simple))
    {
    case 0: return pl_rg_op1 (G, "Tanh", x.v, MIN (b, 1));
    case 1: return b <= 2 ? pl_rg_op1 (G, "Exp", x.v, exp (b)) : pl_rg_op1 (G, "Tanh", x.v, 1);
    case 2: return pl_rg_op1 (G, "Softplus", x.v, b + 1);
    case 3:
      {
        PlNode *n = pl_rg_node_begin (G, "LeakyRelu", 1, &x.v);
        if (n)
          pl_node_set_attr_float (n, "alpha", 0.1f);
        return pl_rg_node_end (G, n, b);
      }
    case 4:
      return pl_rg_node_end (G, pl_rg_node_begin (G, "Clip", 3, (PlValue *[]) { x.v, pl_rg_const_scalar (G, -0.5),
                                                                                pl_rg_const_scalar (G, 0.5) }),
                             0.5);
    case 5:
      /* sqrt(x*x + 1) */
      a = pl_rg_op2 (G, "Mul", x.v, x.v, b * b);
      a = a ? pl_rg_op2 (G, "Add", a, pl_rg_const_scalar (G, 1.0), b * b + 1) : NULL;
      return a && pl_rg_op1 (G, "Sqrt", a, sqrt (b * b + 1));
    case 6:
      a = pl_rg_abs_plus_one (G, x.v, b);
      return a && pl_rg_op1 (G, "Log", a, log (b + 1));
    default:
      a = pl_rg_abs_plus_one (G, x.v, b);
      return a && pl_rg_op1 (G, "Reciprocal", a, 1);
    }
}

bool
pl_rg_gen_binary (Gen *G)
{
  Entry a = pl_rg_pick (G);
  Entry c = pl_rg_broadcast_partner (G, &a.v->shape);
  if (pl_rg_chance (G, 0.3))
    {
      Entry t = a;
      a = c;
      c = t;
    }
  double ba = a.bound, bc = c.bound;
  switch (pl_rg_rnd (G, 0, 10))
    {
    case 0: case 1: return pl_rg_op2 (G, "Add", a.v, c.v, ba + bc);
    case 2: return pl_rg_op2 (G, "Sub", a.v, c.v, ba + bc);
    case 3: case 4: return pl_rg_op2 (G, "Mul", a.v, c.v, ba * bc);
    case 5: return pl_rg_op2 (G, "Max", a.v, c.v, MAX (ba, bc));
    case 6: return pl_rg_op2 (G, "Min", a.v, c.v, MAX (ba, bc));
    case 7:
      {
        PlValue *d = pl_rg_abs_plus_one (G, c.v, bc);
        return d && pl_rg_op2 (G, "Div", a.v, d, ba);
      }
    case 8: return pl_rg_op2 (G, "Pow", a.v, pl_rg_const_scalar (G, 2.0), ba * ba);
    case 9:
      {
        /* Where(a > c, a, c) is max(a, c): a select that stays continuous. */
        PlValue *cond = pl_rg_op2 (G, "Greater", a.v, c.v, 1);
        return cond && pl_rg_node_end (G, pl_rg_node_begin (G, "Where", 3, (PlValue *[]) { cond, a.v, c.v }),
                                       MAX (ba, bc));
      }
    default:
      {
        PlShape ac;
        if (!pl_shape_broadcast (&a.v->shape, &c.v->shape, &ac, NULL))
          return false;
        Entry e = pl_rg_broadcast_partner (G, &ac);
        bool mean = pl_rg_chance (G, 0.5);
        PlValue *s = pl_rg_node_end (G, pl_rg_node_begin (G, mean ? "Mean" : "Sum", 3,
                                                          (PlValue *[]) { a.v, c.v, e.v }),
                                     mean ? MAX (MAX (ba, bc), e.bound) : ba + bc + e.bound);
        return s != NULL;
      }
    }
}

/* --- shapes ------------------------------------------------------------------------ */

/* Dims with the same element count as in: adjacent dims merged, dims split,
 * 1s inserted or removed, or everything flattened. */
static Dims
reshape_dims (Gen *G, const Dims *in)
{
  Dims d = *in;
  int edits = pl_rg_rnd (G, 1, 2);
  for (int e = 0; e < edits; e++)
    switch (pl_rg_rnd (G, 0, 5))
      {
      case 0: case 1:
        if (d.rank >= 2)
          pl_rg_dims_merge (&d, pl_rg_rnd (G, 0, d.rank - 2));
        break;
      case 2: case 3:
        if (d.rank > 0)
          pl_rg_split_dim (G, &d, pl_rg_rnd (G, 0, d.rank - 1));
        break;
      case 4:
        if (d.rank < G->o.max_rank)
          pl_rg_dims_insert (&d, pl_rg_rnd (G, 0, d.rank), 1);
        else
          for (int i = 0; i < d.rank && d.rank > 1; i++)
            if (d.d[i] == 1)
              {
                pl_rg_dims_merge (&d, i == d.rank - 1 ? i - 1 : i);   /* drops the 1 */
                break;
              }
        break;
      default:
        d.d[0] = pl_rg_dims_numel (&d);
        d.rank = 1;
        break;
      }
  if (d.rank == 0)
    d.d[d.rank++] = 1;
  return d;
}

/* Reshape(x) to reshape_dims, the target sometimes written with a -1 or a 0. */
PlValue *
pl_rg_gen_reshape_of (Gen *G, Entry x, Dims *out_dims)
{
  Dims in = pl_rg_dims_of (x.v);
  Dims out = reshape_dims (G, &in);
  if (out_dims)
    *out_dims = out;
  int64_t target[PL_MAX_RANK];
  memcpy (target, out.d, sizeof target);
  if (pl_rg_chance (G, 0.2))
    target[pl_rg_rnd (G, 0, out.rank - 1)] = -1;
  else if (pl_rg_chance (G, 0.15))
    for (int i = 0; i < MIN (in.rank, out.rank); i++)
      if (in.d[i] == out.d[i])
        {
          target[i] = 0;
          break;
        }
  return pl_rg_reshape_to (G, x.v, target, out.rank, x.bound);
}

static bool
gen_transpose (Gen *G, Entry x)
{
  int64_t perm[PL_MAX_RANK];
  pl_rg_random_perm (G, perm, x.v->shape.rank);
  return x.v->shape.rank >= 2 && pl_rg_transpose (G, x.v, pl_rg_chance (G, 0.85) ? perm : NULL, x.bound);
}

static bool
gen_unsqueeze (Gen *G, Entry x)
{
  int r = x.v->shape.rank;
  if (r >= G->o.max_rank)
    return false;
  int n_new = r + 2 <= G->o.max_rank && pl_rg_chance (G, 0.3) ? 2 : 1;
  int64_t axes[PL_MAX_RANK];   /* the first n_new of a permutation of the output's axes */
  pl_rg_random_perm (G, axes, r + n_new);
  pl_rg_maybe_negative (G, axes, n_new, r + n_new);
  return pl_rg_op2 (G, "Unsqueeze", x.v, pl_rg_const_ints (G, axes, n_new), x.bound);
}

static bool
gen_squeeze (Gen *G, Entry x)
{
  Dims d = pl_rg_dims_of (x.v);
  int64_t ones[PL_MAX_RANK];
  int n = 0;
  for (int i = 0; i < d.rank; i++)
    if (d.d[i] == 1)
      ones[n++] = i;
  if (n == 0 || n == d.rank)   /* keep rank >= 1: many ops need it */
    return false;
  if (pl_rg_chance (G, 0.3))
    return pl_rg_op1 (G, "Squeeze", x.v, x.bound);
  int64_t axes[PL_MAX_RANK];
  int k = 0;
  for (int i = 0; i < n; i++)
    if (k == 0 || pl_rg_chance (G, 0.5))
      axes[k++] = ones[i];
  pl_rg_maybe_negative (G, axes, k, d.rank);
  return pl_rg_op2 (G, "Squeeze", x.v, pl_rg_const_ints (G, axes, k), x.bound);
}

static bool
gen_expand (Gen *G, Entry x)
{
  Dims d = pl_rg_dims_of (x.v);
  Dims t = d;
  for (int i = 0; i < t.rank; i++)
    if (t.d[i] == 1 && pl_rg_chance (G, 0.6))
      t.d[i] = pl_rg_rnd (G, 2, MAX (G->o.max_dim, 2));
    else if (pl_rg_chance (G, 0.15))
      t.d[i] = 1;   /* broadcasting keeps x's dim */
  if (t.rank < G->o.max_rank && pl_rg_chance (G, 0.3))
    pl_rg_dims_insert (&t, 0, pl_rg_rnd (G, 1, G->o.max_dim));
  return pl_rg_op2 (G, "Expand", x.v, pl_rg_const_ints (G, t.d, t.rank), x.bound);
}

bool
pl_rg_gen_shape (Gen *G)
{
  Entry x = pl_rg_pick (G);
  switch (pl_rg_rnd (G, 0, 9))
    {
    case 0: case 1: case 2: return pl_rg_gen_reshape_of (G, x, NULL) != NULL;
    case 3: case 4: return gen_transpose (G, x);
    case 5: return gen_unsqueeze (G, x);
    case 6: return gen_squeeze (G, x);
    case 7:
      return x.v->shape.rank >= 1
             && pl_rg_op1_int (G, "Flatten", x.v, "axis", pl_rg_rnd (G, -x.v->shape.rank, x.v->shape.rank),
                               x.bound);
    default: return gen_expand (G, x);
    }
}

/* --- reductions -------------------------------------------------------------------- */

static bool
gen_reduction (Gen *G, Entry x)
{
  Dims d = pl_rg_dims_of (x.v);
  int64_t axes[PL_MAX_RANK];
  int n = pl_rg_chance (G, 0.1) ? 0 : pl_rg_random_axes (G, d.rank, axes);
  double count = 1;
  for (int i = 0; i < (n ? n : d.rank); i++)
    count *= d.d[n ? axes[i] : i];
  pl_rg_maybe_negative (G, axes, n, d.rank);
  int keepdims = pl_rg_chance (G, 0.4) ? 0 : pl_rg_chance (G, 0.5) ? 1 : -1;
  double b = x.bound;
  switch (pl_rg_rnd (G, 0, 9))
    {
    case 0: case 1: return pl_rg_reduce_op (G, "ReduceSum", x.v, axes, n, keepdims, b * count);
    case 2: case 3: return pl_rg_reduce_op (G, "ReduceMean", x.v, axes, n, keepdims, b);
    case 4: return pl_rg_reduce_op (G, "ReduceMax", x.v, axes, n, keepdims, b);
    case 5: return pl_rg_reduce_op (G, "ReduceMin", x.v, axes, n, keepdims, b);
    case 6: return pl_rg_reduce_op (G, "ReduceL2", x.v, axes, n, keepdims, b * sqrt (count));
    case 7: return pl_rg_reduce_op (G, "ReduceSumSquare", x.v, axes, n, keepdims, b * b * count);
    case 8: return pl_rg_reduce_op (G, "ReduceL1", x.v, axes, n, keepdims, b * count);
    default:
      return pl_rg_reduce_op (G, "ReduceLogSumExp", x.v, axes, n, keepdims, b + log (count));
    }
}

static bool
gen_softmax (Gen *G, Entry x, bool log_softmax)
{
  int r = x.v->shape.rank, axis = pl_rg_rnd (G, -r, r - 1);
  const char *op = log_softmax ? "LogSoftmax" : "Softmax";
  double bound = log_softmax ? 2 * x.bound + log (G->o.max_numel) : 1;
  return axis == -1 && pl_rg_chance (G, 0.7) ? pl_rg_op1 (G, op, x.v, bound)
                                             : pl_rg_op1_int (G, op, x.v, "axis", axis, bound);
}

static bool
gen_layer_norm (Gen *G, Entry x)
{
  Dims d = pl_rg_dims_of (x.v);
  int axis = pl_rg_rnd (G, 0, d.rank - 1);
  Dims p = { .rank = d.rank - axis };
  memcpy (p.d, d.d + axis, sizeof (int64_t) * p.rank);
  bool with_bias = pl_rg_chance (G, 0.7);
  PlValue *scale = pl_rg_const_f32 (G, &p, 0.5, 1.5);
  PlValue *ins[3] = { x.v, scale, with_bias ? pl_rg_const_f32 (G, &p, -0.5, 0.5) : NULL };
  PlNode *n = pl_rg_node_begin (G, "LayerNormalization", with_bias ? 3 : 2, ins);
  if (n && (axis != d.rank - 1 || pl_rg_chance (G, 0.5)))
    pl_node_set_attr_int (n, "axis", pl_rg_chance (G, 0.5) ? axis - d.rank : axis);
  static const float eps[] = { 1e-5f, 1e-3f, 1e-2f };
  if (n)
    pl_node_set_attr_float (n, "epsilon", eps[pl_rg_rnd (G, 0, 2)]);
  return pl_rg_node_end (G, n, 1.5 * sqrt (pl_rg_dims_numel (&p)) + 0.5);
}

bool
pl_rg_gen_reduce (Gen *G)
{
  Entry x = pl_rg_pick (G);
  if (x.v->shape.rank < 1)
    return false;
  switch (pl_rg_rnd (G, 0, 9))
    {
    case 0: case 1: return gen_softmax (G, x, false);
    case 2: return gen_softmax (G, x, true);
    case 3: case 4: return gen_layer_norm (G, x);
    default: return gen_reduction (G, x);
    }
}

/* --- matmul and gemm ------------------------------------------------------------------ */

static bool
matmul_right_ok (Gen *G, const PlValue *v, gconstpointer data)
{
  const Dims *x = data;
  Dims y = pl_rg_dims_of (v);
  if (y.rank < 2 || y.d[y.rank - 2] != x->d[x->rank - 1])
    return false;
  PlShape xb = pl_shape_from_dims (MAX (x->rank - 2, 0), x->d);
  PlShape yb = pl_shape_from_dims (y.rank - 2, y.d);
  PlShape out;
  if (!pl_shape_broadcast (&xb, &yb, &out, NULL))
    return false;
  int64_t n = pl_shape_numel (&out) * (x->rank >= 2 ? x->d[x->rank - 2] : 1) * y.d[y.rank - 1];
  return out.rank + 2 <= G->o.max_rank && n <= G->o.max_numel;
}

static bool
gen_matmul_op (Gen *G, Entry x)
{
  Dims d = pl_rg_dims_of (x.v);
  if (d.rank < 1)
    return false;
  int64_t K = d.d[d.rank - 1];
  if (pl_rg_chance (G, 0.35))
    {
      Entry y = pl_rg_find_partner (G, matmul_right_ok, &d);
      if (y.v)
        return pl_rg_op2 (G, "MatMul", x.v, y.v, x.bound * y.bound * K);
    }
  if (d.rank >= 2 && pl_rg_chance (G, 0.15))
    {
      /* A constant on the left: [M, K'] x [..., K', N] */
      Dims a = { 2, { pl_rg_rnd (G, 1, G->o.max_dim), d.d[d.rank - 2] } };
      return pl_rg_op2 (G, "MatMul", pl_rg_const_f32 (G, &a, -1, 1), x.v, x.bound * a.d[1]);
    }
  Dims w = { 2, { K, pl_rg_rnd (G, 1, G->o.max_dim) } };
  if (pl_rg_chance (G, 0.15))
    w = (Dims) { 1, { K } };
  else if (d.rank >= 3 && pl_rg_chance (G, 0.2))
    {
      /* batched weights whose batch dims broadcast against x's */
      w.rank = 3;
      w.d[2] = w.d[1];
      w.d[1] = K;
      w.d[0] = pl_rg_chance (G, 0.5) ? 1 : d.d[d.rank - 3];
    }
  return pl_rg_op2 (G, "MatMul", x.v, pl_rg_const_f32 (G, &w, -1, 1), x.bound * K);
}

static bool
gen_gemm (Gen *G, Entry x)
{
  int r = x.v->shape.rank;
  if (r != 2)
    {
      PlValue *f = r >= 1 ? pl_rg_op1_int (G, "Flatten", x.v, "axis", pl_rg_rnd (G, 1, r), x.bound) : NULL;
      if (!f)
        return false;
      x.v = f;
    }
  Dims d = pl_rg_dims_of (x.v);
  bool trans_a = pl_rg_chance (G, 0.3), trans_b = pl_rg_chance (G, 0.3);
  int64_t M = trans_a ? d.d[1] : d.d[0], K = trans_a ? d.d[0] : d.d[1];
  int64_t N = pl_rg_rnd (G, 1, G->o.max_dim);
  Dims b = { 2, { trans_b ? N : K, trans_b ? K : N } };
  PlValue *ins[3] = { x.v, pl_rg_const_f32 (G, &b, -1, 1), NULL };
  switch (pl_rg_rnd (G, 0, 5))
    {
    case 0: break;
    case 1: ins[2] = pl_rg_const_f32 (G, &(Dims) { 1, { N } }, -1, 1); break;
    case 2: ins[2] = pl_rg_const_f32 (G, &(Dims) { 2, { 1, N } }, -1, 1); break;
    case 3: ins[2] = pl_rg_const_f32 (G, &(Dims) { 2, { M, N } }, -1, 1); break;
    case 4: ins[2] = pl_rg_const_f32 (G, &(Dims) { 2, { M, 1 } }, -1, 1); break;
    default: ins[2] = pl_rg_const_scalar (G, 0.25); break;
    }
  PlNode *n = pl_rg_node_begin (G, "Gemm", ins[2] ? 3 : 2, ins);
  static const float factors[] = { 1.0f, 0.5f, 2.0f };
  float alpha = factors[pl_rg_rnd (G, 0, 2)], beta = factors[pl_rg_rnd (G, 0, 2)];
  if (n)
    {
      if (trans_a)
        pl_node_set_attr_int (n, "transA", 1);
      if (trans_b)
        pl_node_set_attr_int (n, "transB", 1);
      if (alpha != 1.0f)
        pl_node_set_attr_float (n, "alpha", alpha);
      if (beta != 1.0f && ins[2])
        pl_node_set_attr_float (n, "beta", beta);
    }
  return pl_rg_node_end (G, n, alpha * x.bound * K + beta);
}

bool
pl_rg_gen_matmul (Gen *G)
{
  Entry x = pl_rg_pick (G);
  return pl_rg_chance (G, 0.65) ? gen_matmul_op (G, x) : gen_gemm (G, x);
}

/* --- concat and slice -------------------------------------------------------------------- */

typedef struct {
  Dims d;
  int  axis;
} ConcatWant;

static bool
concat_ok (Gen *G, const PlValue *v, gconstpointer data)
{
  const ConcatWant *w = data;
  Dims y = pl_rg_dims_of (v);
  if (y.rank != w->d.rank)
    return false;
  for (int i = 0; i < y.rank; i++)
    if (i != w->axis && y.d[i] != w->d.d[i])
      return false;
  return true;
}

static bool
gen_concat (Gen *G, Entry x)
{
  ConcatWant w = { pl_rg_dims_of (x.v), 0 };
  if (w.d.rank < 1)
    return false;
  w.axis = pl_rg_rnd (G, 0, w.d.rank - 1);
  int n = pl_rg_chance (G, 0.25) ? 3 : 2;
  PlValue *ins[3] = { x.v };
  double bound = x.bound;
  for (int i = 1; i < n; i++)
    {
      Entry p = { NULL, 0 };
      if (pl_rg_chance (G, 0.2))
        p = x;
      else if (pl_rg_chance (G, 0.5))
        p = pl_rg_find_partner (G, concat_ok, &w);
      if (!p.v)
        {
          Dims c = w.d;
          c.d[w.axis] = pl_rg_rnd (G, 1, G->o.max_dim);
          p = (Entry) { pl_rg_const_f32 (G, &c, -1, 1), 1 };
        }
      ins[i] = p.v;
      bound = MAX (bound, p.bound);
    }
  PlNode *node = pl_rg_node_begin (G, "Concat", n, ins);
  if (node)
    pl_node_set_attr_int (node, "axis", pl_rg_chance (G, 0.3) ? w.axis - w.d.rank : w.axis);
  return pl_rg_node_end (G, node, bound);
}

static bool
gen_slice (Gen *G, Entry x)
{
  Dims d = pl_rg_dims_of (x.v);
  if (d.rank < 1)
    return false;
  int64_t axes[PL_MAX_RANK], starts[PL_MAX_RANK], ends[PL_MAX_RANK], steps[PL_MAX_RANK];
  int n = pl_rg_random_axes (G, d.rank, axes);
  bool all_steps_one = true;
  for (int i = 0; i < n; i++)
    {
      int64_t dim = d.d[axes[i]];
      int64_t s = pl_rg_rnd (G, 0, (int) dim - 1);
      int k = pl_rg_rnd (G, 0, 9);
      if (k == 0)
        {
          /* backwards from s to e (exclusive); e = -1 written as "before the start" */
          int64_t e = pl_rg_rnd (G, -1, (int) s - 1);
          starts[i] = s;
          ends[i] = e < 0 ? -dim - 1 : e;
          steps[i] = -1;
          all_steps_one = false;
          continue;
        }
      int64_t e = pl_rg_rnd (G, (int) s + 1, (int) dim);
      steps[i] = k == 1 ? 2 : 1;
      all_steps_one &= steps[i] == 1;
      starts[i] = pl_rg_chance (G, 0.2) ? s - dim : s;
      ends[i] = e == dim && pl_rg_chance (G, 0.3) ? G_MAXINT64
                : pl_rg_chance (G, 0.2) && e < dim ? e - dim : e;
    }
  bool write_axes = !(n == d.rank && pl_rg_chance (G, 0.5)) || !all_steps_one;
  pl_rg_maybe_negative (G, axes, n, d.rank);
  PlValue *ins[5] = { x.v, pl_rg_const_ints (G, starts, n), pl_rg_const_ints (G, ends, n), NULL, NULL };
  int n_in = 3;
  if (write_axes)
    {
      ins[3] = pl_rg_const_ints (G, axes, n);
      n_in = 4;
      if (!all_steps_one || pl_rg_chance (G, 0.2))
        ins[4] = pl_rg_const_ints (G, steps, n), n_in = 5;
    }
  return pl_rg_node_end (G, pl_rg_node_begin (G, "Slice", n_in, ins), x.bound);
}

/* Pad in any mode: pads on a few axes, some cropping, some longer than the
 * axis (reflect and wrap repeat); a nonzero value in constant mode. */
static bool
gen_pad (Gen *G, Entry x)
{
  static const char *const modes[] = { "constant", "edge", "reflect", "wrap" };
  Dims d = pl_rg_dims_of (x.v);
  if (d.rank < 1 || pl_rg_dims_numel (&d) == 0)
    return false;
  int64_t pads[2 * PL_MAX_RANK] = { 0 };
  for (int k = 0; k < d.rank; k++)
    if (pl_rg_chance (G, 0.6))
      for (int side = 0; side < 2; side++)
        pads[side * d.rank + k] = pl_rg_rnd (G, d.d[k] > 1 ? -1 : 0, (int) d.d[k] + 2);
  const char *mode = modes[pl_rg_rnd (G, 0, 3)];
  PlValue *ins[3] = { x.v, pl_rg_const_ints (G, pads, 2 * d.rank), NULL };
  int n_in = 2;
  if (strcmp (mode, "constant") == 0 && x.v->dtype == PL_DTYPE_F32 && pl_rg_chance (G, 0.5))
    ins[n_in++] = pl_rg_const_scalar (G, 0.5);
  PlNode *node = pl_rg_node_begin (G, "Pad", n_in, ins);
  if (node)
    pl_node_set_attr_string (node, "mode", mode);
  return pl_rg_node_end (G, node, MAX (x.bound, 0.5));
}

/* Tile: each axis repeated 1 to 3 times. */
static bool
gen_tile (Gen *G, Entry x)
{
  Dims d = pl_rg_dims_of (x.v);
  if (d.rank < 1 || pl_rg_dims_numel (&d) > 256)
    return false;
  int64_t reps[PL_MAX_RANK];
  for (int k = 0; k < d.rank; k++)
    reps[k] = pl_rg_chance (G, 0.5) ? 1 : pl_rg_rnd (G, 1, 3);
  PlValue *ins[2] = { x.v, pl_rg_const_ints (G, reps, d.rank) };
  return pl_rg_node_end (G, pl_rg_node_begin (G, "Tile", 2, ins), x.bound);
}

bool
pl_rg_gen_concat_slice (Gen *G)
{
  Entry x = pl_rg_pick (G);
  int k = pl_rg_rnd (G, 0, 9);
  return k < 4 ? gen_concat (G, x) : k < 7 ? gen_slice (G, x) : k < 9 ? gen_pad (G, x) : gen_tile (G, x);
}
