/* test-ops-elementwise.c — shape inference and reference results of the
 * elementwise ops (ops-elementwise.c, ops-unary.c). Expected values were
 * computed by hand or with numpy, following the ONNX conformance generators. */
#define G_LOG_DOMAIN "passlab-test"
#include "test-util.h"

#include <math.h>
#include <string.h>

#define F32 PL_DTYPE_F32
#define F64 PL_DTYPE_F64
#define I64 PL_DTYPE_I64
#define BOOL PL_DTYPE_BOOL

/* Runs a one-node graph whose inputs are all graph inputs, checks output
 * `out`'s dtype and values, and frees the results. */
static void
check_output (PlGraph *g, PlTensor *const *ins, int out, PlDType dtype, const double *want)
{
  PlNode *node = g->nodes->pdata[0];
  PlTensor **outs = pl_test_run (g, ins, 0);
  g_assert_cmpstr (pl_dtype_name (outs[out]->dtype), ==, pl_dtype_name (dtype));
  pl_test_assert_values (outs[out], want);
  pl_interp_free_outputs (outs, node->n_outputs);
}

/* The inferred shape of a one-node graph's output i, as text. */
static char *
inferred_shape (PlGraph *g, int i)
{
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_infer_shapes (g, &error));
  PlNode *node = g->nodes->pdata[0];
  return pl_shape_to_string (&node->outputs[i]->shape);
}

/* --- unary math --------------------------------------------------------------- */

typedef struct {
  const char *op;
  const char *attr;   /* one float attribute, or NULL */
  double      value;
  double      x[5], y[5];
} UnaryCase;

/* numpy: tests/ expected values from the formulas in onnx/backend/test/case/node. */
static const UnaryCase unary_cases[] = {
  { "Abs", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 }, { 2, 0.5, 0, 0.5, 2 } },
  { "Neg", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 }, { 2, 0.5, -0, -0.5, -2 } },
  { "Exp", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 },
    { 0.13533528323661267, 0.60653065971263342, 1, 1.6487212707001282, 7.3890560989306504 } },
  { "Log", NULL, 0.0, { 0.25, 0.5, 1, 2, 10 },
    { -1.3862943611198906, -0.69314718055994529, 0, 0.69314718055994529, 2.3025850929940455 } },
  { "Sqrt", NULL, 0.0, { 0.25, 0.5, 1, 2, 10 },
    { 0.5, 0.70710678118654757, 1, 1.4142135623730951, 3.1622776601683795 } },
  { "Reciprocal", NULL, 0.0, { 0.25, 0.5, 1, 2, 10 }, { 4, 2, 1, 0.5, 0.1 } },
  { "Sigmoid", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 },
    { 0.11920292202211755, 0.37754066879814541, 0.5, 0.62245933120185459, 0.88079707797788254 } },
  { "Tanh", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 },
    { -0.9640275800758169, -0.46211715726000974, 0, 0.46211715726000974, 0.9640275800758169 } },
  { "Relu", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 }, { 0, 0, 0, 0.5, 2 } },
  { "LeakyRelu", "alpha", 0.1, { -2, -0.5, 0, 0.5, 2 },
    { -0.20000000298023224, -0.05000000074505806, 0, 0.5, 2 } },
  { "Elu", "alpha", 2.0, { -2, -0.5, 0, 0.5, 2 },
    { -1.7293294335267746, -0.78693868057473315, 0, 0.5, 2 } },
  { "Selu", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 },
    { -1.5201664733475926, -0.69175818996524263, 0, 0.52535051107406616, 2.1014020442962646 } },
  { "Celu", "alpha", 2.0, { -2, -0.5, 0, 0.5, 2 },
    { -1.2642411176571153, -0.44239843385719024, 0, 0.5, 2 } },
  { "Gelu", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 },
    { -0.045500263896358417, -0.15426876936299344, 0, 0.34573123063700656, 1.9544997361036416 } },
  { "Erf", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 },
    { -0.99532226501895271, -0.52049987781304652, 0, 0.52049987781304652, 0.99532226501895271 } },
  { "Sin", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 },
    { -0.9092974268256816, -0.47942553860420295, 0, 0.47942553860420295, 0.9092974268256816 } },
  { "Cos", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 },
    { -0.41614683654714241, 0.87758256189037254, 1, 0.87758256189037254, -0.41614683654714241 } },
  { "Tan", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 },
    { 2.1850398632615189, -0.54630248984379048, 0, 0.54630248984379048, -2.1850398632615189 } },
  { "Asin", NULL, 0.0, { -0.9, -0.5, 0, 0.5, 0.9 },
    { -1.1197695149986342, -0.52359877559829893, 0, 0.52359877559829893, 1.1197695149986342 } },
  { "Acos", NULL, 0.0, { -0.9, -0.5, 0, 0.5, 0.9 },
    { 2.6905658417935308, 2.0943951023931957, 1.5707963267948966, 1.0471975511965976,
      0.45102681179626236 } },
  { "Atan", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 },
    { -1.1071487177940904, -0.46364760900080609, 0, 0.46364760900080609, 1.1071487177940904 } },
  { "Sinh", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 },
    { -3.6268604078470186, -0.52109530549374738, 0, 0.52109530549374738, 3.6268604078470186 } },
  { "Cosh", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 },
    { 3.7621956910836314, 1.1276259652063807, 1, 1.1276259652063807, 3.7621956910836314 } },
  { "Asinh", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 },
    { -1.4436354751788103, -0.48121182505960347, 0, 0.48121182505960347, 1.4436354751788103 } },
  { "Acosh", NULL, 0.0, { 1, 1.5, 2, 5, 10 },
    { 0, 0.96242365011920694, 1.3169578969248168, 2.2924316695611777, 2.9932228461263808 } },
  { "Atanh", NULL, 0.0, { -0.9, -0.5, 0, 0.5, 0.9 },
    { -1.4722194895832204, -0.54930614433405489, 0, 0.54930614433405489, 1.4722194895832204 } },
  { "Floor", NULL, 0.0, { -1.5, -0.5, 0, 0.5, 1.7 }, { -2, -1, 0, 0, 1 } },
  { "Ceil", NULL, 0.0, { -1.5, -0.5, 0, 0.5, 1.7 }, { -1, -0, 0, 1, 2 } },
  { "Round", NULL, 0.0, { -2.5, -1.5, 0.5, 1.5, 2.6 }, { -2, -2, 0, 2, 3 } },  /* halves to even */
  { "Sign", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 }, { -1, -1, 0, 1, 1 } },
  { "Softplus", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 },
    { 0.12692801104297249, 0.47407698418010669, 0.69314718055994529, 0.97407698418010669,
      2.1269280110429722 } },
  { "Softsign", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 },
    { -0.66666666666666663, -0.33333333333333331, 0, 0.33333333333333331, 0.66666666666666663 } },
  { "HardSigmoid", "alpha", 0.5, { -2, -0.5, 0, 0.5, 2 }, { 0, 0.25, 0.5, 0.75, 1 } },
  { "HardSwish", NULL, 0.0, { -4, -1, 0, 1, 4 },
    { -0, -0.33333333333333337, 0, 0.66666666666666663, 4 } },
  { "ThresholdedRelu", "alpha", 0.5, { -2, 0.4, 0.5, 0.6, 2 }, { 0, 0, 0, 0.6, 2 } },
  { "Shrink", "lambd", 1.0, { -2, -1, 0, 1, 2 }, { -2, 0, 0, 0, 2 } },  /* bias 0 */
  { "Mish", NULL, 0.0, { -2, -0.5, 0, 0.5, 2 },
    { -0.25250148269570888, -0.22074377465173001, 0, 0.37524521130489508, 1.9439589595339946 } },
};

/* Every math op in f32 and f64 against numpy. */
static void
test_unary_math (void)
{
  const PlDType dtypes[] = { F32, F64 };
  for (size_t c = 0; c < G_N_ELEMENTS (unary_cases); c++)
    for (size_t d = 0; d < G_N_ELEMENTS (dtypes); d++)
      {
        const UnaryCase *uc = &unary_cases[c];
        g_autoptr (PlTensor) x = pl_test_tensor (dtypes[d], 2, PL_DIMS (1, 5), uc->x);
        PlNode *node;
        g_autoptr (PlGraph) g = pl_test_node_graph (uc->op, 1, &x, 0, 1, &node);
        if (uc->attr)
          pl_node_set_attr_float (node, uc->attr, (float) uc->value);
        g_test_message ("%s %s", uc->op, pl_dtype_name (dtypes[d]));
        check_output (g, &x, 0, dtypes[d], uc->y);
      }
}

/* Abs, Neg, Relu and Sign are exact on integers, even past 2^53. */
static void
test_unary_int (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (I64, 1, PL_DIMS (4), PL_VALS (-5, 0, 3, 0));
  ((int64_t *) x->data)[3] = -9007199254740993;  /* -(2^53 + 1): not a double */
  const char *ops[] = { "Abs", "Neg", "Relu", "Sign" };
  const int64_t want[4][4] = {
    { 5, 0, 3, 9007199254740993 },
    { 5, 0, -3, 9007199254740993 },
    { 0, 0, 3, 0 },
    { -1, 0, 1, -1 },
  };
  for (int k = 0; k < 4; k++)
    {
      g_autoptr (PlGraph) g = pl_test_node_graph (ops[k], 1, &x, 0, 1, NULL);
      PlTensor **outs = pl_test_run (g, &x, 0);
      g_assert_cmpint (outs[0]->dtype, ==, I64);
      for (int i = 0; i < 4; i++)
        g_assert_cmpint (((int64_t *) outs[0]->data)[i], ==, want[k][i]);
      pl_interp_free_outputs (outs, 1);
    }

  /* Unsigned: Abs is the identity, Sign is 0 or 1; i8 wraps like C. */
  g_autoptr (PlTensor) u = pl_test_tensor (PL_DTYPE_U8, 1, PL_DIMS (3), PL_VALS (0, 7, 255));
  g_autoptr (PlGraph) ga = pl_test_node_graph ("Abs", 1, &u, 0, 1, NULL);
  check_output (ga, &u, 0, PL_DTYPE_U8, PL_VALS (0, 7, 255));
  g_autoptr (PlGraph) gs = pl_test_node_graph ("Sign", 1, &u, 0, 1, NULL);
  check_output (gs, &u, 0, PL_DTYPE_U8, PL_VALS (0, 1, 1));
  g_autoptr (PlTensor) s8 = pl_test_tensor (PL_DTYPE_I8, 1, PL_DIMS (2), PL_VALS (-128, 5));
  g_autoptr (PlGraph) gn = pl_test_node_graph ("Neg", 1, &s8, 0, 1, NULL);
  check_output (gn, &s8, 0, PL_DTYPE_I8, PL_VALS (-128, -5));
}

static void
test_unary_dtype_errors (void)
{
  g_autoptr (PlTensor) i = pl_test_tensor (I64, 1, PL_DIMS (2), NULL);
  g_autoptr (PlTensor) f = pl_test_tensor (F32, 1, PL_DIMS (2), NULL);
  g_autoptr (PlTensor) u = pl_test_tensor (PL_DTYPE_U32, 1, PL_DIMS (2), NULL);
  g_autoptr (PlGraph) g1 = pl_test_node_graph ("Exp", 1, &i, 0, 1, NULL);
  pl_test_expect_infer_error (g1, "input 0 has dtype i64; expects float");
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Not", 1, &f, 0, 1, NULL);
  pl_test_expect_infer_error (g2, "expects bool");
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Neg", 1, &u, 0, 1, NULL);
  pl_test_expect_infer_error (g3, "input 0 has dtype u32");
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("IsNaN", 1, &i, 0, 1, NULL);
  pl_test_expect_infer_error (g4, "expects float");
}

static void
test_not_isnan_isinf (void)
{
  g_autoptr (PlTensor) b = pl_test_tensor (BOOL, 2, PL_DIMS (2, 2), PL_VALS (1, 0, 0, 1));
  g_autoptr (PlGraph) gn = pl_test_node_graph ("Not", 1, &b, 0, 1, NULL);
  check_output (gn, &b, 0, BOOL, PL_VALS (0, 1, 1, 0));

  g_autoptr (PlTensor) x = pl_test_tensor (F32, 1, PL_DIMS (5),
                                           PL_VALS (-INFINITY, -1, NAN, 2, INFINITY));
  g_autoptr (PlGraph) g1 = pl_test_node_graph ("IsNaN", 1, &x, 0, 1, NULL);
  check_output (g1, &x, 0, BOOL, PL_VALS (0, 0, 1, 0, 0));
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("IsInf", 1, &x, 0, 1, NULL);
  check_output (g2, &x, 0, BOOL, PL_VALS (1, 0, 0, 0, 1));
  PlNode *node;
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("IsInf", 1, &x, 0, 1, &node);
  pl_node_set_attr_int (node, "detect_positive", 0);
  check_output (g3, &x, 0, BOOL, PL_VALS (1, 0, 0, 0, 0));
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("IsInf", 1, &x, 0, 1, &node);
  pl_node_set_attr_int (node, "detect_negative", 0);
  check_output (g4, &x, 0, BOOL, PL_VALS (0, 0, 0, 0, 1));

  /* NaN passes through Relu, Sign and Abs. */
  g_autoptr (PlGraph) g5 = pl_test_node_graph ("Relu", 1, &x, 0, 1, NULL);
  check_output (g5, &x, 0, F32, PL_VALS (0, 0, NAN, 2, INFINITY));
}

static void
test_gelu (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (F64, 1, PL_DIMS (3), PL_VALS (-1, 0.5, 3));
  PlNode *node;
  /* numpy: 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x**3))) */
  g_autoptr (PlGraph) g = pl_test_node_graph ("Gelu", 1, &x, 0, 1, &node);
  pl_node_set_attr_string (node, "approximate", "tanh");
  check_output (g, &x, 0, F64, PL_VALS (-0.15880800939172324, 0.34571400982514394,
                                        2.9963626079182268));
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Gelu", 1, &x, 0, 1, &node);
  pl_node_set_attr_string (node, "approximate", "fast");
  pl_test_expect_infer_error (g2, "approximate='fast' is not supported");
}

/* --- Clip, Cast, Identity, Dropout, Trilu ---------------------------------- */

static void
test_clip (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (F32, 1, PL_DIMS (5), PL_VALS (-3, -1, 0, 1, 3));
  g_autoptr (PlTensor) lo = pl_test_tensor (F32, 0, NULL, PL_VALS (-1));
  g_autoptr (PlTensor) hi = pl_test_tensor (F32, 0, NULL, PL_VALS (2));
  PlTensor *both[] = { x, lo, hi };
  g_autoptr (PlGraph) g = pl_test_node_graph ("Clip", 3, both, 0, 1, NULL);
  check_output (g, both, 0, F32, PL_VALS (-1, -1, 0, 1, 2));

  PlTensor *max_only[] = { x, NULL, hi };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Clip", 3, max_only, 0, 1, NULL);
  check_output (g2, max_only, 0, F32, PL_VALS (-3, -1, 0, 1, 2));

  /* min > max: everything becomes max. */
  PlTensor *swapped[] = { x, hi, lo };
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Clip", 3, swapped, 0, 1, NULL);
  check_output (g3, swapped, 0, F32, PL_VALS (-1, -1, -1, -1, -1));

  g_autoptr (PlTensor) xi = pl_test_tensor (PL_DTYPE_I8, 1, PL_DIMS (5), PL_VALS (-128, -5, 0, 5, 127));
  g_autoptr (PlTensor) loi = pl_test_tensor (PL_DTYPE_I8, 0, NULL, PL_VALS (-10));
  PlTensor *ints[] = { xi, loi };
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("Clip", 2, ints, 0, 1, NULL);
  check_output (g4, ints, 0, PL_DTYPE_I8, PL_VALS (-10, -5, 0, 5, 127));

  /* Before opset 11 the bounds are attributes. */
  PlNode *node;
  g_autoptr (PlGraph) g5 = pl_test_node_graph ("Clip", 1, &x, 0, 1, &node);
  g5->opset = 6;
  pl_node_set_attr_float (node, "min", -0.5f);
  pl_node_set_attr_float (node, "max", 1.5f);
  check_output (g5, &x, 0, F32, PL_VALS (-0.5, -0.5, 0, 1, 1.5));

  /* Bounds must be scalars of x's dtype. */
  g_autoptr (PlTensor) lo2 = pl_test_tensor (F32, 1, PL_DIMS (2), NULL);
  PlTensor *vec[] = { x, lo2 };
  g_autoptr (PlGraph) g6 = pl_test_node_graph ("Clip", 2, vec, 0, 1, NULL);
  pl_test_expect_infer_error (g6, "must be a scalar");
  PlTensor *mixed[] = { xi, lo };
  g_autoptr (PlGraph) g7 = pl_test_node_graph ("Clip", 2, mixed, 0, 1, NULL);
  pl_test_expect_infer_error (g7, "same dtype");
}

static void
test_cast (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (F32, 1, PL_DIMS (4), PL_VALS (-1.7, 0, 2.9, 300));
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Cast", 1, &x, 0, 1, &node);
  pl_node_set_attr_int (node, "to", 6);  /* INT32: truncates toward zero */
  check_output (g, &x, 0, PL_DTYPE_I32, PL_VALS (-1, 0, 2, 300));
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Cast", 1, &x, 0, 1, &node);
  pl_node_set_attr_int (node, "to", 9);  /* BOOL */
  check_output (g2, &x, 0, BOOL, PL_VALS (1, 0, 1, 1));
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Cast", 1, &x, 0, 1, &node);
  pl_node_set_attr_int (node, "to", 10);  /* FLOAT16: -1.7 -> -1.7001953125 */
  check_output (g3, &x, 0, PL_DTYPE_F16, PL_VALS (-1.7001953125, 0, 2.900390625, 300));

  /* Opset 1 names the target type. */
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("Cast", 1, &x, 0, 1, &node);
  g4->opset = 1;
  pl_node_set_attr_string (node, "to", "INT64");
  check_output (g4, &x, 0, I64, PL_VALS (-1, 0, 2, 300));

  g_autoptr (PlGraph) g5 = pl_test_node_graph ("Cast", 1, &x, 0, 1, &node);
  pl_node_set_attr_int (node, "to", 8);
  pl_test_expect_infer_error (g5, "cast to ONNX type 8 (string) is not supported");
  g_autoptr (PlGraph) g6 = pl_test_node_graph ("Cast", 1, &x, 0, 1, NULL);
  pl_test_expect_infer_error (g6, "attribute 'to' is required");

  g_autoptr (PlTensor) d = pl_test_tensor (F64, 1, PL_DIMS (2), PL_VALS (1.5, -2.5));
  g_autoptr (PlTensor) like = pl_test_tensor (I64, 1, PL_DIMS (1), NULL);
  PlTensor *ins[] = { d, like };
  g_autoptr (PlGraph) g7 = pl_test_node_graph ("CastLike", 2, ins, 0, 1, NULL);
  check_output (g7, ins, 0, I64, PL_VALS (1, -2));
}

static void
test_identity_dropout (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (F32, 2, PL_DIMS (2, 2), PL_VALS (1, -2, 3, -4));
  g_autoptr (PlGraph) g = pl_test_node_graph ("Identity", 1, &x, 0, 1, NULL);
  check_output (g, &x, 0, F32, PL_VALS (1, -2, 3, -4));

  /* Inference: identity, all-true mask. */
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Dropout", 1, &x, 0, 2, NULL);
  check_output (g2, &x, 0, F32, PL_VALS (1, -2, 3, -4));
  check_output (g2, &x, 1, BOOL, PL_VALS (1, 1, 1, 1));

  /* training_mode with ratio 0 is still the identity ... */
  g_autoptr (PlTensor) r0 = pl_test_tensor (F32, 0, NULL, PL_VALS (0));
  g_autoptr (PlTensor) t = pl_test_tensor (BOOL, 0, NULL, PL_VALS (1));
  PlTensor *zero_ratio[] = { x, r0, t };
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Dropout", 3, zero_ratio, 0, 2, NULL);
  check_output (g3, zero_ratio, 0, F32, PL_VALS (1, -2, 3, -4));
  check_output (g3, zero_ratio, 1, BOOL, PL_VALS (1, 1, 1, 1));

  /* ... with a ratio it is random, which a reference cannot reproduce. */
  g_autoptr (PlTensor) r = pl_test_tensor (F32, 0, NULL, PL_VALS (0.5));
  PlTensor *training[] = { x, r, t };
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("Dropout", 3, training, 0, 1, NULL);
  pl_test_expect_run_error (g4, training, 0, "training-mode Dropout is random");

  /* Opset 7: the mask has the data's type; the ratio attribute is ignored. */
  PlNode *node;
  g_autoptr (PlGraph) g5 = pl_test_node_graph ("Dropout", 1, &x, 0, 2, &node);
  g5->opset = 7;
  pl_node_set_attr_float (node, "ratio", 0.3f);
  check_output (g5, &x, 1, F32, PL_VALS (1, 1, 1, 1));
}

static void
test_trilu (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (I64, 2, PL_DIMS (3, 4),
                                           PL_VALS (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12));
  g_autoptr (PlGraph) g = pl_test_node_graph ("Trilu", 1, &x, 0, 1, NULL);
  check_output (g, &x, 0, I64, PL_VALS (1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12));

  g_autoptr (PlTensor) k = pl_test_tensor (I64, 0, NULL, PL_VALS (-1));
  PlTensor *ins[] = { x, k };
  PlNode *node;
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Trilu", 2, ins, 0, 1, &node);
  pl_node_set_attr_int (node, "upper", 0);
  check_output (g2, ins, 0, I64, PL_VALS (0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0));

  /* Batched: every 2x2 matrix keeps only its (0, 1) element for k = 1. */
  g_autoptr (PlTensor) b = pl_test_tensor (F32, 3, PL_DIMS (2, 2, 2), PL_VALS (1, 2, 3, 4, 5, 6, 7, 8));
  g_autoptr (PlTensor) k1 = pl_test_tensor (I64, 0, NULL, PL_VALS (1));
  PlTensor *bins[] = { b, k1 };
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Trilu", 2, bins, 0, 1, NULL);
  check_output (g3, bins, 0, F32, PL_VALS (0, 2, 0, 0, 0, 6, 0, 0));

  g_autoptr (PlTensor) v = pl_test_tensor (F32, 1, PL_DIMS (3), NULL);
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("Trilu", 1, &v, 0, 1, NULL);
  pl_test_expect_infer_error (g4, "rank >= 2");
}

/* --- binary and variadic ------------------------------------------------------ */

static void
test_arith_broadcast (void)
{
  g_autoptr (PlTensor) a = pl_test_tensor (F32, 2, PL_DIMS (2, 3), PL_VALS (1, 2, 3, 4, 5, 6));
  g_autoptr (PlTensor) b = pl_test_tensor (F32, 1, PL_DIMS (3), PL_VALS (10, 20, 30));
  g_autoptr (PlTensor) c = pl_test_tensor (F32, 2, PL_DIMS (2, 1), PL_VALS (2, 4));
  PlTensor *ab[] = { a, b }, *ba[] = { b, a }, *ac[] = { a, c }, *bc[] = { b, c };
  g_autoptr (PlGraph) g1 = pl_test_node_graph ("Add", 2, ab, 0, 1, NULL);
  check_output (g1, ab, 0, F32, PL_VALS (11, 22, 33, 14, 25, 36));
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Sub", 2, ba, 0, 1, NULL);
  check_output (g2, ba, 0, F32, PL_VALS (9, 18, 27, 6, 15, 24));
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Mul", 2, ac, 0, 1, NULL);
  check_output (g3, ac, 0, F32, PL_VALS (2, 4, 6, 16, 20, 24));
  /* [3] / [2, 1] -> [2, 3] */
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("Div", 2, bc, 0, 1, NULL);
  check_output (g4, bc, 0, F32, PL_VALS (5, 10, 15, 2.5, 5, 7.5));

  /* The second input as a constant gives the same result. */
  g_autoptr (PlGraph) g5 = pl_test_node_graph ("Add", 2, ab, 2, 1, NULL);
  PlTensor **outs = pl_test_run (g5, ab, 2);
  pl_test_assert_values (outs[0], PL_VALS (11, 22, 33, 14, 25, 36));
  pl_interp_free_outputs (outs, 1);
}

static void
test_arith_int (void)
{
  /* Integer division truncates toward zero, as C and ONNX Runtime do. */
  g_autoptr (PlTensor) a = pl_test_tensor (PL_DTYPE_I32, 1, PL_DIMS (4), PL_VALS (7, -7, 7, -7));
  g_autoptr (PlTensor) b = pl_test_tensor (PL_DTYPE_I32, 1, PL_DIMS (4), PL_VALS (2, 2, -2, -2));
  PlTensor *ab[] = { a, b };
  g_autoptr (PlGraph) g1 = pl_test_node_graph ("Div", 2, ab, 0, 1, NULL);
  check_output (g1, ab, 0, PL_DTYPE_I32, PL_VALS (3, -3, -3, 3));

  /* uint8 wraps: 250 + 10 = 4, 3 - 5 = 254, 16 * 17 = 16. */
  g_autoptr (PlTensor) u = pl_test_tensor (PL_DTYPE_U8, 1, PL_DIMS (3), PL_VALS (250, 3, 16));
  g_autoptr (PlTensor) v = pl_test_tensor (PL_DTYPE_U8, 1, PL_DIMS (3), PL_VALS (10, 5, 17));
  PlTensor *uv[] = { u, v };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Add", 2, uv, 0, 1, NULL);
  check_output (g2, uv, 0, PL_DTYPE_U8, PL_VALS (4, 8, 33));
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Sub", 2, uv, 0, 1, NULL);
  check_output (g3, uv, 0, PL_DTYPE_U8, PL_VALS (240, 254, 255));
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("Mul", 2, uv, 0, 1, NULL);
  check_output (g4, uv, 0, PL_DTYPE_U8, PL_VALS (196, 15, 16));

  /* int64 is exact past 2^53. */
  g_autoptr (PlTensor) big = pl_test_tensor (I64, 1, PL_DIMS (1), NULL);
  g_autoptr (PlTensor) one = pl_test_tensor (I64, 1, PL_DIMS (1), PL_VALS (1));
  ((int64_t *) big->data)[0] = (int64_t) 1 << 53;
  PlTensor *bo[] = { big, one };
  g_autoptr (PlGraph) g5 = pl_test_node_graph ("Add", 2, bo, 0, 1, NULL);
  PlTensor **outs = pl_test_run (g5, bo, 0);
  g_assert_cmpint (((int64_t *) outs[0]->data)[0], ==, ((int64_t) 1 << 53) + 1);
  pl_interp_free_outputs (outs, 1);

  g_autoptr (PlTensor) z = pl_test_tensor (PL_DTYPE_I32, 1, PL_DIMS (4), PL_VALS (1, 0, 1, 1));
  PlTensor *az[] = { a, z };
  g_autoptr (PlGraph) g6 = pl_test_node_graph ("Div", 2, az, 0, 1, NULL);
  pl_test_expect_run_error (g6, az, 0, "integer division by zero");
}

static void
test_pow (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (F32, 1, PL_DIMS (3), PL_VALS (1, 2, 3));
  g_autoptr (PlTensor) y = pl_test_tensor (F32, 1, PL_DIMS (3), PL_VALS (4, 5, 6));
  PlTensor *xy[] = { x, y };
  g_autoptr (PlGraph) g1 = pl_test_node_graph ("Pow", 2, xy, 0, 1, NULL);
  check_output (g1, xy, 0, F32, PL_VALS (1, 32, 729));

  /* Integer powers are exact: 3^39 needs all 62 bits. */
  g_autoptr (PlTensor) xi = pl_test_tensor (I64, 1, PL_DIMS (3), PL_VALS (3, -2, 5));
  g_autoptr (PlTensor) yi = pl_test_tensor (I64, 1, PL_DIMS (3), PL_VALS (39, 3, 0));
  PlTensor *ii[] = { xi, yi };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Pow", 2, ii, 0, 1, NULL);
  PlTensor **outs = pl_test_run (g2, ii, 0);
  g_assert_cmpint (((int64_t *) outs[0]->data)[0], ==, 4052555153018976267);
  g_assert_cmpint (((int64_t *) outs[0]->data)[1], ==, -8);
  g_assert_cmpint (((int64_t *) outs[0]->data)[2], ==, 1);
  pl_interp_free_outputs (outs, 1);

  /* Mixed types: the output has the base's type (numpy: pow(x, y).astype(x.dtype)). */
  g_autoptr (PlTensor) xb = pl_test_tensor (I64, 1, PL_DIMS (3), PL_VALS (1, 2, 3));
  g_autoptr (PlTensor) yf = pl_test_tensor (F32, 1, PL_DIMS (3), PL_VALS (0.5, 2.5, 1.5));
  PlTensor *if_[] = { xb, yf };
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Pow", 2, if_, 0, 1, NULL);
  check_output (g3, if_, 0, I64, PL_VALS (1, 5, 5));
  g_autoptr (PlTensor) e = pl_test_tensor (PL_DTYPE_U32, 0, NULL, PL_VALS (2));
  PlTensor *fu[] = { x, e };
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("Pow", 2, fu, 0, 1, NULL);
  check_output (g4, fu, 0, F32, PL_VALS (1, 4, 9));

  /* A bool base is not allowed. */
  g_autoptr (PlTensor) bb = pl_test_tensor (BOOL, 1, PL_DIMS (3), NULL);
  PlTensor *bad[] = { bb, x };
  g_autoptr (PlGraph) g5 = pl_test_node_graph ("Pow", 2, bad, 0, 1, NULL);
  pl_test_expect_infer_error (g5, "input 0 has dtype bool");
}

static void
test_mod (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (I64, 1, PL_DIMS (6), PL_VALS (-4, 7, 5, 4, -7, 8));
  g_autoptr (PlTensor) y = pl_test_tensor (I64, 1, PL_DIMS (6), PL_VALS (2, -3, 8, -2, 3, 5));
  PlTensor *xy[] = { x, y };
  PlNode *node;
  /* fmod=0: the sign of the divisor (np.mod); fmod=1: of the dividend (np.fmod). */
  g_autoptr (PlGraph) g1 = pl_test_node_graph ("Mod", 2, xy, 0, 1, NULL);
  check_output (g1, xy, 0, I64, PL_VALS (0, -2, 5, 0, 2, 3));
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Mod", 2, xy, 0, 1, &node);
  pl_node_set_attr_int (node, "fmod", 1);
  check_output (g2, xy, 0, I64, PL_VALS (0, 1, 5, 0, -1, 3));

  g_autoptr (PlTensor) xf = pl_test_tensor (F64, 1, PL_DIMS (6), PL_VALS (-4.3, 7.2, 5.0, 4.3, -7.2, 8.0));
  g_autoptr (PlTensor) yf = pl_test_tensor (F64, 1, PL_DIMS (6), PL_VALS (2.1, -3.4, 8.0, -2.1, 3.4, 5.0));
  PlTensor *ff[] = { xf, yf };
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Mod", 2, ff, 0, 1, &node);
  pl_node_set_attr_int (node, "fmod", 1);
  check_output (g3, ff, 0, F64, PL_VALS (-0.099999999999999645, 0.40000000000000036, 5,
                                         0.099999999999999645, -0.40000000000000036, 3));
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("Mod", 2, ff, 0, 1, NULL);
  check_output (g4, ff, 0, F64, PL_VALS (2.0000000000000004, -2.9999999999999996, 5,
                                         -2.0000000000000004, 2.9999999999999996, 3));

  /* u64 above 2^63 divides unsigned. */
  g_autoptr (PlTensor) xu = pl_test_tensor (PL_DTYPE_U64, 1, PL_DIMS (1), NULL);
  g_autoptr (PlTensor) yu = pl_test_tensor (PL_DTYPE_U64, 1, PL_DIMS (1), PL_VALS (10));
  ((uint64_t *) xu->data)[0] = UINT64_MAX;
  PlTensor *uu[] = { xu, yu };
  g_autoptr (PlGraph) g5 = pl_test_node_graph ("Mod", 2, uu, 0, 1, NULL);
  PlTensor **outs = pl_test_run (g5, uu, 0);
  g_assert_cmpuint (((uint64_t *) outs[0]->data)[0], ==, UINT64_MAX % 10);
  pl_interp_free_outputs (outs, 1);
}

static void
test_bitshift (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_U8, 1, PL_DIMS (3), PL_VALS (16, 255, 1));
  g_autoptr (PlTensor) y = pl_test_tensor (PL_DTYPE_U8, 1, PL_DIMS (3), PL_VALS (1, 1, 7));
  PlTensor *xy[] = { x, y };
  PlNode *node;
  g_autoptr (PlGraph) g1 = pl_test_node_graph ("BitShift", 2, xy, 0, 1, &node);
  pl_node_set_attr_string (node, "direction", "LEFT");
  check_output (g1, xy, 0, PL_DTYPE_U8, PL_VALS (32, 254, 128));
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("BitShift", 2, xy, 0, 1, &node);
  pl_node_set_attr_string (node, "direction", "RIGHT");
  check_output (g2, xy, 0, PL_DTYPE_U8, PL_VALS (8, 127, 0));
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("BitShift", 2, xy, 0, 1, &node);
  pl_node_set_attr_string (node, "direction", "UP");
  pl_test_expect_infer_error (g3, "direction must be 'LEFT' or 'RIGHT'");
  g_autoptr (PlTensor) s = pl_test_tensor (PL_DTYPE_I32, 1, PL_DIMS (3), NULL);
  PlTensor *ss[] = { s, s };
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("BitShift", 2, ss, 0, 1, &node);
  pl_node_set_attr_string (node, "direction", "LEFT");
  pl_test_expect_infer_error (g4, "expects unsigned int");
}

static void
test_variadic (void)
{
  g_autoptr (PlTensor) a = pl_test_tensor (F32, 2, PL_DIMS (2, 2), PL_VALS (1, 5, 3, NAN));
  g_autoptr (PlTensor) b = pl_test_tensor (F32, 1, PL_DIMS (2), PL_VALS (2, 4));
  g_autoptr (PlTensor) c = pl_test_tensor (F32, 0, NULL, PL_VALS (3));
  PlTensor *abc[] = { a, b, c };
  g_autoptr (PlGraph) g1 = pl_test_node_graph ("Max", 3, abc, 0, 1, NULL);
  check_output (g1, abc, 0, F32, PL_VALS (3, 5, 3, NAN));
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Min", 3, abc, 0, 1, NULL);
  check_output (g2, abc, 0, F32, PL_VALS (1, 3, 2, NAN));
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Sum", 3, abc, 0, 1, NULL);
  check_output (g3, abc, 0, F32, PL_VALS (6, 12, 8, NAN));
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("Mean", 3, abc, 0, 1, NULL);
  check_output (g4, abc, 0, F32, PL_VALS (2, 4, 8.0 / 3, NAN));
  g_autoptr (PlGraph) g5 = pl_test_node_graph ("Sum", 1, &a, 0, 1, NULL);
  check_output (g5, &a, 0, F32, PL_VALS (1, 5, 3, NAN));

  /* Integer Max/Min compare exactly, u64 unsigned. */
  g_autoptr (PlTensor) u = pl_test_tensor (PL_DTYPE_U64, 1, PL_DIMS (2), PL_VALS (5, 0));
  g_autoptr (PlTensor) w = pl_test_tensor (PL_DTYPE_U64, 1, PL_DIMS (2), PL_VALS (7, 1));
  ((uint64_t *) u->data)[1] = UINT64_MAX;
  PlTensor *uw[] = { u, w };
  g_autoptr (PlGraph) g6 = pl_test_node_graph ("Max", 2, uw, 0, 1, NULL);
  PlTensor **outs = pl_test_run (g6, uw, 0);
  g_assert_cmpuint (((uint64_t *) outs[0]->data)[0], ==, 7);
  g_assert_cmpuint (((uint64_t *) outs[0]->data)[1], ==, UINT64_MAX);
  pl_interp_free_outputs (outs, 1);

  g_autoptr (PlTensor) i = pl_test_tensor (I64, 1, PL_DIMS (2), PL_VALS (1, 2));
  PlTensor *ai[] = { a, b, i };
  g_autoptr (PlGraph) g7 = pl_test_node_graph ("Sum", 3, ai, 0, 1, NULL);
  pl_test_expect_infer_error (g7, "inputs 0 and 2 must have the same dtype, got f32 and i64");
  g_autoptr (PlGraph) g8 = pl_test_node_graph ("Mean", 1, &i, 0, 1, NULL);
  pl_test_expect_infer_error (g8, "expects float");
}

static void
test_compare_logic (void)
{
  g_autoptr (PlTensor) a = pl_test_tensor (F32, 2, PL_DIMS (2, 3), PL_VALS (1, 2, 3, 4, 5, 6));
  g_autoptr (PlTensor) b = pl_test_tensor (F32, 1, PL_DIMS (3), PL_VALS (2, 2, 7));
  PlTensor *ab[] = { a, b };
  const char *ops[] = { "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual" };
  const double want[5][6] = {
    { 0, 1, 0, 0, 0, 0 },
    { 1, 0, 1, 0, 0, 1 },
    { 1, 1, 1, 0, 0, 1 },
    { 0, 0, 0, 1, 1, 0 },
    { 0, 1, 0, 1, 1, 0 },
  };
  for (int k = 0; k < 5; k++)
    {
      g_autoptr (PlGraph) g = pl_test_node_graph (ops[k], 2, ab, 0, 1, NULL);
      check_output (g, ab, 0, BOOL, want[k]);
    }

  /* Integers compare exactly; u64 unsigned. */
  g_autoptr (PlTensor) u = pl_test_tensor (PL_DTYPE_U64, 1, PL_DIMS (2), PL_VALS (1, 0));
  g_autoptr (PlTensor) v = pl_test_tensor (PL_DTYPE_U64, 1, PL_DIMS (2), PL_VALS (2, 1));
  ((uint64_t *) u->data)[1] = UINT64_MAX;
  PlTensor *uv[] = { u, v };
  g_autoptr (PlGraph) gu = pl_test_node_graph ("Less", 2, uv, 0, 1, NULL);
  check_output (gu, uv, 0, BOOL, PL_VALS (1, 0));

  g_autoptr (PlTensor) p = pl_test_tensor (BOOL, 2, PL_DIMS (2, 2), PL_VALS (0, 0, 1, 1));
  g_autoptr (PlTensor) q = pl_test_tensor (BOOL, 1, PL_DIMS (2), PL_VALS (0, 1));
  PlTensor *pq[] = { p, q };
  const char *lops[] = { "And", "Or", "Xor", "Equal" };
  const double lwant[4][4] = { { 0, 0, 0, 1 }, { 0, 1, 1, 1 }, { 0, 1, 1, 0 }, { 1, 0, 0, 1 } };
  for (int k = 0; k < 4; k++)
    {
      g_autoptr (PlGraph) g = pl_test_node_graph (lops[k], 2, pq, 0, 1, NULL);
      check_output (g, pq, 0, BOOL, lwant[k]);
    }
  g_autoptr (PlGraph) g1 = pl_test_node_graph ("And", 2, ab, 0, 1, NULL);
  pl_test_expect_infer_error (g1, "input 0 has dtype f32; expects bool");
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Less", 2, pq, 0, 1, NULL);
  pl_test_expect_infer_error (g2, "input 0 has dtype bool");
}

static void
test_where (void)
{
  g_autoptr (PlTensor) c = pl_test_tensor (BOOL, 2, PL_DIMS (2, 1), PL_VALS (1, 0));
  g_autoptr (PlTensor) x = pl_test_tensor (I64, 1, PL_DIMS (3), PL_VALS (1, 2, 3));
  g_autoptr (PlTensor) y = pl_test_tensor (I64, 0, NULL, PL_VALS (9));
  PlTensor *cxy[] = { c, x, y };
  g_autoptr (PlGraph) g = pl_test_node_graph ("Where", 3, cxy, 0, 1, NULL);
  check_output (g, cxy, 0, I64, PL_VALS (1, 2, 3, 9, 9, 9));

  g_autoptr (PlTensor) yf = pl_test_tensor (F32, 0, NULL, PL_VALS (9));
  PlTensor *bad[] = { c, x, yf };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Where", 3, bad, 0, 1, NULL);
  pl_test_expect_infer_error (g2, "inputs 1 and 2 must have the same dtype, got i64 and f32");
  PlTensor *notbool[] = { x, x, x };
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Where", 3, notbool, 0, 1, NULL);
  pl_test_expect_infer_error (g3, "input 0 has dtype i64; expects bool");
  g_autoptr (PlTensor) c4 = pl_test_tensor (BOOL, 1, PL_DIMS (4), NULL);
  PlTensor *mis[] = { c4, x, y };
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("Where", 3, mis, 0, 1, NULL);
  pl_test_expect_infer_error (g4, "do not broadcast");
}

static void
test_prelu (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (F32, 2, PL_DIMS (2, 3), PL_VALS (-1, 2, -3, 4, -5, 6));
  g_autoptr (PlTensor) s = pl_test_tensor (F32, 1, PL_DIMS (3), PL_VALS (0.5, 0.25, 2));
  PlTensor *xs[] = { x, s };
  g_autoptr (PlGraph) g = pl_test_node_graph ("PRelu", 2, xs, 0, 1, NULL);
  check_output (g, xs, 0, F32, PL_VALS (-0.5, 2, -6, 4, -1.25, 6));
  g_autoptr (PlTensor) si = pl_test_tensor (I64, 1, PL_DIMS (3), NULL);
  PlTensor *bad[] = { x, si };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("PRelu", 2, bad, 0, 1, NULL);
  pl_test_expect_infer_error (g2, "same dtype");
  /* The slope may not grow X. */
  g_autoptr (PlTensor) big = pl_test_tensor (F32, 3, PL_DIMS (4, 2, 3), NULL);
  PlTensor *grow[] = { x, big };
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("PRelu", 2, grow, 0, 1, NULL);
  pl_test_expect_infer_error (g3, "slope [4, 2, 3] does not broadcast to X [2, 3]");
}

static void
test_batchnorm (void)
{
  /* X [1, 2, 2]; epsilon 0 keeps the arithmetic exact:
   * c0: (x - 1) / 1 * 1 + 0, c1: (x - 3) / 2 * 2 + 1 */
  g_autoptr (PlTensor) x = pl_test_tensor (F32, 3, PL_DIMS (1, 2, 2), PL_VALS (1, 2, 3, 5));
  g_autoptr (PlTensor) scale = pl_test_tensor (F32, 1, PL_DIMS (2), PL_VALS (1, 2));
  g_autoptr (PlTensor) bias = pl_test_tensor (F32, 1, PL_DIMS (2), PL_VALS (0, 1));
  g_autoptr (PlTensor) mean = pl_test_tensor (F32, 1, PL_DIMS (2), PL_VALS (1, 3));
  g_autoptr (PlTensor) var = pl_test_tensor (F32, 1, PL_DIMS (2), PL_VALS (1, 4));
  PlTensor *ins[] = { x, scale, bias, mean, var };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("BatchNormalization", 5, ins, 0, 1, &node);
  pl_node_set_attr_float (node, "epsilon", 0.0f);
  check_output (g, ins, 0, F32, PL_VALS (0, 1, 1, 3));

  /* With the default epsilon 1e-5 (numpy). */
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("BatchNormalization", 5, ins, 0, 1, NULL);
  check_output (g2, ins, 0, F32, PL_VALS (0, 0.99999500003762609, 1, 2.9999975000047505));

  /* Training mode: X [2, 2, 1] -> batch mean (2, 4), var (1, 1); running
   * stats: mean * 0.9 + batch * 0.1. */
  g_autoptr (PlTensor) xt = pl_test_tensor (F32, 3, PL_DIMS (2, 2, 1), PL_VALS (1, 3, 3, 5));
  g_autoptr (PlTensor) ones = pl_test_tensor (F32, 1, PL_DIMS (2), PL_VALS (1, 1));
  g_autoptr (PlTensor) zeros = pl_test_tensor (F32, 1, PL_DIMS (2), PL_VALS (0, 0));
  g_autoptr (PlTensor) rmean = pl_test_tensor (F32, 1, PL_DIMS (2), PL_VALS (0, 10));
  g_autoptr (PlTensor) rvar = pl_test_tensor (F32, 1, PL_DIMS (2), PL_VALS (2, 0));
  PlTensor *tins[] = { xt, ones, zeros, rmean, rvar };
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("BatchNormalization", 5, tins, 0, 3, &node);
  pl_node_set_attr_int (node, "training_mode", 1);
  pl_node_set_attr_float (node, "epsilon", 0.0f);
  check_output (g3, tins, 0, F32, PL_VALS (-1, -1, 1, 1));
  check_output (g3, tins, 1, F32, PL_VALS (0.2, 9.4));
  check_output (g3, tins, 2, F32, PL_VALS (1.9, 0.1));

  g_autoptr (PlTensor) bad_scale = pl_test_tensor (F32, 1, PL_DIMS (3), NULL);
  PlTensor *bad[] = { x, bad_scale, bias, mean, var };
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("BatchNormalization", 5, bad, 0, 1, NULL);
  pl_test_expect_infer_error (g4, "scale has 3 elements but X has C = 2");
  g_autoptr (PlTensor) mean64 = pl_test_tensor (F64, 1, PL_DIMS (2), NULL);
  PlTensor *mixed[] = { x, scale, bias, mean64, var };
  g_autoptr (PlGraph) g5 = pl_test_node_graph ("BatchNormalization", 5, mixed, 0, 1, NULL);
  pl_test_expect_infer_error (g5, "inputs 3 and 4 must have the same dtype");
}

/* --- shape inference and errors ---------------------------------------------- */

/* Adds a graph input of the given shape. */
static PlValue *
add_input (PlGraph *g, const char *name, PlDType dtype, PlShape shape)
{
  g_autoptr (GError) error = NULL;
  PlValue *v = pl_graph_add_input (g, name, dtype, &shape, &error);
  g_assert_no_error (error);
  return v;
}

static PlShape
shape2 (PlDim a, PlDim b)
{
  PlShape s = { .rank = 2 };
  s.dims[0] = a;
  s.dims[1] = b;
  return s;
}

/* The output shape of op over inputs of the given shapes, as text. */
static char *
broadcast_of (const char *op, int n, const PlShape *shapes, PlDType *dtype)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraph) g = pl_graph_new ("sym");
  PlValue *vals[3];
  for (int i = 0; i < n; i++)
    {
      g_autofree char *name = g_strdup_printf ("in%d", i);
      vals[i] = add_input (g, name, i == 0 && strcmp (op, "Where") == 0 ? BOOL : F32, shapes[i]);
    }
  PlNode *node = pl_graph_add_node (g, op, NULL, NULL, n, vals, 1, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (pl_node_infer (node, &error));
  g_assert_no_error (error);
  if (dtype)
    *dtype = node->outputs[0]->dtype;
  return pl_shape_to_string (&node->outputs[0]->shape);
}

static void
test_symbolic_broadcast (void)
{
  PlDim n = pl_dim_symbol ("N"), m = pl_dim_symbol ("M"), one = pl_dim_static (1);
  PlDim three = pl_dim_static (3);
  struct { PlShape a, b; const char *want; } cases[] = {
    { shape2 (n, three), pl_shape_from_dims (1, PL_DIMS (3)), "[N, 3]" },
    { shape2 (n, one), shape2 (one, m), "[N, M]" },
    { shape2 (n, m), shape2 (n, m), "[N, M]" },
    { shape2 (n, one), shape2 (m, one), "[?, 1]" },     /* two symbols: unknown */
    { shape2 (n, pl_dim_unknown ()), shape2 (one, three), "[N, 3]" },
    { pl_shape_unknown (), shape2 (n, three), "[*]" },  /* unknown rank */
    { pl_shape_scalar (), shape2 (n, three), "[N, 3]" },
  };
  for (size_t k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      PlShape in[2] = { cases[k].a, cases[k].b };
      g_autofree char *got = broadcast_of ("Add", 2, in, NULL);
      g_assert_cmpstr (got, ==, cases[k].want);
    }

  PlDType dtype;
  PlShape cmp[2] = { shape2 (n, one), pl_shape_from_dims (1, PL_DIMS (4)) };
  g_autofree char *c = broadcast_of ("Less", 2, cmp, &dtype);
  g_assert_cmpstr (c, ==, "[N, 4]");
  g_assert_cmpint (dtype, ==, BOOL);

  PlShape where[3] = { shape2 (n, one), shape2 (one, m), pl_shape_scalar () };
  g_autofree char *w = broadcast_of ("Where", 3, where, &dtype);
  g_assert_cmpstr (w, ==, "[N, M]");
  g_assert_cmpint (dtype, ==, F32);

  PlShape three_in[3] = { pl_shape_from_dims (1, PL_DIMS (5)), shape2 (n, one),
                          pl_shape_from_dims (3, PL_DIMS (2, 1, 1)) };
  g_autofree char *s = broadcast_of ("Sum", 3, three_in, NULL);
  g_assert_cmpstr (s, ==, "[2, N, 5]");

  /* Unary ops keep symbols. */
  PlShape un[1] = { shape2 (n, m) };
  g_autofree char *u = broadcast_of ("Sigmoid", 1, un, NULL);
  g_assert_cmpstr (u, ==, "[N, M]");
}

static void
test_broadcast_errors (void)
{
  g_autoptr (PlTensor) a = pl_test_tensor (F32, 2, PL_DIMS (2, 3), NULL);
  g_autoptr (PlTensor) b = pl_test_tensor (F32, 1, PL_DIMS (4), NULL);
  g_autoptr (PlTensor) i = pl_test_tensor (I64, 1, PL_DIMS (3), NULL);
  PlTensor *ab[] = { a, b }, *ai[] = { a, i };
  const char *ops[] = { "Add", "Mul", "Equal", "Max", "PRelu" };
  for (size_t k = 0; k < G_N_ELEMENTS (ops); k++)
    {
      g_autoptr (PlGraph) g = pl_test_node_graph (ops[k], 2, ab, 0, 1, NULL);
      pl_test_expect_infer_error (g, "do not broadcast");
      g_autoptr (PlGraph) g2 = pl_test_node_graph (ops[k], 2, ai, 0, 1, NULL);
      pl_test_expect_infer_error (g2, "inputs 0 and 1 must have the same dtype, got f32 and i64");
    }
  /* The error names the node. */
  g_autoptr (PlGraph) g = pl_test_node_graph ("Sub", 2, ai, 0, 1, NULL);
  pl_test_expect_infer_error (g, "node 'node' (Sub): inputs 0 and 1");
  /* Wrong arity. */
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("Add", 1, &a, 0, 1, NULL);
  pl_test_expect_infer_error (g3, "expects 2..2 inputs");
}

/* Opset < 7: broadcast=1 with axis aligns B at A's dim `axis`. */
static void
test_legacy_broadcast (void)
{
  g_autoptr (PlTensor) a = pl_test_tensor (F32, 3, PL_DIMS (2, 3, 2), NULL);
  g_autoptr (PlTensor) b = pl_test_tensor (F32, 1, PL_DIMS (3), PL_VALS (10, 20, 30));
  PlTensor *ab[] = { a, b };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Add", 2, ab, 0, 1, &node);
  g->opset = 6;
  pl_node_set_attr_int (node, "broadcast", 1);
  pl_node_set_attr_int (node, "axis", 1);
  check_output (g, ab, 0, F32, PL_VALS (10, 10, 20, 20, 30, 30, 10, 10, 20, 20, 30, 30));
  g_autofree char *s = inferred_shape (g, 0);
  g_assert_cmpstr (s, ==, "[2, 3, 2]");
}

static void
test_registry (void)
{
  struct { PlOp op; int min_in, max_in, min_out, max_out; } want[] = {
    { PL_OP_Relu, 1, 1, 1, 1 },           { PL_OP_Clip, 1, 3, 1, 1 },
    { PL_OP_Dropout, 1, 3, 1, 2 },        { PL_OP_Trilu, 1, 2, 1, 1 },
    { PL_OP_CastLike, 2, 2, 1, 1 },       { PL_OP_Add, 2, 2, 1, 1 },
    { PL_OP_Max, 1, -1, 1, 1 },           { PL_OP_Mean, 1, -1, 1, 1 },
    { PL_OP_Where, 3, 3, 1, 1 },          { PL_OP_BatchNormalization, 5, 5, 1, 5 },
  };
  for (size_t k = 0; k < G_N_ELEMENTS (want); k++)
    {
      const PlOpInfo *info = pl_op_info (want[k].op);
      g_assert_cmpint (info->min_inputs, ==, want[k].min_in);
      g_assert_cmpint (info->max_inputs, ==, want[k].max_in);
      g_assert_cmpint (info->min_outputs, ==, want[k].min_out);
      g_assert_cmpint (info->max_outputs, ==, want[k].max_out);
      g_assert_cmpint (info->category, ==, PL_CAT_ELEMENTWISE);
      g_assert_nonnull (info->infer);
      g_assert_nonnull (info->eval);
    }
  /* Every elementwise op is executable. */
  for (int op = 1; op < PL_OP_COUNT; op++)
    if (pl_op_info (op)->category == PL_CAT_ELEMENTWISE)
      g_assert_nonnull (pl_op_info (op)->eval);
}

/* Zero-size tensors go through every path without touching data. */
static void
test_empty (void)
{
  g_autoptr (PlTensor) a = pl_test_tensor (F32, 2, PL_DIMS (0, 3), NULL);
  g_autoptr (PlTensor) b = pl_test_tensor (F32, 1, PL_DIMS (3), PL_VALS (1, 2, 3));
  PlTensor *ab[] = { a, b };
  g_autoptr (PlGraph) g = pl_test_node_graph ("Add", 2, ab, 0, 1, NULL);
  PlTensor **outs = pl_test_run (g, ab, 0);
  g_assert_cmpint (outs[0]->numel, ==, 0);
  g_assert_cmpint (outs[0]->dims[1], ==, 3);
  pl_interp_free_outputs (outs, 1);
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("Trilu", 1, &a, 0, 1, NULL);
  outs = pl_test_run (g2, &a, 0);
  g_assert_cmpint (outs[0]->numel, ==, 0);
  pl_interp_free_outputs (outs, 1);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_ops_init ();
  g_test_add_func ("/Passlab/OpsElementwise/unary-math", test_unary_math);
  g_test_add_func ("/Passlab/OpsElementwise/unary-int", test_unary_int);
  g_test_add_func ("/Passlab/OpsElementwise/unary-dtype-errors", test_unary_dtype_errors);
  g_test_add_func ("/Passlab/OpsElementwise/not-isnan-isinf", test_not_isnan_isinf);
  g_test_add_func ("/Passlab/OpsElementwise/gelu", test_gelu);
  g_test_add_func ("/Passlab/OpsElementwise/clip", test_clip);
  g_test_add_func ("/Passlab/OpsElementwise/cast", test_cast);
  g_test_add_func ("/Passlab/OpsElementwise/identity-dropout", test_identity_dropout);
  g_test_add_func ("/Passlab/OpsElementwise/trilu", test_trilu);
  g_test_add_func ("/Passlab/OpsElementwise/arith-broadcast", test_arith_broadcast);
  g_test_add_func ("/Passlab/OpsElementwise/arith-int", test_arith_int);
  g_test_add_func ("/Passlab/OpsElementwise/pow", test_pow);
  g_test_add_func ("/Passlab/OpsElementwise/mod", test_mod);
  g_test_add_func ("/Passlab/OpsElementwise/bitshift", test_bitshift);
  g_test_add_func ("/Passlab/OpsElementwise/variadic", test_variadic);
  g_test_add_func ("/Passlab/OpsElementwise/compare-logic", test_compare_logic);
  g_test_add_func ("/Passlab/OpsElementwise/where", test_where);
  g_test_add_func ("/Passlab/OpsElementwise/prelu", test_prelu);
  g_test_add_func ("/Passlab/OpsElementwise/batchnorm", test_batchnorm);
  g_test_add_func ("/Passlab/OpsElementwise/symbolic-broadcast", test_symbolic_broadcast);
  g_test_add_func ("/Passlab/OpsElementwise/broadcast-errors", test_broadcast_errors);
  g_test_add_func ("/Passlab/OpsElementwise/legacy-broadcast", test_legacy_broadcast);
  g_test_add_func ("/Passlab/OpsElementwise/registry", test_registry);
  g_test_add_func ("/Passlab/OpsElementwise/empty", test_empty);
  return g_test_run ();
}
