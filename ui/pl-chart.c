/* pl-chart.c — the charts of pl-chart.h, drawn with cairo inside a
 * snapshot. The widget keeps its own copy of the data, so callers may free
 * theirs after setting it. Text colour follows the theme (the widget's CSS
 * colour); bars and the single line use one accent colour, step lines and
 * spans a small fixed palette.
 *
 * Step lines and spans share their machinery: one plot rectangle per kind
 * computed from the widget size (drawing, picking and tooltips all use it),
 * a legend along the top, and peak / limit labels placed where they do not
 * cover one another. */
#define G_LOG_DOMAIN "passlab"

#include "pl-chart.h"

#include <math.h>

#define PAD 8.0
#define BAR_H 16.0
#define BAR_GAP 4.0

typedef enum { CHART_NONE, CHART_BARS, CHART_LINE, CHART_SERIES, CHART_SPANS } ChartKind;

#define LEGEND_H 18.0
#define MARK_BAND 14.0          /* under the x axis of step lines: the x marks */
#define ROW_H 20.0              /* spans */
#define ROW_GAP 6.0
#define ROW_TITLE_W 96.0

static const double palette[][3] = {
  [PL_CHART_COLOR_ACCENT] = { 0.21, 0.52, 0.89 },
  [PL_CHART_COLOR_MUTED] = { 0.50, 0.50, 0.54 },
  [PL_CHART_COLOR_ORANGE] = { 0.90, 0.45, 0.10 },
  [PL_CHART_COLOR_GREEN] = { 0.15, 0.60, 0.38 },
  [PL_CHART_COLOR_PURPLE] = { 0.57, 0.25, 0.67 },
  [PL_CHART_COLOR_RED] = { 0.85, 0.15, 0.15 },
};

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

/* The plot area of step lines and spans, and the x and y ranges it shows. */
typedef struct {
  double left, right, top, bottom;
  double x0, x1, ymax;
  double ymin;     /* log_y: the bottom of the axis (> 0) */
  gboolean log;
} Plot;

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

G_DEFINE_FINAL_TYPE (PlChart, pl_chart, GTK_TYPE_WIDGET)

enum { SIGNAL_BAR_ACTIVATED, SIGNAL_POINT_ACTIVATED, SIGNAL_SPAN_ACTIVATED, N_SIGNALS };
static guint signals[N_SIGNALS];

static void
chart_reset (PlChart *self)
{
  g_clear_pointer (&self->labels, g_strfreev);
  g_clear_pointer (&self->xs, g_free);
  g_clear_pointer (&self->ys, g_free);
  g_clear_pointer (&self->order, g_free);
  g_clear_pointer (&self->unit, g_free);
  g_clear_pointer (&self->limit_label, g_free);
  g_clear_pointer (&self->x_title, g_free);
  g_clear_pointer (&self->rows, g_strfreev);
  g_array_set_size (self->series, 0);
  g_array_set_size (self->ylines, 0);
  g_array_set_size (self->xmarks, 0);
  g_array_set_size (self->spans, 0);
  g_array_set_size (self->legend, 0);
  self->kind = CHART_NONE;
  self->n = 0;
  self->n_rows = 0;
  self->limit = 0;
  self->selected = -1;
  self->sel_series = self->sel_point = self->sel_span = -1;
  self->view_x0 = self->view_x1 = 0;
  self->log_y = self->mark_lowest = FALSE;
}

static void
series_clear (gpointer data)
{
  Series *s = data;
  g_free (s->name);
  g_free (s->xs);
  g_free (s->ys);
  g_strfreev (s->labels);
}

/* YLine, XMark, Span and Legend: one string to free, at different offsets. */
static void yline_clear (gpointer data) { g_free (((YLine *) data)->label); }
static void xmark_clear (gpointer data) { g_free (((XMark *) data)->label); }
static void span_clear (gpointer data) { g_free (((Span *) data)->label); }
static void legend_clear (gpointer data) { g_free (((Legend *) data)->text); }

static char *
format_value (PlChart *self, double v)
{
  if (self->bytes)
    return g_format_size_full ((guint64) MAX (v, 0), G_FORMAT_SIZE_IEC_UNITS);
  if (v != 0 && fabs (v) < 0.01)
    return g_strdup_printf ("%.4f %s", v, self->unit ? self->unit : "");
  return g_strdup_printf ("%.3g %s", v, self->unit ? self->unit : "");
}

static void
set_source_fg (GtkWidget *w, cairo_t *cr, double alpha)
{
  GdkRGBA c;
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  gtk_style_context_get_color (gtk_widget_get_style_context (w), &c);
  G_GNUC_END_IGNORE_DEPRECATIONS
  cairo_set_source_rgba (cr, c.red, c.green, c.blue, c.alpha * alpha);
}

static void
draw_text (cairo_t *cr, PangoLayout *layout, const char *text, double x, double y, double max_w, double xalign)
{
  pango_layout_set_text (layout, text, -1);
  pango_layout_set_width (layout, max_w > 0 ? (int) (max_w * PANGO_SCALE) : -1);
  pango_layout_set_ellipsize (layout, max_w > 0 ? PANGO_ELLIPSIZE_MIDDLE : PANGO_ELLIPSIZE_NONE);
  int tw, th;
  pango_layout_get_pixel_size (layout, &tw, &th);
  cairo_move_to (cr, x - xalign * tw, y - th / 2.0);
  pango_cairo_show_layout (cr, layout);
}

static double
label_width (PlChart *self, double w)
{
  return MIN (160.0, w * 0.35);
}

/* Bars: label column, bar, value at the bar's end. */
static void
draw_bars (PlChart *self, cairo_t *cr, PangoLayout *layout, double w)
{
  double max = 0;
  for (int i = 0; i < self->n; i++)
    max = MAX (max, self->ys[i]);
  double lw = label_width (self, w);
  double x0 = PAD + lw + 6, bar_w = MAX (w - x0 - PAD - 70, 10);
  for (int k = 0; k < self->n; k++)
    {
      int i = self->order[k];
      double y = PAD + k * (BAR_H + BAR_GAP);
      double len = max > 0 ? bar_w * self->ys[i] / max : 0;
      if (i == self->selected)
        cairo_set_source_rgba (cr, 0.90, 0.45, 0.10, 1);
      else
        cairo_set_source_rgba (cr, 0.21, 0.52, 0.89, 0.85);
      cairo_rectangle (cr, x0, y, MAX (len, 1), BAR_H);
      cairo_fill (cr);
      set_source_fg (GTK_WIDGET (self), cr, 1);
      draw_text (cr, layout, self->labels[i], PAD + lw, y + BAR_H / 2, lw, 1.0);
      g_autofree char *v = format_value (self, self->ys[i]);
      draw_text (cr, layout, v, x0 + len + 4, y + BAR_H / 2, 0, 0.0);
    }
}

/* A line: axes, the filled curve, the peak marked, the limit dashed. */
static void
draw_line (PlChart *self, cairo_t *cr, PangoLayout *layout, double w, double h)
{
  double xmin = self->xs[0], xmax = self->xs[self->n - 1], ymax = 0;
  int peak = 0;
  for (int i = 0; i < self->n; i++)
    if (self->ys[i] > self->ys[peak])
      peak = i;
  ymax = MAX (self->ys[peak], self->limit) * 1.1;
  if (ymax <= 0)
    ymax = 1;
  if (xmax <= xmin)
    xmax = xmin + 1;
  double left = PAD + 64, right = w - PAD, top = PAD + 4, bottom = h - PAD - 16;
  if (right - left < 10 || bottom - top < 10)
    return;
#define PX(x) (left + ((x) - xmin) / (xmax - xmin) * (right - left))
#define PY(y) (bottom - (y) / ymax * (bottom - top))
  set_source_fg (GTK_WIDGET (self), cr, 0.3);
  cairo_set_line_width (cr, 1);
  cairo_move_to (cr, left, top);
  cairo_line_to (cr, left, bottom);
  cairo_line_to (cr, right, bottom);
  cairo_stroke (cr);
  set_source_fg (GTK_WIDGET (self), cr, 0.8);
  g_autofree char *ytop = format_value (self, ymax);
  draw_text (cr, layout, ytop, left - 4, top, 0, 1.0);
  draw_text (cr, layout, "0", left - 4, bottom, 0, 1.0);
  g_autofree char *xend = g_strdup_printf ("%.3g %s", xmax, self->unit ? self->unit : "");
  draw_text (cr, layout, xend, right, bottom + 9, 0, 1.0);

  /* The memory in use holds until the next sample: draw steps. */
  cairo_move_to (cr, PX (self->xs[0]), bottom);
  for (int i = 0; i < self->n; i++)
    {
      if (i > 0)
        cairo_line_to (cr, PX (self->xs[i]), PY (self->ys[i - 1]));
      cairo_line_to (cr, PX (self->xs[i]), PY (self->ys[i]));
    }
  cairo_line_to (cr, PX (self->xs[self->n - 1]), bottom);
  cairo_close_path (cr);
  cairo_set_source_rgba (cr, 0.21, 0.52, 0.89, 0.25);
  cairo_fill_preserve (cr);
  cairo_set_source_rgba (cr, 0.21, 0.52, 0.89, 1);
  cairo_set_line_width (cr, 1.5);
  cairo_stroke (cr);

  double px = PX (self->xs[peak]), py = PY (self->ys[peak]);
  cairo_set_source_rgba (cr, 0.90, 0.45, 0.10, 1);
  cairo_arc (cr, px, py, 4, 0, 2 * G_PI);
  cairo_fill (cr);
  g_autofree char *pv = format_value (self, self->ys[peak]);
  g_autofree char *pl = g_strdup_printf ("peak %s", pv);
  /* beside the marker, below it when it is at the top (the axis label is there) */
  draw_text (cr, layout, pl, MIN (px + 8, right - 90), py - 10 < top + 16 ? py + 10 : py - 10, 0, 0.0);

  if (self->limit > 0)
    {
      double ly = PY (self->limit);
      double dash[] = { 5, 4 };
      cairo_set_dash (cr, dash, 2, 0);
      cairo_set_source_rgba (cr, 0.85, 0.15, 0.15, 0.9);
      cairo_move_to (cr, left, ly);
      cairo_line_to (cr, right, ly);
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
      draw_text (cr, layout, self->limit_label ? self->limit_label : "limit", right, ly - 9, 0, 1.0);
    }
#undef PX
#undef PY
}

/* --- step lines and spans: shared pieces ------------------------------------------------ */

static void
set_source_color (cairo_t *cr, PlChartColor c, double alpha)
{
  cairo_set_source_rgba (cr, palette[c][0], palette[c][1], palette[c][2], alpha);
}

#define MIB 1048576.0

/* A round step of about range / target: 1, 2, 2.5 or 5 times a power of ten. */
static double
nice_step (double range, int target)
{
  if (range <= 0)
    return 1;
  double raw = range / target, mag = pow (10, floor (log10 (raw))), f = raw / mag;
  return (f < 1.5 ? 1 : f < 2.25 ? 2 : f < 3.5 ? 2.5 : f < 7.5 ? 5 : 10) * mag;
}

/* Decimals that show multiples of step exactly (at most 4). */
static int
step_decimals (double step)
{
  int d = 0;
  while (d < 4 && fabs (step * pow (10, d) - round (step * pow (10, d))) > 1e-6)
    d++;
  return d;
}

/* A y value as the axis shows it: bytes in MiB, else the number and unit. */
static char *
format_y (PlChart *self, double v, int decimals)
{
  if (self->bytes)
    return g_strdup_printf ("%.*f MiB", decimals, v / MIB);
  return g_strdup_printf ("%.*f%s%s", decimals, v, self->unit ? " " : "", self->unit ? self->unit : "");
}

/* A peak or limit value: MiB with two decimals, fewer for big ones. */
static char *
format_y_label (PlChart *self, double v)
{
  double a = fabs (self->bytes ? v / MIB : v);
  return format_y (self, v, a < 10 ? 2 : a < 100 ? 1 : 0);
}

typedef struct {
  double x, y, w, h;
} Box;

static gboolean
boxes_overlap (const Box *a, const Box *b)
{
  return a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h && b->y < a->y + a->h;
}

/* Draws text beside (ax, ay) where it covers no box in placed (right above,
 * right below, left above, left below; the first when all collide), inside
 * the plot, and remembers where it went. */
static void
draw_label_near (cairo_t *cr, PangoLayout *layout, GArray *placed, const Plot *p, const char *text, double ax,
                 double ay)
{
  pango_layout_set_text (layout, text, -1);
  pango_layout_set_width (layout, -1);
  pango_layout_set_ellipsize (layout, PANGO_ELLIPSIZE_NONE);
  int tw, th;
  pango_layout_get_pixel_size (layout, &tw, &th);
  const double dx[] = { 6, 6, -6 - tw, -6 - tw }, dy[] = { -4 - th, 4, -4 - th, 4 };
  Box chosen = { 0 };
  for (int k = 0; k < 4; k++)
    {
      Box b = { CLAMP (ax + dx[k], p->left + 2, p->right - tw - 2), CLAMP (ay + dy[k], p->top, p->bottom - th), tw,
                th };
      gboolean free = TRUE;
      for (guint i = 0; free && i < placed->len; i++)
        free = !boxes_overlap (&b, &g_array_index (placed, Box, i));
      if (k == 0 || free)
        chosen = b;
      if (free)
        break;
    }
  g_array_append_val (placed, chosen);
  cairo_move_to (cr, chosen.x, chosen.y);
  pango_cairo_show_layout (cr, layout);
}

static void
draw_triangle (cairo_t *cr, double x, double y, double r, gboolean up)
{
  double s = up ? 1 : -1;
  cairo_move_to (cr, x, y - s * r);
  cairo_line_to (cr, x + r, y + s * r * 0.8);
  cairo_line_to (cr, x - r, y + s * r * 0.8);
  cairo_close_path (cr);
  cairo_fill (cr);
}

static void
draw_hatch (cairo_t *cr, double x, double y, double w, double h)
{
  cairo_save (cr);
  cairo_rectangle (cr, x, y, w, h);
  cairo_clip (cr);
  cairo_set_line_width (cr, 1);
  for (double k = x - h; k < x + w; k += 4)
    {
      cairo_move_to (cr, k, y + h);
      cairo_line_to (cr, k + h, y);
    }
  cairo_stroke (cr);
  cairo_restore (cr);
}

static void
add_legend (PlChart *self, PlChartColor color, LegendStyle style, const char *text)
{
  for (guint i = 0; i < self->legend->len; i++)
    if (g_strcmp0 (g_array_index (self->legend, Legend, i).text, text) == 0)
      return;
  Legend l = { color, style, g_strdup (text) };
  g_array_append_val (self->legend, l);
}

/* The legend along the top, from x; its box goes into placed. */
static void
draw_legend (PlChart *self, cairo_t *cr, PangoLayout *layout, double x, double w, GArray *placed)
{
  double y = PAD + LEGEND_H / 2, x0 = x;
  for (guint i = 0; i < self->legend->len; i++)
    {
      const Legend *l = &g_array_index (self->legend, Legend, i);
      pango_layout_set_text (layout, l->text, -1);
      pango_layout_set_width (layout, -1);
      int tw, th;
      pango_layout_get_pixel_size (layout, &tw, &th);
      if (x + 18 + tw > w - PAD && x > x0)
        break;   /* no room left: the rest would be cut */
      set_source_color (cr, l->color, 1);
      switch (l->style)
        {
        case LEGEND_LINE:
          cairo_set_line_width (cr, 2);
          cairo_move_to (cr, x, y);
          cairo_line_to (cr, x + 14, y);
          cairo_stroke (cr);
          break;
        case LEGEND_UP:
        case LEGEND_DOWN:
          draw_triangle (cr, x + 7, y, 5, l->style == LEGEND_UP);
          break;
        case LEGEND_HATCH:
          set_source_color (cr, l->color, 0.35);
          cairo_rectangle (cr, x + 1, y - 5, 12, 10);
          cairo_fill (cr);
          set_source_color (cr, l->color, 1);
          draw_hatch (cr, x + 1, y - 5, 12, 10);
          break;
        case LEGEND_BOX:
        default:
          cairo_rectangle (cr, x + 1, y - 5, 12, 10);
          cairo_fill (cr);
          break;
        }
      set_source_fg (GTK_WIDGET (self), cr, 0.85);
      draw_text (cr, layout, l->text, x + 18, y, 0, 0.0);
      x += 18 + tw + 14;
    }
  Box b = { x0, PAD, x - x0, LEGEND_H };
  g_array_append_val (placed, b);
}

/* Ticks on [0 or lo, hi] about target apart: the axis labels. */
static void
draw_x_ticks (PlChart *self, cairo_t *cr, PangoLayout *layout, const Plot *p, double y, const char *unit)
{
  double step = nice_step (p->x1 - p->x0, MAX (2, (int) ((p->right - p->left) / 90)));
  int dec = step_decimals (step);
  for (double t = ceil (p->x0 / step) * step; t <= p->x1 + step * 1e-9; t += step)
    {
      double px = p->left + (t - p->x0) / (p->x1 - p->x0) * (p->right - p->left);
      set_source_fg (GTK_WIDGET (self), cr, 0.3);
      cairo_move_to (cr, px, p->bottom);
      cairo_line_to (cr, px, p->bottom + 3);
      cairo_stroke (cr);
      set_source_fg (GTK_WIDGET (self), cr, 0.8);
      /* -0 would read "-0" */
      g_autofree char *text = g_strdup_printf ("%.*f%s%s", dec, fabs (t) < step * 1e-6 ? 0.0 : t, unit ? " " : "",
                                               unit ? unit : "");
      pango_layout_set_text (layout, text, -1);
      pango_layout_set_width (layout, -1);
      int tw, th;
      pango_layout_get_pixel_size (layout, &tw, &th);
      if (px + tw / 2.0 > p->right + PAD)
        break;   /* it would be cut at the edge */
      draw_text (cr, layout, text, px, y, 0, 0.5);
    }
}

/* --- step lines ------------------------------------------------------------------------------ */

static void
series_plot (PlChart *self, double w, double h, Plot *p)
{
  *p = (Plot) { PAD + 70, w - PAD - 10, PAD + LEGEND_H + 6, h - PAD - MARK_BAND - 30, 0, 1, 0 };
  gboolean any = FALSE;
  for (guint k = 0; k < self->series->len; k++)
    {
      const Series *s = &g_array_index (self->series, Series, k);
      if (s->n == 0)
        continue;
      p->x0 = any ? MIN (p->x0, s->xs[0]) : s->xs[0];
      p->x1 = any ? MAX (p->x1, s->x_end) : s->x_end;
      any = TRUE;
      for (int i = 0; i < s->n; i++)
        p->ymax = MAX (p->ymax, s->ys[i]);
    }
  for (guint k = 0; k < self->ylines->len; k++)
    p->ymax = MAX (p->ymax, g_array_index (self->ylines, YLine, k).y);
  p->ymax = p->ymax > 0 ? p->ymax * 1.15 : 1;
  if (p->x1 <= p->x0)
    p->x1 = p->x0 + 1;
  if (self->log_y)
    {
      /* Whole decades around the positive values. */
      double lo = G_MAXDOUBLE;
      for (guint k = 0; k < self->series->len; k++)
        {
          const Series *s = &g_array_index (self->series, Series, k);
          for (int i = 0; i < s->n; i++)
            if (s->ys[i] > 0)
              lo = MIN (lo, s->ys[i]);
        }
      p->log = TRUE;
      p->ymin = lo < G_MAXDOUBLE ? pow (10, floor (log10 (lo))) : 1;
      p->ymax = MAX (pow (10, ceil (log10 (p->ymax / 1.15))), p->ymin * 10);
    }
}

static double
plot_px (const Plot *p, double x)
{
  return p->left + (x - p->x0) / (p->x1 - p->x0) * (p->right - p->left);
}

static double
plot_py (const Plot *p, double y)
{
  if (p->log)
    return y <= p->ymin ? p->bottom
                        : p->bottom - log (y / p->ymin) / log (p->ymax / p->ymin) * (p->bottom - p->top);
  return p->bottom - y / p->ymax * (p->bottom - p->top);
}

static double
series_next_x (const Series *s, int i)
{
  return i + 1 < s->n ? s->xs[i + 1] : s->x_end;
}

static int
series_lowest (const Series *s)
{
  int low = s->n > 0 ? 0 : -1;
  for (int i = 1; i < s->n; i++)
    if (s->ys[i] < s->ys[low])
      low = i;
  return low;
}

static int
series_peak (const Series *s)
{
  int peak = s->n > 0 ? 0 : -1;
  for (int i = 1; i < s->n; i++)
    if (s->ys[i] > s->ys[peak])
      peak = i;
  return peak;
}

/* The step of s holding at x, or -1 outside it. */
static int
series_index_at (const Series *s, double x)
{
  if (s->n == 0 || x < s->xs[0] || x > s->x_end)
    return -1;
  int lo = 0, hi = s->n - 1;   /* the last i with xs[i] <= x */
  while (lo < hi)
    {
      int mid = (lo + hi + 1) / 2;
      if (s->xs[mid] <= x)
        lo = mid;
      else
        hi = mid - 1;
    }
  return lo;
}

/* A grid line across the plot at y, of this alpha, labelled (label NULL: not). */
static void
y_tick (PlChart *self, cairo_t *cr, PangoLayout *layout, const Plot *p, double y, double alpha, const char *label)
{
  double py = plot_py (p, y);
  set_source_fg (GTK_WIDGET (self), cr, alpha);
  cairo_move_to (cr, p->left, py);
  cairo_line_to (cr, p->right, py);
  cairo_stroke (cr);
  if (!label)
    return;
  set_source_fg (GTK_WIDGET (self), cr, 0.8);
  draw_text (cr, layout, label, p->left - 6, py, 0, 1.0);
}

/* Grid lines and labels: every round step from 0, or on a logarithmic axis
 * lines at 1, 2 and 5 times each power of ten, labelled at the powers (and
 * at 2 and 5 when the axis spans at most two decades). */
static void
draw_y_axis (PlChart *self, cairo_t *cr, PangoLayout *layout, const Plot *p)
{
  cairo_set_line_width (cr, 1);
  if (p->log)
    {
      gboolean few = p->ymax / p->ymin <= 100.5;
      for (double d = p->ymin; d <= p->ymax * 1.001; d *= 10)
        for (int m = 1; m <= 5 && d * m <= p->ymax * 1.001; m += m == 1 ? 1 : 3)
          {
            double t = d * m;
            g_autofree char *text = m == 1 || few ? format_y (self, t, t < 1 ? (int) ceil (-log10 (t) - 1e-9) : 0)
                                                  : NULL;
            y_tick (self, cr, layout, p, t, t == p->ymin ? 0.3 : m == 1 ? 0.12 : 0.06, text);
          }
    }
  else
    {
      double step = nice_step (self->bytes ? p->ymax / MIB : p->ymax, 4);
      int dec = step_decimals (step);
      if (self->bytes)
        step *= MIB;
      for (double t = 0; t <= p->ymax; t += step)
        {
          g_autofree char *text = format_y (self, t, dec);
          y_tick (self, cr, layout, p, t, t == 0 ? 0.3 : 0.08, text);
        }
    }
  set_source_fg (GTK_WIDGET (self), cr, 0.3);
  cairo_move_to (cr, p->left, p->top);
  cairo_line_to (cr, p->left, p->bottom);
  cairo_stroke (cr);
}

static void
draw_one_series (cairo_t *cr, const Plot *p, const Series *s)
{
  if (s->n == 0)
    return;
  cairo_move_to (cr, plot_px (p, s->xs[0]), plot_py (p, 0));
  for (int i = 0; i < s->n; i++)
    {
      cairo_line_to (cr, plot_px (p, s->xs[i]), plot_py (p, s->ys[i]));
      cairo_line_to (cr, plot_px (p, series_next_x (s, i)), plot_py (p, s->ys[i]));
    }
  cairo_line_to (cr, plot_px (p, s->x_end), plot_py (p, 0));
  if (s->fill)
    {
      set_source_color (cr, s->color, 0.18);
      cairo_fill_preserve (cr);
    }
  cairo_new_path (cr);
  for (int i = 0; i < s->n; i++)
    {
      if (i == 0)
        cairo_move_to (cr, plot_px (p, s->xs[0]), plot_py (p, s->ys[0]));
      else
        cairo_line_to (cr, plot_px (p, s->xs[i]), plot_py (p, s->ys[i]));
      cairo_line_to (cr, plot_px (p, series_next_x (s, i)), plot_py (p, s->ys[i]));
    }
  set_source_color (cr, s->color, 1);
  cairo_set_line_width (cr, 1.5);
  cairo_stroke (cr);
}

static void
draw_series (PlChart *self, cairo_t *cr, PangoLayout *layout, double w, double h)
{
  Plot p;
  series_plot (self, w, h, &p);
  if (p.right - p.left < 20 || p.bottom - p.top < 20)
    return;
  g_autoptr (GArray) placed = g_array_new (FALSE, FALSE, sizeof (Box));
  draw_legend (self, cr, layout, p.left, w, placed);
  draw_y_axis (self, cr, layout, &p);
  draw_x_ticks (self, cr, layout, &p, p.bottom + MARK_BAND + 8, NULL);
  set_source_fg (GTK_WIDGET (self), cr, 0.7);
  draw_text (cr, layout, self->x_title ? self->x_title : "", (p.left + p.right) / 2, p.bottom + MARK_BAND + 23, 0, 0.5);

  /* the selected step, under the lines */
  if (self->sel_series >= 0 && self->sel_series < (int) self->series->len)
    {
      const Series *s = &g_array_index (self->series, Series, self->sel_series);
      if (self->sel_point >= 0 && self->sel_point < s->n)
        {
          double x0 = plot_px (&p, s->xs[self->sel_point]), x1 = plot_px (&p, series_next_x (s, self->sel_point));
          set_source_fg (GTK_WIDGET (self), cr, 0.12);
          cairo_rectangle (cr, x0, p.top, MAX (x1 - x0, 2), p.bottom - p.top);
          cairo_fill (cr);
        }
    }
  for (guint k = 0; k < self->series->len; k++)
    draw_one_series (cr, &p, &g_array_index (self->series, Series, k));

  for (guint k = 0; k < self->xmarks->len; k++)
    {
      const XMark *m = &g_array_index (self->xmarks, XMark, k);
      set_source_color (cr, m->color, 0.9);
      draw_triangle (cr, plot_px (&p, m->x), p.bottom + MARK_BAND / 2 + 1, 4, m->up);
    }

  for (guint k = 0; k < self->ylines->len; k++)
    {
      const YLine *l = &g_array_index (self->ylines, YLine, k);
      double ly = plot_py (&p, l->y), dash[] = { 5, 4 };
      cairo_set_dash (cr, dash, 2, 0);
      set_source_color (cr, PL_CHART_COLOR_RED, 0.9);
      cairo_set_line_width (cr, 1.2);
      cairo_move_to (cr, p.left, ly);
      cairo_line_to (cr, p.right, ly);
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
      draw_label_near (cr, layout, placed, &p, l->label ? l->label : "limit", p.right, ly);
    }

  /* peaks (or lowest points) last, so that their labels stay on top */
  for (guint k = 0; k < self->series->len; k++)
    {
      const Series *s = &g_array_index (self->series, Series, k);
      int i = self->mark_lowest ? series_lowest (s) : series_peak (s);
      if (i < 0)
        continue;
      double px = (plot_px (&p, s->xs[i]) + plot_px (&p, series_next_x (s, i))) / 2, py = plot_py (&p, s->ys[i]);
      set_source_color (cr, s->color, 1);
      cairo_arc (cr, px, py, 4, 0, 2 * G_PI);
      cairo_fill (cr);
      g_autofree char *v = format_y_label (self, s->ys[i]);
      g_autofree char *text = g_strdup_printf ("%s %s", self->mark_lowest ? "best" : "peak", v);
      draw_label_near (cr, layout, placed, &p, text, px, py);
    }

  if (self->sel_series >= 0 && self->sel_series < (int) self->series->len)
    {
      const Series *s = &g_array_index (self->series, Series, self->sel_series);
      if (self->sel_point >= 0 && self->sel_point < s->n)
        {
          int i = self->sel_point;
          double px = (plot_px (&p, s->xs[i]) + plot_px (&p, series_next_x (s, i))) / 2, py = plot_py (&p, s->ys[i]);
          set_source_fg (GTK_WIDGET (self), cr, 0.9);
          cairo_set_line_width (cr, 2);
          cairo_arc (cr, px, py, 5, 0, 2 * G_PI);
          cairo_stroke (cr);
        }
    }
}

/* --- spans ------------------------------------------------------------------------------------ */

static void
spans_plot (PlChart *self, double w, Plot *p)
{
  *p = (Plot) { PAD + ROW_TITLE_W, w - PAD - 6, PAD + LEGEND_H + 6, 0, 0, 0, 0 };
  p->bottom = p->top + self->n_rows * (ROW_H + ROW_GAP);
  for (guint k = 0; k < self->spans->len; k++)
    {
      const Span *sp = &g_array_index (self->spans, Span, k);
      p->x0 = MIN (p->x0, sp->start);
      p->x1 = MAX (p->x1, sp->end);
    }
  if (self->view_x0 < self->view_x1)
    p->x0 = self->view_x0, p->x1 = self->view_x1;
  if (p->x1 <= p->x0)
    p->x1 = p->x0 + 1;
}

/* A span's rectangle, at least 2 px wide. */
static Box
span_box (const Plot *p, const Span *sp)
{
  double x0 = plot_px (p, sp->start), x1 = plot_px (p, sp->end);
  if (x1 - x0 < 2)
    x0 -= (2 - (x1 - x0)) / 2, x1 = x0 + 2;
  return (Box) { x0, p->top + sp->row * (ROW_H + ROW_GAP), x1 - x0, ROW_H };
}

static void
draw_spans (PlChart *self, cairo_t *cr, PangoLayout *layout, double w)
{
  Plot p;
  spans_plot (self, w, &p);
  if (p.right - p.left < 20)
    return;
  g_autoptr (GArray) placed = g_array_new (FALSE, FALSE, sizeof (Box));
  draw_legend (self, cr, layout, PAD, w, placed);
  for (int r = 0; r < self->n_rows; r++)
    {
      double y = p.top + r * (ROW_H + ROW_GAP);
      set_source_fg (GTK_WIDGET (self), cr, 0.05);
      cairo_rectangle (cr, p.left, y, p.right - p.left, ROW_H);
      cairo_fill (cr);
      set_source_fg (GTK_WIDGET (self), cr, 0.85);
      draw_text (cr, layout, self->rows[r], p.left - 6, y + ROW_H / 2, ROW_TITLE_W - 8, 1.0);
    }
  cairo_save (cr);
  cairo_rectangle (cr, p.left, p.top, p.right - p.left, p.bottom - p.top);
  cairo_clip (cr);
  for (guint k = 0; k < self->spans->len; k++)
    {
      const Span *sp = &g_array_index (self->spans, Span, k);
      Box b = span_box (&p, sp);
      if (b.x + b.w < p.left || b.x > p.right)
        continue;
      set_source_color (cr, sp->color, sp->hatched ? 0.30 : 0.85);
      cairo_rectangle (cr, b.x, b.y, b.w, b.h);
      cairo_fill (cr);
      if (sp->hatched)
        {
          set_source_color (cr, sp->color, 1);
          draw_hatch (cr, b.x, b.y, b.w, b.h);
        }
      if (sp->id >= 0 && sp->id == self->sel_span)
        {
          set_source_fg (GTK_WIDGET (self), cr, 1);
          cairo_set_line_width (cr, 2);
          cairo_rectangle (cr, b.x - 1, b.y - 1, b.w + 2, b.h + 2);
          cairo_stroke (cr);
        }
      /* the name inside, when it fits */
      g_autofree char *name = g_strndup (sp->label ? sp->label : "", strcspn (sp->label ? sp->label : "", "\n"));
      pango_layout_set_text (layout, name, -1);
      pango_layout_set_width (layout, -1);
      int tw, th;
      pango_layout_get_pixel_size (layout, &tw, &th);
      double vx0 = MAX (b.x, p.left), vx1 = MIN (b.x + b.w, p.right);   /* the part in view */
      if (!sp->hatched && tw + 6 < vx1 - vx0)
        {
          cairo_set_source_rgba (cr, 1, 1, 1, 0.95);
          draw_text (cr, layout, name, vx0 + 3, b.y + ROW_H / 2, 0, 0.0);
        }
    }
  cairo_restore (cr);
  set_source_fg (GTK_WIDGET (self), cr, 0.3);
  cairo_set_line_width (cr, 1);
  cairo_move_to (cr, p.left, p.bottom);
  cairo_line_to (cr, p.right, p.bottom);
  cairo_stroke (cr);
  draw_x_ticks (self, cr, layout, &p, p.bottom + 10, self->unit);
}

/* The span under (x, y), the one drawn last on top; NULL if none. */
static const Span *
span_at (PlChart *self, double x, double y)
{
  Plot p;
  spans_plot (self, gtk_widget_get_width (GTK_WIDGET (self)), &p);
  if (x < p.left || x > p.right)
    return NULL;
  for (guint k = self->spans->len; k-- > 0;)
    {
      const Span *sp = &g_array_index (self->spans, Span, k);
      Box b = span_box (&p, sp);
      if (x >= b.x - 1 && x <= b.x + b.w + 1 && y >= b.y && y <= b.y + b.h)
        return sp;
    }
  return NULL;
}

/* --- pointer: tooltips, zoom ------------------------------------------------------------------- */

static const XMark *
xmark_at (PlChart *self, double x, double y)
{
  Plot p;
  series_plot (self, gtk_widget_get_width (GTK_WIDGET (self)), gtk_widget_get_height (GTK_WIDGET (self)), &p);
  if (y < p.bottom || y > p.bottom + MARK_BAND + 2)
    return NULL;
  const XMark *best = NULL;
  double best_d = 5;
  for (guint k = 0; k < self->xmarks->len; k++)
    {
      const XMark *m = &g_array_index (self->xmarks, XMark, k);
      double d = fabs (plot_px (&p, m->x) - x);
      if (d <= best_d)
        best = m, best_d = d;
    }
  return best;
}

static gboolean
on_query_tooltip (GtkWidget *widget, int x, int y, gboolean keyboard, GtkTooltip *tooltip, gpointer data)
{
  PlChart *self = PL_CHART (widget);
  if (self->kind == CHART_SPANS)
    {
      const Span *sp = span_at (self, x, y);
      if (sp && sp->label)
        gtk_tooltip_set_text (tooltip, sp->label);
      return sp && sp->label;
    }
  if (self->kind != CHART_SERIES)
    return FALSE;
  const XMark *m = xmark_at (self, x, y);
  if (m)
    {
      gtk_tooltip_set_text (tooltip, m->label);
      return m->label != NULL;
    }
  int si, i;
  if (!pl_chart_pick_point (self, x, y, &si, &i))
    return FALSE;
  const Series *s = &g_array_index (self->series, Series, si);
  g_autofree char *v = format_y_label (self, s->ys[i]);
  g_autofree char *text = g_strdup_printf ("%s\n%s\n%s", s->name, s->labels ? s->labels[i] : "", v);
  gtk_tooltip_set_text (tooltip, text);
  return TRUE;
}

static void
on_motion (GtkEventControllerMotion *motion, double x, double y, PlChart *self)
{
  self->pointer_x = x;
}

/* Spans: scrolling zooms around the pointer, shift or a sideways scroll pans. */
static gboolean
on_scroll (GtkEventControllerScroll *scroll, double dx, double dy, PlChart *self)
{
  if (self->kind != CHART_SPANS || self->spans->len == 0)
    return FALSE;
  Plot p;
  spans_plot (self, gtk_widget_get_width (GTK_WIDGET (self)), &p);
  double span = p.x1 - p.x0;
  GdkModifierType mods = gtk_event_controller_get_current_event_state (GTK_EVENT_CONTROLLER (scroll));
  if ((mods & GDK_SHIFT_MASK) && dx == 0)
    dx = dy, dy = 0;
  if (dx != 0)
    {
      double shift = dx * span * 0.1;
      pl_chart_set_x_view (self, p.x0 + shift, p.x1 + shift);
      return TRUE;
    }
  double at = p.x0 + CLAMP ((self->pointer_x - p.left) / (p.right - p.left), 0, 1) * span;
  double f = dy > 0 ? 1.25 : 0.8;
  pl_chart_set_x_view (self, at - (at - p.x0) * f, at + (p.x1 - at) * f);
  return TRUE;
}

static void
pl_chart_snapshot (GtkWidget *widget, GtkSnapshot *snapshot)
{
  PlChart *self = PL_CHART (widget);
  double w = gtk_widget_get_width (widget), h = gtk_widget_get_height (widget);
  if (w <= 0 || h <= 0)
    return;
  cairo_t *cr = gtk_snapshot_append_cairo (snapshot, &GRAPHENE_RECT_INIT (0, 0, w, h));
  PangoLayout *layout = gtk_widget_create_pango_layout (widget, NULL);
  if (self->kind == CHART_SERIES)
    draw_series (self, cr, layout, w, h);
  else if (self->kind == CHART_SPANS)
    draw_spans (self, cr, layout, w);
  else if (self->kind == CHART_NONE || self->n == 0)
    {
      set_source_fg (widget, cr, 0.5);
      draw_text (cr, layout, "No data yet: run the step.", w / 2, h / 2, 0, 0.5);
    }
  else if (self->kind == CHART_BARS)
    draw_bars (self, cr, layout, w);
  else
    draw_line (self, cr, layout, w, h);
  g_object_unref (layout);
  cairo_destroy (cr);
}

static void
pl_chart_measure (GtkWidget *widget, GtkOrientation orientation, int for_size, int *min, int *nat,
                  int *min_baseline, int *nat_baseline)
{
  PlChart *self = PL_CHART (widget);
  if (orientation == GTK_ORIENTATION_HORIZONTAL)
    *min = 200, *nat = 360;
  else if (self->kind == CHART_BARS)
    *min = *nat = (int) (2 * PAD + MAX (self->n, 1) * (BAR_H + BAR_GAP));
  else if (self->kind == CHART_SPANS)
    *min = *nat = (int) (2 * PAD + LEGEND_H + 6 + MAX (self->n_rows, 1) * (ROW_H + ROW_GAP) + 20);
  else if (self->kind == CHART_SERIES)
    *min = 160, *nat = 260;
  else
    *min = 100, *nat = 160;
}

static void
on_click (GtkGestureClick *gesture, int n_press, double x, double y, PlChart *self)
{
  if (self->kind == CHART_SERIES)
    {
      int s, i;
      if (pl_chart_pick_point (self, x, y, &s, &i))
        {
          pl_chart_select_point (self, s, i);
          g_signal_emit (self, signals[SIGNAL_POINT_ACTIVATED], 0, s, i);
        }
      return;
    }
  if (self->kind == CHART_SPANS)
    {
      const Span *sp = n_press == 1 ? span_at (self, x, y) : NULL;
      if (n_press == 2)
        pl_chart_set_x_view (self, 0, 0);
      else if (sp)
        {
          int id = sp->id;
          pl_chart_select_span (self, id);
          g_signal_emit (self, signals[SIGNAL_SPAN_ACTIVATED], 0, id);
        }
      return;
    }
  if (self->kind != CHART_BARS)
    return;
  int k = (int) floor ((y - PAD) / (BAR_H + BAR_GAP));
  if (y < PAD || k < 0 || k >= self->n)
    return;
  pl_chart_select_bar (self, self->order[k]);
  g_signal_emit (self, signals[SIGNAL_BAR_ACTIVATED], 0, self->order[k]);
}

static void
pl_chart_finalize (GObject *object)
{
  PlChart *self = PL_CHART (object);
  chart_reset (self);
  g_array_unref (self->series);
  g_array_unref (self->ylines);
  g_array_unref (self->xmarks);
  g_array_unref (self->spans);
  g_array_unref (self->legend);
  G_OBJECT_CLASS (pl_chart_parent_class)->finalize (object);
}

static void
pl_chart_class_init (PlChartClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);
  object_class->finalize = pl_chart_finalize;
  widget_class->snapshot = pl_chart_snapshot;
  widget_class->measure = pl_chart_measure;
  signals[SIGNAL_BAR_ACTIVATED] = g_signal_new ("bar-activated", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                                                NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_INT);
  signals[SIGNAL_POINT_ACTIVATED] = g_signal_new ("point-activated", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                                  0, NULL, NULL, NULL, G_TYPE_NONE, 2, G_TYPE_INT, G_TYPE_INT);
  signals[SIGNAL_SPAN_ACTIVATED] = g_signal_new ("span-activated", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                                                 NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_INT);
  gtk_widget_class_set_css_name (widget_class, "plchart");
}

static void
pl_chart_init (PlChart *self)
{
  self->series = g_array_new (FALSE, TRUE, sizeof (Series));
  g_array_set_clear_func (self->series, series_clear);
  self->ylines = g_array_new (FALSE, TRUE, sizeof (YLine));
  g_array_set_clear_func (self->ylines, yline_clear);
  self->xmarks = g_array_new (FALSE, TRUE, sizeof (XMark));
  g_array_set_clear_func (self->xmarks, xmark_clear);
  self->spans = g_array_new (FALSE, TRUE, sizeof (Span));
  g_array_set_clear_func (self->spans, span_clear);
  self->legend = g_array_new (FALSE, TRUE, sizeof (Legend));
  g_array_set_clear_func (self->legend, legend_clear);
  chart_reset (self);
  GtkGesture *click = gtk_gesture_click_new ();
  g_signal_connect (click, "pressed", G_CALLBACK (on_click), self);
  gtk_widget_add_controller (GTK_WIDGET (self), GTK_EVENT_CONTROLLER (click));
  GtkEventController *motion = gtk_event_controller_motion_new ();
  g_signal_connect (motion, "motion", G_CALLBACK (on_motion), self);
  gtk_widget_add_controller (GTK_WIDGET (self), motion);
  GtkEventController *scroll = gtk_event_controller_scroll_new (GTK_EVENT_CONTROLLER_SCROLL_BOTH_AXES);
  g_signal_connect (scroll, "scroll", G_CALLBACK (on_scroll), self);
  gtk_widget_add_controller (GTK_WIDGET (self), scroll);
  gtk_widget_set_has_tooltip (GTK_WIDGET (self), TRUE);
  g_signal_connect (self, "query-tooltip", G_CALLBACK (on_query_tooltip), NULL);
}

GtkWidget *
pl_chart_new (void)
{
  return g_object_new (PL_TYPE_CHART, NULL);
}

static int
compare_desc (gconstpointer a, gconstpointer b, gpointer data)
{
  const double *v = data;
  int i = *(const int *) a, j = *(const int *) b;
  /* ties keep the caller's order: the sort is not stable */
  return v[i] < v[j] ? 1 : v[i] > v[j] ? -1 : i - j;
}

void
pl_chart_set_bars (PlChart *self, const char *const *labels, const double *values, int n, const char *unit)
{
  g_return_if_fail (PL_IS_CHART (self));
  chart_reset (self);
  self->kind = CHART_BARS;
  self->n = MAX (n, 0);
  self->labels = g_new0 (char *, self->n + 1);
  self->ys = g_new (double, MAX (self->n, 1));
  self->order = g_new (int, MAX (self->n, 1));
  for (int i = 0; i < self->n; i++)
    {
      self->labels[i] = g_strdup (labels[i] ? labels[i] : "");
      self->ys[i] = values[i];
      self->order[i] = i;
    }
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS /* g_sort_array is newer than Debian 12's GLib */
  g_qsort_with_data (self->order, self->n, sizeof (int), compare_desc, self->ys);
  G_GNUC_END_IGNORE_DEPRECATIONS
  self->unit = g_strdup (unit);
  gtk_widget_queue_resize (GTK_WIDGET (self));
}

void
pl_chart_set_line (PlChart *self, const double *xs, const double *ys, int n, const char *x_unit, gboolean bytes,
                   double limit, const char *limit_label)
{
  g_return_if_fail (PL_IS_CHART (self));
  chart_reset (self);
  self->kind = CHART_LINE;
  self->n = MAX (n, 0);
  self->xs = g_memdup2 (xs, sizeof (double) * self->n);
  self->ys = g_memdup2 (ys, sizeof (double) * self->n);
  self->unit = g_strdup (x_unit);
  self->bytes = bytes;
  self->limit = limit;
  self->limit_label = g_strdup (limit_label);
  gtk_widget_queue_resize (GTK_WIDGET (self));
}

void
pl_chart_clear (PlChart *self)
{
  g_return_if_fail (PL_IS_CHART (self));
  chart_reset (self);
  gtk_widget_queue_resize (GTK_WIDGET (self));
}

int
pl_chart_get_n_points (PlChart *self)
{
  g_return_val_if_fail (PL_IS_CHART (self), 0);
  return self->n;
}

void
pl_chart_select_bar (PlChart *self, int i)
{
  g_return_if_fail (PL_IS_CHART (self));
  self->selected = self->kind == CHART_BARS && i >= 0 && i < self->n ? i : -1;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

int
pl_chart_get_selected_bar (PlChart *self)
{
  g_return_val_if_fail (PL_IS_CHART (self), -1);
  return self->selected;
}

double
pl_chart_get_peak (PlChart *self)
{
  g_return_val_if_fail (PL_IS_CHART (self), 0);
  double peak = 0;
  for (int i = 0; self->kind == CHART_LINE && i < self->n; i++)
    peak = MAX (peak, self->ys[i]);
  for (guint k = 0; self->kind == CHART_SERIES && k < self->series->len; k++)
    peak = MAX (peak, pl_chart_get_series_peak (self, (int) k, NULL));
  return peak;
}

/* --- step lines and spans: API ------------------------------------------------------------------ */

void
pl_chart_set_lines (PlChart *self, const char *x_title, gboolean bytes, const char *y_unit)
{
  g_return_if_fail (PL_IS_CHART (self));
  chart_reset (self);
  self->kind = CHART_SERIES;
  self->x_title = g_strdup (x_title);
  self->bytes = bytes;
  self->unit = g_strdup (y_unit);
  gtk_widget_queue_resize (GTK_WIDGET (self));
}

void
pl_chart_set_log_y (PlChart *self, gboolean log_y, gboolean mark_lowest)
{
  g_return_if_fail (PL_IS_CHART (self) && self->kind == CHART_SERIES);
  self->log_y = log_y;
  self->mark_lowest = mark_lowest;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

int
pl_chart_add_series (PlChart *self, const char *name, const double *xs, const double *ys, int n, double x_end,
                     PlChartColor color, gboolean fill, const char *const *point_labels)
{
  g_return_val_if_fail (PL_IS_CHART (self) && self->kind == CHART_SERIES, -1);
  g_return_val_if_fail (n >= 0 && (n == 0 || (xs && ys)), -1);
  Series s = { g_strdup (name), g_memdup2 (xs, sizeof (double) * n), g_memdup2 (ys, sizeof (double) * n), n,
               n > 0 ? MAX (x_end, xs[n - 1]) : x_end, color, fill, NULL };
  if (point_labels)
    {
      s.labels = g_new0 (char *, n + 1);
      for (int i = 0; i < n; i++)
        s.labels[i] = g_strdup (point_labels[i] ? point_labels[i] : "");
    }
  g_array_append_val (self->series, s);
  add_legend (self, color, LEGEND_LINE, name ? name : "");
  self->n += n;
  gtk_widget_queue_draw (GTK_WIDGET (self));
  return (int) self->series->len - 1;
}

void
pl_chart_add_y_line (PlChart *self, double y, const char *label)
{
  g_return_if_fail (PL_IS_CHART (self) && self->kind == CHART_SERIES);
  YLine l = { y, g_strdup (label) };
  g_array_append_val (self->ylines, l);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

void
pl_chart_add_x_mark (PlChart *self, double x, PlChartColor color, gboolean up, const char *legend,
                     const char *label)
{
  g_return_if_fail (PL_IS_CHART (self) && self->kind == CHART_SERIES);
  XMark m = { x, color, up, g_strdup (label) };
  g_array_append_val (self->xmarks, m);
  if (legend)
    add_legend (self, color, up ? LEGEND_UP : LEGEND_DOWN, legend);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

int
pl_chart_get_n_series (PlChart *self)
{
  g_return_val_if_fail (PL_IS_CHART (self), 0);
  return self->kind == CHART_SERIES ? (int) self->series->len : 0;
}

int
pl_chart_get_series_n_points (PlChart *self, int series)
{
  g_return_val_if_fail (PL_IS_CHART (self), 0);
  if (series < 0 || series >= pl_chart_get_n_series (self))
    return 0;
  return g_array_index (self->series, Series, series).n;
}

double
pl_chart_get_series_peak (PlChart *self, int series, int *index)
{
  g_return_val_if_fail (PL_IS_CHART (self), 0);
  if (index)
    *index = -1;
  if (series < 0 || series >= pl_chart_get_n_series (self))
    return 0;
  const Series *s = &g_array_index (self->series, Series, series);
  int i = series_peak (s);
  if (index)
    *index = i;
  return i >= 0 ? s->ys[i] : 0;
}

gboolean
pl_chart_get_point_position (PlChart *self, int series, int i, double *x, double *y)
{
  g_return_val_if_fail (PL_IS_CHART (self), FALSE);
  double w = gtk_widget_get_width (GTK_WIDGET (self)), h = gtk_widget_get_height (GTK_WIDGET (self));
  if (series < 0 || series >= pl_chart_get_n_series (self) || w <= 0 || h <= 0)
    return FALSE;
  const Series *s = &g_array_index (self->series, Series, series);
  if (i < 0 || i >= s->n)
    return FALSE;
  Plot p;
  series_plot (self, w, h, &p);
  *x = (plot_px (&p, s->xs[i]) + plot_px (&p, series_next_x (s, i))) / 2;
  *y = plot_py (&p, s->ys[i]);
  return TRUE;
}

gboolean
pl_chart_pick_point (PlChart *self, double x, double y, int *series, int *i)
{
  g_return_val_if_fail (PL_IS_CHART (self), FALSE);
  double w = gtk_widget_get_width (GTK_WIDGET (self)), h = gtk_widget_get_height (GTK_WIDGET (self));
  if (self->kind != CHART_SERIES || w <= 0 || h <= 0)
    return FALSE;
  Plot p;
  series_plot (self, w, h, &p);
  if (x < p.left || x > p.right || y < p.top - 6 || y > p.bottom)
    return FALSE;
  double at = p.x0 + (x - p.left) / (p.right - p.left) * (p.x1 - p.x0), best = G_MAXDOUBLE;
  *series = *i = -1;
  for (guint k = 0; k < self->series->len; k++)
    {
      const Series *s = &g_array_index (self->series, Series, k);
      int j = series_index_at (s, at);
      double d = j >= 0 ? fabs (plot_py (&p, s->ys[j]) - y) : G_MAXDOUBLE;
      if (d < best)
        best = d, *series = (int) k, *i = j;
    }
  return *series >= 0;
}

void
pl_chart_select_point (PlChart *self, int series, int i)
{
  g_return_if_fail (PL_IS_CHART (self));
  gboolean ok = series >= 0 && series < pl_chart_get_n_series (self) && i >= 0
                && i < g_array_index (self->series, Series, series).n;
  self->sel_series = ok ? series : -1;
  self->sel_point = ok ? i : -1;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

void
pl_chart_set_spans (PlChart *self, const char *const *row_titles, int n_rows, const char *x_unit)
{
  g_return_if_fail (PL_IS_CHART (self));
  chart_reset (self);
  self->kind = CHART_SPANS;
  self->n_rows = MAX (n_rows, 0);
  self->rows = g_new0 (char *, self->n_rows + 1);
  for (int r = 0; r < self->n_rows; r++)
    self->rows[r] = g_strdup (row_titles[r] ? row_titles[r] : "");
  self->unit = g_strdup (x_unit);
  gtk_widget_queue_resize (GTK_WIDGET (self));
}

void
pl_chart_add_span (PlChart *self, int row, double start, double end, PlChartColor color, gboolean hatched,
                   const char *label, int id)
{
  g_return_if_fail (PL_IS_CHART (self) && self->kind == CHART_SPANS);
  g_return_if_fail (row >= 0 && row < self->n_rows);
  Span sp = { row, start, MAX (start, end), color, hatched, g_strdup (label), id };
  g_array_append_val (self->spans, sp);
  self->n++;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

void
pl_chart_add_legend (PlChart *self, PlChartColor color, gboolean hatched, const char *text)
{
  g_return_if_fail (PL_IS_CHART (self) && text != NULL);
  add_legend (self, color, hatched ? LEGEND_HATCH : LEGEND_BOX, text);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

int
pl_chart_get_n_spans (PlChart *self, int row)
{
  g_return_val_if_fail (PL_IS_CHART (self), 0);
  int n = 0;
  for (guint k = 0; self->kind == CHART_SPANS && k < self->spans->len; k++)
    if (row < 0 || g_array_index (self->spans, Span, k).row == row)
      n++;
  return n;
}

void
pl_chart_select_span (PlChart *self, int id)
{
  g_return_if_fail (PL_IS_CHART (self));
  self->sel_span = id;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

void
pl_chart_reveal_span (PlChart *self, int id)
{
  g_return_if_fail (PL_IS_CHART (self));
  double a = G_MAXDOUBLE, b = -G_MAXDOUBLE, all0 = 0, all1 = 0;
  for (guint k = 0; self->kind == CHART_SPANS && k < self->spans->len; k++)
    {
      const Span *sp = &g_array_index (self->spans, Span, k);
      all0 = MIN (all0, sp->start);
      all1 = MAX (all1, sp->end);
      if (sp->id == id)
        a = MIN (a, sp->start), b = MAX (b, sp->end);
    }
  if (a > b)
    return;
  Plot p;
  spans_plot (self, MAX (gtk_widget_get_width (GTK_WIDGET (self)), 1), &p);
  if (a >= p.x0 && b <= p.x1 && (b - a) * 40 >= p.x1 - p.x0)
    return;
  /* about twelve times the span, and never less than 1/200 of the run */
  double width = MIN (MAX ((b - a) * 12, (all1 - all0) / 200), all1 - all0), mid = (a + b) / 2;
  double x0 = CLAMP (mid - width / 2, all0, MAX (all0, all1 - width));
  pl_chart_set_x_view (self, x0, x0 + width);
}

void
pl_chart_set_x_view (PlChart *self, double x0, double x1)
{
  g_return_if_fail (PL_IS_CHART (self));
  self->view_x0 = x0;
  self->view_x1 = x1;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}
