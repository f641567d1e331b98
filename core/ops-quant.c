/* ops-quant.c — the quantization ops: QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear, and the integer compute ops MatMulInteger,
 * ConvInteger, QLinearMatMul, QLinearConv — their shape inference and
 * reference evaluation (ONNX semantics up to opset 17).
 *
 * Rounding is to nearest, ties to even (rint), and results saturate to the
 * output's integer range. The scale arithmetic follows the ONNX reference
 * in float32 where the inputs are float32 (x / scale in float, the scale
 * products of the QLinear ops in float), so results match it bit for bit;
 * integer products accumulate exactly (in double: far below 2^53). The
 * integer matmul and conv run the MatMul and Conv references on the
 * zero-point-shifted operands. A NaN quantizes to the zero point.
 */
#define G_LOG_DOMAIN "passlab"

#include <math.h>
#include <string.h>

#include "ops-nn-private.h"

static const PlDType quant_types[] = { PL_DTYPE_U8, PL_DTYPE_I8, PL_DTYPE_UNDEFINED };
static const PlDType dequant_types[] = { PL_DTYPE_U8, PL_DTYPE_I8, PL_DTYPE_I32, PL_DTYPE_UNDEFINED };
static const PlDType float_types[] = { PL_DTYPE_F32, PL_DTYPE_F16, PL_DTYPE_BF16, PL_DTYPE_F64, PL_DTYPE_UNDEFINED };
static const PlDType f32_only[] = { PL_DTYPE_F32, PL_DTYPE_UNDEFINED };
static const PlDType i32_only[] = { PL_DTYPE_I32, PL_DTYPE_UNDEFINED };

/* --- helpers ---------------------------------------------------------------------- */

static void
int_range (PlDType t, double *lo, double *hi)
{
  *lo = t == PL_DTYPE_I8 ? -128 : t == PL_DTYPE_I32 ? -2147483648.0 : 0;
  *hi = t == PL_DTYPE_I8 ? 127 : t == PL_DTYPE_I32 ? 2147483647.0 : 255;
}

/* rint (v) + zp, saturated to t's range; NaN gives zp. */
static double
saturate (double v, double zp, PlDType t)
{
  double lo, hi;
  int_range (t, &lo, &hi);
  double q = isnan (v) ? zp : rint (v) + zp;
  return q < lo ? lo : q > hi ? hi : q;
}

/* x / scale in the precision the ONNX reference uses (float32 for float32). */
static double
divide (double x, double scale, PlDType t)
{
  return t == PL_DTYPE_F32 ? (double) ((float) x / (float) scale) : x / scale;
}

/* The scale or zero point of a per-tensor or per-axis quantization: a scalar
 * (or one element) or a 1-D tensor of x's dim `axis`. Checks input i of node
 * (named what) against x's shape. */
static bool
check_param (const PlNode *node, int i, const char *what, const PlShape *x, int axis, GError **error)
{
  const PlValue *p = pl_input (node, i);
  if (!p || p->shape.rank == PL_RANK_UNKNOWN || p->shape.rank == 0)
    return true;
  if (p->shape.rank != 1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "%s must be a scalar or 1-D, not rank %d", what, p->shape.rank);
      return false;
    }
  PlDim d = p->shape.dims[0];
  if (x->rank != PL_RANK_UNKNOWN && pl_dim_is_static (d) && d.size != 1 && pl_dim_is_static (x->dims[axis])
      && x->dims[axis].size != d.size)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE,
                   "%s has %" G_GINT64_FORMAT " values but the input's axis %d has %" G_GINT64_FORMAT, what, d.size,
                   axis, x->dims[axis].size);
      return false;
    }
  return true;
}

/* Whether parameter input i (a scale or zero point) has several values. */
static bool
param_per_axis (const PlNode *node, int i)
{
  const PlValue *p = pl_input (node, i);
  return p && p->shape.rank == 1 && !(pl_dim_is_static (p->shape.dims[0]) && p->shape.dims[0].size == 1);
}

/* The axis of a per-axis quantization (attribute `axis`, default 1) within
 * x's rank; 0 when x's rank is unknown or the parameters are per tensor
 * (per_axis false), where the axis does not matter (it may not even exist). */
static bool
quant_axis (const PlNode *node, const PlShape *x, bool per_axis, int *axis, GError **error)
{
  *axis = 0;
  if (x->rank == PL_RANK_UNKNOWN || !per_axis)
    return true;
  return pl_normalize_axis (pl_node_attr_int (node, "axis", 1), MAX (x->rank, 1), axis, error);
}

/* Inference of QuantizeLinear (prefix "y") and DequantizeLinear ("x"): the
 * scale (input 1) and zero point (input 2) against x (input 0). */
static bool
check_params (const PlNode *node, const char *prefix, GError **error)
{
  const PlShape *x = &pl_input (node, 0)->shape;
  g_autofree char *scale = g_strdup_printf ("%s_scale", prefix), *zero = g_strdup_printf ("%s_zero_point", prefix);
  int axis;
  return quant_axis (node, x, param_per_axis (node, 1) || param_per_axis (node, 2), &axis, error)
         && check_param (node, 1, scale, x, axis, error) && check_param (node, 2, zero, x, axis, error);
}

/* Element i of a per-tensor (one value) or per-axis parameter, for the
 * element at linear index `at` of a tensor whose axis has stride `inner`
 * and size n; 0 when the parameter is absent. */
static double
param_at (const PlTensor *p, int64_t at, int64_t inner, int64_t n)
{
  if (!p)
    return 0;
  if (p->numel == 1)
    return pl_tensor_get_f64 (p, 0);
  return pl_tensor_get_f64 (p, (at / inner) % n);
}

/* The stride and size of x's dim axis. */
static void
axis_geometry (const PlTensor *x, int axis, int64_t *inner, int64_t *n)
{
  *inner = 1;
  for (int d = axis + 1; d < x->rank; d++)
    *inner *= x->dims[d];
  *n = x->rank > 0 ? x->dims[axis] : 1;
}

/* A parameter tensor's size must be 1 or the axis's size. */
static bool
check_param_tensor (const PlTensor *p, const char *what, int64_t n, GError **error)
{
  if (!p || p->numel == 1 || p->numel == n)
    return true;
  g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "%s has %" G_GINT64_FORMAT " values, not 1 or %" G_GINT64_FORMAT, what,
               p->numel, n);
  return false;
}

/* The zero point's dtype matches its operand's. */
static bool
require_zero_point (const PlNode *node, int zp, int of, GError **error)
{
  const PlValue *z = pl_input (node, zp), *v = pl_input (node, of);
  if (!z || z->dtype == PL_DTYPE_UNDEFINED || v->dtype == PL_DTYPE_UNDEFINED || z->dtype == v->dtype)
    return true;
  g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "input %d (zero point) is %s but input %d is %s", zp,
               pl_dtype_name (z->dtype), of, pl_dtype_name (v->dtype));
  return false;
}

/* --- QuantizeLinear, DequantizeLinear ---------------------------------------------- */

/* Evaluation of the same: the axis's stride and size in x for param_at. */
static bool
eval_params (const PlNode *node, const PlTensor *x, const PlTensor *s, const PlTensor *zp, const char *prefix,
             int64_t *inner, int64_t *n, GError **error)
{
  PlShape xs = pl_tensor_shape (x);
  int axis;
  if (!quant_axis (node, &xs, s->numel > 1 || (zp && zp->numel > 1), &axis, error))
    return false;
  axis_geometry (x, axis, inner, n);
  g_autofree char *scale = g_strdup_printf ("%s_scale", prefix), *zero = g_strdup_printf ("%s_zero_point", prefix);
  return check_param_tensor (s, scale, *n, error) && check_param_tensor (zp, zero, *n, error);
}

static bool
quantize_infer (PlNode *node, GError **error)
{
  const PlValue *zp = pl_input (node, 2);
  if (!pl_require_dtype (node, 0, float_types, error) || !pl_require_dtype (node, 1, float_types, error)
      || (zp && !pl_require_dtype (node, 2, quant_types, error)) || !check_params (node, "y", error))
    return false;
  pl_set_output (node, 0, zp ? zp->dtype : PL_DTYPE_U8, &pl_input (node, 0)->shape);
  return true;
}

static bool
quantize_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0], *s = inputs[1], *zp = node->n_inputs > 2 ? inputs[2] : NULL;
  int64_t inner, n;
  if (!eval_params (node, x, s, zp, "y", &inner, &n, error))
    return false;
  PlDType t = zp ? zp->dtype : PL_DTYPE_U8;
  PlTensor *y = outputs[0] = pl_out_new (t, x->rank, x->dims, error);
  if (!y)
    return false;
  for (int64_t i = 0; i < x->numel; i++)
    pl_tensor_set_f64 (y, i, saturate (divide (pl_tensor_get_f64 (x, i), param_at (s, i, inner, n), x->dtype),
                                       param_at (zp, i, inner, n), t));
  return true;
}

static bool
dequantize_infer (PlNode *node, GError **error)
{
  const PlValue *zp = pl_input (node, 2);
  if (!pl_require_dtype (node, 0, dequant_types, error) || !pl_require_dtype (node, 1, float_types, error)
      || (zp && !pl_require_dtype (node, 2, dequant_types, error)) || !require_zero_point (node, 2, 0, error)
      || !check_params (node, "x", error))
    return false;
  pl_set_output (node, 0, pl_input (node, 1)->dtype, &pl_input (node, 0)->shape);
  return true;
}

static bool
dequantize_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0], *s = inputs[1], *zp = node->n_inputs > 2 ? inputs[2] : NULL;
  int64_t inner, n;
  if (!eval_params (node, x, s, zp, "x", &inner, &n, error))
    return false;
  PlTensor *y = outputs[0] = pl_out_new (s->dtype, x->rank, x->dims, error);
  if (!y)
    return false;
  for (int64_t i = 0; i < x->numel; i++)
    {
      double d = pl_tensor_get_f64 (x, i) - param_at (zp, i, inner, n), sc = param_at (s, i, inner, n);
      pl_tensor_set_f64 (y, i, s->dtype == PL_DTYPE_F32 ? (double) ((float) d * (float) sc) : d * sc);
    }
  return true;
}

/* --- DynamicQuantizeLinear -------------------------------------------------------- */

static bool
dynamic_quantize_infer (PlNode *node, GError **error)
{
  if (!pl_require_dtype (node, 0, f32_only, error))
    return false;
  PlShape scalar = { .rank = 0 };
  pl_set_output (node, 0, PL_DTYPE_U8, &pl_input (node, 0)->shape);
  pl_set_output (node, 1, PL_DTYPE_F32, &scalar);
  pl_set_output (node, 2, PL_DTYPE_U8, &scalar);
  return true;
}

/* y_scale = (max (0, max x) - min (0, min x)) / 255, y_zero_point = the rounded
 * clipped -min / y_scale, y = QuantizeLinear (x) with them; all in float32
 * as the ONNX reference. An all-zero x gets scale 0 and quantizes to 0. */
static bool
dynamic_quantize_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  (void) node;
  const PlTensor *x = inputs[0];
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < x->numel; i++)
    {
      float v = ((const float *) x->data)[i];
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
  float scale = (hi - lo) / 255.0f;
  float zp = scale > 0 ? (float) saturate (0.0f - lo / scale, 0, PL_DTYPE_U8) : 0;
  outputs[0] = pl_out_new (PL_DTYPE_U8, x->rank, x->dims, error);
  outputs[1] = outputs[0] ? pl_out_new (PL_DTYPE_F32, 0, NULL, error) : NULL;
  outputs[2] = outputs[1] ? pl_out_new (PL_DTYPE_U8, 0, NULL, error) : NULL;
  if (!outputs[2])
    return false;
  for (int64_t i = 0; i < x->numel; i++)
    ((guint8 *) outputs[0]->data)[i] =
      scale > 0 ? (guint8) saturate ((float) (((const float *) x->data)[i] / scale), zp, PL_DTYPE_U8) : 0;
  ((float *) outputs[1]->data)[0] = scale;
  ((guint8 *) outputs[2]->data)[0] = (guint8) zp;
  return true;
}

/* --- integer matmul and conv -------------------------------------------------------- */

/* t - zp as an f64 tensor; zp per tensor, or per index along `axis` of t
 * (a row of A: axis rank-2, a column of B: rank-1, an output channel of W: 0). */
static PlTensor *
shifted (const PlTensor *t, const PlTensor *zp, int axis, const char *what, GError **error)
{
  int64_t inner = 1, n = 1;
  if (zp && zp->numel > 1)
    {
      axis = CLAMP (axis, 0, MAX (t->rank - 1, 0));
      axis_geometry (t, axis, &inner, &n);
      if (!check_param_tensor (zp, what, n, error))
        return NULL;
    }
  PlTensor *d = pl_out_new (PL_DTYPE_F64, t->rank, t->dims, error);
  if (!d)
    return NULL;
  for (int64_t i = 0; i < t->numel; i++)
    ((double *) d->data)[i] = pl_tensor_get_f64 (t, i) - param_at (zp, i, inner, n);
  return d;
}

/* The shape of MatMul (a, b) or Conv (x, w) through their own inference. */
static bool
compute_shape (PlNode *node, bool conv, int a, int b, PlShape *out, GError **error)
{
  const PlShape *sa = &pl_input (node, a)->shape, *sb = &pl_input (node, b)->shape;
  return conv ? pl_conv_shape (node, sa, sb, out, error) : pl_nn_matmul_shape (sa, sb, out, error);
}

static bool
matmul_integer_infer (PlNode *node, GError **error)
{
  PlShape out;
  if (!pl_require_dtype (node, 0, quant_types, error) || !pl_require_dtype (node, 1, quant_types, error)
      || !require_zero_point (node, 2, 0, error) || !require_zero_point (node, 3, 1, error)
      || !compute_shape (node, node->op == PL_OP_ConvInteger, 0, 1, &out, error))
    return false;
  pl_set_output (node, 0, PL_DTYPE_I32, &out);
  return true;
}

/* The exact integer result of MatMulInteger / ConvInteger (or the integer
 * part of the QLinear ops): the op's f64 reference on shifted operands. */
static PlTensor *
integer_product (const PlNode *node, const PlTensor *a, const PlTensor *azp, const PlTensor *b, const PlTensor *bzp,
                 const PlTensor *bias, GError **error)
{
  bool conv = node->op == PL_OP_ConvInteger || node->op == PL_OP_QLinearConv;
  if (conv && azp && azp->numel != 1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "the input's zero point must be a scalar");
      return NULL;
    }
  g_autoptr (PlTensor) ad = shifted (a, azp, conv ? 0 : a->rank - 2, "the first zero point", error);
  g_autoptr (PlTensor) bd = ad ? shifted (b, bzp, conv ? 0 : b->rank - 1, "the second zero point", error) : NULL;
  if (!bd)
    return NULL;
  PlTensor *y = NULL;
  if (conv)
    {
      g_autoptr (PlTensor) bias_d = bias ? shifted (bias, NULL, 0, "B", error) : NULL;
      if (bias && !bias_d)
        return NULL;
      return pl_conv_eval_f64 (node, ad, bd, bias_d, &y, error) ? y : NULL;
    }
  return pl_nn_matmul_eval_f64 (ad, bd, &y, error) ? y : NULL;
}

static bool
matmul_integer_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *azp = node->n_inputs > 2 ? inputs[2] : NULL, *bzp = node->n_inputs > 3 ? inputs[3] : NULL;
  g_autoptr (PlTensor) p = integer_product (node, inputs[0], azp, inputs[1], bzp, NULL, error);
  if (!p)
    return false;
  PlTensor *y = outputs[0] = pl_out_new (PL_DTYPE_I32, p->rank, p->dims, error);
  if (!y)
    return false;
  for (int64_t i = 0; i < p->numel; i++)
    ((gint32 *) y->data)[i] = (gint32) ((const double *) p->data)[i];
  return true;
}

/* QLinearMatMul (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp) and
 * QLinearConv (x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B). */
static bool
qlinear_infer (PlNode *node, GError **error)
{
  PlShape out;
  bool conv = node->op == PL_OP_QLinearConv;
  if (!pl_require_dtype (node, 0, quant_types, error) || !pl_require_dtype (node, 3, quant_types, error)
      || !pl_require_dtype (node, 1, f32_only, error) || !pl_require_dtype (node, 4, f32_only, error)
      || !pl_require_dtype (node, 6, f32_only, error) || !pl_require_dtype (node, 7, quant_types, error)
      || !require_zero_point (node, 2, 0, error) || !require_zero_point (node, 5, 3, error)
      || (conv && pl_input (node, 8) && !pl_require_dtype (node, 8, i32_only, error))
      || !compute_shape (node, conv, 0, 3, &out, error))
    return false;
  pl_set_output (node, 0, pl_input (node, 7)->dtype, &out);
  return true;
}

static bool
qlinear_eval (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  bool conv = node->op == PL_OP_QLinearConv;
  const PlTensor *as = inputs[1], *bs = inputs[4], *ys = inputs[6], *yzp = inputs[7];
  const PlTensor *bias = conv && node->n_inputs > 8 ? inputs[8] : NULL;
  g_autoptr (PlTensor) p = integer_product (node, inputs[0], inputs[2], inputs[3], inputs[5], bias, error);
  if (!p)
    return false;
  /* b's scale: per tensor, or per column of B (matmul) / output channel of W (conv) */
  int axis = conv ? 1 : p->rank - 1;
  int64_t inner, n;
  axis_geometry (p, MAX (axis, 0), &inner, &n);
  if (as->numel != 1 || ys->numel != 1 || yzp->numel != 1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "the scales and zero points of %s must be scalars",
                   conv ? "x and y" : "a and y");
      return false;
    }
  if (!check_param_tensor (bs, conv ? "w_scale" : "b_scale", n, error))
    return false;
  PlDType t = yzp->dtype;
  PlTensor *y = outputs[0] = pl_out_new (t, p->rank, p->dims, error);
  if (!y)
    return false;
  const float a_s = (float) pl_tensor_get_f64 (as, 0), y_s = (float) pl_tensor_get_f64 (ys, 0);
  const double zp = pl_tensor_get_f64 (yzp, 0);
  for (int64_t i = 0; i < p->numel; i++)
    {
      float m = a_s * (float) param_at (bs, i, inner, n) / y_s;
      pl_tensor_set_f64 (y, i, saturate (((const double *) p->data)[i] * (double) m, zp, t));
    }
  return true;
}

void
pl_ops_register_quant (void)
{
  static const PlOpEntry entries[] = {
    { PL_OP_QuantizeLinear, 2, 3, 1, 1, quantize_infer, quantize_eval },
    { PL_OP_DequantizeLinear, 2, 3, 1, 1, dequantize_infer, dequantize_eval },
    { PL_OP_DynamicQuantizeLinear, 1, 1, 3, 3, dynamic_quantize_infer, dynamic_quantize_eval },
    { PL_OP_MatMulInteger, 2, 4, 1, 1, matmul_integer_infer, matmul_integer_eval },
    { PL_OP_ConvInteger, 2, 4, 1, 1, matmul_integer_infer, matmul_integer_eval },
    { PL_OP_QLinearMatMul, 8, 8, 1, 1, qlinear_infer, qlinear_eval },
    { PL_OP_QLinearConv, 8, 9, 1, 1, qlinear_infer, qlinear_eval },
  };
  pl_ops_register (entries, G_N_ELEMENTS (entries));
}
