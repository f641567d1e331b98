/* test-ops-reduce.c — shape inference and reference evaluation of the ops
 * in ops-reduce.c: Reduce*, ArgMax/ArgMin, the softmax family, the
 * normalizations, LRN, CumSum and TopK.
 *
 * Expected values were computed with numpy (float64) or by hand; the
 * comments give the numpy expression where it is not obvious.
 */
#define G_LOG_DOMAIN "passlab-test"
#include "test-util.h"

#include <math.h>

/* --- helpers --------------------------------------------------------------- */

static void
assert_shape (const PlShape *s, const char *want)
{
  g_autofree char *got = pl_shape_to_string (s);
  g_assert_cmpstr (got, ==, want);
}

static void
assert_tensor_shape (const PlTensor *t, const char *want)
{
  PlShape s = pl_tensor_shape (t);
  assert_shape (&s, want);
}

/* One node of op_type on inputs (const_mask: which are constants); runs it
 * and returns its outputs. *graph keeps the graph for shape checks. */
typedef void (*SetAttrs) (PlNode *node);

static PlTensor **
run_op (const char *op_type, int n_in, PlTensor *const *in, guint32 const_mask, int n_out,
        int opset, SetAttrs set_attrs, PlGraph **graph)
{
  PlNode *node;
  PlGraph *g = pl_test_node_graph (op_type, n_in, in, const_mask, n_out, &node);
  if (opset > 0)
    g->opset = opset;
  if (set_attrs)
    set_attrs (node);
  PlTensor **out = pl_test_run (g, in, const_mask);
  if (graph)
    *graph = g;
  else
    pl_graph_free (g);
  return out;
}

static PlNode *
first_node (PlGraph *g)
{
  return g->nodes->pdata[0];
}

/* x = [[1, -2, 3], [-4, 5, -6]] as f64 */
static PlTensor *
signed_2x3 (void)
{
  return pl_test_tensor (PL_DTYPE_F64, 2, PL_DIMS (2, 3), PL_VALS (1, -2, 3, -4, 5, -6));
}

/* x = 1..12 as f32 [3, 2, 2] */
static PlTensor *
iota_3x2x2 (void)
{
  return pl_test_tensor (PL_DTYPE_F32, 3, PL_DIMS (3, 2, 2),
                         PL_VALS (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12));
}

/* --- Reduce* ----------------------------------------------------------------- */

static void set_axes_1_nokeep (PlNode *n)
{
  pl_node_set_attr_ints (n, "axes", PL_DIMS (1), 1);
  pl_node_set_attr_int (n, "keepdims", 0);
}

/* Every Reduce* along axis 1 without keepdims, and over all axes with keepdims. */
static void
test_reduce_kinds (void)
{
  static const struct {
    const char *op;
    bool        use_abs;      /* LogSum of negatives is NaN: use |x| */
    double      axis1[2];
    double      all;
  } cases[] = {
    { "ReduceSum",       false, { 2, -5 }, -3 },
    { "ReduceMean",      false, { 0.66666666666666663, -1.6666666666666667 }, -0.5 },
    { "ReduceMax",       false, { 3, 5 }, 5 },
    { "ReduceMin",       false, { -2, -6 }, -6 },
    { "ReduceProd",      false, { -6, 120 }, -720 },
    { "ReduceL1",        false, { 6, 15 }, 21 },
    { "ReduceL2",        false, { 3.7416573867739413, 8.7749643873921226 }, 9.5393920141694561 },
    { "ReduceSumSquare", false, { 14, 77 }, 91 },
    { "ReduceLogSum",    true,  { 1.791759469228055, 2.7080502011022101 }, 3.044522437723423 },
    { "ReduceLogSumExp", false, { 3.1328452337275756, 5.0001401016901763 }, 5.1438430949536738 },
  };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autoptr (PlTensor) x = signed_2x3 ();
      if (cases[c].use_abs)
        for (int64_t i = 0; i < x->numel; i++)
          pl_tensor_set_f64 (x, i, fabs (pl_tensor_get_f64 (x, i)));
      PlTensor *in[] = { x };

      PlTensor **out = run_op (cases[c].op, 1, in, 0, 1, 0, set_axes_1_nokeep, NULL);
      assert_tensor_shape (out[0], "[2]");
      pl_test_assert_values (out[0], cases[c].axis1);
      pl_interp_free_outputs (out, 1);

      /* No axes: reduce everything; keepdims defaults to 1. */
      out = run_op (cases[c].op, 1, in, 0, 1, 0, NULL, NULL);
      assert_tensor_shape (out[0], "[1, 1]");
      pl_test_assert_values (out[0], &cases[c].all);
      pl_interp_free_outputs (out, 1);
    }
}

static void set_axes_neg2 (PlNode *n) { pl_node_set_attr_ints (n, "axes", PL_DIMS (-2), 1); }

static void
test_reduce_negative_axes (void)
{
  g_autoptr (PlTensor) x = iota_3x2x2 ();
  PlTensor *in[] = { x };
  PlTensor **out = run_op ("ReduceMax", 1, in, 0, 1, 0, set_axes_neg2, NULL);
  assert_tensor_shape (out[0], "[3, 1, 2]");
  pl_test_assert_values (out[0], PL_VALS (3, 4, 7, 8, 11, 12));
  pl_interp_free_outputs (out, 1);
}

/* ReduceSum from opset 13 takes axes as its second input. */
static void
test_reduce_sum_axes_input (void)
{
  g_autoptr (PlTensor) x = iota_3x2x2 ();
  g_autoptr (PlTensor) axes = pl_test_tensor (PL_DTYPE_I64, 1, PL_DIMS (2), PL_VALS (0, -1));
  PlTensor *in[] = { x, axes };
  PlTensor **out = run_op ("ReduceSum", 2, in, 0x2, 1, 13, NULL, NULL);
  assert_tensor_shape (out[0], "[1, 2, 1]");
  /* numpy: x.sum(axis=(0, 2), keepdims=True) */
  pl_test_assert_values (out[0], PL_VALS (33, 45));
  pl_interp_free_outputs (out, 1);
}

static void set_keep0 (PlNode *n) { pl_node_set_attr_int (n, "keepdims", 0); }

/* Axes known only at run time: with keepdims the rank is still known. */
static void
test_reduce_sum_runtime_axes (void)
{
  g_autoptr (PlTensor) x = iota_3x2x2 ();
  g_autoptr (PlTensor) axes = pl_test_tensor (PL_DTYPE_I64, 1, PL_DIMS (1), PL_VALS (2));
  PlTensor *in[] = { x, axes };
  PlGraph *g;
  PlTensor **out = run_op ("ReduceSum", 2, in, 0, 1, 0, NULL, &g);
  assert_shape (&first_node (g)->outputs[0]->shape, "[?, ?, ?]");
  assert_tensor_shape (out[0], "[3, 2, 1]");
  pl_test_assert_values (out[0], PL_VALS (3, 7, 11, 15, 19, 23));
  pl_interp_free_outputs (out, 1);
  pl_graph_free (g);

  /* Without keepdims, one axis (axes has static shape [1]) drops one dim. */
  out = run_op ("ReduceSum", 2, in, 0, 1, 0, set_keep0, &g);
  assert_shape (&first_node (g)->outputs[0]->shape, "[?, ?]");
  assert_tensor_shape (out[0], "[3, 2]");
  pl_test_assert_values (out[0], PL_VALS (3, 7, 11, 15, 19, 23));
  pl_interp_free_outputs (out, 1);
  pl_graph_free (g);
}

static void set_noop (PlNode *n) { pl_node_set_attr_int (n, "noop_with_empty_axes", 1); }

/* Empty axes reduce everything, or nothing with noop_with_empty_axes. */
static void
test_reduce_sum_empty_axes (void)
{
  g_autoptr (PlTensor) x = iota_3x2x2 ();
  g_autoptr (PlTensor) axes = pl_test_tensor (PL_DTYPE_I64, 1, PL_DIMS (0), NULL);
  PlTensor *in[] = { x, axes };

  PlTensor **out = run_op ("ReduceSum", 2, in, 0x2, 1, 0, NULL, NULL);
  assert_tensor_shape (out[0], "[1, 1, 1]");
  pl_test_assert_values (out[0], PL_VALS (78));
  pl_interp_free_outputs (out, 1);

  out = run_op ("ReduceSum", 2, in, 0x2, 1, 0, set_keep0, NULL);
  assert_tensor_shape (out[0], "[]");
  pl_test_assert_values (out[0], PL_VALS (78));
  pl_interp_free_outputs (out, 1);

  /* A graph-input axes of static shape [0] is empty too, so inference is exact. */
  PlGraph *g;
  out = run_op ("ReduceSum", 2, in, 0, 1, 0, set_noop, &g);
  assert_shape (&first_node (g)->outputs[0]->shape, "[3, 2, 2]");
  pl_test_assert_close (out[0], x, 0, 0);
  pl_interp_free_outputs (out, 1);
  pl_graph_free (g);
}

static void set_axes_1 (PlNode *n) { pl_node_set_attr_ints (n, "axes", PL_DIMS (1), 1); }

/* Before opset 13 ReduceSum's axes is an attribute. */
static void
test_reduce_sum_opset11_attr (void)
{
  g_autoptr (PlTensor) x = iota_3x2x2 ();
  PlTensor *in[] = { x };
  PlTensor **out = run_op ("ReduceSum", 1, in, 0, 1, 11, set_axes_1, NULL);
  assert_tensor_shape (out[0], "[3, 1, 2]");
  pl_test_assert_values (out[0], PL_VALS (4, 6, 12, 14, 20, 22));
  pl_interp_free_outputs (out, 1);
}

/* Integer reductions accumulate exactly in int64 (2^53 + 1 is not a double). */
static void
test_reduce_int64_exact (void)
{
  const int64_t big = (INT64_C (1) << 53) + 1;
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_I64, 1, PL_DIMS (2), NULL);
  pl_tensor_set_i64 (x, 0, big);
  pl_tensor_set_i64 (x, 1, 1);
  PlTensor *in[] = { x };

  PlTensor **out = run_op ("ReduceSum", 1, in, 0, 1, 11, set_keep0, NULL);
  g_assert_cmpint (out[0]->dtype, ==, PL_DTYPE_I64);
  assert_tensor_shape (out[0], "[]");
  g_assert_cmpint (pl_tensor_get_i64 (out[0], 0), ==, big + 1);
  pl_interp_free_outputs (out, 1);

  out = run_op ("ReduceMax", 1, in, 0, 1, 0, set_keep0, NULL);
  g_assert_cmpint (pl_tensor_get_i64 (out[0], 0), ==, big);
  pl_interp_free_outputs (out, 1);

  /* Integer mean truncates: (1 + 2 + 4) / 3 = 2. */
  g_autoptr (PlTensor) y = pl_test_tensor (PL_DTYPE_I32, 1, PL_DIMS (3), PL_VALS (1, 2, 4));
  PlTensor *in2[] = { y };
  out = run_op ("ReduceMean", 1, in2, 0, 1, 0, NULL, NULL);
  g_assert_cmpint (out[0]->dtype, ==, PL_DTYPE_I32);
  pl_test_assert_values (out[0], PL_VALS (2));
  pl_interp_free_outputs (out, 1);
}

static void
test_reduce_log_sum_exp_large (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (2), PL_VALS (1000, 1000));
  PlTensor *in[] = { x };
  PlTensor **out = run_op ("ReduceLogSumExp", 1, in, 0, 1, 0, NULL, NULL);
  /* 1000 + log(2), not inf */
  pl_test_assert_values (out[0], PL_VALS (1000.6931471805599));
  pl_interp_free_outputs (out, 1);
}

/* Symbolic dims pass through reductions. */
static void
test_reduce_symbolic_infer (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraph) g = pl_graph_new ("sym");
  PlShape s = pl_shape_from_dims (2, PL_DIMS (0, 4));
  s.dims[0] = pl_dim_symbol ("N");
  PlValue *x = pl_graph_add_input (g, "x", PL_DTYPE_F32, &s, &error);
  g_assert_no_error (error);
  PlNode *n = pl_graph_add_node (g, "ReduceMean", NULL, "r", 1, &x, 1, NULL, &error);
  g_assert_no_error (error);
  pl_node_set_attr_ints (n, "axes", PL_DIMS (-1), 1);
  g_assert_true (pl_node_infer (n, &error));
  assert_shape (&n->outputs[0]->shape, "[N, 1]");
  g_assert_cmpint (n->outputs[0]->dtype, ==, PL_DTYPE_F32);
}

static void set_axes_2 (PlNode *n) { pl_node_set_attr_ints (n, "axes", PL_DIMS (2), 1); }
static void set_axes_dup (PlNode *n) { pl_node_set_attr_ints (n, "axes", PL_DIMS (0, -2), 2); }

static void
test_reduce_errors (void)
{
  g_autoptr (PlTensor) x = signed_2x3 ();
  PlTensor *in[] = { x };
  PlNode *node;

  g_autoptr (PlGraph) g1 = pl_test_node_graph ("ReduceMean", 1, in, 0, 1, &node);
  set_axes_2 (node);
  pl_test_expect_infer_error (g1, "axis 2 out of range for rank 2");

  g_autoptr (PlGraph) g2 = pl_test_node_graph ("ReduceL2", 1, in, 0, 1, &node);
  set_axes_dup (node);
  pl_test_expect_infer_error (g2, "listed twice");

  /* An out-of-range axis that arrives only at run time. */
  g_autoptr (PlTensor) axes = pl_test_tensor (PL_DTYPE_I64, 1, PL_DIMS (1), PL_VALS (-3));
  PlTensor *in2[] = { x, axes };
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("ReduceSum", 2, in2, 0, 1, &node);
  pl_test_expect_run_error (g3, in2, 0, "axis -3 out of range for rank 2");

  g_autoptr (PlTensor) b = pl_test_tensor (PL_DTYPE_BOOL, 1, PL_DIMS (2), PL_VALS (1, 0));
  PlTensor *in3[] = { b };
  g_autoptr (PlGraph) g4 = pl_test_node_graph ("ReduceSum", 1, in3, 0, 1, &node);
  pl_test_expect_infer_error (g4, "unsupported dtype");
}

/* --- ArgMax, ArgMin ------------------------------------------------------------ */

static void set_axis_1 (PlNode *n) { pl_node_set_attr_int (n, "axis", 1); }
static void set_axis_1_last (PlNode *n)
{
  pl_node_set_attr_int (n, "axis", 1);
  pl_node_set_attr_int (n, "select_last_index", 1);
}
static void set_axis_neg2_nokeep (PlNode *n)
{
  pl_node_set_attr_int (n, "axis", -2);
  pl_node_set_attr_int (n, "keepdims", 0);
}

static void
test_argmax_argmin (void)
{
  /* x = [[2, 1, 2], [0, 5, 5]] */
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 3), PL_VALS (2, 1, 2, 0, 5, 5));
  PlTensor *in[] = { x };
  static const struct {
    const char *op;
    SetAttrs    attrs;
    const char *shape;
    double      want[3];
  } cases[] = {
    { "ArgMax", set_axis_1,           "[2, 1]", { 0, 1 } },
    { "ArgMax", set_axis_1_last,      "[2, 1]", { 2, 2 } },
    { "ArgMin", set_axis_1,           "[2, 1]", { 1, 0 } },
    { "ArgMin", set_axis_1_last,      "[2, 1]", { 1, 0 } },
    { "ArgMax", NULL,                 "[1, 3]", { 0, 1, 1 } },  /* axis 0, keepdims 1 */
    { "ArgMax", set_axis_neg2_nokeep, "[3]",    { 0, 1, 1 } },
    { "ArgMin", set_axis_neg2_nokeep, "[3]",    { 1, 0, 0 } },
  };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      PlTensor **out = run_op (cases[c].op, 1, in, 0, 1, 0, cases[c].attrs, NULL);
      g_assert_cmpint (out[0]->dtype, ==, PL_DTYPE_I64);
      assert_tensor_shape (out[0], cases[c].shape);
      pl_test_assert_values (out[0], cases[c].want);
      pl_interp_free_outputs (out, 1);
    }
}

static void set_axis_3 (PlNode *n) { pl_node_set_attr_int (n, "axis", 3); }

static void
test_arg_errors (void)
{
  g_autoptr (PlTensor) x = signed_2x3 ();
  PlTensor *in[] = { x };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("ArgMin", 1, in, 0, 1, &node);
  set_axis_3 (node);
  pl_test_expect_infer_error (g, "axis 3 out of range for rank 2");
}

/* --- Softmax, LogSoftmax, Hardmax ------------------------------------------- */

static void set_axis_0 (PlNode *n) { pl_node_set_attr_int (n, "axis", 0); }
static void set_axis_neg1 (PlNode *n) { pl_node_set_attr_int (n, "axis", -1); }

static void
test_softmax_opset13 (void)
{
  /* s = [[1, 2, 3], [-1, 0, 4]] */
  g_autoptr (PlTensor) s = pl_test_tensor (PL_DTYPE_F64, 2, PL_DIMS (2, 3), PL_VALS (1, 2, 3, -1, 0, 4));
  PlTensor *in[] = { s };

  PlTensor **out = run_op ("Softmax", 1, in, 0, 1, 13, NULL, NULL);
  pl_test_assert_values (out[0], PL_VALS (0.090030573170380435, 0.24472847105479767,
                                          0.66524095577482178, 0.0065732631853090834,
                                          0.0178679818703045, 0.97555875494438649));
  pl_interp_free_outputs (out, 1);

  out = run_op ("Softmax", 1, in, 0, 1, 13, set_axis_0, NULL);
  pl_test_assert_values (out[0], PL_VALS (0.88079707797788254, 0.88079707797788254,
                                          0.26894142136999516, 0.11920292202211755,
                                          0.11920292202211755, 0.7310585786300049));
  pl_interp_free_outputs (out, 1);

  out = run_op ("LogSoftmax", 1, in, 0, 1, 13, set_axis_neg1, NULL);
  pl_test_assert_values (out[0], PL_VALS (-2.4076059644443806, -1.4076059644443801,
                                          -0.40760596444438046, -5.0247448901388223,
                                          -4.0247448901388223, -0.024744890138822577));
  pl_interp_free_outputs (out, 1);
}

/* t = [[[0, -1], [1, 6]], [[4, -5], [3, 14]]] */
static PlTensor *
softmax_3d (void)
{
  return pl_test_tensor (PL_DTYPE_F32, 3, PL_DIMS (2, 2, 2), PL_VALS (0, -1, 1, 6, 4, -5, 3, 14));
}

/* Opset 13 works along the last axis; opset 11 flattens to 2-D at axis 1. */
static void
test_softmax_coerce_2d (void)
{
  g_autoptr (PlTensor) t = softmax_3d ();
  PlTensor *in[] = { t };
  g_autoptr (PlTensor) want13 = pl_test_tensor (PL_DTYPE_F32, 3, PL_DIMS (2, 2, 2),
      PL_VALS (0.7310585786300049, 0.26894142136999516, 0.0066928509242848563, 0.99330714907571527,
               0.99987660542401369, 0.00012339457598623172, 1.6701421848095181e-05, 0.99998329857815205));
  /* numpy: softmax(t.reshape(2, 4), axis=1) */
  g_autoptr (PlTensor) want11 = pl_test_tensor (PL_DTYPE_F32, 3, PL_DIMS (2, 2, 2),
      PL_VALS (0.0024538976749531329, 0.00090273850535366011, 0.0066703854587230015, 0.9899729783609702,
               4.5397110273563717e-05, 5.6024484849618864e-09, 1.6700663558236962e-05, 0.99993789662371979));
  /* numpy: log(softmax(t.reshape(1, 8), axis=1)) */
  g_autoptr (PlTensor) want_log11 = pl_test_tensor (PL_DTYPE_F32, 3, PL_DIMS (2, 2, 2),
      PL_VALS (-14.000400887255664, -15.000400887255664, -13.000400887255664, -8.0004008872556636,
               -10.000400887255664, -19.000400887255662, -11.000400887255664, -0.00040088725566348252));

  PlTensor **out = run_op ("Softmax", 1, in, 0, 1, 13, NULL, NULL);
  pl_test_assert_close (out[0], want13, 1e-6, 1e-7);
  pl_interp_free_outputs (out, 1);
  out = run_op ("Softmax", 1, in, 0, 1, 11, NULL, NULL);
  pl_test_assert_close (out[0], want11, 1e-6, 1e-7);
  pl_interp_free_outputs (out, 1);
  out = run_op ("LogSoftmax", 1, in, 0, 1, 11, set_axis_0, NULL);
  pl_test_assert_close (out[0], want_log11, 1e-6, 1e-6);
  pl_interp_free_outputs (out, 1);
}

static void
test_hardmax (void)
{
  /* Ties go to the first maximum. */
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 3), PL_VALS (1, 3, 3, 2, 0, 1));
  PlTensor *in[] = { x };
  PlTensor **out = run_op ("Hardmax", 1, in, 0, 1, 0, NULL, NULL);
  pl_test_assert_values (out[0], PL_VALS (0, 1, 0, 1, 0, 0));
  pl_interp_free_outputs (out, 1);

  g_autoptr (PlTensor) t = softmax_3d ();
  PlTensor *in3[] = { t };
  out = run_op ("Hardmax", 1, in3, 0, 1, 13, NULL, NULL);
  pl_test_assert_values (out[0], PL_VALS (1, 0, 0, 1, 1, 0, 0, 1));
  pl_interp_free_outputs (out, 1);
  out = run_op ("Hardmax", 1, in3, 0, 1, 11, NULL, NULL);
  pl_test_assert_values (out[0], PL_VALS (0, 0, 0, 1, 0, 0, 0, 1));
  pl_interp_free_outputs (out, 1);
}

static void set_axis_2 (PlNode *n) { pl_node_set_attr_int (n, "axis", 2); }

static void
test_softmax_errors (void)
{
  g_autoptr (PlTensor) x = signed_2x3 ();
  PlTensor *in[] = { x };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("Softmax", 1, in, 0, 1, &node);
  set_axis_2 (node);
  pl_test_expect_infer_error (g, "axis 2 out of range for rank 2");

  g_autoptr (PlTensor) i = pl_test_tensor (PL_DTYPE_I32, 1, PL_DIMS (2), PL_VALS (1, 2));
  PlTensor *in2[] = { i };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("LogSoftmax", 1, in2, 0, 1, &node);
  pl_test_expect_infer_error (g2, "unsupported dtype");
}

/* --- LayerNormalization -------------------------------------------------------- */

static void
test_layer_norm (void)
{
  /* X = [[1, 2, 4], [3, -1, 0.5]], W = [1, 0.5, 2], B = [0.1, 0, -1] */
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F64, 2, PL_DIMS (2, 3), PL_VALS (1, 2, 4, 3, -1, 0.5));
  g_autoptr (PlTensor) w = pl_test_tensor (PL_DTYPE_F64, 1, PL_DIMS (3), PL_VALS (1, 0.5, 2));
  g_autoptr (PlTensor) b = pl_test_tensor (PL_DTYPE_F64, 1, PL_DIMS (3), PL_VALS (0.1, 0, -1));
  PlTensor *in[] = { x, w, b };
  PlGraph *g;
  PlTensor **out = run_op ("LayerNormalization", 3, in, 0x6, 3, 17, NULL, &g);
  assert_tensor_shape (out[0], "[2, 3]");
  pl_test_assert_values (out[0], PL_VALS (-0.9690415314502977, -0.13363019143128727, 1.6726038286257436,
                                          1.4131958959276272, -0.55558287904630377, -1.4040602756700391));
  /* Mean and InvStdDev are [2, 1], in stash_type (float) */
  assert_tensor_shape (out[1], "[2, 1]");
  g_assert_cmpint (out[1]->dtype, ==, PL_DTYPE_F32);
  g_assert_cmpint (first_node (g)->outputs[2]->dtype, ==, PL_DTYPE_F32);
  pl_test_assert_values (out[1], PL_VALS (2.3333333333333335, 0.83333333333333337));
  pl_test_assert_values (out[2], PL_VALS (0.8017811485877232, 0.60609041350505866));
  pl_interp_free_outputs (out, 3);
  pl_graph_free (g);
}

static void set_axis0_eps (PlNode *n)
{
  pl_node_set_attr_int (n, "axis", 0);
  pl_node_set_attr_float (n, "epsilon", 0.1f);
}

/* axis 0 normalizes the whole tensor; a scalar Scale broadcasts; no B, no
 * Mean / InvStdDev outputs. */
static void
test_layer_norm_axis0_minimal (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F64, 2, PL_DIMS (2, 3), PL_VALS (1, 2, 4, 3, -1, 0.5));
  g_autoptr (PlTensor) w = pl_test_tensor (PL_DTYPE_F64, 0, NULL, PL_VALS (2));
  PlTensor *in[] = { x, w };
  PlTensor **out = run_op ("LayerNormalization", 2, in, 0x2, 1, 17, set_axis0_eps, NULL);
  pl_test_assert_values (out[0], PL_VALS (-0.69704383227672428, 0.4978884516262318, 2.8877530194321444,
                                          1.692820735529188, -3.0869084000826361, -1.2945099742282025));
  pl_interp_free_outputs (out, 1);
}

static void
test_layer_norm_errors (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 3), NULL);
  g_autoptr (PlTensor) w = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (2), NULL);
  PlTensor *in[] = { x, w };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("LayerNormalization", 2, in, 0x2, 1, &node);
  pl_test_expect_infer_error (g, "does not broadcast");

  /* Broadcasting may not grow X: [3] against [2, 1] would give [2, 3]. */
  g_autoptr (PlTensor) x21 = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 1), NULL);
  g_autoptr (PlTensor) w3 = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (3), NULL);
  PlTensor *in3[] = { x21, w3 };
  g_autoptr (PlGraph) g3 = pl_test_node_graph ("LayerNormalization", 2, in3, 0x2, 1, &node);
  pl_test_expect_infer_error (g3, "does not broadcast");

  PlTensor *in2[] = { x, x };
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("LayerNormalization", 2, in2, 0x2, 1, &node);
  set_axis_2 (node);
  pl_test_expect_infer_error (g2, "axis 2 out of range");
}

/* --- InstanceNormalization, MeanVarianceNormalization, LpNormalization -------- */

static void
test_instance_norm (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F64, 3, PL_DIMS (2, 2, 3),
                                           PL_VALS (1, 2, 3, 4, 0, -4, 0.5, 0.5, 1, 2, 3, 7));
  g_autoptr (PlTensor) s = pl_test_tensor (PL_DTYPE_F64, 1, PL_DIMS (2), PL_VALS (1, 2));
  g_autoptr (PlTensor) b = pl_test_tensor (PL_DTYPE_F64, 1, PL_DIMS (2), PL_VALS (0, 1));
  PlTensor *in[] = { x, s, b };
  PlTensor **out = run_op ("InstanceNormalization", 3, in, 0x6, 1, 0, NULL, NULL);
  /* numpy: (x - m) / sqrt(v + 1e-5) * s + b with m, v over axis 2 */
  pl_test_assert_values (out[0], PL_VALS (-1.2247356859083902, 0, 1.2247356859083902,
                                          3.4494885945856688, 1, -1.4494885945856688,
                                          -0.70704315016629948, -0.70704315016629948, 1.4140863003325994,
                                          -0.85163821564807751, 0.074180892175961244, 3.7774573234721163));
  pl_interp_free_outputs (out, 1);

  /* scale must have one value per channel */
  g_autoptr (PlTensor) s3 = pl_test_tensor (PL_DTYPE_F64, 1, PL_DIMS (3), NULL);
  PlTensor *in2[] = { x, s3, b };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("InstanceNormalization", 3, in2, 0x6, 1, &node);
  pl_test_expect_infer_error (g, "channels");
}

static void set_mvn_axes_1 (PlNode *n) { pl_node_set_attr_ints (n, "axes", PL_DIMS (1), 1); }

static void
test_mvn (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F64, 4, PL_DIMS (2, 3, 1, 2),
      PL_VALS (0.8, 0.5, 0.1, 0.03, 0.13, 0.5, 0.8, 0.94, 0.95, 0.18, 0.46, 0.26));
  PlTensor *in[] = { x };
  /* numpy: (x - mean) / (std + 1e-9) over axes (0, 2, 3) */
  PlTensor **out = run_op ("MeanVarianceNormalization", 1, in, 0, 1, 0, NULL, NULL);
  pl_test_assert_values (out[0], PL_VALS (0.24902912099548877, -1.6186892864706757, -0.58039256320322996,
                                          -0.76935758378102581, -1.3796972476857561, 1.0804857963804111,
                                          0.24902912099548877, 1.1206310444796981, 1.7141826866700054,
                                          -0.36443253968574907, 0.81452006188677162, -0.51530861058142696));
  pl_interp_free_outputs (out, 1);

  out = run_op ("MeanVarianceNormalization", 1, in, 0, 1, 0, set_mvn_axes_1, NULL);
  pl_test_assert_values (out[0], PL_VALS (1.4131974511537868, 0.70710677799505817, -0.7530176199578571,
                                          -1.4142135559901163, -0.66017983119592949, 0.70710677799505817,
                                          0.30895329872439375, 1.4077113924819546, 1.0406847957032204,
                                          -0.82116497894780682, -1.3496380944276145, -0.58654641353414771));
  pl_interp_free_outputs (out, 1);

  /* The default axes [0, 2, 3] need rank 4. */
  g_autoptr (PlTensor) x2 = signed_2x3 ();
  PlTensor *in2[] = { x2 };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("MeanVarianceNormalization", 1, in2, 0, 1, &node);
  pl_test_expect_infer_error (g, "out of range");
}

static void set_p1_axis0 (PlNode *n)
{
  pl_node_set_attr_int (n, "p", 1);
  pl_node_set_attr_int (n, "axis", 0);
}
static void set_p3 (PlNode *n) { pl_node_set_attr_int (n, "p", 3); }

static void
test_lp_norm (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F64, 2, PL_DIMS (2, 3), PL_VALS (3, 4, 0, -1, 2, 2));
  PlTensor *in[] = { x };
  PlTensor **out = run_op ("LpNormalization", 1, in, 0, 1, 0, NULL, NULL);
  pl_test_assert_values (out[0], PL_VALS (0.6, 0.8, 0, -1.0 / 3, 2.0 / 3, 2.0 / 3));
  pl_interp_free_outputs (out, 1);

  out = run_op ("LpNormalization", 1, in, 0, 1, 0, set_p1_axis0, NULL);
  pl_test_assert_values (out[0], PL_VALS (0.75, 4.0 / 6, 0, -0.25, 2.0 / 6, 1));
  pl_interp_free_outputs (out, 1);

  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("LpNormalization", 1, in, 0, 1, &node);
  set_p3 (node);
  pl_test_expect_infer_error (g, "p must be 1 or 2");
}

/* --- LRN ------------------------------------------------------------------------ */

static void set_lrn (PlNode *n)
{
  pl_node_set_attr_float (n, "alpha", 0.0002f);
  pl_node_set_attr_float (n, "beta", 0.5f);
  pl_node_set_attr_float (n, "bias", 2.0f);
  pl_node_set_attr_int (n, "size", 3);
}
static void set_lrn_size2 (PlNode *n) { pl_node_set_attr_int (n, "size", 2); }

static void
test_lrn (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F64, 4, PL_DIMS (1, 4, 1, 2),
                                           PL_VALS (1, -2, 3, 0.5, 2, 1, -1, 4));
  PlTensor *in[] = { x };
  /* numpy as in onnx's lrn.py: window [c - floor((size-1)/2), c + ceil((size-1)/2)] */
  PlTensor **out = run_op ("LRN", 1, in, 0, 1, 0, set_lrn, NULL);
  pl_test_assert_values (out[0], PL_VALS (0.70698895951095064, -1.4141133995546007, 2.1208255419866293,
                                          0.35352245873134452, 1.4138836946577529, 0.70690357561516115,
                                          -0.70704786298612143, 2.8276260774898572));
  pl_interp_free_outputs (out, 1);

  /* Even size, default alpha, beta, bias: the window reaches one channel further up. */
  out = run_op ("LRN", 1, in, 0, 1, 0, set_lrn_size2, NULL);
  pl_test_assert_values (out[0], PL_VALS (0.9996251639873398, -1.9996813092560357, 2.9985383313015643,
                                          0.49997656378166477, 1.9996250820124553, 0.99936297377148464,
                                          -0.99996250164054967, 3.9976016787689233));
  pl_interp_free_outputs (out, 1);

  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("LRN", 1, in, 0, 1, &node);
  pl_test_expect_infer_error (g, "size");
}

/* --- CumSum ----------------------------------------------------------------------- */

static void set_exclusive (PlNode *n) { pl_node_set_attr_int (n, "exclusive", 1); }
static void set_reverse (PlNode *n) { pl_node_set_attr_int (n, "reverse", 1); }
static void set_excl_rev (PlNode *n)
{
  pl_node_set_attr_int (n, "exclusive", 1);
  pl_node_set_attr_int (n, "reverse", 1);
}

static void
test_cumsum_1d (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F64, 1, PL_DIMS (5), PL_VALS (1, 2, 3, 4, 5));
  g_autoptr (PlTensor) axis = pl_test_tensor (PL_DTYPE_I32, 0, NULL, PL_VALS (0));
  PlTensor *in[] = { x, axis };
  static const struct { SetAttrs attrs; double want[5]; } cases[] = {
    { NULL,          { 1, 3, 6, 10, 15 } },
    { set_exclusive, { 0, 1, 3, 6, 10 } },
    { set_reverse,   { 15, 14, 12, 9, 5 } },
    { set_excl_rev,  { 14, 12, 9, 5, 0 } },
  };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      PlTensor **out = run_op ("CumSum", 2, in, 0x2, 1, 0, cases[c].attrs, NULL);
      pl_test_assert_values (out[0], cases[c].want);
      pl_interp_free_outputs (out, 1);
    }
}

static void
test_cumsum_2d (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_I64, 2, PL_DIMS (2, 3), PL_VALS (1, 2, 3, 4, 5, 6));
  g_autoptr (PlTensor) last = pl_test_tensor (PL_DTYPE_I64, 1, PL_DIMS (1), PL_VALS (-1));
  g_autoptr (PlTensor) first = pl_test_tensor (PL_DTYPE_I32, 1, PL_DIMS (1), PL_VALS (0));
  PlTensor *in[] = { x, last };
  PlTensor **out = run_op ("CumSum", 2, in, 0x2, 1, 0, NULL, NULL);
  g_assert_cmpint (out[0]->dtype, ==, PL_DTYPE_I64);
  pl_test_assert_values (out[0], PL_VALS (1, 3, 6, 4, 9, 15));
  pl_interp_free_outputs (out, 1);

  /* The axis as a run-time input. */
  PlTensor *in2[] = { x, first };
  out = run_op ("CumSum", 2, in2, 0, 1, 0, NULL, NULL);
  pl_test_assert_values (out[0], PL_VALS (1, 2, 3, 5, 7, 9));
  pl_interp_free_outputs (out, 1);

  g_autoptr (PlTensor) bad = pl_test_tensor (PL_DTYPE_I64, 0, NULL, PL_VALS (2));
  PlTensor *in3[] = { x, bad };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("CumSum", 2, in3, 0x2, 1, &node);
  pl_test_expect_infer_error (g, "axis 2 out of range for rank 2");
}

/* --- TopK ---------------------------------------------------------------------- */

static void set_smallest (PlNode *n) { pl_node_set_attr_int (n, "largest", 0); }

static void
test_topk (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 5),
                                           PL_VALS (3, 1, 4, 1, 5, 9, 2, 6, 5, 3));
  g_autoptr (PlTensor) k = pl_test_tensor (PL_DTYPE_I64, 1, PL_DIMS (1), PL_VALS (3));
  PlTensor *in[] = { x, k };
  PlTensor **out = run_op ("TopK", 2, in, 0x2, 2, 0, NULL, NULL);
  assert_tensor_shape (out[0], "[2, 3]");
  pl_test_assert_values (out[0], PL_VALS (5, 4, 3, 9, 6, 5));
  g_assert_cmpint (out[1]->dtype, ==, PL_DTYPE_I64);
  pl_test_assert_values (out[1], PL_VALS (4, 2, 0, 0, 2, 3));
  pl_interp_free_outputs (out, 2);

  /* Smallest; the tie between the two 1s keeps index order. */
  out = run_op ("TopK", 2, in, 0x2, 2, 0, set_smallest, NULL);
  pl_test_assert_values (out[0], PL_VALS (1, 1, 3, 2, 3, 5));
  pl_test_assert_values (out[1], PL_VALS (1, 3, 0, 1, 4, 3));
  pl_interp_free_outputs (out, 2);

  /* K at run time: the axis's size is unknown to inference. */
  PlGraph *g;
  out = run_op ("TopK", 2, in, 0, 2, 0, NULL, &g);
  assert_shape (&first_node (g)->outputs[0]->shape, "[2, ?]");
  assert_tensor_shape (out[1], "[2, 3]");
  pl_interp_free_outputs (out, 2);
  pl_graph_free (g);
}

static void set_k1_axis0 (PlNode *n)
{
  pl_node_set_attr_int (n, "k", 2);
  pl_node_set_attr_int (n, "axis", 0);
}

/* Before opset 10, k is an attribute. */
static void
test_topk_opset1_attr (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_I32, 2, PL_DIMS (3, 2), PL_VALS (3, 1, 2, 5, 4, 0));
  PlTensor *in[] = { x };
  PlTensor **out = run_op ("TopK", 1, in, 0, 2, 9, set_k1_axis0, NULL);
  assert_tensor_shape (out[0], "[2, 2]");
  g_assert_cmpint (out[0]->dtype, ==, PL_DTYPE_I32);
  pl_test_assert_values (out[0], PL_VALS (4, 5, 3, 1));
  pl_test_assert_values (out[1], PL_VALS (2, 1, 0, 0));
  pl_interp_free_outputs (out, 2);
}

static void
test_topk_errors (void)
{
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 5), NULL);
  g_autoptr (PlTensor) k = pl_test_tensor (PL_DTYPE_I64, 1, PL_DIMS (1), PL_VALS (6));
  PlTensor *in[] = { x, k };
  PlNode *node;
  g_autoptr (PlGraph) g = pl_test_node_graph ("TopK", 2, in, 0x2, 2, &node);
  pl_test_expect_infer_error (g, "exceeds");

  /* The same K at run time fails when the node runs. */
  g_autoptr (PlGraph) g2 = pl_test_node_graph ("TopK", 2, in, 0, 2, &node);
  pl_test_expect_run_error (g2, in, 0, "K = 6");

  g_autoptr (PlGraph) g3 = pl_test_node_graph ("TopK", 2, in, 0x2, 2, &node);
  set_axis_2 (node);
  pl_test_expect_infer_error (g3, "axis 2 out of range for rank 2");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_ops_init ();

  g_test_add_func ("/Passlab/OpsReduce/reduce-kinds", test_reduce_kinds);
  g_test_add_func ("/Passlab/OpsReduce/reduce-negative-axes", test_reduce_negative_axes);
  g_test_add_func ("/Passlab/OpsReduce/reduce-sum-axes-input", test_reduce_sum_axes_input);
  g_test_add_func ("/Passlab/OpsReduce/reduce-sum-runtime-axes", test_reduce_sum_runtime_axes);
  g_test_add_func ("/Passlab/OpsReduce/reduce-sum-empty-axes", test_reduce_sum_empty_axes);
  g_test_add_func ("/Passlab/OpsReduce/reduce-sum-opset11-attr", test_reduce_sum_opset11_attr);
  g_test_add_func ("/Passlab/OpsReduce/reduce-int64-exact", test_reduce_int64_exact);
  g_test_add_func ("/Passlab/OpsReduce/reduce-log-sum-exp-large", test_reduce_log_sum_exp_large);
  g_test_add_func ("/Passlab/OpsReduce/reduce-symbolic-infer", test_reduce_symbolic_infer);
  g_test_add_func ("/Passlab/OpsReduce/reduce-errors", test_reduce_errors);
  g_test_add_func ("/Passlab/OpsReduce/argmax-argmin", test_argmax_argmin);
  g_test_add_func ("/Passlab/OpsReduce/arg-errors", test_arg_errors);
  g_test_add_func ("/Passlab/OpsReduce/softmax-opset13", test_softmax_opset13);
  g_test_add_func ("/Passlab/OpsReduce/softmax-coerce-2d", test_softmax_coerce_2d);
  g_test_add_func ("/Passlab/OpsReduce/hardmax", test_hardmax);
  g_test_add_func ("/Passlab/OpsReduce/softmax-errors", test_softmax_errors);
  g_test_add_func ("/Passlab/OpsReduce/layer-norm", test_layer_norm);
  g_test_add_func ("/Passlab/OpsReduce/layer-norm-axis0-minimal", test_layer_norm_axis0_minimal);
  g_test_add_func ("/Passlab/OpsReduce/layer-norm-errors", test_layer_norm_errors);
  g_test_add_func ("/Passlab/OpsReduce/instance-norm", test_instance_norm);
  g_test_add_func ("/Passlab/OpsReduce/mvn", test_mvn);
  g_test_add_func ("/Passlab/OpsReduce/lp-norm", test_lp_norm);
  g_test_add_func ("/Passlab/OpsReduce/lrn", test_lrn);
  g_test_add_func ("/Passlab/OpsReduce/cumsum-1d", test_cumsum_1d);
  g_test_add_func ("/Passlab/OpsReduce/cumsum-2d", test_cumsum_2d);
  g_test_add_func ("/Passlab/OpsReduce/topk", test_topk);
  g_test_add_func ("/Passlab/OpsReduce/topk-opset1-attr", test_topk_opset1_attr);
  g_test_add_func ("/Passlab/OpsReduce/topk-errors", test_topk_errors);
  return g_test_run ();
}
