/* test-ui-layout.c — the Graphviz layout of the canvas and the scene it
 * draws, headless: keys and geometry of a small graph, union layouts of two
 * versions, fusion clusters expanded and collapsed, simplified and banded
 * layouts of big graphs (no overlaps, edges attached to their boxes),
 * cancellation; diff states, hover, hit testing and PNG/SVG files of a
 * scene. */
#include "test-util.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "fusion.h"
#include "graph-diff.h"
#include "pl-graph-draw.h"
#include "pl-graph-layout.h"
#include "random-graph.h"

/* x -> Relu(r) -> Add(r, c) -> y -> output; c a constant. */
static PlGraph *
small_graph (void)
{
  g_autoptr (GError) error = NULL;
  PlGraph *g = pl_graph_new ("small");
  PlShape s = pl_shape_from_dims (2, PL_DIMS (2, 3));
  PlValue *x = pl_graph_add_input (g, "x", PL_DTYPE_F32, &s, &error);
  g_autoptr (PlTensor) ct = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (3), PL_VALS (1, 2, 3));
  PlValue *c = pl_graph_add_constant (g, "c", ct, &error);
  PlNode *relu = pl_graph_add_node (g, "Relu", NULL, "relu", 1, &x, 1, (const char *[]) { "r" }, &error);
  g_assert_no_error (error);
  PlNode *add = pl_graph_add_node (g, "Add", NULL, "add", 2, (PlValue *[]) { relu->outputs[0], c },
                                   1, (const char *[]) { "y" }, &error);
  g_assert_no_error (error);
  pl_graph_add_output (g, add->outputs[0]);
  g_assert_true (pl_graph_infer_shapes (g, &error));
  g_assert_no_error (error);
  return g;
}

static char *
node_key (const PlGraph *g, const char *name)
{
  PlNode *n = pl_graph_find_node (g, name);
  g_assert_nonnull (n);
  return g_strdup_printf ("n%u", n->id);
}

static const PlLayoutNode *
find (const PlGraphLayout *l, const char *key)
{
  int i = pl_graph_layout_find (l, key);
  g_assert_cmpint (i, >=, 0);
  return &l->nodes[i];
}

static bool
near_box (const PlLayoutNode *n, double x, double y, double tol)
{
  return fabs (x - n->x) <= n->width / 2 + tol && fabs (y - n->y) <= n->height / 2 + tol;
}

/* Every box inside the drawing, every edge a proper bezier that leaves its
 * source's box and ends (arrow tip) at its target's; no two boxes overlap. */
static void
assert_sane (const PlGraphLayout *l, bool check_overlaps)
{
  for (int i = 0; i < l->n_nodes; i++)
    {
      const PlLayoutNode *n = &l->nodes[i];
      g_assert_cmpfloat (n->width, >, 10);
      g_assert_cmpfloat (n->height, >, 10);
      g_assert_cmpfloat (n->x - n->width / 2, >=, -0.5);
      g_assert_cmpfloat (n->y - n->height / 2, >=, -0.5);
      g_assert_cmpfloat (n->x + n->width / 2, <=, l->width + 0.5);
      g_assert_cmpfloat (n->y + n->height / 2, <=, l->height + 0.5);
      g_assert_cmpint (pl_graph_layout_find (l, n->key), ==, i);
    }
  for (int i = 0; i < l->n_edges; i++)
    {
      const PlLayoutEdge *e = &l->edges[i];
      g_assert_cmpint (e->from, >=, 0);
      g_assert_cmpint (e->to, <, l->n_nodes);
      g_assert_cmpint (e->n_points, >=, 4);
      g_assert_cmpint ((e->n_points - 1) % 3, ==, 0);
      const PlLayoutNode *a = &l->nodes[e->from], *b = &l->nodes[e->to];
      g_assert_true (near_box (a, e->points[0], e->points[1], 4));
      double tx = e->has_arrow ? e->arrow_x : e->points[2 * e->n_points - 2];
      double ty = e->has_arrow ? e->arrow_y : e->points[2 * e->n_points - 1];
      g_assert_true (near_box (b, tx, ty, 4));
    }
  if (!check_overlaps)
    return;
  for (int i = 0; i < l->n_nodes; i++)
    for (int j = i + 1; j < l->n_nodes; j++)
      {
        const PlLayoutNode *a = &l->nodes[i], *b = &l->nodes[j];
        bool overlap = fabs (a->x - b->x) < (a->width + b->width) / 2 - 0.5
                       && fabs (a->y - b->y) < (a->height + b->height) / 2 - 0.5;
        if (overlap)
          g_error ("boxes %s and %s overlap", a->key, b->key);
      }
}

static void
test_small (void)
{
  g_autoptr (PlGraph) g = small_graph ();
  g_autoptr (GError) error = NULL;
  const PlGraph *gs[] = { g };
  g_autoptr (PlGraphLayout) l = pl_graph_layout_compute (gs, 1, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (l);
  /* x, c, relu, add, the output; x->relu, relu->add, c->add, add->o0. */
  g_assert_cmpint (l->n_nodes, ==, 5);
  g_assert_cmpint (l->n_edges, ==, 4);
  g_assert_cmpint (l->n_clusters, ==, 0);
  g_assert_cmpint (l->n_bands, ==, 1);
  g_assert_false (l->simplified);
  assert_sane (l, true);

  g_autofree char *relu_key = node_key (g, "relu");
  g_autofree char *add_key = node_key (g, "add");
  g_autofree char *x_key = g_strdup_printf ("i%u", pl_graph_find_value (g, "x")->id);
  g_autofree char *c_key = g_strdup_printf ("c%u", pl_graph_find_value (g, "c")->id);
  const PlLayoutNode *x = find (l, x_key), *c = find (l, c_key), *relu = find (l, relu_key);
  const PlLayoutNode *add = find (l, add_key), *out = find (l, "o0");
  g_assert_cmpint (x->kind, ==, PL_LAYOUT_NODE_INPUT);
  g_assert_cmpint (c->kind, ==, PL_LAYOUT_NODE_CONSTANT);
  g_assert_cmpint (relu->kind, ==, PL_LAYOUT_NODE_OP);
  g_assert_cmpint (out->kind, ==, PL_LAYOUT_NODE_OUTPUT);
  g_assert_cmpstr (relu->title, ==, "relu");
  g_assert_cmpstr (relu->subtitle, ==, "Relu");
  g_assert_cmpstr (x->subtitle, ==, "f32[2, 3]");
  g_assert_cmpint (relu->category, ==, PL_CAT_ELEMENTWISE);
  /* Top to bottom along the data flow; the constant sits just above add. */
  g_assert_cmpfloat (x->y, <, relu->y);
  g_assert_cmpfloat (relu->y, <, add->y);
  g_assert_cmpfloat (add->y, <, out->y);
  g_assert_cmpfloat (c->y, <, add->y);
  /* Ops are two-line boxes; pills are lower. */
  g_assert_cmpfloat (relu->height, >, x->height);
  /* Edge labels are the carried types. */
  bool labelled = false;
  for (int i = 0; i < l->n_edges; i++)
    if (l->edges[i].from == pl_graph_layout_find (l, c_key))
      {
        g_assert_cmpstr (l->edges[i].label, ==, "f32[3]");
        labelled = true;
      }
  g_assert_true (labelled);
}

static void
test_left_to_right (void)
{
  g_autoptr (PlGraph) g = small_graph ();
  g_autoptr (GError) error = NULL;
  PlLayoutOptions o;
  pl_layout_options_init (&o);
  o.left_to_right = true;
  const PlGraph *gs[] = { g };
  g_autoptr (PlGraphLayout) l = pl_graph_layout_compute (gs, 1, &o, NULL, &error);
  g_assert_no_error (error);
  g_autofree char *relu_key = node_key (g, "relu");
  g_autofree char *add_key = node_key (g, "add");
  g_assert_cmpfloat (find (l, relu_key)->x, <, find (l, add_key)->x);
  g_assert_cmpfloat (find (l, add_key)->x, <, find (l, "o0")->x);
  assert_sane (l, true);
}

/* Version b: relu's output goes through a new Neg before add; union layout
 * holds the keys of both versions. */
static void
test_union (void)
{
  g_autoptr (PlGraph) a = small_graph ();
  g_autoptr (PlGraph) b = pl_graph_copy (a);
  g_autoptr (GError) error = NULL;
  PlNode *relu = pl_graph_find_node (b, "relu");
  PlNode *neg = pl_graph_add_node (b, "Neg", NULL, "neg", 1, relu->outputs, 1, NULL, &error);
  g_assert_no_error (error);
  pl_node_set_input (pl_graph_find_node (b, "add"), 0, neg->outputs[0]);
  g_assert_true (pl_graph_infer_shapes (b, &error));
  /* b also drops the constant: add reads relu's output twice. */
  PlValue *c = pl_graph_find_value (b, "c");
  guint32 c_id = c->id;
  pl_node_set_input (pl_graph_find_node (b, "add"), 1, relu->outputs[0]);
  pl_graph_remove_value (b, c);
  g_assert_true (pl_graph_verify (b, &error));
  g_assert_no_error (error);

  const PlGraph *gs[] = { a, b };
  g_autoptr (PlGraphLayout) l = pl_graph_layout_compute (gs, 2, NULL, NULL, &error);
  g_assert_no_error (error);
  assert_sane (l, true);
  g_autofree char *neg_key = node_key (b, "neg");
  g_autofree char *c_key = g_strdup_printf ("c%u", c_id);
  g_assert_cmpint (pl_graph_layout_find (l, neg_key), >=, 0);  /* only in b */
  g_assert_cmpint (pl_graph_layout_find (l, c_key), >=, 0);    /* only in a */
  g_assert_cmpint (l->n_nodes, ==, 6);
  /* Edges of both: relu -> add (a, and b's slot 1), c -> add (a), and
   * relu -> neg -> add (b). */
  int neg_i = pl_graph_layout_find (l, neg_key), c_i = pl_graph_layout_find (l, c_key);
  int n_into_neg = 0, n_from_c = 0;
  for (int i = 0; i < l->n_edges; i++)
    {
      n_into_neg += l->edges[i].to == neg_i;
      n_from_c += l->edges[i].from == c_i;
    }
  g_assert_cmpint (n_into_neg, ==, 1);
  g_assert_cmpint (n_from_c, ==, 1);

  /* Sketches: every key of each version is in the union. */
  for (int v = 0; v < 2; v++)
    {
      g_autoptr (PlGraphSketch) s = pl_graph_sketch_new (&gs[v], 1, true);
      for (guint i = 0; i < s->nodes->len; i++)
        g_assert_cmpint (pl_graph_layout_find (l, g_array_index (s->nodes, PlSketchNode, i).key), >=, 0);
    }
}

/* x -> Neg -> Exp -> Relu -> out, with Exp and Relu fused. */
static PlGraph *
fused_graph (PlNode **fusion)
{
  g_autoptr (GError) error = NULL;
  PlGraph *g = pl_graph_new ("fused");
  PlShape s = pl_shape_from_dims (1, PL_DIMS (4));
  PlValue *x = pl_graph_add_input (g, "x", PL_DTYPE_F32, &s, &error);
  PlNode *neg = pl_graph_add_node (g, "Neg", NULL, "neg", 1, &x, 1, NULL, &error);
  PlNode *ex = pl_graph_add_node (g, "Exp", NULL, "exp", 1, neg->outputs, 1, NULL, &error);
  PlNode *relu = pl_graph_add_node (g, "Relu", NULL, "relu", 1, ex->outputs, 1, NULL, &error);
  g_assert_no_error (error);
  pl_graph_add_output (g, relu->outputs[0]);
  g_assert_true (pl_graph_infer_shapes (g, &error));
  *fusion = pl_fusion_create (g, (PlNode *[]) { ex, relu }, 2, PL_FUSION_KIND_LOOP, &error);
  g_assert_no_error (error);
  g_assert_nonnull (*fusion);
  return g;
}

static void
test_fusion_cluster (void)
{
  PlNode *fusion;
  g_autoptr (PlGraph) g = fused_graph (&fusion);
  g_autoptr (GError) error = NULL;
  g_autofree char *fkey = g_strdup_printf ("n%u", fusion->id);
  const PlGraph *gs[] = { g };

  /* Expanded: a cluster around the body's two nodes, data flowing through. */
  g_autoptr (PlGraphLayout) l = pl_graph_layout_compute (gs, 1, NULL, NULL, &error);
  g_assert_no_error (error);
  assert_sane (l, true);
  g_assert_cmpint (l->n_clusters, ==, 1);
  g_assert_cmpstr (l->clusters[0].key, ==, fkey);
  g_assert_cmpstr (l->clusters[0].title, ==, fusion->name);
  g_assert_cmpint (l->clusters[0].parent, ==, -1);
  g_assert_cmpint (pl_graph_layout_find (l, fkey), ==, -1);
  int inside = 0;
  for (int i = 0; i < l->n_nodes; i++)
    {
      const PlLayoutNode *n = &l->nodes[i];
      if (!g_str_has_prefix (n->key, fkey) || n->key[strlen (fkey)] != '/')
        continue;
      inside++;
      g_assert_cmpint (n->cluster, ==, 0);
      const PlLayoutCluster *c = &l->clusters[0];
      g_assert_cmpfloat (n->x - n->width / 2, >=, c->x);
      g_assert_cmpfloat (n->x + n->width / 2, <=, c->x + c->width);
      g_assert_cmpfloat (n->y - n->height / 2, >=, c->y);
      g_assert_cmpfloat (n->y + n->height / 2, <=, c->y + c->height);
    }
  g_assert_cmpint (inside, ==, 2);
  /* x, neg, exp, relu, o0; x->neg, neg->exp (into the body), exp->relu, relu->o0. */
  g_assert_cmpint (l->n_nodes, ==, 5);
  g_assert_cmpint (l->n_edges, ==, 4);

  /* Collapsed: one box of kind FUSION, no cluster, no body keys. */
  PlLayoutOptions o;
  pl_layout_options_init (&o);
  o.collapsed = g_hash_table_new (g_str_hash, g_str_equal);
  g_hash_table_add (o.collapsed, fkey);
  g_autoptr (PlGraphLayout) c = pl_graph_layout_compute (gs, 1, &o, NULL, &error);
  g_hash_table_unref (o.collapsed);
  g_assert_no_error (error);
  assert_sane (c, true);
  g_assert_cmpint (c->n_clusters, ==, 0);
  const PlLayoutNode *box = find (c, fkey);
  g_assert_cmpint (box->kind, ==, PL_LAYOUT_NODE_FUSION);
  g_assert_cmpint (box->category, ==, PL_CAT_FUSION);
  g_assert_cmpstr (box->subtitle, ==, "Fusion · loop · 2 ops");
  g_assert_cmpint (c->n_nodes, ==, 4);
  g_assert_cmpint (c->n_edges, ==, 3);
  g_assert_true (g_hash_table_contains (c->collapsed, fkey));
}

/* A control edge into an expanded fusion lands on its first body box, in
 * the layout and in the scene. */
static void
test_control_into_cluster (void)
{
  PlNode *fusion;
  g_autoptr (PlGraph) g = fused_graph (&fusion);
  g_autoptr (GError) error = NULL;
  pl_node_add_control (fusion, pl_graph_find_node (g, "neg"), PL_CONTROL_SERIALIZE);
  const PlGraph *gs[] = { g };
  g_autoptr (PlGraphLayout) l = pl_graph_layout_compute (gs, 1, NULL, NULL, &error);
  g_assert_no_error (error);
  assert_sane (l, true);
  int control = -1;
  for (int i = 0; i < l->n_edges; i++)
    if (l->edges[i].control)
      control = i;
  g_assert_cmpint (control, >=, 0);
  g_assert_cmpstr (l->edges[control].label, ==, "serialize");
  g_autofree char *neg = node_key (g, "neg");
  g_assert_cmpint (l->edges[control].from, ==, pl_graph_layout_find (l, neg));
  g_assert_cmpint (l->nodes[l->edges[control].to].cluster, ==, 0);

  g_autoptr (PlGraphSketch) shown = pl_graph_sketch_new (gs, 1, true);
  PlGraphScene *sc = pl_graph_scene_new (l);
  pl_graph_scene_show (sc, shown, NULL, NULL);
  for (int i = 0; i < l->n_edges; i++)
    g_assert_cmpint (sc->edge_state[i], ==, PL_DRAW_NORMAL);
  g_assert_cmpint (sc->cluster_state[0], ==, PL_DRAW_NORMAL);
  pl_graph_scene_free (sc);
}

/* Above simplify_above: no edge labels, fusions collapsed unless expanded. */
static void
test_simplified (void)
{
  PlNode *fusion;
  g_autoptr (PlGraph) g = fused_graph (&fusion);
  g_autoptr (GError) error = NULL;
  g_autofree char *fkey = g_strdup_printf ("n%u", fusion->id);
  const PlGraph *gs[] = { g };
  PlLayoutOptions o;
  pl_layout_options_init (&o);
  o.simplify_above = 3;
  g_autoptr (PlGraphLayout) l = pl_graph_layout_compute (gs, 1, &o, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (l->simplified);
  g_assert_cmpint (l->n_clusters, ==, 0);
  g_assert_cmpint (find (l, fkey)->kind, ==, PL_LAYOUT_NODE_FUSION);
  for (int i = 0; i < l->n_edges; i++)
    g_assert_null (l->edges[i].label);

  o.expanded = g_hash_table_new (g_str_hash, g_str_equal);
  g_hash_table_add (o.expanded, fkey);
  g_autoptr (PlGraphLayout) e = pl_graph_layout_compute (gs, 1, &o, NULL, &error);
  g_hash_table_unref (o.expanded);
  g_assert_no_error (error);
  g_assert_true (e->simplified);
  g_assert_cmpint (e->n_clusters, ==, 1);
}

/* A big graph is cut into bands; the stacked result must still be a clean
 * drawing: no overlapping boxes, every edge attached to its boxes, bands
 * in rank order, and not drifting off sideways. */
static void
test_bands (void)
{
  g_autoptr (PlGraph) g = pl_random_chain_graph (700, 3);
  g_autoptr (GError) error = NULL;
  PlLayoutOptions o;
  pl_layout_options_init (&o);
  o.band_boxes = 150;
  const PlGraph *gs[] = { g };
  g_autoptr (PlGraphLayout) l = pl_graph_layout_compute (gs, 1, &o, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (l->n_bands, >=, 4);
  g_assert_false (l->simplified);
  assert_sane (l, true);
  g_assert_cmpint (l->n_nodes, >, 700);
  /* The graph input is at the top, the output at the bottom. */
  g_autofree char *x_key = g_strdup_printf ("i%u", ((PlValue *) g_ptr_array_index (g->inputs, 0))->id);
  const PlLayoutNode *x = find (l, x_key), *out = find (l, "o0");
  for (int i = 0; i < l->n_nodes; i++)
    {
      g_assert_cmpfloat (l->nodes[i].y, >=, x->y);
      g_assert_cmpfloat (l->nodes[i].y, <=, out->y);
    }
  /* A chain model is much taller than wide. */
  g_assert_cmpfloat (l->width, <, l->height / 8);
}

/* Fuses every Mul whose only reader is an Add with that Add. */
static int
fuse_mul_add (PlGraph *g)
{
  g_autoptr (GPtrArray) pairs = g_ptr_array_new ();
  g_autoptr (GHashTable) used = g_hash_table_new (g_direct_hash, g_direct_equal);
  for (guint i = 0; i < g->nodes->len; i++)
    {
      PlNode *n = g_ptr_array_index (g->nodes, i);
      if (n->op != PL_OP_Mul || n->outputs[0]->n_uses != 1 || pl_value_is_output (n->outputs[0]))
        continue;
      PlNode *add = n->outputs[0]->uses[0].node;
      if (add->op != PL_OP_Add || g_hash_table_contains (used, n) || g_hash_table_contains (used, add))
        continue;
      g_hash_table_add (used, n);
      g_hash_table_add (used, add);
      g_ptr_array_add (pairs, n);
      g_ptr_array_add (pairs, add);
    }
  int made = 0;
  for (guint k = 0; k + 1 < pairs->len; k += 2)
    {
      g_autoptr (GError) error = NULL;
      PlNode *pair[2] = { g_ptr_array_index (pairs, k), g_ptr_array_index (pairs, k + 1) };
      made += pl_fusion_create (g, pair, 2, PL_FUSION_KIND_LOOP, &error) != NULL;
    }
  return made;
}

/* Bands never cut through a cluster: each expanded fusion keeps its body
 * boxes inside its box, and the drawing stays clean. */
static void
test_bands_with_clusters (void)
{
  g_autoptr (PlGraph) g = pl_random_chain_graph (600, 11);
  int fusions = fuse_mul_add (g);
  g_assert_cmpint (fusions, >=, 20);
  g_autoptr (GError) error = NULL;
  PlLayoutOptions o;
  pl_layout_options_init (&o);
  o.band_boxes = 120;
  const PlGraph *gs[] = { g };
  g_autoptr (PlGraphLayout) l = pl_graph_layout_compute (gs, 1, &o, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (l->n_bands, >=, 4);
  g_assert_cmpint (l->n_clusters, ==, fusions);
  assert_sane (l, true);
  for (int i = 0; i < l->n_nodes; i++)
    {
      const PlLayoutNode *n = &l->nodes[i];
      if (n->cluster < 0)
        continue;
      const PlLayoutCluster *c = &l->clusters[n->cluster];
      g_assert_cmpfloat (n->x - n->width / 2, >=, c->x - 0.5);
      g_assert_cmpfloat (n->x + n->width / 2, <=, c->x + c->width + 0.5);
      g_assert_cmpfloat (n->y - n->height / 2, >=, c->y - 0.5);
      g_assert_cmpfloat (n->y + n->height / 2, <=, c->y + c->height + 0.5);
    }
  /* Boxes outside a cluster stay outside it. */
  for (int i = 0; i < l->n_nodes; i++)
    for (int c = 0; c < l->n_clusters; c++)
      {
        const PlLayoutNode *n = &l->nodes[i];
        const PlLayoutCluster *cl = &l->clusters[c];
        if (n->cluster == c)
          continue;
        bool inside = n->x > cl->x && n->x < cl->x + cl->width && n->y > cl->y && n->y < cl->y + cl->height;
        if (inside)
          g_error ("box %s lies inside cluster %s", n->key, cl->key);
      }
}

static void
cancel_after_first_band (double fraction, gpointer data)
{
  g_cancellable_cancel (data);
}

static void
test_cancel (void)
{
  g_autoptr (PlGraph) g = pl_random_chain_graph (600, 5);
  const PlGraph *gs[] = { g };
  PlLayoutOptions o;
  pl_layout_options_init (&o);
  o.band_boxes = 100;

  /* Cancelled before: nothing is done. */
  g_autoptr (GCancellable) before = g_cancellable_new ();
  g_cancellable_cancel (before);
  g_autoptr (GError) error = NULL;
  g_assert_null (pl_graph_layout_compute (gs, 1, &o, before, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&error);

  /* Cancelled during: stops after the band that was running. */
  g_autoptr (GCancellable) during = g_cancellable_new ();
  o.progress = cancel_after_first_band;
  o.progress_data = during;
  g_assert_null (pl_graph_layout_compute (gs, 1, &o, during, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);

  /* And the next layout works (the Graphviz lock was released). */
  g_clear_error (&error);
  o.progress = NULL;
  g_autoptr (PlGraphLayout) l = pl_graph_layout_compute (gs, 1, &o, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (l);
}

static void
record_progress (double fraction, gpointer data)
{
  GArray *a = data;
  g_array_append_val (a, fraction);
}

static void
test_progress (void)
{
  g_autoptr (PlGraph) g = pl_random_chain_graph (400, 7);
  const PlGraph *gs[] = { g };
  g_autoptr (GArray) seen = g_array_new (FALSE, FALSE, sizeof (double));
  PlLayoutOptions o;
  pl_layout_options_init (&o);
  o.band_boxes = 100;
  o.progress = record_progress;
  o.progress_data = seen;
  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraphLayout) l = pl_graph_layout_compute (gs, 1, &o, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (seen->len, ==, l->n_bands);
  for (guint i = 1; i < seen->len; i++)
    g_assert_cmpfloat (g_array_index (seen, double, i), >, g_array_index (seen, double, i - 1));
  g_assert_cmpfloat (g_array_index (seen, double, seen->len - 1), ==, 1.0);
}

/* Graph inputs, small constants hidden with show_constants off. */
static void
test_hidden_constants (void)
{
  g_autoptr (PlGraph) g = small_graph ();
  g_autoptr (GError) error = NULL;
  PlLayoutOptions o;
  pl_layout_options_init (&o);
  o.show_constants = false;
  const PlGraph *gs[] = { g };
  g_autoptr (PlGraphLayout) l = pl_graph_layout_compute (gs, 1, &o, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (l->n_nodes, ==, 4);
  g_assert_cmpint (l->n_edges, ==, 3);
  g_assert_false (l->show_constants);
}

static void
test_empty (void)
{
  g_autoptr (PlGraph) g = pl_graph_new ("empty");
  g_autoptr (GError) error = NULL;
  const PlGraph *gs[] = { g };
  g_autoptr (PlGraphLayout) l = pl_graph_layout_compute (gs, 1, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (l->n_nodes, ==, 0);
  g_assert_cmpint (l->n_edges, ==, 0);
}

/* A pass step from small_graph: relu replaced by a new Sigmoid, add's
 * second input changed to x. The scene of the union shows the step. */
static void
test_scene_diff (void)
{
  g_autoptr (PlGraph) before = small_graph ();
  g_autoptr (PlGraph) after = pl_graph_copy (before);
  g_autoptr (GError) error = NULL;
  PlNode *relu = pl_graph_find_node (after, "relu");
  PlNode *add = pl_graph_find_node (after, "add");
  PlNode *sig = pl_graph_add_node (after, "Sigmoid", NULL, "sig", 1, relu->inputs, 1, NULL, &error);
  g_assert_no_error (error);
  pl_node_set_input (add, 0, sig->outputs[0]);
  pl_node_set_attr_int (add, "note", 1);  /* same id, different node: changed */
  pl_graph_remove_node (after, relu);
  g_assert_true (pl_graph_infer_shapes (after, &error));

  const PlGraph *gs[] = { before, after };
  g_autoptr (PlGraphLayout) l = pl_graph_layout_compute (gs, 2, NULL, NULL, &error);
  g_assert_no_error (error);
  g_autoptr (PlGraphSketch) shown = pl_graph_sketch_new (&gs[1], 1, true);
  g_autoptr (PlGraphSketch) prev = pl_graph_sketch_new (&gs[0], 1, true);
  g_autoptr (PlGraphDiff) diff = pl_graph_diff (before, after);
  g_autoptr (GHashTable) changed = g_hash_table_new (g_direct_hash, g_direct_equal);
  for (guint i = 0; i < diff->changed->len; i++)
    g_hash_table_add (changed, GUINT_TO_POINTER (g_array_index (diff->changed, guint32, i)));

  PlGraphScene *sc = pl_graph_scene_new (l);
  g_autofree char *relu_key = node_key (before, "relu");
  g_autofree char *sig_key = node_key (after, "sig");
  g_autofree char *add_key = node_key (after, "add");
  int relu_i = pl_graph_layout_find (l, relu_key), sig_i = pl_graph_layout_find (l, sig_key);
  int add_i = pl_graph_layout_find (l, add_key);

  /* Only the shown version: relu is not drawn. */
  pl_graph_scene_show (sc, shown, NULL, NULL);
  g_assert_cmpint (sc->node_state[relu_i], ==, PL_DRAW_HIDDEN);
  g_assert_cmpint (sc->node_state[sig_i], ==, PL_DRAW_NORMAL);
  /* With the step: relu a ghost, sig added, add changed. */
  pl_graph_scene_show (sc, shown, prev, changed);
  g_assert_cmpint (sc->node_state[relu_i], ==, PL_DRAW_REMOVED);
  g_assert_cmpint (sc->node_state[sig_i], ==, PL_DRAW_ADDED);
  g_assert_cmpint (sc->node_state[add_i], ==, PL_DRAW_CHANGED);
  g_assert_cmpint (sc->node_state[pl_graph_layout_find (l, "o0")], ==, PL_DRAW_NORMAL);
  for (int i = 0; i < l->n_edges; i++)
    {
      const PlLayoutEdge *e = &l->edges[i];
      if (e->from == relu_i || e->to == relu_i)
        g_assert_cmpint (sc->edge_state[i], ==, PL_DRAW_REMOVED);
      else if (e->from == sig_i || e->to == sig_i)
        g_assert_cmpint (sc->edge_state[i], ==, PL_DRAW_NORMAL);
    }
  g_assert_cmpstr (sc->title[sig_i], ==, "sig");

  /* Hover on add: its producers and input edges lit as inputs, the output
   * as output; nothing else. */
  pl_graph_scene_set_hover (sc, add_i);
  g_assert_cmpint (sc->node_lit[sig_i], ==, PL_LIT_INPUT);
  g_assert_cmpint (sc->node_lit[pl_graph_layout_find (l, "o0")], ==, PL_LIT_OUTPUT);
  g_assert_cmpint (sc->node_lit[relu_i], ==, 0);  /* the ghost's old edge is not lit */
  int lit = 0;
  for (int i = 0; i < l->n_edges; i++)
    lit += sc->edge_lit[i] != 0;
  g_assert_cmpint (lit, >=, 3);
  pl_graph_scene_set_hover (sc, -1);
  for (int i = 0; i < l->n_nodes; i++)
    g_assert_cmpint (sc->node_lit[i], ==, 0);

  /* Hit testing: a box's centre hits it, a point outside everything nothing. */
  int cluster;
  const PlLayoutNode *n = &l->nodes[sig_i];
  g_assert_cmpint (pl_graph_scene_hit (sc, n->x + n->width / 2 - 1, n->y, &cluster), ==, sig_i);
  g_assert_cmpint (cluster, ==, -1);
  g_assert_cmpint (pl_graph_scene_hit (sc, -50, -50, NULL), ==, -1);

  /* Files: a PNG of the whole scene at scale 2, an SVG with names in it. */
  g_autofree char *dir = g_dir_make_tmp ("passlab-scene-XXXXXX", NULL);
  g_autofree char *png = g_build_filename (dir, "s.png", NULL);
  g_autofree char *svg = g_build_filename (dir, "s.svg", NULL);
  g_assert_true (pl_graph_scene_export (sc, png, 0, 0, l->width, l->height, 2.0, &error));
  g_assert_no_error (error);
  cairo_surface_t *img = cairo_image_surface_create_from_png (png);
  g_assert_cmpint (cairo_surface_status (img), ==, CAIRO_STATUS_SUCCESS);
  g_assert_cmpint (cairo_image_surface_get_width (img), ==, (int) ceil (l->width * 2));
  cairo_surface_destroy (img);
  g_assert_true (pl_graph_scene_export (sc, svg, 0, 0, l->width, l->height, 1.0, &error));
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (svg, &text, NULL, NULL));
  g_assert_nonnull (strstr (text, "sig Sigmoid"));
  g_assert_nonnull (strstr (text, "relu Relu"));  /* the ghost is drawn */
  g_unlink (png);
  g_unlink (svg);
  g_rmdir (dir);
  pl_graph_scene_free (sc);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  pl_ops_init ();
  g_test_add_func ("/Passlab/UiLayout/small", test_small);
  g_test_add_func ("/Passlab/UiLayout/left-to-right", test_left_to_right);
  g_test_add_func ("/Passlab/UiLayout/union", test_union);
  g_test_add_func ("/Passlab/UiLayout/fusion-cluster", test_fusion_cluster);
  g_test_add_func ("/Passlab/UiLayout/control-into-cluster", test_control_into_cluster);
  g_test_add_func ("/Passlab/UiLayout/simplified", test_simplified);
  g_test_add_func ("/Passlab/UiLayout/bands", test_bands);
  g_test_add_func ("/Passlab/UiLayout/bands-with-clusters", test_bands_with_clusters);
  g_test_add_func ("/Passlab/UiLayout/cancel", test_cancel);
  g_test_add_func ("/Passlab/UiLayout/progress", test_progress);
  g_test_add_func ("/Passlab/UiLayout/hidden-constants", test_hidden_constants);
  g_test_add_func ("/Passlab/UiLayout/empty", test_empty);
  g_test_add_func ("/Passlab/UiLayout/scene-diff", test_scene_diff);
  return g_test_run ();
}
