/* test-ui-window.c — drives the workbench window the way a person would
 * (open, run, step, select, follow inspector links, search, bad input) and
 * checks what it shows. Needs a display: run it under `xvfb-run -a`; with no
 * display every case is skipped. */
#define G_LOG_DOMAIN "passlab"

#include <errno.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <gtk/gtk.h>

#include "pl-application.h"
#include "pl-window.h"
#include "pl-window-private.h"
#include "test-ui-util.h"

static PlApplication *app;

/* --- helpers ----------------------------------------------------------------------------- */

static PlWindow *
open_window (const char *sample, const char *passes, int step, const char *select)
{
  g_autofree char *path = pl_test_ui_sample_path (sample);
  PlOpenRequest req = { .passes = passes, .step = step, .select = select };
  PlWindow *win = pl_test_ui_open_window (app, path, &req);
  g_assert_true (pl_window_is_busy (win));
  pl_test_ui_wait_idle (win);
  return win;
}

/* The first inspector link button whose label starts with prefix. */
static GtkWidget *
find_link (GtkWidget *widget, const char *prefix)
{
  if (GTK_IS_BUTTON (widget) && gtk_widget_has_css_class (widget, "inspector-link"))
    {
      GtkWidget *label = gtk_button_get_child (GTK_BUTTON (widget));
      if (GTK_IS_LABEL (label) && g_str_has_prefix (gtk_label_get_text (GTK_LABEL (label)), prefix))
        return widget;
    }
  for (GtkWidget *c = gtk_widget_get_first_child (widget); c; c = gtk_widget_get_next_sibling (c))
    {
      GtkWidget *found = find_link (c, prefix);
      if (found)
        return found;
    }
  return NULL;
}

static gboolean
action_enabled (PlWindow *win, const char *name)
{
  return g_action_group_get_action_enabled (G_ACTION_GROUP (win), name);
}

static const PlGraph *
shown_graph (PlWindow *win)
{
  return pl_history_step (pl_window_get_history (win), pl_window_get_step (win))->graph;
}

/* --- tests ---------------------------------------------------------------------------------- */

static void
test_open (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PlWindow *win = open_window ("transformer_block.graph", NULL, -1, NULL);
  g_assert_true (pl_window_has_graph (win));
  g_assert_null (pl_window_get_error (win));
  g_assert_cmpint (pl_history_n_steps (pl_window_get_history (win)), ==, 1);
  g_assert_cmpint (pl_window_get_step (win), ==, 0);
  /* The header names the file and the graph's size. */
  g_assert_nonnull (strstr (pl_window_get_subtitle (win), "transformer_block.graph"));
  g_assert_nonnull (strstr (pl_window_get_subtitle (win), "33 nodes"));
  g_assert_nonnull (strstr (gtk_window_get_title (GTK_WINDOW (win)), "transformer_block.graph"));
  /* One timeline row (the loaded graph); nothing selected: the inspector
   * describes the whole graph. */
  g_assert_cmpint (pl_timeline_get_n_rows (pl_window_get_timeline (win)), ==, 1);
  g_assert_null (pl_graph_canvas_get_selected (pl_window_get_canvas (win)));
  g_assert_cmpstr (pl_inspector_get_title (pl_window_get_inspector (win)), ==, "transformer_block");
  g_autofree char *summary = pl_test_ui_widget_text (pl_window_get_inspector (win));
  g_assert_nonnull (strstr (summary, "33 nodes"));
  g_assert_nonnull (strstr (summary, "x  f32[1, 64, 128]"));
  g_assert_nonnull (strstr (summary, "MatMul"));
  g_assert_nonnull (strstr (summary, "Step 0 · the loaded graph"));
  g_autofree char *timeline = pl_test_ui_widget_text (pl_window_get_timeline (win));
  g_assert_nonnull (strstr (timeline, "(loaded graph)"));
  g_assert_nonnull (strstr (timeline, "33"));
  /* Nothing to step to, but a graph to run passes on. */
  g_assert_false (action_enabled (win, "step-forward"));
  g_assert_false (action_enabled (win, "step-back"));
  g_assert_true (action_enabled (win, "run"));
  g_assert_true (action_enabled (win, "export"));
  pl_test_ui_close_window (win);
}

/* A bad file shows an error and keeps the graph already open. */
static void
test_open_bad_file (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PlWindow *win = open_window ("softmax.graph", NULL, -1, NULL);
  g_autofree char *bad = g_build_filename (pl_test_ui_tmp_dir (), "broken.graph", NULL);
  g_assert_true (g_file_set_contents (bad, "graph broken {\n  input x: f32[2\n", -1, NULL));
  g_autoptr (GFile) file = g_file_new_for_path (bad);
  pl_window_open (win, file, NULL);
  pl_test_ui_wait_idle (win);
  const char *error = pl_window_get_error (win);
  g_assert_nonnull (error);
  g_assert_nonnull (strstr (error, "Could not open broken.graph"));
  g_autofree char *kept = g_file_get_basename (pl_window_get_file (win));
  g_assert_cmpstr (kept, ==, "softmax.graph");
  g_assert_nonnull (strstr (pl_window_get_subtitle (win), "softmax.graph"));

  /* A missing file: same. */
  g_autofree char *missing = g_build_filename (pl_test_ui_tmp_dir (), "no-such.onnx", NULL);
  g_autoptr (GFile) mfile = g_file_new_for_path (missing);
  pl_window_open (win, mfile, NULL);
  pl_test_ui_wait_idle (win);
  g_assert_nonnull (strstr (pl_window_get_error (win), "no such file"));
  g_assert_true (pl_window_has_graph (win));

  /* A bad pipeline: an error, the history stays. */
  pl_window_run_pipeline (win, "simplify,no-such-pass");
  pl_test_ui_wait_idle (win);
  g_assert_nonnull (strstr (pl_window_get_error (win), "Bad pipeline"));
  g_assert_cmpint (pl_history_n_steps (pl_window_get_history (win)), ==, 1);
  pl_test_ui_close_window (win);
}

static void
test_run_and_step (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PlWindow *win = open_window ("transformer_block.graph", NULL, -1, NULL);
  /* Run the default pipeline through the action, as Ctrl+R does. */
  g_action_group_activate_action (G_ACTION_GROUP (win), "run", NULL);
  g_assert_true (pl_window_is_busy (win));
  g_assert_false (action_enabled (win, "run"));
  pl_test_ui_wait_idle (win);
  g_assert_null (pl_window_get_error (win));

  const PlHistory *h = pl_window_get_history (win);
  g_assert_cmpint (pl_history_n_steps (h), ==, 6);
  g_assert_cmpint (pl_window_get_step (win), ==, 5);   /* the last step */
  g_assert_nonnull (strstr (pl_window_get_subtitle (win), "step 5 of 5: fuse-loops"));
  PlTimeline *tl = pl_window_get_timeline (win);
  g_assert_cmpint (pl_timeline_get_n_rows (tl), ==, 6);
  g_assert_cmpint (pl_timeline_get_selected_step (tl), ==, 5);
  /* Every step that changed the graph was checked, and passed. */
  for (int i = 1; i < 6; i++)
    {
      const PlStep *s = pl_history_step (h, i);
      g_assert_true (s->checked == s->changed);
      g_assert_false (s->check_failed);
    }
  g_autofree char *rows = pl_test_ui_widget_text (tl);
  g_assert_nonnull (strstr (rows, "fuse-library"));
  g_assert_nonnull (strstr (rows, "✓"));

  /* Step back and forth through the actions. */
  g_assert_false (action_enabled (win, "step-forward"));
  g_assert_true (action_enabled (win, "step-back"));
  g_action_group_activate_action (G_ACTION_GROUP (win), "step-back", NULL);
  g_assert_cmpint (pl_window_get_step (win), ==, 4);
  g_assert_cmpint (pl_timeline_get_selected_step (tl), ==, 4);
  g_assert_nonnull (strstr (pl_window_get_subtitle (win), "step 4 of 5: fuse-library"));
  g_action_group_activate_action (G_ACTION_GROUP (win), "step-forward", NULL);
  g_assert_cmpint (pl_window_get_step (win), ==, 5);
  g_assert_true (pl_window_set_step (win, 0));
  g_assert_nonnull (strstr (pl_window_get_subtitle (win), "step 0 of 5"));
  g_assert_false (action_enabled (win, "step-back"));
  g_assert_false (pl_window_set_step (win, 6));

  /* Hiding unchanged steps leaves the input and the steps that changed. */
  int changed = 0;
  for (int i = 1; i < 6; i++)
    changed += pl_history_step (h, i)->changed;
  g_action_group_activate_action (G_ACTION_GROUP (win), "hide-unchanged", NULL);
  g_assert_true (pl_timeline_get_hide_unchanged (tl));
  g_assert_cmpint (pl_timeline_get_n_rows (tl), ==, 1 + changed);
  /* Stepping forward now skips the hidden steps. */
  pl_window_step_forward (win);
  g_assert_true (pl_history_step (h, pl_window_get_step (win))->changed);
  g_action_group_activate_action (G_ACTION_GROUP (win), "hide-unchanged", NULL);
  g_assert_cmpint (pl_timeline_get_n_rows (tl), ==, 6);
  pl_test_ui_close_window (win);
}

/* --passes/--step/--select in one request, then following links. */
static void
test_select_and_links (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PlWindow *win = open_window ("transformer_block.graph", "simplify", 1, "q_mm");
  g_assert_null (pl_window_get_error (win));
  g_assert_cmpint (pl_window_get_step (win), ==, 1);
  PlInspector *insp = pl_window_get_inspector (win);
  g_assert_cmpstr (pl_inspector_get_title (insp), ==, "q_mm");
  g_autofree char *text = pl_test_ui_widget_text (insp);
  g_assert_nonnull (strstr (text, "MatMul · compute"));
  g_assert_nonnull (strstr (text, "Inputs"));
  g_assert_nonnull (strstr (text, "Outputs"));
  g_assert_nonnull (strstr (text, "f32[1, 64, 128]"));
  g_assert_nonnull (strstr (text, "wq"));

  /* The producer of input 0 is the first LayerNormalization: follow it. */
  GtkWidget *link = find_link (GTK_WIDGET (insp), "← ln1");
  g_assert_nonnull (link);
  g_signal_emit_by_name (link, "clicked");
  g_assert_cmpstr (pl_inspector_get_title (insp), ==, "ln1");
  const PlNode *ln1 = pl_graph_find_node (shown_graph (win), "ln1");
  g_autofree char *key = g_strdup_printf ("n%u", ln1->id);
  g_assert_cmpstr (pl_graph_canvas_get_selected (pl_window_get_canvas (win)), ==, key);

  /* ... and one of its users back. */
  link = find_link (GTK_WIDGET (insp), "→ k_mm");
  g_assert_nonnull (link);
  g_signal_emit_by_name (link, "clicked");
  g_assert_cmpstr (pl_inspector_get_title (insp), ==, "k_mm");

  /* Values: a constant shows its data. */
  g_assert_true (pl_window_select (win, "wq"));
  g_autofree char *ctext = pl_test_ui_widget_text (insp);
  g_assert_nonnull (strstr (ctext, "constant · f32[128, 128]"));
  g_assert_nonnull (strstr (ctext, "→ q_mm (MatMul)"));
  g_assert_false (pl_window_select (win, "no_such_node"));
  pl_test_ui_close_window (win);
}

static void
test_select_missing_node (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PlWindow *win = open_window ("softmax.graph", NULL, 0, "nope");
  g_assert_nonnull (pl_window_get_error (win));
  g_assert_nonnull (strstr (pl_window_get_error (win), "no node called 'nope'"));
  g_assert_true (pl_window_has_graph (win));
  pl_test_ui_close_window (win);
}

static void
test_search (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PlWindow *win = open_window ("transformer_block.graph", NULL, -1, NULL);
  PlGraphCanvas *canvas = pl_window_get_canvas (win);
  /* Every match is a MatMul; successive searches visit different ones. */
  GHashTable *seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (int i = 0; i < 3; i++)
    {
      g_assert_true (pl_window_search_next (win, "matmul"));
      const char *key = pl_graph_canvas_get_selected (canvas);
      g_assert_nonnull (key);
      g_assert_cmpint (key[0], ==, 'n');
      const PlNode *n = pl_graph_node_by_id (shown_graph (win), (guint32) g_ascii_strtoull (key + 1, NULL, 10));
      g_assert_nonnull (n);
      g_assert_cmpstr (n->op_type, ==, "MatMul");
      g_assert_cmpstr (pl_inspector_get_title (pl_window_get_inspector (win)), ==, n->name);
      g_hash_table_add (seen, g_strdup (key));
    }
  g_assert_cmpint (g_hash_table_size (seen), ==, 3);
  g_hash_table_unref (seen);
  g_assert_false (pl_window_search_next (win, "no-such-thing-anywhere"));

  /* The search bar is the "search" action's state. */
  g_action_group_activate_action (G_ACTION_GROUP (win), "search", NULL);
  GVariant *state = g_action_group_get_action_state (G_ACTION_GROUP (win), "search");
  g_assert_true (g_variant_get_boolean (state));
  g_variant_unref (state);
  pl_test_ui_close_window (win);
}

/* At a fusion step, a fusion node shows its kind and body. */
static void
test_fusion_inspector (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PlWindow *win = open_window ("transformer_block.graph", PL_WINDOW_DEFAULT_PIPELINE, -1, NULL);
  const PlGraph *g = shown_graph (win);
  const PlNode *fusion = NULL;
  for (guint i = 0; i < g->nodes->len && !fusion; i++)
    if (((PlNode *) g->nodes->pdata[i])->body)
      fusion = g->nodes->pdata[i];
  g_assert_nonnull (fusion);
  g_assert_true (pl_window_select (win, fusion->name));
  PlInspector *insp = pl_window_get_inspector (win);
  g_assert_cmpstr (pl_inspector_get_title (insp), ==, fusion->name);
  g_autofree char *text = pl_test_ui_widget_text (insp);
  g_assert_nonnull (strstr (text, "Fusion"));
  g_assert_nonnull (strstr (text, "Fused body"));
  g_assert_nonnull (strstr (text, pl_node_attr_string (fusion, "kind", "?")));
  /* A body node is a link into the fusion. */
  const PlNode *inner = fusion->body->nodes->pdata[0];
  g_autofree char *prefix = g_strdup_printf ("%s (", inner->name);
  GtkWidget *link = find_link (GTK_WIDGET (insp), prefix);
  g_assert_nonnull (link);
  g_signal_emit_by_name (link, "clicked");
  g_assert_cmpstr (pl_inspector_get_title (insp), ==, inner->name);
  g_autofree char *inner_text = pl_test_ui_widget_text (insp);
  g_assert_nonnull (strstr (inner_text, "inside a fusion body"));
  pl_test_ui_close_window (win);
}

static void
test_screenshot (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PlWindow *win = open_window ("layer_norm.graph", NULL, -1, NULL);
  g_autofree char *png = g_build_filename (pl_test_ui_tmp_dir (), "window.png", NULL);
  g_autoptr (GError) error = NULL;
  g_assert_true (pl_window_save_screenshot (win, png, &error));
  g_assert_no_error (error);
  g_autoptr (GdkTexture) t = gdk_texture_new_from_filename (png, &error);
  g_assert_no_error (error);
  g_assert_cmpint (gdk_texture_get_width (t), ==, gtk_widget_get_width (GTK_WIDGET (win)));
  g_assert_cmpint (gdk_texture_get_height (t), ==, gtk_widget_get_height (GTK_WIDGET (win)));
  pl_test_ui_close_window (win);
}

/* Whether any shown widget outside a scrolled window lies outside root's
 * width (a paned child allocated its minimum and shifted out of sight):
 * names the first such in *where. */
static gboolean
clipped_widget (GtkWidget *w, GtkWidget *root, char **where)
{
  if (!gtk_widget_get_mapped (w) || GTK_IS_SCROLLED_WINDOW (w) || GTK_IS_POPOVER (w))
    return FALSE;
  graphene_rect_t r;
  if (w != root && gtk_widget_compute_bounds (w, root, &r)
      && (r.origin.x < -0.5f || r.origin.x + r.size.width > gtk_widget_get_width (root) + 0.5f))
    {
      *where = g_strdup_printf ("%s at x %.0f, %.0f wide, in %d", G_OBJECT_TYPE_NAME (w), r.origin.x, r.size.width,
                                gtk_widget_get_width (root));
      return TRUE;
    }
  for (GtkWidget *c = gtk_widget_get_first_child (w); c; c = gtk_widget_get_next_sibling (c))
    if (clipped_widget (c, root, where))
      return TRUE;
  return FALSE;
}

/* At 800x600 every bottom page fits or scrolls: nothing is cut off at the
 * left pane's edge (GtkPaned shifts a child narrower than its minimum). */
static void
test_small_window (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  g_autofree char *path = pl_test_ui_sample_path ("resnet_block.graph");
  PlWindow *win = pl_window_new (app);
  gtk_window_set_default_size (GTK_WINDOW (win), 800, 600);
  gtk_window_present (GTK_WINDOW (win));
  g_autoptr (GFile) file = g_file_new_for_path (path);
  pl_window_open (win, file, &(PlOpenRequest) { .passes = "simplify,decompose,fuse-loops", .step = -1 });
  pl_test_ui_wait_idle (win);
  int min_width = 0;
  gtk_widget_measure (GTK_WIDGET (win), GTK_ORIENTATION_HORIZONTAL, -1, &min_width, NULL, NULL, NULL);
  g_assert_cmpint (min_width, <=, 800);
  GtkWidget *root = gtk_window_get_child (GTK_WINDOW (win));
  static const char *const pages[] = { "timeline", "script", "run", "memory", "tuning" };
  for (guint i = 0; i < G_N_ELEMENTS (pages); i++)
    {
      pl_window_show_bottom_page (win, pages[i]);
      /* a few frames: the page's transition and the new layout */
      for (gint64 until = g_get_monotonic_time () + G_USEC_PER_SEC / 2; g_get_monotonic_time () < until;)
        if (!g_main_context_iteration (NULL, FALSE))
          g_usleep (2000);
      g_autofree char *where = NULL;
      if (clipped_widget (root, root, &where))
        g_error ("page %s: %s", pages[i], where);
    }
  pl_test_ui_close_window (win);
}


/* Files dropped on the window open like any other. */
static void
test_drop (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PlWindow *win = open_window ("softmax.graph", NULL, -1, NULL);
  GtkDropTarget *target = NULL;
  g_autoptr (GListModel) controllers = gtk_widget_observe_controllers (GTK_WIDGET (win));
  for (guint i = 0; !target && i < g_list_model_get_n_items (controllers); i++)
    {
      g_autoptr (GObject) c = g_list_model_get_item (controllers, i);
      if (GTK_IS_DROP_TARGET (c))
        target = GTK_DROP_TARGET (c);
    }
  g_assert_nonnull (target);
  g_autofree char *path = pl_test_ui_sample_path ("layer_norm.graph");
  g_autoptr (GFile) file = g_file_new_for_path (path);
  GValue value = G_VALUE_INIT;
  g_value_init (&value, G_TYPE_FILE);
  g_value_set_object (&value, file);
  gboolean accepted = FALSE;
  g_signal_emit_by_name (target, "drop", &value, 10.0, 10.0, &accepted);
  g_value_unset (&value);
  g_assert_true (accepted);
  pl_test_ui_wait_idle (win);
  g_autofree char *name = g_file_get_basename (pl_window_get_file (win));
  g_assert_cmpstr (name, ==, "layer_norm.graph");
  pl_test_ui_close_window (win);
}

/* A window that loaded the saved state saves its size when closed, and the
 * next one opens at that size; the files it opens become recent files. */
static void
test_state_and_recent (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  PlWindow *a = pl_window_new (app);
  pl_window_load_state (a);
  gtk_window_set_default_size (GTK_WINDOW (a), 1000, 700);
  gtk_window_present (GTK_WINDOW (a));
  g_autofree char *path = pl_test_ui_sample_path ("gelu_mlp.graph");
  g_autoptr (GFile) file = g_file_new_for_path (path);
  pl_window_open (a, file, NULL);
  pl_test_ui_wait_idle (a);
  /* The recent-files menu lists the file once GTK has recorded it. */
  GMenuModel *recent = pl_window_get_recent_menu (a);
  gint64 deadline = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  gboolean listed = FALSE;
  while (!listed && g_get_monotonic_time () < deadline)
    {
      g_main_context_iteration (NULL, FALSE);
      for (int i = 0; !listed && i < g_menu_model_get_n_items (recent); i++)
        {
          g_autofree char *label = NULL;
          g_menu_model_get_item_attribute (recent, i, G_MENU_ATTRIBUTE_LABEL, "s", &label);
          listed = label && g_str_equal (label, "gelu_mlp.graph");
        }
    }
  g_assert_true (listed);
  gtk_window_close (GTK_WINDOW (a));
  for (int i = 0; i < 20; i++)
    g_main_context_iteration (NULL, FALSE);

  g_autofree char *state = g_build_filename (pl_test_ui_tmp_dir (), "passlab", "state.ini", NULL);
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  g_assert_true (g_key_file_load_from_file (kf, state, G_KEY_FILE_NONE, NULL));
  g_assert_cmpint (g_key_file_get_integer (kf, "window", "width", NULL), ==, 1000);
  g_assert_cmpint (g_key_file_get_integer (kf, "window", "height", NULL), ==, 700);

  PlWindow *b = pl_window_new (app);
  pl_window_load_state (b);
  int w = 0, h = 0;
  gtk_window_get_default_size (GTK_WINDOW (b), &w, &h);
  g_assert_cmpint (w, ==, 1000);
  g_assert_cmpint (h, ==, 700);
  gtk_window_destroy (GTK_WINDOW (b));
}

/* Every action has its shortcut. */
static void
test_shortcuts (void)
{
  PL_TEST_UI_REQUIRE_DISPLAY ();
  const struct {
    const char *action, *accel;
  } expected[] = {
    { "win.open", "<Control>o" },          { "win.run", "<Control>r" },
    { "win.step-back", "<Alt>Left" },      { "win.step-back", "<Control>bracketleft" },
    { "win.step-forward", "<Alt>Right" },  { "win.step-forward", "<Control>bracketright" },
    { "win.export", "<Control>e" },        { "win.search", "<Control>f" },
    { "win.zoom-fit", "<Control>0" },      { "app.quit", "<Control>q" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (expected); i++)
    {
      g_auto (GStrv) accels = gtk_application_get_accels_for_action (GTK_APPLICATION (app), expected[i].action);
      g_assert_true (g_strv_contains ((const char *const *) accels, expected[i].accel));
    }
}

int
main (int argc, char **argv)
{
  app = pl_test_ui_init (&argc, &argv, "passlab-ui-XXXXXX", PL_TEST_UI_KEEP_CACHE);

  g_test_add_func ("/Passlab/UI/Window/open", test_open);
  g_test_add_func ("/Passlab/UI/Window/open-bad-file", test_open_bad_file);
  g_test_add_func ("/Passlab/UI/Window/run-and-step", test_run_and_step);
  g_test_add_func ("/Passlab/UI/Window/select-and-links", test_select_and_links);
  g_test_add_func ("/Passlab/UI/Window/select-missing-node", test_select_missing_node);
  g_test_add_func ("/Passlab/UI/Window/search", test_search);
  g_test_add_func ("/Passlab/UI/Window/fusion-inspector", test_fusion_inspector);
  g_test_add_func ("/Passlab/UI/Window/screenshot", test_screenshot);
  g_test_add_func ("/Passlab/UI/Window/small-window", test_small_window);
  g_test_add_func ("/Passlab/UI/Window/drop", test_drop);
  g_test_add_func ("/Passlab/UI/Window/state-and-recent", test_state_and_recent);
  g_test_add_func ("/Passlab/UI/Window/shortcuts", test_shortcuts);
  return pl_test_ui_finish (g_test_run ());
}
