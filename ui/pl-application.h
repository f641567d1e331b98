/* pl-application.h — the passlab GtkApplication: command-line options,
 * opening files into windows, app-wide actions and the keyboard shortcuts
 * of every action, and the headless screenshot mode (`--screenshot`) that
 * tests and the documentation use. */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define PL_APPLICATION_ID "org.passlab.Passlab"

#define PL_TYPE_APPLICATION (pl_application_get_type ())
G_DECLARE_FINAL_TYPE (PlApplication, pl_application, PL, APPLICATION, GtkApplication)

/* flags are added to G_APPLICATION_HANDLES_OPEN (tests pass NON_UNIQUE). */
PlApplication *pl_application_new             (const char *version, GApplicationFlags flags);
const char    *pl_application_get_version     (PlApplication *self);
/* Non-zero when a --screenshot run failed (bad file, bad option, unknown node). */
int            pl_application_get_exit_status (PlApplication *self);

G_END_DECLS
