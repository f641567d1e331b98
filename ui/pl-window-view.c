/* pl-window-view.c — what the window shows of its document: the step on
 * the canvas, timeline and inspector, the titles and the diff legend, the
 * selection, search and zoom. Everything here runs on the main thread and
 * reads the document the worker (pl-window-worker.c) installed.
 */
#define G_LOG_DOMAIN "passlab"

#include "pl-window-private.h"

/* --- what is shown ------------------------------------------------------------------------ */

/* The header shows the file name over the step ("step 4 of 5: fuse-library");
 * self->subtitle holds both on one line (tests and the window title use it). */
void
pl_window_update_titles (PlWindow *self)
{
  g_clear_pointer (&self->subtitle, g_free);
  if (!self->doc)
    {
      gtk_label_set_text (self->title_label, "passlab");
      gtk_label_set_text (self->subtitle_label, "");
      gtk_widget_set_visible (GTK_WIDGET (self->subtitle_label), FALSE);
      gtk_window_set_title (GTK_WINDOW (self), "passlab");
      return;
    }
  g_autofree char *name = g_file_get_basename (self->doc->file);
  const PlStep *s = pl_window_current_step (self);
  int passes = pl_history_n_steps (self->doc->history) - 1;
  g_autofree char *where = NULL;
  if (passes == 0)
    where = g_strdup_printf ("%" G_GINT64_FORMAT " nodes, no passes run", s->stats.nodes);
  else if (self->step == 0)
    where = g_strdup_printf ("step 0 of %d: the loaded graph", passes);
  else
    where = g_strdup_printf ("step %d of %d: %s%s", self->step, passes, s->pass_name, s->changed ? "" : " (no change)");
  self->subtitle = g_strdup_printf ("%s — %s", name, where);
  gtk_label_set_text (self->title_label, name);
  gtk_label_set_text (self->subtitle_label, where);
  gtk_widget_set_visible (GTK_WIDGET (self->subtitle_label), TRUE);
  g_autofree char *title = g_strdup_printf ("%s — passlab", self->subtitle);
  gtk_window_set_title (GTK_WINDOW (self), title);
}

/* The legend over the canvas says what the diff colours mean for this step
 * (the colours are the canvas's, pl-graph-draw.c). */
static void
update_legend (PlWindow *self)
{
  const PlStep *s = pl_window_current_step (self);
  if (!s || self->step == 0)
    {
      gtk_widget_set_visible (GTK_WIDGET (self->legend_label), FALSE);
      return;
    }
  g_autofree char *markup = NULL;
  if (!s->changed || !s->diff)
    markup = g_markup_printf_escaped ("<b>%s</b> changed nothing", s->pass_name);
  else
    markup = g_markup_printf_escaped ("<b>%s</b> against step %d:  "
                                      "<span foreground='#26a269'>■</span> %u added   "
                                      "<span foreground='#e5a50a'>■</span> %u changed   "
                                      "<span foreground='#9a9a9a'>▢</span> %u removed (ghosted)",
                                      s->pass_name, self->step - 1, s->diff->added->len, s->diff->changed->len,
                                      s->diff->removed->len);
  gtk_label_set_markup (self->legend_label, markup);
  gtk_widget_set_visible (GTK_WIDGET (self->legend_label), TRUE);
}

void
pl_window_refresh_inspector (PlWindow *self)
{
  const PlStep *s = pl_window_current_step (self);
  pl_inspector_show (self->inspector, s ? s->graph : NULL, s ? pl_graph_canvas_get_selected (self->canvas) : NULL, s,
                     self->step);
}

void
pl_window_show_step (PlWindow *self, int i)
{
  const PlHistory *h = self->doc->history;
  self->step = CLAMP (i, 0, pl_history_n_steps (h) - 1);
  const PlStep *s = pl_history_step (h, self->step);
  const PlStep *prev = self->step > 0 ? pl_history_step (h, self->step - 1) : NULL;
  pl_graph_canvas_set_graph (self->canvas, s->graph, prev ? prev->graph : NULL, prev ? s->diff : NULL);
  pl_timeline_set_selected_step (self->timeline, self->step);
  pl_window_update_titles (self);
  update_legend (self);
  pl_window_refresh_inspector (self);
  pl_window_notify_state (self);
}

gboolean
pl_window_set_step (PlWindow *self, int i)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), FALSE);
  if (!self->doc || i < 0 || i >= pl_history_n_steps (self->doc->history))
    return FALSE;
  pl_window_show_step (self, i);
  return TRUE;
}

int
pl_window_get_step (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), -1);
  return self->doc ? self->step : -1;
}

gboolean
pl_window_step_forward (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), FALSE);
  return self->doc && pl_window_set_step (self, pl_timeline_next_step (self->timeline, self->step));
}

gboolean
pl_window_step_back (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), FALSE);
  return self->doc && pl_window_set_step (self, pl_timeline_prev_step (self->timeline, self->step));
}

void
pl_window_select_key (PlWindow *self, const char *key)
{
  pl_graph_canvas_select (self->canvas, key);
  if (key)
    pl_graph_canvas_center_on (self->canvas, key);
  pl_window_refresh_inspector (self);
}

gboolean
pl_window_select (PlWindow *self, const char *name_or_key)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), FALSE);
  const PlStep *s = pl_window_current_step (self);
  if (!s || !name_or_key)
    return FALSE;
  g_autofree char *key = pl_graph_key_for_name (s->graph, name_or_key);
  if (!key)
    return FALSE;
  pl_window_select_key (self, key);
  return TRUE;
}

gboolean
pl_window_search_next (PlWindow *self, const char *text)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), FALSE);
  if (!self->doc || !pl_graph_canvas_get_layout (self->canvas) || !text || !*text)
    return FALSE;
  gboolean found = pl_graph_canvas_search_next (self->canvas, text);
  gtk_label_set_text (self->search_status, found ? "" : "no match");
  if (found)
    gtk_widget_remove_css_class (GTK_WIDGET (self->search_entry), "error");
  else
    gtk_widget_add_css_class (GTK_WIDGET (self->search_entry), "error");
  pl_window_refresh_inspector (self);
  return found;
}

void
pl_window_zoom (PlWindow *self, int direction)
{
  if (!self->doc || !pl_graph_canvas_get_layout (self->canvas))
    return;
  if (direction == 0)
    pl_graph_canvas_zoom_fit (self->canvas);
  else
    pl_graph_canvas_zoom_by (self->canvas, direction > 0 ? 1.25 : 0.8);
}
