/* ops-norm.c — the softmax family and the normalizations: Softmax,
 * LogSoftmax, Hardmax, LayerNormalization, InstanceNormalization,
 * MeanVarianceNormalization, LpNormalization and LRN — their shape inference
 * and reference evaluation. Registered from pl_ops_register_reduce(), with
 * which they share the views of ops-reduce-private.h.
 *
 * Semantics follow ONNX up to opset 17; node->graph->opset (0 means 17)
 * selects the 2-D coercion of the softmax family before opset 13. The ops
 * working along one axis see the tensor as [outer, n, inner] and walk the n
 * elements of each (outer, inner) line with stride `inner`; values are
 * computed in double and stored in the output dtype.
 */
#define G_LOG_DOMAIN "passlab"
#include "ops-reduce-private.h"

#include <math.h>

static const PlDType float_types[] = {
  PL_DTYPE_F32, PL_DTYPE_F16, PL_DTYPE_BF16, PL_DTYPE_F64, PL_DTYPE_UNDEFINED
};

/* --- helpers --------------------------------------------------------------- */

/* The default-domain opset the node follows; unspecified (0) means 17. */
static int
node_opset (const PlNode *node)
{
  int opset = node->graph != NULL ? node->graph->opset : 0;
  return opset > 0 ? opset : 17;
}

/* Whether the node has output i (optional outputs may be omitted). */
static bool
has_output (const PlNode *node, int i)
{
  return i < node->n_outputs && node->outputs[i] != NULL;
}

/* Views t as [outer, n] with n the product of the dims from axis on (the
 * ONNX "coerce to 2-D" of the old softmax family and LayerNormalization). */
static void
split_flat (const PlTensor *t, int axis, int64_t *outer, int64_t *n)
{
  *outer = 1;
  *n = 1;
  for (int d = 0; d < t->rank; d++)
    {
      if (d < axis)
        *outer *= t->dims[d];
      else
        *n *= t->dims[d];
    }
}

/* Mean and (population) variance of the n contiguous elements from base. */
static void
line_moments (const PlTensor *x, int64_t base, int64_t n, double *mean, double *var)
{
  double sum = 0.0, sq = 0.0;
  for (int64_t k = 0; k < n; k++)
    sum += pl_tensor_get_f64 (x, base + k);
  *mean = sum / (double) n;
  for (int64_t k = 0; k < n; k++)
    {
      double dev = pl_tensor_get_f64 (x, base + k) - *mean;
      sq += dev * dev;
    }
  *var = sq / (double) n;
}

/* InstanceNormalization and LRN read (N, C, D1, ...). rank may be unknown. */
static bool
require_spatial_rank (int rank, PlErrorCode code, GError **error)
{
  if (rank != PL_RANK_UNKNOWN && rank < 3)
    {
      g_set_error (error, PL_ERROR, code, "input must have rank >= 3 (N, C, D1, ...), not %d", rank);
      return false;
    }
  return true;
}

/* --- Softmax, LogSoftmax, Hardmax ------------------------------------------ */

/* Before opset 13 the softmax family flattens its input to 2-D at `axis`
 * (default 1) and works along the second dim; from 13 on it works along
 * `axis` alone (default -1). */
static bool
softmax_axis (const PlNode *node, int rank, int *axis, bool *coerce, GError **error)
{
  *coerce = node_opset (node) < 13;
  return pl_normalize_axis (pl_node_attr_int (node, "axis", *coerce ? 1 : -1), rank, axis, error);
}

static bool
softmax_infer (PlNode *node, GError **error)
{
  if (!pl_require_dtype (node, 0, float_types, error))
    return false;
  const PlValue *x = pl_input (node, 0);
  int axis;
  bool coerce;
  if (x->shape.rank != PL_RANK_UNKNOWN && !softmax_axis (node, x->shape.rank, &axis, &coerce, error))
    return false;
  pl_reduce_infer_same_as_input (node);
  return true;
}

/* One line of n elements with the given stride: softmax, log-softmax or
 * hardmax (1 at the first maximum). */
static void
softmax_line (PlOp op, const PlTensor *x, PlTensor *y, int64_t base, int64_t n, int64_t stride)
{
  double peak = -INFINITY;
  int64_t arg = 0;
  for (int64_t k = 0; k < n; k++)
    {
      double v = pl_tensor_get_f64 (x, base + k * stride);
      if (v > peak)
        {
          peak = v;
          arg = k;
        }
    }
  if (op == PL_OP_Hardmax)
    {
      if (n > 0)
        pl_tensor_set_f64 (y, base + arg * stride, 1.0);
      return;
    }
  double sum = 0.0;
  for (int64_t k = 0; k < n; k++)
    sum += exp (pl_tensor_get_f64 (x, base + k * stride) - peak);
  for (int64_t k = 0; k < n; k++)
    {
      int64_t at = base + k * stride;
      double shifted = pl_tensor_get_f64 (x, at) - peak;
      pl_tensor_set_f64 (y, at, op == PL_OP_LogSoftmax ? shifted - log (sum) : exp (shifted) / sum);
    }
}

static bool
softmax_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  int axis;
  bool coerce;
  if (!softmax_axis (node, x->rank, &axis, &coerce, error))
    return false;
  int64_t outer, n, inner = 1;
  if (coerce)
    split_flat (x, axis, &outer, &n);
  else
    pl_reduce_split_at_axis (x, axis, &outer, &n, &inner);
  PlTensor *y = pl_out_new (x->dtype, x->rank, x->dims, error);
  if (y == NULL)
    return false;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++)
      softmax_line (node->op, x, y, o * n * inner + i, n, inner);
  outputs[0] = y;
  return true;
}

/* --- LayerNormalization ---------------------------------------------------- */

/* The dtype of Mean and InvStdDev: stash_type, an ONNX float type code. */
static bool
layer_norm_stash_dtype (const PlNode *node, PlDType *dtype, GError **error)
{
  int64_t code = pl_node_attr_int (node, "stash_type", 1);
  *dtype = code > 0 && code < G_MAXINT ? pl_dtype_from_onnx ((int) code) : PL_DTYPE_UNDEFINED;
  if (!pl_dtype_is_float (*dtype))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED,
                   "stash_type %" G_GINT64_FORMAT " is not a float type", code);
      return false;
    }
  return true;
}

/* Whether dims p broadcast to dims x without growing x (unidirectional
 * broadcasting); a negative (unknown) dim matches anything. */
static bool
broadcasts_to (int p_rank, const int64_t *p, int x_rank, const int64_t *x)
{
  if (p_rank > x_rank)
    return false;
  for (int d = 1; d <= p_rank; d++)
    {
      int64_t pd = p[p_rank - d], xd = x[x_rank - d];
      if (pd != xd && pd != 1 && pd >= 0 && xd >= 0)
        return false;
    }
  return true;
}

static bool
broadcast_error (const char *what, const PlShape *p, const PlShape *x, PlErrorCode code, GError **error)
{
  g_autofree char *ps = pl_shape_to_string (p);
  g_autofree char *xs = pl_shape_to_string (x);
  g_set_error (error, PL_ERROR, code, "%s of shape %s does not broadcast to X of shape %s", what, ps, xs);
  return false;
}

/* Checks that input i (Scale or B) has X's dtype and broadcasts to X. */
static bool
layer_norm_check_param (const PlNode *node, int i, const char *what, GError **error)
{
  const PlValue *x = pl_input (node, 0), *p = pl_input (node, i);
  if (p != NULL && p->dtype != x->dtype)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "%s has dtype %s, X has %s",
                   what, pl_dtype_name (p->dtype), pl_dtype_name (x->dtype));
      return false;
    }
  if (p == NULL || x->shape.rank == PL_RANK_UNKNOWN || p->shape.rank == PL_RANK_UNKNOWN)
    return true;
  int64_t pd[PL_MAX_RANK], xd[PL_MAX_RANK];
  for (int d = 0; d < p->shape.rank; d++)
    pd[d] = p->shape.dims[d].size;
  for (int d = 0; d < x->shape.rank; d++)
    xd[d] = x->shape.dims[d].size;
  if (!broadcasts_to (p->shape.rank, pd, x->shape.rank, xd))
    return broadcast_error (what, &p->shape, &x->shape, PL_ERROR_SHAPE, error);
  return true;
}

static bool
layer_norm_infer (PlNode *node, GError **error)
{
  if (!pl_require_dtype (node, 0, float_types, error))
    return false;
  PlDType stash;
  if (!layer_norm_stash_dtype (node, &stash, error)
      || !layer_norm_check_param (node, 1, "Scale", error)
      || !layer_norm_check_param (node, 2, "B", error))
    return false;
  const PlValue *x = pl_input (node, 0);
  PlShape stats = pl_shape_unknown ();
  if (x->shape.rank != PL_RANK_UNKNOWN)
    {
      int axis;
      if (!pl_normalize_axis (pl_node_attr_int (node, "axis", -1), x->shape.rank, &axis, error))
        return false;
      stats = x->shape;
      for (int d = axis; d < stats.rank; d++)
        stats.dims[d] = pl_dim_static (1);
    }
  pl_reduce_infer_same_as_input (node);
  for (int i = 1; i <= 2; i++)
    if (has_output (node, i))
      pl_set_output (node, i, stash, &stats);
  return true;
}

/* Strides reading p broadcast to x's dims; fails unless p broadcasts to x. */
static bool
broadcast_strides_to (const PlTensor *p, const PlTensor *x, const char *what, int64_t *strides,
                      GError **error)
{
  if (!broadcasts_to (p->rank, p->dims, x->rank, x->dims))
    {
      PlShape ps = pl_tensor_shape (p), xs = pl_tensor_shape (x);
      return broadcast_error (what, &ps, &xs, PL_ERROR_EXEC, error);
    }
  pl_broadcast_strides (p->rank, p->dims, x->rank, x->dims, strides);
  return true;
}

static bool
layer_norm_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0], *scale = inputs[1];
  const PlTensor *bias = node->n_inputs > 2 ? inputs[2] : NULL;
  int axis;
  PlDType stash;
  int64_t sstrides[PL_MAX_RANK], bstrides[PL_MAX_RANK];
  if (!pl_normalize_axis (pl_node_attr_int (node, "axis", -1), x->rank, &axis, error)
      || !layer_norm_stash_dtype (node, &stash, error)
      || !broadcast_strides_to (scale, x, "Scale", sstrides, error)
      || (bias != NULL && !broadcast_strides_to (bias, x, "B", bstrides, error)))
    return false;

  int64_t stat_dims[PL_MAX_RANK];
  for (int d = 0; d < x->rank; d++)
    stat_dims[d] = d < axis ? x->dims[d] : 1;
  outputs[0] = pl_out_new (x->dtype, x->rank, x->dims, error);
  if (outputs[0] == NULL)
    return false;
  /* Mean and InvStdDev only where the node has those outputs. */
  PlTensor *stats[3] = { NULL, NULL, NULL };
  for (int i = 1; i <= 2; i++)
    if (has_output (node, i)
        && (stats[i] = outputs[i] = pl_out_new (stash, x->rank, stat_dims, error)) == NULL)
      return false;

  double eps = pl_node_attr_float (node, "epsilon", 1e-5f);
  int64_t rows, n;
  split_flat (x, axis, &rows, &n);
  for (int64_t r = 0; r < rows; r++)
    {
      int64_t base = r * n;
      double mean, var;
      line_moments (x, base, n, &mean, &var);
      double inv = 1.0 / sqrt (var + eps);
      for (int64_t k = 0; k < n; k++)
        {
          int64_t at = base + k;
          double v = (pl_tensor_get_f64 (x, at) - mean) * inv
                     * pl_tensor_get_f64 (scale, pl_offset_of (at, x->rank, x->dims, sstrides));
          if (bias != NULL)
            v += pl_tensor_get_f64 (bias, pl_offset_of (at, x->rank, x->dims, bstrides));
          pl_tensor_set_f64 (outputs[0], at, v);
        }
      if (stats[1] != NULL)
        pl_tensor_set_f64 (stats[1], r, mean);
      if (stats[2] != NULL)
        pl_tensor_set_f64 (stats[2], r, inv);
    }
  return true;
}

/* --- InstanceNormalization ------------------------------------------------- */

static bool
instance_norm_infer (PlNode *node, GError **error)
{
  if (!pl_require_dtype (node, 0, float_types, error))
    return false;
  const PlValue *x = pl_input (node, 0);
  if (!require_spatial_rank (x->shape.rank, PL_ERROR_SHAPE, error))
    return false;
  for (int i = 1; i <= 2; i++)
    {
      const PlValue *p = pl_input (node, i);
      const char *what = i == 1 ? "scale" : "B";
      if (p->shape.rank != PL_RANK_UNKNOWN && p->shape.rank != 1)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "%s must be 1-D, not of rank %d",
                       what, p->shape.rank);
          return false;
        }
      if (p->shape.rank == 1 && x->shape.rank != PL_RANK_UNKNOWN
          && pl_dim_is_static (p->shape.dims[0]) && pl_dim_is_static (x->shape.dims[1])
          && p->shape.dims[0].size != x->shape.dims[1].size)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE,
                       "%s has %" G_GINT64_FORMAT " elements, the input %" G_GINT64_FORMAT " channels",
                       what, p->shape.dims[0].size, x->shape.dims[1].size);
          return false;
        }
    }
  pl_reduce_infer_same_as_input (node);
  return true;
}

static bool
instance_norm_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0], *scale = inputs[1], *bias = inputs[2];
  if (!require_spatial_rank (x->rank, PL_ERROR_EXEC, error))
    return false;
  if (scale->numel != x->dims[1] || bias->numel != x->dims[1])
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "scale and B need one value per channel");
      return false;
    }
  PlTensor *y = pl_out_new (x->dtype, x->rank, x->dims, error);
  if (y == NULL)
    return false;
  double eps = pl_node_attr_float (node, "epsilon", 1e-5f);
  int64_t channels = x->dims[1], planes, n;
  split_flat (x, 2, &planes, &n);
  for (int64_t p = 0; p < planes; p++)
    {
      int64_t base = p * n, c = p % channels;
      double mean, var;
      line_moments (x, base, n, &mean, &var);
      double gain = pl_tensor_get_f64 (scale, c) / sqrt (var + eps);
      double shift = pl_tensor_get_f64 (bias, c);
      for (int64_t k = 0; k < n; k++)
        pl_tensor_set_f64 (y, base + k, (pl_tensor_get_f64 (x, base + k) - mean) * gain + shift);
    }
  outputs[0] = y;
  return true;
}

/* --- MeanVarianceNormalization --------------------------------------------- */

/* The axes MVN normalizes over: attribute `axes`, default [0, 2, 3]. */
static bool
mvn_mask (const PlNode *node, int rank, bool *mask, GError **error)
{
  static const int64_t default_axes[] = { 0, 2, 3 };
  const int64_t *axes = NULL;
  int n_axes = 0;
  if (!pl_node_attr_ints (node, "axes", &axes, &n_axes))
    {
      axes = default_axes;
      n_axes = G_N_ELEMENTS (default_axes);
    }
  return pl_reduce_axes_to_mask (axes, n_axes, rank, mask, error);
}

static bool
mvn_infer (PlNode *node, GError **error)
{
  if (!pl_require_dtype (node, 0, float_types, error))
    return false;
  const PlValue *x = pl_input (node, 0);
  bool mask[PL_MAX_RANK];
  if (x->shape.rank != PL_RANK_UNKNOWN && !mvn_mask (node, x->shape.rank, mask, error))
    return false;
  pl_reduce_infer_same_as_input (node);
  return true;
}

static bool
mvn_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  bool mask[PL_MAX_RANK];
  if (!mvn_mask (node, x->rank, mask, error))
    return false;
  PlTensor *y = pl_out_new (x->dtype, x->rank, x->dims, error);
  if (y == NULL)
    return false;

  int64_t ostrides[PL_MAX_RANK], m = 1;
  for (int d = 0; d < x->rank; d++)
    m *= mask[d] ? 1 : x->dims[d];
  pl_reduce_strides (x, mask, ostrides);
  int64_t count = m > 0 ? x->numel / m : 0;
  g_autofree double *mean = g_new0 (double, MAX (m, 1));
  g_autofree double *var = g_new0 (double, MAX (m, 1));
  for (int64_t i = 0; i < x->numel; i++)
    mean[pl_offset_of (i, x->rank, x->dims, ostrides)] += pl_tensor_get_f64 (x, i);
  for (int64_t o = 0; o < m; o++)
    mean[o] /= (double) count;
  for (int64_t i = 0; i < x->numel; i++)
    {
      int64_t o = pl_offset_of (i, x->rank, x->dims, ostrides);
      double dev = pl_tensor_get_f64 (x, i) - mean[o];
      var[o] += dev * dev;
    }
  /* ONNX's function body divides by std + 1e-9, keeping constant slices finite. */
  for (int64_t o = 0; o < m; o++)
    var[o] = sqrt (var[o] / (double) count) + 1e-9;
  for (int64_t i = 0; i < x->numel; i++)
    {
      int64_t o = pl_offset_of (i, x->rank, x->dims, ostrides);
      pl_tensor_set_f64 (y, i, (pl_tensor_get_f64 (x, i) - mean[o]) / var[o]);
    }
  outputs[0] = y;
  return true;
}

/* --- LpNormalization ------------------------------------------------------- */

static bool
lp_norm_params (const PlNode *node, int rank, int *axis, int *p, GError **error)
{
  int64_t pv = pl_node_attr_int (node, "p", 2);
  if (pv != 1 && pv != 2)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "p must be 1 or 2, not %" G_GINT64_FORMAT, pv);
      return false;
    }
  *p = (int) pv;
  return rank == PL_RANK_UNKNOWN
         || pl_normalize_axis (pl_node_attr_int (node, "axis", -1), rank, axis, error);
}

static bool
lp_norm_infer (PlNode *node, GError **error)
{
  int axis, p;
  if (!pl_require_dtype (node, 0, float_types, error)
      || !lp_norm_params (node, pl_input (node, 0)->shape.rank, &axis, &p, error))
    return false;
  pl_reduce_infer_same_as_input (node);
  return true;
}

static bool
lp_norm_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  int axis, p;
  if (!lp_norm_params (node, x->rank, &axis, &p, error))
    return false;
  PlTensor *y = pl_out_new (x->dtype, x->rank, x->dims, error);
  if (y == NULL)
    return false;
  int64_t outer, n, inner;
  pl_reduce_split_at_axis (x, axis, &outer, &n, &inner);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++)
      {
        int64_t base = o * n * inner + i;
        double norm = 0.0;
        for (int64_t k = 0; k < n; k++)
          {
            double v = pl_tensor_get_f64 (x, base + k * inner);
            norm += p == 1 ? fabs (v) : v * v;
          }
        if (p == 2)
          norm = sqrt (norm);
        /* A zero line stays zero instead of becoming 0/0. */
        for (int64_t k = 0; k < n; k++)
          {
            int64_t at = base + k * inner;
            pl_tensor_set_f64 (y, at, norm > 0.0 ? pl_tensor_get_f64 (x, at) / norm : 0.0);
          }
      }
  outputs[0] = y;
  return true;
}

/* --- LRN ------------------------------------------------------------------- */

static bool
lrn_size (const PlNode *node, int64_t *size, GError **error)
{
  *size = pl_node_attr_int (node, "size", 0);
  if (*size < 1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "attribute size must be given and positive");
      return false;
    }
  return true;
}

static bool
lrn_infer (PlNode *node, GError **error)
{
  int64_t size;
  if (!pl_require_dtype (node, 0, float_types, error) || !lrn_size (node, &size, error)
      || !require_spatial_rank (pl_input (node, 0)->shape.rank, PL_ERROR_SHAPE, error))
    return false;
  pl_reduce_infer_same_as_input (node);
  return true;
}

/* y = x / (bias + alpha / size * sum of x^2 over the channels
 * [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta */
static bool
lrn_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  int64_t size;
  if (!lrn_size (node, &size, error) || !require_spatial_rank (x->rank, PL_ERROR_EXEC, error))
    return false;
  double alpha = pl_node_attr_float (node, "alpha", 1e-4f);
  double beta = pl_node_attr_float (node, "beta", 0.75f);
  double bias = pl_node_attr_float (node, "bias", 1.0f);
  PlTensor *y = pl_out_new (x->dtype, x->rank, x->dims, error);
  if (y == NULL)
    return false;
  int64_t batch, channels, inner;
  pl_reduce_split_at_axis (x, 1, &batch, &channels, &inner);
  int64_t before = (size - 1) / 2, after = size / 2;
  for (int64_t b = 0; b < batch; b++)
    for (int64_t i = 0; i < inner; i++)
      {
        int64_t base = b * channels * inner + i;
        for (int64_t c = 0; c < channels; c++)
          {
            double sum = 0.0;
            for (int64_t j = MAX (0, c - before); j <= MIN (channels - 1, c + after); j++)
              {
                double v = pl_tensor_get_f64 (x, base + j * inner);
                sum += v * v;
              }
            int64_t at = base + c * inner;
            pl_tensor_set_f64 (y, at, pl_tensor_get_f64 (x, at)
                                       / pow (bias + alpha / (double) size * sum, beta));
          }
      }
  outputs[0] = y;
  return true;
}

/* --- registration ---------------------------------------------------------- */

void
pl_ops_register_norm (void)
{
  static const PlOpEntry entries[] = {
    { PL_OP_Softmax,         1, 1, 1, 1, softmax_infer, softmax_eval },
    { PL_OP_LogSoftmax,      1, 1, 1, 1, softmax_infer, softmax_eval },
    { PL_OP_Hardmax,         1, 1, 1, 1, softmax_infer, softmax_eval },
    /* X, Scale, optional B -> Y, optional Mean, optional InvStdDev */
    { PL_OP_LayerNormalization,        2, 3, 1, 3, layer_norm_infer, layer_norm_eval },
    { PL_OP_InstanceNormalization,     3, 3, 1, 1, instance_norm_infer, instance_norm_eval },
    { PL_OP_MeanVarianceNormalization, 1, 1, 1, 1, mvn_infer, mvn_eval },
    { PL_OP_LpNormalization,           1, 1, 1, 1, lp_norm_infer, lp_norm_eval },
    { PL_OP_LRN,                       1, 1, 1, 1, lrn_infer, lrn_eval },
  };
  pl_ops_register (entries, G_N_ELEMENTS (entries));
}
