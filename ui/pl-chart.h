/* pl-chart.h — two small charts drawn with cairo in a GtkDrawingArea: a
 * horizontal bar chart (labelled bars sorted longest first, e.g. kernel
 * times) and a line chart over time with its peak marked and an optional
 * limit line (e.g. memory in use against a device budget). */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define PL_TYPE_CHART (pl_chart_get_type ())
G_DECLARE_FINAL_TYPE (PlChart, pl_chart, PL, CHART, GtkWidget)

GtkWidget *pl_chart_new          (void);
/* Bars: labels[i] with values[i] (unit appended to the value labels, e.g.
 * "ms"). Drawn sorted by value, largest first; indices given back by
 * "bar-activated" and pl_chart_select_bar are the caller's i. */
void       pl_chart_set_bars     (PlChart *self, const char *const *labels, const double *values, int n,
                                  const char *unit);
/* A line: (xs[i], ys[i]) in x order; the peak is marked; limit > 0 draws a
 * dashed horizontal line labelled limit_label. ys are formatted as bytes
 * when bytes is true. */
void       pl_chart_set_line     (PlChart *self, const double *xs, const double *ys, int n, const char *x_unit,
                                  gboolean bytes, double limit, const char *limit_label);
void       pl_chart_clear        (PlChart *self);
/* Bars or points shown. */
int        pl_chart_get_n_points (PlChart *self);
/* Highlights bar i (-1: none); does not emit. */
void       pl_chart_select_bar   (PlChart *self, int i);
int        pl_chart_get_selected_bar (PlChart *self);
/* The line's peak (0 when no line). */
double     pl_chart_get_peak     (PlChart *self);

/* Signals: "bar-activated" (int i): a bar was clicked. */

G_END_DECLS
