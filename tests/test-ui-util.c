/* test-ui-util.c — what the UI test programs share: getting a display (and
 * a session bus) by running themselves again under xvfb-run, keeping GTK's
 * "no session bus" warning from being fatal, main()'s prologue and epilogue
 * (a temporary XDG home, the application), and opening, waiting on and
 * closing windows. */
#include "test-ui-util.h"
#include "test-util.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <gtk/gtk.h>

static PlApplication *test_app;
static char *test_tmp_dir;

/* Without a display (or a session bus), runs itself again under
 * `xvfb-run -a` (and `dbus-run-session`) when they are installed. */
void
pl_test_ui_reexec_with_display (int argc, char **argv)
{
  if (g_getenv ("PASSLAB_UNDER_XVFB"))
    return;
  gboolean need_display = !g_getenv ("DISPLAY") && !g_getenv ("WAYLAND_DISPLAY");
  g_autofree char *xvfb = need_display ? g_find_program_in_path ("xvfb-run") : NULL;
  g_autofree char *dbus = !g_getenv ("DBUS_SESSION_BUS_ADDRESS") ? g_find_program_in_path ("dbus-run-session") : NULL;
  if ((need_display && !xvfb) || (!xvfb && !dbus))
    return;
  g_autoptr (GPtrArray) args = g_ptr_array_new ();
  if (xvfb)
    {
      g_ptr_array_add (args, xvfb);
      g_ptr_array_add (args, "-a");
      g_ptr_array_add (args, "-s");
      g_ptr_array_add (args, "-screen 0 1920x1200x24");
    }
  if (dbus)
    {
      g_ptr_array_add (args, dbus);
      g_ptr_array_add (args, "--");
    }
  for (int i = 0; i < argc; i++)
    g_ptr_array_add (args, argv[i]);
  g_ptr_array_add (args, NULL);
  g_setenv ("PASSLAB_UNDER_XVFB", "1", TRUE);
  execv (args->pdata[0], (char **) args->pdata);
  g_printerr ("cannot run %s: %s\n", (char *) args->pdata[0], g_strerror (errno));
}

/* GTK warns when it finds no session bus; that is the test machine, not a bug. */
gboolean
pl_test_ui_ignore_bus_warning (const char *domain, GLogLevelFlags level, const char *message, gpointer data)
{
  return !strstr (message, "session bus");
}


PlApplication *
pl_test_ui_init (int *argc, char ***argv, const char *tmp_template, PlTestUiFlags flags)
{
  pl_test_ui_reexec_with_display (*argc, *argv);
  test_tmp_dir = g_dir_make_tmp (tmp_template, NULL);
  g_setenv ("XDG_CONFIG_HOME", test_tmp_dir, TRUE);
  g_setenv ("XDG_DATA_HOME", test_tmp_dir, TRUE);
  if (flags & PL_TEST_UI_OWN_CACHE)
    g_setenv ("XDG_CACHE_HOME", test_tmp_dir, TRUE);
  g_setenv ("GSETTINGS_BACKEND", "memory", TRUE);
  g_setenv ("GTK_A11Y", "none", FALSE);
  g_test_init (argc, argv, NULL);
  g_test_log_set_fatal_handler (pl_test_ui_ignore_bus_warning, NULL);
  if (gtk_init_check ())
    {
      test_app = pl_application_new ("test", G_APPLICATION_NON_UNIQUE);
      g_assert_true (g_application_register (G_APPLICATION (test_app), NULL, NULL));
    }
  return test_app;
}

const char *
pl_test_ui_tmp_dir (void)
{
  return test_tmp_dir;
}

gboolean
pl_test_ui_have_display (void)
{
  return test_app != NULL;
}

int
pl_test_ui_finish (int status)
{
  g_clear_object (&test_app);
  if (test_tmp_dir)
    pl_test_remove_tree (test_tmp_dir);
  g_clear_pointer (&test_tmp_dir, g_free);
  return status;
}

char *
pl_test_ui_sample_path (const char *name)
{
  const char *src = g_getenv ("PASSLAB_SOURCE_DIR");
  return g_build_filename (src ? src : ".", "data", "graphs", name, NULL);
}

PlWindow *
pl_test_ui_open_window (PlApplication *app, const char *path, const PlOpenRequest *req)
{
  PlWindow *win = pl_window_new (app);
  gtk_window_set_default_size (GTK_WINDOW (win), 1200, 800);
  gtk_window_present (GTK_WINDOW (win));
  g_autoptr (GFile) file = g_file_new_for_path (path);
  pl_window_open (win, file, req);
  return win;
}

void
pl_test_ui_wait_idle (PlWindow *win)
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

void
pl_test_ui_close_window (PlWindow *win)
{
  gtk_window_destroy (GTK_WINDOW (win));
  for (int i = 0; i < 20; i++)
    g_main_context_iteration (NULL, FALSE);
}

/* Appends the text of every visible label under widget, one per line. */
static void
collect_text (GtkWidget *widget, GString *out)
{
  if (!gtk_widget_get_visible (widget))
    return;
  if (GTK_IS_LABEL (widget))
    g_string_append_printf (out, "%s\n", gtk_label_get_text (GTK_LABEL (widget)));
  for (GtkWidget *c = gtk_widget_get_first_child (widget); c; c = gtk_widget_get_next_sibling (c))
    collect_text (c, out);
}

char *
pl_test_ui_widget_text (gpointer widget)
{
  GString *s = g_string_new (NULL);
  collect_text (GTK_WIDGET (widget), s);
  return g_string_free (s, FALSE);
}
