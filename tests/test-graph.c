/* test-graph.c — the graph IR: building, rewriting, copying, ordering and
 * the verifier's invariants. */
#include "test-util.h"

#include <string.h>

/* x -> Relu -> r -> Add(r, c) -> y, with c a constant. */
static PlGraph *
small_graph (void)
{
  g_autoptr (GError) error = NULL;
  PlGraph *g = pl_graph_new ("small");
  PlShape s = pl_shape_from_dims (2, PL_DIMS (2, 3));
  PlValue *x = pl_graph_add_input (g, "x", PL_DTYPE_F32, &s, &error);
  g_autoptr (PlTensor) ct = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (3), PL_VALS (1, 2, 3));
  PlValue *c = pl_graph_add_constant (g, "c", ct, &error);
  PlNode *relu = pl_graph_add_node (g, "Relu", NULL, NULL, 1, &x, 1, (const char *[]) { "r" }, &error);
  g_assert_no_error (error);
  PlNode *add = pl_graph_add_node (g, "Add", NULL, "add", 2, (PlValue *[]) { relu->outputs[0], c },
                                   1, (const char *[]) { "y" }, &error);
  g_assert_no_error (error);
  pl_graph_add_output (g, add->outputs[0]);
  g_assert_true (pl_graph_infer_shapes (g, &error));
  g_assert_no_error (error);
  return g;
}

static void
test_build_and_uses (void)
{
  g_autoptr (PlGraph) g = small_graph ();
  g_autoptr (GError) error = NULL;
  PlValue *r = pl_graph_find_value (g, "r");
  PlNode *add = pl_graph_find_node (g, "add");
  g_assert_nonnull (r);
  g_assert_cmpint (r->n_uses, ==, 1);
  g_assert_true (r->uses[0].node == add);
  g_assert_cmpint (r->uses[0].index, ==, 0);
  g_assert_cmpstr (r->producer->op_type, ==, "Relu");
  g_assert_cmpint (r->producer->op, ==, PL_OP_Relu);
  g_assert_cmpint (pl_graph_param_bytes (g), ==, 12);
  g_assert_true (pl_graph_verify (g, &error));
  g_assert_no_error (error);

  /* Node ids are stable and distinct; names are unique. */
  PlNode *relu = r->producer;
  g_assert_cmpuint (relu->id, !=, add->id);
  g_assert_true (pl_graph_node_by_id (g, add->id) == add);
  g_assert_null (pl_graph_add_node (g, "Relu", NULL, "add", 1, &r, 1, NULL, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_INVALID);
  g_clear_error (&error);
  g_assert_null (pl_graph_add_node (g, "Relu", NULL, NULL, 1, &r, 1, (const char *[]) { "x" }, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_INVALID);
  g_assert_true (pl_graph_verify (g, NULL));   /* failed adds left no trace */
  g_autofree char *u = pl_graph_unique_name (g, "r");
  g_assert_cmpstr (u, ==, "r_1");
}

static void
test_rewrite (void)
{
  g_autoptr (PlGraph) g = small_graph ();
  g_autoptr (GError) error = NULL;
  PlValue *x = pl_graph_find_value (g, "x");
  PlValue *r = pl_graph_find_value (g, "r");
  PlNode *relu = r->producer;

  /* Bypass the Relu, then delete it: uses move, the node and its value go. */
  pl_value_replace_uses (r, x);
  g_assert_cmpint (r->n_uses, ==, 0);
  g_assert_cmpint (x->n_uses, ==, 2);   /* the Relu itself and the Add */
  guint32 add_id = pl_graph_find_node (g, "add")->id;
  pl_graph_remove_node (g, relu);
  g_assert_null (pl_graph_find_value (g, "r"));
  g_assert_cmpint (x->n_uses, ==, 1);
  g_assert_cmpuint (g->nodes->len, ==, 1);
  g_assert_cmpuint (pl_graph_find_node (g, "add")->id, ==, add_id);
  g_assert_true (pl_graph_verify (g, &error));
  g_assert_no_error (error);

  /* Replacing a graph output's uses moves the output too. */
  PlNode *add = pl_graph_find_node (g, "add");
  PlNode *neg = pl_graph_add_node (g, "Neg", NULL, NULL, 1, &add->outputs[0], 1, NULL, &error);
  g_assert_true (pl_node_infer (neg, &error));
  PlValue *y = add->outputs[0];
  pl_value_replace_uses (y, neg->outputs[0]);
  /* The Neg read y and now reads itself: undo that one use. */
  pl_node_set_input (neg, 0, y);
  g_assert_true (g->outputs->pdata[0] == neg->outputs[0]);
  g_assert_true (pl_graph_verify (g, &error));
  g_assert_no_error (error);
}

static void
test_copy_shares_constants (void)
{
  g_autoptr (PlGraph) g = small_graph ();
  g_autoptr (PlGraph) c = pl_graph_copy (g);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_verify (c, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (c->nodes->len, ==, g->nodes->len);
  for (guint i = 0; i < g->nodes->len; i++)
    {
      PlNode *a = g->nodes->pdata[i], *b = pl_graph_find_node (c, a->name);
      g_assert_cmpuint (a->id, ==, b->id);
      g_assert_true (b->graph == c);
    }
  PlValue *ca = pl_graph_find_value (g, "c"), *cb = pl_graph_find_value (c, "c");
  g_assert_true (ca->constant == cb->constant);           /* shared data */
  g_assert_cmpint (ca->constant->ref_count, ==, 2);
  g_assert_cmpuint (ca->id, ==, cb->id);
  /* New nodes in the copy get ids the original never used. */
  PlValue *y = pl_graph_find_value (c, "y");
  PlNode *n = pl_graph_add_node (c, "Relu", NULL, NULL, 1, &y, 1, NULL, &error);
  g_assert_null (pl_graph_node_by_id (g, n->id));
}

static void
test_verifier_catches_corruption (void)
{
  g_autoptr (PlGraph) g = small_graph ();
  g_autoptr (GError) error = NULL;
  PlValue *r = pl_graph_find_value (g, "r");

  r->n_uses = 0;                               /* a use the value forgot */
  g_assert_false (pl_graph_verify (g, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "'r'"));
  r->n_uses = 1;
  g_clear_error (&error);

  PlShape wrong = pl_shape_from_dims (1, PL_DIMS (7));
  PlShape saved = r->shape;
  r->shape = wrong;                            /* a type that does not re-infer */
  g_assert_false (pl_graph_verify (g, &error));
  g_assert_nonnull (strstr (error->message, "infers"));
  r->shape = saved;
  g_clear_error (&error);
  g_assert_true (pl_graph_verify (g, &error));
}

static void
test_cycles_and_control_edges (void)
{
  g_autoptr (PlGraph) g = pl_graph_new ("ctrl");
  g_autoptr (GError) error = NULL;
  PlShape s = pl_shape_from_dims (1, PL_DIMS (4));
  PlValue *x = pl_graph_add_input (g, "x", PL_DTYPE_F32, &s, &error);
  PlNode *a = pl_graph_add_node (g, "Relu", NULL, "a", 1, &x, 1, NULL, &error);
  PlNode *b = pl_graph_add_node (g, "Neg", NULL, "b", 1, &x, 1, NULL, &error);
  pl_graph_add_output (g, a->outputs[0]);
  pl_graph_add_output (g, b->outputs[0]);

  int n;
  g_autofree PlNode **o1 = pl_graph_topo_order (g, &n, &error);
  g_assert_true (o1[0] == a && o1[1] == b);   /* ties keep insertion order */

  pl_node_add_control (a, b, PL_CONTROL_SERIALIZE);   /* a waits for b */
  g_autofree PlNode **o2 = pl_graph_topo_order (g, &n, &error);
  g_assert_true (o2[0] == b && o2[1] == a);

  pl_node_add_control (b, a, PL_CONTROL_PREFETCH);    /* and b for a: a cycle */
  g_assert_null (pl_graph_topo_order (g, &n, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_INVALID);
  g_assert_nonnull (strstr (error->message, "cycle"));
  g_clear_error (&error);
  g_assert_false (pl_graph_verify (g, &error));
  g_clear_error (&error);

  /* Removing a node drops the control edges that pointed at it. */
  g_ptr_array_remove_index (g->outputs, 1);
  pl_graph_remove_node (g, b);
  g_assert_cmpint (a->n_controls, ==, 0);
  g_assert_cmpuint (g->n_control_edges, ==, 0);
  g_assert_true (pl_graph_infer_shapes (g, &error));
  g_assert_true (pl_graph_verify (g, &error));
  g_assert_no_error (error);
}

static void
test_attributes (void)
{
  g_autoptr (PlGraph) g = small_graph ();
  PlNode *add = pl_graph_find_node (g, "add");
  pl_node_set_attr_int (add, "axis", -1);
  pl_node_set_attr_float (add, "alpha", 0.25f);
  pl_node_set_attr_string (add, "mode", "edge");
  pl_node_set_attr_ints (add, "perm", PL_DIMS (2, 0, 1), 3);
  pl_node_set_attr_int (add, "axis", 2);   /* replaces */
  g_assert_cmpint (add->n_attrs, ==, 4);
  g_assert_cmpint (pl_node_attr_int (add, "axis", 0), ==, 2);
  g_assert_cmpfloat (pl_node_attr_float (add, "alpha", 0), ==, 0.25f);
  g_assert_cmpstr (pl_node_attr_string (add, "mode", NULL), ==, "edge");
  g_assert_cmpstr (pl_node_attr_string (add, "missing", "dflt"), ==, "dflt");
  const int64_t *perm;
  int n;
  g_assert_true (pl_node_attr_ints (add, "perm", &perm, &n));
  g_assert_cmpint (n, ==, 3);
  g_assert_cmpint (perm[0], ==, 2);
  pl_node_remove_attr (add, "mode");
  g_assert_null (pl_node_attr (add, "mode"));
  g_assert_cmpint (add->n_attrs, ==, 3);

  g_autoptr (PlGraph) c = pl_graph_copy (g);
  PlNode *cadd = pl_graph_find_node (c, "add");
  g_assert_true (pl_node_attr_ints (cadd, "perm", &perm, &n));
  g_assert_cmpint (perm[2], ==, 1);
}

static void
test_run_small_graph (void)
{
  g_autoptr (PlGraph) g = small_graph ();
  g_autoptr (GError) error = NULL;
  g_autoptr (PlTensor) x = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (2, 3), PL_VALS (-1, 0, 1, 2, -3, 4));
  PlTensor **outs = pl_interp_run (g, &x, NULL, &error);
  g_assert_no_error (error);
  pl_test_assert_values (outs[0], PL_VALS (1, 2, 4, 3, 2, 7));
  pl_interp_free_outputs (outs, 1);

  /* A wrongly shaped input is refused with its name. */
  g_autoptr (PlTensor) bad = pl_test_tensor (PL_DTYPE_F32, 2, PL_DIMS (3, 2), NULL);
  g_assert_null (pl_interp_run (g, &bad, NULL, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_EXEC);
  g_assert_nonnull (strstr (error->message, "'x'"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_ops_init ();
  g_test_add_func ("/Passlab/Graph/build-and-uses", test_build_and_uses);
  g_test_add_func ("/Passlab/Graph/rewrite", test_rewrite);
  g_test_add_func ("/Passlab/Graph/copy-shares-constants", test_copy_shares_constants);
  g_test_add_func ("/Passlab/Graph/verifier-catches-corruption", test_verifier_catches_corruption);
  g_test_add_func ("/Passlab/Graph/cycles-and-control-edges", test_cycles_and_control_edges);
  g_test_add_func ("/Passlab/Graph/attributes", test_attributes);
  g_test_add_func ("/Passlab/Graph/run-small-graph", test_run_small_graph);
  return g_test_run ();
}
