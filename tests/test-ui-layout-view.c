/* test-ui-layout-view.c — what the workbench shows of data layouts (issue
 * #7): the canvas model (sketch, layout and scene: layout-coloured edges
 * with "@NHWC" labels, LayoutTransform nodes marked, a Conv's layout and
 * kernel on a third line, only in the versions that have them) and its
 * pixels, the inspector (a value's layout and strides, a Conv's layout,
 * impl and tile, a step report's table), the layout pass's step in the
 * window when that pass is registered, and the tuning page running a tiny
 * tune into its chart. Needs a display for the widgets: runs itself under
 * `xvfb-run -a` when it has none; without one those cases skip. */
#define G_LOG_DOMAIN "passlab"

#include <glib/gstdio.h>
#include <gtk/gtk.h>
#include <math.h>
#include <string.h>

#include "pass.h"
#include "pl-application.h"
#include "pl-graph-draw.h"
#include "pl-graph-layout.h"
#include "pl-report-view.h"
#include "pl-tune-panel.h"
#include "pl-window.h"
#include "test-ui-util.h"
#include "text-format.h"

static PlApplication *app;

/* Two convs in two layouts with the transforms between them, as the layout
 * pass leaves a graph. */
static const char *const with_layouts =
  "graph lay opset 17 {\n"
  "  input x: f32[1, 16, 14, 14]\n"
  "  const w1: f32[16, 16, 3, 3] = random(seed=1, lo=-0.1, hi=0.1)\n"
  "  const w2: f32[16, 16, 3, 3] = random(seed=2, lo=-0.1, hi=0.1)\n"
  "  to_nhwc: f32[1, 16, 14, 14] @NHWC = LayoutTransform(x) {to=\"NHWC\"}\n"
  "  conv1: f32[1, 16, 14, 14] @NHWC = Conv(to_nhwc, w1) {kernel_shape=[3, 3], pads=[1, 1, 1, 1], "
  "impl=\"direct\", tile=[8, 4, 16]}\n"
  "  relu1: f32[1, 16, 14, 14] @NHWC = Relu(conv1)\n"
  "  to_chwn: f32[1, 16, 14, 14] @CHWN = LayoutTransform(relu1) {to=\"CHWN\"}\n"
  "  conv2: f32[1, 16, 14, 14] @CHWN = Conv(to_chwn, w2) {kernel_shape=[3, 3], pads=[1, 1, 1, 1], impl=\"gemm\"}\n"
  "  back: f32[1, 16, 14, 14] = LayoutTransform(conv2) {to=\"NCHW\"}\n"
  "  out = Add(back, x)\n"
  "  output out\n"
  "}\n";

/* The same computation before any layout was chosen. */
static const char *const without_layouts =
  "graph lay opset 17 {\n"
  "  input x: f32[1, 16, 14, 14]\n"
  "  const w1: f32[16, 16, 3, 3] = random(seed=1, lo=-0.1, hi=0.1)\n"
  "  const w2: f32[16, 16, 3, 3] = random(seed=2, lo=-0.1, hi=0.1)\n"
  "  conv1 = Conv(x, w1) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}\n"
  "  relu1 = Relu(conv1)\n"
  "  conv2 = Conv(relu1, w2) {kernel_shape=[3, 3], pads=[1, 1, 1, 1]}\n"
  "  out = Add(conv2, x)\n"
  "  output out\n"
  "}\n";

static PlGraph *
parse (const char *text)
{
  g_autoptr (GError) error = NULL;
  PlGraph *g = pl_text_parse (text, -1, "test.graph", &error);
  g_assert_no_error (error);
  return g;
}

static char *
key_of (const PlGraph *g, const char *name)
{
  const PlNode *n = pl_graph_find_node (g, name);
  g_assert_nonnull (n);
  return g_strdup_printf ("n%u", n->id);
}

static const PlSketchNode *
sketch_node (const PlGraphSketch *s, const char *key)
{
  int i = pl_graph_sketch_find (s, key);
  g_assert_cmpint (i, >=, 0);
  return &g_array_index (s->nodes, PlSketchNode, i);
}

/* The sketch edge from the entry keyed from to the one keyed to. */
static const PlSketchEdge *
sketch_edge (const PlGraphSketch *s, const char *from, const char *to)
{
  int a = pl_graph_sketch_find (s, from), b = pl_graph_sketch_find (s, to);
  for (guint i = 0; i < s->edges->len; i++)
    {
      const PlSketchEdge *e = &g_array_index (s->edges, PlSketchEdge, i);
      if (e->from == a && e->to == b)
        return e;
    }
  g_assert_not_reached ();
  return NULL;
}

/* --- the canvas model ----------------------------------------------------------------------- */

static void
test_sketch (void)
{
  g_autoptr (PlGraph) g = parse (with_layouts);
  g_autoptr (PlGraphSketch) s = pl_graph_sketch_new ((const PlGraph *[]) { g }, 1, true);
  g_autofree char *t1 = key_of (g, "to_nhwc"), *c1 = key_of (g, "conv1"), *r1 = key_of (g, "relu1");
  g_autofree char *t2 = key_of (g, "to_chwn"), *c2 = key_of (g, "conv2"), *back = key_of (g, "back");
  g_autofree char *x = g_strdup_printf ("i%u", pl_graph_find_value (g, "x")->id);

  /* Convs: their layout and kernel on a third line, coloured by the layout. */
  const PlSketchNode *conv1 = sketch_node (s, c1), *conv2 = sketch_node (s, c2);
  g_assert_cmpstr (conv1->detail, ==, "NHWC · direct 8×4×16");
  g_assert_cmpint (conv1->data_layout, ==, PL_LAYOUT_NHWC);
  g_assert_false (conv1->transform);
  g_assert_cmpstr (conv2->detail, ==, "CHWN · gemm");
  g_assert_cmpint (conv2->data_layout, ==, PL_LAYOUT_CHWN);
  /* The third line makes the box taller than a plain op's. */
  g_assert_cmpfloat (conv1->height, >, sketch_node (s, r1)->height);
  g_assert_null (sketch_node (s, r1)->detail);

  /* Transforms: marked, "→ NHWC", in the layout they make. */
  const PlSketchNode *tn = sketch_node (s, t1), *tc = sketch_node (s, t2), *tb = sketch_node (s, back);
  g_assert_true (tn->transform && tc->transform && tb->transform);
  g_assert_cmpstr (tn->detail, ==, "→ NHWC");
  g_assert_cmpint (tn->data_layout, ==, PL_LAYOUT_NHWC);
  g_assert_cmpstr (tc->detail, ==, "→ CHWN");
  g_assert_cmpint (tc->data_layout, ==, PL_LAYOUT_CHWN);
  g_assert_cmpint (tb->data_layout, ==, PL_LAYOUT_NCHW);
  g_assert_cmpstr (tn->subtitle, ==, "LayoutTransform");

  /* Edges: the layout of the value they carry, named in the label as the
   * text format writes it. */
  const PlSketchEdge *e = sketch_edge (s, t1, c1);
  g_assert_cmpint (e->data_layout, ==, PL_LAYOUT_NHWC);
  g_assert_cmpstr (e->label, ==, "f32[1, 16, 14, 14] @NHWC");
  e = sketch_edge (s, t2, c2);
  g_assert_cmpint (e->data_layout, ==, PL_LAYOUT_CHWN);
  g_assert_cmpstr (e->label, ==, "f32[1, 16, 14, 14] @CHWN");
  e = sketch_edge (s, x, t1);
  g_assert_cmpint (e->data_layout, ==, PL_LAYOUT_NCHW);
  g_assert_cmpstr (e->label, ==, "f32[1, 16, 14, 14]");
  g_autofree char *out = key_of (g, "out");
  e = sketch_edge (s, back, out);
  g_assert_cmpint (e->data_layout, ==, PL_LAYOUT_NCHW);
}

/* Pixels of colour (r, g, b) (within a small tolerance) in a PNG. */
static int
count_colour (const char *png, int r, int g, int b)
{
  cairo_surface_t *img = cairo_image_surface_create_from_png (png);
  g_assert_cmpint (cairo_surface_status (img), ==, CAIRO_STATUS_SUCCESS);
  int w = cairo_image_surface_get_width (img), h = cairo_image_surface_get_height (img);
  int stride = cairo_image_surface_get_stride (img), n = 0;
  const guint8 *data = cairo_image_surface_get_data (img);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      {
        guint32 p = *(const guint32 *) (data + y * stride + 4 * x);  /* ARGB, premultiplied, opaque here */
        int pr = p >> 16 & 0xff, pg = p >> 8 & 0xff, pb = p & 0xff;
        n += abs (pr - r) <= 12 && abs (pg - g) <= 12 && abs (pb - b) <= 12;
      }
  cairo_surface_destroy (img);
  return n;
}

static void
test_scene (void)
{
  g_autoptr (PlGraph) before = parse (without_layouts);
  g_autoptr (PlGraph) after = parse (with_layouts);
  const PlGraph *gs[] = { before, after };
  g_autoptr (GError) error = NULL;
  g_autoptr (PlGraphLayout) l = pl_graph_layout_compute (gs, 2, NULL, NULL, &error);
  g_assert_no_error (error);
  g_autoptr (PlGraphSketch) s_before = pl_graph_sketch_new (&gs[0], 1, true);
  g_autoptr (PlGraphSketch) s_after = pl_graph_sketch_new (&gs[1], 1, true);
  g_autofree char *c1 = key_of (after, "conv1"), *t1 = key_of (after, "to_nhwc");
  int conv1 = pl_graph_layout_find (l, c1), to_nhwc = pl_graph_layout_find (l, t1);
  g_assert_cmpint (conv1, >=, 0);
  g_assert_cmpint (to_nhwc, >=, 0);
  /* The layout keeps what the latest version says. */
  g_assert_true (l->nodes[to_nhwc].transform);
  g_assert_cmpstr (l->nodes[conv1].detail, ==, "NHWC · direct 8×4×16");
  int nhwc_edges = 0;
  for (int i = 0; i < l->n_edges; i++)
    nhwc_edges += l->edges[i].data_layout == PL_LAYOUT_NHWC;
  g_assert_cmpint (nhwc_edges, ==, 3);  /* to_nhwc → conv1 → relu1 → to_chwn */

  PlGraphScene *sc = pl_graph_scene_new (l);
  bool transforms = false;
  /* After the pass: both layouts and the transforms. */
  pl_graph_scene_show (sc, s_after, NULL, NULL);
  guint shown = pl_graph_scene_layouts_shown (sc, &transforms);
  g_assert_cmpuint (shown, ==, (1u << PL_LAYOUT_NHWC) | (1u << PL_LAYOUT_CHWN));
  g_assert_true (transforms);
  g_assert_cmpstr (sc->detail[conv1], ==, "NHWC · direct 8×4×16");
  g_assert_cmpint (sc->node_layout[conv1], ==, PL_LAYOUT_NHWC);
  int lit = 0;
  for (int i = 0; i < l->n_edges; i++)
    if (l->edges[i].to == conv1 && sc->edge_state[i] == PL_DRAW_NORMAL && sc->edge_layout[i] == PL_LAYOUT_NHWC)
      lit++;
  g_assert_cmpint (lit, ==, 1);

  /* Before it: no layouts, no transforms, no third lines, even though the
   * union layout holds them. */
  pl_graph_scene_show (sc, s_before, NULL, NULL);
  g_assert_cmpuint (pl_graph_scene_layouts_shown (sc, &transforms), ==, 0);
  g_assert_false (transforms);
  g_autofree char *c1_before = key_of (before, "conv1");
  int conv1_before = pl_graph_layout_find (l, c1_before);
  g_assert_null (sc->detail[conv1_before]);
  for (int i = 0; i < l->n_edges; i++)
    g_assert_cmpint (sc->edge_layout[i], ==, PL_LAYOUT_NCHW);

  /* The pixels: NHWC teal on the canvas after the pass, close up and far
   * out (batched plain edges), and none before it. */
  double r, g, b;
  pl_graph_layout_colour (PL_LAYOUT_NHWC, &r, &g, &b);
  int tr = (int) round (r * 255), tg = (int) round (g * 255), tb = (int) round (b * 255);
  g_autofree char *png = g_build_filename (pl_test_ui_tmp_dir (), "scene.png", NULL);
  pl_graph_scene_show (sc, s_after, NULL, NULL);
  g_assert_true (pl_graph_scene_export (sc, png, 0, 0, l->width, l->height, 1.5, &error));
  g_assert_no_error (error);
  int close_up = count_colour (png, tr, tg, tb);
  g_assert_cmpint (close_up, >, 200);
  g_assert_true (pl_graph_scene_export (sc, png, 0, 0, l->width, l->height, 0.15, &error));
  g_assert_cmpint (count_colour (png, tr, tg, tb), >, 0);
  pl_graph_scene_show (sc, s_before, NULL, NULL);
  g_assert_true (pl_graph_scene_export (sc, png, 0, 0, l->width, l->height, 1.5, &error));
  g_assert_cmpint (count_colour (png, tr, tg, tb), ==, 0);
  g_unlink (png);
  pl_graph_scene_free (sc);
}

/* --- reports ---------------------------------------------------------------------------------- */

/* A report as the layout pass writes it: lines, a table in printf widths
 * (where a value wider than its column leaves one space before the next:
 * conv2's shape, conv3's NHWC time; or two, between text columns: the last
 * row), totals. */
static const char *const cost_report =
  "search: frontier DP, 250 states, optimal\n"
  "conv             shape                        plan                ms      NCHW      NHWC      CHWN  source\n"
  "conv1            1x16x14x14 -> 16 k3x3 p1     NHWC direct     0.1200    0.2100    0.1200    0.3000  measured\n"
  "conv2            1x16x14x14 -> 16 k3x3 s2 p1 d2 CHWN gemm       0.1500    0.1800    0.1600    0.1500  analytic\n"
  "conv3            1x16x14x14 -> 16 k1x1        NCHW gemm       0.0500    0.0500 1234.1500         -  table\n"
  "/features/features.4/conv/conv.3/Conv  1x96x112x112 -> 96 k3x3 s2 p1 g96  NHWC direct     0.1914    0.5548    0.1914"
  "    0.4382  measured\n"
  "predicted total 0.3100 ms (convs 0.2700 + transforms 0.0400 + pointwise 0.0000)\n"
  "best single layout: NHWC 0.3300 ms (NCHW 0.4000, NHWC 0.3300, CHWN 0.5000): plan/best = 0.939\n";

static void
test_report_parse (void)
{
  g_autoptr (GPtrArray) blocks = pl_report_parse (cost_report);
  g_assert_cmpuint (blocks->len, ==, 3);
  const PlReportBlock *head = blocks->pdata[0], *t = blocks->pdata[1], *tail = blocks->pdata[2];
  g_assert_null (head->cells);
  g_assert_cmpstr (head->text, ==, "search: frontier DP, 250 states, optimal");
  g_assert_nonnull (t->cells);
  g_assert_true (t->heading);
  g_assert_cmpint (t->n_rows, ==, 5);
  g_assert_cmpint (t->n_cols, ==, 8);
  g_assert_cmpstr (t->cells[0][3], ==, "ms");
  g_assert_cmpstr (t->cells[1][0], ==, "conv1");
  g_assert_cmpstr (t->cells[1][1], ==, "1x16x14x14 -> 16 k3x3 p1");
  g_assert_cmpstr (pl_report_block_cell (t, 1, "source"), ==, "measured");
  /* The rows with a value wider than its column. */
  g_assert_cmpstr (pl_report_block_cell (t, 2, "shape"), ==, "1x16x14x14 -> 16 k3x3 s2 p1 d2");
  g_assert_cmpstr (pl_report_block_cell (t, 2, "plan"), ==, "CHWN gemm");
  g_assert_cmpstr (pl_report_block_cell (t, 2, "ms"), ==, "0.1500");
  g_assert_cmpstr (pl_report_block_cell (t, 2, "source"), ==, "analytic");
  g_assert_cmpstr (pl_report_block_cell (t, 3, "NCHW"), ==, "0.0500");
  g_assert_cmpstr (pl_report_block_cell (t, 3, "nhwc"), ==, "1234.1500");
  g_assert_cmpstr (pl_report_block_cell (t, 3, "CHWN"), ==, "-");
  g_assert_cmpstr (pl_report_block_cell (t, 3, "source"), ==, "table");
  g_assert_null (pl_report_block_cell (t, 1, "nothing"));
  /* A name and a shape both wider than their columns, each followed by the
   * two spaces the layout pass writes between text columns. */
  g_assert_cmpstr (t->cells[4][0], ==, "/features/features.4/conv/conv.3/Conv");
  g_assert_cmpstr (pl_report_block_cell (t, 4, "shape"), ==, "1x96x112x112 -> 96 k3x3 s2 p1 g96");
  g_assert_cmpstr (pl_report_block_cell (t, 4, "plan"), ==, "NHWC direct");
  g_assert_cmpstr (pl_report_block_cell (t, 4, "NHWC"), ==, "0.1914");
  g_assert_null (tail->cells);
  g_assert_true (g_str_has_prefix (tail->text, "predicted total 0.3100 ms"));
  g_assert_nonnull (strstr (tail->text, "\nbest single layout: NHWC"));

  /* Plain reports stay one text run; '|' tables work too. */
  g_autoptr (GPtrArray) plain = pl_report_parse ("fused 3 ops\nkernels 5 -> 3\n");
  g_assert_cmpuint (plain->len, ==, 1);
  g_assert_cmpstr (((PlReportBlock *) plain->pdata[0])->text, ==, "fused 3 ops\nkernels 5 -> 3");
  g_autoptr (GPtrArray) bars = pl_report_parse ("| a | b | c |\n| 1 | 2 | 3 |\n");
  g_assert_cmpuint (bars->len, ==, 1);
  t = bars->pdata[0];
  g_assert_cmpint (t->n_cols, ==, 3);
  g_assert_cmpstr (t->cells[1][2], ==, "3");
}

/* --- widgets -------------------------------------------------------------------------------------- */

/* Widgets under widget with css class name. */
static int
count_class (GtkWidget *widget, const char *name)
{
  int n = gtk_widget_has_css_class (widget, name);
  for (GtkWidget *c = gtk_widget_get_first_child (widget); c; c = gtk_widget_get_next_sibling (c))
    n += count_class (c, name);
  return n;
}

static void
assert_contains (const char *text, const char *part)
{
  if (!strstr (text, part))
    g_error ("'%s' not in:\n%s", part, text);
}

static PlWindow *
open_window (const char *path, const char *passes)
{
  PlOpenRequest req = { .passes = passes, .step = -1, .select = NULL };
  PlWindow *win = pl_test_ui_open_window (app, path, &req);
  pl_test_ui_wait_idle (win);
  g_assert_null (pl_window_get_error (win));
  return win;
}

static char *
write_sample (void)
{
  char *path = g_build_filename (pl_test_ui_tmp_dir (), "layouts.graph", NULL);
  g_assert_true (g_file_set_contents (path, with_layouts, -1, NULL));
  return path;
}

static void
test_inspector (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  g_autofree char *path = write_sample ();
  PlWindow *win = open_window (path, NULL);
  PlInspector *insp = pl_window_get_inspector (win);

  /* The canvas's own layout carries the layouts too. */
  PlGraphLayout *l = pl_graph_canvas_get_layout (pl_window_get_canvas (win));
  g_assert_nonnull (l);
  int transforms = 0;
  for (int i = 0; i < l->n_nodes; i++)
    transforms += l->nodes[i].transform;
  g_assert_cmpint (transforms, ==, 3);

  /* A conv: its layout, implementation and tile; its input's layout. */
  g_assert_true (pl_window_select (win, "conv1"));
  g_assert_cmpstr (pl_inspector_get_title (insp), ==, "conv1");
  g_autofree char *conv = pl_test_ui_widget_text (insp);
  assert_contains (conv, "Layout and kernel");
  assert_contains (conv, "NHWC — channels last");
  assert_contains (conv, "direct — the generated tiled convolution");
  assert_contains (conv, "8 × 4 × 16");
  assert_contains (conv, "f32[1, 16, 14, 14] @NHWC");
  /* One without impl: gemm by default, its input in another layout. */
  g_assert_true (pl_window_select (win, "conv2"));
  g_autofree char *conv2 = pl_test_ui_widget_text (insp);
  assert_contains (conv2, "CHWN — batch innermost");
  assert_contains (conv2, "gemm — im2col");

  /* A transform: what it converts. */
  g_assert_true (pl_window_select (win, "to_nhwc"));
  g_autofree char *tr = pl_test_ui_widget_text (insp);
  assert_contains (tr, "NCHW → NHWC");

  /* A value: its layout and strides. */
  g_assert_true (pl_window_select (win, "x"));
  g_autofree char *x = pl_test_ui_widget_text (insp);
  assert_contains (x, "Memory layout");
  assert_contains (x, "NCHW — row-major");
  assert_contains (x, "N 3136 · C 196 · H 14 · W 1");
  pl_test_ui_close_window (win);
}

/* A step whose report holds a cost table: the inspector draws a grid with
 * the chosen layout's cell marked and layer names that select their node. */
static void
test_report_table (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  g_autoptr (PlGraph) g = parse (with_layouts);
  PlStep step = { .pass_name = (char *) "layout", .graph = g, .changed = true, .report = (char *) cost_report };
  GtkWidget *win = gtk_window_new ();
  PlInspector *insp = PL_INSPECTOR (pl_inspector_new ());
  gtk_window_set_child (GTK_WINDOW (win), GTK_WIDGET (insp));
  gtk_window_present (GTK_WINDOW (win));
  pl_inspector_show (insp, g, NULL, &step, 1);
  g_assert_cmpint (count_class (GTK_WIDGET (insp), "report-table"), ==, 1);
  g_assert_cmpint (count_class (GTK_WIDGET (insp), "report-heading"), ==, 8);
  g_assert_cmpint (count_class (GTK_WIDGET (insp), "report-chosen"), ==, 4);   /* one per row */
  g_autofree char *text = pl_test_ui_widget_text (insp);
  assert_contains (text, "Step 1 · layout");
  assert_contains (text, "1x16x14x14 -> 16 k3x3 s2 p1 d2");
  assert_contains (text, "best single layout: NHWC 0.3300 ms");
  gtk_window_destroy (GTK_WINDOW (win));
  for (int i = 0; i < 20; i++)
    g_main_context_iteration (NULL, FALSE);
}

/* A plan the pass kept single-layout (layout.min_gain): a conv's costs come
 * with the report's reason, since a cheaper layout may sit beside the
 * chosen one. */
static void
test_report_kept (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  g_autoptr (PlGraph) g = parse (with_layouts);
  g_autofree char *report = g_strconcat (cost_report, "kept NHWC: the search's mixed plan predicted 0.3200 ms, 0.3% "
                                         "less, below layout.min_gain (3%), which is within the costs' noise\n", NULL);
  PlStep step = { .pass_name = (char *) "layout", .graph = g, .changed = true, .report = report };
  GtkWidget *win = gtk_window_new ();
  PlInspector *insp = PL_INSPECTOR (pl_inspector_new ());
  gtk_window_set_child (GTK_WINDOW (win), GTK_WIDGET (insp));
  gtk_window_present (GTK_WINDOW (win));
  g_autofree char *key = pl_graph_key_for_name (g, "conv1");
  g_assert_nonnull (key);
  pl_inspector_show (insp, g, key, &step, 1);
  g_autofree char *text = pl_test_ui_widget_text (insp);
  assert_contains (text, "In this step's report");
  assert_contains (text, "why");
  assert_contains (text, "kept NHWC: the search's mixed plan predicted 0.3200 ms");
  /* without the line, no such row */
  step.report = (char *) cost_report;
  pl_inspector_show (insp, g, key, &step, 1);
  g_autofree char *plain = pl_test_ui_widget_text (insp);
  assert_contains (plain, "In this step's report");
  g_assert_null (strstr (plain, "kept NHWC"));
  gtk_window_destroy (GTK_WINDOW (win));
  for (int i = 0; i < 20; i++)
    g_main_context_iteration (NULL, FALSE);
}

/* The layout pass itself on the ResNet block, when it is registered. */
static void
test_layout_step (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  if (!pl_pass_find ("layout"))
    {
      g_test_skip ("no `layout` pass registered");
      return;
    }
  const char *src = g_getenv ("PASSLAB_SOURCE_DIR");
  g_autofree char *path = g_build_filename (src ? src : ".", "data", "graphs", "resnet_block.graph", NULL);
  PlWindow *win = open_window (path, "layout");
  const PlHistory *h = pl_window_get_history (win);
  g_assert_cmpint (pl_history_n_steps (h), ==, 2);
  g_assert_cmpint (pl_window_get_step (win), ==, 1);
  const PlStep *step = pl_history_step (h, 1);
  g_assert_nonnull (step->report);
  PlInspector *insp = pl_window_get_inspector (win);
  g_autofree char *text = pl_test_ui_widget_text (insp);
  assert_contains (text, "Step 1 · layout");
  /* Every conv is a row of the report's table, when the report has one. */
  g_autoptr (GPtrArray) blocks = pl_report_parse (step->report);
  for (guint i = 0; i < blocks->len; i++)
    if (((PlReportBlock *) blocks->pdata[i])->cells)
      {
        g_assert_cmpint (count_class (GTK_WIDGET (insp), "report-table"), >=, 1);
        assert_contains (text, "conv1");
        assert_contains (text, "conv2");
      }
  /* Each conv shows the layout the pass chose on the canvas. */
  PlGraphLayout *l = pl_graph_canvas_get_layout (pl_window_get_canvas (win));
  for (guint i = 0; i < step->graph->nodes->len; i++)
    {
      const PlNode *n = step->graph->nodes->pdata[i];
      if (n->op != PL_OP_Conv || (n->outputs[0]->layout == PL_LAYOUT_NCHW && !pl_node_attr (n, "impl")))
        continue;
      g_autofree char *key = g_strdup_printf ("n%u", n->id);
      int k = pl_graph_layout_find (l, key);
      g_assert_cmpint (k, >=, 0);
      g_assert_nonnull (l->nodes[k].detail);
      g_assert_true (g_str_has_prefix (l->nodes[k].detail, pl_layout_name (n->outputs[0]->layout)));
    }
  pl_test_ui_close_window (win);
}

/* The tuning page: a tiny tune of conv1 fills the chart with both searches. */
static void
test_tune (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  g_autofree char *path = write_sample ();
  PlWindow *win = open_window (path, NULL);
  PlTunePanel *panel = pl_tune_panel_get_for_window (win);
  g_assert_nonnull (panel);
  g_assert_cmpint (pl_tune_panel_get_n_convs (panel), ==, 2);
  /* Selecting a conv on the canvas picks it, in its layout. */
  g_assert_true (pl_window_select (win, "conv2"));
  g_assert_cmpstr (pl_tune_panel_get_conv (panel), ==, "conv2");
  g_assert_cmpint (pl_tune_panel_get_layout (panel), ==, PL_LAYOUT_CHWN);
  g_assert_false (pl_tune_panel_set_conv (panel, "relu1"));
  g_assert_true (pl_tune_panel_set_conv (panel, "conv1"));
  g_assert_cmpint (pl_tune_panel_get_layout (panel), ==, PL_LAYOUT_NHWC);
  pl_tune_panel_set_trials (panel, 4);

  g_autoptr (GError) error = NULL;
  g_assert_true (pl_tune_panel_run_sync (panel, &error));
  g_assert_no_error (error);
  const PlTuneResult *r = pl_tune_panel_get_result (panel);
  g_assert_nonnull (r);
  g_assert_cmpstr (r->conv, ==, "conv1");
  g_assert_cmpint (r->layout, ==, PL_LAYOUT_NHWC);
  g_assert_cmpuint (r->full->len, >=, 1);
  g_assert_cmpuint (r->full->len, <=, 4);
  g_assert_cmpuint (r->pruned->len, >=, 1);
  PlChart *chart = pl_tune_panel_get_chart (panel);
  g_assert_cmpint (pl_chart_get_n_series (chart), ==, 2);
  g_assert_cmpint (pl_chart_get_series_n_points (chart, 0), ==, (int) r->full->len);
  g_assert_cmpint (pl_chart_get_series_n_points (chart, 1), ==, (int) r->pruned->len);
  const char *verdict = pl_tune_panel_get_verdict (panel);
  g_assert_nonnull (verdict);
  g_assert_true (strstr (verdict, "within 5%") || strstr (verdict, "not within 5%"));
  assert_contains (verdict, "side by side");
  g_autofree char *in = g_strdup_printf ("of %u trials", r->pruned->len);
  assert_contains (verdict, in);
  /* the best tile's speed against this cpu's arithmetic peak */
  g_autofree char *text = pl_test_ui_widget_text (panel);
  assert_contains (text, "of this cpu's FMA peak");

  /* Cancel drops what the worker brings; the panel takes a new tune after. */
  g_assert_true (pl_tune_panel_run (panel, &error));
  pl_tune_panel_cancel (panel);
  g_assert_false (pl_tune_panel_run (panel, NULL));
  while (pl_tune_panel_is_running (panel))
    g_main_context_iteration (NULL, TRUE);
  g_assert_true (pl_tune_panel_get_result (panel) == r);
  pl_test_ui_close_window (win);
}

int
main (int argc, char **argv)
{
  app = pl_test_ui_init (&argc, &argv, "passlab-ui-layouts-XXXXXX", PL_TEST_UI_OWN_CACHE);
  pl_ops_init ();
  pl_passes_init ();

  g_test_add_func ("/Passlab/UI/LayoutView/sketch", test_sketch);
  g_test_add_func ("/Passlab/UI/LayoutView/scene", test_scene);
  g_test_add_func ("/Passlab/UI/LayoutView/report-parse", test_report_parse);
  g_test_add_func ("/Passlab/UI/LayoutView/inspector", test_inspector);
  g_test_add_func ("/Passlab/UI/LayoutView/report-table", test_report_table);
  g_test_add_func ("/Passlab/UI/LayoutView/report-kept", test_report_kept);
  g_test_add_func ("/Passlab/UI/LayoutView/layout-step", test_layout_step);
  g_test_add_func ("/Passlab/UI/LayoutView/tune", test_tune);
  return pl_test_ui_finish (g_test_run ());
}
