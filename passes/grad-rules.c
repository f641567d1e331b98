/* grad-rules.c — gradient rules of the grad pass for elementwise ops, data
 * movement, reductions and softmax, and the table that finds a node's rule
 * (the ops of grad-rules-nn.c and grad-rules-index.c are looked up there).
 *
 * A rule reads the forward node (its inputs and outputs stay live until the
 * backward use: that is what makes training graphs memory-hungry) and the
 * gradients of its outputs, and hands each input that wants one a gradient
 * of exactly its shape and dtype, built from existing ops only.
 * Broadcasting binary ops unbroadcast (ReduceSum over the broadcast axes with
 * keepdims, then Reshape to the operand's shape). The emitted ops use the
 * opset-13 forms (axes as inputs); grad.c refuses older graphs.
 */
#define G_LOG_DOMAIN "passlab"
#include "grad-private.h"
#include "ops-util.h"

#include <math.h>
#include <string.h>

/* --- elementwise ------------------------------------------------------------------ */

static PlValue *
gelu_derivative (PlGrad *G, const PlNode *n, PlValue *x)
{
  PlDType t = x->dtype;
  PlValue *x2 = op2 (G, "Mul", x, x);
  if (strcmp (pl_node_attr_string (n, "approximate", "none"), "tanh") == 0)
    {
      /* y = 0.5 x (1 + tanh(u)), u = c (x + k x^3):
       * y' = 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 k x^2) */
      const double c = sqrt (2.0 / G_PI), k = 0.044715;
      PlValue *u = pl_grad_mul_s (G, op2 (G, "Add", x, pl_grad_mul_s (G, op2 (G, "Mul", x2, x), k)), c);
      PlValue *th = op1 (G, "Tanh", u);
      PlValue *a = pl_grad_mul_s (G, op2 (G, "Add", th, pl_grad_scalar (G, t, 1.0)), 0.5);
      PlValue *du = pl_grad_mul_s (G, op2 (G, "Add", pl_grad_mul_s (G, x2, 3 * k), pl_grad_scalar (G, t, 1.0)), c);
      PlValue *sech2 = pl_grad_rsub_s (G, 1.0, op2 (G, "Mul", th, th));
      PlValue *b = pl_grad_mul_s (G, op2 (G, "Mul", op2 (G, "Mul", x, sech2), du), 0.5);
      return op2 (G, "Add", a, b);
    }
  /* y = x Phi(x): y' = Phi(x) + x phi(x) */
  PlValue *erf = op1 (G, "Erf", pl_grad_mul_s (G, x, 1.0 / G_SQRT2));
  PlValue *cdf = pl_grad_mul_s (G, op2 (G, "Add", erf, pl_grad_scalar (G, t, 1.0)), 0.5);
  PlValue *pdf = pl_grad_mul_s (G, op1 (G, "Exp", pl_grad_mul_s (G, x2, -0.5)), 1.0 / sqrt (2.0 * G_PI));
  return op2 (G, "Add", cdf, op2 (G, "Mul", x, pdf));
}

/* Clip passes the gradient where min <= x <= max. */
static PlValue *
clip_mask (PlGrad *G, const PlNode *n, PlValue *x)
{
  PlValue *lo = n->n_inputs > 1 ? n->inputs[1] : NULL, *hi = n->n_inputs > 2 ? n->inputs[2] : NULL;
  PlValue *m = lo ? op2 (G, "GreaterOrEqual", x, lo) : NULL;
  PlValue *m2 = hi ? op2 (G, "LessOrEqual", x, hi) : NULL;
  return m && m2 ? op2 (G, "And", m, m2) : m ? m : m2;
}

static bool
rule_unary (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *x = n->inputs[0], *y = n->outputs[0], *d = dy[0], *dx = NULL;
  PlDType t = x->dtype;
  if (!need[0])
    return true;
  switch (n->op)
    {
    case PL_OP_Identity:
    case PL_OP_Dropout:
      dx = d;
      break;
    case PL_OP_Cast:
      dx = pl_grad_cast_to (G, d, t);
      break;
    case PL_OP_Neg:
      dx = op1 (G, "Neg", d);
      break;
    case PL_OP_Exp:
      dx = op2 (G, "Mul", d, y);
      break;
    case PL_OP_Log:
      dx = op2 (G, "Div", d, x);
      break;
    case PL_OP_Sqrt:
      dx = op2 (G, "Div", pl_grad_mul_s (G, d, 0.5), y);
      break;
    case PL_OP_Reciprocal:
      dx = op1 (G, "Neg", op2 (G, "Mul", d, op2 (G, "Mul", y, y)));
      break;
    case PL_OP_Relu:
      dx = pl_grad_where (G, op2 (G, "Greater", x, pl_grad_zero_of (G, x)), d, pl_grad_zero_of (G, x));
      break;
    case PL_OP_LeakyRelu:
      dx = pl_grad_where (G, op2 (G, "Less", x, pl_grad_zero_of (G, x)),
                          pl_grad_mul_s (G, d, pl_node_attr_float (n, "alpha", 0.01f)), d);
      break;
    case PL_OP_Sigmoid:
      dx = op2 (G, "Mul", d, op2 (G, "Mul", y, pl_grad_rsub_s (G, 1.0, y)));
      break;
    case PL_OP_Tanh:
      dx = op2 (G, "Mul", d, pl_grad_rsub_s (G, 1.0, op2 (G, "Mul", y, y)));
      break;
    case PL_OP_Erf:
      {
        /* 2 / sqrt(pi) exp(-x^2) */
        PlValue *gauss = op1 (G, "Exp", op1 (G, "Neg", op2 (G, "Mul", x, x)));
        dx = op2 (G, "Mul", d, pl_grad_mul_s (G, gauss, 2.0 / sqrt (G_PI)));
      }
      break;
    case PL_OP_Gelu:
      dx = op2 (G, "Mul", d, gelu_derivative (G, n, x));
      break;
    case PL_OP_Abs:
      dx = op2 (G, "Mul", d, op1 (G, "Sign", x));
      break;
    case PL_OP_Softplus:
      dx = op2 (G, "Mul", d, op1 (G, "Sigmoid", x));
      break;
    case PL_OP_Sin:
      dx = op2 (G, "Mul", d, op1 (G, "Cos", x));
      break;
    case PL_OP_Cos:
      dx = op1 (G, "Neg", op2 (G, "Mul", d, op1 (G, "Sin", x)));
      break;
    case PL_OP_Clip:
      {
        PlValue *m = clip_mask (G, n, x);
        dx = m ? pl_grad_where (G, m, d, pl_grad_zero_of (G, x)) : d;
      }
      break;
    case PL_OP_Elu:
    case PL_OP_Selu:
      {
        /* y = gamma (x > 0 ? x : alpha (e^x - 1)): y' = gamma, or y + gamma alpha */
        bool selu = n->op == PL_OP_Selu;
        double alpha = pl_node_attr_float (n, "alpha", selu ? 1.67326319217681884765625f : 1.0f);
        double gamma = selu ? pl_node_attr_float (n, "gamma", 1.05070102214813232421875f) : 1.0;
        PlValue *neg = op2 (G, "Mul", d, op2 (G, "Add", y, pl_grad_scalar (G, t, gamma * alpha)));
        dx = pl_grad_where (G, op2 (G, "Greater", x, pl_grad_zero_of (G, x)), pl_grad_mul_s (G, d, gamma), neg);
      }
      break;
    case PL_OP_HardSigmoid:
      {
        double alpha = pl_node_attr_float (n, "alpha", 0.2f), beta = pl_node_attr_float (n, "beta", 0.5f);
        PlValue *u = op2 (G, "Add", pl_grad_mul_s (G, x, alpha), pl_grad_scalar (G, t, beta));
        PlValue *m = op2 (G, "And", op2 (G, "Greater", u, pl_grad_zero_of (G, x)),
                          op2 (G, "Less", u, pl_grad_scalar (G, t, 1.0)));
        dx = pl_grad_where (G, m, pl_grad_mul_s (G, d, alpha), pl_grad_zero_of (G, x));
      }
      break;
    case PL_OP_HardSwish:
      {
        /* y = x hardsigmoid(x) (alpha 1/6, beta 1/2): y' = 0 below -3, 1 above 3, x/3 + 1/2 between */
        PlValue *mid = op2 (G, "Add", pl_grad_mul_s (G, x, 1.0 / 3.0), pl_grad_scalar (G, t, 0.5));
        PlValue *above = op2 (G, "Greater", x, pl_grad_scalar (G, t, 3.0));
        PlValue *below = op2 (G, "Less", x, pl_grad_scalar (G, t, -3.0));
        PlValue *hi = pl_grad_where (G, above, pl_grad_scalar (G, t, 1.0), mid);
        PlValue *deriv = pl_grad_where (G, below, pl_grad_zero_of (G, x), hi);
        dx = op2 (G, "Mul", d, deriv);
      }
      break;
    case PL_OP_Mish:
      {
        /* y = x tanh(softplus(x)): y' = tanh(sp) + x (1 - tanh(sp)^2) sigmoid(x) */
        PlValue *th = op1 (G, "Tanh", op1 (G, "Softplus", x));
        PlValue *rest = op2 (G, "Mul", op2 (G, "Mul", x, pl_grad_rsub_s (G, 1.0, op2 (G, "Mul", th, th))),
                             op1 (G, "Sigmoid", x));
        dx = op2 (G, "Mul", d, op2 (G, "Add", th, rest));
      }
      break;
    case PL_OP_Softsign:
      {
        PlValue *a1 = op2 (G, "Add", op1 (G, "Abs", x), pl_grad_scalar (G, t, 1.0));
        dx = op2 (G, "Div", d, op2 (G, "Mul", a1, a1));
      }
      break;
    default:
      g_assert_not_reached ();
    }
  pl_grad_give (G, x, dx);
  return !G->error;
}

/* Add, Sub, Mul, Div, Pow, Max, Min (binary) and Sum, Mean (variadic). */
static bool
rule_binary (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *a = n->inputs[0], *b = n->n_inputs > 1 ? n->inputs[1] : NULL, *y = n->outputs[0], *d = dy[0];
  PlValue *da = NULL, *db = NULL;
  switch (n->op)
    {
    case PL_OP_Sum:
    case PL_OP_Mean:
      for (int i = 0; i < n->n_inputs; i++)
        if (need[i])
          {
            PlValue *share = pl_grad_mul_s (G, d, n->op == PL_OP_Mean ? 1.0 / n->n_inputs : 1.0);
            pl_grad_give (G, n->inputs[i], pl_grad_unbroadcast (G, share, n->inputs[i]));
          }
      return !G->error;
    case PL_OP_Add:
      da = need[0] ? d : NULL;
      db = need[1] ? d : NULL;
      break;
    case PL_OP_Sub:
      da = need[0] ? d : NULL;
      db = need[1] ? op1 (G, "Neg", d) : NULL;
      break;
    case PL_OP_Mul:
      da = need[0] ? op2 (G, "Mul", d, b) : NULL;
      db = need[1] ? op2 (G, "Mul", d, a) : NULL;
      break;
    case PL_OP_Div:
      /* d(a/b)/db = -a/b^2 = -y/b */
      da = need[0] ? op2 (G, "Div", d, b) : NULL;
      db = need[1] ? op1 (G, "Neg", op2 (G, "Mul", d, op2 (G, "Div", y, b))) : NULL;
      break;
    case PL_OP_Pow:
      if (need[0])
        {
          /* b a^(b-1); a constant exponent gives constants b and b-1 */
          PlTensor *bc = pl_value_constant (b);
          PlValue *bf, *bm1;
          if (bc)
            {
              g_autoptr (PlTensor) t1 = pl_tensor_cast (bc, a->dtype), t2 = pl_tensor_cast (bc, a->dtype);
              for (int64_t i = 0; i < t2->numel; i++)
                pl_tensor_set_f64 (t2, i, pl_tensor_get_f64 (t1, i) - 1.0);
              bf = pl_grad_tensor (G, t1);
              bm1 = pl_grad_tensor (G, t2);
            }
          else
            {
              bf = pl_grad_cast_to (G, b, a->dtype);
              bm1 = op2 (G, "Sub", bf, pl_grad_scalar (G, a->dtype, 1.0));
            }
          da = op2 (G, "Mul", d, op2 (G, "Mul", bf, op2 (G, "Pow", a, bm1)));
        }
      db = need[1] ? op2 (G, "Mul", d, op2 (G, "Mul", y, op1 (G, "Log", a))) : NULL;
      break;
    case PL_OP_Max:
    case PL_OP_Min:
      if (n->n_inputs == 1)
        {
          da = d;
          break;
        }
      if (n->n_inputs != 2)
        {
          pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "no gradient rule for %s with %d inputs", n->op_type, n->n_inputs);
          return false;
        }
      {
        /* ties go to the first input */
        PlValue *m = op2 (G, n->op == PL_OP_Max ? "GreaterOrEqual" : "LessOrEqual", a, b);
        da = need[0] ? pl_grad_where (G, m, d, pl_grad_zero_of (G, d)) : NULL;
        db = need[1] ? pl_grad_where (G, m, pl_grad_zero_of (G, d), d) : NULL;
      }
      break;
    default:
      g_assert_not_reached ();
    }
  if (need[0])
    pl_grad_give (G, a, pl_grad_unbroadcast (G, da, a));
  if (b && need[1])
    pl_grad_give (G, b, pl_grad_unbroadcast (G, db, b));
  return !G->error;
}

static bool
rule_where (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *c = n->inputs[0], *d = dy[0], *z = pl_grad_zero_of (G, d);
  if (need[1])
    pl_grad_give (G, n->inputs[1], pl_grad_unbroadcast (G, pl_grad_where (G, c, d, z), n->inputs[1]));
  if (need[2])
    pl_grad_give (G, n->inputs[2], pl_grad_unbroadcast (G, pl_grad_where (G, c, z, d), n->inputs[2]));
  return !G->error;
}

/* --- data movement ------------------------------------------------------------------ */

/* Reshape, Flatten, Squeeze, Unsqueeze: the gradient reshaped back; Expand:
 * summed back. */
static bool
rule_reshape (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *x = n->inputs[0];
  if (need[0])
    pl_grad_give (G, x, n->op == PL_OP_Expand ? pl_grad_unbroadcast (G, dy[0], x)
                                              : pl_grad_reshape_like (G, dy[0], x));
  return !G->error;
}

static bool
rule_transpose (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *x = n->inputs[0];
  int r = x->shape.rank;
  const int64_t *p;
  int np;
  int64_t inv[PL_MAX_RANK];
  bool has = pl_node_attr_ints (n, "perm", &p, &np);
  for (int i = 0; i < r; i++)
    inv[has ? p[i] : r - 1 - i] = i;
  if (need[0])
    pl_grad_give (G, x, pl_grad_transpose (G, dy[0], inv, r));
  return !G->error;
}

static bool
rule_concat (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  int a;
  if (!pl_grad_axis_of (G, n, "axis", 0, n->outputs[0]->shape.rank, &a))
    return false;
  int64_t off = 0;
  for (int i = 0; i < n->n_inputs; i++)
    {
      PlDim dim = n->inputs[i]->shape.dims[a];
      if (!pl_dim_is_static (dim))
        {
          pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "needs static sizes along the concatenation axis");
          return false;
        }
      if (need[i])
        {
          int64_t end = off + dim.size, axis = a;
          pl_grad_give (G, n->inputs[i], pl_grad_slice (G, dy[0], &off, &end, &axis, 1));
        }
      off += dim.size;
    }
  return !G->error;
}

static bool
rule_split (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  int a;
  if (!need[0] || !pl_grad_axis_of (G, n, "axis", 0, n->inputs[0]->shape.rank, &a))
    return !G->error;
  g_autofree PlValue **parts = g_new0 (PlValue *, n->n_outputs);
  for (int o = 0; o < n->n_outputs; o++)
    parts[o] = dy[o] ? dy[o] : pl_grad_zeros_like (G, n->outputs[o]);
  PlNode *c = pl_grad_node (G, "Concat", n->n_outputs, parts, 1);
  if (c)
    pl_node_set_attr_int (c, "axis", a);
  pl_grad_give (G, n->inputs[0], pl_grad_finish (G, c));
  return !G->error;
}

/* Slice: Pad back with zeros for unit steps; else ScatterND into zeros at
 * the (constant) positions the slice read. */
static bool
rule_slice (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *x = n->inputs[0];
  int64_t dims[PL_MAX_RANK], st[PL_MAX_RANK], sp[PL_MAX_RANK], cnt[PL_MAX_RANK];
  int r = x->shape.rank;
  if (!need[0] || !pl_grad_require_static (G, x, dims))
    return !G->error;
  g_autofree int64_t *starts = NULL, *ends = NULL, *axes = NULL, *steps = NULL;
  int ns = 0, ne = 0, na = 0, nt = 0;
  PlTensor *ta = n->n_inputs > 3 && n->inputs[3] ? pl_value_constant (n->inputs[3]) : NULL;
  PlTensor *tt = n->n_inputs > 4 && n->inputs[4] ? pl_value_constant (n->inputs[4]) : NULL;
  PlTensor *ts = pl_value_constant (n->inputs[1]), *te = pl_value_constant (n->inputs[2]);
  if (!ts || !te || (n->n_inputs > 3 && n->inputs[3] && !ta) || (n->n_inputs > 4 && n->inputs[4] && !tt))
    {
      pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "needs constant starts, ends, axes and steps");
      return false;
    }
  starts = pl_tensor_to_ints (ts, &ns);
  ends = pl_tensor_to_ints (te, &ne);
  if (ta)
    axes = pl_tensor_to_ints (ta, &na);
  if (tt)
    steps = pl_tensor_to_ints (tt, &nt);
  bool unit = true;
  for (int i = 0; i < r; i++)
    st[i] = 0, sp[i] = 1, cnt[i] = dims[i];
  for (int i = 0; i < ns; i++)
    {
      int64_t a = axes ? axes[i] : i;
      a = a < 0 ? a + r : a;
      int64_t dim = dims[a], s = steps ? steps[i] : 1, b = starts[i], e = ends[i];
      b = b < 0 ? b + dim : b;
      e = e < 0 ? e + dim : e;
      if (s > 0)
        {
          b = CLAMP (b, 0, dim), e = CLAMP (e, 0, dim);
          cnt[a] = e > b ? (e - b + s - 1) / s : 0;
        }
      else
        {
          b = CLAMP (b, 0, dim - 1), e = CLAMP (e, -1, dim - 1);
          cnt[a] = b > e ? (b - e - s - 1) / -s : 0;
        }
      st[a] = b, sp[a] = s;
      unit = unit && s == 1;
    }
  PlValue *d = dy[0];
  if (unit)
    {
      int64_t pads[2 * PL_MAX_RANK];
      for (int i = 0; i < r; i++)
        pads[i] = st[i], pads[r + i] = dims[i] - st[i] - cnt[i];
      pl_grad_give (G, x, op2 (G, "Pad", d, pl_grad_ints (G, pads, 2 * r)));
      return !G->error;
    }
  int64_t idims[PL_MAX_RANK + 1], numel = 1;
  for (int i = 0; i < r; i++)
    idims[i] = cnt[i], numel *= cnt[i];
  idims[r] = r;
  g_autoptr (PlTensor) idx = pl_tensor_new (PL_DTYPE_I64, r + 1, idims, &G->error);
  if (!idx)
    return false;
  int64_t *iv = idx->data;
  for (int64_t e = 0; e < numel; e++)
    {
      int64_t rem = e;
      for (int i = r - 1; i >= 0; i--)
        {
          iv[e * r + i] = st[i] + (rem % cnt[i]) * sp[i];
          rem /= cnt[i];
        }
    }
  pl_grad_give (G, x, op3 (G, "ScatterND", pl_grad_zeros_like (G, x), pl_grad_tensor (G, idx), d));
  return !G->error;
}

/* Pad: in constant mode the adjoint is the opposite Pad, with zeros (a crop
 * where it padded, zeros where it cropped). In edge, reflect and wrap modes
 * several outputs read one input element: along each padded axis the
 * gradient is multiplied by the 0/1 matrix M[out, in] of which input each
 * output reads, summing them. */
static bool
rule_pad (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *x = n->inputs[0];
  int64_t dims[PL_MAX_RANK], begin[PL_MAX_RANK], end[PL_MAX_RANK];
  int r = x->shape.rank;
  double fill;
  PlPadMode mode;
  if (!need[0])
    return true;
  if (!pl_grad_require_static (G, x, dims))
    return false;
  if (!pl_pad_static (n, begin, end, &fill, &mode))
    {
      pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "needs constant pads (and axes)");
      return false;
    }
  if (mode == PL_PAD_CONSTANT)
    {
      int64_t back[2 * PL_MAX_RANK];
      for (int i = 0; i < r; i++)
        back[i] = -begin[i], back[r + i] = -end[i];
      pl_grad_give (G, x, op2 (G, "Pad", dy[0], pl_grad_ints (G, back, 2 * r)));
      return !G->error;
    }
  const char *name = pl_node_attr_string (n, "mode", "constant");
  PlValue *d = dy[0];
  for (int k = 0; k < r && !G->error; k++)
    {
      if (begin[k] == 0 && end[k] == 0)
        continue;
      int64_t out = dims[k] + begin[k] + end[k];
      g_autoptr (PlTensor) m = pl_tensor_new (d->dtype, 2, (int64_t[]) { out, dims[k] }, &G->error);
      if (!m)
        return false;
      for (int64_t o = 0; o < out; o++)
        {
          int64_t i = pl_pad_source_index (name, o - begin[k], dims[k]);
          pl_tensor_set_f64 (m, o * dims[k] + i, 1);   /* each output reads one input */
        }
      int64_t perm[PL_MAX_RANK], inv[PL_MAX_RANK];
      for (int i = 0, j = 0; i < r; i++)
        if (i != k)
          perm[j++] = i;
      perm[r - 1] = k;
      for (int i = 0; i < r; i++)
        inv[perm[i]] = i;
      PlValue *t = k == r - 1 ? d : pl_grad_transpose (G, d, perm, r);
      t = op2 (G, "MatMul", t, pl_grad_tensor (G, m));
      d = k == r - 1 ? t : pl_grad_transpose (G, t, inv, r);
    }
  pl_grad_give (G, x, d);
  return !G->error;
}

/* Tile: each input element is read once per repeat; with the output seen as
 * [r0, d0, r1, d1, ...], the sum over the repeats' axes. */
static bool
rule_tile (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *x = n->inputs[0];
  int64_t dims[PL_MAX_RANK], split[2 * PL_MAX_RANK], axes[PL_MAX_RANK];
  int r = x->shape.rank, nr = 0;
  if (!need[0])
    return true;
  if (!pl_grad_require_static (G, x, dims))
    return false;
  PlTensor *tr = pl_value_constant (n->inputs[1]);
  g_autofree int64_t *reps = tr ? pl_tensor_to_ints (tr, &nr) : NULL;
  if (!reps || nr != r)
    {
      pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "needs constant repeats");
      return false;
    }
  for (int i = 0; i < r; i++)
    split[2 * i] = reps[i], split[2 * i + 1] = dims[i], axes[i] = 2 * i;
  PlValue *v = op2 (G, "Reshape", dy[0], pl_grad_ints (G, split, 2 * r));
  pl_grad_give (G, x, pl_grad_reduce_sum (G, v, axes, r, false));
  return !G->error;
}

/* CumSum: x_j reaches every y_i at or after j (before, reversed; exclusive:
 * strictly), so dx is the CumSum of dy the other way, just as exclusive. */
static bool
rule_cumsum (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  if (!need[0])
    return true;
  PlNode *s = pl_grad_node (G, "CumSum", 2, (PlValue *[]) { dy[0], n->inputs[1] }, 1);
  if (s)
    {
      pl_node_set_attr_int (s, "exclusive", pl_node_attr_int (n, "exclusive", 0) != 0);
      pl_node_set_attr_int (s, "reverse", pl_node_attr_int (n, "reverse", 0) == 0);
    }
  pl_grad_give (G, n->inputs[0], pl_grad_finish (G, s));
  return !G->error;
}

/* Gather along axis a: ScatterND with add into zeros, with the index dims
 * moved to the front (axis 0 needs no transposes: the embedding case). */
static bool
rule_gather (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *x = n->inputs[0], *idx = pl_grad_cast_to (G, n->inputs[1], PL_DTYPE_I64), *d = dy[0];
  int a, r = x->shape.rank, q = n->inputs[1]->shape.rank;
  if (!need[0] || !pl_grad_axis_of (G, n, "axis", 0, r, &a))
    return !G->error;
  if (n->op == PL_OP_GatherElements)
    {
      PlNode *s = pl_grad_node (G, "ScatterElements", 3, (PlValue *[]) { pl_grad_zeros_like (G, x), idx, d }, 1);
      if (s)
        pl_node_set_attr_int (s, "axis", a), pl_node_set_attr_string (s, "reduction", "add");
      pl_grad_give (G, x, pl_grad_finish (G, s));
      return !G->error;
    }
  if (q < 0)
    {
      pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "needs indices of known rank");
      return false;
    }
  PlValue *iu = pl_grad_unsqueeze (G, idx, (int64_t[]) { q }, 1), *data, *upd = d;
  if (a == 0)
    data = pl_grad_zeros_like (G, x);
  else
    {
      int64_t dims[PL_MAX_RANK], zd[PL_MAX_RANK], perm[PL_MAX_RANK];
      int k = 0;
      if (!pl_grad_require_static (G, x, dims))
        return false;
      zd[0] = dims[a];
      for (int i = 0; i < r; i++)
        if (i != a)
          zd[++k] = dims[i];
      k = 0;
      for (int i = 0; i < q; i++)
        perm[k++] = a + i;
      for (int i = 0; i < a; i++)
        perm[k++] = i;
      for (int i = a + q; i < r - 1 + q; i++)
        perm[k++] = i;
      upd = pl_grad_transpose (G, d, perm, k);
      data = op2 (G, "Expand", pl_grad_zero_of (G, x), pl_grad_ints (G, zd, r));
    }
  PlNode *s = pl_grad_node (G, "ScatterND", 3, (PlValue *[]) { data, iu, upd }, 1);
  if (s)
    pl_node_set_attr_string (s, "reduction", "add");
  PlValue *dx = pl_grad_finish (G, s);
  if (a != 0)
    {
      int64_t back[PL_MAX_RANK];
      for (int i = 0; i < r; i++)
        back[i] = i < a ? i + 1 : i == a ? 0 : i;
      dx = pl_grad_transpose (G, dx, back, r);
    }
  pl_grad_give (G, x, dx);
  return !G->error;
}

/* --- reductions ------------------------------------------------------------------------ */

/* The axes a Reduce* node reduces, sorted and normalized: from its axes
 * input, or attribute, or all. *noop: no axes and noop_with_empty_axes. */
static bool
reduce_axes (PlGrad *G, const PlNode *n, int64_t *axes, int *k, bool *noop)
{
  int r = n->inputs[0]->shape.rank;
  g_autofree int64_t *v = NULL;
  int nv = 0;
  *noop = false;
  if (n->op == PL_OP_GlobalMaxPool && r >= 2)
    {
      for (int i = 2; i < r; i++)
        axes[i - 2] = i;
      *k = r - 2;
      return true;
    }
  if (r < 0)
    {
      pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "needs an input of known rank");
      return false;
    }
  if (n->n_inputs > 1 && n->inputs[1])
    {
      PlTensor *t = pl_value_constant (n->inputs[1]);
      if (!t)
        {
          pl_grad_fail (G, PL_ERROR_UNSUPPORTED, "needs constant axes");
          return false;
        }
      v = pl_tensor_to_ints (t, &nv);
    }
  else
    {
      const int64_t *av;
      if (pl_node_attr_ints (n, "axes", &av, &nv))
        v = g_memdup2 (av, sizeof (int64_t) * nv);
    }
  bool mark[PL_MAX_RANK] = { false };
  if (nv == 0)
    {
      *noop = pl_node_attr_int (n, "noop_with_empty_axes", 0) != 0;
      for (int i = 0; i < r; i++)
        mark[i] = true;
    }
  for (int i = 0; i < nv; i++)
    mark[v[i] < 0 ? v[i] + r : v[i]] = true;
  *k = 0;
  for (int i = 0; i < r; i++)
    if (mark[i])
      axes[(*k)++] = i;
  return true;
}

static bool
rule_reduce (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *x = n->inputs[0], *y = n->outputs[0], *d = dy[0], *dx = NULL;
  int64_t axes[PL_MAX_RANK];
  int k;
  bool noop;
  if (!need[0] || !reduce_axes (G, n, axes, &k, &noop))
    return !G->error;
  if (noop)
    {
      pl_grad_give (G, x, d);
      return !G->error;
    }
  bool keep = pl_node_attr_int (n, "keepdims", 1) != 0;
  PlValue *dk = keep ? d : pl_grad_unsqueeze (G, d, axes, k);
  PlValue *yk = keep ? y : NULL;
  switch (n->op)
    {
    case PL_OP_ReduceSum:
      dx = pl_grad_expand_like (G, dk, x);
      break;
    case PL_OP_ReduceMean:
      dx = pl_grad_expand_like (G, op2 (G, "Mul", dk, pl_grad_count_ratio (G, y, x, x->dtype)), x);
      break;
    case PL_OP_ReduceSumSquare:
      dx = pl_grad_mul_s (G, op2 (G, "Mul", x, dk), 2.0);
      break;
    case PL_OP_ReduceL1:
      dx = op2 (G, "Mul", op1 (G, "Sign", x), dk);
      break;
    case PL_OP_ReduceProd:
      /* the product of the others: y / x (x nonzero) */
      yk = yk ? yk : pl_grad_unsqueeze (G, y, axes, k);
      dx = op2 (G, "Mul", op2 (G, "Div", yk, x), dk);
      break;
    case PL_OP_ReduceLogSum:
      /* y = log(sum x): 1 / sum x = exp(-y) */
      yk = yk ? yk : pl_grad_unsqueeze (G, y, axes, k);
      dx = pl_grad_expand_like (G, op2 (G, "Div", dk, op1 (G, "Exp", yk)), x);
      break;
    case PL_OP_ReduceL2:
      yk = yk ? yk : pl_grad_unsqueeze (G, y, axes, k);
      dx = op2 (G, "Mul", x, op2 (G, "Div", dk, yk));
      break;
    case PL_OP_ReduceLogSumExp:
      yk = yk ? yk : pl_grad_unsqueeze (G, y, axes, k);
      dx = op2 (G, "Mul", op1 (G, "Exp", op2 (G, "Sub", x, yk)), dk);
      break;
    case PL_OP_ReduceMax:
    case PL_OP_ReduceMin:
    case PL_OP_GlobalMaxPool:
      {
        /* the gradient goes to the extreme elements, shared among ties */
        yk = yk ? yk : pl_grad_unsqueeze (G, y, axes, k);
        PlValue *m = pl_grad_cast_to (G, op2 (G, "Equal", x, yk), x->dtype);
        PlValue *ties = pl_grad_reduce_sum (G, m, axes, k, true);
        dx = op2 (G, "Mul", m, op2 (G, "Div", dk, ties));
      }
      break;
    default:
      g_assert_not_reached ();
    }
  pl_grad_give (G, x, dx);
  return !G->error;
}

static bool
rule_softmax (PlGrad *G, const PlNode *n, PlValue *const *dy, const bool *need)
{
  PlValue *y = n->outputs[0], *d = dy[0], *dx;
  int a;
  if (!need[0] || !pl_grad_axis_of (G, n, "axis", -1, y->shape.rank, &a))
    return !G->error;
  int64_t ax = a;
  if (n->op == PL_OP_Softmax)
    dx = op2 (G, "Mul", y, op2 (G, "Sub", d, pl_grad_reduce_sum (G, op2 (G, "Mul", d, y), &ax, 1, true)));
  else
    dx = op2 (G, "Sub", d, op2 (G, "Mul", op1 (G, "Exp", y), pl_grad_reduce_sum (G, d, &ax, 1, true)));
  pl_grad_give (G, n->inputs[0], dx);
  return !G->error;
}

/* --- the table ------------------------------------------------------------------------------------- */

PlGradRule
pl_grad_rule (const PlNode *n)
{
  switch (n->op)
    {
    case PL_OP_Identity: case PL_OP_Dropout: case PL_OP_Cast: case PL_OP_Neg: case PL_OP_Exp:
    case PL_OP_Log: case PL_OP_Sqrt: case PL_OP_Reciprocal: case PL_OP_Relu: case PL_OP_LeakyRelu:
    case PL_OP_Sigmoid: case PL_OP_Tanh: case PL_OP_Erf: case PL_OP_Gelu: case PL_OP_Abs:
    case PL_OP_Softplus: case PL_OP_Sin: case PL_OP_Cos: case PL_OP_Clip: case PL_OP_Elu: case PL_OP_Selu:
    case PL_OP_HardSigmoid: case PL_OP_HardSwish: case PL_OP_Mish: case PL_OP_Softsign:
      return rule_unary;
    case PL_OP_Fusion:
      return pl_grad_rule_fusion;
    case PL_OP_Add: case PL_OP_Sub: case PL_OP_Mul: case PL_OP_Div: case PL_OP_Pow:
    case PL_OP_Max: case PL_OP_Min: case PL_OP_Sum: case PL_OP_Mean:
      return rule_binary;
    case PL_OP_Where:
      return rule_where;
    case PL_OP_Reshape: case PL_OP_Flatten: case PL_OP_Squeeze: case PL_OP_Unsqueeze: case PL_OP_Expand:
      return rule_reshape;
    case PL_OP_Transpose:
      return rule_transpose;
    case PL_OP_Concat:
      return rule_concat;
    case PL_OP_Split:
      return rule_split;
    case PL_OP_Slice:
      return rule_slice;
    case PL_OP_Pad:
      return rule_pad;
    case PL_OP_Tile:
      return rule_tile;
    case PL_OP_CumSum:
      return rule_cumsum;
    case PL_OP_Gather: case PL_OP_GatherElements:
      return rule_gather;
    case PL_OP_ReduceSum: case PL_OP_ReduceMean: case PL_OP_ReduceMax: case PL_OP_ReduceMin:
    case PL_OP_ReduceSumSquare: case PL_OP_ReduceL2: case PL_OP_ReduceLogSumExp: case PL_OP_GlobalMaxPool:
    case PL_OP_ReduceL1: case PL_OP_ReduceProd: case PL_OP_ReduceLogSum:
      return rule_reduce;
    case PL_OP_Softmax: case PL_OP_LogSoftmax:
      return rule_softmax;
    default:
      return pl_grad_rule_nn (n) ? pl_grad_rule_nn (n) : pl_grad_rule_index (n);
    }
}

bool
pl_grad_slot_differentiable (const PlNode *n, int i)
{
  switch (n->op)
    {
    case PL_OP_Reshape: case PL_OP_Expand: case PL_OP_Squeeze: case PL_OP_Unsqueeze: case PL_OP_Slice:
    case PL_OP_Split: case PL_OP_Pad: case PL_OP_Tile: case PL_OP_Dropout: case PL_OP_Clip:
    case PL_OP_Gather: case PL_OP_GatherElements: case PL_OP_GatherND: case PL_OP_Resize: case PL_OP_Upsample:
    case PL_OP_TopK: case PL_OP_OneHot: case PL_OP_CumSum:
    case PL_OP_ReduceSum: case PL_OP_ReduceMean: case PL_OP_ReduceMax: case PL_OP_ReduceMin:
    case PL_OP_ReduceProd: case PL_OP_ReduceL1: case PL_OP_ReduceL2: case PL_OP_ReduceLogSum:
    case PL_OP_ReduceLogSumExp: case PL_OP_ReduceSumSquare:
    case PL_OP_SoftmaxCrossEntropyLoss: case PL_OP_NegativeLogLikelihoodLoss:
      return i == 0;
    case PL_OP_Where:
      return i == 1 || i == 2;
    case PL_OP_ScatterND: case PL_OP_ScatterElements: case PL_OP_Scatter:
      return i == 0 || i == 2;   /* data and updates, not the indices */
    case PL_OP_BatchNormalization:
      return i < 3;  /* the running mean and var are statistics, not parameters */
    default:
      return true;
    }
}
