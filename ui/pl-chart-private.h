/* pl-chart-private.h — what the files of PlChart share: the widget's struct
 * and the data each kind of chart keeps, the plot rectangle that drawing,
 * picking and tooltips all compute from the widget size, and the drawing
 * helpers every kind uses. Only the pl-chart*.c files include it.
 *
 *   pl-chart.c         the widget: data reset, snapshot and size per kind
 *   pl-chart-axes.c    value -> pixel, round ticks, number formats, limit lines
 *   pl-chart-labels.c  colours, text, labels that avoid each other, the legend
 *   pl-chart-bars.c    labelled bars, longest first
 *   pl-chart-line.c    one line with its peak and a limit
 *   pl-chart-series.c  several step lines, y lines and x marks
 *   pl-chart-spans.c   spans on rows (a Gantt chart), zoomable in x
 *   pl-chart-input.c   clicks, tooltips, scroll zoom: what each kind does */
#pragma once

#include "pl-chart.h"

G_BEGIN_DECLS

#define PAD 8.0
#define BAR_H 16.0
#define BAR_GAP 4.0
#define LEGEND_H 18.0
#define MARK_BAND 14.0          /* under the x axis of step lines: the x marks */
#define ROW_H 20.0              /* spans */
#define ROW_GAP 6.0
#define ROW_TITLE_W 96.0

typedef enum { CHART_NONE, CHART_BARS, CHART_LINE, CHART_SERIES, CHART_SPANS } ChartKind;

typedef struct {
  char         *name;
  double       *xs, *ys;
  int           n;
  double        x_end;
  PlChartColor  color;
  gboolean      fill;
  char        **labels;     /* NULL or n */
} Series;

typedef struct {
  double  y;
  char   *label;
} YLine;

typedef struct {
  double        x;
  PlChartColor  color;
  gboolean      up;
  char         *label;
} XMark;

typedef struct {
  int           row;
  double        start, end;
  PlChartColor  color;
  gboolean      hatched;
  char         *label;
  int           id;
} Span;

typedef enum { LEGEND_LINE, LEGEND_BOX, LEGEND_HATCH, LEGEND_UP, LEGEND_DOWN } LegendStyle;

typedef struct {
  PlChartColor  color;
  LegendStyle   style;
  char         *text;
} Legend;

/* The plot area of a line, step lines or spans, and the x and y ranges it
 * shows. */
typedef struct {
  double left, right, top, bottom;
  double x0, x1, ymax;
  double ymin;     /* log_y: the bottom of the axis (> 0) */
  gboolean log;
} Plot;

/* A rectangle in widget pixels: a label's, a span's. */
typedef struct {
  double x, y, w, h;
} Box;

struct _PlChart
{
  GtkWidget parent_instance;

  ChartKind kind;
  int       n;
  char    **labels;     /* bars */
  double   *xs;         /* line x; unused for bars */
  double   *ys;         /* bar values / line y */
  int      *order;      /* bars: drawing order (largest first) */
  char     *unit;
  gboolean  bytes;
  double    limit;
  char     *limit_label;
  int       selected;   /* caller's index, -1 none */

  /* step lines and spans */
  GArray   *series;     /* Series */
  GArray   *ylines;     /* YLine */
  GArray   *xmarks;     /* XMark */
  GArray   *spans;      /* Span */
  GArray   *legend;     /* Legend */
  char     *x_title;
  char    **rows;       /* span row titles */
  int       n_rows;
  int       sel_series, sel_point, sel_span;
  double    view_x0, view_x1;   /* spans: the x range shown; x0 >= x1: all */
  double    pointer_x;          /* last pointer position, for zooming around it */
  gboolean  log_y;              /* step lines: a logarithmic y axis */
  gboolean  mark_lowest;        /* step lines: mark each line's lowest point, not its peak */
};

enum { SIGNAL_BAR_ACTIVATED, SIGNAL_POINT_ACTIVATED, SIGNAL_SPAN_ACTIVATED, N_SIGNALS };
extern guint chart_signals[N_SIGNALS];

/* pl-chart.c: forgets every kind's data (the arrays stay, emptied). */
void     chart_reset           (PlChart *self);

/* --- pl-chart-axes.c ------------------------------------------------------------------------ */

double   chart_plot_px         (const Plot *p, double x);
double   chart_plot_py         (const Plot *p, double y);
/* A bar value or a line's y: bytes as sizes, else the number and unit. */
char    *chart_format_value    (PlChart *self, double v);
/* A peak, limit or tooltip value on step lines: MiB with two decimals,
 * fewer for big ones. */
char    *chart_format_y_label  (PlChart *self, double v);
/* Tick marks and labels along the bottom of p, labels centred on y. */
void     chart_draw_x_ticks    (PlChart *self, cairo_t *cr, PangoLayout *layout, const Plot *p, double y,
                                const char *unit);
/* The y axis of p with its grid lines and labels (linear or logarithmic). */
void     chart_draw_y_axis     (PlChart *self, cairo_t *cr, PangoLayout *layout, const Plot *p);
/* A dashed red line across p at value y (a limit, a budget) of this width;
 * returns its pixel y. */
double   chart_draw_limit_line (cairo_t *cr, const Plot *p, double y, double width);

/* --- pl-chart-labels.c ---------------------------------------------------------------------- */

/* The theme's text colour (the widget's CSS colour), at alpha. */
void     chart_set_source_fg   (GtkWidget *w, cairo_t *cr, double alpha);
void     chart_set_source_color (cairo_t *cr, PlChartColor c, double alpha);
/* text with its vertical centre at y and x at xalign of its width; at most
 * max_w wide (ellipsized in the middle; 0: any width). */
void     chart_draw_text       (cairo_t *cr, PangoLayout *layout, const char *text, double x, double y,
                                double max_w, double xalign);
/* Sets layout to text at its natural width and gives its size in pixels. */
void     chart_text_size       (PangoLayout *layout, const char *text, int *tw, int *th);
/* Draws text beside (ax, ay) inside p where it covers no box in placed, and
 * adds where it went. */
void     chart_draw_label_near (cairo_t *cr, PangoLayout *layout, GArray *placed, const Plot *p, const char *text,
                                double ax, double ay);
/* A filled dot of radius r: a peak, a lowest point. */
void     chart_draw_dot        (cairo_t *cr, double x, double y, double r);
void     chart_draw_triangle   (cairo_t *cr, double x, double y, double r, gboolean up);
void     chart_draw_hatch      (cairo_t *cr, double x, double y, double w, double h);
/* A box filled in color at alpha, hatched over in full color when hatched
 * (time spent waiting). */
void     chart_fill_box        (cairo_t *cr, PlChartColor color, double alpha, gboolean hatched, double x, double y,
                                double w, double h);
/* Adds a legend entry unless one with this text is there. */
void     chart_add_legend      (PlChart *self, PlChartColor color, LegendStyle style, const char *text);
/* The legend along the top, from x; its box goes into placed. */
void     chart_draw_legend     (PlChart *self, cairo_t *cr, PangoLayout *layout, double x, double w,
                                GArray *placed);

/* --- the kinds ------------------------------------------------------------------------------ */

/* pl-chart-bars.c */
void     chart_draw_bars       (PlChart *self, cairo_t *cr, PangoLayout *layout, double w);
/* The caller's index of the bar at widget y, or -1. */
int      chart_bar_at          (PlChart *self, double y);

/* pl-chart-line.c */
void     chart_draw_line       (PlChart *self, cairo_t *cr, PangoLayout *layout, double w, double h);

/* pl-chart-series.c */
void     chart_draw_series     (PlChart *self, cairo_t *cr, PangoLayout *layout, double w, double h);
/* The x mark under widget (x, y), or NULL. */
const XMark *chart_xmark_at    (PlChart *self, double x, double y);

/* pl-chart-spans.c */
void     chart_spans_plot      (PlChart *self, double w, Plot *p);
void     chart_draw_spans      (PlChart *self, cairo_t *cr, PangoLayout *layout, double w);
/* The span under widget (x, y), the one drawn last on top; NULL if none. */
const Span *chart_span_at      (PlChart *self, double x, double y);

/* pl-chart-input.c: the controllers and the tooltip. */
void     chart_input_init      (PlChart *self);

G_END_DECLS
