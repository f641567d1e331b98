/* test-interp.c — the reference interpreter on whole graphs: results,
 * fusion bodies, the per-node hook, random inputs and errors. */
#include "test-util.h"

#include <string.h>

/* y = Relu(x * w + b) built from primitives; returns the graph. */
static PlGraph *
mlp_graph (void)
{
  g_autoptr (GError) error = NULL;
  PlGraph *g = pl_graph_new ("mlp");
  PlShape xs = { .rank = 2, .dims = { pl_dim_symbol ("N"), pl_dim_static (3) } };
  PlValue *x = pl_graph_add_input (g, "x", PL_DTYPE_F32, &xs, &error);
  g_autoptr (PlTensor) wt = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (3, 2), PL_VALS (1, -1, 2, 0, 0, 1));
  g_autoptr (PlTensor) bt = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (2), PL_VALS (0.5, -4));
  PlValue *w = pl_graph_add_constant (g, "w", wt, &error);
  PlValue *b = pl_graph_add_constant (g, "b", bt, &error);
  PlNode *mm = pl_graph_add_node (g, "MatMul", NULL, NULL, 2, (PlValue *[]) { x, w }, 1, (const char *[]) { "xw" }, &error);
  PlNode *add = pl_graph_add_node (g, "Add", NULL, NULL, 2, (PlValue *[]) { mm->outputs[0], b }, 1, (const char *[]) { "h" }, &error);
  PlNode *relu = pl_graph_add_node (g, "Relu", NULL, NULL, 1, add->outputs, 1, (const char *[]) { "y" }, &error);
  g_assert_no_error (error);
  pl_graph_add_output (g, relu->outputs[0]);
  g_assert_true (pl_graph_infer_shapes (g, &error));
  g_assert_no_error (error);
  return g;
}

static void
test_mlp (void)
{
  g_autoptr (PlGraph) g = mlp_graph ();
  g_autoptr (GError) error = NULL;
  PlValue *y = pl_graph_find_value (g, "y");
  g_autofree char *ys = pl_shape_to_string (&y->shape);
  g_assert_cmpstr (ys, ==, "[N, 2]");   /* the symbolic batch dim flows through */

  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 3), PL_VALS (1, 2, 3, -1, 0, 5));
  PlTensor **outs = pl_interp_run (g, &x, NULL, &error);
  g_assert_no_error (error);
  /* row 0: [1*1+2*2+3*0, -1+0+3] + [0.5, -4] = [5.5, -2] -> relu [5.5, 0]
   * row 1: [-1+0+0, 1+0+5] + b = [-0.5, 2] -> [0, 2] */
  pl_test_assert_values (outs[0], PL_VALS (5.5, 0, 0, 2));
  pl_interp_free_outputs (outs, 1);
}

static void
count_node (const PlNode *node, PlTensor *const *outputs, gpointer data)
{
  GString *trace = data;
  g_string_append_printf (trace, "%s;", node->op_type);
  g_assert_nonnull (outputs[0]);
}

static void
test_hook_sees_schedule (void)
{
  g_autoptr (PlGraph) g = mlp_graph ();
  g_autoptr (GError) error = NULL;
  g_autoptr (GString) trace = g_string_new (NULL);
  PlInterpOptions opts = { .hook = count_node, .hook_data = trace };
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (1, 3), NULL);
  PlTensor **outs = pl_interp_run (g, &x, &opts, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (trace->str, ==, "MatMul;Add;Relu;");
  pl_interp_free_outputs (outs, 1);
}

/* Moves Add+Relu of the MLP into a Fusion node and checks equal results. */
static void
test_fusion_body_runs (void)
{
  g_autoptr (PlGraph) g = mlp_graph ();
  g_autoptr (GError) error = NULL;

  PlGraph *body = pl_graph_new ("fused");
  PlValue *xw = pl_graph_find_value (g, "xw"), *b = pl_graph_find_value (g, "b");
  PlValue *p0 = pl_graph_add_input (body, "p0", xw->dtype, &xw->shape, &error);
  PlValue *p1 = pl_graph_add_input (body, "p1", b->dtype, &b->shape, &error);
  PlNode *add = pl_graph_add_node (body, "Add", NULL, NULL, 2, (PlValue *[]) { p0, p1 }, 1, NULL, &error);
  PlNode *relu = pl_graph_add_node (body, "Relu", NULL, NULL, 1, add->outputs, 1, NULL, &error);
  pl_graph_add_output (body, relu->outputs[0]);

  PlNode *fusion = pl_graph_add_node (g, "Fusion", NULL, NULL, 2, (PlValue *[]) { xw, b }, 1, NULL, &error);
  pl_node_set_body (fusion, body);
  pl_node_set_attr_string (fusion, "kind", "loop");
  g_assert_true (pl_node_infer (fusion, &error));
  g_assert_no_error (error);
  PlValue *y = pl_graph_find_value (g, "y");
  pl_value_replace_uses (y, fusion->outputs[0]);
  PlNode *old_relu = y->producer, *old_add = pl_graph_find_value (g, "h")->producer;
  pl_graph_remove_node (g, old_relu);
  pl_graph_remove_node (g, old_add);
  g_assert_true (pl_graph_verify (g, &error));
  g_assert_no_error (error);

  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 3), PL_VALS (1, 2, 3, -1, 0, 5));
  PlTensor **outs = pl_interp_run (g, &x, NULL, &error);
  g_assert_no_error (error);
  pl_test_assert_values (outs[0], PL_VALS (5.5, 0, 0, 2));
  pl_interp_free_outputs (outs, 1);

  /* A copy carries the body. */
  g_autoptr (PlGraph) c = pl_graph_copy (g);
  g_assert_true (pl_graph_verify (c, &error));
  g_assert_nonnull (pl_graph_find_node (c, fusion->name)->body);
}

static void
test_random_inputs (void)
{
  g_autoptr (PlGraph) g = mlp_graph ();
  g_autoptr (GError) error = NULL;
  PlTensor **a = pl_random_inputs (g, 7, 5, &error);
  PlTensor **b = pl_random_inputs (g, 7, 5, &error);
  g_assert_no_error (error);
  g_assert_cmpint (a[0]->dims[0], ==, 5);   /* N took sym_size */
  g_assert_cmpint (a[0]->dims[1], ==, 3);
  pl_test_assert_close (a[0], b[0], 0, 0);   /* same seed, same data */
  for (int64_t i = 0; i < a[0]->numel; i++)
    {
      double v = pl_tensor_get_f64 (a[0], i);
      g_assert_cmpfloat (v, >=, -1.0);
      g_assert_cmpfloat (v, <, 1.0);
    }
  pl_interp_free_outputs (a, 1);
  pl_interp_free_outputs (b, 1);
}

static void
test_errors_name_the_node (void)
{
  g_autoptr (PlGraph) g = pl_graph_new ("opaque");
  g_autoptr (GError) error = NULL;
  PlShape s = pl_shape_from_dims (1, PL_DIMS (2));
  PlValue *x = pl_graph_add_input (g, "x", PL_DTYPE_F32, &s, &error);
  PlNode *n = pl_graph_add_node (g, "FrobnicateV2", "com.example", "frob", 1, &x, 1, NULL, &error);
  g_assert_cmpint (n->op, ==, PL_OP_OPAQUE);
  pl_graph_add_output (g, n->outputs[0]);
  g_assert_true (pl_graph_infer_shapes (g, &error));   /* opaque ops load fine */
  g_autoptr (PlTensor) xt = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (2), NULL);
  g_assert_null (pl_interp_run (g, &xt, NULL, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, "node 'frob'"));
  g_assert_nonnull (strstr (error->message, "com.example::FrobnicateV2"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_ops_init ();
  g_test_add_func ("/Passlab/Interp/mlp", test_mlp);
  g_test_add_func ("/Passlab/Interp/hook-sees-schedule", test_hook_sees_schedule);
  g_test_add_func ("/Passlab/Interp/fusion-body-runs", test_fusion_body_runs);
  g_test_add_func ("/Passlab/Interp/random-inputs", test_random_inputs);
  g_test_add_func ("/Passlab/Interp/errors-name-the-node", test_errors_name_the_node);
  return g_test_run ();
}
