/* pl-timeline.h — the pass timeline: one row per step of a PlHistory with
 * its statistics (nodes, kernels, bytes moved, peak memory, time, numerical
 * check), unchanged steps greyed and optionally hidden. */
#pragma once

#include <gtk/gtk.h>

#include "pass-manager.h"

G_BEGIN_DECLS

#define PL_TYPE_TIMELINE (pl_timeline_get_type ())
G_DECLARE_FINAL_TYPE (PlTimeline, pl_timeline, PL, TIMELINE, GtkWidget)

GtkWidget *pl_timeline_new               (void);
/* The history to show (not owned: it must outlive the next call or the
 * widget). NULL empties the list. */
void       pl_timeline_set_history       (PlTimeline *self, const PlHistory *history);
/* Highlights step i's row (no "step-selected" emission); -1 clears. */
void       pl_timeline_set_selected_step (PlTimeline *self, int i);
int        pl_timeline_get_selected_step (PlTimeline *self);
/* "hide-unchanged" property: steps that changed nothing are left out. */
void       pl_timeline_set_hide_unchanged (PlTimeline *self, gboolean hide);
gboolean   pl_timeline_get_hide_unchanged (PlTimeline *self);
/* Rows shown, and the step index of row r. */
int        pl_timeline_get_n_rows        (PlTimeline *self);
int        pl_timeline_get_row_step      (PlTimeline *self, int row);
/* The nearest shown step after / before step i; -1 when none. */
int        pl_timeline_next_step         (PlTimeline *self, int i);
int        pl_timeline_prev_step         (PlTimeline *self, int i);

/* Signal "step-selected" (int step): a person picked a row. */

G_END_DECLS
