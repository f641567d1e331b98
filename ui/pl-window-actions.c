/* pl-window-actions.c — the window's actions ("win.*") and what they open:
 * the file chooser, the export dialog, recent files, drag and drop, and the
 * window state saved between sessions.
 *
 * The actions are one GActionEntry table; their enabled-ness is bound to the
 * window's read-only properties (busy, has-graph, can-run, can-step-*), so
 * no code toggles it by hand. Shortcuts are set once, by the application.
 */
#define G_LOG_DOMAIN "passlab"

/* GtkFileChooserNative is what GTK 4.8 has; keep newer GTKs quiet about it. */
#define GDK_VERSION_MIN_REQUIRED GDK_VERSION_4_8
#define GDK_VERSION_MAX_ALLOWED GDK_VERSION_4_8

#include "pl-window-private.h"

#include "pl-tune-panel.h"

/* --- open ------------------------------------------------------------------------------ */

static void
add_graph_filters (GtkFileChooser *chooser)
{
  GtkFileFilter *graphs = gtk_file_filter_new ();
  gtk_file_filter_set_name (graphs, "Graphs (ONNX, .graph)");
  gtk_file_filter_add_pattern (graphs, "*.onnx");
  gtk_file_filter_add_pattern (graphs, "*.graph");
  gtk_file_chooser_add_filter (chooser, graphs);
  g_object_unref (graphs);
  GtkFileFilter *all = gtk_file_filter_new ();
  gtk_file_filter_set_name (all, "All files");
  gtk_file_filter_add_pattern (all, "*");
  gtk_file_chooser_add_filter (chooser, all);
  g_object_unref (all);
}

static void
on_open_response (GtkNativeDialog *dialog, int response, PlWindow *self)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr (GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));
      if (file)
        pl_window_open (self, file, NULL);
    }
  g_object_unref (dialog);
}

static void
action_open (GSimpleAction *action, GVariant *param, gpointer user_data)
{
  PlWindow *self = user_data;
  GtkFileChooserNative *dialog =
    gtk_file_chooser_native_new ("Open a Graph", GTK_WINDOW (self), GTK_FILE_CHOOSER_ACTION_OPEN, "_Open", "_Cancel");
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (dialog), TRUE);
  add_graph_filters (GTK_FILE_CHOOSER (dialog));
  GFile *current = pl_window_get_file (self);
  if (current)
    {
      g_autoptr (GFile) dir = g_file_get_parent (current);
      if (dir)
        gtk_file_chooser_set_current_folder (GTK_FILE_CHOOSER (dialog), dir, NULL);
    }
  g_signal_connect (dialog, "response", G_CALLBACK (on_open_response), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

static void
action_open_recent (GSimpleAction *action, GVariant *param, gpointer user_data)
{
  g_autoptr (GFile) file = g_file_new_for_uri (g_variant_get_string (param, NULL));
  pl_window_open (PL_WINDOW (user_data), file, NULL);
}

/* --- export ------------------------------------------------------------------------------- */

static void
on_export_response (GtkNativeDialog *dialog, int response, PlWindow *self)
{
  GtkFileChooser *chooser = GTK_FILE_CHOOSER (dialog);
  g_autoptr (GFile) file = response == GTK_RESPONSE_ACCEPT ? gtk_file_chooser_get_file (chooser) : NULL;
  g_autofree char *path = file ? g_file_get_path (file) : NULL;
  if (path)
    {
      /* No extension typed: take the one of the chosen filter. */
      if (!g_str_has_suffix (path, ".png") && !g_str_has_suffix (path, ".svg"))
        {
          GtkFileFilter *filter = gtk_file_chooser_get_filter (chooser);
          const char *name = filter ? gtk_file_filter_get_name (filter) : NULL;
          char *with = g_strconcat (path, name && g_str_has_prefix (name, "SVG") ? ".svg" : ".png", NULL);
          g_free (path);
          path = with;
        }
      const char *extent = gtk_file_chooser_get_choice (chooser, "extent");
      gboolean whole = !extent || g_str_equal (extent, "whole");
      g_autoptr (GError) error = NULL;
      if (pl_graph_canvas_export (pl_window_get_canvas (self), path, whole, &error))
        {
          g_autofree char *msg = g_strdup_printf ("Exported %s to %s", whole ? "the whole graph" : "the view", path);
          pl_window_set_banner (self, msg, FALSE);
        }
      else
        {
          g_autofree char *msg = g_strdup_printf ("Could not export: %s", error->message);
          pl_window_set_banner (self, msg, TRUE);
        }
    }
  g_object_unref (dialog);
}

static void
action_export (GSimpleAction *action, GVariant *param, gpointer user_data)
{
  PlWindow *self = user_data;
  GtkFileChooserNative *dialog = gtk_file_chooser_native_new ("Export Image", GTK_WINDOW (self),
                                                              GTK_FILE_CHOOSER_ACTION_SAVE, "_Export", "_Cancel");
  GtkFileChooser *chooser = GTK_FILE_CHOOSER (dialog);
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (dialog), TRUE);

  const char *const patterns[] = { "*.png", "*.svg" };
  const char *const names[] = { "PNG image", "SVG drawing" };
  for (int i = 0; i < 2; i++)
    {
      GtkFileFilter *f = gtk_file_filter_new ();
      gtk_file_filter_set_name (f, names[i]);
      gtk_file_filter_add_pattern (f, patterns[i]);
      gtk_file_chooser_add_filter (chooser, f);
      g_object_unref (f);
    }
  const char *options[] = { "whole", "view", NULL };
  const char *labels[] = { "The whole graph", "The visible part", NULL };
  gtk_file_chooser_add_choice (chooser, "extent", "Export", options, labels);
  gtk_file_chooser_set_choice (chooser, "extent", "whole");

  g_autofree char *base = g_file_get_basename (pl_window_get_file (self));
  char *dot = strrchr (base, '.');
  if (dot)
    *dot = '\0';
  g_autofree char *name = g_strdup_printf ("%s-step%d.png", base, pl_window_get_step (self));
  gtk_file_chooser_set_current_name (chooser, name);
  g_signal_connect (dialog, "response", G_CALLBACK (on_export_response), self);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

/* --- the rest ---------------------------------------------------------------------------------- */

static void
action_run (GSimpleAction *action, GVariant *param, gpointer user_data)
{
  pl_window_run_pipeline (PL_WINDOW (user_data), NULL);
}

static void
action_cancel (GSimpleAction *action, GVariant *param, gpointer user_data)
{
  pl_window_cancel (PL_WINDOW (user_data));
}

static void
action_step_back (GSimpleAction *action, GVariant *param, gpointer user_data)
{
  pl_window_step_back (PL_WINDOW (user_data));
}

static void
action_step_forward (GSimpleAction *action, GVariant *param, gpointer user_data)
{
  pl_window_step_forward (PL_WINDOW (user_data));
}

static void
action_zoom_fit (GSimpleAction *action, GVariant *param, gpointer user_data)
{
  pl_window_zoom (PL_WINDOW (user_data), 0);
}

static void
action_zoom_in (GSimpleAction *action, GVariant *param, gpointer user_data)
{
  pl_window_zoom (PL_WINDOW (user_data), +1);
}

static void
action_zoom_out (GSimpleAction *action, GVariant *param, gpointer user_data)
{
  pl_window_zoom (PL_WINDOW (user_data), -1);
}

static void
action_dismiss_banner (GSimpleAction *action, GVariant *param, gpointer user_data)
{
  pl_window_set_banner (PL_WINDOW (user_data), NULL, FALSE);
}

/* --- tuning ------------------------------------------------------------------------------ */

/* Tunes the Conv selected on the canvas (else the tuning page's pick) and
 * shows the tuning page. */
static void
action_tune_conv (GSimpleAction *action, GVariant *param, gpointer user_data)
{
  PlWindow *self = user_data;
  PlTunePanel *panel = pl_tune_panel_get_for_window (self);
  const char *key = pl_graph_canvas_get_selected (self->canvas);
  if (key)
    pl_tune_panel_set_conv (panel, key);
  pl_window_show_bottom_page (self, "tuning");
  pl_tune_panel_run (panel, NULL);  /* a refusal shows on the page */
}

static const GActionEntry win_actions[] = {
  { .name = "open", .activate = action_open },
  { .name = "open-recent", .activate = action_open_recent, .parameter_type = "s" },
  { .name = "run", .activate = action_run },
  { .name = "cancel", .activate = action_cancel },
  { .name = "step-back", .activate = action_step_back },
  { .name = "step-forward", .activate = action_step_forward },
  { .name = "export", .activate = action_export },
  { .name = "zoom-fit", .activate = action_zoom_fit },
  { .name = "zoom-in", .activate = action_zoom_in },
  { .name = "zoom-out", .activate = action_zoom_out },
  { .name = "dismiss-banner", .activate = action_dismiss_banner },
  { .name = "tune-conv", .activate = action_tune_conv },
};

/* Which window property enables which action. */
static const struct {
  const char *action;
  const char *property;
} enabled_by[] = {
  { "run", "can-run" },
  { "cancel", "busy" },
  { "step-back", "can-step-back" },
  { "step-forward", "can-step-forward" },
  { "export", "has-graph" },
  { "tune-conv", "has-graph" },
  { "zoom-fit", "has-graph" },
  { "zoom-in", "has-graph" },
  { "zoom-out", "has-graph" },
};

/* --- recent files ------------------------------------------------------------------------ */

static gboolean
is_graph_uri (const char *uri)
{
  return g_str_has_suffix (uri, ".onnx") || g_str_has_suffix (uri, ".graph");
}

static int
by_modified_desc (gconstpointer a, gconstpointer b)
{
  return g_date_time_compare (gtk_recent_info_get_modified ((GtkRecentInfo *) b),
                              gtk_recent_info_get_modified ((GtkRecentInfo *) a));
}

void
pl_window_update_recent (PlWindow *self)
{
  GList *items = gtk_recent_manager_get_items (gtk_recent_manager_get_default ());
  GList *graphs = NULL;
  for (GList *l = items; l; l = l->next)
    if (is_graph_uri (gtk_recent_info_get_uri (l->data)) && gtk_recent_info_exists (l->data))
      graphs = g_list_prepend (graphs, l->data);
  graphs = g_list_sort (graphs, by_modified_desc);

  g_menu_remove_all (self->recent_menu);
  int n = 0;
  for (GList *l = graphs; l && n < 10; l = l->next, n++)
    {
      const char *uri = gtk_recent_info_get_uri (l->data);
      g_autoptr (GMenuItem) item = g_menu_item_new (gtk_recent_info_get_display_name (l->data), NULL);
      g_menu_item_set_action_and_target_value (item, "win.open-recent", g_variant_new_string (uri));
      g_menu_append_item (self->recent_menu, item);
    }
  if (n == 0)
    g_menu_append (self->recent_menu, "No recent graphs", "win.no-recent-graphs");
  g_list_free (graphs);
  g_list_free_full (items, (GDestroyNotify) gtk_recent_info_unref);
}

void
pl_window_add_recent (PlWindow *self, GFile *file)
{
  /* Only windows a person opened record recent files (not tests, not screenshots). */
  if (!self->state_loaded)
    return;
  g_autofree char *uri = g_file_get_uri (file);
  gtk_recent_manager_add_item (gtk_recent_manager_get_default (), uri);
}

static void
on_recent_changed (GtkRecentManager *manager, PlWindow *self)
{
  pl_window_update_recent (self);
}

/* --- drag and drop ----------------------------------------------------------------------- */

static gboolean
on_drop (GtkDropTarget *target, const GValue *value, double x, double y, PlWindow *self)
{
  GFile *file = NULL;
  if (G_VALUE_HOLDS (value, G_TYPE_FILE))
    file = g_value_get_object (value);
  else if (G_VALUE_HOLDS (value, GDK_TYPE_FILE_LIST))
    {
      GSList *files = gdk_file_list_get_files (g_value_get_boxed (value));
      file = files ? files->data : NULL;
      g_slist_free (files);
    }
  if (!file)
    return FALSE;
  pl_window_open (self, file, NULL);
  return TRUE;
}

/* --- saved state --------------------------------------------------------------------------- */

static char *
state_path (void)
{
  return g_build_filename (g_get_user_config_dir (), "passlab", "state.ini", NULL);
}

static gboolean
on_close_request (GtkWindow *window, PlWindow *self)
{
  pl_window_save_state (self);
  return FALSE;
}

void
pl_window_load_state (PlWindow *self)
{
  g_return_if_fail (PL_IS_WINDOW (self));
  if (!self->state_loaded)
    g_signal_connect (self, "close-request", G_CALLBACK (on_close_request), self);
  self->state_loaded = TRUE;

  g_autofree char *path = state_path ();
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  if (!g_key_file_load_from_file (kf, path, G_KEY_FILE_NONE, NULL))
    return;
  /* Missing or silly values keep the template's defaults. */
  int w = g_key_file_get_integer (kf, "window", "width", NULL);
  int h = g_key_file_get_integer (kf, "window", "height", NULL);
  if (w >= 400 && h >= 300 && w <= 16384 && h <= 16384)
    gtk_window_set_default_size (GTK_WINDOW (self), w, h);
  if (g_key_file_get_boolean (kf, "window", "maximized", NULL))
    gtk_window_maximize (GTK_WINDOW (self));
  int outer = g_key_file_get_integer (kf, "window", "inspector-split", NULL);
  int inner = g_key_file_get_integer (kf, "window", "timeline-split", NULL);
  if (outer > 200)
    gtk_paned_set_position (self->outer_paned, outer);
  if (inner > 100)
    gtk_paned_set_position (self->inner_paned, inner);
  g_autofree char *pipeline = g_key_file_get_string (kf, "pipeline", "passes", NULL);
  if (pipeline && *pipeline)
    gtk_editable_set_text (GTK_EDITABLE (self->pipeline_entry), pipeline);
}

void
pl_window_save_state (PlWindow *self)
{
  g_return_if_fail (PL_IS_WINDOW (self));
  g_autofree char *path = state_path ();
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  g_key_file_load_from_file (kf, path, G_KEY_FILE_KEEP_COMMENTS, NULL);
  int w = 0, h = 0;
  gtk_window_get_default_size (GTK_WINDOW (self), &w, &h);
  gboolean maximized = gtk_window_is_maximized (GTK_WINDOW (self));
  if (w > 0 && h > 0)
    {
      g_key_file_set_integer (kf, "window", "width", w);
      g_key_file_set_integer (kf, "window", "height", h);
    }
  g_key_file_set_boolean (kf, "window", "maximized", maximized);
  g_key_file_set_integer (kf, "window", "inspector-split", gtk_paned_get_position (self->outer_paned));
  g_key_file_set_integer (kf, "window", "timeline-split", gtk_paned_get_position (self->inner_paned));
  g_key_file_set_string (kf, "pipeline", "passes", gtk_editable_get_text (GTK_EDITABLE (self->pipeline_entry)));

  g_autofree char *dir = g_path_get_dirname (path);
  g_autoptr (GError) error = NULL;
  if (g_mkdir_with_parents (dir, 0700) != 0 || !g_key_file_save_to_file (kf, path, &error))
    g_debug ("cannot save the window state to %s: %s", path, error ? error->message : g_strerror (errno));
}

/* --- setup --------------------------------------------------------------------------------- */

void
pl_window_actions_init (PlWindow *self)
{
  g_action_map_add_action_entries (G_ACTION_MAP (self), win_actions, G_N_ELEMENTS (win_actions), self);
  for (guint i = 0; i < G_N_ELEMENTS (enabled_by); i++)
    g_object_bind_property (self, enabled_by[i].property,
                            g_action_map_lookup_action (G_ACTION_MAP (self), enabled_by[i].action), "enabled",
                            G_BINDING_SYNC_CREATE);

  /* Toggles that are simply properties of a widget. */
  g_autoptr (GPropertyAction) search = g_property_action_new ("search", self->search_bar, "search-mode-enabled");
  g_action_map_add_action (G_ACTION_MAP (self), G_ACTION (search));
  g_autoptr (GPropertyAction) hide = g_property_action_new ("hide-unchanged", self->timeline, "hide-unchanged");
  g_action_map_add_action (G_ACTION_MAP (self), G_ACTION (hide));

  GtkDropTarget *drop = gtk_drop_target_new (G_TYPE_INVALID, GDK_ACTION_COPY);
  gtk_drop_target_set_gtypes (drop, (GType[]) { GDK_TYPE_FILE_LIST, G_TYPE_FILE }, 2);
  g_signal_connect (drop, "drop", G_CALLBACK (on_drop), self);
  gtk_widget_add_controller (GTK_WIDGET (self), GTK_EVENT_CONTROLLER (drop));

  self->recent_menu = g_menu_new ();
  gtk_menu_button_set_menu_model (self->recent_button, G_MENU_MODEL (self->recent_menu));
  g_signal_connect_object (gtk_recent_manager_get_default (), "changed", G_CALLBACK (on_recent_changed), self, 0);
  pl_window_update_recent (self);
}
