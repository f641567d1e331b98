/* test-ops-training.c — the optimizers of ai.onnx.preview.training
 * (Adagrad, Adam, Momentum) on the reference: one step of each worked out
 * by hand in the comments, several tensors at once, the domain they
 * resolve in (and the text and ONNX round trips keeping it), and bad
 * input that must fail with a clear error naming the node. */
#include <glib/gstdio.h>
#include <string.h>

#include "onnx-io.h"
#include "test-util.h"
#include "text-format.h"

#define TRAINING "ai.onnx.preview.training"

static PlTensor *
vec (int n, const double *values)
{
  return pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (n), values);
}

/* Runs the one-node graph of text on inputs (in the node's order) and
 * asserts its outputs' values, want[k] for output k. */
static void
assert_step (const char *text, int n_inputs, PlTensor *const *inputs, int n_outputs, const double *const *want)
{
  g_autoptr (PlGraph) g = pl_test_parse (text);
  PlNode *node = g->nodes->pdata[0];
  g_assert_cmpint (node->n_inputs, ==, n_inputs);
  g_assert_cmpint (node->n_outputs, ==, n_outputs);
  PlTensor **out = pl_test_run (g, inputs, 0);
  for (int k = 0; k < n_outputs; k++)
    pl_test_assert_values (out[k], want[k]);
  pl_interp_free_outputs (out, n_outputs);
}

static void
test_adagrad (void)
{
  /* r = R / (1 + T * decay_factor) = 0.1 / 2 = 0.05; g = 0.5 * X + G = 1;
   * H_new = H + g^2 = 4; X_new = X - r * g / (sqrt (H_new) + 0) = 0.975 */
  g_autoptr (PlTensor) r = pl_tensor_new_scalar (PL_DTYPE_F32, 0.1);
  g_autoptr (PlTensor) t = pl_tensor_new_scalar (PL_DTYPE_I64, 1);
  g_autoptr (PlTensor) x = vec (1, PL_VALS (1)), gr = vec (1, PL_VALS (0.5)), h = vec (1, PL_VALS (3));
  assert_step ("graph a {\n  input r: f32[]\n  input t: i64[]\n  input x: f32[1]\n  input g: f32[1]\n"
               "  input h: f32[1]\n"
               "  y, hn = " TRAINING "::Adagrad(r, t, x, g, h) {decay_factor=1, epsilon=0, norm_coefficient=0.5}\n"
               "  output y, hn\n}\n",
               5, (PlTensor *[]) { r, t, x, gr, h }, 2, (const double *[]) { PL_VALS (0.975), PL_VALS (4) });
}

static void
test_adam (void)
{
  /* alpha 0.5, beta 0.75, T = 1: the bias correction is
   * sqrt (1 - 0.75) / (1 - 0.5) = 1, so the rate stays R = 0.1.
   * element 0: V_new = 0.5 * 0 + 0.5 * 2 = 1, H_new = 0.25 * 2^2 = 1,
   *   X_new = 2 - 0.1 * 1 / 1 = 1.9, times (1 - 0.5) = 0.95
   * element 1: V_new = 0.5 * 2 + 0.5 * -4 = -1, H_new = 0.25 * 16 = 4,
   *   X_new = 1 - 0.1 * -1 / 2 = 1.05, times 0.5 = 0.525 */
  g_autoptr (PlTensor) r = pl_tensor_new_scalar (PL_DTYPE_F32, 0.1);
  g_autoptr (PlTensor) t = pl_tensor_new_scalar (PL_DTYPE_I64, 1);
  g_autoptr (PlTensor) x = vec (2, PL_VALS (2, 1)), gr = vec (2, PL_VALS (2, -4));
  g_autoptr (PlTensor) v = vec (2, PL_VALS (0, 2)), h = vec (2, PL_VALS (0, 0));
  assert_step ("graph a {\n  input r: f32[]\n  input t: i64[]\n  input x: f32[2]\n  input g: f32[2]\n"
               "  input v: f32[2]\n  input h: f32[2]\n"
               "  y, vn, hn = " TRAINING "::Adam(r, t, x, g, v, h) {alpha=0.5, beta=0.75, epsilon=0, "
               "norm_coefficient_post=0.5}\n"
               "  output y, vn, hn\n}\n",
               6, (PlTensor *[]) { r, t, x, gr, v, h }, 3,
               (const double *[]) { PL_VALS (0.95, 0.525), PL_VALS (1, -1), PL_VALS (1, 4) });
}

/* Momentum (alpha 0.5, beta 0.5, R 0.1) of X [1], G [2], V [1] at T and
 * the mode, with a second tensor X2 [3, 4], G2 [0, 10], V2 [0, 0]. */
static void
momentum (const char *mode, int64_t step, const double *x1, const double *v1, const double *x2, const double *v2)
{
  g_autoptr (PlTensor) r = pl_tensor_new_scalar (PL_DTYPE_F32, 0.1);
  g_autoptr (PlTensor) t = pl_tensor_new_scalar (PL_DTYPE_I64, (double) step);
  g_autoptr (PlTensor) x = vec (1, PL_VALS (1)), gr = vec (1, PL_VALS (2)), v = vec (1, PL_VALS (1));
  g_autoptr (PlTensor) xb = vec (2, PL_VALS (3, 4)), gb = vec (2, PL_VALS (0, 10)), vb = vec (2, PL_VALS (0, 0));
  g_autofree char *text = g_strdup_printf (
    "graph m {\n  input r: f32[]\n  input t: i64[]\n  input x: f32[1]\n  input xb: f32[2]\n"
    "  input g: f32[1]\n  input gb: f32[2]\n  input v: f32[1]\n  input vb: f32[2]\n"
    "  y, yb, vn, vnb = " TRAINING "::Momentum(r, t, x, xb, g, gb, v, vb) "
    "{alpha=0.5, beta=0.5, norm_coefficient=0, mode=\"%s\"}\n"
    "  output y, yb, vn, vnb\n}\n", mode);
  assert_step (text, 8, (PlTensor *[]) { r, t, x, xb, gr, gb, v, vb }, 4, (const double *[]) { x1, x2, v1, v2 });
}

static void
test_momentum (void)
{
  /* T = 1: V_new = 0.5 * V + 0.5 * G = 1.5, X_new = 1 - 0.1 * 1.5 = 0.85;
   * the second tensor: V_new = [0, 5], X_new = [3, 4 - 0.5] */
  momentum ("standard", 1, PL_VALS (0.85), PL_VALS (1.5), PL_VALS (3, 3.5), PL_VALS (0, 5));
  /* T = 0: the gradient enters whole: V_new = 0.5 + 2 = 2.5, X_new = 0.75;
   * V2_new = [0, 10], X2_new = [3, 3] */
  momentum ("standard", 0, PL_VALS (0.75), PL_VALS (2.5), PL_VALS (3, 3), PL_VALS (0, 10));
  /* nesterov at T = 0: X_new = X - R * (G + alpha * V_new) = 1 - 0.1 * (2 + 1.25) = 0.675;
   * X2_new = [3, 4 - 0.1 * (10 + 5)] = [3, 2.5] */
  momentum ("nesterov", 0, PL_VALS (0.675), PL_VALS (2.5), PL_VALS (3, 2.5), PL_VALS (0, 10));
}

/* The ops resolve only in their domain; the text format and ONNX keep it. */
static void
test_domain (void)
{
  g_assert_cmpint (pl_op_from_name ("Adam", TRAINING), ==, PL_OP_Adam);
  g_assert_cmpint (pl_op_from_name ("Momentum", TRAINING), ==, PL_OP_Momentum);
  g_assert_cmpint (pl_op_from_name ("Adam", ""), ==, PL_OP_OPAQUE);
  g_assert_cmpint (pl_op_from_name ("Adam", "ai.onnx"), ==, PL_OP_OPAQUE);
  g_assert_cmpint (pl_op_from_name ("Adagrad", "com.example"), ==, PL_OP_OPAQUE);
  g_assert_cmpint (pl_op_from_name ("Add", TRAINING), ==, PL_OP_OPAQUE);
  g_assert_cmpint (pl_op_from_name ("Add", "ai.onnx"), ==, PL_OP_Add);

  g_autoptr (PlGraph) g = pl_test_parse (
    "graph d {\n  input r: f32[]\n  input t: i64[]\n  input x: f32[3]\n  input g: f32[3]\n  input h: f32[3]\n"
    "  y, hn = " TRAINING "::Adagrad(r, t, x, g, h)\n  z = Neg(y)\n  output z, hn\n}\n");
  g_autofree char *text = pl_text_print (g);
  g_assert_nonnull (strstr (text, TRAINING "::Adagrad("));

  g_autoptr (GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("passlab-training-XXXXXX", &error);
  g_assert_no_error (error);
  g_autofree char *path = g_build_filename (dir, "d.onnx", NULL);
  g_assert_true (pl_onnx_save (g, path, &error));
  g_assert_no_error (error);
  g_autoptr (PlGraph) back = pl_onnx_load (path, &error);
  g_assert_no_error (error);
  const PlNode *n = pl_graph_find_node (back, ((PlNode *) g->nodes->pdata[0])->name);
  g_assert_nonnull (n);
  g_assert_cmpint (n->op, ==, PL_OP_Adagrad);
  g_assert_cmpstr (n->domain, ==, TRAINING);
  g_assert_true (pl_graph_infer_shapes (back, &error));
  g_assert_no_error (error);
  g_assert_cmpint (n->outputs[1]->shape.dims[0].size, ==, 3);
  g_unlink (path);
  g_rmdir (dir);
}

/* Asserts that text fails to load (the parser infers shapes) or to
 * infer, with a message containing substring. */
static void
expect_error (const char *text, const char *substring)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraph) g = pl_text_parse (text, -1, "<test>", &error);
  if (g)
    pl_test_expect_infer_error (g, substring);
  else if (!strstr (error->message, substring))
    g_error ("expected an error containing '%s', got '%s'", substring, error->message);
}

static void
test_errors (void)
{
  /* Adam needs four tensors per optimized tensor */
  expect_error (
    "graph e {\n  input r: f32[]\n  input t: i64[]\n  input x: f32[2]\n  input g: f32[2]\n  input v: f32[2]\n"
    "  y, vn, hn = " TRAINING "::Adam(r, t, x, g, v, v, x)\n  output y\n}\n",
    "(Adam): Adam takes R, T and then 4 groups of tensors (X, G, V, H), not 7 inputs");

  expect_error (
    "graph e {\n  input r: f32[]\n  input t: i64[]\n  input x: f32[2]\n  input g: f32[3]\n  input h: f32[2]\n"
    "  y, hn = " TRAINING "::Adagrad(r, t, x, g, h)\n  output y\n}\n",
    "X and G of tensor 0 differ in shape: [2] and [3]");

  expect_error (
    "graph e {\n  input r: f32[]\n  input t: i64[]\n  input x: f32[2]\n  input g: f32[2]\n  input v: f32[2]\n"
    "  y, vn = " TRAINING "::Momentum(r, t, x, g, v) {alpha=0.9, beta=1, norm_coefficient=0}\n  output y\n}\n",
    "'mode' attribute is required");

  expect_error (
    "graph e {\n  input r: f32[]\n  input t: i64[]\n  input x: f32[2]\n  input g: f32[2]\n  input v: f32[2]\n"
    "  y, vn = " TRAINING "::Momentum(r, t, x, g, v) {alpha=0.9, beta=1, norm_coefficient=0, mode=\"heavy\"}\n"
    "  output y\n}\n",
    "mode 'heavy' (not 'standard' or 'nesterov')");

  expect_error (
    "graph e {\n  input r: f32[2]\n  input t: i64[]\n  input x: f32[2]\n  input g: f32[2]\n  input h: f32[2]\n"
    "  y, hn = " TRAINING "::Adagrad(r, t, x, g, h)\n  output y\n}\n",
    "R must be a scalar, not [2]");

  expect_error (
    "graph e {\n  input r: f32[]\n  input t: f32[]\n  input x: f32[2]\n  input g: f32[2]\n  input h: f32[2]\n"
    "  y, hn = " TRAINING "::Adagrad(r, t, x, g, h)\n  output y\n}\n",
    "input 1 has unsupported dtype f32");

  expect_error (
    "graph e {\n  input r: f32[]\n  input t: i64[]\n  input x: f32[2]\n  input g: f32[2]\n  input h: f32[2]\n"
    "  y, hn, z = " TRAINING "::Adagrad(r, t, x, g, h)\n  output y\n}\n",
    "Adagrad of 1 optimized tensors gives 2 outputs, not 3");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_ops_init ();
  g_test_add_func ("/Passlab/Training/adagrad", test_adagrad);
  g_test_add_func ("/Passlab/Training/adam", test_adam);
  g_test_add_func ("/Passlab/Training/momentum", test_momentum);
  g_test_add_func ("/Passlab/Training/domain", test_domain);
  g_test_add_func ("/Passlab/Training/errors", test_errors);
  return g_test_run ();
}
