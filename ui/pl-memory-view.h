/* pl-memory-view.h — the "Memory" page under the canvas: the planned device
 * memory in use over the schedule (core/schedule.h) of the step shown and,
 * overlaid, of the version before the latest `swap` pass up to it (else of
 * the loaded graph): "before" and "after", as the seed's memory profiles
 * (004, figures 11 and 12). The budget line (the swap pass's budget, else the
 * last run's device budget), each curve's peak, and the swap nodes along the
 * x axis are marked. Clicking a point lists the tensors live at that step
 * and selects its node on the canvas; selecting a node on the canvas selects
 * its step here. */
#pragma once

#include <gtk/gtk.h>

#include "pl-chart.h"
#include "pl-window.h"
#include "schedule.h"

G_BEGIN_DECLS

#define PL_TYPE_MEMORY_VIEW (pl_memory_view_get_type ())
G_DECLARE_FINAL_TYPE (PlMemoryView, pl_memory_view, PL, MEMORY_VIEW, GtkBox)

typedef enum {
  PL_MEMORY_BEFORE,   /* the version the curve is compared with */
  PL_MEMORY_AFTER,    /* the step shown */
} PlMemoryCurve;

/* The view of window (not owned: the window owns the view). */
GtkWidget     *pl_memory_view_new              (PlWindow *window);
/* The memory view of window (NULL if it has none). */
PlMemoryView  *pl_memory_view_get_for_window   (PlWindow *window);
/* Recomputes from the window's step now. While shown the view follows the
 * window by itself; hidden, it catches up when shown. */
void           pl_memory_view_refresh          (PlMemoryView *self);
/* Curves shown: 0 (nothing open), 1 (the loaded graph itself), 2. */
int            pl_memory_view_get_n_curves     (PlMemoryView *self);
/* A curve's profile and history step (NULL / -1 when not shown). */
const PlMemoryProfile *pl_memory_view_get_profile (PlMemoryView *self, PlMemoryCurve curve);
int            pl_memory_view_get_history_step (PlMemoryView *self, PlMemoryCurve curve);
/* The budget line in bytes (0: none). */
int64_t        pl_memory_view_get_budget       (PlMemoryView *self);
PlChart       *pl_memory_view_get_chart        (PlMemoryView *self);
/* The chart series that draws a curve (-1 when not shown). */
int            pl_memory_view_get_series       (PlMemoryView *self, PlMemoryCurve curve);
/* What clicking the curve's point at schedule step `step` does: lists the
 * tensors live then and selects the step's node on the canvas. */
gboolean       pl_memory_view_select_point     (PlMemoryView *self, PlMemoryCurve curve, int step);
/* The tensors listed, largest first, and row i's value (it belongs to the
 * curve's graph in the window's history). */
int            pl_memory_view_get_n_live       (PlMemoryView *self);
const PlValue *pl_memory_view_get_live         (PlMemoryView *self, int i);

G_END_DECLS
