/* pl-chart-spans.c — spans on rows, a Gantt chart (kernels and copies over
 * a run): a title column, one band per row, each span a box at least 2 px
 * wide (hatched for waiting) with its name inside when it fits, and the x
 * axis below. The x range shown can be narrowed (pl_chart_set_x_view,
 * scrolling in pl-chart-input.c), and pl_chart_reveal_span zooms in on
 * spans too thin to see. */
#define G_LOG_DOMAIN "passlab"

#include "pl-chart-private.h"

#include <string.h>

void
chart_spans_plot (PlChart *self, double w, Plot *p)
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
  double x0 = chart_plot_px (p, sp->start), x1 = chart_plot_px (p, sp->end);
  if (x1 - x0 < 2)
    x0 -= (2 - (x1 - x0)) / 2, x1 = x0 + 2;
  return (Box) { x0, p->top + sp->row * (ROW_H + ROW_GAP), x1 - x0, ROW_H };
}

static void
draw_span (PlChart *self, cairo_t *cr, PangoLayout *layout, const Plot *p, const Span *sp)
{
  Box b = span_box (p, sp);
  if (b.x + b.w < p->left || b.x > p->right)
    return;
  chart_fill_box (cr, sp->color, sp->hatched ? 0.30 : 0.85, sp->hatched, b.x, b.y, b.w, b.h);
  if (sp->id >= 0 && sp->id == self->sel_span)
    {
      chart_set_source_fg (GTK_WIDGET (self), cr, 1);
      cairo_set_line_width (cr, 2);
      cairo_rectangle (cr, b.x - 1, b.y - 1, b.w + 2, b.h + 2);
      cairo_stroke (cr);
    }
  /* the name (the label's first line) inside, when it fits */
  g_autofree char *name = g_strndup (sp->label ? sp->label : "", strcspn (sp->label ? sp->label : "", "\n"));
  int tw, th;
  chart_text_size (layout, name, &tw, &th);
  double vx0 = MAX (b.x, p->left), vx1 = MIN (b.x + b.w, p->right);   /* the part in view */
  if (!sp->hatched && tw + 6 < vx1 - vx0)
    {
      cairo_set_source_rgba (cr, 1, 1, 1, 0.95);
      chart_draw_text (cr, layout, name, vx0 + 3, b.y + ROW_H / 2, 0, 0.0);
    }
}

void
chart_draw_spans (PlChart *self, cairo_t *cr, PangoLayout *layout, double w)
{
  Plot p;
  chart_spans_plot (self, w, &p);
  if (p.right - p.left < 20)
    return;
  g_autoptr (GArray) placed = g_array_new (FALSE, FALSE, sizeof (Box));
  chart_draw_legend (self, cr, layout, PAD, w, placed);
  for (int r = 0; r < self->n_rows; r++)
    {
      double y = p.top + r * (ROW_H + ROW_GAP);
      chart_set_source_fg (GTK_WIDGET (self), cr, 0.05);
      cairo_rectangle (cr, p.left, y, p.right - p.left, ROW_H);
      cairo_fill (cr);
      chart_set_source_fg (GTK_WIDGET (self), cr, 0.85);
      chart_draw_text (cr, layout, self->rows[r], p.left - 6, y + ROW_H / 2, ROW_TITLE_W - 8, 1.0);
    }
  cairo_save (cr);
  cairo_rectangle (cr, p.left, p.top, p.right - p.left, p.bottom - p.top);
  cairo_clip (cr);
  for (guint k = 0; k < self->spans->len; k++)
    draw_span (self, cr, layout, &p, &g_array_index (self->spans, Span, k));
  cairo_restore (cr);
  chart_set_source_fg (GTK_WIDGET (self), cr, 0.3);
  cairo_set_line_width (cr, 1);
  cairo_move_to (cr, p.left, p.bottom);
  cairo_line_to (cr, p.right, p.bottom);
  cairo_stroke (cr);
  chart_draw_x_ticks (self, cr, layout, &p, p.bottom + 10, self->unit);
}

const Span *
chart_span_at (PlChart *self, double x, double y)
{
  Plot p;
  chart_spans_plot (self, gtk_widget_get_width (GTK_WIDGET (self)), &p);
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

/* --- API ------------------------------------------------------------------------------------ */

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
  chart_add_legend (self, color, hatched ? LEGEND_HATCH : LEGEND_BOX, text);
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
  chart_spans_plot (self, MAX (gtk_widget_get_width (GTK_WIDGET (self)), 1), &p);
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
