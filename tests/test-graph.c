/* test-graph.c — the graph IR: building, rewriting, copying, ordering and
 * the verifier's invariants. */
#include "test-util.h"

#include "cost.h"
#include "dot-export.h"
#include "fusion.h"
#include "graph-diff.h"
#include "text-format.h"

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

/* --- layouts (layout.h) ------------------------------------------------------ */

/* x[1,3,4,4] -> [LayoutTransform NHWC] -> Conv 1x1 (its output c in NHWC)
 * -> [LayoutTransform NCHW] -> Flatten s[1,32] -> Relu y; without layouts
 * the same computation with neither transform. */
static PlGraph *
layout_graph (bool with_layouts)
{
  g_autoptr (GError) error = NULL;
  PlGraph *g = pl_graph_new ("layouts");
  PlShape xs = pl_shape_from_dims (4, PL_DIMS (1, 3, 4, 4));
  PlValue *v = pl_graph_add_input (g, "x", PL_DTYPE_F32, &xs, &error);
  g_autoptr (PlTensor) wt = pl_test_random (PL_DTYPE_F32, 4, PL_DIMS (2, 3, 1, 1), 7, -1, 1);
  PlValue *w = pl_graph_add_constant (g, "w", wt, &error);
  if (with_layouts)
    {
      PlNode *t = pl_graph_add_node (g, "LayoutTransform", NULL, NULL, 1, &v, 1, (const char *[]) { "t" }, &error);
      pl_node_set_attr_string (t, "to", "NHWC");
      v = t->outputs[0];
    }
  PlNode *conv = pl_graph_add_node (g, "Conv", NULL, "conv", 2, (PlValue *[]) { v, w }, 1,
                                    (const char *[]) { "c" }, &error);
  v = conv->outputs[0];
  if (with_layouts)
    {
      PlNode *b = pl_graph_add_node (g, "LayoutTransform", NULL, NULL, 1, &v, 1, (const char *[]) { "b" }, &error);
      pl_node_set_attr_string (b, "to", "NCHW");
      v = b->outputs[0];
    }
  PlNode *flat = pl_graph_add_node (g, "Flatten", NULL, NULL, 1, &v, 1, (const char *[]) { "s" }, &error);
  PlNode *relu = pl_graph_add_node (g, "Relu", NULL, NULL, 1, flat->outputs, 1, (const char *[]) { "y" }, &error);
  g_assert_no_error (error);
  pl_graph_add_output (g, relu->outputs[0]);
  g_assert_true (pl_graph_infer_shapes (g, &error));
  g_assert_no_error (error);
  if (with_layouts)
    conv->outputs[0]->layout = PL_LAYOUT_NHWC;
  return g;
}

/* Breaks one layout rule: verification fails naming the value and the rule,
 * and leaves the layouts as they were. */
static void
expect_layout_error (PlGraph *g, const char *name, PlLayout layout, const char *rule)
{
  g_autoptr (GError) error = NULL;
  PlValue *v = pl_graph_find_value (g, name);
  PlLayout saved = v->layout;
  v->layout = layout;
  g_assert_false (pl_graph_verify (g, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_INVALID);
  g_autofree char *quoted = g_strdup_printf ("'%s'", name);
  g_assert_nonnull (strstr (error->message, quoted));
  g_assert_nonnull (strstr (error->message, rule));
  g_assert_cmpint (v->layout, ==, layout);
  v->layout = saved;
  g_assert_true (pl_graph_verify (g, NULL));
}

static void
test_layouts_verify (void)
{
  g_autoptr (PlGraph) g = layout_graph (true);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_verify (g, &error));
  g_assert_no_error (error);
  g_assert_cmpint (pl_graph_find_value (g, "t")->layout, ==, PL_LAYOUT_NHWC);  /* set by inference */
  g_assert_cmpint (pl_graph_find_value (g, "b")->layout, ==, PL_LAYOUT_NCHW);
  g_assert_cmpint (pl_graph_find_value (g, "s")->layout, ==, PL_LAYOUT_NCHW);

  expect_layout_error (g, "s", PL_LAYOUT_NHWC, "rank 2");
  expect_layout_error (g, "x", PL_LAYOUT_NHWC, "graph input");
  expect_layout_error (g, "y", PL_LAYOUT_CHWN, "graph output");
  expect_layout_error (g, "w", PL_LAYOUT_NHWC, "constant");
  expect_layout_error (g, "t", PL_LAYOUT_NCHW, "LayoutTransform to NHWC");
  expect_layout_error (g, "b", PL_LAYOUT_CHWN, "LayoutTransform to NCHW");
  g_assert_cmpstr (pl_layout_name (pl_graph_find_value (g, "c")->layout), ==, "NHWC");

  /* A copy keeps every layout. */
  g_autoptr (PlGraph) c = pl_graph_copy (g);
  g_assert_cmpint (pl_graph_find_value (c, "c")->layout, ==, PL_LAYOUT_NHWC);
  g_assert_cmpint (pl_graph_find_value (c, "t")->layout, ==, PL_LAYOUT_NHWC);
}

/* The interpreter ignores layouts: LayoutTransforms are identities. */
static void
test_layouts_interp (void)
{
  g_autoptr (PlGraph) with = layout_graph (true);
  g_autoptr (PlGraph) without = layout_graph (false);
  g_autoptr (PlTensor) x = pl_test_random (PL_DTYPE_F32, 4, PL_DIMS (1, 3, 4, 4), 3, -2, 2);
  g_autoptr (GError) error = NULL;
  PlTensor **a = pl_interp_run (with, &x, NULL, &error);
  g_assert_no_error (error);
  PlTensor **b = pl_interp_run (without, &x, NULL, &error);
  g_assert_no_error (error);
  pl_test_assert_close (a[0], b[0], 0, 0);
  pl_interp_free_outputs (a, 1);
  pl_interp_free_outputs (b, 1);
}

/* Cost, diff and DOT see layouts. */
static void
test_layouts_surfaces (void)
{
  g_autoptr (PlGraph) g = layout_graph (true);
  PlNode *t = pl_graph_find_value (g, "t")->producer, *conv = pl_graph_find_node (g, "conv");

  /* A LayoutTransform moves its tensor twice (read + write), computes nothing. */
  bool assumed = false;
  g_assert_cmpint (pl_node_flops (t, 1, &assumed), ==, 0);
  g_autoptr (PlGraph) only = pl_graph_new ("only");
  PlShape xs = pl_shape_from_dims (4, PL_DIMS (1, 3, 4, 4));
  PlValue *x = pl_graph_add_input (only, "x", PL_DTYPE_F32, &xs, NULL);
  PlNode *to = pl_graph_add_node (only, "LayoutTransform", NULL, NULL, 1, &x, 1, NULL, NULL);
  pl_node_set_attr_string (to, "to", "CHWN");
  PlNode *back = pl_graph_add_node (only, "LayoutTransform", NULL, NULL, 1, to->outputs, 1, NULL, NULL);
  pl_node_set_attr_string (back, "to", "NCHW");
  pl_graph_add_output (only, back->outputs[0]);
  g_assert_true (pl_graph_infer_shapes (only, NULL));
  g_assert_true (pl_graph_verify (only, NULL));
  PlGraphStats st;
  pl_graph_stats (only, 1, &st);
  g_assert_cmpint (st.flops, ==, 0);
  g_assert_cmpint (st.kernels, ==, 2);
  g_assert_cmpint (st.bytes_moved, ==, 2 * 2 * 48 * 4);

  /* A value whose layout changed marks its producer changed. */
  g_autoptr (PlGraph) after = pl_graph_copy (g);
  pl_graph_find_value (after, "c")->layout = PL_LAYOUT_CHWN;
  g_autoptr (PlGraphDiff) d = pl_graph_diff (g, after);
  bool conv_changed = false;
  for (guint i = 0; i < d->changed->len; i++)
    conv_changed |= g_array_index (d->changed, guint32, i) == conv->id;
  g_assert_true (conv_changed);
  g_assert_cmpuint (d->added->len + d->removed->len, ==, 0);
  g_autoptr (PlGraphDiff) same = pl_graph_diff (g, g);
  g_assert_true (pl_graph_diff_empty (same));

  /* DOT: the transform says where to, an edge carrying NHWC says so. */
  g_autofree char *dot = pl_dot_export (g);
  g_assert_nonnull (strstr (dot, "LayoutTransform\\nto NHWC\""));
  g_assert_nonnull (strstr (dot, "[label=\"f32[1, 2, 4, 4] @NHWC\"]"));
  g_assert_nonnull (strstr (dot, "[label=\"f32[1, 3, 4, 4]\"]"));   /* x -> t: default, no mark */
}

/* Fusing keeps the layouts inside the body; inlining puts them back. */
/* Huge symbolic sizes (--sym-size) give the largest count, not a wrapped
 * one: FLOPs of a MatMul and a Conv stop at G_MAXINT64. */
static void
test_stats_saturate (void)
{
  const char *text = "graph sym opset 17 {\n"
                     "  input a: f32[N, M]\n"
                     "  input b: f32[M, K]\n"
                     "  input x: f32[N, C, H, W]\n"
                     "  input w: f32[C, C, 3, 3]\n"
                     "  c = MatMul(a, b)\n"
                     "  y = Conv(x, w) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}\n"
                     "  output c\n"
                     "  output y\n"
                     "}\n";
  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraph) g = pl_text_parse (text, -1, "sym.graph", &error);
  g_assert_no_error (error);
  const int64_t sizes[] = { 1 << 22, (int64_t) 1 << 40, G_MAXINT64 };
  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    {
      bool assumed = false;
      g_assert_cmpint (pl_node_flops (pl_graph_find_node (g, "c"), sizes[i], &assumed), ==, G_MAXINT64);
      g_assert_cmpint (pl_node_flops (pl_graph_find_node (g, "y"), sizes[i], &assumed), ==, G_MAXINT64);
      g_assert_true (assumed);
      PlGraphStats st;
      pl_graph_stats (g, sizes[i], &st);
      g_assert_cmpint (st.flops, ==, G_MAXINT64);
      g_assert_cmpint (st.bytes_moved, >, 0);
    }
  /* Small sizes still count exactly: 2 * (N*K) * M = 2 * 4 * 2. */
  bool assumed = false;
  g_assert_cmpint (pl_node_flops (pl_graph_find_node (g, "c"), 2, &assumed), ==, 16);
  /* and bytes: a, b and c, 2x2 f32 each, read or written once */
  g_assert_cmpint (pl_node_bytes (pl_graph_find_node (g, "c"), 2, NULL), ==, 3 * 4 * 4);
}

static void
test_layouts_fusion (void)
{
  g_autoptr (PlGraph) g = layout_graph (true);
  g_autoptr (GError) error = NULL;
  PlNode *conv = pl_graph_find_node (g, "conv");
  PlNode *f = pl_fusion_create (g, &conv, 1, PL_FUSION_KIND_LIBRARY, &error);
  g_assert_no_error (error);
  g_assert_true (pl_graph_verify (g, &error));
  g_assert_no_error (error);
  PlValue *bin = pl_graph_find_value (f->body, "t"), *bout = f->body->outputs->pdata[0];
  g_assert_cmpint (bin->layout, ==, PL_LAYOUT_NHWC);
  g_assert_cmpint (bout->layout, ==, PL_LAYOUT_NHWC);
  g_assert_cmpint (f->outputs[0]->layout, ==, PL_LAYOUT_NHWC);
  g_assert_cmpint (pl_graph_find_node (f->body, "conv")->inputs[0]->layout, ==, PL_LAYOUT_NHWC);

  /* A body that disagrees with its node is caught. */
  bin->layout = PL_LAYOUT_NCHW;
  g_assert_false (pl_graph_verify (g, &error));
  g_assert_nonnull (strstr (error->message, "layout"));
  g_clear_error (&error);
  bin->layout = PL_LAYOUT_NHWC;

  g_assert_true (pl_fusion_inline (g, f, &error));
  g_assert_no_error (error);
  pl_graph_remove_node (g, f);
  g_assert_true (pl_graph_verify (g, &error));
  g_assert_no_error (error);
  g_assert_cmpint (pl_graph_find_node (g, "conv")->outputs[0]->layout, ==, PL_LAYOUT_NHWC);
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
  g_test_add_func ("/Passlab/Graph/layouts-verify", test_layouts_verify);
  g_test_add_func ("/Passlab/Graph/layouts-interp", test_layouts_interp);
  g_test_add_func ("/Passlab/Graph/layouts-surfaces", test_layouts_surfaces);
  g_test_add_func ("/Passlab/Graph/layouts-fusion", test_layouts_fusion);
  g_test_add_func ("/Passlab/Graph/stats-saturate", test_stats_saturate);
  return g_test_run ();
}
