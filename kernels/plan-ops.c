/* plan-ops.c — what each op computes at a multi-index: the data functions of
 * the elementwise ops (as scalar instructions), the index functions of the
 * view ops (Reshape, Transpose, Expand, Slice, Split, nearest Resize by
 * integer factors, ... compose into the index), and the row reductions
 * (Reduce*, ArgMax/ArgMin, the softmax family and LayerNormalization as
 * reductions plus scalar math).
 *
 * pl_lower_value (v, idx) returns the instruction computing value v at
 * multi-index idx, recursing through the producers that are members of the
 * kernel. Semantics follow the reference implementations in core/ops-*.c;
 * anything not handled here fails with a reason (the op then runs through
 * its reference implementation, marked fallback).
 */
#define G_LOG_DOMAIN "passlab"
#include "kernel-plan-private.h"

#include "ops-util.h"

#include <math.h>
#include <string.h>

static int
opset_of (const PlNode *node)
{
  return node->graph && node->graph->opset > 0 ? node->graph->opset : 17;
}

static bool
static_dims (const PlValue *v, int64_t *dims)
{
  return v && pl_shape_get_dims (&v->shape, dims);
}

/* --- reductions: which rows ------------------------------------------------------- */

/* Softmax family before opset 13 works on the flattened tail from axis. */
static bool
softmax_axes (const PlNode *node, int rank, bool *mask)
{
  bool coerce = opset_of (node) < 13;
  int a;
  if (!pl_normalize_axis (pl_node_attr_int (node, "axis", coerce ? 1 : -1), MAX (rank, 1), &a, NULL))
    return false;
  for (int k = a; k < (coerce ? rank : a + 1); k++)
    mask[k] = true;
  return true;
}

bool
pl_lower_row_axes (const PlNode *node, bool *mask)
{
  memset (mask, 0, sizeof (bool) * PL_MAX_RANK);
  PlValue *x = node->n_inputs > 0 ? node->inputs[0] : NULL;
  if (!x || !pl_shape_is_static (&x->shape) || node->body)
    return false;
  int rank = x->shape.rank;
  switch (node->op)
    {
    case PL_OP_ReduceSum: case PL_OP_ReduceMean: case PL_OP_ReduceMax: case PL_OP_ReduceMin:
    case PL_OP_ReduceProd: case PL_OP_ReduceL1: case PL_OP_ReduceL2: case PL_OP_ReduceLogSum:
    case PL_OP_ReduceLogSumExp: case PL_OP_ReduceSumSquare:
      {
        g_autofree int64_t *axes = NULL;
        int n = 0;
        if (node->n_inputs > 1 && node->inputs[1])
          {
            if (!pl_input_const_ints (node, 1, &axes, &n))
              return false;
          }
        else
          {
            const int64_t *v;
            if (pl_node_attr_ints (node, "axes", &v, &n))
              axes = g_memdup2 (v, sizeof (int64_t) * MAX (n, 1));
          }
        if (n == 0)
          {
            if (pl_node_attr_int (node, "noop_with_empty_axes", 0))
              return false;
            for (int k = 0; k < rank; k++)
              mask[k] = true;
            return true;
          }
        for (int i = 0; i < n; i++)
          {
            int a;
            if (!pl_normalize_axis (axes[i], MAX (rank, 1), &a, NULL))
              return false;
            mask[a] = true;
          }
        return true;
      }
    case PL_OP_ArgMax:
    case PL_OP_ArgMin:
      {
        int a;
        if (!pl_normalize_axis (pl_node_attr_int (node, "axis", 0), MAX (rank, 1), &a, NULL))
          return false;
        mask[a] = true;
        return true;
      }
    case PL_OP_Softmax:
    case PL_OP_LogSoftmax:
    case PL_OP_Hardmax:
      return softmax_axes (node, rank, mask);
    case PL_OP_LayerNormalization:
      {
        int a;
        if (!pl_normalize_axis (pl_node_attr_int (node, "axis", -1), MAX (rank, 1), &a, NULL))
          return false;
        for (int k = a; k < rank; k++)
          mask[k] = true;
        return true;
      }
    default:
      return false;
    }
}

/* Whether idx (over a tensor of rank/dims) names the current row: the kept
 * coordinates of D, the reduced ones 0 (keepdims) or dropped. These two
 * compare logical multi-indices (row-major linearized only to compare them
 * as one expression), so layouts play no part. */
static bool
at_row (PlLower *L, int rank, const int64_t *dims, const PlIdx *const *idx)
{
  const PlIdx *want[PL_MAX_RANK];
  int n = 0;
  bool keep = rank == L->rank;
  for (int k = 0; k < L->rank; k++)
    {
      if (!L->reduced[k])
        {
          if (n >= rank)
            return false;
          want[n++] = L->coords[k];
        }
      else if (keep)
        want[n++] = pl_idx_const (L->arena, 0);
    }
  if (n != rank)
    return false;
  return pl_idx_linearize (L->arena, rank, idx, dims) == pl_idx_linearize (L->arena, rank, want, dims);
}

/* Whether idx (over D) is the current element. */
static bool
at_elem (PlLower *L, const PlIdx *const *idx)
{
  return pl_idx_linearize (L->arena, L->rank, idx, L->dims) ==
         pl_idx_linearize (L->arena, L->rank, L->coords, L->dims);
}

/* The node's input 0 must be D and reduce D's reduced axes. */
static bool
same_rows (PlLower *L, const PlNode *node)
{
  bool mask[PL_MAX_RANK];
  int64_t dims[PL_MAX_RANK];
  if (!L->rows || !pl_lower_row_axes (node, mask) || !static_dims (node->inputs[0], dims) ||
      node->inputs[0]->shape.rank != L->rank)
    return false;
  for (int k = 0; k < L->rank; k++)
    if (dims[k] != L->dims[k] || (mask[k] && dims[k] != 1) != (L->reduced[k] && L->dims[k] != 1))
      return false;
  return true;
}

/* The row's size (elements reduced per row). */
static int64_t
row_size (PlLower *L)
{
  int64_t n = 1;
  for (int k = 0; k < L->rank; k++)
    if (L->reduced[k])
      n *= L->dims[k];
  return n;
}

/* Memoized per node: the instruction of output `out` of a reduction node. */
static int
node_memo (PlLower *L, const PlNode *node, int out, int instr)
{
  g_autofree char *key = g_strdup_printf ("%u:%d", node->id, out);
  if (instr >= 0)
    g_hash_table_insert (L->node_reductions, g_steal_pointer (&key), GINT_TO_POINTER (instr + 1));
  else
    instr = GPOINTER_TO_INT (g_hash_table_lookup (L->node_reductions, key)) - 1;
  return instr;
}

static int
cf (PlLower *L, int like, double v)
{
  return pl_lower_const (L, pl_lower_dtype (L, like), v);
}

/* Reduce*: the row result. */
static int
lower_reduce (PlLower *L, const PlNode *node, int x)
{
  PlDType t = pl_lower_dtype (L, x);
  bool fl = pl_dtype_is_float (t);
  int64_t n = row_size (L);
  switch (node->op)
    {
    case PL_OP_ReduceSum:
      return pl_lower_reduce (L, PL_RED_SUM, x, t, false);
    case PL_OP_ReduceMean:
      {
        int s = pl_lower_reduce (L, PL_RED_SUM, x, t, false);
        return pl_lower_binary (L, PL_SOP_DIV, s, cf (L, s, (double) n));
      }
    case PL_OP_ReduceMax:
      return pl_lower_reduce (L, PL_RED_MAX, x, t, false);
    case PL_OP_ReduceMin:
      return pl_lower_reduce (L, PL_RED_MIN, x, t, false);
    case PL_OP_ReduceProd:
      return pl_lower_reduce (L, PL_RED_PROD, x, t, false);
    case PL_OP_ReduceL1:
      return pl_lower_reduce (L, PL_RED_SUM, pl_lower_unary (L, PL_SOP_ABS, x), t, false);
    case PL_OP_ReduceSumSquare:
      return pl_lower_reduce (L, PL_RED_SUM, pl_lower_binary (L, PL_SOP_MUL, x, x), t, false);
    default:
      break;
    }
  if (!fl)
    return pl_lower_fail (L, "%s of integers is not generated", node->op_type);
  switch (node->op)
    {
    case PL_OP_ReduceL2:
      return pl_lower_unary (L, PL_SOP_SQRT,
                             pl_lower_reduce (L, PL_RED_SUM, pl_lower_binary (L, PL_SOP_MUL, x, x), t, false));
    case PL_OP_ReduceLogSum:
      return pl_lower_unary (L, PL_SOP_LOG, pl_lower_reduce (L, PL_RED_SUM, x, t, false));
    case PL_OP_ReduceLogSumExp:
      {
        int m = pl_lower_reduce (L, PL_RED_MAX, x, t, false);
        int s = pl_lower_reduce (L, PL_RED_SUM, pl_lower_unary (L, PL_SOP_EXP, pl_lower_binary (L, PL_SOP_SUB, x, m)),
                                 t, false);
        return pl_lower_binary (L, PL_SOP_ADD, m, pl_lower_unary (L, PL_SOP_LOG, s));
      }
    default:
      return pl_lower_fail (L, "%s is not a row reduction", node->op_type);
    }
}

/* LayerNormalization's outputs: 0 Y, 1 Mean, 2 InvStdDev. */
static int
lower_layer_norm (PlLower *L, const PlNode *node, int out, const PlIdx *const *idx)
{
  int cached = node_memo (L, node, out, -1);
  if (cached >= 0 && out != 0)
    return cached;
  int x = pl_lower_value (L, node->inputs[0], L->coords);
  PlDType t = pl_lower_dtype (L, x);
  int n = cf (L, x, (double) row_size (L));
  int mean = pl_lower_binary (L, PL_SOP_DIV, pl_lower_reduce (L, PL_RED_SUM, x, t, false), n);
  int d = pl_lower_binary (L, PL_SOP_SUB, x, mean);
  int var = pl_lower_binary (L, PL_SOP_DIV, pl_lower_reduce (L, PL_RED_SUM, pl_lower_binary (L, PL_SOP_MUL, d, d), t, false), n);
  int inv = pl_lower_unary (L, PL_SOP_RECIP, pl_lower_unary (L, PL_SOP_SQRT,
                            pl_lower_binary (L, PL_SOP_ADD, var, cf (L, x, pl_node_attr_float (node, "epsilon", 1e-5f)))));
  if (out == 1 || out == 2)
    {
      PlDType stash = node->outputs[out]->dtype;
      int r = pl_lower_cast (L, out == 1 ? mean : inv, stash);
      return node_memo (L, node, out, r);
    }
  int y = pl_lower_binary (L, PL_SOP_MUL, d, inv);
  for (int i = 1; i <= 2 && i < node->n_inputs; i++)
    {
      PlValue *p = node->inputs[i];
      int64_t pd[PL_MAX_RANK];
      if (!p)
        continue;
      if (!static_dims (p, pd))
        return pl_lower_fail (L, "LayerNormalization parameters need static shapes");
      const PlIdx *pi[PL_MAX_RANK];
      pl_lower_broadcast_index (L, idx, L->rank, p->shape.rank, pd, pi);
      int pv = pl_lower_value (L, p, pi);
      y = pl_lower_binary (L, i == 1 ? PL_SOP_MUL : PL_SOP_ADD, y, pv);
    }
  return y;
}

/* Outputs of the reductions and of the ops built around them. */
static int
lower_row_op (PlLower *L, const PlNode *node, int out, PlValue *v, const PlIdx *const *idx)
{
  int64_t vd[PL_MAX_RANK];
  if (!same_rows (L, node))
    return pl_lower_fail (L, "%s reduces other rows than the kernel", node->name);
  static_dims (v, vd);
  bool elem = node->op == PL_OP_Softmax || node->op == PL_OP_LogSoftmax || node->op == PL_OP_Hardmax ||
              (node->op == PL_OP_LayerNormalization && out == 0);
  if (elem ? !at_elem (L, idx) : !at_row (L, v->shape.rank, vd, idx))
    return pl_lower_fail (L, "%s's result is read at another row than its own", node->name);

  if (node->op == PL_OP_LayerNormalization)
    return lower_layer_norm (L, node, out, idx);

  int cached = node_memo (L, node, 0, -1);
  if (cached >= 0)
    return cached;
  int x = pl_lower_value (L, node->inputs[0], L->coords);
  PlDType t = pl_lower_dtype (L, x);
  int r;
  switch (node->op)
    {
    case PL_OP_ArgMax:
    case PL_OP_ArgMin:
      r = pl_lower_reduce (L, node->op == PL_OP_ArgMax ? PL_RED_ARGMAX : PL_RED_ARGMIN, x, PL_DTYPE_I64,
                           pl_node_attr_int (node, "select_last_index", 0) != 0);
      break;
    case PL_OP_Softmax:
    case PL_OP_LogSoftmax:
      {
        int m = pl_lower_reduce (L, PL_RED_MAX, x, t, false);
        int shifted = pl_lower_binary (L, PL_SOP_SUB, x, m);
        int e = pl_lower_unary (L, PL_SOP_EXP, shifted);
        int s = pl_lower_reduce (L, PL_RED_SUM, e, t, false);
        r = node->op == PL_OP_Softmax ? pl_lower_binary (L, PL_SOP_DIV, e, s)
            : pl_lower_binary (L, PL_SOP_SUB, shifted, pl_lower_unary (L, PL_SOP_LOG, s));
        break;
      }
    case PL_OP_Hardmax:
      {
        int a = pl_lower_reduce (L, PL_RED_ARGMAX, x, PL_DTYPE_I64, false);
        r = pl_lower_select (L, pl_lower_binary (L, PL_SOP_EQ, pl_lower_rindex (L), a), cf (L, x, 1), cf (L, x, 0));
        break;
      }
    default:
      r = lower_reduce (L, node, x);
      break;
    }
  return node_memo (L, node, 0, r);
}

/* --- elementwise ops --------------------------------------------------------------- */

void
pl_lower_broadcast_index (PlLower *L, const PlIdx *const *idx, int out_rank, int in_rank,
                          const int64_t *in_dims, const PlIdx **out)
{
  for (int k = 0; k < in_rank; k++)
    {
      int o = out_rank - in_rank + k;
      out[k] = in_dims[k] == 1 || o < 0 ? pl_idx_const (L->arena, 0) : idx[o];
    }
}

/* Input i of node at the broadcast of idx (node's output of rank out_rank). */
static int
operand (PlLower *L, const PlNode *node, int i, int out_rank, const PlIdx *const *idx)
{
  PlValue *in = i < node->n_inputs ? node->inputs[i] : NULL;
  int64_t d[PL_MAX_RANK];
  if (!in)
    return pl_lower_fail (L, "%s: input %d is missing", node->name, i);
  if (!static_dims (in, d))
    return pl_lower_fail (L, "%s: input %d has no static shape", node->name, i);
  const PlIdx *bi[PL_MAX_RANK];
  pl_lower_broadcast_index (L, idx, out_rank, in->shape.rank, d, bi);
  return pl_lower_value (L, in, bi);
}

static int
lower_unary (PlLower *L, const PlNode *node, int x)
{
  PlDType t = pl_lower_dtype (L, x);
  bool fl = pl_dtype_is_float (t);
  switch (node->op)
    {
    case PL_OP_Abs:  return pl_lower_unary (L, PL_SOP_ABS, x);
    case PL_OP_Neg:  return pl_lower_unary (L, PL_SOP_NEG, x);
    case PL_OP_Relu: return pl_lower_binary (L, PL_SOP_MAX, x, cf (L, x, 0));
    case PL_OP_Sign: return pl_lower_unary (L, PL_SOP_SIGN, x);
    case PL_OP_Not:  return pl_lower_unary (L, PL_SOP_NOT, x);
    default: break;
    }
  if (!fl)
    return pl_lower_fail (L, "%s of %s is not generated", node->op_type, pl_dtype_name (t));
  static const struct { PlOp op; PlScalarOp sop; } direct[] = {
    { PL_OP_Exp, PL_SOP_EXP }, { PL_OP_Log, PL_SOP_LOG }, { PL_OP_Sqrt, PL_SOP_SQRT },
    { PL_OP_Reciprocal, PL_SOP_RECIP }, { PL_OP_Sigmoid, PL_SOP_SIGMOID }, { PL_OP_Tanh, PL_SOP_TANH },
    { PL_OP_Erf, PL_SOP_ERF }, { PL_OP_Sin, PL_SOP_SIN }, { PL_OP_Cos, PL_SOP_COS }, { PL_OP_Tan, PL_SOP_TAN },
    { PL_OP_Asin, PL_SOP_ASIN }, { PL_OP_Acos, PL_SOP_ACOS }, { PL_OP_Atan, PL_SOP_ATAN },
    { PL_OP_Sinh, PL_SOP_SINH }, { PL_OP_Cosh, PL_SOP_COSH }, { PL_OP_Asinh, PL_SOP_ASINH },
    { PL_OP_Acosh, PL_SOP_ACOSH }, { PL_OP_Atanh, PL_SOP_ATANH }, { PL_OP_Floor, PL_SOP_FLOOR },
    { PL_OP_Ceil, PL_SOP_CEIL }, { PL_OP_Round, PL_SOP_ROUND }, { PL_OP_IsNaN, PL_SOP_ISNAN },
  };
  for (size_t k = 0; k < G_N_ELEMENTS (direct); k++)
    if (direct[k].op == node->op)
      return pl_lower_unary (L, direct[k].sop, x);

  int zero = cf (L, x, 0), one = cf (L, x, 1);
  double alpha;
  switch (node->op)
    {
    case PL_OP_IsInf:
      {
        int r = pl_lower_unary (L, PL_SOP_ISINF, x);
        if (r >= 0)
          g_array_index (L->loop->instrs, PlInstr, r).imm_i =
            (pl_node_attr_int (node, "detect_negative", 1) ? 1 : 0) | (pl_node_attr_int (node, "detect_positive", 1) ? 2 : 0);
        return r;
      }
    case PL_OP_LeakyRelu:
      alpha = pl_node_attr_float (node, "alpha", 0.01f);
      return pl_lower_select (L, pl_lower_binary (L, PL_SOP_LT, x, zero),
                              pl_lower_binary (L, PL_SOP_MUL, cf (L, x, alpha), x), x);
    case PL_OP_Elu:
      alpha = pl_node_attr_float (node, "alpha", 1.0f);
      return pl_lower_select (L, pl_lower_binary (L, PL_SOP_LT, x, zero),
                              pl_lower_binary (L, PL_SOP_MUL, cf (L, x, alpha), pl_lower_unary (L, PL_SOP_EXPM1, x)), x);
    case PL_OP_Selu:
      {
        int a = cf (L, x, pl_node_attr_float (node, "alpha", 1.67326319217681884765625f));
        int g = cf (L, x, pl_node_attr_float (node, "gamma", 1.05070102214813232421875f));
        int neg = pl_lower_binary (L, PL_SOP_MUL, g, pl_lower_binary (L, PL_SOP_SUB,
                                   pl_lower_binary (L, PL_SOP_MUL, a, pl_lower_unary (L, PL_SOP_EXP, x)), a));
        return pl_lower_select (L, pl_lower_binary (L, PL_SOP_LE, x, zero), neg, pl_lower_binary (L, PL_SOP_MUL, g, x));
      }
    case PL_OP_Celu:
      {
        int a = cf (L, x, pl_node_attr_float (node, "alpha", 1.0f));
        int e = pl_lower_unary (L, PL_SOP_EXPM1, pl_lower_binary (L, PL_SOP_DIV, x, a));
        return pl_lower_binary (L, PL_SOP_ADD, pl_lower_binary (L, PL_SOP_MAX, zero, x),
                                pl_lower_binary (L, PL_SOP_MIN, zero, pl_lower_binary (L, PL_SOP_MUL, a, e)));
      }
    case PL_OP_Gelu:
      {
        const char *approx = pl_node_attr_string (node, "approximate", "none");
        int inner;
        if (strcmp (approx, "tanh") == 0)
          {
            int x3 = pl_lower_binary (L, PL_SOP_MUL, pl_lower_binary (L, PL_SOP_MUL, x, x), x);
            int u = pl_lower_binary (L, PL_SOP_ADD, x, pl_lower_binary (L, PL_SOP_MUL, cf (L, x, 0.044715), x3));
            inner = pl_lower_unary (L, PL_SOP_TANH, pl_lower_binary (L, PL_SOP_MUL, cf (L, x, sqrt (2.0 / G_PI)), u));
          }
        else if (strcmp (approx, "none") == 0)
          inner = pl_lower_unary (L, PL_SOP_ERF, pl_lower_binary (L, PL_SOP_DIV, x, cf (L, x, G_SQRT2)));
        else
          return pl_lower_fail (L, "Gelu approximate='%s'", approx);
        return pl_lower_binary (L, PL_SOP_MUL, pl_lower_binary (L, PL_SOP_MUL, cf (L, x, 0.5), x),
                                pl_lower_binary (L, PL_SOP_ADD, one, inner));
      }
    case PL_OP_Softplus:
    case PL_OP_Mish:
      {
        /* log(1 + e^x) without overflow */
        int pos = pl_lower_binary (L, PL_SOP_ADD, x, pl_lower_unary (L, PL_SOP_LOG1P,
                                   pl_lower_unary (L, PL_SOP_EXP, pl_lower_unary (L, PL_SOP_NEG, x))));
        int neg = pl_lower_unary (L, PL_SOP_LOG1P, pl_lower_unary (L, PL_SOP_EXP, x));
        int sp = pl_lower_select (L, pl_lower_binary (L, PL_SOP_GT, x, zero), pos, neg);
        if (node->op == PL_OP_Softplus)
          return sp;
        return pl_lower_binary (L, PL_SOP_MUL, x, pl_lower_unary (L, PL_SOP_TANH, sp));
      }
    case PL_OP_Softsign:
      return pl_lower_binary (L, PL_SOP_DIV, x, pl_lower_binary (L, PL_SOP_ADD, one, pl_lower_unary (L, PL_SOP_ABS, x)));
    case PL_OP_HardSigmoid:
      {
        int a = cf (L, x, pl_node_attr_float (node, "alpha", 0.2f));
        int b = cf (L, x, pl_node_attr_float (node, "beta", 0.5f));
        int lin = pl_lower_binary (L, PL_SOP_ADD, pl_lower_binary (L, PL_SOP_MUL, a, x), b);
        return pl_lower_binary (L, PL_SOP_MAX, zero, pl_lower_binary (L, PL_SOP_MIN, one, lin));
      }
    case PL_OP_HardSwish:
      {
        int lin = pl_lower_binary (L, PL_SOP_ADD, pl_lower_binary (L, PL_SOP_DIV, x, cf (L, x, 6.0)), cf (L, x, 0.5));
        return pl_lower_binary (L, PL_SOP_MUL, x,
                                pl_lower_binary (L, PL_SOP_MAX, zero, pl_lower_binary (L, PL_SOP_MIN, one, lin)));
      }
    case PL_OP_ThresholdedRelu:
      alpha = pl_node_attr_float (node, "alpha", 1.0f);
      return pl_lower_select (L, pl_lower_binary (L, PL_SOP_GT, x, cf (L, x, alpha)), x, zero);
    case PL_OP_Shrink:
      {
        int lambd = cf (L, x, pl_node_attr_float (node, "lambd", 0.5f));
        int bias = cf (L, x, pl_node_attr_float (node, "bias", 0.0f));
        int hi = pl_lower_select (L, pl_lower_binary (L, PL_SOP_GT, x, lambd), pl_lower_binary (L, PL_SOP_SUB, x, bias), zero);
        return pl_lower_select (L, pl_lower_binary (L, PL_SOP_LT, x, pl_lower_unary (L, PL_SOP_NEG, lambd)),
                                pl_lower_binary (L, PL_SOP_ADD, x, bias), hi);
      }
    default:
      return pl_lower_fail (L, "%s is not generated", node->op_type);
    }
}

/* An integer divisor b, checked: a zero fails the run as the reference's
 * "integer division by zero" does (the division itself then yields 0). */
static int
nonzero_divisor (PlLower *L, const PlNode *node, int b)
{
  int zero = pl_lower_binary (L, PL_SOP_EQ, b, pl_lower_const (L, pl_lower_dtype (L, b), 0));
  g_autofree char *message = g_strdup_printf ("%s '%s': an integer division by zero", node->op_type, node->name);
  int check = pl_lower_check (L, zero, pl_lower_cast (L, b, PL_DTYPE_I64), message);
  return pl_lower_select (L, check, b, b);   /* b itself, once the check has run */
}

/* The binary and variadic ops: a left fold over the (broadcast) inputs. */
static int
lower_fold (PlLower *L, const PlNode *node, int rank, const PlIdx *const *idx)
{
  if (opset_of (node) < 7 && pl_node_attr_int (node, "broadcast", 0))
    return pl_lower_fail (L, "legacy broadcasting");
  int acc = operand (L, node, 0, rank, idx);
  PlDType t = pl_lower_dtype (L, acc);
  bool fl = pl_dtype_is_float (t);
  for (int i = 1; i < node->n_inputs && acc >= 0; i++)
    {
      int b = operand (L, node, i, rank, idx);
      if (b < 0)
        return -1;
      switch (node->op)
        {
        case PL_OP_Add: case PL_OP_Sum: case PL_OP_Mean:
          acc = pl_lower_binary (L, PL_SOP_ADD, acc, b);
          break;
        case PL_OP_Sub: acc = pl_lower_binary (L, PL_SOP_SUB, acc, b); break;
        case PL_OP_Mul: acc = pl_lower_binary (L, PL_SOP_MUL, acc, b); break;
        case PL_OP_Max: acc = pl_lower_binary (L, PL_SOP_MAX, acc, b); break;
        case PL_OP_Min: acc = pl_lower_binary (L, PL_SOP_MIN, acc, b); break;
        case PL_OP_Equal: acc = pl_lower_binary (L, PL_SOP_EQ, acc, b); break;
        case PL_OP_Less: acc = pl_lower_binary (L, PL_SOP_LT, acc, b); break;
        case PL_OP_LessOrEqual: acc = pl_lower_binary (L, PL_SOP_LE, acc, b); break;
        case PL_OP_Greater: acc = pl_lower_binary (L, PL_SOP_GT, acc, b); break;
        case PL_OP_GreaterOrEqual: acc = pl_lower_binary (L, PL_SOP_GE, acc, b); break;
        case PL_OP_And: acc = pl_lower_binary (L, PL_SOP_AND, acc, b); break;
        case PL_OP_Or: acc = pl_lower_binary (L, PL_SOP_OR, acc, b); break;
        case PL_OP_Xor: acc = pl_lower_binary (L, PL_SOP_XOR, acc, b); break;
        case PL_OP_Div:
          acc = pl_lower_binary (L, PL_SOP_DIV, acc, fl ? b : nonzero_divisor (L, node, b));
          break;
        case PL_OP_Mod:
          acc = pl_lower_mod (L, acc, fl ? b : nonzero_divisor (L, node, b), pl_node_attr_int (node, "fmod", 0) != 0);
          break;
        case PL_OP_Pow:
          if (!fl)
            return pl_lower_fail (L, "integer Pow is not generated");
          if (pl_lower_dtype (L, b) != t)
            b = pl_lower_cast (L, b, t);
          acc = pl_lower_binary (L, PL_SOP_POW, acc, b);
          break;
        case PL_OP_PRelu:
          if (!fl)
            return pl_lower_fail (L, "integer PRelu is not generated");
          acc = pl_lower_select (L, pl_lower_binary (L, PL_SOP_LT, acc, cf (L, acc, 0)),
                                 pl_lower_binary (L, PL_SOP_MUL, b, acc), acc);
          break;
        default:
          return pl_lower_fail (L, "%s is not generated", node->op_type);
        }
    }
  if (node->op == PL_OP_Mean)
    {
      if (!fl)
        return pl_lower_fail (L, "integer Mean");
      acc = pl_lower_binary (L, PL_SOP_DIV, acc, cf (L, acc, node->n_inputs));
    }
  return acc;
}

static int
lower_clip (PlLower *L, const PlNode *node, int rank, const PlIdx *const *idx)
{
  int x = operand (L, node, 0, rank, idx);
  if (x < 0)
    return -1;
  int lo = -1, hi = -1;
  if (opset_of (node) < 11)
    {
      if (!pl_dtype_is_float (pl_lower_dtype (L, x)))
        return pl_lower_fail (L, "legacy Clip of integers");
      lo = cf (L, x, pl_node_attr_float (node, "min", -G_MAXFLOAT));
      hi = cf (L, x, pl_node_attr_float (node, "max", G_MAXFLOAT));
    }
  else
    {
      const PlIdx *zero[PL_MAX_RANK];
      for (int k = 0; k < PL_MAX_RANK; k++)
        zero[k] = pl_idx_const (L->arena, 0);
      if (node->n_inputs > 1 && node->inputs[1])
        lo = pl_lower_value (L, node->inputs[1], zero);
      if (node->n_inputs > 2 && node->inputs[2])
        hi = pl_lower_value (L, node->inputs[2], zero);
    }
  /* compare rather than min/max so NaN passes through; min > max gives max */
  if (lo >= 0)
    x = pl_lower_select (L, pl_lower_binary (L, PL_SOP_LT, x, lo), lo, x);
  if (hi >= 0)
    x = pl_lower_select (L, pl_lower_binary (L, PL_SOP_GT, x, hi), hi, x);
  return x;
}

/* Inference BatchNormalization: per-channel (dim 1) parameters. */
static int
lower_batchnorm (PlLower *L, const PlNode *node, int rank, const PlIdx *const *idx)
{
  bool training = opset_of (node) >= 14 ? pl_node_attr_int (node, "training_mode", 0) != 0
                                        : node->n_outputs > 1 && node->outputs[1];
  if (training || rank < 2 || node->n_inputs < 5)
    return pl_lower_fail (L, "training BatchNormalization");
  int x = pl_lower_value (L, node->inputs[0], idx);
  if (x < 0)
    return -1;
  PlDType t = pl_lower_dtype (L, x);
  int p[5];
  for (int i = 1; i < 5; i++)
    {
      int64_t d[PL_MAX_RANK];
      PlValue *in = node->inputs[i];
      if (!in || !static_dims (in, d) || in->shape.rank != 1 || d[0] != node->inputs[0]->shape.dims[1].size)
        return pl_lower_fail (L, "BatchNormalization parameters must be [C]");
      const PlIdx *ci[1] = { idx[1] };
      p[i] = pl_lower_value (L, in, ci);
      if (p[i] >= 0 && pl_lower_dtype (L, p[i]) != t)
        p[i] = pl_lower_cast (L, p[i], t);
    }
  int inv = pl_lower_unary (L, PL_SOP_RECIP, pl_lower_unary (L, PL_SOP_SQRT,
                            pl_lower_binary (L, PL_SOP_ADD, p[4], cf (L, x, pl_node_attr_float (node, "epsilon", 1e-5f)))));
  int xn = pl_lower_binary (L, PL_SOP_MUL, pl_lower_binary (L, PL_SOP_SUB, x, p[3]), inv);
  return pl_lower_binary (L, PL_SOP_ADD, pl_lower_binary (L, PL_SOP_MUL, p[1], xn), p[2]);
}

/* --- quantization -------------------------------------------------------------------- */

/* Input i of a QuantizeLinear / DequantizeLinear (a scale or zero point) at
 * the element idx of its rank-`rank` output: its one value, or its value
 * at idx[axis] when it has one per index along the axis. */
static int
quant_param (PlLower *L, const PlNode *node, int i, int rank, const PlIdx *const *idx)
{
  PlValue *p = node->inputs[i], *x = node->inputs[0];
  int64_t d[PL_MAX_RANK], xd[PL_MAX_RANK];
  if (!static_dims (p, d) || !static_dims (x, xd))
    return pl_lower_fail (L, "%s: input %d has no static shape", node->name, i);
  const PlIdx *pi[PL_MAX_RANK];
  if (pl_shape_numel (&p->shape) == 1)
    {
      for (int k = 0; k < p->shape.rank; k++)
        pi[k] = pl_idx_const (L->arena, 0);
      return pl_lower_value (L, p, pi);
    }
  int64_t axis = pl_node_attr_int (node, "axis", 1);
  axis = axis < 0 ? axis + rank : axis;
  if (axis < 0 || axis >= rank || p->shape.rank != 1 || d[0] != xd[axis])
    return pl_lower_fail (L, "%s: a per-axis parameter that does not match the axis", node->name);
  pi[0] = idx[axis];
  return pl_lower_value (L, p, pi);
}

/* DequantizeLinear: (x - zero point) * scale, the difference exact in 64-bit
 * integers; QuantizeLinear: rint (x / scale) + zero point (in x's float type),
 * saturated to the output's range, NaN to the zero point (core/ops-quant.c). */
static int
lower_quant (PlLower *L, const PlNode *node, const PlValue *v, int rank, const PlIdx *const *idx)
{
  int x = pl_lower_value (L, node->inputs[0], idx), s = quant_param (L, node, 1, rank, idx);
  bool has_zp = node->n_inputs > 2 && node->inputs[2];
  int zp = has_zp ? quant_param (L, node, 2, rank, idx) : -1;
  if (x < 0 || s < 0 || (has_zp && zp < 0))
    return -1;
  if (node->op == PL_OP_DequantizeLinear)
    {
      int d = pl_lower_cast (L, x, PL_DTYPE_I64);
      if (has_zp)
        d = pl_lower_binary (L, PL_SOP_SUB, d, pl_lower_cast (L, zp, PL_DTYPE_I64));
      return pl_lower_binary (L, PL_SOP_MUL, pl_lower_cast (L, d, v->dtype), s);
    }
  PlDType t = pl_lower_dtype (L, x);
  if (!pl_dtype_is_float (t))
    return pl_lower_fail (L, "%s of %s", node->op_type, pl_dtype_name (t));
  if (pl_lower_dtype (L, s) != t)
    s = pl_lower_cast (L, s, t);
  int z = has_zp ? pl_lower_cast (L, zp, t) : cf (L, x, 0);
  int q = pl_lower_binary (L, PL_SOP_ADD, pl_lower_unary (L, PL_SOP_ROUND, pl_lower_div_exact (L, x, s)), z);
  int lo = cf (L, x, v->dtype == PL_DTYPE_I8 ? -128 : 0), hi = cf (L, x, v->dtype == PL_DTYPE_I8 ? 127 : 255);
  q = pl_lower_select (L, pl_lower_binary (L, PL_SOP_LT, q, lo), lo, q);
  q = pl_lower_select (L, pl_lower_binary (L, PL_SOP_GT, q, hi), hi, q);
  q = pl_lower_select (L, pl_lower_unary (L, PL_SOP_ISNAN, q), z, q);
  return pl_lower_cast (L, q, v->dtype);
}

/* --- view ops ----------------------------------------------------------------------- */

/* Slice and Split: a window of the input, offset (and strided) along some
 * axes. A negative step reads the axis backwards, start - |step| c: index
 * expressions have non-negative coefficients only, so that is the mirror
 * of |step| c - start (pl_idx_reflect), which is never above 0. */
static bool
window_index (PlLower *L, const PlNode *node, int out, const PlValue *v, const PlIdx *const *idx,
              const PlIdx **ii)
{
  int rank = v->shape.rank;
  int64_t start[PL_MAX_RANK], step[PL_MAX_RANK];
  if (node->op == PL_OP_Slice)
    {
      if (!pl_slice_static_window (node, start, step))
        {
          pl_lower_fail (L, "%s: starts, ends, axes or steps not constant", node->name);
          return false;
        }
    }
  else
    {
      int a;
      if (!pl_normalize_axis (pl_node_attr_int (node, "axis", 0), rank, &a, NULL))
        {
          pl_lower_fail (L, "%s: bad axis", node->name);
          return false;
        }
      for (int k = 0; k < rank; k++)
        start[k] = 0, step[k] = 1;
      for (int i = 0; i < out; i++)
        {
          if (!node->outputs[i] || !pl_dim_is_static (node->outputs[i]->shape.dims[a]))
            {
              pl_lower_fail (L, "%s: part %d's size is not known", node->name, i);
              return false;
            }
          start[a] += node->outputs[i]->shape.dims[a].size;
        }
    }
  for (int k = 0; k < rank; k++)
    ii[k] = step[k] > 0 ? pl_idx_add (L->arena, pl_idx_const (L->arena, start[k]), pl_idx_mul (L->arena, idx[k], step[k]))
            : pl_idx_reflect (L->arena, pl_idx_mul (L->arena, idx[k], -step[k]), start[k],
                              node->inputs[0]->shape.dims[k].size);
  return true;
}

/* Resize, nearest, by integer factors (pl_resize_nearest_form): source
 * element b + (m c + o) / q along each axis. */
static bool
resize_index (PlLower *L, const PlNode *node, const PlValue *v, const PlIdx *const *idx, const PlIdx **ii)
{
  PlResizeAxis f[PL_MAX_RANK];
  if (!pl_resize_nearest_form (node, f))
    {
      pl_lower_fail (L, "%s: not a nearest Resize by integer factors of constant scales", node->name);
      return false;
    }
  PlIdxArena *A = L->arena;
  for (int k = 0; k < v->shape.rank; k++)
    ii[k] = pl_idx_add (A, pl_idx_const (A, f[k].b),
                        pl_idx_div (A, pl_idx_add (A, pl_idx_mul (A, idx[k], f[k].m), pl_idx_const (A, f[k].o)),
                                    f[k].q));
  return true;
}

/* DepthToSpace and SpaceToDepth (rank 4, block b): a reshape, transpose
 * and reshape in one index function. DepthToSpace's output (n, c, y, x)
 * reads channel (i b + j) C' + c (DCR) or c b^2 + i b + j (CRD) at (y / b,
 * x / b), i = y % b, j = x % b; SpaceToDepth's (n, o, h, w), o = (i b + j)
 * C + c, reads (n, c, h b + i, w b + j). */
static bool
space_depth_index (PlLower *L, const PlNode *node, const int64_t *id, const PlIdx *const *idx, const PlIdx **ii)
{
  PlIdxArena *A = L->arena;
  int64_t b = pl_node_attr_int (node, "blocksize", 0);
  if (b < 1)
    {
      pl_lower_fail (L, "%s: bad blocksize", node->name);
      return false;
    }
  ii[0] = idx[0];
  if (node->op == PL_OP_DepthToSpace)
    {
      int64_t cc = id[1] / (b * b);
      const PlIdx *i = pl_idx_mod (A, idx[2], b), *j = pl_idx_mod (A, idx[3], b);
      const PlIdx *ij = pl_idx_add (A, pl_idx_mul (A, i, b), j);
      ii[1] = strcmp (pl_node_attr_string (node, "mode", "DCR"), "CRD") == 0
              ? pl_idx_add (A, pl_idx_mul (A, idx[1], b * b), ij)
              : pl_idx_add (A, pl_idx_mul (A, ij, cc), idx[1]);
      ii[2] = pl_idx_div (A, idx[2], b);
      ii[3] = pl_idx_div (A, idx[3], b);
    }
  else
    {
      int64_t c = id[1];
      ii[1] = pl_idx_mod (A, idx[1], c);
      ii[2] = pl_idx_add (A, pl_idx_mul (A, idx[2], b), pl_idx_div (A, idx[1], b * c));
      ii[3] = pl_idx_add (A, pl_idx_mul (A, idx[3], b), pl_idx_mod (A, pl_idx_div (A, idx[1], c), b));
    }
  return true;
}

static int
lower_view (PlLower *L, const PlNode *node, int out, PlValue *v, const PlIdx *const *idx)
{
  PlValue *in = node->inputs[0];
  int64_t od[PL_MAX_RANK], id[PL_MAX_RANK];
  if (!static_dims (v, od) || !static_dims (in, id))
    return pl_lower_fail (L, "%s without static shapes", node->name);
  const PlIdx *ii[PL_MAX_RANK];
  switch (node->op)
    {
    case PL_OP_Transpose:
      {
        int r = in->shape.rank;
        int64_t perm[PL_MAX_RANK];
        const int64_t *p;
        int n;
        if (pl_node_attr_ints (node, "perm", &p, &n))
          {
            if (n != r)
              return pl_lower_fail (L, "bad perm");
            memcpy (perm, p, sizeof (int64_t) * n);
          }
        else
          for (int k = 0; k < r; k++)
            perm[k] = r - 1 - k;
        for (int k = 0; k < r; k++)
          {
            if (perm[k] < 0 || perm[k] >= r)
              return pl_lower_fail (L, "bad perm");
            ii[perm[k]] = idx[k];
          }
        break;
      }
    case PL_OP_Expand:
      pl_lower_broadcast_index (L, idx, v->shape.rank, in->shape.rank, id, ii);
      break;
    case PL_OP_Slice:
    case PL_OP_Split:
      if (!window_index (L, node, out, v, idx, ii))
        return -1;
      break;
    case PL_OP_Resize:
      if (!resize_index (L, node, v, idx, ii))
        return -1;
      break;
    case PL_OP_Tile:   /* each output coordinate wraps around its input axis */
      for (int k = 0; k < in->shape.rank; k++)
        ii[k] = pl_idx_mod (L->arena, idx[k], id[k]);
      break;
    case PL_OP_DepthToSpace:
    case PL_OP_SpaceToDepth:
      if (in->shape.rank != 4 || !space_depth_index (L, node, id, idx, ii))
        return in->shape.rank != 4 ? pl_lower_fail (L, "%s: rank %d", node->name, in->shape.rank) : -1;
      break;
    default: /* Reshape, Flatten, Squeeze, Unsqueeze, Identity: same elements in the same order */
      pl_idx_delinearize (L->arena, pl_idx_linearize (L->arena, v->shape.rank, idx, od), in->shape.rank, id, ii);
      break;
    }
  return pl_lower_value (L, in, ii);
}

/* --- dispatch ------------------------------------------------------------------------ */

static int
lower_node_output (PlLower *L, PlNode *node, int out, PlValue *v, const PlIdx *const *idx)
{
  int rank = v->shape.rank;
  switch (node->op)
    {
    case PL_OP_Reshape: case PL_OP_Flatten: case PL_OP_Squeeze: case PL_OP_Unsqueeze:
    case PL_OP_Resize:
      if (strcmp (pl_node_attr_string (node, "mode", "nearest"), "nearest") != 0)
        return pl_lower_resize_sample (L, node, v, idx);   /* linear, cubic */
      return lower_view (L, node, out, v, idx);
    case PL_OP_Transpose: case PL_OP_Expand: case PL_OP_Identity: case PL_OP_Slice: case PL_OP_Split:
    case PL_OP_Tile: case PL_OP_DepthToSpace: case PL_OP_SpaceToDepth:
      return lower_view (L, node, out, v, idx);
    case PL_OP_GatherElements:
      return pl_lower_gather_elements (L, node, v, idx);
    case PL_OP_GridSample:
      return pl_lower_grid_sample (L, node, v, idx);
    case PL_OP_RoiAlign:
      return pl_lower_roi_align (L, node, v, idx);
    case PL_OP_ReverseSequence:
      return pl_lower_reverse_sequence (L, node, v, idx);
    case PL_OP_OneHot:
      return pl_lower_onehot (L, node, v, idx);
    case PL_OP_Concat:
      return pl_lower_concat (L, node, v, idx);
    case PL_OP_Gather:
      return pl_lower_gather (L, node, v, idx);
    case PL_OP_GatherND:
      return pl_lower_gather_nd (L, node, v, idx);
    case PL_OP_Pad:
      return pl_lower_pad (L, node, v, idx);
    case PL_OP_Trilu:
      return pl_lower_trilu (L, node, v, idx);
    case PL_OP_LayoutTransform:
      /* logically the identity; the loads and stores put the layouts in */
      return pl_lower_value (L, node->inputs[0], idx);
    case PL_OP_Dropout:
      {
        PlTensor *mode = node->n_inputs > 2 && node->inputs[2] ? pl_value_constant (node->inputs[2]) : NULL;
        if (node->n_inputs > 2 && node->inputs[2] && (!mode || mode->numel < 1 || pl_tensor_get_i64 (mode, 0)))
          return pl_lower_fail (L, "training Dropout");
        if (out == 1)
          return pl_lower_const (L, v->dtype, 1);
        return pl_lower_value (L, node->inputs[0], idx);
      }
    case PL_OP_ReduceSum: case PL_OP_ReduceMean: case PL_OP_ReduceMax: case PL_OP_ReduceMin:
    case PL_OP_ReduceProd: case PL_OP_ReduceL1: case PL_OP_ReduceL2: case PL_OP_ReduceLogSum:
    case PL_OP_ReduceLogSumExp: case PL_OP_ReduceSumSquare:
      {
        bool mask[PL_MAX_RANK];
        if (!pl_lower_row_axes (node, mask) && pl_node_attr_int (node, "noop_with_empty_axes", 0))
          return pl_lower_value (L, node->inputs[0], idx);   /* no axes: a copy */
        return lower_row_op (L, node, out, v, idx);
      }
    case PL_OP_ArgMax: case PL_OP_ArgMin: case PL_OP_Softmax: case PL_OP_LogSoftmax: case PL_OP_Hardmax:
    case PL_OP_LayerNormalization:
      return lower_row_op (L, node, out, v, idx);
    case PL_OP_Where:
      {
        int c = operand (L, node, 0, rank, idx), a = operand (L, node, 1, rank, idx), b = operand (L, node, 2, rank, idx);
        return c < 0 || a < 0 || b < 0 ? -1 : pl_lower_select (L, c, a, b);
      }
    case PL_OP_Clip:
      return lower_clip (L, node, rank, idx);
    case PL_OP_QuantizeLinear:
    case PL_OP_DequantizeLinear:
      return lower_quant (L, node, v, rank, idx);
    case PL_OP_Cast:
    case PL_OP_CastLike:
      {
        int x = operand (L, node, 0, rank, idx);
        return x < 0 ? -1 : pl_lower_cast (L, x, v->dtype);
      }
    case PL_OP_BatchNormalization:
      return lower_batchnorm (L, node, rank, idx);
    case PL_OP_Add: case PL_OP_Sub: case PL_OP_Mul: case PL_OP_Div: case PL_OP_Mod: case PL_OP_Pow: case PL_OP_Max:
    case PL_OP_Min: case PL_OP_Sum: case PL_OP_Mean: case PL_OP_Equal: case PL_OP_Less:
    case PL_OP_LessOrEqual: case PL_OP_Greater: case PL_OP_GreaterOrEqual: case PL_OP_And: case PL_OP_Or:
    case PL_OP_Xor: case PL_OP_PRelu:
      return lower_fold (L, node, rank, idx);
    default:
      break;
    }
  if (pl_op_info (node->op)->category == PL_CAT_ELEMENTWISE && node->n_inputs == 1 && node->op != PL_OP_Trilu)
    {
      int x = operand (L, node, 0, rank, idx);
      return x < 0 ? -1 : lower_unary (L, node, x);
    }
  return pl_lower_fail (L, "%s (%s) is not generated", node->name, node->op_type);
}

int
pl_lower_value (PlLower *L, PlValue *v, const PlIdx *const *idx)
{
  if (L->why)
    return -1;
  if (!v)
    return pl_lower_fail (L, "a missing value");
  if (!pl_plan_ctype (v->dtype))
    return pl_lower_fail (L, "%s values are not generated", pl_dtype_name (v->dtype));
  PlTensor *c = pl_value_constant (v);
  if (c && c->numel == 1)
    {
      if (pl_dtype_is_float (c->dtype))
        return pl_lower_const (L, c->dtype, pl_tensor_get_f64 (c, 0));
      return pl_lower_const (L, c->dtype, (double) pl_tensor_get_i64 (c, 0));
    }
  int64_t dims[PL_MAX_RANK];
  if (!static_dims (v, dims))
    return pl_lower_fail (L, "value '%s' has no static shape", v->name);
  PlNode *p = v->producer;
  bool member = p && g_hash_table_contains (L->members, p);
  if (!member || (c && p->op == PL_OP_Constant))
    return pl_lower_load (L, v, pl_lower_offset (L, v, idx));

  GString *key = g_string_new (NULL);
  g_string_append_printf (key, "v%u", v->id);
  for (int k = 0; k < v->shape.rank; k++)
    g_string_append_printf (key, "@%s", idx[k]->key);
  gpointer hit = g_hash_table_lookup (L->memo, key->str);
  if (hit)
    {
      g_string_free (key, TRUE);
      return GPOINTER_TO_INT (hit) - 1;
    }
  int out = v->producer_index;
  int r;
  if (p == L->lib_node)
    {
      /* the library's raw result (a conv writes it in its output's layout, a
       * GEMM and a ConvTranspose row-major), plus Gemm's beta * C or a
       * convolution's bias */
      PlLayout raw = p->op == PL_OP_Conv ? v->layout : PL_LAYOUT_NCHW;
      r = pl_lower_load_slot (L, L->plan->lib_slot, v->dtype, pl_lower_offset_in (L, raw, v, idx));
      if (p->n_inputs > 2 && p->inputs[2] && r >= 0)
        {
          int extra;
          if (p->op == PL_OP_Conv || p->op == PL_OP_ConvTranspose)
            {
              const PlIdx *ci[1] = { idx[1] };
              extra = pl_lower_value (L, p->inputs[2], ci);
            }
          else
            {
              extra = operand (L, p, 2, v->shape.rank, idx);
              extra = pl_lower_binary (L, PL_SOP_MUL, cf (L, r, pl_node_attr_float (p, "beta", 1.0f)), extra);
            }
          r = pl_lower_binary (L, PL_SOP_ADD, r, extra);
        }
    }
  else
    r = lower_node_output (L, p, out, v, idx);
  if (r >= 0 && pl_lower_dtype (L, r) != v->dtype)
    r = pl_lower_fail (L, "%s computes %s where %s is declared", p->name, pl_dtype_name (pl_lower_dtype (L, r)),
                       pl_dtype_name (v->dtype));
  if (r >= 0)
    g_hash_table_insert (L->memo, g_string_free (key, FALSE), GINT_TO_POINTER (r + 1));
  else
    g_string_free (key, TRUE);
  return r;
}
