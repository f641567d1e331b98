/* pl-chart-input.c — what the pointer does on each kind of chart: a click
 * activates a bar, the point of a step line or a span (a double click shows
 * all spans again); tooltips name spans, x marks and the point of a line;
 * scrolling over spans zooms around the pointer and shift-scrolling pans.
 * The hit tests themselves live with the kinds that draw the shapes. */
#define G_LOG_DOMAIN "passlab"

#include "pl-chart-private.h"

static gboolean
on_query_tooltip (GtkWidget *widget, int x, int y, gboolean keyboard, GtkTooltip *tooltip, gpointer data)
{
  PlChart *self = PL_CHART (widget);
  if (self->kind == CHART_SPANS)
    {
      const Span *sp = chart_span_at (self, x, y);
      if (sp && sp->label)
        gtk_tooltip_set_text (tooltip, sp->label);
      return sp && sp->label;
    }
  if (self->kind != CHART_SERIES)
    return FALSE;
  const XMark *m = chart_xmark_at (self, x, y);
  if (m)
    {
      gtk_tooltip_set_text (tooltip, m->label);
      return m->label != NULL;
    }
  int si, i;
  if (!pl_chart_pick_point (self, x, y, &si, &i))
    return FALSE;
  const Series *s = &g_array_index (self->series, Series, si);
  g_autofree char *v = chart_format_y_label (self, s->ys[i]);
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
  chart_spans_plot (self, gtk_widget_get_width (GTK_WIDGET (self)), &p);
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
on_click (GtkGestureClick *gesture, int n_press, double x, double y, PlChart *self)
{
  if (self->kind == CHART_SERIES)
    {
      int s, i;
      if (pl_chart_pick_point (self, x, y, &s, &i))
        {
          pl_chart_select_point (self, s, i);
          g_signal_emit (self, chart_signals[SIGNAL_POINT_ACTIVATED], 0, s, i);
        }
      return;
    }
  if (self->kind == CHART_SPANS)
    {
      const Span *sp = n_press == 1 ? chart_span_at (self, x, y) : NULL;
      if (n_press == 2)
        pl_chart_set_x_view (self, 0, 0);
      else if (sp)
        {
          int id = sp->id;
          pl_chart_select_span (self, id);
          g_signal_emit (self, chart_signals[SIGNAL_SPAN_ACTIVATED], 0, id);
        }
      return;
    }
  int i = chart_bar_at (self, y);
  if (i < 0)
    return;
  pl_chart_select_bar (self, i);
  g_signal_emit (self, chart_signals[SIGNAL_BAR_ACTIVATED], 0, i);
}

void
chart_input_init (PlChart *self)
{
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
