/* test-ui-util.h — helpers shared by the UI test programs. */
#pragma once

#include <glib.h>

/* Without a display (or a session bus), runs the test program again under
 * `xvfb-run -a` (and `dbus-run-session`) when they are installed; returns
 * when it cannot (the tests then skip). */
void     pl_test_ui_reexec_with_display (int argc, char **argv);
/* A g_test_log_set_fatal_handler that lets GTK's session-bus warning pass. */
gboolean pl_test_ui_ignore_bus_warning  (const char *domain, GLogLevelFlags level, const char *message,
                                         gpointer data);
