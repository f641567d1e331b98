/* test-ui-util.c — what the UI test programs share: getting a display (and
 * a session bus) by running themselves again under xvfb-run, and keeping
 * GTK's "no session bus" warning from being fatal. */
#include "test-ui-util.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

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

