/* pl-graph-canvas.h — the graph canvas: draws a PlGraphLayout itself
 * (GtkSnapshot + cairo), shows one graph version over it (nodes of other
 * versions are not drawn, or ghosted when a diff says they were removed),
 * zooms, pans, selects, highlights, searches and exports. */
#pragma once

#include <gtk/gtk.h>

#include "graph-diff.h"
#include "pl-graph-layout.h"

G_BEGIN_DECLS

#define PL_TYPE_GRAPH_CANVAS (pl_graph_canvas_get_type ())
G_DECLARE_FINAL_TYPE (PlGraphCanvas, pl_graph_canvas, PL, GRAPH_CANVAS, GtkWidget)

GtkWidget  *pl_graph_canvas_new            (void);
/* The geometry to draw (a ref is taken). Keeps the view if keys persist. */
void        pl_graph_canvas_set_layout     (PlGraphCanvas *self, PlGraphLayout *layout);
/* The version to show, and optionally the diff against the previous
 * version (added / changed highlighted; removed drawn ghosted from prev). */
void        pl_graph_canvas_set_graph      (PlGraphCanvas *self, const PlGraph *graph,
                                            const PlGraph *prev, const PlGraphDiff *diff);
/* Selection by layout key; NULL clears. Emits "selection-changed". */
void        pl_graph_canvas_select         (PlGraphCanvas *self, const char *key);
const char *pl_graph_canvas_get_selected   (PlGraphCanvas *self);
/* Centres the view on a key (search hits, inspector links). */
void        pl_graph_canvas_center_on      (PlGraphCanvas *self, const char *key);
void        pl_graph_canvas_zoom_fit       (PlGraphCanvas *self);
void        pl_graph_canvas_zoom_by        (PlGraphCanvas *self, double factor);
/* Finds the next node whose name or op contains text (case-insensitive),
 * after the current selection; selects and centres it. False if none. */
bool        pl_graph_canvas_search_next    (PlGraphCanvas *self, const char *text);
/* Per-node annotation drawn under the title (e.g. a kernel time later). */
void        pl_graph_canvas_set_annotation (PlGraphCanvas *self, const char *key, const char *text);
/* Export: the whole graph, or only the visible part, as PNG or SVG (by extension). */
bool        pl_graph_canvas_export         (PlGraphCanvas *self, const char *path, bool whole_graph,
                                            GError **error);

/* Added: lays out the union of graphs[0..n) in a worker thread (the graphs
 * may be freed after the call) with a "laying out N nodes…" overlay and a
 * Cancel button; the result replaces the layout when it arrives (keeping the
 * view where keys persist). options may be NULL (defaults). A new call
 * cancels the one running. Emits "layout-finished". */
void        pl_graph_canvas_layout_async   (PlGraphCanvas *self, const PlGraph *const *graphs, int n,
                                            const PlLayoutOptions *options);
bool        pl_graph_canvas_is_busy        (PlGraphCanvas *self);
void        pl_graph_canvas_cancel_layout  (PlGraphCanvas *self);
PlGraphLayout *pl_graph_canvas_get_layout  (PlGraphCanvas *self);   /* borrowed, may be NULL */
/* Collapses or expands a fusion (by key) and lays out again; false if key
 * is no fusion or the canvas has no graphs of its own (set_layout only). */
bool        pl_graph_canvas_toggle_fusion  (PlGraphCanvas *self, const char *key);
/* The view: layout point at the widget's top-left, and pixels per point. */
void        pl_graph_canvas_get_view       (PlGraphCanvas *self, double *x, double *y, double *zoom);
void        pl_graph_canvas_pan_by         (PlGraphCanvas *self, double dx, double dy); /* widget pixels */
/* Microseconds the last snapshot spent drawing (for benchmarks). */
gint64      pl_graph_canvas_get_draw_time  (PlGraphCanvas *self);

/* Signals: "selection-changed" (const char *key or NULL),
 *          "node-activated" (const char *key): double click, e.g. to expand/collapse a fusion
 *            (the canvas itself toggles fusions it laid out; Return does the same),
 *          "layout-finished" (const char *error or NULL; "cancelled" when cancelled).
 *
 * Input: drag pans; a mouse wheel zooms at the pointer; a touchpad's
 * two-finger scroll pans and its pinch zooms; Ctrl+scroll always zooms;
 * + / - zoom, 0 fits, arrows pan, Return toggles the selected fusion,
 * Escape clears the selection. Hovering a node lights its inputs (orange)
 * and outputs (purple). */

G_END_DECLS
