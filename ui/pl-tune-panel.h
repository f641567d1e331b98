/* pl-tune-panel.h — the "Tuning" page under the canvas: tunes the tile of
 * one convolution's generated direct kernel (kernels/tune.h) in a chosen
 * layout on a worker thread, the full tile space against the space the
 * red-blue pebble rule prunes, and shows best time so far against trials for
 * both searches, the best tiles, and how fast the pruned search got how
 * close to the full one. The convolution is picked from a list of the
 * current step's Conv nodes; selecting a Conv on the canvas picks it. */
#pragma once

#include <gtk/gtk.h>

#include "pl-chart.h"
#include "pl-window.h"
#include "tune.h"

G_BEGIN_DECLS

#define PL_TYPE_TUNE_PANEL (pl_tune_panel_get_type ())
G_DECLARE_FINAL_TYPE (PlTunePanel, pl_tune_panel, PL, TUNE_PANEL, GtkBox)

/* The panel of window (not owned: the window owns the panel). */
GtkWidget          *pl_tune_panel_new            (PlWindow *window);
/* The tuning panel of window (NULL if it has none). */
PlTunePanel        *pl_tune_panel_get_for_window (PlWindow *window);
/* Picks the Conv called name (or with this canvas key) in the current step;
 * false when there is none. Its layout becomes the one to tune in. */
gboolean            pl_tune_panel_set_conv       (PlTunePanel *self, const char *name_or_key);
/* The picked Conv's name, or NULL. */
const char         *pl_tune_panel_get_conv       (PlTunePanel *self);
/* Convs listed (the current step's, fusion bodies included). */
int                 pl_tune_panel_get_n_convs    (PlTunePanel *self);
void                pl_tune_panel_set_layout     (PlTunePanel *self, PlLayout layout);
PlLayout            pl_tune_panel_get_layout     (PlTunePanel *self);
/* Trials per search (the budget). */
void                pl_tune_panel_set_trials     (PlTunePanel *self, int trials);
/* Starts tuning the picked Conv; false (and the reason shown and in
 * *error) when there is none or a tune is under way. "tune-finished"
 * tells the end. */
gboolean            pl_tune_panel_run            (PlTunePanel *self, GError **error);
/* Runs and spins the main loop until the tune ended (tests, screenshots);
 * false with its error. */
gboolean            pl_tune_panel_run_sync       (PlTunePanel *self, GError **error);
/* Stops waiting for the tune under way: its result is dropped. The tuner
 * cannot be interrupted inside a search, so the worker finishes in the
 * background; a new tune can start once it has. */
void                pl_tune_panel_cancel         (PlTunePanel *self);
gboolean            pl_tune_panel_is_running     (PlTunePanel *self);
/* The last successful tune (NULL before one), and the last error. */
const PlTuneResult *pl_tune_panel_get_result     (PlTunePanel *self);
const char         *pl_tune_panel_get_error      (PlTunePanel *self);
PlChart            *pl_tune_panel_get_chart      (PlTunePanel *self);
/* "Pruned search reached 97% of the full search's best in 12 of 32 trials"
 * (NULL before a tune). */
const char         *pl_tune_panel_get_verdict    (PlTunePanel *self);

/* Signals: "tune-finished" (const char *error, NULL on success, "cancelled"). */

G_END_DECLS
