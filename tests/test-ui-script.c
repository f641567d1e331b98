/* test-ui-script.c — the workbench's script panel: a Lua pass run from the
 * editor lands in the timeline with the console showing the script's
 * output; an error highlights its line and leaves the graph alone; Stop
 * interrupts an infinite loop; the editor is autosaved and reloaded. Needs a
 * display (re-runs itself under xvfb-run); with none every case is skipped. */
#define G_LOG_DOMAIN "passlab"

#include <errno.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <gtk/gtk.h>

#include "pl-application.h"
#include "pl-script-panel.h"
#include "pl-window-private.h"
#include "test-ui-util.h"

static PlApplication *app;

/* --- helpers ----------------------------------------------------------------------------- */

static void
spin (int ms)
{
  gint64 until = g_get_monotonic_time () + ms * 1000;
  while (g_get_monotonic_time () < until)
    {
      g_main_context_iteration (NULL, FALSE);
      g_usleep (1000);
    }
}

static void
on_finished (PlScriptPanel *panel, gboolean ok, int *result)
{
  *result = ok ? 1 : 0;
}

/* Runs the panel's script and waits for "finished"; returns whether it succeeded. */
static gboolean
run_script (PlWindow *win, PlScriptPanel *panel, const char *code)
{
  pl_script_panel_set_text (panel, code);
  int result = -1;
  gulong id = g_signal_connect (panel, "finished", G_CALLBACK (on_finished), &result);
  g_assert_true (pl_script_panel_run (panel));
  g_assert_true (pl_script_panel_is_running (panel));
  gint64 deadline = g_get_monotonic_time () + 120 * G_USEC_PER_SEC;
  while (result < 0)
    {
      g_main_context_iteration (NULL, FALSE);
      if (g_get_monotonic_time () > deadline)
        g_error ("the script ran for 120 s");
      g_usleep (1000);
    }
  g_signal_handler_disconnect (panel, id);
  g_assert_false (pl_script_panel_is_running (panel));
  pl_test_ui_wait_idle (win);
  return result == 1;
}

static PlWindow *
open_window (const char *sample)
{
  g_autofree char *path = pl_test_ui_sample_path (sample);
  PlWindow *win = pl_test_ui_open_window (app, path, NULL);
  pl_test_ui_wait_idle (win);
  g_assert_true (pl_window_has_graph (win));
  return win;
}

/* --- tests ----------------------------------------------------------------------------- */

/* A pass written in Lua: puts an Identity in front of every graph output —
 * one node more per output, same values, so the numerical check passes. */
static const char lua_pass_script[] =
  "local passlab = require \"passlab\"\n"
  "passlab.register_pass {\n"
  "  name = \"wrap-outputs\",\n"
  "  description = \"an Identity in front of every output\",\n"
  "  run = function (g, params)\n"
  "    local outs = g:outputs ()\n"
  "    for i, v in ipairs (outs) do\n"
  "      local n = g:add_node { op = \"Identity\", inputs = { v } }\n"
  "      g:set_output (i, n.outputs[1])\n"
  "    end\n"
  "    return #outs > 0, string.format (\"%d outputs wrapped\", #outs)\n"
  "  end,\n"
  "}\n"
  "assert (graph, \"no graph\")\n"
  "local h = passlab.run (graph, { \"simplify\", \"wrap-outputs\" }, { check = true })\n"
  "assert (not h.error, h.error)\n"
  "print (string.format (\"input nodes %d\", h[0].stats.nodes))\n"
  "print (h[2].report)\n";

static void
test_lua_pass_in_timeline (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PlWindow *win = open_window ("softmax.graph");
  PlScriptPanel *panel = PL_SCRIPT_PANEL (pl_window_get_script_panel (win));
  const PlHistory *before = pl_window_get_history (win);
  g_assert_cmpint (pl_history_n_steps (before), ==, 1);
  int input_nodes = pl_history_step (before, 0)->stats.nodes;
  g_assert_cmpint (input_nodes, >, 0);

  g_assert_true (run_script (win, panel, lua_pass_script));

  const PlHistory *h = pl_window_get_history (win);
  g_assert_cmpint (pl_history_n_steps (h), ==, 3);
  g_assert_cmpint (pl_timeline_get_n_rows (pl_window_get_timeline (win)), ==, 3);
  g_assert_cmpstr (pl_history_step (h, 1)->pass_name, ==, "simplify");
  const PlStep *s = pl_history_step (h, 2);
  g_assert_cmpstr (s->pass_name, ==, "wrap-outputs");
  g_assert_true (s->changed);
  g_assert_true (s->checked);
  g_assert_false (s->check_failed);
  g_assert_cmpint (pl_window_get_step (win), ==, 2);
  g_assert_cmpint (pl_timeline_get_selected_step (pl_window_get_timeline (win)), ==, 2);
  /* One Identity more per output. */
  int n_outputs = (int) s->graph->outputs->len;
  g_assert_cmpint (n_outputs, >, 0);
  g_assert_cmpint (s->stats.nodes, ==, pl_history_step (h, 1)->stats.nodes + n_outputs);
  /* The file stays the one that was open. */
  g_autofree char *name = g_file_get_basename (pl_window_get_file (win));
  g_assert_cmpstr (name, ==, "softmax.graph");

  g_autofree char *out = pl_script_panel_get_output (panel);
  g_autofree char *expect = g_strdup_printf ("input nodes %d\n", input_nodes);
  g_assert_nonnull (strstr (out, expect));
  g_autofree char *wrapped = g_strdup_printf ("%d outputs wrapped\n", n_outputs);
  g_assert_nonnull (strstr (out, wrapped));
  g_assert_nonnull (strstr (out, "Done."));
  g_assert_cmpint (pl_script_panel_get_error_line (panel), ==, -1);
  pl_test_ui_close_window (win);
}

static void
test_error_line (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PlWindow *win = open_window ("softmax.graph");
  PlScriptPanel *panel = PL_SCRIPT_PANEL (pl_window_get_script_panel (win));
  const PlHistory *before = pl_window_get_history (win);

  g_assert_false (run_script (win, panel, "local x = 1\nlocal y = nil\nprint (\"before\")\nprint (y.z)\nprint (\"after\")\n"));
  g_assert_cmpint (pl_script_panel_get_error_line (panel), ==, 4);
  g_autofree char *out = pl_script_panel_get_output (panel);
  g_assert_nonnull (strstr (out, "before\n"));
  g_assert_null (strstr (out, "after\n"));
  g_assert_nonnull (strstr (out, "scratch.lua:4:"));
  g_assert_nonnull (strstr (out, "stack traceback"));
  /* The graph and its history are untouched. */
  g_assert_true (pl_window_get_history (win) == before);
  g_assert_cmpint (pl_history_n_steps (before), ==, 1);
  g_assert_true (pl_window_has_graph (win));

  /* A syntax error points at its line too; editing clears the mark. */
  g_assert_false (run_script (win, panel, "print (1)\n\nlocal = 3\n"));
  g_assert_cmpint (pl_script_panel_get_error_line (panel), ==, 3);
  pl_script_panel_set_text (panel, "print (2)\n");
  g_assert_cmpint (pl_script_panel_get_error_line (panel), ==, -1);
  pl_test_ui_close_window (win);
}

static void
test_stop_infinite_loop (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PlWindow *win = open_window ("softmax.graph");
  PlScriptPanel *panel = PL_SCRIPT_PANEL (pl_window_get_script_panel (win));
  const PlHistory *before = pl_window_get_history (win);

  pl_script_panel_set_text (panel, "print (\"spinning\")\nlocal i = 0\nwhile true do i = i + 1 end\n");
  int result = -1;
  gulong id = g_signal_connect (panel, "finished", G_CALLBACK (on_finished), &result);
  g_assert_true (pl_script_panel_run (panel));
  g_assert_false (pl_script_panel_run (panel));  /* one at a time */
  spin (300);
  g_assert_true (pl_script_panel_is_running (panel));
  g_assert_cmpint (result, ==, -1);
  pl_script_panel_stop (panel);
  gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (result < 0 && g_get_monotonic_time () < deadline)
    {
      g_main_context_iteration (NULL, FALSE);
      g_usleep (1000);
    }
  g_signal_handler_disconnect (panel, id);
  g_assert_cmpint (result, ==, 0);
  g_assert_false (pl_script_panel_is_running (panel));
  g_autofree char *out = pl_script_panel_get_output (panel);
  g_assert_nonnull (strstr (out, "spinning\n"));
  if (!strstr (out, "Stopped."))
    g_printerr ("console: %s\n", out);
  g_assert_nonnull (strstr (out, "Stopped."));
  g_assert_cmpint (pl_script_panel_get_error_line (panel), ==, -1);
  g_assert_true (pl_window_get_history (win) == before);

  /* The panel runs again after a stop. */
  g_assert_true (run_script (win, panel, "print (\"again\")\n"));
  g_autofree char *out2 = pl_script_panel_get_output (panel);
  g_assert_nonnull (strstr (out2, "again\n"));
  pl_test_ui_close_window (win);
}

static void
test_autosave_and_files (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  g_autofree char *scratch = pl_script_panel_get_scratch_path ();
  PlWindow *win = pl_window_new (app);
  PlScriptPanel *panel = PL_SCRIPT_PANEL (pl_window_get_script_panel (win));
  pl_script_panel_set_text (panel, "print (\"kept across sessions\")\n");
  /* Closing the window writes the scratch copy. */
  pl_test_ui_close_window (win);
  g_autofree char *saved = NULL;
  g_assert_true (g_file_get_contents (scratch, &saved, NULL, NULL));
  g_assert_cmpstr (saved, ==, "print (\"kept across sessions\")\n");

  /* A new window starts from it. */
  win = pl_window_new (app);
  panel = PL_SCRIPT_PANEL (pl_window_get_script_panel (win));
  g_autofree char *text = pl_script_panel_get_text (panel);
  g_assert_cmpstr (text, ==, saved);

  /* The idle autosave. */
  pl_script_panel_set_text (panel, "-- edited\n");
  spin (3000);
  g_clear_pointer (&saved, g_free);
  g_assert_true (g_file_get_contents (scratch, &saved, NULL, NULL));
  g_assert_cmpstr (saved, ==, "-- edited\n");

  /* Save to a file, and open one: the unsaved edits it replaces are kept. */
  g_autofree char *path = g_build_filename (pl_test_ui_tmp_dir (), "mine.lua", NULL);
  g_autoptr (GFile) file = g_file_new_for_path (path);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_script_panel_save_file (panel, file, &error));
  g_assert_no_error (error);
  g_clear_pointer (&saved, g_free);
  g_assert_true (g_file_get_contents (path, &saved, NULL, NULL));
  g_assert_cmpstr (saved, ==, "-- edited\n");
  pl_script_panel_set_text (panel, "-- not saved anywhere\n");
  g_autofree char *other = g_build_filename (pl_test_ui_tmp_dir (), "other.lua", NULL);
  g_assert_true (g_file_set_contents (other, "print (3)\n", -1, NULL));
  g_autoptr (GFile) other_file = g_file_new_for_path (other);
  g_assert_true (pl_script_panel_load_file (panel, other_file, &error));
  g_autofree char *dir = g_path_get_dirname (scratch);
  g_autofree char *backup = g_build_filename (dir, "scratch-previous.lua", NULL);
  g_clear_pointer (&saved, g_free);
  g_assert_true (g_file_get_contents (backup, &saved, NULL, NULL));
  g_assert_cmpstr (saved, ==, "-- not saved anywhere\n");
  g_assert_true (g_file_equal (pl_script_panel_get_file (panel), other_file));
  /* A missing file is an error, and the editor keeps its text. */
  g_autoptr (GFile) missing = g_file_new_for_path ("/nonexistent/x.lua");
  g_assert_false (pl_script_panel_load_file (panel, missing, &error));
  g_assert_nonnull (error);
  g_clear_pointer (&text, g_free);
  text = pl_script_panel_get_text (panel);
  g_assert_cmpstr (text, ==, "print (3)\n");
  pl_test_ui_close_window (win);
}

/* `passlab --script S.lua --screenshot OUT.png`: runs the script, prints its
 * console, and renders its Lua pass's step; a failing script exits 1. */
static void
test_command_line (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  const char *build = g_getenv ("PASSLAB_BUILD_DIR");
  const char *src = g_getenv ("PASSLAB_SOURCE_DIR");
  if (!build)
    {
      g_test_skip ("PASSLAB_BUILD_DIR is not set");
      return;
    }
  g_autofree char *passlab = g_build_filename (build, "app", "passlab", NULL);
  g_autofree char *script = g_build_filename (src ? src : ".", "data", "pipelines", "fold_identities.lua", NULL);
  g_autofree char *png = g_build_filename (pl_test_ui_tmp_dir (), "lua-step.png", NULL);
  const char *argv[] = { passlab, "--script", script, "--screenshot", png, "--size", "1000x700", NULL };
  g_autofree char *out = NULL, *err = NULL;
  int status = -1;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error));
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_printerr ("%s", err);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_assert_nonnull (strstr (out, "3 identities folded"));
  g_autofree char *data = NULL;
  gsize len = 0;
  g_assert_true (g_file_get_contents (png, &data, &len, NULL));
  g_assert_cmpuint (len, >, 8);
  g_assert_true (memcmp (data, "\x89PNG", 4) == 0);

  g_autofree char *bad = g_build_filename (pl_test_ui_tmp_dir (), "bad.lua", NULL);
  g_assert_true (g_file_set_contents (bad, "print (1)\nerror (\"on purpose\")\n", -1, NULL));
  argv[2] = bad;
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error));
  g_assert_false (g_spawn_check_wait_status (status, NULL));
  g_assert_nonnull (strstr (err, "bad.lua:2: on purpose"));
}

/* --- main ------------------------------------------------------------------------------ */


int
main (int argc, char **argv)
{
  app = pl_test_ui_init (&argc, &argv, "passlab-ui-script-XXXXXX", PL_TEST_UI_KEEP_CACHE);

  g_test_add_func ("/Passlab/UI/Script/lua-pass-in-timeline", test_lua_pass_in_timeline);
  g_test_add_func ("/Passlab/UI/Script/error-line", test_error_line);
  g_test_add_func ("/Passlab/UI/Script/stop-infinite-loop", test_stop_infinite_loop);
  g_test_add_func ("/Passlab/UI/Script/autosave-and-files", test_autosave_and_files);
  g_test_add_func ("/Passlab/UI/Script/command-line", test_command_line);
  return pl_test_ui_finish (g_test_run ());
}
