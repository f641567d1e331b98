/* ops-reduce.c — reductions and the ops built around them: the ten Reduce*
 * ops, ArgMax/ArgMin, CumSum and TopK — their shape inference and reference
 * evaluation. The softmax family and the normalizations are in ops-norm.c,
 * registered from here too; the helpers both use are in
 * ops-reduce-private.h.
 *
 * Semantics follow ONNX up to opset 17; node->graph->opset (0 means 17)
 * selects the older forms: ReduceSum's `axes` attribute before opset 13,
 * the 2-D coercion of the softmax family before 13, TopK's `k` attribute
 * before 10. An axes input, where one is given, wins over the attribute, so
 * opset-18 Reduce* nodes work too.
 *
 * Two views of a tensor serve every op here:
 *  - Reduce* and MeanVarianceNormalization map each input element to its
 *    output element through strides that are 0 on the reduced axes, so one
 *    linear pass over the input accumulates every output at once;
 *  - the ops working along one axis see the tensor as [outer, n, inner] and
 *    walk the n elements of each (outer, inner) line with stride `inner`.
 * Values accumulate in double (int64, wrapping, for integer Reduce* and
 * CumSum) and are stored in the output dtype.
 */
#define G_LOG_DOMAIN "passlab"
#include "ops-reduce-private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const PlDType numeric_types[] = {
  PL_DTYPE_F32, PL_DTYPE_F16, PL_DTYPE_BF16, PL_DTYPE_F64,
  PL_DTYPE_I64, PL_DTYPE_I32, PL_DTYPE_I16, PL_DTYPE_I8,
  PL_DTYPE_U64, PL_DTYPE_U32, PL_DTYPE_U16, PL_DTYPE_U8,
  PL_DTYPE_UNDEFINED
};

static const PlDType index_types[] = { PL_DTYPE_I64, PL_DTYPE_I32, PL_DTYPE_UNDEFINED };

/* --- shared helpers -------------------------------------------------------- */

/* Output 0 gets input 0's dtype and shape: ops that keep their input's shape. */
void
pl_reduce_infer_same_as_input (PlNode *node)
{
  const PlValue *x = pl_input (node, 0);
  pl_set_output (node, 0, x->dtype, &x->shape);
}

/* Views t as [outer, n, inner] around axis. */
void
pl_reduce_split_at_axis (const PlTensor *t, int axis, int64_t *outer, int64_t *n, int64_t *inner)
{
  pl_split_at_axis (t->rank, t->dims, axis, outer, n, inner);
}

/* Integer arithmetic that wraps like the fixed-width types instead of
 * overflowing (undefined in C). */
static int64_t
wrap_add (int64_t a, int64_t b)
{
  return (int64_t) ((uint64_t) a + (uint64_t) b);
}

static int64_t
wrap_mul (int64_t a, int64_t b)
{
  return (int64_t) ((uint64_t) a * (uint64_t) b);
}

/* Sign of t[a] - t[b]: integers compared exactly through int64, floats
 * through double (a NaN compares equal to everything). */
static int
compare_elems (const PlTensor *t, int64_t a, int64_t b)
{
  if (pl_dtype_is_int (t->dtype))
    {
      int64_t x = pl_tensor_get_i64 (t, a), y = pl_tensor_get_i64 (t, b);
      return (x > y) - (x < y);
    }
  double x = pl_tensor_get_f64 (t, a), y = pl_tensor_get_f64 (t, b);
  return (x > y) - (x < y);
}

/* Marks the axes listed in axes[n_axes] in mask[rank]; fails on an axis out
 * of range or listed twice. */
bool
pl_reduce_axes_to_mask (const int64_t *axes, int n_axes, int rank, bool *mask, GError **error)
{
  memset (mask, 0, sizeof (bool) * PL_MAX_RANK);
  for (int i = 0; i < n_axes; i++)
    {
      int a;
      if (!pl_normalize_axis (axes[i], rank, &a, error))
        return false;
      if (mask[a])
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE,
                       "axis %" G_GINT64_FORMAT " is listed twice", axes[i]);
          return false;
        }
      mask[a] = true;
    }
  return true;
}

/* The shape left after reducing the masked axes: each dropped, or 1 with keepdims. */
static PlShape
reduced_shape (const PlShape *in, const bool *mask, bool keepdims)
{
  PlShape out = pl_shape_scalar ();
  for (int d = 0; d < in->rank; d++)
    if (!mask[d] || keepdims)
      out.dims[out.rank++] = mask[d] ? pl_dim_static (1) : in->dims[d];
  return out;
}

/* reduced_shape for a tensor: a new output of the reduced dims. */
static PlTensor *
new_reduced (PlDType dtype, const PlTensor *x, const bool *mask, bool keepdims, GError **error)
{
  int64_t dims[PL_MAX_RANK];
  int rank = 0;
  for (int d = 0; d < x->rank; d++)
    if (!mask[d] || keepdims)
      dims[rank++] = mask[d] ? 1 : x->dims[d];
  return pl_out_new (dtype, rank, dims, error);
}

/* The `axes` attribute as a g_malloc'd copy. */
static int64_t *
attr_axes (const PlNode *node, int *n)
{
  const int64_t *v = NULL;
  pl_node_attr_ints (node, "axes", &v, n);
  return g_memdup2 (v, sizeof (int64_t) * *n);
}

/* Strides mapping each element of x to the element of its reduction over
 * the masked axes that it falls into (row-major over the kept dims). */
void
pl_reduce_strides (const PlTensor *x, const bool *mask, int64_t *strides)
{
  int64_t kept[PL_MAX_RANK];
  for (int d = 0; d < x->rank; d++)
    kept[d] = mask[d] ? 1 : x->dims[d];
  pl_strides (x->rank, kept, strides);
  for (int d = 0; d < x->rank; d++)
    if (mask[d])
      strides[d] = 0;
}

/* --- Reduce* --------------------------------------------------------------- */

typedef enum {
  REDUCE_SUM, REDUCE_MEAN, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD, REDUCE_L1,
  REDUCE_L2, REDUCE_LOG_SUM, REDUCE_LOG_SUM_EXP, REDUCE_SUM_SQUARE,
} ReduceKind;

static ReduceKind
reduce_kind (PlOp op)
{
  switch (op)
    {
    case PL_OP_ReduceSum:       return REDUCE_SUM;
    case PL_OP_ReduceMean:      return REDUCE_MEAN;
    case PL_OP_ReduceMax:       return REDUCE_MAX;
    case PL_OP_ReduceMin:       return REDUCE_MIN;
    case PL_OP_ReduceProd:      return REDUCE_PROD;
    case PL_OP_ReduceL1:        return REDUCE_L1;
    case PL_OP_ReduceL2:        return REDUCE_L2;
    case PL_OP_ReduceLogSum:    return REDUCE_LOG_SUM;
    case PL_OP_ReduceLogSumExp: return REDUCE_LOG_SUM_EXP;
    default:                    return REDUCE_SUM_SQUARE;
    }
}

/* The reduced axes as a mask. Empty axes reduce every axis, or none when
 * noop_with_empty_axes is set (then *noop is true). */
static bool
reduce_mask (const PlNode *node, int rank, const int64_t *axes, int n_axes,
             bool *mask, bool *noop, GError **error)
{
  *noop = false;
  if (n_axes > 0)
    return pl_reduce_axes_to_mask (axes, n_axes, rank, mask, error);
  *noop = pl_node_attr_int (node, "noop_with_empty_axes", 0) != 0;
  for (int d = 0; d < PL_MAX_RANK; d++)
    mask[d] = !*noop && d < rank;
  return true;
}

/* Output shape of a reduction whose axes are known only at run time: with
 * keepdims the rank stays (dims already 1 stay 1); without, the rank drops
 * by the number of axes when that is known (n_axes >= 0). */
static PlShape
reduce_shape_runtime_axes (const PlShape *in, bool keepdims, int64_t n_axes)
{
  PlShape out = pl_shape_unknown ();
  if (in->rank == PL_RANK_UNKNOWN)
    return out;
  if (keepdims)
    {
      out.rank = in->rank;
      for (int d = 0; d < in->rank; d++)
        out.dims[d] = in->dims[d].size == 1 ? pl_dim_static (1) : pl_dim_unknown ();
    }
  else if (n_axes > 0 && n_axes <= in->rank)
    {
      out.rank = (int) (in->rank - n_axes);
      for (int d = 0; d < out.rank; d++)
        out.dims[d] = pl_dim_unknown ();
    }
  return out;
}

static bool
reduce_infer (PlNode *node, GError **error)
{
  if (!pl_require_dtype (node, 0, numeric_types, error))
    return false;
  const PlValue *x = pl_input (node, 0);
  const PlValue *axes_value = pl_input (node, 1);
  bool keepdims = pl_node_attr_int (node, "keepdims", 1) != 0;
  g_autofree int64_t *axes = NULL;
  int n_axes = 0;

  if (axes_value != NULL)
    {
      if (!pl_require_dtype (node, 1, index_types, error))
        return false;
      if (!pl_input_const_ints (node, 1, &axes, &n_axes))
        {
          n_axes = 0;
          const PlShape *as = &axes_value->shape;
          int64_t n_known = as->rank == 1 && pl_dim_is_static (as->dims[0]) ? as->dims[0].size : -1;
          if (n_known != 0)
            {
              PlShape out = reduce_shape_runtime_axes (&x->shape, keepdims, n_known);
              pl_set_output (node, 0, x->dtype, &out);
              return true;
            }
          /* An axes input of static shape [0] is empty whatever its data. */
        }
    }
  else
    axes = attr_axes (node, &n_axes);

  if (x->shape.rank == PL_RANK_UNKNOWN)
    {
      PlShape unknown = pl_shape_unknown ();
      pl_set_output (node, 0, x->dtype, &unknown);
      return true;
    }
  bool mask[PL_MAX_RANK], noop;
  if (!reduce_mask (node, x->shape.rank, axes, n_axes, mask, &noop, error))
    return false;
  PlShape out = reduced_shape (&x->shape, mask, keepdims);
  pl_set_output (node, 0, x->dtype, &out);
  return true;
}

/* Integer reductions that stay exact in int64 (the others go through double). */
static bool
reduce_is_integral (ReduceKind kind)
{
  return kind != REDUCE_L2 && kind != REDUCE_LOG_SUM && kind != REDUCE_LOG_SUM_EXP;
}

static void
reduce_int (ReduceKind kind, const PlTensor *x, const int64_t *ostrides, PlTensor *y)
{
  int64_t m = y->numel, count = m > 0 ? x->numel / m : 0;
  g_autofree int64_t *acc = g_new (int64_t, MAX (m, 1));
  int64_t init = kind == REDUCE_PROD ? 1 : kind == REDUCE_MAX ? INT64_MIN
                 : kind == REDUCE_MIN ? INT64_MAX : 0;
  for (int64_t o = 0; o < m; o++)
    acc[o] = init;

  for (int64_t i = 0; i < x->numel; i++)
    {
      int64_t o = pl_offset_of (i, x->rank, x->dims, ostrides);
      int64_t v = pl_tensor_get_i64 (x, i);
      switch (kind)
        {
        case REDUCE_PROD:       acc[o] = wrap_mul (acc[o], v); break;
        case REDUCE_MAX:        acc[o] = MAX (acc[o], v); break;
        case REDUCE_MIN:        acc[o] = MIN (acc[o], v); break;
        case REDUCE_L1:         acc[o] = wrap_add (acc[o], v < 0 ? wrap_mul (v, -1) : v); break;
        case REDUCE_SUM_SQUARE: acc[o] = wrap_add (acc[o], wrap_mul (v, v)); break;
        default:                acc[o] = wrap_add (acc[o], v); break;
        }
    }
  for (int64_t o = 0; o < m; o++)
    {
      int64_t r = acc[o];
      if (kind == REDUCE_MEAN)
        r = count > 0 ? r / count : 0;
      pl_tensor_set_i64 (y, o, r);
    }
}

static void
reduce_double (ReduceKind kind, const PlTensor *x, const int64_t *ostrides, PlTensor *y)
{
  int64_t m = y->numel, count = m > 0 ? x->numel / m : 0;
  g_autofree double *acc = g_new (double, MAX (m, 1));
  g_autofree double *peak = NULL;  /* LogSumExp: each output's max, subtracted before exp */
  double init = kind == REDUCE_PROD ? 1.0 : kind == REDUCE_MAX ? -INFINITY
                : kind == REDUCE_MIN ? INFINITY : 0.0;
  for (int64_t o = 0; o < m; o++)
    acc[o] = init;

  if (kind == REDUCE_LOG_SUM_EXP)
    {
      peak = g_new (double, MAX (m, 1));
      for (int64_t o = 0; o < m; o++)
        peak[o] = -INFINITY;
      for (int64_t i = 0; i < x->numel; i++)
        {
          int64_t o = pl_offset_of (i, x->rank, x->dims, ostrides);
          double v = pl_tensor_get_f64 (x, i);
          if (v > peak[o] || isnan (v))
            peak[o] = v;
        }
    }

  for (int64_t i = 0; i < x->numel; i++)
    {
      int64_t o = pl_offset_of (i, x->rank, x->dims, ostrides);
      double v = pl_tensor_get_f64 (x, i);
      switch (kind)
        {
        case REDUCE_PROD:        acc[o] *= v; break;
        case REDUCE_MAX:         if (v > acc[o] || isnan (v)) acc[o] = v; break;
        case REDUCE_MIN:         if (v < acc[o] || isnan (v)) acc[o] = v; break;
        case REDUCE_L1:          acc[o] += fabs (v); break;
        case REDUCE_L2:
        case REDUCE_SUM_SQUARE:  acc[o] += v * v; break;
        case REDUCE_LOG_SUM_EXP: acc[o] += exp (v - peak[o]); break;
        default:                 acc[o] += v; break;
        }
    }

  for (int64_t o = 0; o < m; o++)
    {
      double r = acc[o];
      switch (kind)
        {
        case REDUCE_MEAN:        r = r / (double) count; break;
        case REDUCE_L2:          r = sqrt (r); break;
        case REDUCE_LOG_SUM:     r = log (r); break;
        case REDUCE_LOG_SUM_EXP: r = isfinite (peak[o]) ? peak[o] + log (r) : peak[o]; break;
        default: break;
        }
      pl_tensor_set_f64 (y, o, r);
    }
}

static bool
reduce_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  g_autofree int64_t *axes = NULL;
  int n_axes = 0;
  if (node->n_inputs > 1 && inputs[1] != NULL)
    axes = pl_tensor_to_ints (inputs[1], &n_axes);
  else
    axes = attr_axes (node, &n_axes);

  bool mask[PL_MAX_RANK], noop;
  if (!reduce_mask (node, x->rank, axes, n_axes, mask, &noop, error))
    return false;
  if (noop)
    {
      outputs[0] = pl_tensor_copy (x);
      return true;
    }

  PlTensor *y = new_reduced (x->dtype, x, mask, pl_node_attr_int (node, "keepdims", 1) != 0, error);
  if (y == NULL)
    return false;
  int64_t ostrides[PL_MAX_RANK];
  pl_reduce_strides (x, mask, ostrides);

  ReduceKind kind = reduce_kind (node->op);
  if (pl_dtype_is_int (x->dtype) && reduce_is_integral (kind))
    reduce_int (kind, x, ostrides, y);
  else
    reduce_double (kind, x, ostrides, y);
  outputs[0] = y;
  return true;
}

/* --- ArgMax, ArgMin -------------------------------------------------------- */

static bool
arg_infer (PlNode *node, GError **error)
{
  if (!pl_require_dtype (node, 0, numeric_types, error))
    return false;
  const PlValue *x = pl_input (node, 0);
  PlShape out = pl_shape_unknown ();
  if (x->shape.rank != PL_RANK_UNKNOWN)
    {
      int axis;
      if (!pl_normalize_axis (pl_node_attr_int (node, "axis", 0), x->shape.rank, &axis, error))
        return false;
      if (x->shape.dims[axis].size == 0)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "axis %d has size 0", axis);
          return false;
        }
      bool mask[PL_MAX_RANK] = { false };
      mask[axis] = true;
      out = reduced_shape (&x->shape, mask, pl_node_attr_int (node, "keepdims", 1) != 0);
    }
  pl_set_output (node, 0, PL_DTYPE_I64, &out);
  return true;
}

static bool
arg_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  int axis;
  if (!pl_normalize_axis (pl_node_attr_int (node, "axis", 0), x->rank, &axis, error))
    return false;
  int64_t outer, n, inner;
  pl_reduce_split_at_axis (x, axis, &outer, &n, &inner);
  if (n == 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "axis %d has size 0", axis);
      return false;
    }

  bool mask[PL_MAX_RANK] = { false };
  mask[axis] = true;
  PlTensor *y = new_reduced (PL_DTYPE_I64, x, mask, pl_node_attr_int (node, "keepdims", 1) != 0, error);
  if (y == NULL)
    return false;

  /* ArgMin is ArgMax of the negated order; ties go to the first index, or
   * the last with select_last_index. */
  int sign = node->op == PL_OP_ArgMax ? 1 : -1;
  bool last = pl_node_attr_int (node, "select_last_index", 0) != 0;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++)
      {
        int64_t base = o * n * inner + i, best = 0;
        for (int64_t k = 1; k < n; k++)
          {
            int c = sign * compare_elems (x, base + k * inner, base + best * inner);
            if (c > 0 || (last && c == 0))
              best = k;
          }
        pl_tensor_set_i64 (y, o * inner + i, best);
      }
  outputs[0] = y;
  return true;
}

/* --- CumSum ---------------------------------------------------------------- */

/* The axis from CumSum's second input (one integer). */
static bool
cumsum_axis (const int64_t *v, int n, int rank, int *axis, GError **error)
{
  if (n != 1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "axis must hold one value, not %d", n);
      return false;
    }
  return pl_normalize_axis (v[0], rank, axis, error);
}

static bool
cumsum_infer (PlNode *node, GError **error)
{
  if (!pl_require_dtype (node, 0, numeric_types, error)
      || !pl_require_dtype (node, 1, index_types, error))
    return false;
  const PlValue *x = pl_input (node, 0), *a = pl_input (node, 1);
  if (a->shape.rank > 1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "axis must be a scalar, not of rank %d", a->shape.rank);
      return false;
    }
  g_autofree int64_t *v = NULL;
  int n, axis;
  if (x->shape.rank != PL_RANK_UNKNOWN && pl_input_const_ints (node, 1, &v, &n)
      && !cumsum_axis (v, n, x->shape.rank, &axis, error))
    return false;
  pl_reduce_infer_same_as_input (node);
  return true;
}

static bool
cumsum_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  int n_axis, axis;
  g_autofree int64_t *axis_v = pl_tensor_to_ints (inputs[1], &n_axis);
  if (!cumsum_axis (axis_v, n_axis, x->rank, &axis, error))
    return false;
  PlTensor *y = pl_out_new (x->dtype, x->rank, x->dims, error);
  if (y == NULL)
    return false;
  bool exclusive = pl_node_attr_int (node, "exclusive", 0) != 0;
  bool reverse = pl_node_attr_int (node, "reverse", 0) != 0;
  bool integral = pl_dtype_is_int (x->dtype);
  int64_t outer, n, inner;
  pl_reduce_split_at_axis (x, axis, &outer, &n, &inner);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++)
      {
        int64_t base = o * n * inner + i, isum = 0;
        double fsum = 0.0;
        for (int64_t j = 0; j < n; j++)
          {
            int64_t at = base + (reverse ? n - 1 - j : j) * inner;
            /* Exclusive stores the sum before adding the element itself. */
            if (integral)
              {
                int64_t before = isum;
                isum = wrap_add (isum, pl_tensor_get_i64 (x, at));
                pl_tensor_set_i64 (y, at, exclusive ? before : isum);
              }
            else
              {
                double before = fsum;
                fsum += pl_tensor_get_f64 (x, at);
                pl_tensor_set_f64 (y, at, exclusive ? before : fsum);
              }
          }
      }
  outputs[0] = y;
  return true;
}

/* --- TopK ------------------------------------------------------------------ */

/* K: the one value of k_tensor (input 1, opset 10 on), else attribute k
 * (opset 1). */
static bool
topk_read_k (const PlNode *node, const PlTensor *k_tensor, int64_t *k, GError **error)
{
  if (k_tensor != NULL && k_tensor->numel != 1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "K must hold one value, not %" G_GINT64_FORMAT,
                   k_tensor->numel);
      return false;
    }
  if (k_tensor == NULL && pl_node_attr (node, "k") == NULL)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "needs input K or attribute k");
      return false;
    }
  *k = k_tensor != NULL ? pl_tensor_get_i64 (k_tensor, 0) : pl_node_attr_int (node, "k", 0);
  if (*k < 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "K = %" G_GINT64_FORMAT " is negative", *k);
      return false;
    }
  return true;
}

static bool
topk_infer (PlNode *node, GError **error)
{
  if (!pl_require_dtype (node, 0, numeric_types, error)
      || !pl_require_dtype (node, 1, index_types, error))
    return false;
  const PlValue *x = pl_input (node, 0);
  /* K is known unless it is an input that is not a constant. */
  const PlTensor *k_tensor = pl_input_constant (node, 1);
  bool known = pl_input (node, 1) == NULL || k_tensor != NULL;
  int64_t k = 0;
  if (known && !topk_read_k (node, k_tensor, &k, error))
    return false;
  PlShape out = x->shape;
  if (out.rank != PL_RANK_UNKNOWN)
    {
      int axis;
      if (!pl_normalize_axis (pl_node_attr_int (node, "axis", -1), out.rank, &axis, error))
        return false;
      PlDim d = out.dims[axis];
      if (known && pl_dim_is_static (d) && k > d.size)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE,
                       "K = %" G_GINT64_FORMAT " exceeds axis %d of size %" G_GINT64_FORMAT,
                       k, axis, d.size);
          return false;
        }
      out.dims[axis] = known ? pl_dim_static (k) : pl_dim_unknown ();
    }
  pl_set_output (node, 0, x->dtype, &out);
  pl_set_output (node, 1, PL_DTYPE_I64, &out);
  return true;
}

/* A sort key: NaN class first (NaNs go first for largest, last for
 * smallest, as numpy's sort-then-flip places them), then the value (negated
 * for largest, with ~ on integers so INT64_MIN cannot overflow), then the
 * original index, so equal values keep index order. */
typedef struct {
  int     nan_class;
  double  f;
  int64_t i;
  int64_t index;
} TopKKey;

static int
topk_key_compare (const void *pa, const void *pb)
{
  const TopKKey *a = pa, *b = pb;
  if (a->nan_class != b->nan_class)
    return a->nan_class - b->nan_class;
  if (a->f != b->f && a->nan_class == 1)
    return a->f < b->f ? -1 : 1;
  if (a->i != b->i)
    return a->i < b->i ? -1 : 1;
  return (a->index > b->index) - (a->index < b->index);
}

static bool
topk_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  int axis;
  if (!pl_normalize_axis (pl_node_attr_int (node, "axis", -1), x->rank, &axis, error))
    return false;
  int64_t k;
  if (!topk_read_k (node, node->n_inputs > 1 ? inputs[1] : NULL, &k, error))
    return false;
  if (k > x->dims[axis])
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "K = %" G_GINT64_FORMAT " exceeds axis %d of size %"
                   G_GINT64_FORMAT, k, axis, x->dims[axis]);
      return false;
    }

  int64_t dims[PL_MAX_RANK];
  memcpy (dims, x->dims, sizeof (int64_t) * x->rank);
  dims[axis] = k;
  outputs[0] = pl_out_new (x->dtype, x->rank, dims, error);
  if (outputs[0] == NULL || (outputs[1] = pl_out_new (PL_DTYPE_I64, x->rank, dims, error)) == NULL)
    return false;

  bool largest = pl_node_attr_int (node, "largest", 1) != 0;
  bool integral = pl_dtype_is_int (x->dtype);
  int64_t outer, n, inner;
  pl_reduce_split_at_axis (x, axis, &outer, &n, &inner);
  g_autofree TopKKey *keys = g_new (TopKKey, MAX (n, 1));
  /* Sorted output whatever `sorted` says: unsorted order is unspecified. */
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++)
      {
        int64_t base = o * n * inner + i;
        for (int64_t j = 0; j < n; j++)
          {
            TopKKey *key = &keys[j];
            int64_t at = base + j * inner;
            key->index = j;
            key->i = integral ? pl_tensor_get_i64 (x, at) : 0;
            key->f = integral ? (double) key->i : pl_tensor_get_f64 (x, at);
            key->nan_class = isnan (key->f) ? (largest ? 0 : 2) : 1;
            if (largest)
              {
                key->f = -key->f;
                key->i = ~key->i;
              }
          }
        qsort (keys, n, sizeof (TopKKey), topk_key_compare);
        for (int64_t j = 0; j < k; j++)
          {
            int64_t src = base + keys[j].index * inner, dst = o * k * inner + j * inner + i;
            if (integral)
              pl_tensor_set_i64 (outputs[0], dst, pl_tensor_get_i64 (x, src));
            else
              pl_tensor_set_f64 (outputs[0], dst, pl_tensor_get_f64 (x, src));
            pl_tensor_set_i64 (outputs[1], dst, keys[j].index);
          }
      }
  return true;
}

/* --- registration ---------------------------------------------------------- */

void
pl_ops_register_reduce (void)
{
  static const PlOpEntry entries[] = {
    /* Reduce*: data, then optional axes (ReduceSum from opset 13, all from 18). */
    { PL_OP_ReduceSum,       1, 2, 1, 1, reduce_infer, reduce_eval },
    { PL_OP_ReduceMean,      1, 2, 1, 1, reduce_infer, reduce_eval },
    { PL_OP_ReduceMax,       1, 2, 1, 1, reduce_infer, reduce_eval },
    { PL_OP_ReduceMin,       1, 2, 1, 1, reduce_infer, reduce_eval },
    { PL_OP_ReduceProd,      1, 2, 1, 1, reduce_infer, reduce_eval },
    { PL_OP_ReduceL1,        1, 2, 1, 1, reduce_infer, reduce_eval },
    { PL_OP_ReduceL2,        1, 2, 1, 1, reduce_infer, reduce_eval },
    { PL_OP_ReduceLogSum,    1, 2, 1, 1, reduce_infer, reduce_eval },
    { PL_OP_ReduceLogSumExp, 1, 2, 1, 1, reduce_infer, reduce_eval },
    { PL_OP_ReduceSumSquare, 1, 2, 1, 1, reduce_infer, reduce_eval },
    { PL_OP_ArgMax,          1, 1, 1, 1, arg_infer, arg_eval },
    { PL_OP_ArgMin,          1, 1, 1, 1, arg_infer, arg_eval },
    { PL_OP_CumSum,                    2, 2, 1, 1, cumsum_infer, cumsum_eval },
    /* X, K (opset 10 on; before, attribute k) -> Values, Indices */
    { PL_OP_TopK,                      1, 2, 2, 2, topk_infer, topk_eval },
  };
  pl_ops_register (entries, G_N_ELEMENTS (entries));
  pl_ops_register_norm ();
}
