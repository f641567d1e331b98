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

static gboolean have_display;
static PlApplication *app;
static char *tmp_dir;

#define REQUIRE_DISPLAY()                  \
  G_STMT_START                             \
  {                                        \
    if (!have_display)                     \
      {                                    \
        g_test_skip ("no display");        \
        return;                            \
      }                                    \
  }                                        \
  G_STMT_END

static void
wait_idle (PlWindow *win)
{
  gint64 deadline = g_get_monotonic_time () + 120 * G_USEC_PER_SEC;
  while (pl_window_is_busy (win))
    {
      g_main_context_iteration (NULL, FALSE);
      if (g_get_monotonic_time () > deadline)
        g_error ("the window stayed busy for 120 s");
      g_usleep (1000);
    }
  for (int i = 0; i < 50; i++)
    g_main_context_iteration (NULL, FALSE);
}

static PlWindow *
open_window (const char *sample, const char *passes)
{
  PlWindow *win = pl_window_new (app);
  gtk_window_set_default_size (GTK_WINDOW (win), 1200, 800);
  gtk_window_present (GTK_WINDOW (win));
  const char *src = g_getenv ("PASSLAB_SOURCE_DIR");
  g_autofree char *path = g_build_filename (src ? src : ".", "data", "graphs", sample, NULL);
  g_autoptr (GFile) file = g_file_new_for_path (path);
  PlOpenRequest req = { .passes = passes, .step = -1, .select = NULL };
  pl_window_open (win, file, &req);
  wait_idle (win);
  g_assert_null (pl_window_get_error (win));
  return win;
}

static void
close_window (PlWindow *win)
{
  gtk_window_destroy (GTK_WINDOW (win));
  for (int i = 0; i < 20; i++)
    g_main_context_iteration (NULL, FALSE);
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
  REQUIRE_DISPLAY ();
  char *why = NULL;
  if (!pl_backend_available (PL_BACKEND_CPU, &why))
    {
      g_test_skip (why);
      g_free (why);
      return;
    }
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
  close_window (win);
}

/* The interpreter: kernels are ops, and there is no generated code. */
static void
test_reference (void)
{
  REQUIRE_DISPLAY ();
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
  close_window (win);
}

/* Refusals say why and keep what was shown. */
static void
test_refusals (void)
{
  REQUIRE_DISPLAY ();
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
  close_window (win);
}

static void
remove_tree (const char *path)
{
  g_autoptr (GDir) dir = g_dir_open (path, 0, NULL);
  const char *name;
  while (dir && (name = g_dir_read_name (dir)))
    {
      g_autofree char *child = g_build_filename (path, name, NULL);
      if (g_file_test (child, G_FILE_TEST_IS_DIR) && !g_file_test (child, G_FILE_TEST_IS_SYMLINK))
        remove_tree (child);
      else
        g_unlink (child);
    }
  g_rmdir (path);
}

int
main (int argc, char **argv)
{
  pl_test_ui_reexec_with_display (argc, argv);
  /* Keep the person's settings, recent files and kernel cache out of it. */
  tmp_dir = g_dir_make_tmp ("passlab-ui-run-XXXXXX", NULL);
  g_setenv ("XDG_CONFIG_HOME", tmp_dir, TRUE);
  g_setenv ("XDG_DATA_HOME", tmp_dir, TRUE);
  g_setenv ("XDG_CACHE_HOME", tmp_dir, TRUE);
  g_setenv ("GSETTINGS_BACKEND", "memory", TRUE);
  g_setenv ("GTK_A11Y", "none", FALSE);
  g_test_init (&argc, &argv, NULL);
  g_test_log_set_fatal_handler (pl_test_ui_ignore_bus_warning, NULL);
  have_display = gtk_init_check ();
  if (have_display)
    {
      app = pl_application_new ("test", G_APPLICATION_NON_UNIQUE);
      g_assert_true (g_application_register (G_APPLICATION (app), NULL, NULL));
    }

  g_test_add_func ("/Passlab/UI/Run/cpu", test_cpu);
  g_test_add_func ("/Passlab/UI/Run/reference", test_reference);
  g_test_add_func ("/Passlab/UI/Run/refusals", test_refusals);
  int status = g_test_run ();

  g_clear_object (&app);
  remove_tree (tmp_dir);
  g_free (tmp_dir);
  return status;
}
