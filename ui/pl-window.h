/* pl-window.h — the workbench window: a graph, the history of a pass
 * pipeline applied to it, and the three views of it (canvas, timeline,
 * inspector). Loading, running a pipeline and laying out happen in a worker
 * thread; the window is "busy" meanwhile and shows progress. */
#pragma once

#include <gtk/gtk.h>

#include "pass-manager.h"
#include "pl-application.h"
#include "pl-graph-canvas.h"
#include "pl-inspector.h"
#include "pl-timeline.h"

G_BEGIN_DECLS

#define PL_TYPE_WINDOW (pl_window_get_type ())
G_DECLARE_FINAL_TYPE (PlWindow, pl_window, PL, WINDOW, GtkApplicationWindow)

/* What to do once a file is open: run a pipeline, show a step, select a
 * node. Every field may be NULL / -1. */
typedef struct {
  const char *passes;   /* "simplify,fuse-loops": run it with the numerical check */
  int         step;     /* step to show (0 the input, K after the K-th pass); -1: the last */
  const char *select;   /* node name (or a canvas key such as "n12") to select */
} PlOpenRequest;

/* The pipeline the window runs unless told otherwise. */
#define PL_WINDOW_DEFAULT_PIPELINE "simplify,decompose,reshape-sink,fuse-library,fuse-loops"

PlWindow      *pl_window_new            (PlApplication *app);
/* Loads file (.onnx or .graph) in the background. On failure the graph
 * already open stays and the error shows in the window's banner. */
void           pl_window_open           (PlWindow *self, GFile *file, const PlOpenRequest *request);
/* Runs spec (NULL: the pipeline entry's text) on the loaded graph. */
void           pl_window_run_pipeline   (PlWindow *self, const char *spec);
/* Whether loading, running or laying out is under way ("busy" property). */
gboolean       pl_window_is_busy        (PlWindow *self);
gboolean       pl_window_has_graph      (PlWindow *self);
GFile         *pl_window_get_file       (PlWindow *self);

/* The history shown (NULL before anything was loaded). */
const PlHistory *pl_window_get_history  (PlWindow *self);
int            pl_window_get_step       (PlWindow *self);
/* Shows step i (clamped); false when nothing is loaded or i is out of range. */
gboolean       pl_window_set_step       (PlWindow *self, int i);
/* Next / previous step the timeline shows (hidden unchanged steps are skipped). */
gboolean       pl_window_step_forward   (PlWindow *self);
gboolean       pl_window_step_back      (PlWindow *self);
/* Selects a node of the current step by name or canvas key and centres it. */
gboolean       pl_window_select         (PlWindow *self, const char *name_or_key);
/* Searches the canvas for the next match (name or op) and selects it. */
gboolean       pl_window_search_next    (PlWindow *self, const char *text);

/* The error banner's text, or NULL when none is shown. */
const char    *pl_window_get_error      (PlWindow *self);
void           pl_window_show_error     (PlWindow *self, const char *message);
const char    *pl_window_get_subtitle   (PlWindow *self);

/* Restores the size, panes and pipeline saved when a window was last
 * closed (g_get_user_config_dir()/passlab/state.ini), and saves them when
 * this one closes. Windows that never call it (tests, screenshots) neither
 * read nor write the file. */
void           pl_window_load_state     (PlWindow *self);
void           pl_window_save_state     (PlWindow *self);

/* Renders the window as it is now into a PNG of its current size. */
gboolean       pl_window_save_screenshot (PlWindow *self, const char *path, GError **error);

PlGraphCanvas *pl_window_get_canvas     (PlWindow *self);
PlTimeline    *pl_window_get_timeline   (PlWindow *self);
PlInspector   *pl_window_get_inspector  (PlWindow *self);
/* The recent-files menu of the header bar (graphs only, newest first). */
GMenuModel    *pl_window_get_recent_menu (PlWindow *self);

G_END_DECLS
