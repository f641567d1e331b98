/* pl-window.c — the workbench window: the open document, its properties,
 * the banner, the bottom pages, the template and its callbacks.
 *
 * The window's work is spread over files of one concern each: the worker
 * that loads, runs pipelines and lays out (pl-window-worker.c, which
 * explains how jobs replace each other), what is shown of the document (the
 * step, the titles and legend, selection, search and zoom:
 * pl-window-view.c), and actions, dialogs, drag and drop, recent files and
 * the saved window state (pl-window-actions.c).
 */
#define G_LOG_DOMAIN "passlab"

#include "pl-window-private.h"

#include "passlab-resources.h"
#include "pl-memory-view.h"
#include "pl-run-panel.h"
#include "pl-script-panel.h"
#include "pl-tune-panel.h"

/* --- documents -------------------------------------------------------------------- */

static void
document_clear (PlDocument *doc)
{
  g_clear_object (&doc->file);
  g_clear_pointer (&doc->history, pl_history_free);
}

PlDocument *
pl_document_ref (PlDocument *doc)
{
  return g_rc_box_acquire (doc);
}

void
pl_document_unref (PlDocument *doc)
{
  g_rc_box_release_full (doc, (GDestroyNotify) document_clear);
}

/* --- the window --------------------------------------------------------------------- */

G_DEFINE_FINAL_TYPE (PlWindow, pl_window, GTK_TYPE_APPLICATION_WINDOW)

enum {
  PROP_0,
  PROP_BUSY,
  PROP_HAS_GRAPH,
  PROP_CAN_RUN,
  PROP_CAN_STEP_BACK,
  PROP_CAN_STEP_FORWARD,
  N_PROPS
};
static GParamSpec *properties[N_PROPS];

/* The pipeline presets of the header bar's drop-down; the last entry of the
 * drop-down, "Custom", stands for whatever else is typed in the entry. */
static const struct {
  const char *label;
  const char *spec;
} presets[] = {
  { "Full pipeline", PL_WINDOW_DEFAULT_PIPELINE },
  { "Simplify", "simplify" },
  { "Simplify, decompose", "simplify,decompose" },
  { "Reshape sinking", "simplify,reshape-sink" },
  { "Library fusion", "simplify,decompose,fuse-library" },
  { "Loop fusion", "simplify,decompose,fuse-loops" },
};

void
pl_window_notify_state (PlWindow *self)
{
  for (int p = PROP_BUSY; p < N_PROPS; p++)
    g_object_notify_by_pspec (G_OBJECT (self), properties[p]);
}

static gboolean
can_step (PlWindow *self, int direction)
{
  if (!self->doc || self->busy)
    return FALSE;
  int to = direction > 0 ? pl_timeline_next_step (self->timeline, self->step)
                         : pl_timeline_prev_step (self->timeline, self->step);
  return to >= 0;
}

const PlStep *
pl_window_current_step (PlWindow *self)
{
  return self->doc ? pl_history_step (self->doc->history, self->step) : NULL;
}

/* --- banner ----------------------------------------------------------------------------- */

void
pl_window_set_banner (PlWindow *self, const char *message, gboolean is_error)
{
  g_clear_pointer (&self->banner_text, g_free);
  if (!message)
    {
      gtk_revealer_set_reveal_child (self->banner_revealer, FALSE);
      return;
    }
  if (is_error)
    {
      self->banner_text = g_strdup (message);
      g_debug ("%s", message);
    }
  gtk_label_set_text (self->banner_label, message);
  /* Parse errors quote the line with a caret under the column: keep it
   * aligned, in monospace and unwrapped. (Wrapped, such a label also made
   * GTK 4.8 measure the banner's height for a width inconsistently now and
   * then: a critical warning.) */
  bool preformatted = strchr (message, '\n') != NULL;
  gtk_label_set_wrap (self->banner_label, !preformatted);
  if (preformatted)
    gtk_widget_add_css_class (GTK_WIDGET (self->banner_label), "monospace");
  else
    gtk_widget_remove_css_class (GTK_WIDGET (self->banner_label), "monospace");
  gtk_image_set_from_icon_name (self->banner_icon, is_error ? "dialog-error-symbolic" : "dialog-information-symbolic");
  gtk_widget_remove_css_class (self->banner_box, is_error ? "info" : "error");
  gtk_widget_add_css_class (self->banner_box, is_error ? "error" : "info");
  gtk_revealer_set_reveal_child (self->banner_revealer, TRUE);
}

void
pl_window_show_error (PlWindow *self, const char *message)
{
  g_return_if_fail (PL_IS_WINDOW (self));
  pl_window_set_banner (self, message, TRUE);
}

const char *
pl_window_get_error (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), NULL);
  return self->banner_text;
}

/* --- bottom pages --------------------------------------------------------------------------- */

void
pl_window_add_bottom_page (PlWindow *self, GtkWidget *page, const char *name, const char *title)
{
  g_return_if_fail (PL_IS_WINDOW (self));
  g_return_if_fail (GTK_IS_WIDGET (page));
  /* A page wider than the room scrolls sideways instead of being clipped
   * (the panels' tables and charts want 550-820 px; a window 800 px wide
   * leaves the left pane about 480). */
  GtkWidget *sw = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (sw), GTK_POLICY_AUTOMATIC, GTK_POLICY_NEVER);
  gtk_scrolled_window_set_propagate_natural_width (GTK_SCROLLED_WINDOW (sw), TRUE);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (sw), page);
  gtk_stack_add_titled (self->bottom_stack, sw, name, title);
}

void
pl_window_show_bottom_page (PlWindow *self, const char *name)
{
  g_return_if_fail (PL_IS_WINDOW (self));
  gtk_stack_set_visible_child_name (self->bottom_stack, name);
}

GtkWidget *
pl_window_get_script_panel (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), NULL);
  return self->script_panel;
}

/* --- accessors ------------------------------------------------------------------------------ */

gboolean
pl_window_is_busy (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), FALSE);
  return self->busy;
}

gboolean
pl_window_has_graph (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), FALSE);
  return self->doc != NULL;
}

GFile *
pl_window_get_file (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), NULL);
  return self->doc ? self->doc->file : NULL;
}

const PlHistory *
pl_window_get_history (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), NULL);
  return self->doc ? self->doc->history : NULL;
}

const char *
pl_window_get_subtitle (PlWindow *self)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), NULL);
  return self->subtitle;
}

PlGraphCanvas *
pl_window_get_canvas (PlWindow *self)
{
  return self->canvas;
}

PlTimeline *
pl_window_get_timeline (PlWindow *self)
{
  return self->timeline;
}

PlInspector *
pl_window_get_inspector (PlWindow *self)
{
  return self->inspector;
}

GMenuModel *
pl_window_get_recent_menu (PlWindow *self)
{
  return G_MENU_MODEL (self->recent_menu);
}

gboolean
pl_window_save_screenshot (PlWindow *self, const char *path, GError **error)
{
  g_return_val_if_fail (PL_IS_WINDOW (self), FALSE);
  GtkWidget *widget = GTK_WIDGET (self);
  int width = gtk_widget_get_width (widget), height = gtk_widget_get_height (widget);
  GskRenderer *renderer = gtk_native_get_renderer (GTK_NATIVE (self));
  if (width <= 0 || height <= 0 || !renderer)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_FAILED, "the window is not shown yet");
      return FALSE;
    }
  g_autoptr (GdkPaintable) paintable = gtk_widget_paintable_new (widget);
  GtkSnapshot *snapshot = gtk_snapshot_new ();
  gdk_paintable_snapshot (paintable, snapshot, width, height);
  g_autoptr (GskRenderNode) node = gtk_snapshot_free_to_node (snapshot);
  if (!node)
    {
      g_set_error (error, PL_ERROR, PL_ERROR_FAILED, "the window drew nothing");
      return FALSE;
    }
  g_autoptr (GdkTexture) texture = gsk_renderer_render_texture (renderer, node, &GRAPHENE_RECT_INIT (0, 0, width, height));
  if (!texture || !gdk_texture_save_to_png (texture, path))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "cannot write %s", path);
      return FALSE;
    }
  return TRUE;
}

/* --- template callbacks -------------------------------------------------------------------- */

static void
on_canvas_selection_changed (PlGraphCanvas *canvas, const char *key, PlWindow *self)
{
  pl_window_refresh_inspector (self);
}

static void
on_inspector_key_activated (PlInspector *inspector, const char *key, PlWindow *self)
{
  pl_window_select_key (self, key);
}

static void
on_timeline_step_selected (PlTimeline *timeline, int step, PlWindow *self)
{
  if (self->doc && step != self->step)
    pl_window_show_step (self, step);
}

static void
on_hide_unchanged_changed (PlTimeline *timeline, GParamSpec *pspec, PlWindow *self)
{
  pl_window_notify_state (self);
}

static void
on_pipeline_entry_activate (GtkEntry *entry, PlWindow *self)
{
  if (self->doc && !self->busy)
    pl_window_run_pipeline (self, NULL);
}

/* The drop-down follows the entry: a preset when the text is one, else "Custom". */
static void
on_pipeline_entry_changed (GtkEntry *entry, PlWindow *self)
{
  if (self->ignore_preset)
    return;
  const char *text = gtk_editable_get_text (GTK_EDITABLE (entry));
  guint selected = G_N_ELEMENTS (presets);
  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    if (g_str_equal (presets[i].spec, text))
      selected = i;
  self->ignore_preset++;
  gtk_drop_down_set_selected (self->pipeline_dropdown, selected);
  self->ignore_preset--;
}

static void
on_preset_selected (GtkDropDown *dropdown, GParamSpec *pspec, PlWindow *self)
{
  guint i = gtk_drop_down_get_selected (dropdown);
  if (self->ignore_preset || i >= G_N_ELEMENTS (presets))
    return;
  self->ignore_preset++;
  gtk_editable_set_text (GTK_EDITABLE (self->pipeline_entry), presets[i].spec);
  self->ignore_preset--;
}

static void
on_search_activate (GtkSearchEntry *entry, PlWindow *self)
{
  pl_window_search_next (self, gtk_editable_get_text (GTK_EDITABLE (entry)));
}

/* Typing searches from the top again. */
static void
on_search_changed (GtkSearchEntry *entry, PlWindow *self)
{
  const char *text = gtk_editable_get_text (GTK_EDITABLE (entry));
  gtk_widget_remove_css_class (GTK_WIDGET (entry), "error");
  gtk_label_set_text (self->search_status, "");
  if (!*text || !self->doc || !pl_graph_canvas_get_layout (self->canvas))
    return;
  pl_graph_canvas_select (self->canvas, NULL);
  pl_window_search_next (self, text);
}

static void
on_search_stop (GtkSearchEntry *entry, PlWindow *self)
{
  gtk_search_bar_set_search_mode (self->search_bar, FALSE);
  gtk_widget_grab_focus (GTK_WIDGET (self->canvas));
}

/* --- GObject ------------------------------------------------------------------------------- */

static void
pl_window_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  PlWindow *self = PL_WINDOW (object);
  switch (prop_id)
    {
    case PROP_BUSY:
      g_value_set_boolean (value, self->busy);
      break;
    case PROP_HAS_GRAPH:
      g_value_set_boolean (value, self->doc != NULL);
      break;
    case PROP_CAN_RUN:
      g_value_set_boolean (value, self->doc != NULL && !self->busy);
      break;
    case PROP_CAN_STEP_BACK:
      g_value_set_boolean (value, can_step (self, -1));
      break;
    case PROP_CAN_STEP_FORWARD:
      g_value_set_boolean (value, can_step (self, +1));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
pl_window_dispose (GObject *object)
{
  PlWindow *self = PL_WINDOW (object);
  if (self->cancellable)
    g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  gtk_widget_dispose_template (GTK_WIDGET (self), PL_TYPE_WINDOW);
  G_OBJECT_CLASS (pl_window_parent_class)->dispose (object);
}

static void
pl_window_finalize (GObject *object)
{
  PlWindow *self = PL_WINDOW (object);
  /* The canvas is gone (template disposed): nothing points into the document now. */
  g_clear_pointer (&self->doc, pl_document_unref);
  g_free (self->subtitle);
  g_free (self->banner_text);
  g_free (self->pending_select);
  g_clear_object (&self->recent_menu);
  G_OBJECT_CLASS (pl_window_parent_class)->finalize (object);
}

static void
pl_window_class_init (PlWindowClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->get_property = pl_window_get_property;
  object_class->dispose = pl_window_dispose;
  object_class->finalize = pl_window_finalize;

  /* Read-only state that action enabled-ness is bound to. */
  properties[PROP_BUSY] = g_param_spec_boolean ("busy", NULL, NULL, FALSE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_HAS_GRAPH] =
    g_param_spec_boolean ("has-graph", NULL, NULL, FALSE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_CAN_RUN] = g_param_spec_boolean ("can-run", NULL, NULL, FALSE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_CAN_STEP_BACK] =
    g_param_spec_boolean ("can-step-back", NULL, NULL, FALSE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_CAN_STEP_FORWARD] =
    g_param_spec_boolean ("can-step-forward", NULL, NULL, FALSE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  /* Referencing the resource bundle keeps its object (and the constructor
   * that registers it) in programs that link the static ui library. */
  (void) passlab_get_resource ();
  g_type_ensure (PL_TYPE_GRAPH_CANVAS);
  g_type_ensure (PL_TYPE_TIMELINE);
  g_type_ensure (PL_TYPE_INSPECTOR);

  gtk_widget_class_set_template_from_resource (widget_class, "/org/passlab/Passlab/pl-window.ui");
  gtk_widget_class_bind_template_child (widget_class, PlWindow, title_label);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, subtitle_label);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, recent_button);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, pipeline_dropdown);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, preset_list);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, pipeline_entry);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, banner_revealer);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, banner_box);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, banner_icon);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, banner_label);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, search_bar);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, search_entry);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, search_status);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, outer_paned);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, inner_paned);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, view_stack);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, canvas_overlay);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, canvas);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, legend_label);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, timeline);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, bottom_stack);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, inspector);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, progress_revealer);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, progress_label);
  gtk_widget_class_bind_template_child (widget_class, PlWindow, progress_bar);
  gtk_widget_class_bind_template_callback (widget_class, on_pipeline_entry_activate);
  gtk_widget_class_bind_template_callback (widget_class, on_pipeline_entry_changed);
  gtk_widget_class_bind_template_callback (widget_class, on_search_activate);
  gtk_widget_class_bind_template_callback (widget_class, on_search_changed);
  gtk_widget_class_bind_template_callback (widget_class, on_search_stop);
}

static void
pl_window_init (PlWindow *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  self->pending_step = 0;

  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    gtk_string_list_append (self->preset_list, presets[i].label);
  gtk_string_list_append (self->preset_list, "Custom");
  g_signal_connect (self->pipeline_dropdown, "notify::selected", G_CALLBACK (on_preset_selected), self);
  gtk_editable_set_text (GTK_EDITABLE (self->pipeline_entry), PL_WINDOW_DEFAULT_PIPELINE);

  g_signal_connect (self->canvas, "selection-changed", G_CALLBACK (on_canvas_selection_changed), self);
  g_signal_connect (self->canvas, "layout-finished", G_CALLBACK (pl_window_on_layout_finished), self);
  g_signal_connect (self->inspector, "key-activated", G_CALLBACK (on_inspector_key_activated), self);
  g_signal_connect (self->timeline, "step-selected", G_CALLBACK (on_timeline_step_selected), self);
  g_signal_connect (self->timeline, "notify::hide-unchanged", G_CALLBACK (on_hide_unchanged_changed), self);
  gtk_search_bar_connect_entry (self->search_bar, GTK_EDITABLE (self->search_entry));
  gtk_stack_set_visible_child_name (self->view_stack, "empty");

  self->script_panel = pl_script_panel_new (self);
  pl_window_add_bottom_page (self, self->script_panel, "script", "Script");
  pl_window_add_bottom_page (self, pl_run_panel_new (self), "run", "Run");
  pl_window_add_bottom_page (self, pl_memory_view_new (self), "memory", "Memory");
  pl_window_add_bottom_page (self, pl_tune_panel_new (self), "tuning", "Tuning");

  pl_window_actions_init (self);
  pl_window_update_titles (self);
  pl_inspector_clear (self->inspector);
}

PlWindow *
pl_window_new (PlApplication *app)
{
  return g_object_new (PL_TYPE_WINDOW, "application", app, NULL);
}
