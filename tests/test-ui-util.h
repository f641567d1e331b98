/* test-ui-util.h — helpers shared by the UI test programs. */
#pragma once

#include <glib.h>

#include "pl-application.h"
#include "pl-window.h"

/* Without a display (or a session bus), runs the test program again under
 * `xvfb-run -a` (and `dbus-run-session`) when they are installed; returns
 * when it cannot (the tests then skip). */
void     pl_test_ui_reexec_with_display (int argc, char **argv);
/* A g_test_log_set_fatal_handler that lets GTK's session-bus warning pass. */
gboolean pl_test_ui_ignore_bus_warning  (const char *domain, GLogLevelFlags level, const char *message,
                                         gpointer data);

/* What pl_test_ui_init points at the temporary folder besides the
 * XDG config and data homes. */
typedef enum
{
  PL_TEST_UI_KEEP_CACHE = 0,      /* XDG_CACHE_HOME left as it is */
  PL_TEST_UI_OWN_CACHE  = 1 << 0, /* XDG_CACHE_HOME too (the kernel cache) */
} PlTestUiFlags;

/* The prologue of a UI test's main(): re-runs itself under a display
 * (pl_test_ui_reexec_with_display), keeps the person's settings, recent
 * files and caches out of it by pointing the XDG homes at a new temporary
 * folder made from tmp_template (see pl_test_ui_tmp_dir), uses the memory
 * GSettings backend, calls g_test_init and, when GTK finds a display,
 * registers an application. Returns that application (owned by these
 * helpers), or NULL without a display. */
PlApplication *pl_test_ui_init (int *argc, char ***argv, const char *tmp_template, PlTestUiFlags flags);
/* The temporary folder pl_test_ui_init made; removed by pl_test_ui_finish. */
const char    *pl_test_ui_tmp_dir (void);
/* The epilogue of main(): drops the application, removes the temporary
 * folder and everything in it; returns status. */
int            pl_test_ui_finish (int status);

/* Skips the current case (and returns from it) without a display. */
#define PL_TEST_UI_REQUIRE_DISPLAY()              \
  G_STMT_START                                    \
  {                                               \
    if (!pl_test_ui_have_display ())              \
      {                                           \
        g_test_skip ("no display");               \
        return;                                   \
      }                                           \
  }                                               \
  G_STMT_END
gboolean       pl_test_ui_have_display (void);

/* Skips the current case (and returns from it) when backend cannot run
 * here, saying why (pl_backend_available, from kernels/runtime.h). */
#define PL_TEST_UI_REQUIRE_BACKEND(backend)       \
  G_STMT_START                                    \
  {                                               \
    char *why_ = NULL;                            \
    if (!pl_backend_available ((backend), &why_)) \
      {                                           \
        g_test_skip (why_);                       \
        g_free (why_);                            \
        return;                                   \
      }                                           \
  }                                               \
  G_STMT_END

/* A sample of data/graphs under $PASSLAB_SOURCE_DIR (or "."). Free it. */
char          *pl_test_ui_sample_path (const char *name);
/* A new 1200×800 window of app, presented, asked to open path with req
 * (which may be NULL); returns at once, without waiting for it. */
PlWindow      *pl_test_ui_open_window (PlApplication *app, const char *path, const PlOpenRequest *req);
/* Spins the main loop until win is idle (aborts after 120 s), then lets
 * the views settle (allocation, a frame). */
void           pl_test_ui_wait_idle (PlWindow *win);
/* Every visible label's text under widget, one per line. Free it. */
char          *pl_test_ui_widget_text (gpointer widget);
/* Destroys win and spins the main loop a little. */
void           pl_test_ui_close_window (PlWindow *win);
