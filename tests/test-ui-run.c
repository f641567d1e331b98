/* test-ui-run.c — the run panel: runs a step on the cpu and reference
 * backends through the panel's API and checks what it shows (the kernel
 * table, both charts, the code view) and that selecting a kernel (row or
 * bar) selects its node on the canvas, and back. Needs a display: runs
 * itself under `xvfb-run -a` when it has none; with no display at all every
 * case is skipped. */
#define G_LOG_DOMAIN "passlab"

#include <errno.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <gtk/gtk.h>

#include "pl-application.h"
#include "pl-run-panel.h"
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
  g_test_add_func ("/Passlab/UI/Run/cuda-emulated", test_cuda_emulated);
  return pl_test_ui_finish (g_test_run ());
}
