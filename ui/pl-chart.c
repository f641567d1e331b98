/* pl-chart.c — the bar chart and the line chart of pl-chart.h, drawn with
 * cairo inside a snapshot. The widget keeps its own copy of the data, so
 * callers may free theirs after setting it. Text colour follows the theme
 * (the widget's CSS colour); bars and line use one accent colour. */
#define G_LOG_DOMAIN "passlab"

#include "pl-chart.h"

#include <math.h>

#define PAD 8.0
#define BAR_H 16.0
#define BAR_GAP 4.0

typedef enum { CHART_NONE, CHART_BARS, CHART_LINE } ChartKind;

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
};

G_DEFINE_FINAL_TYPE (PlChart, pl_chart, GTK_TYPE_WIDGET)

enum { SIGNAL_BAR_ACTIVATED, N_SIGNALS };
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
  self->kind = CHART_NONE;
  self->n = 0;
  self->limit = 0;
  self->selected = -1;
}

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

static void
pl_chart_snapshot (GtkWidget *widget, GtkSnapshot *snapshot)
{
  PlChart *self = PL_CHART (widget);
  double w = gtk_widget_get_width (widget), h = gtk_widget_get_height (widget);
  if (w <= 0 || h <= 0)
    return;
  cairo_t *cr = gtk_snapshot_append_cairo (snapshot, &GRAPHENE_RECT_INIT (0, 0, w, h));
  PangoLayout *layout = gtk_widget_create_pango_layout (widget, NULL);
  if (self->kind == CHART_NONE || self->n == 0)
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
  else
    *min = 100, *nat = 160;
}

static void
on_click (GtkGestureClick *gesture, int n_press, double x, double y, PlChart *self)
{
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
  chart_reset (PL_CHART (object));
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
  gtk_widget_class_set_css_name (widget_class, "plchart");
}

static void
pl_chart_init (PlChart *self)
{
  self->selected = -1;
  GtkGesture *click = gtk_gesture_click_new ();
  g_signal_connect (click, "pressed", G_CALLBACK (on_click), self);
  gtk_widget_add_controller (GTK_WIDGET (self), GTK_EVENT_CONTROLLER (click));
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
  return peak;
}
