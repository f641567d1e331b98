/* test-ui-memory.c — the memory page and the run panel's kernel timeline
 * on a training step with swapping: the transformer block's training step
 * (grad) then `swap` with budget=50%, run from the script panel as a person
 * would. The memory view shows two curves (before and after the swap pass)
 * whose peaks straddle the budget; clicking the peak lists tensors whose
 * bytes sum to the peak and selects the node; on the cpu the run timeline
 * has the swap copies on their own row. Needs a display: runs itself under
 * `xvfb-run -a` when it has none; with no display at all every case is
 * skipped. */
#define G_LOG_DOMAIN "passlab"

#include <glib/gstdio.h>
#include <gtk/gtk.h>

#include "pl-application.h"
#include "pl-memory-view.h"
#include "pl-run-panel.h"
#include "pl-script-panel.h"
#include "pl-window-private.h"
#include "test-ui-util.h"

static PlApplication *app;

/* The pipeline of the issue: a training step, then swap within half its peak. */
static const char swap_script[] =
  "local passlab = require \"passlab\"\n"
  "passlab.run (graph, { \"grad\", { \"swap\", budget = \"50%\" } })\n";

static void
spin (int n)
{
  for (int i = 0; i < n; i++)
    g_main_context_iteration (NULL, FALSE);
}

/* Waits until the window has its document. Not for the canvas's layout:
 * nothing here needs it, and Graphviz takes minutes over the union of a
 * swapped training step's versions (layouts also queue behind one another,
 * one at a time, across windows). */
static void
wait_loaded (PlWindow *win)
{
  gint64 deadline = g_get_monotonic_time () + 120 * G_USEC_PER_SEC;
  while (!pl_window_get_history (win) && !pl_window_get_error (win))
    {
      g_main_context_iteration (NULL, FALSE);
      if (g_get_monotonic_time () > deadline)
        g_error ("the window did not load its file in 120 s");
      g_usleep (1000);
    }
  spin (20);
}

static PlWindow *
open_window (const char *sample, const char *passes)
{
  g_autofree char *path = pl_test_ui_sample_path (sample);
  PlOpenRequest req = { .passes = passes, .step = -1, .select = NULL };
  PlWindow *win = pl_test_ui_open_window (app, path, &req);
  wait_loaded (win);
  g_assert_null (pl_window_get_error (win));
  return win;
}

/* Runs swap_script in the window's script panel; returns once its history
 * is the window's. The canvas may still be laying the new versions out:
 * nothing here needs it. */
static void
run_swap_script (PlWindow *win)
{
  PlScriptPanel *panel = PL_SCRIPT_PANEL (pl_window_get_script_panel (win));
  pl_script_panel_set_autosave (panel, FALSE);
  pl_script_panel_set_text (panel, swap_script);
  g_assert_true (pl_script_panel_run (panel));
  gint64 deadline = g_get_monotonic_time () + 120 * G_USEC_PER_SEC;
  while (pl_script_panel_is_running (panel) || pl_history_n_steps (pl_window_get_history (win)) < 3)
    {
      g_main_context_iteration (NULL, FALSE);
      if (g_get_monotonic_time () > deadline)
        g_error ("the script did not finish in 120 s");
      g_usleep (1000);
    }
  g_autofree char *out = pl_script_panel_get_output (panel);
  g_assert_null (strstr (out, "error"));
  const PlHistory *h = pl_window_get_history (win);
  g_assert_cmpint (pl_history_n_steps (h), ==, 3);
  g_assert_cmpstr (pl_history_step (h, 2)->pass_name, ==, "swap");
  g_assert_cmpint (pl_window_get_step (win), ==, 2);
}

static PlMemoryView *
show_memory_page (PlWindow *win)
{
  pl_window_show_bottom_page (win, "memory");
  spin (50);
  PlMemoryView *view = pl_memory_view_get_for_window (win);
  g_assert_nonnull (view);
  g_assert_true (gtk_widget_get_mapped (GTK_WIDGET (view)));
  return view;
}

/* Sum of the device bytes of the tensors listed; checks they are sorted. */
static int64_t
listed_device_bytes (PlMemoryView *view, int *n_host)
{
  int64_t sum = 0, last = G_MAXINT64;
  *n_host = 0;
  for (int i = 0; i < pl_memory_view_get_n_live (view); i++)
    {
      const PlValue *v = pl_memory_view_get_live (view, i);
      int64_t b = pl_value_bytes (v, 1, NULL);
      g_assert_cmpint (b, <=, last);
      last = b;
      if (pl_value_on_host (v))
        (*n_host)++;
      else
        sum += b;
    }
  return sum;
}

/* Clicks (through the chart's own hit test) the peak of a curve: the list
 * sums to that curve's peak, and its node is selected on the canvas. */
static void
click_peak (PlWindow *win, PlMemoryView *view, PlMemoryCurve curve)
{
  PlChart *chart = pl_memory_view_get_chart (view);
  const PlMemoryProfile *p = pl_memory_view_get_profile (view, curve);
  int series = pl_memory_view_get_series (view, curve), peak = -1;
  g_assert_cmpfloat (pl_chart_get_series_peak (chart, series, &peak), ==, (double) p->peak_bytes);
  g_assert_cmpint (peak, ==, p->peak_step);
  double x, y;
  g_assert_true (pl_chart_get_point_position (chart, series, peak, &x, &y));
  int hit_series, hit;
  g_assert_true (pl_chart_pick_point (chart, x, y, &hit_series, &hit));
  g_assert_cmpint (hit_series, ==, series);
  g_assert_cmpint (hit, ==, peak);
  g_signal_emit_by_name (chart, "point-activated", hit_series, hit);

  g_assert_cmpint (pl_memory_view_get_n_live (view), >, 0);
  int n_host;
  g_assert_cmpint (listed_device_bytes (view, &n_host), ==, p->peak_bytes);
  g_assert_cmpint (listed_device_bytes (view, &n_host), ==, p->live_bytes[peak]);
  /* The step's node is selected on the canvas (ids are kept across versions). */
  g_autofree char *key = g_strdup_printf ("n%u", p->order[peak]->id);
  if (curve == PL_MEMORY_AFTER)
    g_assert_cmpstr (pl_graph_canvas_get_selected (pl_window_get_canvas (win)), ==, key);
}

/* The case: two curves, the budget between their peaks, the peaks'
 * live tensors, the swap nodes marked. */
static void
test_swap_profile (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PlWindow *win = open_window ("transformer_train.graph", NULL);
  PlMemoryView *view = show_memory_page (win);
  g_assert_cmpint (pl_memory_view_get_n_curves (view), ==, 1);  /* the loaded graph alone */
  g_assert_cmpint (pl_memory_view_get_budget (view), ==, 0);

  run_swap_script (win);
  spin (20);  /* the view follows the window by itself */
  g_assert_cmpint (pl_memory_view_get_n_curves (view), ==, 2);
  g_assert_cmpint (pl_memory_view_get_history_step (view, PL_MEMORY_BEFORE), ==, 1);
  g_assert_cmpint (pl_memory_view_get_history_step (view, PL_MEMORY_AFTER), ==, 2);
  PlChart *chart = pl_memory_view_get_chart (view);
  g_assert_cmpint (pl_chart_get_n_series (chart), ==, 2);

  const PlMemoryProfile *before = pl_memory_view_get_profile (view, PL_MEMORY_BEFORE);
  const PlMemoryProfile *after = pl_memory_view_get_profile (view, PL_MEMORY_AFTER);
  const PlStep *swap = pl_history_step (pl_window_get_history (win), 2);
  int64_t budget = pl_memory_view_get_budget (view);
  g_assert_cmpint (budget, ==, pl_pass_report_get (swap->counters, "budget"));
  g_assert_cmpint (budget, ==, before->peak_bytes / 2);
  g_assert_cmpint (after->peak_bytes, <=, budget);
  g_assert_cmpint (budget, <, before->peak_bytes);
  g_assert_cmpint (before->peak_bytes, ==, pl_pass_report_get (swap->counters, "peak before"));
  g_assert_cmpint (after->peak_bytes, ==, pl_pass_report_get (swap->counters, "peak after"));
  g_assert_cmpint (after->n_steps, >, before->n_steps);  /* the swap nodes */
  g_assert_cmpint (pl_chart_get_series_n_points (chart, pl_memory_view_get_series (view, PL_MEMORY_AFTER)), ==,
                   after->n_steps);

  click_peak (win, view, PL_MEMORY_AFTER);
  click_peak (win, view, PL_MEMORY_BEFORE);

  /* A node selected on the canvas selects its step. */
  int mid = after->n_steps / 2;
  g_autofree char *key = g_strdup_printf ("n%u", after->order[mid]->id);
  pl_graph_canvas_select (pl_window_get_canvas (win), key);
  int n_host;
  g_assert_cmpint (listed_device_bytes (view, &n_host), ==, after->live_bytes[mid]);

  /* Back at the training step alone: compared with the forward graph, no budget. */
  g_assert_true (pl_window_set_step (win, 1));
  spin (10);
  g_assert_cmpint (pl_memory_view_get_history_step (view, PL_MEMORY_BEFORE), ==, 0);
  g_assert_cmpint (pl_memory_view_get_history_step (view, PL_MEMORY_AFTER), ==, 1);
  g_assert_cmpint (pl_memory_view_get_budget (view), ==, 0);
  pl_test_ui_close_window (win);
}

/* The run panel after a cpu run of the swapped step: every swap copy on the
 * copy row, with a wait on the compute row (cpu copies are synchronous). */
static void
test_run_timeline (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PL_TEST_UI_REQUIRE_BACKEND (PL_BACKEND_CPU);
  PlWindow *win = open_window ("transformer_train.graph", NULL);
  run_swap_script (win);
  PlRunPanel *panel = pl_run_panel_get_for_window (win);
  pl_run_panel_set_backend (panel, PL_BACKEND_CPU);
  pl_run_panel_set_repeats (panel, 2);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_run_panel_run_sync (panel, &error));
  g_assert_no_error (error);
  const PlRunReport *r = pl_run_panel_get_report (panel);
  g_assert_cmpint (r->n_copies, >, 0);

  int copies = 0;
  for (int i = 0; i < r->n_events; i++)
    {
      const char *kind = r->kernels[r->events[i].kernel].kind;
      copies += g_strcmp0 (kind, "swap-out") == 0 || g_strcmp0 (kind, "swap-in") == 0;
    }
  g_assert_cmpint (copies, ==, r->n_copies);
  PlChart *timeline = pl_run_panel_get_timeline_chart (panel);
  g_assert_cmpint (pl_chart_get_n_spans (timeline, 1), ==, copies);
  g_assert_cmpint (pl_chart_get_n_spans (timeline, 0), ==, r->n_events - copies + copies /* waits */);

  /* A span selects its kernel, as a row or a bar does. */
  int copy_kernel = -1;
  for (int i = 0; i < r->n_kernels && copy_kernel < 0; i++)
    if (g_strcmp0 (r->kernels[i].kind, "swap-in") == 0)
      copy_kernel = i;
  g_assert_cmpint (copy_kernel, >=, 0);
  g_signal_emit_by_name (timeline, "span-activated", copy_kernel);
  g_assert_cmpint (pl_run_panel_get_selected_kernel (panel), ==, copy_kernel);

  /* The memory page, hidden while the script replaced the document,
   * catches up when shown. */
  PlMemoryView *view = show_memory_page (win);
  g_assert_cmpint (pl_memory_view_get_n_curves (view), ==, 2);
  g_assert_cmpint (pl_memory_view_get_budget (view), >, 0);
  pl_test_ui_close_window (win);
}

/* Without a swap pass: the version shown against the loaded graph. */
static void
test_no_swap (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PlWindow *win = open_window ("layer_norm.graph", "simplify,decompose");
  PlMemoryView *view = show_memory_page (win);
  g_assert_cmpint (pl_memory_view_get_n_curves (view), ==, 2);
  g_assert_cmpint (pl_memory_view_get_history_step (view, PL_MEMORY_BEFORE), ==, 0);
  g_assert_cmpint (pl_memory_view_get_history_step (view, PL_MEMORY_AFTER), ==, 2);
  g_assert_cmpint (pl_memory_view_get_budget (view), ==, 0);
  /* the peak's tensors are listed from the start */
  const PlMemoryProfile *after = pl_memory_view_get_profile (view, PL_MEMORY_AFTER);
  int n_host;
  g_assert_cmpint (listed_device_bytes (view, &n_host), ==, after->peak_bytes);
  g_assert_cmpint (n_host, ==, 0);
  g_assert_true (pl_window_set_step (win, 0));
  spin (10);
  g_assert_cmpint (pl_memory_view_get_n_curves (view), ==, 1);
  g_assert_false (pl_memory_view_select_point (view, PL_MEMORY_BEFORE, 0));
  g_assert_false (pl_memory_view_select_point (view, PL_MEMORY_AFTER, 100000));
  pl_test_ui_close_window (win);

  /* An empty window: nothing to show, nothing breaks. */
  win = pl_window_new (app);
  gtk_window_present (GTK_WINDOW (win));
  view = show_memory_page (win);
  g_assert_cmpint (pl_memory_view_get_n_curves (view), ==, 0);
  g_assert_cmpint (pl_memory_view_get_n_live (view), ==, 0);
  pl_test_ui_close_window (win);
}

int
main (int argc, char **argv)
{
  app = pl_test_ui_init (&argc, &argv, "passlab-ui-memory-XXXXXX", PL_TEST_UI_OWN_CACHE);

  g_test_add_func ("/Passlab/UI/Memory/swap-profile", test_swap_profile);
  g_test_add_func ("/Passlab/UI/Memory/run-timeline", test_run_timeline);
  g_test_add_func ("/Passlab/UI/Memory/no-swap", test_no_swap);
  return pl_test_ui_finish (g_test_run ());
}
