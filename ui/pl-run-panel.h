/* pl-run-panel.h — the run panel under the canvas: runs the window's
 * current step on a backend (reference / cpu / cuda) in a worker thread with
 * random inputs, then shows the per-kernel timings as a table and a bar
 * chart (and as annotations on the canvas), the memory in use over the run
 * as a chart, a timeline of the run's launches (compute and swap copies
 * on two rows, waits hatched), and the generated code of the selected
 * kernel. Selecting a kernel (row, bar or span) selects and centres its
 * node on the canvas, and selecting a node on the canvas selects its
 * kernel. */
#pragma once

#include <gtk/gtk.h>

#include "pl-chart.h"
#include "pl-window.h"
#include "runtime.h"

G_BEGIN_DECLS

#define PL_TYPE_RUN_PANEL (pl_run_panel_get_type ())
G_DECLARE_FINAL_TYPE (PlRunPanel, pl_run_panel, PL, RUN_PANEL, GtkBox)

/* The panel of window (not owned: the window owns the panel). */
GtkWidget         *pl_run_panel_new            (PlWindow *window);
/* The run panel of window (NULL if it has none). */
PlRunPanel        *pl_run_panel_get_for_window (PlWindow *window);
void               pl_run_panel_set_backend    (PlRunPanel *self, PlBackend backend);
PlBackend          pl_run_panel_get_backend    (PlRunPanel *self);
void               pl_run_panel_set_repeats    (PlRunPanel *self, int repeats);
/* Starts a run of the window's current step; false (and the reason shown
 * in the panel and in *error) when there is no graph, the backend is not
 * available here or a run is under way. "run-finished" tells the end. */
gboolean           pl_run_panel_run            (PlRunPanel *self, GError **error);
/* Runs and spins the main loop until the run ended (tests, screenshots);
 * false with the run's error. */
gboolean           pl_run_panel_run_sync       (PlRunPanel *self, GError **error);
gboolean           pl_run_panel_is_running     (PlRunPanel *self);
/* The last run's report (NULL before one succeeded) and error (NULL if none). */
const PlRunReport *pl_run_panel_get_report     (PlRunPanel *self);
const char        *pl_run_panel_get_error      (PlRunPanel *self);
/* The layout pass's cost model for the last run's kernel i (report order):
 * a conv's or a layout transform's predicted time, as `passlab-cli exec
 * --predicted` (calibrate.h); NAN for other kernels, on the reference
 * backend and on the CUDA emulator. Shown in the table's Predicted column,
 * their sum against the measured one in the status line. */
double             pl_run_panel_get_predicted_ms (PlRunPanel *self, int kernel);
/* The last run's frames that the window drew while its kernels were timed
 * (pl-quiet.h; reported in the status line when any), and how long the run
 * waited for the window to be still, ms; -1 and 0 before a run. */
int                pl_run_panel_get_frames_while_timed (PlRunPanel *self);
double             pl_run_panel_get_quiet_wait_ms      (PlRunPanel *self);
/* Kernel rows shown in the table. */
int                pl_run_panel_get_n_rows     (PlRunPanel *self);
/* Selects kernel i (report order): row, bar, code view and canvas node. */
void               pl_run_panel_select_kernel  (PlRunPanel *self, int i);
/* The kernel that runs the node selected on the canvas (a node inside a
 * fusion: the fusion's kernel), or -1. */
int                pl_run_panel_kernel_of_selection (PlRunPanel *self);
int                pl_run_panel_get_selected_kernel (PlRunPanel *self);
/* The code view's text now (g_free it). */
char              *pl_run_panel_get_code       (PlRunPanel *self);
/* The status line now: the last run's summary, or why it failed (g_free it). */
char              *pl_run_panel_get_summary    (PlRunPanel *self);
PlChart           *pl_run_panel_get_time_chart (PlRunPanel *self);
PlChart           *pl_run_panel_get_memory_chart (PlRunPanel *self);
/* The timeline: row 0 compute launches (and waits), row 1 swap copies; span ids are kernel indices. */
PlChart           *pl_run_panel_get_timeline_chart (PlRunPanel *self);

/* Signals: "run-finished" (const char *error or NULL). */

G_END_DECLS
