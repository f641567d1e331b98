/* pl-application.c — the passlab application.
 *
 * `passlab [FILE…] [--passes A,B] [--step K] [--select NODE] [--script S.lua]
 *          [--run-backend NAME] [--tune CONV[@LAYOUT]] [--tune-trials N]
 *          [--page NAME] [--screenshot OUT.png] [--size WxH]`
 * opens each FILE in a window; the options apply to the first one. With
 * --screenshot nothing waits for a person: once the window has loaded, run
 * and laid out, and a few frames have been drawn, the window is rendered to
 * OUT.png and the program exits (status 1 if the window showed an error).
 * Runs with any of these options are non-unique, so they never hand their
 * files to a passlab that is already running.
 */
#define G_LOG_DOMAIN "passlab"

#include "pl-application.h"

#include <stdio.h>

#include "passlab-resources.h"
#include "pl-window.h"
#include "pl-window-private.h"
#include "pl-run-panel.h"
#include "pl-script-panel.h"
#include "pl-tune-panel.h"

/* Frames drawn after the window went idle before the screenshot: the first
 * ones may still lay out the panes. */
#define SCREENSHOT_FRAMES 4
#define SCREENSHOT_TIMEOUT_S 300
/* On a loaded machine the window can reach the screenshot frame before GTK
 * has a render node for it; keep drawing for up to this many more frames. */
#define SCREENSHOT_EMPTY_FRAMES 600

struct _PlApplication
{
  GtkApplication parent_instance;

  char    *version;
  /* command-line state for the first file */
  char    *passes;
  int      step;
  char    *select;
  char    *screenshot;
  char    *script;          /* --script: run it once the window is idle */
  int      script_state;    /* 0 not started, 1 running, 2 done */
  char    *run_backend;     /* --run-backend: time the step shown in the run panel once idle */
  int      run_state;       /* 0 not started, 1 running, 2 done */
  char    *tune;            /* --tune: tune this conv on the tuning page once idle */
  int      tune_trials;
  int      tune_state;      /* 0 not started, 1 running, 2 done */
  char    *page;            /* --page: the page under the canvas to show once idle */
  gboolean page_shown;
  int      width, height;   /* 0: remembered / default */

  int      exit_status;
  int      frames;
  int      resizes;
  int      empty_frames;  /* frames whose snapshot was still empty (a loaded machine) */
  guint    timeout_id;
};

G_DEFINE_FINAL_TYPE (PlApplication, pl_application, GTK_TYPE_APPLICATION)

static const GOptionEntry option_entries[] = {
  { "passes", 'p', 0, G_OPTION_ARG_STRING, NULL, "Run this pass pipeline on FILE (with the numerical check)", "A,B,C" },
  { "step", 's', 0, G_OPTION_ARG_INT, NULL, "Show step K (0: the loaded graph; default: the last)", "K" },
  { "select", 0, 0, G_OPTION_ARG_STRING, NULL, "Select the node (or value) called NODE and centre it", "NODE" },
  { "script", 0, 0, G_OPTION_ARG_FILENAME, NULL, "Run this Lua script in the script panel (on FILE's graph, if any) and show its pipeline", "SCRIPT.lua" },
  { "run-backend", 0, 0, G_OPTION_ARG_STRING, NULL, "Time the step shown on this backend in the run panel (reference, cpu, cuda)", "NAME" },
  { "tune", 0, 0, G_OPTION_ARG_STRING, NULL, "Tune the tile of the Conv called CONV (in LAYOUT, else its own) on the Tuning page", "CONV[@LAYOUT]" },
  { "tune-trials", 0, 0, G_OPTION_ARG_INT, NULL, "Trials per search for --tune (default: the page's)", "N" },
  { "page", 0, 0, G_OPTION_ARG_STRING, NULL, "Show this page under the canvas once done (timeline, script, run, memory, …)", "NAME" },
  { "screenshot", 0, 0, G_OPTION_ARG_FILENAME, NULL, "Render the window to a PNG file and exit", "OUT.png" },
  { "size", 0, 0, G_OPTION_ARG_STRING, NULL, "Window size in pixels (default 1400x900)", "WxH" },
  { "version", 0, 0, G_OPTION_ARG_NONE, NULL, "Print the version and exit", NULL },
  { NULL },
};

/* Every action's shortcuts, set once at startup. */
static const struct {
  const char *action;
  const char *accels[3];
} shortcuts[] = {
  { "win.open", { "<Control>o", NULL } },
  { "win.run", { "<Control>r", NULL } },
  { "win.step-back", { "<Alt>Left", "<Control>bracketleft", NULL } },
  { "win.step-forward", { "<Alt>Right", "<Control>bracketright", NULL } },
  { "win.export", { "<Control>e", NULL } },
  { "win.search", { "<Control>f", NULL } },
  { "win.zoom-fit", { "<Control>0", NULL } },
  { "win.zoom-in", { "<Control>plus", "<Control>equal", NULL } },
  { "win.zoom-out", { "<Control>minus", NULL } },
  { "win.hide-unchanged", { "<Control>h", NULL } },
  { "win.tune-conv", { "<Control>t", NULL } },
  { "win.tune-conv", { "<Control>t", NULL } },
  { "window.close", { "<Control>w", NULL } },
  { "app.quit", { "<Control>q", NULL } },
};

/* --- app actions ----------------------------------------------------------------------- */

static void
action_quit (GSimpleAction *action, GVariant *param, gpointer user_data)
{
  /* Closing (not destroying) lets every window save its state. */
  GList *windows = g_list_copy (gtk_application_get_windows (GTK_APPLICATION (user_data)));
  for (GList *l = windows; l; l = l->next)
    gtk_window_close (l->data);
  g_list_free (windows);
}

static void
action_about (GSimpleAction *action, GVariant *param, gpointer user_data)
{
  PlApplication *self = user_data;
  const char *authors[] = { "The passlab authors", NULL };
  gtk_show_about_dialog (gtk_application_get_active_window (GTK_APPLICATION (self)),
                         "program-name", "passlab",
                         "logo-icon-name", PL_APPLICATION_ID,
                         "version", self->version,
                         "comments", "A workbench for machine-learning computation graphs: step through "
                                     "optimization passes and see what each one changed.",
                         "license-type", GTK_LICENSE_MIT_X11,
                         "authors", authors,
                         NULL);
}

static const GActionEntry app_actions[] = {
  { .name = "quit", .activate = action_quit },
  { .name = "about", .activate = action_about },
};

/* --- screenshots ------------------------------------------------------------------------- */

/* Saves the screenshot and quits; false (nothing done) while the window's
 * snapshot is still empty and retry is set. */
static gboolean
finish_screenshot (PlApplication *self, PlWindow *window, gboolean retry)
{
  g_autoptr (GError) error = NULL;
  gboolean saved = pl_window_save_screenshot (window, self->screenshot, &error);
  if (!saved && retry && g_error_matches (error, PL_ERROR, PL_ERROR_FAILED) &&
      self->empty_frames++ < SCREENSHOT_EMPTY_FRAMES)
    return FALSE;
  g_clear_handle_id (&self->timeout_id, g_source_remove);
  if (!saved)
    {
      g_printerr ("passlab: %s\n", error->message);
      self->exit_status = 1;
    }
  const char *problem = pl_window_get_error (window);
  if (problem)
    {
      g_printerr ("passlab: %s\n", problem);
      self->exit_status = 1;
    }
  g_application_quit (G_APPLICATION (self));
  return TRUE;
}

static gboolean
screenshot_tick (GtkWidget *widget, GdkFrameClock *clock, gpointer user_data)
{
  PlApplication *self = user_data;
  /* Client-side decorations take a few pixels of the window's default size:
   * grow it once so that the window itself is exactly --size. */
  int want_w = self->width > 0 ? self->width : 1400, want_h = self->width > 0 ? self->height : 900;
  int dw = want_w - gtk_widget_get_width (widget), dh = want_h - gtk_widget_get_height (widget);
  if ((dw != 0 || dh != 0) && self->resizes < 3)
    {
      int w, h;
      gtk_window_get_default_size (GTK_WINDOW (widget), &w, &h);
      gtk_window_set_default_size (GTK_WINDOW (widget), w + dw, h + dh);
      self->resizes++;
      self->frames = 1;
      return G_SOURCE_CONTINUE;
    }
  if (++self->frames < SCREENSHOT_FRAMES)
    {
      gtk_widget_queue_draw (widget);
      return G_SOURCE_CONTINUE;
    }
  if (!finish_screenshot (self, PL_WINDOW (widget), TRUE))
    {
      gtk_widget_queue_draw (widget);
      return G_SOURCE_CONTINUE;
    }
  return G_SOURCE_REMOVE;
}

static void start_script (PlApplication *self, PlWindow *window);
static void start_run (PlApplication *self, PlWindow *window);
static void start_tune (PlApplication *self, PlWindow *window);

/* Panels with tables and charts need more height than the timeline: give
 * the bottom pane at least 360 px. */
static void
make_room_below (PlWindow *window)
{
  int h = gtk_widget_get_height (GTK_WIDGET (window->inner_paned));
  if (h > 0 && h - gtk_paned_get_position (window->inner_paned) < 360)
    gtk_paned_set_position (window->inner_paned, MAX (h - 360, h / 3));
}

/* --page: false (and the reason printed) when the window has no such page. */
static gboolean
show_page (PlApplication *self, PlWindow *window)
{
  if (!gtk_stack_get_child_by_name (window->bottom_stack, self->page))
    {
      g_printerr ("passlab: --page: there is no page called '%s'\n", self->page);
      self->exit_status = 1;
      return FALSE;
    }
  pl_window_show_bottom_page (window, self->page);
  if (g_strcmp0 (self->page, "timeline") != 0)
    make_room_below (window);
  return TRUE;
}

static void
on_window_busy (PlWindow *window, GParamSpec *pspec, PlApplication *self)
{
  if (pl_window_is_busy (window) || self->frames > 0)
    return;
  if (self->script && self->script_state == 0)
    {
      start_script (self, window);
      return;
    }
  if (self->run_backend && self->run_state == 0 && (!self->script || self->script_state == 2))
    {
      start_run (self, window);
      return;
    }
  if (self->tune && self->tune_state == 0 && (!self->script || self->script_state == 2)
      && (!self->run_backend || self->run_state == 2))
    {
      start_tune (self, window);
      return;
    }
  if ((self->script && self->script_state != 2) || (self->run_backend && self->run_state != 2)
      || (self->tune && self->tune_state != 2))
    return;
  if (self->page && !self->page_shown)
    {
      self->page_shown = TRUE;
      if (!show_page (self, window) && self->screenshot)
        {
          g_application_quit (G_APPLICATION (self));
          return;
        }
    }
  if (!self->screenshot)
    return;
  self->frames = 1;
  gtk_widget_add_tick_callback (GTK_WIDGET (window), screenshot_tick, self, NULL);
  gtk_widget_queue_draw (GTK_WIDGET (window));
}

static gboolean
on_screenshot_timeout (gpointer user_data)
{
  PlApplication *self = user_data;
  self->timeout_id = 0;
  g_printerr ("passlab: gave up waiting for the window after %d s\n", SCREENSHOT_TIMEOUT_S);
  self->exit_status = 1;
  g_application_quit (G_APPLICATION (self));
  return G_SOURCE_REMOVE;
}

/* --- --script ---------------------------------------------------------------------------------- */

static void
on_script_finished (PlScriptPanel *panel, gboolean ok, PlApplication *self)
{
  g_signal_handlers_disconnect_by_func (panel, on_script_finished, self);
  self->script_state = 2;
  if (self->screenshot)
    {
      /* The console goes to the terminal: nobody sees the window. */
      g_autofree char *out = pl_script_panel_get_output (panel);
      if (ok)
        g_print ("%s", out);
      else
        {
          g_printerr ("passlab: the script failed:\n%s", out);
          self->exit_status = 1;
        }
    }
  GtkRoot *window = gtk_widget_get_root (GTK_WIDGET (panel));
  if (PL_IS_WINDOW (window))
    on_window_busy (PL_WINDOW (window), NULL, self);
}

static void
start_script (PlApplication *self, PlWindow *window)
{
  PlScriptPanel *panel = PL_SCRIPT_PANEL (pl_window_get_script_panel (window));
  g_autoptr (GFile) file = g_file_new_for_commandline_arg (self->script);
  g_autoptr (GError) error = NULL;
  self->script_state = 1;
  if (self->screenshot)
    pl_script_panel_set_autosave (panel, FALSE);  /* leave the person's scratch script alone */
  if (!pl_script_panel_load_file (panel, file, &error))
    {
      g_printerr ("passlab: %s\n", error->message);
      self->exit_status = 1;
      self->script_state = 2;
      if (self->screenshot)
        g_application_quit (G_APPLICATION (self));
      return;
    }
  if (!self->screenshot)
    pl_window_show_bottom_page (window, "script");
  g_signal_connect (panel, "finished", G_CALLBACK (on_script_finished), self);
  pl_script_panel_run (panel);
}

/* --- --run-backend ----------------------------------------------------------------------------- */

static void
on_run_finished (PlRunPanel *panel, const char *error, PlApplication *self)
{
  g_signal_handlers_disconnect_by_func (panel, on_run_finished, self);
  self->run_state = 2;
  if (error)
    {
      g_printerr ("passlab: the run failed: %s\n", error);
      self->exit_status = 1;
    }
  else
    {
      /* Show the kernel of the node --select named, else the slowest
       * kernel: its row, bar, code and node; with swap copies, the slowest
       * copy (the timeline zooms in around it). */
      const PlRunReport *r = pl_run_panel_get_report (panel);
      int chosen = self->select ? pl_run_panel_kernel_of_selection (panel) : -1;
      GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (panel));
      PlGraphCanvas *canvas = PL_IS_WINDOW (root) ? pl_window_get_canvas (PL_WINDOW (root)) : NULL;
      g_autofree char *keep = chosen >= 0 && canvas ? g_strdup (pl_graph_canvas_get_selected (canvas)) : NULL;
      int slowest = 0;
      gboolean copy = FALSE;
      for (int i = 0; i < r->n_kernels; i++)
        {
          gboolean is_copy = g_str_has_prefix (r->kernels[i].kind ? r->kernels[i].kind : "", "swap-");
          if ((is_copy && !copy) || (is_copy == copy && r->kernels[i].median_ms > r->kernels[slowest].median_ms))
            slowest = i, copy = is_copy;
        }
      pl_run_panel_select_kernel (panel, chosen >= 0 ? chosen : r->n_kernels > 0 ? slowest : -1);
      if (keep)
        pl_graph_canvas_select (canvas, keep);   /* the node itself, not its fusion */
    }
  GtkRoot *window = gtk_widget_get_root (GTK_WIDGET (panel));
  if (PL_IS_WINDOW (window))
    on_window_busy (PL_WINDOW (window), NULL, self);
}

static void
start_run (PlApplication *self, PlWindow *window)
{
  PlRunPanel *panel = pl_run_panel_get_for_window (window);
  PlBackend backend = PL_BACKEND_CPU;
  pl_backend_from_name (self->run_backend, &backend);  /* checked with the options */
  self->run_state = 1;
  pl_window_show_bottom_page (window, "run");
  make_room_below (window);
  pl_run_panel_set_backend (panel, backend);
  g_autoptr (GError) error = NULL;
  g_signal_connect (panel, "run-finished", G_CALLBACK (on_run_finished), self);
  if (!pl_run_panel_run (panel, &error))
    {
      g_signal_handlers_disconnect_by_func (panel, on_run_finished, self);
      g_printerr ("passlab: %s\n", error->message);
      self->exit_status = 1;
      self->run_state = 2;
      if (self->screenshot)
        g_application_quit (G_APPLICATION (self));
    }
}

/* --- --tune ----------------------------------------------------------------------------------- */

static void
on_tune_finished (PlTunePanel *panel, const char *error, PlApplication *self)
{
  g_signal_handlers_disconnect_by_func (panel, on_tune_finished, self);
  self->tune_state = 2;
  if (error)
    {
      g_printerr ("passlab: tuning failed: %s\n", error);
      self->exit_status = 1;
    }
  else if (self->screenshot)
    g_print ("%s\n", pl_tune_panel_get_verdict (panel));
  GtkRoot *window = gtk_widget_get_root (GTK_WIDGET (panel));
  if (PL_IS_WINDOW (window))
    on_window_busy (PL_WINDOW (window), NULL, self);
}

/* Picks CONV[@LAYOUT] on the tuning page and starts it; false with error. */
static gboolean
tune_request (PlApplication *self, PlTunePanel *panel, GError **error)
{
  g_auto (GStrv) parts = g_strsplit (self->tune, "@", 2);
  PlLayout layout = PL_LAYOUT_NCHW;
  if (!pl_tune_panel_set_conv (panel, parts[0]))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "--tune: no convolution called '%s' in the step shown", parts[0]);
      return FALSE;
    }
  if (parts[1] && !pl_layout_parse (parts[1], &layout))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_INVALID, "--tune: '%s' is no layout (NCHW, NHWC or CHWN)", parts[1]);
      return FALSE;
    }
  if (parts[1])
    pl_tune_panel_set_layout (panel, layout);
  if (self->tune_trials > 0)
    pl_tune_panel_set_trials (panel, self->tune_trials);
  return pl_tune_panel_run (panel, error);
}

static void
start_tune (PlApplication *self, PlWindow *window)
{
  PlTunePanel *panel = pl_tune_panel_get_for_window (window);
  self->tune_state = 1;
  pl_window_show_bottom_page (window, "tuning");
  make_room_below (window);
  g_autoptr (GError) error = NULL;
  g_signal_connect (panel, "tune-finished", G_CALLBACK (on_tune_finished), self);
  if (tune_request (self, panel, &error))
    return;
  g_signal_handlers_disconnect_by_func (panel, on_tune_finished, self);
  g_printerr ("passlab: %s\n", error->message);
  self->exit_status = 1;
  self->tune_state = 2;
  if (self->screenshot)
    g_application_quit (G_APPLICATION (self));
}

/* --- opening ------------------------------------------------------------------------------- */

static PlWindow *
new_window (PlApplication *self)
{
  PlWindow *window = pl_window_new (self);
  if (!self->screenshot)
    pl_window_load_state (window);
  if (self->width > 0)
    gtk_window_set_default_size (GTK_WINDOW (window), self->width, self->height);
  return window;
}

static void
pl_application_activate (GApplication *app)
{
  PlApplication *self = PL_APPLICATION (app);
  if (self->script && self->script_state == 0)
    {
      /* A script with no graph file: it makes its own graphs. */
      PlWindow *window = new_window (self);
      g_signal_connect (window, "notify::busy", G_CALLBACK (on_window_busy), self);
      if (self->screenshot)
        self->timeout_id = g_timeout_add_seconds (SCREENSHOT_TIMEOUT_S, on_screenshot_timeout, self);
      gtk_window_present (GTK_WINDOW (window));
      start_script (self, window);
      return;
    }
  if (self->screenshot)
    {
      g_printerr ("passlab: --screenshot needs a FILE\n");
      self->exit_status = 1;
      return;
    }
  GtkWindow *window = gtk_application_get_active_window (GTK_APPLICATION (app));
  if (!window)
    window = GTK_WINDOW (new_window (self));
  gtk_window_present (window);
}

static void
pl_application_open (GApplication *app, GFile **files, int n_files, const char *hint)
{
  PlApplication *self = PL_APPLICATION (app);
  PlOpenRequest request = { .passes = self->passes, .step = self->step, .select = self->select };
  if (self->screenshot)
    {
      PlWindow *window = new_window (self);
      g_signal_connect (window, "notify::busy", G_CALLBACK (on_window_busy), self);
      self->timeout_id = g_timeout_add_seconds (SCREENSHOT_TIMEOUT_S, on_screenshot_timeout, self);
      pl_window_open (window, files[0], &request);
      gtk_window_present (GTK_WINDOW (window));
      return;
    }
  for (int i = 0; i < n_files; i++)
    {
      /* An empty window takes the first file; every other file gets its own. */
      GtkWindow *active = gtk_application_get_active_window (GTK_APPLICATION (app));
      PlWindow *window = i == 0 && active && PL_IS_WINDOW (active) && !pl_window_has_graph (PL_WINDOW (active))
                             && !pl_window_is_busy (PL_WINDOW (active))
                           ? PL_WINDOW (active)
                           : new_window (self);
      if (i == 0 && ((self->script && self->script_state == 0) || self->run_backend || self->page
                     || self->tune))
        g_signal_connect (window, "notify::busy", G_CALLBACK (on_window_busy), self);
      pl_window_open (window, files[i], i == 0 ? &request : NULL);
      gtk_window_present (GTK_WINDOW (window));
    }
}

static gboolean
parse_size (const char *text, int *w, int *h)
{
  char *end = NULL;
  gint64 a = g_ascii_strtoll (text, &end, 10);
  if (end == text || (*end != 'x' && *end != 'X'))
    return FALSE;
  const char *rest = end + 1;
  gint64 b = g_ascii_strtoll (rest, &end, 10);
  if (end == rest || *end != '\0' || a < 200 || b < 150 || a > 8192 || b > 8192)
    return FALSE;
  *w = (int) a;
  *h = (int) b;
  return TRUE;
}

static int
pl_application_handle_local_options (GApplication *app, GVariantDict *options)
{
  PlApplication *self = PL_APPLICATION (app);
  if (g_variant_dict_contains (options, "version"))
    {
      printf ("passlab %s\n", self->version);
      return 0;
    }
  const char *size = NULL;
  if (g_variant_dict_lookup (options, "size", "&s", &size) && !parse_size (size, &self->width, &self->height))
    {
      g_printerr ("passlab: --size wants WIDTHxHEIGHT, e.g. 1400x900 (200x150 to 8192x8192), not '%s'\n", size);
      return 1;
    }
  g_variant_dict_lookup (options, "passes", "s", &self->passes);
  g_variant_dict_lookup (options, "select", "s", &self->select);
  g_variant_dict_lookup (options, "screenshot", "^ay", &self->screenshot);
  g_variant_dict_lookup (options, "page", "s", &self->page);
  g_variant_dict_lookup (options, "script", "^ay", &self->script);
  PlBackend backend;
  if (g_variant_dict_lookup (options, "run-backend", "s", &self->run_backend)
      && !pl_backend_from_name (self->run_backend, &backend))
    {
      g_printerr ("passlab: --run-backend wants reference, cpu or cuda, not '%s'\n", self->run_backend);
      return 1;
    }
  g_variant_dict_lookup (options, "tune", "s", &self->tune);
  if (g_variant_dict_lookup (options, "tune-trials", "i", &self->tune_trials) && self->tune_trials < 1)
    {
      g_printerr ("passlab: --tune-trials wants a number of trials, 1 or more\n");
      return 1;
    }
  if (g_variant_dict_lookup (options, "step", "i", &self->step) && self->step < 0)
    {
      g_printerr ("passlab: --step wants a step number, 0 or more\n");
      return 1;
    }
  if (self->passes || self->select || self->screenshot || self->script || self->run_backend || self->step >= 0
      || size || self->page || self->tune)
    g_application_set_flags (app, g_application_get_flags (app) | G_APPLICATION_NON_UNIQUE);
  return -1;
}

static void
pl_application_startup (GApplication *app)
{
  G_APPLICATION_CLASS (pl_application_parent_class)->startup (app);
  pl_passes_init ();
  gtk_window_set_default_icon_name (PL_APPLICATION_ID);
  g_autoptr (GtkCssProvider) css = gtk_css_provider_new ();
  gtk_css_provider_load_from_resource (css, "/org/passlab/Passlab/style.css");
  gtk_style_context_add_provider_for_display (gdk_display_get_default (), GTK_STYLE_PROVIDER (css),
                                              GTK_STYLE_PROVIDER_PRIORITY_APPLICATION);
  g_action_map_add_action_entries (G_ACTION_MAP (app), app_actions, G_N_ELEMENTS (app_actions), app);
  for (guint i = 0; i < G_N_ELEMENTS (shortcuts); i++)
    gtk_application_set_accels_for_action (GTK_APPLICATION (app), shortcuts[i].action, shortcuts[i].accels);
}

/* --- GObject ---------------------------------------------------------------------------------- */

static void
pl_application_finalize (GObject *object)
{
  PlApplication *self = PL_APPLICATION (object);
  g_clear_handle_id (&self->timeout_id, g_source_remove);
  g_free (self->version);
  g_free (self->passes);
  g_free (self->select);
  g_free (self->screenshot);
  g_free (self->script);
  g_free (self->run_backend);
  g_free (self->page);
  g_free (self->tune);
  G_OBJECT_CLASS (pl_application_parent_class)->finalize (object);
}

static void
pl_application_class_init (PlApplicationClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GApplicationClass *app_class = G_APPLICATION_CLASS (klass);

  object_class->finalize = pl_application_finalize;
  /* Keep the resource bundle linked in: startup loads style.css from it. */
  (void) passlab_get_resource ();
  app_class->activate = pl_application_activate;
  app_class->open = pl_application_open;
  app_class->startup = pl_application_startup;
  app_class->handle_local_options = pl_application_handle_local_options;
}

static void
pl_application_init (PlApplication *self)
{
  self->step = -1;
  g_application_add_main_option_entries (G_APPLICATION (self), option_entries);
  g_application_set_option_context_parameter_string (G_APPLICATION (self), "[FILE…]");
  g_application_set_option_context_summary (G_APPLICATION (self),
                                            "Open ONNX models and .graph files in the passlab workbench.");
}

PlApplication *
pl_application_new (const char *version, GApplicationFlags flags)
{
  PlApplication *self = g_object_new (PL_TYPE_APPLICATION, "application-id", PL_APPLICATION_ID, "flags",
                                      flags | G_APPLICATION_HANDLES_OPEN, NULL);
  self->version = g_strdup (version ? version : "");
  return self;
}

const char *
pl_application_get_version (PlApplication *self)
{
  g_return_val_if_fail (PL_IS_APPLICATION (self), NULL);
  return self->version;
}

int
pl_application_get_exit_status (PlApplication *self)
{
  g_return_val_if_fail (PL_IS_APPLICATION (self), 1);
  return self->exit_status;
}
