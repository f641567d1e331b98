/* pl-graph-canvas-input.c — the canvas's view and the input that moves it.
 *
 * The view is a zoom (pixels per layout point) and the layout point at the
 * widget's top-left. Dragging pans; a mouse wheel zooms at the pointer; a
 * touchpad's two-finger scroll pans and its pinch zooms; Ctrl+scroll always
 * zooms; keys zoom, fit, pan, activate and deselect. Hovering a node lights
 * its neighbourhood, and its tooltip gives its texts and diff state. */
#define G_LOG_DOMAIN "passlab"

#include "pl-graph-canvas-private.h"

#include <math.h>

#define ZOOM_MAX   4.0
#define FOCUS_ZOOM 0.9  /* centring a search hit zooms in at least this far */
#define FIRST_ZOOM 0.6  /* a new graph too big to fit legibly starts at this zoom */

/* --- the view ------------------------------------------------------------------- */

static double
fit_zoom (PlGraphCanvas *self)
{
  double w = gtk_widget_get_width (GTK_WIDGET (self)), h = gtk_widget_get_height (GTK_WIDGET (self));
  if (self->layout == NULL || w <= 0 || h <= 0)
    return 1.0;
  double z = MIN (w / MAX (self->layout->width, 1), h / MAX (self->layout->height, 1));
  return MIN (z, 1.5);
}

static double
min_zoom (PlGraphCanvas *self)
{
  return MIN (fit_zoom (self) * 0.5, 0.1);
}

/* Zooms to z keeping the layout point under widget point (wx, wy) still. */
static void
zoom_at (PlGraphCanvas *self, double z, double wx, double wy)
{
  z = CLAMP (z, min_zoom (self), ZOOM_MAX);
  double px = self->ox + wx / self->zoom, py = self->oy + wy / self->zoom;
  self->zoom = z;
  self->ox = px - wx / z;
  self->oy = py - wy / z;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

static void
center_point (PlGraphCanvas *self, double x, double y)
{
  self->ox = x - gtk_widget_get_width (GTK_WIDGET (self)) / 2.0 / self->zoom;
  self->oy = y - gtk_widget_get_height (GTK_WIDGET (self)) / 2.0 / self->zoom;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

void
pl_graph_canvas_zoom_fit (PlGraphCanvas *self)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self));
  if (self->layout == NULL)
    return;
  self->zoom = fit_zoom (self);
  center_point (self, self->layout->width / 2, self->layout->height / 2);
  self->view_set = gtk_widget_get_width (GTK_WIDGET (self)) > 0;
}

/* All of it when that is legible, else its beginning at a zoom that shows
 * text (the overview of a deep model is a thin line; the 0 key still fits
 * it). */
void
canvas_initial_view (PlGraphCanvas *self)
{
  pl_graph_canvas_zoom_fit (self);
  double w = gtk_widget_get_width (GTK_WIDGET (self)), h = gtk_widget_get_height (GTK_WIDGET (self));
  if (self->layout == NULL || self->layout->n_nodes == 0 || self->zoom >= FIRST_ZOOM || w <= 0)
    return;
  /* Where the data enters: the first box along the flow. */
  const PlGraphLayout *l = self->layout;
  bool lr = l->width > l->height;
  int first = 0;
  for (int i = 1; i < l->n_nodes; i++)
    if (lr ? l->nodes[i].x < l->nodes[first].x : l->nodes[i].y < l->nodes[first].y)
      first = i;
  self->zoom = FIRST_ZOOM;
  self->ox = lr ? 0 : l->nodes[first].x - w / 2 / self->zoom;
  self->oy = lr ? l->nodes[first].y - h / 2 / self->zoom : 0;
}

void
pl_graph_canvas_zoom_by (PlGraphCanvas *self, double factor)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self) && factor > 0);
  zoom_at (self, self->zoom * factor, gtk_widget_get_width (GTK_WIDGET (self)) / 2.0,
           gtk_widget_get_height (GTK_WIDGET (self)) / 2.0);
}

void
pl_graph_canvas_pan_by (PlGraphCanvas *self, double dx, double dy)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self));
  self->ox += dx / self->zoom;
  self->oy += dy / self->zoom;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

void
pl_graph_canvas_get_view (PlGraphCanvas *self, double *x, double *y, double *zoom)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self));
  if (x != NULL)
    *x = self->ox;
  if (y != NULL)
    *y = self->oy;
  if (zoom != NULL)
    *zoom = self->zoom;
}

void
pl_graph_canvas_center_on (PlGraphCanvas *self, const char *key)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self));
  double x, y;
  if (!canvas_key_center (self, key, &x, &y))
    return;
  if (self->zoom < FOCUS_ZOOM)
    self->zoom = MIN (FOCUS_ZOOM, ZOOM_MAX);
  center_point (self, x, y);
  self->view_set = true;
}

/* --- input ---------------------------------------------------------------------- */

/* Key of the box or cluster at widget point (wx, wy), or NULL; the box's
 * index in *node (or -1). */
static const char *
key_at (PlGraphCanvas *self, double wx, double wy, int *node)
{
  *node = -1;
  if (self->scene == NULL)
    return NULL;
  int cluster;
  *node = pl_graph_scene_hit (self->scene, self->ox + wx / self->zoom, self->oy + wy / self->zoom, &cluster);
  if (*node >= 0)
    return self->layout->nodes[*node].key;
  return cluster >= 0 ? self->layout->clusters[cluster].key : NULL;
}

static void
activate_key (PlGraphCanvas *self, const char *key)
{
  g_autofree char *k = g_strdup (key);
  g_signal_emit (self, canvas_signals[SIGNAL_NODE_ACTIVATED], 0, k);
  pl_graph_canvas_toggle_fusion (self, k);
}

static void
click_pressed (GtkGestureClick *gesture, int n_press, double wx, double wy, PlGraphCanvas *self)
{
  gtk_widget_grab_focus (GTK_WIDGET (self));
  int node;
  const char *key = key_at (self, wx, wy, &node);
  if (n_press == 1)
    pl_graph_canvas_select (self, key);
  else if (n_press == 2 && key != NULL)
    activate_key (self, key);
}

static void
drag_begin (GtkGestureDrag *gesture, double x, double y, PlGraphCanvas *self)
{
  self->drag_ox = self->ox;
  self->drag_oy = self->oy;
}

static void
drag_update (GtkGestureDrag *gesture, double dx, double dy, PlGraphCanvas *self)
{
  if (hypot (dx, dy) > 3)
    gtk_widget_set_cursor_from_name (GTK_WIDGET (self), "grabbing");
  self->ox = self->drag_ox - dx / self->zoom;
  self->oy = self->drag_oy - dy / self->zoom;
  self->view_set = true;
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

static void
drag_end (GtkGestureDrag *gesture, double dx, double dy, PlGraphCanvas *self)
{
  gtk_widget_set_cursor (GTK_WIDGET (self), NULL);
}

static gboolean
scrolled (GtkEventControllerScroll *ctl, double dx, double dy, PlGraphCanvas *self)
{
  GdkModifierType state = gtk_event_controller_get_current_event_state (GTK_EVENT_CONTROLLER (ctl));
  bool wheel = gtk_event_controller_scroll_get_unit (ctl) == GDK_SCROLL_UNIT_WHEEL;
  double wx = self->pointer_in ? self->pointer_x : gtk_widget_get_width (GTK_WIDGET (self)) / 2.0;
  double wy = self->pointer_in ? self->pointer_y : gtk_widget_get_height (GTK_WIDGET (self)) / 2.0;
  self->view_set = true;
  if ((state & GDK_CONTROL_MASK) || (wheel && !(state & GDK_SHIFT_MASK)))
    {
      /* A mouse wheel notch zooms by 15%; smooth deltas proportionally. */
      double f = pow (1.15, -(wheel ? dy : dy / 10.0));
      zoom_at (self, self->zoom * f, wx, wy);
    }
  else if (wheel)
    pl_graph_canvas_pan_by (self, dy * 60, dx * 60);  /* Shift+wheel: sideways */
  else
    pl_graph_canvas_pan_by (self, dx, dy);  /* touchpad: pixels */
  return TRUE;
}

static void
pinch_begin (GtkGesture *gesture, GdkEventSequence *seq, PlGraphCanvas *self)
{
  self->pinch_zoom = self->zoom;
}

static void
pinch_changed (GtkGestureZoom *gesture, double scale, PlGraphCanvas *self)
{
  double x, y;
  if (!gtk_gesture_get_bounding_box_center (GTK_GESTURE (gesture), &x, &y))
    {
      x = gtk_widget_get_width (GTK_WIDGET (self)) / 2.0;
      y = gtk_widget_get_height (GTK_WIDGET (self)) / 2.0;
    }
  self->view_set = true;
  zoom_at (self, self->pinch_zoom * scale, x, y);
}

static void
set_hover (PlGraphCanvas *self, int node)
{
  if (self->scene == NULL || self->scene->hover == node)
    return;
  pl_graph_scene_set_hover (self->scene, node);
  canvas_scene_changed (self);
}

static void
motion (GtkEventControllerMotion *ctl, double wx, double wy, PlGraphCanvas *self)
{
  self->pointer_x = wx;
  self->pointer_y = wy;
  self->pointer_in = true;
  int node;
  key_at (self, wx, wy, &node);
  set_hover (self, node);
}

static void
leave (GtkEventControllerMotion *ctl, PlGraphCanvas *self)
{
  self->pointer_in = false;
  set_hover (self, -1);
}

static gboolean
key_pressed (GtkEventControllerKey *ctl, guint keyval, guint keycode, GdkModifierType state,
             PlGraphCanvas *self)
{
  double w = gtk_widget_get_width (GTK_WIDGET (self)), h = gtk_widget_get_height (GTK_WIDGET (self));
  self->view_set = true;
  switch (keyval)
    {
    case GDK_KEY_plus: case GDK_KEY_equal: case GDK_KEY_KP_Add:
      pl_graph_canvas_zoom_by (self, 1.25);
      return TRUE;
    case GDK_KEY_minus: case GDK_KEY_KP_Subtract:
      pl_graph_canvas_zoom_by (self, 0.8);
      return TRUE;
    case GDK_KEY_0: case GDK_KEY_KP_0: case GDK_KEY_Home:
      pl_graph_canvas_zoom_fit (self);
      return TRUE;
    case GDK_KEY_Left:  pl_graph_canvas_pan_by (self, -w * 0.15, 0); return TRUE;
    case GDK_KEY_Right: pl_graph_canvas_pan_by (self, w * 0.15, 0);  return TRUE;
    case GDK_KEY_Up:    pl_graph_canvas_pan_by (self, 0, -h * 0.15); return TRUE;
    case GDK_KEY_Down:  pl_graph_canvas_pan_by (self, 0, h * 0.15);  return TRUE;
    case GDK_KEY_Return: case GDK_KEY_KP_Enter:
      if (self->selected_key == NULL)
        return FALSE;
      activate_key (self, self->selected_key);
      return TRUE;
    case GDK_KEY_Escape:
      if (self->selected_key == NULL)
        return FALSE;
      pl_graph_canvas_select (self, NULL);
      return TRUE;
    default:
      return FALSE;
    }
}

gboolean
canvas_query_tooltip (GtkWidget *widget, int wx, int wy, gboolean keyboard, GtkTooltip *tooltip)
{
  PlGraphCanvas *self = PL_GRAPH_CANVAS (widget);
  int node;
  if (keyboard || key_at (self, wx, wy, &node) == NULL || node < 0)
    return FALSE;
  const PlGraphScene *sc = self->scene;
  g_autofree char *title = g_markup_escape_text (pl_graph_scene_node_title (sc, node), -1);
  const char *sub_raw = pl_graph_scene_node_subtitle (sc, node);
  g_autofree char *sub = g_markup_escape_text (sub_raw != NULL ? sub_raw : "", -1);
  static const char *const states[] = { "", "", "\nadded in this step", "\nchanged in this step",
                                        "\nremoved in this step" };
  g_autofree char *detail = sc->detail[node] != NULL ? g_markup_printf_escaped ("\n%s", sc->detail[node]) : NULL;
  g_autofree char *markup = g_strdup_printf ("<b>%s</b>\n%s%s%s%s%s", title, sub, detail != NULL ? detail : "",
                                             states[sc->node_state[node] % 5],
                                             sc->annotation[node] != NULL ? "\n" : "",
                                             sc->annotation[node] != NULL ? sc->annotation[node] : "");
  gtk_tooltip_set_markup (tooltip, markup);
  return TRUE;
}

void
canvas_input_init (PlGraphCanvas *self)
{
  GtkWidget *widget = GTK_WIDGET (self);
  GtkGesture *click = gtk_gesture_click_new ();
  gtk_gesture_single_set_button (GTK_GESTURE_SINGLE (click), GDK_BUTTON_PRIMARY);
  g_signal_connect (click, "pressed", G_CALLBACK (click_pressed), self);
  gtk_widget_add_controller (widget, GTK_EVENT_CONTROLLER (click));

  /* Drag with the primary or the middle button. */
  for (guint button = GDK_BUTTON_PRIMARY; button <= GDK_BUTTON_MIDDLE; button++)
    {
      GtkGesture *drag = gtk_gesture_drag_new ();
      gtk_gesture_single_set_button (GTK_GESTURE_SINGLE (drag), button);
      g_signal_connect (drag, "drag-begin", G_CALLBACK (drag_begin), self);
      g_signal_connect (drag, "drag-update", G_CALLBACK (drag_update), self);
      g_signal_connect (drag, "drag-end", G_CALLBACK (drag_end), self);
      gtk_widget_add_controller (widget, GTK_EVENT_CONTROLLER (drag));
    }

  GtkEventController *scroll = gtk_event_controller_scroll_new (GTK_EVENT_CONTROLLER_SCROLL_BOTH_AXES);
  g_signal_connect (scroll, "scroll", G_CALLBACK (scrolled), self);
  gtk_widget_add_controller (widget, scroll);

  GtkGesture *pinch = gtk_gesture_zoom_new ();
  g_signal_connect (pinch, "begin", G_CALLBACK (pinch_begin), self);
  g_signal_connect (pinch, "scale-changed", G_CALLBACK (pinch_changed), self);
  gtk_widget_add_controller (widget, GTK_EVENT_CONTROLLER (pinch));

  GtkEventController *hover = gtk_event_controller_motion_new ();
  g_signal_connect (hover, "motion", G_CALLBACK (motion), self);
  g_signal_connect (hover, "leave", G_CALLBACK (leave), self);
  gtk_widget_add_controller (widget, hover);

  GtkEventController *keys = gtk_event_controller_key_new ();
  g_signal_connect (keys, "key-pressed", G_CALLBACK (key_pressed), self);
  gtk_widget_add_controller (widget, keys);
}
