/* ops-unary.c — shape inference and reference evaluation of the one-input
 * elementwise ops (Abs .. Mish, Not, IsNaN, IsInf) and of the elementwise ops
 * with a few side inputs: Clip, Cast, CastLike, Identity, Dropout, Trilu.
 *
 * The math ops share one table: each names its accepted dtypes, a double
 * function, and, where integers must be exact (Abs, Neg, Relu, Sign, Not),
 * an int64 function. Semantics follow the ONNX operator docs (opset <= 17;
 * Gelu as in opset 20) and the numpy code that made the conformance data.
 * Registered through pl_ops_register_unary(), called from ops-elementwise.c.
 */
#define G_LOG_DOMAIN "passlab"
#include "ops-elementwise.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Attributes of a math op, read once per evaluation. */
typedef struct {
  double alpha, beta, gamma;
  bool   flag_a, flag_b;  /* IsInf: detect_negative, detect_positive; Gelu: tanh approximation */
  bool   is_unsigned;     /* the (integer) input is unsigned */
} UnaryCtx;

typedef double  (*UnaryF) (double x, const UnaryCtx *c);
typedef int64_t (*UnaryI) (int64_t x, const UnaryCtx *c);

typedef struct {
  PlOp     op;
  unsigned types;    /* accepted input dtypes */
  UnaryF   f;        /* the op in double */
  UnaryI   i;        /* exact integer version; NULL: integers go through f */
  bool     to_bool;  /* the output is bool (IsNaN, IsInf) */
} UnaryDef;

/* --- the math ------------------------------------------------------------- */

#define UNARY_F(name, expr) \
  static double f_##name (double x, const UnaryCtx *c G_GNUC_UNUSED) { return (expr); }

UNARY_F (abs, fabs (x))
UNARY_F (neg, -x)
UNARY_F (exp, exp (x))
UNARY_F (log, log (x))
UNARY_F (sqrt, sqrt (x))
UNARY_F (reciprocal, 1.0 / x)
/* Split at 0 so neither branch overflows exp(). */
UNARY_F (sigmoid, x >= 0 ? 1.0 / (1.0 + exp (-x)) : exp (x) / (1.0 + exp (x)))
UNARY_F (tanh, tanh (x))
UNARY_F (relu, x < 0 ? 0.0 : x)   /* keeps NaN */
UNARY_F (leaky_relu, x < 0 ? c->alpha * x : x)
UNARY_F (elu, x < 0 ? c->alpha * expm1 (x) : x)
UNARY_F (selu, x <= 0 ? c->gamma * (c->alpha * exp (x) - c->alpha) : c->gamma * x)
UNARY_F (celu, fmax (0.0, x) + fmin (0.0, c->alpha * expm1 (x / c->alpha)))
UNARY_F (erf, erf (x))
UNARY_F (sin, sin (x))
UNARY_F (cos, cos (x))
UNARY_F (tan, tan (x))
UNARY_F (asin, asin (x))
UNARY_F (acos, acos (x))
UNARY_F (atan, atan (x))
UNARY_F (sinh, sinh (x))
UNARY_F (cosh, cosh (x))
UNARY_F (asinh, asinh (x))
UNARY_F (acosh, acosh (x))
UNARY_F (atanh, atanh (x))
UNARY_F (floor, floor (x))
UNARY_F (ceil, ceil (x))
UNARY_F (round, nearbyint (x))  /* halves to even, as numpy.round */
UNARY_F (sign, x > 0 ? 1.0 : x < 0 ? -1.0 : x)  /* 0 and NaN map to themselves */
/* log(1 + e^x) without overflow for large x. */
UNARY_F (softplus, x > 0 ? x + log1p (exp (-x)) : log1p (exp (x)))
UNARY_F (softsign, x / (1.0 + fabs (x)))
UNARY_F (hard_sigmoid, fmax (0.0, fmin (1.0, c->alpha * x + c->beta)))
UNARY_F (hard_swish, x * fmax (0.0, fmin (1.0, x / 6.0 + 0.5)))
UNARY_F (thresholded_relu, x > c->alpha ? x : 0.0)
/* alpha = lambd, beta = bias */
UNARY_F (shrink, x < -c->alpha ? x + c->beta : x > c->alpha ? x - c->beta : 0.0)
UNARY_F (mish, x * tanh (x > 0 ? x + log1p (exp (-x)) : log1p (exp (x))))
UNARY_F (not, x == 0 ? 1.0 : 0.0)
UNARY_F (isnan, isnan (x) ? 1.0 : 0.0)
UNARY_F (isinf, isinf (x) && (x > 0 ? c->flag_b : c->flag_a) ? 1.0 : 0.0)

static double
f_gelu (double x, const UnaryCtx *c)
{
  if (c->flag_b)
    return 0.5 * x * (1.0 + tanh (sqrt (2.0 / G_PI) * (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1.0 + erf (x / G_SQRT2));
}

/* Integer versions wrap like the C types do, without signed overflow. */
static int64_t
i_abs (int64_t x, const UnaryCtx *c)
{
  return c->is_unsigned || x >= 0 ? x : (int64_t) (0 - (uint64_t) x);
}

static int64_t
i_neg (int64_t x, const UnaryCtx *c G_GNUC_UNUSED)
{
  return (int64_t) (0 - (uint64_t) x);
}

static int64_t
i_relu (int64_t x, const UnaryCtx *c)
{
  return c->is_unsigned || x > 0 ? x : 0;
}

static int64_t
i_sign (int64_t x, const UnaryCtx *c)
{
  if (c->is_unsigned)
    return x != 0;
  return (x > 0) - (x < 0);
}

static int64_t
i_not (int64_t x, const UnaryCtx *c G_GNUC_UNUSED)
{
  return x == 0;
}

static const UnaryDef unary_defs[] = {
  { PL_OP_Abs, PL_TY_NUM, f_abs, i_abs, false },
  { PL_OP_Neg, PL_TY_SIGNED, f_neg, i_neg, false },
  { PL_OP_Exp, PL_TY_FLOAT, f_exp, NULL, false },
  { PL_OP_Log, PL_TY_FLOAT, f_log, NULL, false },
  { PL_OP_Sqrt, PL_TY_FLOAT, f_sqrt, NULL, false },
  { PL_OP_Reciprocal, PL_TY_FLOAT, f_reciprocal, NULL, false },
  { PL_OP_Sigmoid, PL_TY_FLOAT, f_sigmoid, NULL, false },
  { PL_OP_Tanh, PL_TY_FLOAT, f_tanh, NULL, false },
  { PL_OP_Relu, PL_TY_SIGNED, f_relu, i_relu, false },
  { PL_OP_LeakyRelu, PL_TY_FLOAT, f_leaky_relu, NULL, false },
  { PL_OP_Elu, PL_TY_FLOAT, f_elu, NULL, false },
  { PL_OP_Selu, PL_TY_FLOAT, f_selu, NULL, false },
  { PL_OP_Celu, PL_TY_FLOAT, f_celu, NULL, false },
  { PL_OP_Gelu, PL_TY_FLOAT, f_gelu, NULL, false },
  { PL_OP_Erf, PL_TY_NUM, f_erf, NULL, false },
  { PL_OP_Sin, PL_TY_FLOAT, f_sin, NULL, false },
  { PL_OP_Cos, PL_TY_FLOAT, f_cos, NULL, false },
  { PL_OP_Tan, PL_TY_FLOAT, f_tan, NULL, false },
  { PL_OP_Asin, PL_TY_FLOAT, f_asin, NULL, false },
  { PL_OP_Acos, PL_TY_FLOAT, f_acos, NULL, false },
  { PL_OP_Atan, PL_TY_FLOAT, f_atan, NULL, false },
  { PL_OP_Sinh, PL_TY_FLOAT, f_sinh, NULL, false },
  { PL_OP_Cosh, PL_TY_FLOAT, f_cosh, NULL, false },
  { PL_OP_Asinh, PL_TY_FLOAT, f_asinh, NULL, false },
  { PL_OP_Acosh, PL_TY_FLOAT, f_acosh, NULL, false },
  { PL_OP_Atanh, PL_TY_FLOAT, f_atanh, NULL, false },
  { PL_OP_Floor, PL_TY_FLOAT, f_floor, NULL, false },
  { PL_OP_Ceil, PL_TY_FLOAT, f_ceil, NULL, false },
  { PL_OP_Round, PL_TY_FLOAT, f_round, NULL, false },
  { PL_OP_Sign, PL_TY_NUM, f_sign, i_sign, false },
  { PL_OP_Softplus, PL_TY_FLOAT, f_softplus, NULL, false },
  { PL_OP_Softsign, PL_TY_FLOAT, f_softsign, NULL, false },
  { PL_OP_HardSigmoid, PL_TY_FLOAT, f_hard_sigmoid, NULL, false },
  { PL_OP_HardSwish, PL_TY_FLOAT, f_hard_swish, NULL, false },
  { PL_OP_ThresholdedRelu, PL_TY_FLOAT, f_thresholded_relu, NULL, false },
  { PL_OP_Shrink, PL_TY_NUM, f_shrink, NULL, false },
  { PL_OP_Mish, PL_TY_FLOAT, f_mish, NULL, false },
  { PL_OP_Not, PL_TY_BOOL, f_not, i_not, false },
  { PL_OP_IsNaN, PL_TY_FLOAT, f_isnan, NULL, true },
  { PL_OP_IsInf, PL_TY_FLOAT, f_isinf, NULL, true },
};

static const UnaryDef *
unary_def (PlOp op)
{
  for (size_t k = 0; k < G_N_ELEMENTS (unary_defs); k++)
    if (unary_defs[k].op == op)
      return &unary_defs[k];
  g_assert_not_reached ();
  return NULL;
}

/* The math of one-input op `op` on one double, alpha and beta standing for
 * its attributes (LeakyRelu's, Elu's, ThresholdedRelu's alpha; HardSigmoid's
 * alpha and beta): the activations of the recurrent ops (ops-rnn.c). */
double
pl_unary_apply_f64 (PlOp op, double x, double alpha, double beta)
{
  const UnaryCtx c = { .alpha = alpha, .beta = beta };
  return unary_def (op)->f (x, &c);
}

/* Reads the op's attributes with the ONNX defaults. */
static bool
unary_ctx (const PlNode *node, UnaryCtx *c, GError **error)
{
  memset (c, 0, sizeof *c);
  switch (node->op)
    {
    case PL_OP_LeakyRelu:
      c->alpha = pl_node_attr_float (node, "alpha", 0.01f);
      break;
    case PL_OP_Elu:
    case PL_OP_Celu:
    case PL_OP_ThresholdedRelu:
      c->alpha = pl_node_attr_float (node, "alpha", 1.0f);
      break;
    case PL_OP_Selu:
      c->alpha = pl_node_attr_float (node, "alpha", 1.67326319217681884765625f);
      c->gamma = pl_node_attr_float (node, "gamma", 1.05070102214813232421875f);
      break;
    case PL_OP_HardSigmoid:
      c->alpha = pl_node_attr_float (node, "alpha", 0.2f);
      c->beta = pl_node_attr_float (node, "beta", 0.5f);
      break;
    case PL_OP_Shrink:
      c->alpha = pl_node_attr_float (node, "lambd", 0.5f);
      c->beta = pl_node_attr_float (node, "bias", 0.0f);
      break;
    case PL_OP_IsInf:
      c->flag_a = pl_node_attr_int (node, "detect_negative", 1) != 0;
      c->flag_b = pl_node_attr_int (node, "detect_positive", 1) != 0;
      break;
    case PL_OP_Gelu:
      {
        const char *approx = pl_node_attr_string (node, "approximate", "none");
        if (strcmp (approx, "tanh") == 0)
          c->flag_b = true;
        else if (strcmp (approx, "none") != 0)
          {
            g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED,
                         "approximate='%s' is not supported (expects 'none' or 'tanh')", approx);
            return false;
          }
      }
      break;
    default:
      break;
    }
  return true;
}

static bool
infer_unary (PlNode *node, GError **error)
{
  const UnaryDef *def = unary_def (node->op);
  UnaryCtx c;
  if (!pl_ew_require (node, 0, error) || !pl_ew_check_dtype (node, 0, def->types, error)
      || !unary_ctx (node, &c, error))
    return false;
  PlValue *x = pl_input (node, 0);
  pl_set_output (node, 0, def->to_bool ? PL_DTYPE_BOOL : x->dtype, &x->shape);
  return true;
}

static bool
eval_unary (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const UnaryDef *def = unary_def (node->op);
  const PlTensor *x = inputs[0];
  UnaryCtx c;
  if (!unary_ctx (node, &c, error))
    return false;
  c.is_unsigned = pl_dtype_is_int (x->dtype) && !pl_dtype_is_signed (x->dtype);

  PlTensor *y = pl_out_new (def->to_bool ? PL_DTYPE_BOOL : x->dtype, x->rank, x->dims, error);
  if (!y)
    return false;
  if (def->i && !pl_dtype_is_float (x->dtype))
    for (int64_t i = 0; i < x->numel; i++)
      pl_tensor_set_i64 (y, i, def->i (pl_tensor_get_i64 (x, i), &c));
  else
    for (int64_t i = 0; i < x->numel; i++)
      pl_tensor_set_f64 (y, i, def->f (pl_tensor_get_f64 (x, i), &c));
  outputs[0] = y;
  return true;
}

/* --- Clip ------------------------------------------------------------------- */

/* min and max are inputs 1 and 2 since opset 11, float attributes before. */
static bool
infer_clip (PlNode *node, GError **error)
{
  if (!pl_ew_require (node, 0, error) || !pl_ew_check_dtype (node, 0, PL_TY_NUM, error))
    return false;
  for (int i = 1; i <= 2; i++)
    {
      PlValue *b = pl_input (node, i);
      if (!b)
        continue;
      if (!pl_ew_same_dtype (node, 0, i, error))
        return false;
      int64_t n = pl_shape_numel (&b->shape);
      if (n > 1 || n == 0)
        {
          g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "input %d (%s) must be a scalar, got %"
                       G_GINT64_FORMAT " elements", i, i == 1 ? "min" : "max", n);
          return false;
        }
    }
  PlValue *x = pl_input (node, 0);
  pl_set_output (node, 0, x->dtype, &x->shape);
  return true;
}

/* Reads bound input i into *f (and *n for integers); false when absent. */
static bool
clip_bound (const PlTensor *t, double *f, int64_t *n, GError **error)
{
  if (!t)
    return true;
  if (t->numel != 1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "Clip bounds must be scalars, got %"
                   G_GINT64_FORMAT " elements", t->numel);
      return false;
    }
  *f = pl_tensor_get_f64 (t, 0);
  *n = pl_tensor_get_i64 (t, 0);
  return true;
}

static bool
eval_clip (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  bool is_u64 = x->dtype == PL_DTYPE_U64;
  double flo = -INFINITY, fhi = INFINITY;
  int64_t ilo = is_u64 ? 0 : INT64_MIN, ihi = is_u64 ? -1 /* UINT64_MAX */ : INT64_MAX;

  if (pl_ew_opset (node) < 11)
    {
      flo = pl_node_attr_float (node, "min", -FLT_MAX);
      fhi = pl_node_attr_float (node, "max", FLT_MAX);
    }
  else if (!clip_bound (node->n_inputs > 1 ? inputs[1] : NULL, &flo, &ilo, error)
           || !clip_bound (node->n_inputs > 2 ? inputs[2] : NULL, &fhi, &ihi, error))
    return false;

  PlTensor *y = pl_out_new (x->dtype, x->rank, x->dims, error);
  if (!y)
    return false;
  for (int64_t i = 0; i < x->numel; i++)
    if (pl_dtype_is_float (x->dtype))
      {
        /* Compare rather than fmin/fmax so NaN passes through; min > max gives max. */
        double v = pl_tensor_get_f64 (x, i);
        if (v < flo)
          v = flo;
        if (v > fhi)
          v = fhi;
        pl_tensor_set_f64 (y, i, v);
      }
    else if (is_u64)
      {
        uint64_t v = (uint64_t) pl_tensor_get_i64 (x, i);
        if (v < (uint64_t) ilo)
          v = (uint64_t) ilo;
        if (v > (uint64_t) ihi)
          v = (uint64_t) ihi;
        pl_tensor_set_i64 (y, i, (int64_t) v);
      }
    else
      {
        int64_t v = pl_tensor_get_i64 (x, i);
        if (v < ilo)
          v = ilo;
        if (v > ihi)
          v = ihi;
        pl_tensor_set_i64 (y, i, v);
      }
  outputs[0] = y;
  return true;
}

/* --- Cast, CastLike, Identity ---------------------------------------------- */

/* Cast's `to`: an ONNX type code, or (opset 1) its TensorProto name. */
static bool
cast_target (const PlNode *node, PlDType *to, GError **error)
{
  static const struct { const char *name; int code; } names[] = {
    { "FLOAT", 1 }, { "UINT8", 2 }, { "INT8", 3 }, { "UINT16", 4 }, { "INT16", 5 },
    { "INT32", 6 }, { "INT64", 7 }, { "STRING", 8 }, { "BOOL", 9 }, { "FLOAT16", 10 },
    { "DOUBLE", 11 }, { "UINT32", 12 }, { "UINT64", 13 }, { "BFLOAT16", 16 },
  };
  const PlAttr *a = pl_node_attr (node, "to");
  int64_t code = -1;
  if (a && a->type == PL_ATTR_INT)
    code = a->i;
  else if (a && a->type == PL_ATTR_STRING)
    for (size_t k = 0; k < G_N_ELEMENTS (names); k++)
      if (g_ascii_strcasecmp (a->s, names[k].name) == 0)
        code = names[k].code;
  if (!a)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "attribute 'to' is required");
      return false;
    }
  *to = code >= 0 && code <= G_MAXINT ? pl_dtype_from_onnx ((int) code) : PL_DTYPE_UNDEFINED;
  if (*to == PL_DTYPE_UNDEFINED)
    {
      if (a->type == PL_ATTR_STRING)
        g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED, "cast to %s is not supported", a->s);
      else
        g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED,
                     "cast to ONNX type %" G_GINT64_FORMAT "%s is not supported", code,
                     code == 8 ? " (string)" : "");
      return false;
    }
  return true;
}

static bool
infer_cast (PlNode *node, GError **error)
{
  PlDType to;
  if (!pl_ew_require (node, 0, error) || !cast_target (node, &to, error))
    return false;
  pl_set_output (node, 0, to, &pl_input (node, 0)->shape);
  return true;
}

static bool
eval_cast (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  PlDType to;
  if (!cast_target (node, &to, error))
    return false;
  outputs[0] = pl_tensor_cast (inputs[0], to);
  return true;
}

static bool
infer_cast_like (PlNode *node, GError **error)
{
  if (!pl_ew_require (node, 0, error) || !pl_ew_require (node, 1, error))
    return false;
  pl_set_output (node, 0, pl_input (node, 1)->dtype, &pl_input (node, 0)->shape);
  return true;
}

static bool
eval_cast_like (const PlNode *node G_GNUC_UNUSED, PlTensor *const *inputs, PlTensor **outputs,
                GError **error G_GNUC_UNUSED)
{
  outputs[0] = pl_tensor_cast (inputs[0], inputs[1]->dtype);
  return true;
}

static bool
infer_identity (PlNode *node, GError **error)
{
  if (!pl_ew_require (node, 0, error))
    return false;
  PlValue *x = pl_input (node, 0);
  pl_set_output (node, 0, x->dtype, &x->shape);
  return true;
}

/* Tensors are immutable once shared, so the output is the input itself. */
static bool
eval_identity (const PlNode *node G_GNUC_UNUSED, PlTensor *const *inputs, PlTensor **outputs,
               GError **error G_GNUC_UNUSED)
{
  outputs[0] = pl_tensor_ref (inputs[0]);
  return true;
}

/* --- Dropout ---------------------------------------------------------------- */

/* The mask is bool since opset 10, the data's type before. */
static PlDType
dropout_mask_dtype (const PlNode *node, PlDType data)
{
  return pl_ew_opset (node) >= 10 ? PL_DTYPE_BOOL : data;
}

static bool
infer_dropout (PlNode *node, GError **error)
{
  if (!pl_ew_require (node, 0, error) || !pl_ew_check_dtype (node, 0, PL_TY_FLOAT, error)
      || !pl_ew_check_dtype (node, 1, PL_TY_FLOAT, error)
      || !pl_ew_check_dtype (node, 2, PL_TY_BOOL, error))
    return false;
  PlValue *x = pl_input (node, 0);
  pl_set_output (node, 0, x->dtype, &x->shape);
  pl_set_output (node, 1, dropout_mask_dtype (node, x->dtype), &x->shape);
  return true;
}

/* Inference mode (no training_mode input, or false, or ratio 0) is the
 * identity with an all-true mask. Training mode drops at random: no
 * reference result exists, so it is refused. Before opset 12 the op has no
 * training mode we honour (is_test of opset <= 6 is ignored, as runtimes do). */
static bool
eval_dropout (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  bool training = false;
  double ratio = pl_node_attr_float (node, "ratio", 0.5f);
  if (pl_ew_opset (node) >= 12)
    {
      const PlTensor *r = node->n_inputs > 1 ? inputs[1] : NULL;
      const PlTensor *t = node->n_inputs > 2 ? inputs[2] : NULL;
      ratio = r && r->numel > 0 ? pl_tensor_get_f64 (r, 0) : 0.5;
      training = t && t->numel > 0 && pl_tensor_get_i64 (t, 0) != 0;
    }
  if (training && ratio != 0)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED,
                   "training-mode Dropout is random (ratio %g)", ratio);
      return false;
    }
  if (node->n_outputs > 1 && node->outputs[1])
    {
      PlTensor *mask = pl_out_new (dropout_mask_dtype (node, x->dtype), x->rank, x->dims, error);
      if (!mask)
        return false;
      for (int64_t i = 0; i < mask->numel; i++)
        pl_tensor_set_i64 (mask, i, 1);
      outputs[1] = mask;
    }
  outputs[0] = pl_tensor_ref (inputs[0]);
  return true;
}

/* --- Trilu ------------------------------------------------------------------ */

static bool
infer_trilu (PlNode *node, GError **error)
{
  if (!pl_ew_require (node, 0, error) || !pl_ew_check_dtype (node, 1, PL_TY_INT, error))
    return false;
  PlValue *x = pl_input (node, 0);
  PlValue *k = pl_input (node, 1);
  if (x->shape.rank != PL_RANK_UNKNOWN && x->shape.rank < 2)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "input must have rank >= 2, got %d",
                   x->shape.rank);
      return false;
    }
  if (k && k->shape.rank > 0 && pl_shape_numel (&k->shape) != 1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_SHAPE, "k must be a scalar");
      return false;
    }
  pl_set_output (node, 0, x->dtype, &x->shape);
  return true;
}

/* Keeps the elements with col - row >= k (upper) or <= k (lower) of every
 * matrix in the last two dims; the rest stay zero. */
static bool
eval_trilu (const PlNode *node, PlTensor *const *inputs, PlTensor **outputs, GError **error)
{
  const PlTensor *x = inputs[0];
  const PlTensor *kt = node->n_inputs > 1 ? inputs[1] : NULL;
  bool upper = pl_node_attr_int (node, "upper", 1) != 0;
  if (x->rank < 2)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "Trilu needs rank >= 2, got %d", x->rank);
      return false;
    }
  if (kt && kt->numel != 1)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_EXEC, "Trilu's k must be a scalar");
      return false;
    }
  int64_t k = kt ? pl_tensor_get_i64 (kt, 0) : 0;
  int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
  size_t es = pl_dtype_size (x->dtype);

  PlTensor *y = pl_out_new (x->dtype, x->rank, x->dims, error);
  if (!y)
    return false;
  for (int64_t i = 0; i < x->numel; i++)
    {
      int64_t c = i % cols, r = (i / cols) % rows;
      if (upper ? c - r >= k : c - r <= k)
        memcpy ((char *) y->data + i * es, (const char *) x->data + i * es, es);
    }
  outputs[0] = y;
  return true;
}

/* --- registration ---------------------------------------------------------- */

void
pl_ops_register_unary (void)
{
  PlOpEntry entries[G_N_ELEMENTS (unary_defs) + 6];
  int n = 0;
  for (size_t k = 0; k < G_N_ELEMENTS (unary_defs); k++)
    entries[n++] = (PlOpEntry) { unary_defs[k].op, 1, 1, 1, 1, infer_unary, eval_unary };
  entries[n++] = (PlOpEntry) { PL_OP_Clip, 1, 3, 1, 1, infer_clip, eval_clip };
  entries[n++] = (PlOpEntry) { PL_OP_Cast, 1, 1, 1, 1, infer_cast, eval_cast };
  entries[n++] = (PlOpEntry) { PL_OP_CastLike, 2, 2, 1, 1, infer_cast_like, eval_cast_like };
  entries[n++] = (PlOpEntry) { PL_OP_Identity, 1, 1, 1, 1, infer_identity, eval_identity };
  entries[n++] = (PlOpEntry) { PL_OP_Dropout, 1, 3, 1, 2, infer_dropout, eval_dropout };
  entries[n++] = (PlOpEntry) { PL_OP_Trilu, 1, 2, 1, 1, infer_trilu, eval_trilu };
  pl_ops_register (entries, n);
}
