/* test-ui-canvas.c — the graph canvas in a real window (run it under
 * `xvfb-run -a`; without a display every case skips): layouts arriving
 * from the worker thread, selection and search, zoom and pan, a diff with
 * ghosts, collapsing a fusion, cancelling, and PNG/SVG export. */
#include "test-util.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "fusion.h"
#include "pl-graph-canvas.h"
#include "random-graph.h"

static bool have_display;

typedef struct {
  GtkWidget     *window;
  PlGraphCanvas *canvas;
  int            finished;
  char          *last_error;
  int            selections;
} Fixture;

static void
on_finished (PlGraphCanvas *canvas, const char *error, Fixture *f)
{
  f->finished++;
  g_free (f->last_error);
  f->last_error = g_strdup (error);
}

static void
on_selection (PlGraphCanvas *canvas, const char *key, Fixture *f)
{
  f->selections++;
}

static void
fixture_init (Fixture *f)
{
  memset (f, 0, sizeof *f);
  f->window = gtk_window_new ();
  gtk_window_set_default_size (GTK_WINDOW (f->window), 800, 600);
  f->canvas = PL_GRAPH_CANVAS (pl_graph_canvas_new ());
  gtk_window_set_child (GTK_WINDOW (f->window), GTK_WIDGET (f->canvas));
  g_signal_connect (f->canvas, "layout-finished", G_CALLBACK (on_finished), f);
  g_signal_connect (f->canvas, "selection-changed", G_CALLBACK (on_selection), f);
  gtk_window_present (GTK_WINDOW (f->window));
}

static void
fixture_clear (Fixture *f)
{
  gtk_window_destroy (GTK_WINDOW (f->window));
  while (g_main_context_iteration (NULL, FALSE))
    ;
  g_free (f->last_error);
}

/* Runs the main loop until cond holds or 60 s pass. */
#define SPIN_UNTIL(cond) G_STMT_START { \
    gint64 spin_end_ = g_get_monotonic_time () + 60 * G_USEC_PER_SEC; \
    while (!(cond) && g_get_monotonic_time () < spin_end_) \
      g_main_context_iteration (NULL, TRUE); \
    g_assert_true (cond); \
  } G_STMT_END

static void
wait_layout (Fixture *f, int count)
{
  SPIN_UNTIL (f->finished >= count);
  g_assert_null (f->last_error);
  g_assert_false (pl_graph_canvas_is_busy (f->canvas));
  /* Until the canvas has its size and drew once. */
  SPIN_UNTIL (gtk_widget_get_width (GTK_WIDGET (f->canvas)) > 0
              && pl_graph_canvas_get_draw_time (f->canvas) > 0);
}

/* x -> Relu -> Neg -> Exp -> Add(., c) -> out; Neg and Exp fused when fuse. */
static PlGraph *
make_graph (bool fuse, PlNode **fusion)
{
  g_autoptr (GError) error = NULL;
  PlGraph *g = pl_graph_new ("canvas");
  PlShape s = pl_shape_from_dims (2, PL_DIMS (2, 3));
  PlValue *x = pl_graph_add_input (g, "x", PL_DTYPE_F32, &s, &error);
  g_autoptr (PlTensor) ct = pl_test_tensor (PL_DTYPE_F32, 1, PL_DIMS (3), PL_VALS (1, 2, 3));
  PlValue *c = pl_graph_add_constant (g, "bias", ct, &error);
  PlNode *relu = pl_graph_add_node (g, "Relu", NULL, "first_relu", 1, &x, 1, NULL, &error);
  PlNode *neg = pl_graph_add_node (g, "Neg", NULL, "negate", 1, relu->outputs, 1, NULL, &error);
  PlNode *ex = pl_graph_add_node (g, "Exp", NULL, "exponent", 1, neg->outputs, 1, NULL, &error);
  PlNode *add = pl_graph_add_node (g, "Add", NULL, "add_bias", 2, (PlValue *[]) { ex->outputs[0], c },
                                   1, NULL, &error);
  g_assert_no_error (error);
  pl_graph_add_output (g, add->outputs[0]);
  g_assert_true (pl_graph_infer_shapes (g, &error));
  if (fuse)
    {
      *fusion = pl_fusion_create (g, (PlNode *[]) { neg, ex }, 2, PL_FUSION_KIND_LOOP, &error);
      g_assert_no_error (error);
    }
  return g;
}

static char *
key_of (const PlGraph *g, const char *name)
{
  return g_strdup_printf ("n%u", pl_graph_find_node (g, name)->id);
}

static void
test_layout_select_search (Fixture *f)
{
  g_autoptr (PlGraph) g = make_graph (false, NULL);
  const PlGraph *gs[] = { g };
  pl_graph_canvas_layout_async (f->canvas, gs, 1, NULL);
  g_assert_true (pl_graph_canvas_is_busy (f->canvas));
  pl_graph_canvas_set_graph (f->canvas, g, NULL, NULL);
  wait_layout (f, 1);
  PlGraphLayout *l = pl_graph_canvas_get_layout (f->canvas);
  g_assert_nonnull (l);
  g_assert_cmpint (l->n_nodes, ==, 7);

  /* Selection by key, signalled once per change. */
  g_autofree char *neg = key_of (g, "negate");
  pl_graph_canvas_select (f->canvas, neg);
  pl_graph_canvas_select (f->canvas, neg);
  g_assert_cmpstr (pl_graph_canvas_get_selected (f->canvas), ==, neg);
  g_assert_cmpint (f->selections, ==, 1);

  /* Search by op name (case-insensitive) selects and centres the hit. */
  g_assert_true (pl_graph_canvas_search_next (f->canvas, "exp"));
  g_autofree char *ex = key_of (g, "exponent");
  g_assert_cmpstr (pl_graph_canvas_get_selected (f->canvas), ==, ex);
  double ox, oy, zoom;
  pl_graph_canvas_get_view (f->canvas, &ox, &oy, &zoom);
  int w = gtk_widget_get_width (GTK_WIDGET (f->canvas)), h = gtk_widget_get_height (GTK_WIDGET (f->canvas));
  const PlLayoutNode *n = &l->nodes[pl_graph_layout_find (l, ex)];
  g_assert_cmpfloat (fabs (ox + w / 2.0 / zoom - n->x), <, 1.0);
  g_assert_cmpfloat (fabs (oy + h / 2.0 / zoom - n->y), <, 1.0);
  /* By node name; then the output named after add's value; then around. */
  g_assert_true (pl_graph_canvas_search_next (f->canvas, "ADD_B"));
  g_autofree char *add = key_of (g, "add_bias");
  g_assert_cmpstr (pl_graph_canvas_get_selected (f->canvas), ==, add);
  g_assert_true (g_str_has_prefix (((PlValue *) g_ptr_array_index (g->outputs, 0))->name, "add_bias"));
  g_assert_true (pl_graph_canvas_search_next (f->canvas, "add_b"));
  g_assert_cmpstr (pl_graph_canvas_get_selected (f->canvas), ==, "o0");
  g_assert_true (pl_graph_canvas_search_next (f->canvas, "add_b"));
  g_assert_cmpstr (pl_graph_canvas_get_selected (f->canvas), ==, add);
  g_assert_false (pl_graph_canvas_search_next (f->canvas, "no such node"));
  pl_graph_canvas_select (f->canvas, NULL);
  g_assert_null (pl_graph_canvas_get_selected (f->canvas));

  /* Fit shows everything; zoom_by multiplies; pan moves by pixels. */
  pl_graph_canvas_zoom_fit (f->canvas);
  pl_graph_canvas_get_view (f->canvas, &ox, &oy, &zoom);
  double fit = MIN (MIN (w / l->width, h / l->height), 1.5);
  g_assert_cmpfloat (fabs (zoom - fit), <, 1e-9);
  g_assert_cmpfloat (ox, <=, 0.5);
  g_assert_cmpfloat (ox + w / zoom, >=, l->width - 0.5);
  pl_graph_canvas_zoom_by (f->canvas, 2.0);
  double z2;
  pl_graph_canvas_get_view (f->canvas, NULL, NULL, &z2);
  g_assert_cmpfloat (fabs (z2 - 2 * zoom), <, 1e-9);
  double px, py;
  pl_graph_canvas_get_view (f->canvas, &ox, &oy, NULL);
  pl_graph_canvas_pan_by (f->canvas, 100, -50);
  pl_graph_canvas_get_view (f->canvas, &px, &py, NULL);
  g_assert_cmpfloat (fabs (px - ox - 100 / z2), <, 1e-9);
  g_assert_cmpfloat (fabs (py - oy + 50 / z2), <, 1e-9);
}

static void
assert_png (const char *path, int min_w)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GdkTexture) t = gdk_texture_new_from_filename (path, &error);
  g_assert_no_error (error);
  g_assert_cmpint (gdk_texture_get_width (t), >=, min_w);
  g_assert_cmpint (gdk_texture_get_height (t), >, 0);
}

static void
test_export (Fixture *f)
{
  g_autoptr (PlGraph) g = make_graph (false, NULL);
  const PlGraph *gs[] = { g };
  pl_graph_canvas_layout_async (f->canvas, gs, 1, NULL);
  wait_layout (f, 1);
  PlGraphLayout *l = pl_graph_canvas_get_layout (f->canvas);
  g_autofree char *dir = g_dir_make_tmp ("passlab-canvas-XXXXXX", NULL);
  g_autofree char *png = g_build_filename (dir, "whole.png", NULL);
  g_autofree char *view = g_build_filename (dir, "view.png", NULL);
  g_autofree char *svg = g_build_filename (dir, "whole.svg", NULL);
  g_autoptr (GError) error = NULL;

  g_assert_true (pl_graph_canvas_export (f->canvas, png, true, &error));
  g_assert_no_error (error);
  assert_png (png, (int) floor (l->width));
  g_assert_true (pl_graph_canvas_export (f->canvas, view, false, &error));
  g_assert_no_error (error);
  assert_png (view, gtk_widget_get_width (GTK_WIDGET (f->canvas)));

  g_assert_true (pl_graph_canvas_export (f->canvas, svg, true, &error));
  g_assert_no_error (error);
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (svg, &text, NULL, NULL));
  g_assert_true (g_str_has_prefix (text, "<?xml"));
  g_assert_nonnull (strstr (text, "<svg"));
  g_assert_nonnull (strstr (text, "first_relu"));
  g_assert_nonnull (strstr (text, "add_bias"));

  /* A bad name is an error, not a crash. */
  g_autofree char *bad = g_build_filename (dir, "graph.gif", NULL);
  g_assert_false (pl_graph_canvas_export (f->canvas, bad, true, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_IO);
  g_clear_error (&error);
  g_autofree char *nodir = g_build_filename (dir, "missing", "graph.png", NULL);
  g_assert_false (pl_graph_canvas_export (f->canvas, nodir, true, &error));
  g_assert_nonnull (error);

  g_unlink (png);
  g_unlink (view);
  g_unlink (svg);
  g_rmdir (dir);
}

/* A pass step: the union layout of before and after, the after version
 * shown with the diff: the removed node is still drawn (a ghost). */
static void
test_diff_and_fusion (Fixture *f)
{
  g_autoptr (PlGraph) before = make_graph (false, NULL);
  PlNode *fusion;
  g_autoptr (PlGraph) after = make_graph (true, &fusion);
  g_autofree char *fkey = g_strdup_printf ("n%u", fusion->id);
  const PlGraph *gs[] = { before, after };
  pl_graph_canvas_layout_async (f->canvas, gs, 2, NULL);
  g_autoptr (PlGraphDiff) diff = pl_graph_diff (before, after);
  pl_graph_canvas_set_graph (f->canvas, after, before, diff);
  wait_layout (f, 1);
  PlGraphLayout *l = pl_graph_canvas_get_layout (f->canvas);
  g_assert_cmpint (l->n_clusters, ==, 1);
  g_autofree char *neg = key_of (before, "negate");
  g_assert_cmpint (pl_graph_layout_find (l, neg), >=, 0);

  g_autofree char *dir = g_dir_make_tmp ("passlab-canvas-XXXXXX", NULL);
  g_autofree char *svg = g_build_filename (dir, "diff.svg", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_graph_canvas_export (f->canvas, svg, true, &error));
  g_autofree char *text = NULL;
  g_assert_true (g_file_get_contents (svg, &text, NULL, NULL));
  /* The ghost of the removed Neg, and the fused copies inside the cluster. */
  g_assert_nonnull (strstr (text, "negate Neg"));

  /* Collapsing the fusion lays out again with one box for it. */
  g_assert_true (pl_graph_canvas_toggle_fusion (f->canvas, fkey));
  wait_layout (f, 2);
  l = pl_graph_canvas_get_layout (f->canvas);
  g_assert_cmpint (l->n_clusters, ==, 0);
  int box = pl_graph_layout_find (l, fkey);
  g_assert_cmpint (box, >=, 0);
  g_assert_cmpint (l->nodes[box].kind, ==, PL_LAYOUT_NODE_FUSION);
  /* And back. */
  g_assert_true (pl_graph_canvas_toggle_fusion (f->canvas, fkey));
  wait_layout (f, 3);
  g_assert_cmpint (pl_graph_canvas_get_layout (f->canvas)->n_clusters, ==, 1);
  g_assert_false (pl_graph_canvas_toggle_fusion (f->canvas, neg));

  /* Annotations do not disturb anything and show in exports. */
  pl_graph_canvas_set_annotation (f->canvas, fkey, "1.25 ms");
  g_assert_true (pl_graph_canvas_export (f->canvas, svg, false, &error));
  g_assert_no_error (error);
  g_unlink (svg);
  g_rmdir (dir);
}

static void
test_cancel (Fixture *f)
{
  g_autoptr (PlGraph) small = make_graph (false, NULL);
  const PlGraph *gs[] = { small };
  pl_graph_canvas_layout_async (f->canvas, gs, 1, NULL);
  wait_layout (f, 1);
  PlGraphLayout *first = pl_graph_canvas_get_layout (f->canvas);

  /* A big layout, cancelled at once: the old layout stays. */
  g_autoptr (PlGraph) big = pl_random_chain_graph (3000, 1);
  const PlGraph *bg[] = { big };
  pl_graph_canvas_layout_async (f->canvas, bg, 1, NULL);
  g_assert_true (pl_graph_canvas_is_busy (f->canvas));
  pl_graph_canvas_cancel_layout (f->canvas);
  g_assert_false (pl_graph_canvas_is_busy (f->canvas));
  g_assert_cmpint (f->finished, ==, 2);
  g_assert_cmpstr (f->last_error, ==, "cancelled");
  g_assert_true (pl_graph_canvas_get_layout (f->canvas) == first);

  /* A request superseded by a newer one: only the newer one lands. */
  pl_graph_canvas_layout_async (f->canvas, bg, 1, NULL);
  pl_graph_canvas_layout_async (f->canvas, gs, 1, NULL);
  g_clear_pointer (&f->last_error, g_free);
  SPIN_UNTIL (f->finished >= 3);
  g_assert_null (f->last_error);
  g_assert_cmpint (pl_graph_canvas_get_layout (f->canvas)->n_nodes, ==, 7);
  /* Let the abandoned thread finish before the next test (it holds the
   * Graphviz lock until its band is done). */
  g_usleep (G_USEC_PER_SEC / 10);
}

typedef void (*CanvasTest) (Fixture *f);

/* Every case runs in a fresh window, or skips without a display. */
static void
run_canvas_test (gconstpointer test)
{
  if (!have_display)
    {
      g_test_skip ("no display: run under xvfb-run -a");
      return;
    }
  Fixture f;
  fixture_init (&f);
  ((CanvasTest) test) (&f);
  fixture_clear (&f);
}

int
main (int argc, char **argv)
{
  /* No accessibility bus under xvfb; its warning would be fatal. */
  g_setenv ("GTK_A11Y", "none", TRUE);
  g_test_init (&argc, &argv, NULL);
  pl_ops_init ();
  have_display = gtk_init_check ();
  g_test_add_data_func ("/Passlab/UiCanvas/layout-select-search", (gconstpointer) test_layout_select_search, run_canvas_test);
  g_test_add_data_func ("/Passlab/UiCanvas/export", (gconstpointer) test_export, run_canvas_test);
  g_test_add_data_func ("/Passlab/UiCanvas/diff-and-fusion", (gconstpointer) test_diff_and_fusion, run_canvas_test);
  g_test_add_data_func ("/Passlab/UiCanvas/cancel", (gconstpointer) test_cancel, run_canvas_test);
  return g_test_run ();
}
