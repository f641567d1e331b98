/* test-ui-run.c — the run panel: runs a step on the cpu and reference
 * backends through the panel's API and checks what it shows (the kernel
 * table, both charts, the code view) and that selecting a kernel (row or
 * bar) selects its node on the canvas, and back. Needs a display: runs
 * itself under `xvfb-run -a` when it has none; with no display at all every
 * case is skipped. */
#define G_LOG_DOMAIN "passlab"

#include <errno.h>
#include <math.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <gtk/gtk.h>

#include "pl-application.h"
#include "pl-quiet.h"
#include "pl-run-panel.h"
#include "pl-window-private.h"   /* pl_window_show_bottom_page */
#include "pl-window.h"
#include "test-ui-util.h"

static PlApplication *app;

static PlWindow *
open_window (const char *sample, const char *passes)
{
  g_autofree char *path = pl_test_ui_sample_path (sample);
  PlOpenRequest req = { .passes = passes, .step = -1, .select = NULL };
  PlWindow *win = pl_test_ui_open_window (app, path, &req);
  pl_test_ui_wait_idle (win);
  g_assert_null (pl_window_get_error (win));
  return win;
}

static PlRunPanel *
run_panel (PlWindow *win)
{
  PlRunPanel *panel = pl_run_panel_get_for_window (win);
  g_assert_nonnull (panel);
  return panel;
}

static char *
key_of (const PlKernelTiming *k)
{
  return g_strdup_printf ("n%u", k->node_id);
}

/* The fused layer norm on the cpu: every view of the panel is filled, and
 * selection goes both ways between the panel and the canvas. */
static void
test_cpu (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PL_TEST_UI_REQUIRE_BACKEND (PL_BACKEND_CPU);
  PlWindow *win = open_window ("layer_norm.graph", PL_WINDOW_DEFAULT_PIPELINE);
  PlRunPanel *panel = run_panel (win);
  pl_run_panel_set_backend (panel, PL_BACKEND_CPU);
  pl_run_panel_set_repeats (panel, 3);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_run_panel_run_sync (panel, &error));
  g_assert_no_error (error);
  g_assert_null (pl_run_panel_get_error (panel));
  g_assert_false (pl_run_panel_is_running (panel));

  const PlRunReport *r = pl_run_panel_get_report (panel);
  g_assert_nonnull (r);
  g_assert_cmpint (r->backend, ==, PL_BACKEND_CPU);
  g_assert_cmpint (r->repeats, ==, 3);
  g_assert_cmpint (r->n_kernels, >, 0);
  g_assert_cmpint (pl_run_panel_get_n_rows (panel), ==, r->n_kernels);
  g_assert_cmpint (pl_chart_get_n_points (pl_run_panel_get_time_chart (panel)), ==, r->n_kernels);
  PlChart *mem = pl_run_panel_get_memory_chart (panel);
  g_assert_cmpint (r->n_memory, >, 0);
  g_assert_cmpint (pl_chart_get_n_points (mem), ==, r->n_memory);
  int64_t most = 0;
  for (int i = 0; i < r->n_memory; i++)
    most = MAX (most, r->memory[i].bytes);
  g_assert_cmpint (most, >, 0);
  g_assert_cmpfloat (pl_chart_get_peak (mem), ==, (double) most);

  /* Before a selection the code view holds the whole translation unit. */
  g_autofree char *all = pl_run_panel_get_code (panel);
  g_assert_cmpuint (strlen (all), >, 0);

  /* A row selects its node on the canvas and shows its code. */
  PlGraphCanvas *canvas = pl_window_get_canvas (win);
  int last = r->n_kernels - 1;
  pl_run_panel_select_kernel (panel, last);
  g_autofree char *key = key_of (&r->kernels[last]);
  g_assert_cmpstr (pl_graph_canvas_get_selected (canvas), ==, key);
  g_assert_cmpint (pl_chart_get_selected_bar (pl_run_panel_get_time_chart (panel)), ==, last);
  g_autofree char *code = pl_run_panel_get_code (panel);
  g_assert_cmpuint (strlen (code), >, 0);
  g_assert_nonnull (strstr (code, r->kernels[last].name));

  /* A bar does the same. */
  g_signal_emit_by_name (pl_run_panel_get_time_chart (panel), "bar-activated", 0);
  g_autofree char *key0 = key_of (&r->kernels[0]);
  g_assert_cmpstr (pl_graph_canvas_get_selected (canvas), ==, key0);
  g_assert_cmpint (pl_run_panel_get_selected_kernel (panel), ==, 0);

  /* And a node selected on the canvas selects its kernel. */
  pl_graph_canvas_select (canvas, key);
  g_assert_cmpint (pl_run_panel_get_selected_kernel (panel), ==, last);

  /* A refused run keeps what was shown. */
  if (!pl_backend_available (PL_BACKEND_CUDA, NULL))
    {
      pl_run_panel_set_backend (panel, PL_BACKEND_CUDA);
      g_clear_error (&error);
      g_assert_false (pl_run_panel_run (panel, &error));
      g_assert_error (error, PL_ERROR, PL_ERROR_FAILED);
      g_assert_true (pl_run_panel_get_report (panel) == r);
      g_assert_cmpint (pl_run_panel_get_n_rows (panel), ==, r->n_kernels);
    }
  pl_test_ui_close_window (win);
}

/* The interpreter: kernels are ops, and there is no generated code. */
static void
test_reference (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PlWindow *win = open_window ("softmax.graph", NULL);
  PlRunPanel *panel = run_panel (win);
  pl_run_panel_set_backend (panel, PL_BACKEND_REFERENCE);
  pl_run_panel_set_repeats (panel, 1);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_run_panel_run_sync (panel, &error));
  const PlRunReport *r = pl_run_panel_get_report (panel);
  g_assert_cmpint (r->backend, ==, PL_BACKEND_REFERENCE);
  g_assert_cmpint (r->n_kernels, >, 0);
  g_assert_cmpint (pl_run_panel_get_n_rows (panel), ==, r->n_kernels);
  g_autofree char *code = pl_run_panel_get_code (panel);
  g_assert_nonnull (strstr (code, "generates no code"));
  pl_test_ui_close_window (win);
}

/* The window holds still while the panel times a step: an animation (a
 * spinner, 60 frames a second) took the cores from the kernels it timed
 * where the drawing is done in software (57 against 37 ms for ResNeXt-50
 * under Xvfb). The reference run of the ResNet block takes about 0.1 s a
 * repeat here. And a node inside a fusion selects the fusion's kernel. */
static void
test_holds_still (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PlWindow *win = open_window ("resnet_block.graph", PL_WINDOW_DEFAULT_PIPELINE);
  PlRunPanel *panel = run_panel (win);
  pl_run_panel_set_backend (panel, PL_BACKEND_REFERENCE);
  pl_run_panel_set_repeats (panel, 5);
  GdkFrameClock *clock = gtk_widget_get_frame_clock (GTK_WIDGET (win));
  g_assert_nonnull (clock);
  const gint64 frame0 = gdk_frame_clock_get_frame_counter (clock), t0 = g_get_monotonic_time ();
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_run_panel_run_sync (panel, &error));
  const double seconds = (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC;
  const gint64 frames = gdk_frame_clock_get_frame_counter (clock) - frame0;
  g_test_message ("%" G_GINT64_FORMAT " frames in %.2f s of timing", frames, seconds);
  g_assert_cmpfloat (seconds, >, 0.25);   /* a spinner would draw 15 frames and more */
  g_assert_cmpint (frames, <=, 6);

  /* a node inside a fusion (the loop fusion of the first batch norm's ops
   * and relu1) selects the fusion's kernel, and the canvas keeps the node */
  const PlRunReport *r = pl_run_panel_get_report (panel);
  const PlHistory *h = pl_window_get_history (win);
  const PlGraph *g = pl_history_step (h, pl_window_get_step (win))->graph;
  int fused = -1;
  for (int i = 0; i < r->n_kernels && fused < 0; i++)
    {
      const PlNode *n = pl_graph_node_by_id (g, r->kernels[i].node_id);
      if (n && n->body && n->body->nodes->len > 1)
        fused = i;
    }
  g_assert_cmpint (fused, >=, 0);
  const PlNode *fusion = pl_graph_node_by_id (g, r->kernels[fused].node_id);
  const PlNode *inner = g_ptr_array_index (fusion->body->nodes, 1);
  g_autofree char *key = g_strdup_printf ("n%u/n%u", fusion->id, inner->id);
  pl_run_panel_select_kernel (panel, -1);
  PlGraphCanvas *canvas = pl_window_get_canvas (win);
  pl_graph_canvas_select (canvas, key);
  g_assert_cmpstr (pl_graph_canvas_get_selected (canvas), ==, key);
  g_assert_cmpint (pl_run_panel_kernel_of_selection (panel), ==, fused);
  g_assert_cmpint (pl_run_panel_get_selected_kernel (panel), ==, fused);
  pl_test_ui_close_window (win);
}

/* Refusals say why and keep what was shown. */
static void
test_refusals (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PlWindow *win = pl_window_new (app);
  gtk_window_present (GTK_WINDOW (win));
  PlRunPanel *panel = run_panel (win);
  pl_run_panel_set_backend (panel, PL_BACKEND_REFERENCE);
  g_autoptr (GError) error = NULL;
  g_assert_false (pl_run_panel_run (panel, &error));
  g_assert_error (error, PL_ERROR, PL_ERROR_FAILED);
  g_assert_nonnull (strstr (error->message, "Open a graph"));
  g_assert_null (pl_run_panel_get_report (panel));
  g_assert_cmpint (pl_run_panel_get_n_rows (panel), ==, 0);

  char *why = NULL;
  if (!pl_backend_available (PL_BACKEND_CUDA, &why))
    {
      g_clear_error (&error);
      pl_run_panel_set_backend (panel, PL_BACKEND_CUDA);
      g_assert_false (pl_run_panel_run (panel, &error));
      g_assert_nonnull (strstr (error->message, "cannot run here"));
      if (why)
        g_assert_nonnull (strstr (error->message, why));
    }
  g_free (why);
  pl_test_ui_close_window (win);
}

/* --- the window held still while kernels are timed (pl-quiet.h) ---------------------------- */

/* A window that draws a frame on every tick for `ms` after start, then stops. */
typedef struct {
  gint64 until;
  gint64 last_paint;   /* monotonic µs of its last frame */
  int    frames;
} Animation;

static gboolean
animate_tick (GtkWidget *widget, GdkFrameClock *clock, gpointer data)
{
  Animation *a = data;
  if (g_get_monotonic_time () >= a->until)
    return G_SOURCE_REMOVE;
  gtk_widget_queue_draw (widget);
  return G_SOURCE_CONTINUE;
}

static void
animation_painted (GdkFrameClock *clock, Animation *a)
{
  a->last_paint = g_get_monotonic_time ();
  a->frames++;
}

static gulong
animate (GtkWidget *widget, Animation *a, int ms)
{
  a->until = g_get_monotonic_time () + (gint64) ms * 1000;
  gtk_widget_add_tick_callback (widget, animate_tick, a, NULL);
  return g_signal_connect (gtk_widget_get_frame_clock (widget), "after-paint", G_CALLBACK (animation_painted), a);
}

typedef struct {
  PlQuiet *quiet;
  int      measure_ms;   /* the "timing" after the wait: a sleep */
  gint64   waited;       /* monotonic µs when the wait returned */
  gboolean done;
} Worker;

static gpointer
worker_thread (gpointer data)
{
  Worker *w = data;
  pl_quiet_wait (w->quiet, NULL);
  w->waited = g_get_monotonic_time ();
  g_usleep ((gulong) w->measure_ms * 1000);
  pl_quiet_end (w->quiet);
  g_atomic_int_set (&w->done, TRUE);
  g_main_context_wakeup (NULL);   /* the main loop may be blocked: nothing else is drawing */
  return NULL;
}

static void
run_worker (Worker *w)
{
  GThread *t = g_thread_new ("measure", worker_thread, w);
  while (!g_atomic_int_get (&w->done))
    g_main_context_iteration (NULL, TRUE);
  g_thread_join (t);
}

/* A worker's wait ends only once the window has drawn nothing for
 * PL_QUIET_MS; frames drawn while it measures are counted, and none when
 * the window is still. */
static void
test_quiet (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PlWindow *win = open_window ("layer_norm.graph", NULL);
  GtkWidget *widget = GTK_WIDGET (win);
  Animation a = { 0 };
  gulong painted = animate (widget, &a, 500);
  Worker w = { .quiet = pl_quiet_new (widget), .measure_ms = 100 };
  run_worker (&w);
  g_test_message ("%d frames drawn; the wait ended %.0f ms after the last, having waited %.0f ms", a.frames,
                  (double) (w.waited - a.last_paint) / 1000.0, pl_quiet_waited_ms (w.quiet));
  g_assert_cmpint (a.frames, >=, 3);
  g_assert_cmpint (w.waited - a.last_paint, >=, (gint64) PL_QUIET_MS * 1000);
  g_assert_cmpfloat (pl_quiet_waited_ms (w.quiet), >=, 450);
  g_assert_cmpint (pl_quiet_frames (w.quiet), ==, 0);
  pl_quiet_free (w.quiet);

  /* the window draws while the worker measures: counted */
  Worker busy = { .quiet = pl_quiet_new (widget), .measure_ms = 400 };
  GThread *t = g_thread_new ("measure", worker_thread, &busy);
  while (!busy.waited)
    g_main_context_iteration (NULL, FALSE), g_usleep (1000);
  animate (widget, &a, 300);
  while (!g_atomic_int_get (&busy.done))
    g_main_context_iteration (NULL, TRUE);
  g_thread_join (t);
  g_test_message ("%d frames while measuring", pl_quiet_frames (busy.quiet));
  g_assert_cmpint (pl_quiet_frames (busy.quiet), >, 0);
  pl_quiet_free (busy.quiet);

  /* a widget without a frame clock: nothing to wait for */
  GtkWidget *loose = g_object_ref_sink (gtk_label_new ("not shown"));
  Worker none = { .quiet = pl_quiet_new (loose) };
  gint64 t0 = g_get_monotonic_time ();
  run_worker (&none);
  g_assert_cmpint (none.waited - t0, <, (gint64) PL_QUIET_MS * 1000);
  g_assert_cmpint (pl_quiet_frames (none.quiet), ==, 0);
  pl_quiet_free (none.quiet);
  g_object_unref (loose);
  g_signal_handler_disconnect (gtk_widget_get_frame_clock (widget), painted);
  pl_test_ui_close_window (win);
}

/* The run panel waits for the window to be still before it times, and a
 * window that never stops drawing gets a run whose status says so. */
static void
test_run_waits_for_quiet (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PL_TEST_UI_REQUIRE_BACKEND (PL_BACKEND_CPU);
  PlWindow *win = open_window ("resnet_block.graph", PL_WINDOW_DEFAULT_PIPELINE);
  PlRunPanel *panel = run_panel (win);
  pl_run_panel_set_backend (panel, PL_BACKEND_CPU);
  pl_run_panel_set_repeats (panel, 20);
  g_autoptr (GError) error = NULL;
  g_assert_cmpint (pl_run_panel_get_frames_while_timed (panel), ==, -1);

  /* drawing for 600 ms after the run starts: the timing comes after it */
  Animation a = { 0 };
  gulong painted = animate (GTK_WIDGET (win), &a, 600);
  gint64 t0 = g_get_monotonic_time ();
  g_assert_true (pl_run_panel_run_sync (panel, &error));
  g_assert_cmpint (a.frames, >=, 3);
  g_assert_cmpint (pl_run_panel_get_frames_while_timed (panel), ==, 0);
  g_assert_cmpfloat (pl_run_panel_get_quiet_wait_ms (panel), >=, PL_QUIET_MS);
  g_assert_cmpfloat (pl_run_panel_get_quiet_wait_ms (panel), <=, PL_QUIET_MAX_MS + 500);
  g_autofree char *clean = pl_run_panel_get_summary (panel);
  g_assert_null (strstr (clean, "frame"));
  g_test_message ("waited %.0f ms, run took %.0f ms", pl_run_panel_get_quiet_wait_ms (panel),
                  (double) (g_get_monotonic_time () - t0) / 1000.0);

  /* drawing all the time: the wait gives up, the frames are reported */
  animate (GTK_WIDGET (win), &a, 60000);
  g_assert_true (pl_run_panel_run_sync (panel, &error));
  a.until = 0;
  int frames = pl_run_panel_get_frames_while_timed (panel);
  g_test_message ("%d frames while timing, after a wait of %.0f ms", frames, pl_run_panel_get_quiet_wait_ms (panel));
  g_assert_cmpint (frames, >, 0);
  g_assert_cmpfloat (pl_run_panel_get_quiet_wait_ms (panel), >=, PL_QUIET_MAX_MS);
  g_autofree char *busy = pl_run_panel_get_summary (panel);
  g_assert_nonnull (strstr (busy, "frame"));
  g_assert_nonnull (strstr (busy, "time the step again"));
  g_signal_handler_disconnect (gtk_widget_get_frame_clock (GTK_WIDGET (win)), painted);
  pl_test_ui_close_window (win);
}

static GtkWidget *
find_list_box (GtkWidget *w)
{
  if (GTK_IS_LIST_BOX (w))
    return w;
  for (GtkWidget *c = gtk_widget_get_first_child (w); c; c = gtk_widget_get_next_sibling (c))
    {
      GtkWidget *found = find_list_box (c);
      if (found)
        return found;
    }
  return NULL;
}

/* The kernel table's heading cells stand over the rows' cells: every
 * column but the last starts and ends where the first row's does. */
static void
assert_columns_aligned (PlRunPanel *panel)
{
  GtkWidget *list = find_list_box (GTK_WIDGET (panel));
  g_assert_nonnull (list);
  GtkWidget *table = gtk_widget_get_parent (gtk_widget_get_parent (gtk_widget_get_parent (list)));
  GtkWidget *heading = gtk_widget_get_first_child (table);
  GtkWidget *row = gtk_list_box_row_get_child (gtk_list_box_get_row_at_index (GTK_LIST_BOX (list), 0));
  pl_window_show_bottom_page (PL_WINDOW (gtk_widget_get_root (GTK_WIDGET (panel))), "run");
  for (int i = 0; i < 200 && gtk_widget_get_width (row) <= 0; i++)
    g_main_context_iteration (NULL, FALSE), g_usleep (5000);
  g_assert_cmpint (gtk_widget_get_width (row), >, 0);
  GtkWidget *h = gtk_widget_get_first_child (heading), *c = gtk_widget_get_first_child (row);
  int n = 0;
  for (; h && c && gtk_widget_get_next_sibling (h); h = gtk_widget_get_next_sibling (h), c = gtk_widget_get_next_sibling (c))
    {
      graphene_rect_t hb, cb;
      g_assert_true (gtk_widget_compute_bounds (h, GTK_WIDGET (panel), &hb));
      g_assert_true (gtk_widget_compute_bounds (c, GTK_WIDGET (panel), &cb));
      g_test_message ("column %d: heading %.0f..%.0f, row %.0f..%.0f", n, hb.origin.x, hb.origin.x + hb.size.width,
                      cb.origin.x, cb.origin.x + cb.size.width);
      g_assert_cmpfloat (fabs (hb.origin.x + hb.size.width - cb.origin.x - cb.size.width), <=, 4);   /* the list row's own inset */
      n++;
    }
  g_assert_cmpint (n, ==, 6);
}

/* After the layout pass the table has the cost model's prediction beside
 * each conv's and layout transform's measured time (as exec --predicted),
 * and the status line their sums; other kernels have none. */
static void
test_predicted (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PL_TEST_UI_REQUIRE_BACKEND (PL_BACKEND_CPU);
  PlWindow *win = open_window ("resnet_block.graph",
                               "simplify,layout{cost=analytic force=NHWC impls=direct},fuse-library,fuse-loops");
  PlRunPanel *panel = run_panel (win);
  pl_run_panel_set_backend (panel, PL_BACKEND_CPU);
  pl_run_panel_set_repeats (panel, 3);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_run_panel_run_sync (panel, &error));
  const PlRunReport *r = pl_run_panel_get_report (panel);
  const PlGraph *g = pl_history_step (pl_window_get_history (win), pl_window_get_step (win))->graph;
  int n_convs = 0, n_transforms = 0;
  for (int i = 0; i < r->n_kernels; i++)
    {
      const PlNode *n = pl_graph_node_by_id (g, r->kernels[i].node_id);
      gboolean conv = n->op == PL_OP_Conv;
      for (guint j = 0; n->body && j < n->body->nodes->len; j++)
        conv |= ((PlNode *) n->body->nodes->pdata[j])->op == PL_OP_Conv;
      double p = pl_run_panel_get_predicted_ms (panel, i);
      g_test_message ("%s: measured %.4f ms, predicted %.4f ms", r->kernels[i].name, r->kernels[i].median_ms, p);
      if (conv || n->op == PL_OP_LayoutTransform)
        {
          g_assert_true (isfinite (p) && p > 0);
          n_convs += conv;
          n_transforms += !conv;
        }
      else
        g_assert_true (isnan (p));
    }
  g_assert_cmpint (n_convs, ==, 2);
  g_assert_cmpint (n_transforms, ==, 2);   /* x in, out back to NCHW */
  g_autofree char *summary = pl_run_panel_get_summary (panel);
  g_assert_nonnull (strstr (summary, "; convs and transforms "));
  g_assert_nonnull (strstr (summary, "4 kernels, the layout pass's cost model)"));
  g_autofree char *text = pl_test_ui_widget_text (panel);
  g_assert_nonnull (strstr (text, "Predicted"));
  g_assert_true (isnan (pl_run_panel_get_predicted_ms (panel, r->n_kernels)));
  assert_columns_aligned (panel);

  /* the reference backend: no predictions */
  pl_run_panel_set_backend (panel, PL_BACKEND_REFERENCE);
  g_assert_true (pl_run_panel_run_sync (panel, &error));
  g_assert_true (isnan (pl_run_panel_get_predicted_ms (panel, 0)));
  g_autofree char *plain = pl_run_panel_get_summary (panel);
  g_assert_null (strstr (plain, "predicted"));
  pl_test_ui_close_window (win);
}

/* On the CUDA emulator (ui-run-emulated in meson.build: PASSLAB_CUDA=emulator)
 * the panel runs the stitched layer norm on cuda, shows the CUDA code, and
 * says that the times are not a GPU's. */
static void
test_cuda_emulated (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  if (g_strcmp0 (g_getenv ("PASSLAB_CUDA"), "emulator") != 0)
    {
      g_test_skip ("runs with PASSLAB_CUDA=emulator (ui-run-emulated)");
      return;
    }
  PlWindow *win = open_window ("layer_norm.graph", PL_WINDOW_DEFAULT_PIPELINE);
  PlRunPanel *panel = run_panel (win);
  pl_run_panel_set_backend (panel, PL_BACKEND_CUDA);
  pl_run_panel_set_repeats (panel, 1);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_run_panel_run_sync (panel, &error));
  g_assert_no_error (error);
  const PlRunReport *r = pl_run_panel_get_report (panel);
  g_assert_cmpint (r->backend, ==, PL_BACKEND_CUDA);
  g_assert_true (r->emulated);
  g_assert_cmpint (pl_run_panel_get_n_rows (panel), ==, r->n_kernels);
  g_autofree char *code = pl_run_panel_get_code (panel);
  g_assert_nonnull (strstr (code, "__global__"));
  g_autofree char *summary = pl_run_panel_get_summary (panel);
  g_assert_nonnull (strstr (summary, "emulated on the CPU"));
  pl_test_ui_close_window (win);
}

int
main (int argc, char **argv)
{
  app = pl_test_ui_init (&argc, &argv, "passlab-ui-run-XXXXXX", PL_TEST_UI_OWN_CACHE);

  g_test_add_func ("/Passlab/UI/Run/cpu", test_cpu);
  g_test_add_func ("/Passlab/UI/Run/reference", test_reference);
  g_test_add_func ("/Passlab/UI/Run/holds-still", test_holds_still);
  g_test_add_func ("/Passlab/UI/Run/refusals", test_refusals);
  g_test_add_func ("/Passlab/UI/Run/quiet", test_quiet);
  g_test_add_func ("/Passlab/UI/Run/predicted", test_predicted);
  g_test_add_func ("/Passlab/UI/Run/waits-for-quiet", test_run_waits_for_quiet);
  g_test_add_func ("/Passlab/UI/Run/cuda-emulated", test_cuda_emulated);
  return pl_test_ui_finish (g_test_run ());
}
