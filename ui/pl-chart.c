/* pl-chart.c — the chart widget of pl-chart.h: its data, its size, and the
 * snapshot that hands each kind to its own file (see pl-chart-private.h for
 * the map). Everything is drawn with cairo inside a snapshot. The widget
 * keeps its own copy of the data, so callers may free theirs after setting
 * it. Text colour follows the theme (the widget's CSS colour); bars and the
 * single line use one accent colour, step lines and spans a small fixed
 * palette.
 *
 * Step lines and spans share their machinery: one plot rectangle per kind
 * computed from the widget size (drawing, picking and tooltips all use it),
 * a legend along the top, and peak / limit labels placed where they do not
 * cover one another. */
#define G_LOG_DOMAIN "passlab"

#include "pl-chart-private.h"

G_DEFINE_FINAL_TYPE (PlChart, pl_chart, GTK_TYPE_WIDGET)

guint chart_signals[N_SIGNALS];

void
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

static GArray *
array_new (guint element_size, GDestroyNotify clear)
{
  GArray *a = g_array_new (FALSE, TRUE, element_size);
  g_array_set_clear_func (a, clear);
  return a;
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
    chart_draw_series (self, cr, layout, w, h);
  else if (self->kind == CHART_SPANS)
    chart_draw_spans (self, cr, layout, w);
  else if (self->kind == CHART_NONE || self->n == 0)
    {
      chart_set_source_fg (widget, cr, 0.5);
      chart_draw_text (cr, layout, "No data yet: run the step.", w / 2, h / 2, 0, 0.5);
    }
  else if (self->kind == CHART_BARS)
    chart_draw_bars (self, cr, layout, w);
  else
    chart_draw_line (self, cr, layout, w, h);
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
  chart_signals[SIGNAL_BAR_ACTIVATED] = g_signal_new ("bar-activated", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                                      0, NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_INT);
  chart_signals[SIGNAL_POINT_ACTIVATED] = g_signal_new ("point-activated", G_TYPE_FROM_CLASS (klass),
                                                        G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 2,
                                                        G_TYPE_INT, G_TYPE_INT);
  chart_signals[SIGNAL_SPAN_ACTIVATED] = g_signal_new ("span-activated", G_TYPE_FROM_CLASS (klass),
                                                       G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 1,
                                                       G_TYPE_INT);
  gtk_widget_class_set_css_name (widget_class, "plchart");
}

static void
pl_chart_init (PlChart *self)
{
  self->series = array_new (sizeof (Series), series_clear);
  self->ylines = array_new (sizeof (YLine), yline_clear);
  self->xmarks = array_new (sizeof (XMark), xmark_clear);
  self->spans = array_new (sizeof (Span), span_clear);
  self->legend = array_new (sizeof (Legend), legend_clear);
  chart_reset (self);
  chart_input_init (self);
}

GtkWidget *
pl_chart_new (void)
{
  return g_object_new (PL_TYPE_CHART, NULL);
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
