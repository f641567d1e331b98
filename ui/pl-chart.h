/* pl-chart.h — small charts drawn with cairo: a horizontal bar chart
 * (labelled bars sorted longest first, e.g. kernel times); a line chart over
 * time with its peak marked and an optional limit line (e.g. memory in use
 * against a device budget); several step lines over one axis with their
 * peaks, limit lines and marks along the x axis (memory before and after a
 * pass); and spans on rows, a Gantt chart (kernels and copies over a run).
 * Setting one kind of data replaces whatever was shown. */
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

/* --- several step lines ---------------------------------------------------------------- */

typedef enum {
  PL_CHART_COLOR_ACCENT,   /* blue */
  PL_CHART_COLOR_MUTED,    /* grey */
  PL_CHART_COLOR_ORANGE,
  PL_CHART_COLOR_GREEN,
  PL_CHART_COLOR_PURPLE,
  PL_CHART_COLOR_RED,
} PlChartColor;

/* Starts a chart of step lines: x_title names the x axis; y values are
 * bytes shown in MiB when bytes, else numbers with y_unit. */
void       pl_chart_set_lines    (PlChart *self, const char *x_title, gboolean bytes, const char *y_unit);
/* Adds a line: n points, xs ascending; ys[i] holds from xs[i] to xs[i + 1]
 * (the last to x_end). Its peak is marked and labelled; filled under when
 * fill. point_labels (NULL, or n strings) name points in tooltips. Returns
 * the series index that "point-activated" gives back. */
int        pl_chart_add_series   (PlChart *self, const char *name, const double *xs, const double *ys, int n,
                                  double x_end, PlChartColor color, gboolean fill, const char *const *point_labels);
/* After pl_chart_set_lines: a logarithmic y axis (lines spanning decades,
 * e.g. best time so far against trials; only positive y are drawn above the
 * axis), and each line's lowest point marked and labelled "best" instead of
 * its peak when mark_lowest. */
void       pl_chart_set_log_y    (PlChart *self, gboolean log_y, gboolean mark_lowest);
/* A dashed horizontal line at y (a budget), labelled. */
void       pl_chart_add_y_line   (PlChart *self, double y, const char *label);
/* A triangle under the x axis at x (pointing up or down); legend names its
 * kind once in the legend, label is its tooltip. */
void       pl_chart_add_x_mark   (PlChart *self, double x, PlChartColor color, gboolean up, const char *legend,
                                  const char *label);
int        pl_chart_get_n_series (PlChart *self);
int        pl_chart_get_series_n_points (PlChart *self, int series);
/* The largest y of a series and its point index (-1 when none). */
double     pl_chart_get_series_peak (PlChart *self, int series, int *index);
/* Where point i of a series is drawn, in widget coordinates (its left end):
 * false when it is not drawn (no size yet, out of range). */
gboolean   pl_chart_get_point_position (PlChart *self, int series, int i, double *x, double *y);
/* The point under widget coordinates (x, y): the series drawn nearest in y
 * at that x, and its point holding there. What a click activates. */
gboolean   pl_chart_pick_point   (PlChart *self, double x, double y, int *series, int *i);
/* Marks point i of a series as selected (-1: none); does not emit. */
void       pl_chart_select_point (PlChart *self, int series, int i);

/* --- spans on rows (a Gantt chart) ------------------------------------------------------- */

/* Starts a chart of n_rows rows titled row_titles; the x axis in x_unit. */
void       pl_chart_set_spans    (PlChart *self, const char *const *row_titles, int n_rows, const char *x_unit);
/* A span [start, end] on a row, drawn at least 2 px wide; hatched for
 * waiting; label is its tooltip; id is what "span-activated" gives back
 * (several spans may share one). */
void       pl_chart_add_span     (PlChart *self, int row, double start, double end, PlChartColor color,
                                  gboolean hatched, const char *label, int id);
/* A legend entry (spans and lines name their own colours through this). */
void       pl_chart_add_legend   (PlChart *self, PlChartColor color, gboolean hatched, const char *text);
/* Spans on a row (-1: on all rows). */
int        pl_chart_get_n_spans  (PlChart *self, int row);
/* Outlines the spans with this id (-1: none); does not emit. */
void       pl_chart_select_span  (PlChart *self, int id);
/* Brings the spans with this id into view: zooms in around them when they
 * are drawn narrower than 1/40 of the width, or lie outside the view. */
void       pl_chart_reveal_span  (PlChart *self, int id);
/* The x range shown (scrolling zooms around the pointer, shift-scrolling
 * pans, a double click shows everything); x0 >= x1 shows everything. */
void       pl_chart_set_x_view   (PlChart *self, double x0, double x1);

/* Signals: "bar-activated" (int i): a bar was clicked.
 * "point-activated" (int series, int i): a point of a line was clicked.
 * "span-activated" (int id): a span was clicked. */

G_END_DECLS
