/* pl-script-panel.c — the script panel (see pl-script-panel.h).
 *
 * A run: the panel makes a fresh PlLua (so passes a script registers last
 * only as long as its run), hands it to a GTask worker with the script and
 * the text of the window's current graph, and keeps the PlLua pointer so
 * Stop can pl_lua_cancel() it from the main thread. print() output is
 * marshalled to the main context in order (same priority as the GTask's
 * completion, so all of it lands before "finished"). A fresh state per run
 * also means a script that failed or was stopped leaves nothing behind; the
 * window's graphs are never touched by the script, only copies of them.
 */
#define G_LOG_DOMAIN "passlab"

/* GtkFileChooserNative is what GTK 4.8 has; keep newer GTKs quiet about it. */
#define GDK_VERSION_MIN_REQUIRED GDK_VERSION_4_8
#define GDK_VERSION_MAX_ALLOWED GDK_VERSION_4_8

#include "pl-script-panel.h"

#include <errno.h>

#include <glib/gstdio.h>
#include <gtksourceview/gtksource.h>

#include "pl-lua.h"
#include "pl-window-private.h"
#include "text-format.h"

#define AUTOSAVE_DELAY_S 2
#define SCRIPT_MEMORY_LIMIT ((size_t) 2 << 30)

static const char default_script[] =
  "-- A passlab script. `graph` is a copy of the graph shown (nil when none is\n"
  "-- open). The history of the last passlab.run goes to the timeline.\n"
  "-- Ctrl+Enter runs, Stop interrupts.\n"
  "local passlab = require \"passlab\"\n"
  "\n"
  "if graph then\n"
  "  local h = passlab.run (graph, { \"simplify\" }, { check = true })\n"
  "  print (string.format (\"nodes %d -> %d\", h[0].stats.nodes, h[1].stats.nodes))\n"
  "end\n";

struct _PlScriptPanel
{
  GtkWidget        parent_instance;

  PlWindow        *window;     /* not owned: the window owns the panel */
  GtkSourceBuffer *buffer;
  GtkSourceView   *view;
  GtkTextBuffer   *console;
  GtkTextView     *console_view;
  GtkLabel        *file_label;
  GtkWidget       *run_button;
  GtkWidget       *stop_button;
  GtkTextTag      *error_line_tag;

  GFile           *file;       /* the script's file, or NULL (scratch only) */
  gboolean         no_autosave;
  gboolean         modified;   /* since it was opened from / saved to file */
  guint            autosave_id;
  int              error_line;

  PlLua           *lua;        /* the running script's state, or NULL */
  guint            run_serial; /* prints of an older run are dropped */
  gboolean         disposed;
};

G_DEFINE_FINAL_TYPE (PlScriptPanel, pl_script_panel, GTK_TYPE_WIDGET)

enum { SIGNAL_FINISHED, N_SIGNALS };
static guint signals[N_SIGNALS];

/* --- console ------------------------------------------------------------------------------- */

static void
console_append (PlScriptPanel *self, const char *text, const char *tag)
{
  GtkTextIter end;
  gtk_text_buffer_get_end_iter (self->console, &end);
  gtk_text_buffer_insert_with_tags_by_name (self->console, &end, text, -1, tag, NULL);
  gtk_text_buffer_get_end_iter (self->console, &end);
  GtkTextMark *mark = gtk_text_buffer_get_mark (self->console, "end");
  gtk_text_buffer_move_mark (self->console, mark, &end);
  gtk_text_view_scroll_mark_onscreen (self->console_view, mark);
}

typedef struct {
  PlScriptPanel *panel;
  guint          serial;
  char          *text;
} PrintMsg;

static void
print_msg_free (PrintMsg *m)
{
  g_object_unref (m->panel);
  g_free (m->text);
  g_free (m);
}

static gboolean
print_dispatch (gpointer data)
{
  PrintMsg *m = data;
  if (!m->panel->disposed && m->serial == m->panel->run_serial)
    console_append (m->panel, m->text, "output");
  return G_SOURCE_REMOVE;
}

/* Runs in the worker thread. */
typedef struct {
  PlScriptPanel *panel;
  guint          serial;
  GMainContext  *context;
} PrintTarget;

static void
on_script_print (const char *text, gpointer user_data)
{
  PrintTarget *t = user_data;
  PrintMsg *m = g_new0 (PrintMsg, 1);
  m->panel = g_object_ref (t->panel);
  m->serial = t->serial;
  m->text = g_strdup (text);
  g_main_context_invoke_full (t->context, G_PRIORITY_DEFAULT, print_dispatch, m, (GDestroyNotify) print_msg_free);
}

/* --- the editor's file and the scratch file ---------------------------------------------------- */

char *
pl_script_panel_get_scratch_path (void)
{
  return g_build_filename (g_get_user_data_dir (), "passlab", "scratch.lua", NULL);
}

static void
update_file_label (PlScriptPanel *self)
{
  g_autofree char *name = self->file ? g_file_get_basename (self->file) : g_strdup ("Unsaved script");
  g_autofree char *text = g_strdup_printf ("%s%s", self->modified ? "• " : "", name);
  gtk_label_set_text (self->file_label, text);
  g_autofree char *path = self->file ? g_file_get_path (self->file) : pl_script_panel_get_scratch_path ();
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->file_label), path);
}

gboolean
pl_script_panel_autosave (PlScriptPanel *self)
{
  g_return_val_if_fail (PL_IS_SCRIPT_PANEL (self), FALSE);
  g_clear_handle_id (&self->autosave_id, g_source_remove);
  if (self->no_autosave)
    return TRUE;
  g_autofree char *path = pl_script_panel_get_scratch_path ();
  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *text = pl_script_panel_get_text (self);
  g_autoptr (GError) error = NULL;
  if (g_mkdir_with_parents (dir, 0700) != 0 || !g_file_set_contents (path, text, -1, &error))
    {
      g_warning ("could not autosave the script to %s: %s", path, error ? error->message : g_strerror (errno));
      return FALSE;
    }
  return TRUE;
}

void
pl_script_panel_set_autosave (PlScriptPanel *self, gboolean autosave)
{
  g_return_if_fail (PL_IS_SCRIPT_PANEL (self));
  self->no_autosave = !autosave;
  if (!autosave)
    g_clear_handle_id (&self->autosave_id, g_source_remove);
}

static gboolean
autosave_timeout (gpointer data)
{
  PlScriptPanel *self = data;
  self->autosave_id = 0;
  pl_script_panel_autosave (self);
  return G_SOURCE_REMOVE;
}

static void
clear_error_line (PlScriptPanel *self)
{
  GtkTextIter start, end;
  gtk_text_buffer_get_bounds (GTK_TEXT_BUFFER (self->buffer), &start, &end);
  gtk_text_buffer_remove_tag (GTK_TEXT_BUFFER (self->buffer), self->error_line_tag, &start, &end);
  self->error_line = -1;
}

static void
on_buffer_changed (GtkTextBuffer *buffer, PlScriptPanel *self)
{
  clear_error_line (self);
  if (!self->modified)
    {
      self->modified = TRUE;
      update_file_label (self);
    }
  g_clear_handle_id (&self->autosave_id, g_source_remove);
  if (!self->no_autosave)
    self->autosave_id = g_timeout_add (AUTOSAVE_DELAY_S * 1000, autosave_timeout, self);
}

char *
pl_script_panel_get_text (PlScriptPanel *self)
{
  g_return_val_if_fail (PL_IS_SCRIPT_PANEL (self), NULL);
  GtkTextIter start, end;
  gtk_text_buffer_get_bounds (GTK_TEXT_BUFFER (self->buffer), &start, &end);
  return gtk_text_buffer_get_text (GTK_TEXT_BUFFER (self->buffer), &start, &end, FALSE);
}

void
pl_script_panel_set_text (PlScriptPanel *self, const char *text)
{
  g_return_if_fail (PL_IS_SCRIPT_PANEL (self));
  gtk_text_buffer_set_text (GTK_TEXT_BUFFER (self->buffer), text ? text : "", -1);
  GtkTextIter start;
  gtk_text_buffer_get_start_iter (GTK_TEXT_BUFFER (self->buffer), &start);
  gtk_text_buffer_place_cursor (GTK_TEXT_BUFFER (self->buffer), &start);
}

gboolean
pl_script_panel_load_file (PlScriptPanel *self, GFile *file, GError **error)
{
  g_return_val_if_fail (PL_IS_SCRIPT_PANEL (self), FALSE);
  g_autofree char *contents = NULL;
  gsize len = 0;
  if (!g_file_load_contents (file, NULL, &contents, &len, NULL, error))
    return FALSE;
  if (!g_utf8_validate (contents, (gssize) len, NULL))
    {
      g_autofree char *name = g_file_get_basename (file);
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s is not UTF-8 text", name);
      return FALSE;
    }
  if (self->modified && !self->no_autosave)
    {
      /* The scratch copy is about to hold the new file: keep the edits it replaces. */
      g_autofree char *old = pl_script_panel_get_text (self);
      g_autofree char *scratch = pl_script_panel_get_scratch_path ();
      g_autofree char *dir = g_path_get_dirname (scratch);
      g_autofree char *backup = g_build_filename (dir, "scratch-previous.lua", NULL);
      if (g_mkdir_with_parents (dir, 0700) == 0 && g_file_set_contents (backup, old, -1, NULL))
        {
          g_autofree char *msg = g_strdup_printf ("The unsaved script was kept in %s\n", backup);
          console_append (self, msg, "info");
        }
    }
  pl_script_panel_set_text (self, contents);  /* autosaves the scratch copy too */
  g_set_object (&self->file, file);
  self->modified = FALSE;
  update_file_label (self);
  return TRUE;
}

gboolean
pl_script_panel_save_file (PlScriptPanel *self, GFile *file, GError **error)
{
  g_return_val_if_fail (PL_IS_SCRIPT_PANEL (self), FALSE);
  g_autofree char *text = pl_script_panel_get_text (self);
  if (!g_file_replace_contents (file, text, strlen (text), NULL, FALSE, G_FILE_CREATE_NONE, NULL, NULL, error))
    return FALSE;
  g_set_object (&self->file, file);
  self->modified = FALSE;
  update_file_label (self);
  return TRUE;
}

GFile *
pl_script_panel_get_file (PlScriptPanel *self)
{
  g_return_val_if_fail (PL_IS_SCRIPT_PANEL (self), NULL);
  return self->file;
}

/* --- Open / Save dialogs ----------------------------------------------------------------------- */

static void
report_io_error (PlScriptPanel *self, const char *what, GError *error)
{
  g_autofree char *msg = g_strdup_printf ("%s: %s\n", what, error->message);
  console_append (self, msg, "error");
}

static void
add_lua_filter (GtkFileChooser *chooser)
{
  GtkFileFilter *filter = gtk_file_filter_new ();
  gtk_file_filter_set_name (filter, "Lua scripts");
  gtk_file_filter_add_suffix (filter, "lua");
  gtk_file_chooser_add_filter (chooser, filter);
  g_object_unref (filter);
}

static void
on_open_response (GtkNativeDialog *dialog, int response, PlScriptPanel *self)
{
  if (response == GTK_RESPONSE_ACCEPT && !self->disposed)
    {
      g_autoptr (GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));
      g_autoptr (GError) error = NULL;
      if (file && !pl_script_panel_load_file (self, file, &error))
        report_io_error (self, "Could not open the script", error);
    }
  g_object_unref (dialog);
  g_object_unref (self);
}

static void
on_open_clicked (GtkButton *button, PlScriptPanel *self)
{
  GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (self));
  GtkFileChooserNative *dialog = gtk_file_chooser_native_new ("Open a Script", GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
                                                              GTK_FILE_CHOOSER_ACTION_OPEN, "_Open", "_Cancel");
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (dialog), TRUE);
  add_lua_filter (GTK_FILE_CHOOSER (dialog));
  g_signal_connect (dialog, "response", G_CALLBACK (on_open_response), g_object_ref (self));
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

static void
on_save_response (GtkNativeDialog *dialog, int response, PlScriptPanel *self)
{
  if (response == GTK_RESPONSE_ACCEPT && !self->disposed)
    {
      g_autoptr (GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));
      g_autoptr (GError) error = NULL;
      if (file && !pl_script_panel_save_file (self, file, &error))
        report_io_error (self, "Could not save the script", error);
    }
  g_object_unref (dialog);
  g_object_unref (self);
}

static void
on_save_as_clicked (GtkButton *button, PlScriptPanel *self)
{
  GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (self));
  GtkFileChooserNative *dialog = gtk_file_chooser_native_new ("Save the Script", GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
                                                              GTK_FILE_CHOOSER_ACTION_SAVE, "_Save", "_Cancel");
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (dialog), TRUE);
  add_lua_filter (GTK_FILE_CHOOSER (dialog));
  if (self->file)
    gtk_file_chooser_set_file (GTK_FILE_CHOOSER (dialog), self->file, NULL);
  else
    gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (dialog), "script.lua");
  g_signal_connect (dialog, "response", G_CALLBACK (on_save_response), g_object_ref (self));
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

static void
on_save_clicked (GtkButton *button, PlScriptPanel *self)
{
  if (!self->file)
    {
      on_save_as_clicked (button, self);
      return;
    }
  g_autoptr (GError) error = NULL;
  if (!pl_script_panel_save_file (self, self->file, &error))
    report_io_error (self, "Could not save the script", error);
}

/* --- running ------------------------------------------------------------------------------ */

typedef struct {
  PlLua       *lua;
  char        *code;
  char        *chunkname;
  char        *graph_text;  /* the window's current step, or NULL */
  char        *graph_path;
  PrintTarget  target;
  guint        serial;
  /* results */
  PlHistory   *history;
} RunData;

static void
run_data_free (RunData *d)
{
  pl_lua_free (d->lua);  /* the worker is done: no pass of this state still runs */
  g_free (d->code);
  g_free (d->chunkname);
  g_free (d->graph_text);
  g_free (d->graph_path);
  g_object_unref (d->target.panel);
  g_main_context_unref (d->target.context);
  g_clear_pointer (&d->history, pl_history_free);
  g_free (d);
}

/* A Lua long string holding text: [==[text]==] with enough '='s. */
static void
append_long_string (GString *out, const char *text)
{
  int level = 0;
  for (;;)
    {
      g_autofree char *eq = g_strnfill (level, '=');
      g_autofree char *close = g_strdup_printf ("]%s]", eq);
      if (!strstr (text, close))
        {
          /* A newline right after the opening bracket is dropped by Lua. */
          g_string_append_printf (out, "[%s[\n%s%s", eq, text, close);
          return;
        }
      level++;
    }
}

static void
run_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  RunData *d = task_data;
  GError *error = NULL;
  /* The globals first, as a chunk of their own so the script's lines stay its own. */
  GString *prelude = g_string_new ("graph_path = ");
  if (d->graph_path)
    append_long_string (prelude, d->graph_path);
  else
    g_string_append (prelude, "nil");
  g_string_append (prelude, "\ngraph = ");
  if (d->graph_text)
    {
      g_string_append (prelude, "require (\"passlab\").parse (");
      append_long_string (prelude, d->graph_text);
      g_string_append (prelude, ", graph_path)");
    }
  else
    g_string_append (prelude, "nil");
  g_string_append (prelude, "\n");
  bool ok = pl_lua_run_string (d->lua, prelude->str, "=graph", &error);
  g_string_free (prelude, TRUE);
  if (ok && g_cancellable_is_cancelled (cancellable))
    {
      ok = false;
      g_set_error (&error, PL_LUA_ERROR, PL_LUA_ERROR_INTERRUPTED, "interrupted");
    }
  if (ok)
    ok = pl_lua_run_string (d->lua, d->code, d->chunkname, &error);
  d->history = pl_lua_take_last_history (d->lua);
  if (ok)
    g_task_return_boolean (task, TRUE);
  else
    g_task_return_error (task, error);
}

static void
set_running (PlScriptPanel *self, gboolean running)
{
  gtk_widget_set_sensitive (self->run_button, !running);
  gtk_widget_set_sensitive (self->stop_button, running);
}

static void
show_error_line (PlScriptPanel *self, int line)
{
  GtkTextBuffer *buf = GTK_TEXT_BUFFER (self->buffer);
  if (line < 1 || line > gtk_text_buffer_get_line_count (buf))
    return;
  GtkTextIter start, end;
  gtk_text_buffer_get_iter_at_line (buf, &start, line - 1);
  end = start;
  gtk_text_iter_forward_line (&end);
  gtk_text_buffer_apply_tag (buf, self->error_line_tag, &start, &end);
  gtk_text_buffer_place_cursor (buf, &start);
  self->error_line = line;
  GtkTextMark *mark = gtk_text_buffer_get_insert (buf);
  gtk_text_view_scroll_to_mark (GTK_TEXT_VIEW (self->view), mark, 0.1, TRUE, 0, 0.3);
}

static void
run_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
  PlScriptPanel *self = PL_SCRIPT_PANEL (source);
  GTask *task = G_TASK (result);
  RunData *d = g_task_get_task_data (task);
  g_autoptr (GError) error = NULL;
  gboolean ok = g_task_propagate_boolean (task, &error);
  if (self->lua == d->lua)
    self->lua = NULL;
  if (self->disposed)
    return;
  set_running (self, FALSE);
  if (ok)
    console_append (self, "Done.\n", "info");
  else if (g_error_matches (error, PL_LUA_ERROR, PL_LUA_ERROR_INTERRUPTED)
           || g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    console_append (self, "Stopped.\n", "info");
  else
    {
      g_autofree char *msg = g_strdup_printf ("%s\n", error->message);
      console_append (self, msg, "error");
      /* Only errors in the editor's own chunk point at its lines. */
      if (g_str_has_prefix (error->message, d->chunkname) && error->message[strlen (d->chunkname)] == ':')
        show_error_line (self, pl_lua_error_line (error));
    }
  /* What the script ran before it stopped is still worth seeing. */
  if (d->history && self->window)
    {
      g_autoptr (GFile) fallback = NULL;
      if (!pl_window_get_file (self->window))
        {
          g_autofree char *scratch = pl_script_panel_get_scratch_path ();
          fallback = self->file ? g_object_ref (self->file) : g_file_new_for_path (scratch);
        }
      pl_window_show_history (self->window, g_steal_pointer (&d->history), fallback);
    }
  g_signal_emit (self, signals[SIGNAL_FINISHED], 0, ok);
}

gboolean
pl_script_panel_run (PlScriptPanel *self)
{
  g_return_val_if_fail (PL_IS_SCRIPT_PANEL (self), FALSE);
  if (self->lua)
    return FALSE;
  pl_script_panel_autosave (self);  /* a script that hangs the machine loses nothing */
  clear_error_line (self);
  gtk_text_buffer_set_text (self->console, "", -1);

  RunData *d = g_new0 (RunData, 1);
  d->serial = ++self->run_serial;
  d->target.panel = g_object_ref (self);
  d->target.serial = d->serial;
  d->target.context = g_main_context_ref_thread_default ();
  PlLuaOptions o;
  pl_lua_options_init (&o);
  o.print = on_script_print;
  o.print_data = &d->target;
  o.memory_limit = SCRIPT_MEMORY_LIMIT;
  d->lua = pl_lua_new (&o);
  d->code = pl_script_panel_get_text (self);
  d->chunkname = self->file ? g_file_get_basename (self->file) : g_strdup ("scratch.lua");

  const PlHistory *h = self->window ? pl_window_get_history (self->window) : NULL;
  if (h)
    {
      const PlStep *s = pl_history_step (h, pl_window_get_step (self->window));
      d->graph_text = s ? pl_text_print (s->graph) : NULL;
      GFile *file = pl_window_get_file (self->window);
      d->graph_path = file ? g_file_get_path (file) : NULL;
    }
  self->lua = d->lua;
  set_running (self, TRUE);

  g_autoptr (GCancellable) cancellable = g_cancellable_new ();
  GTask *task = g_task_new (self, cancellable, run_done, NULL);
  g_task_set_source_tag (task, pl_script_panel_run);
  g_task_set_check_cancellable (task, FALSE);  /* the worker says how the script ended */
  g_task_set_task_data (task, d, (GDestroyNotify) run_data_free);
  g_object_set_data_full (G_OBJECT (self), "cancellable", g_object_ref (cancellable), g_object_unref);
  g_task_run_in_thread (task, run_thread);
  g_object_unref (task);
  return TRUE;
}

void
pl_script_panel_stop (PlScriptPanel *self)
{
  g_return_if_fail (PL_IS_SCRIPT_PANEL (self));
  if (!self->lua)
    return;
  GCancellable *c = g_object_get_data (G_OBJECT (self), "cancellable");
  if (c)
    g_cancellable_cancel (c);
  pl_lua_cancel (self->lua);
}

gboolean
pl_script_panel_is_running (PlScriptPanel *self)
{
  g_return_val_if_fail (PL_IS_SCRIPT_PANEL (self), FALSE);
  return self->lua != NULL;
}

char *
pl_script_panel_get_output (PlScriptPanel *self)
{
  g_return_val_if_fail (PL_IS_SCRIPT_PANEL (self), NULL);
  GtkTextIter start, end;
  gtk_text_buffer_get_bounds (self->console, &start, &end);
  return gtk_text_buffer_get_text (self->console, &start, &end, FALSE);
}

int
pl_script_panel_get_error_line (PlScriptPanel *self)
{
  g_return_val_if_fail (PL_IS_SCRIPT_PANEL (self), -1);
  return self->error_line;
}

static void
on_run_clicked (GtkButton *button, PlScriptPanel *self)
{
  pl_script_panel_run (self);
}

static void
on_stop_clicked (GtkButton *button, PlScriptPanel *self)
{
  pl_script_panel_stop (self);
}

static gboolean
on_run_shortcut (GtkWidget *widget, GVariant *args, gpointer user_data)
{
  pl_script_panel_run (PL_SCRIPT_PANEL (widget));
  return TRUE;
}

/* --- building --------------------------------------------------------------------------------- */

static GtkWidget *
tool_button (const char *icon, const char *label, const char *tooltip)
{
  GtkWidget *button = gtk_button_new ();
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
  if (icon)
    gtk_box_append (GTK_BOX (box), gtk_image_new_from_icon_name (icon));
  GtkWidget *l = gtk_label_new_with_mnemonic (label);
  gtk_box_append (GTK_BOX (box), l);
  gtk_button_set_child (GTK_BUTTON (button), box);
  gtk_widget_set_tooltip_text (button, tooltip);
  gtk_button_set_has_frame (GTK_BUTTON (button), FALSE);
  return button;
}

static void
build (PlScriptPanel *self)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
  gtk_widget_set_parent (box, GTK_WIDGET (self));

  /* the toolbar */
  GtkWidget *bar = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 2);
  gtk_widget_add_css_class (bar, "toolbar");
  GtkWidget *open = tool_button ("document-open-symbolic", "_Open…", "Open a Lua script");
  GtkWidget *save = tool_button ("document-save-symbolic", "_Save", "Save the script to its file");
  GtkWidget *save_as = tool_button (NULL, "Save _As…", "Save the script to a new file");
  self->run_button = tool_button ("media-playback-start-symbolic", "_Run", "Run the script (Ctrl+Enter)");
  self->stop_button = tool_button ("media-playback-stop-symbolic", "S_top", "Interrupt the running script");
  gtk_widget_add_css_class (self->run_button, "suggested-action");
  g_signal_connect (open, "clicked", G_CALLBACK (on_open_clicked), self);
  g_signal_connect (save, "clicked", G_CALLBACK (on_save_clicked), self);
  g_signal_connect (save_as, "clicked", G_CALLBACK (on_save_as_clicked), self);
  g_signal_connect (self->run_button, "clicked", G_CALLBACK (on_run_clicked), self);
  g_signal_connect (self->stop_button, "clicked", G_CALLBACK (on_stop_clicked), self);
  gtk_box_append (GTK_BOX (bar), open);
  gtk_box_append (GTK_BOX (bar), save);
  gtk_box_append (GTK_BOX (bar), save_as);
  gtk_box_append (GTK_BOX (bar), gtk_separator_new (GTK_ORIENTATION_VERTICAL));
  gtk_box_append (GTK_BOX (bar), self->run_button);
  gtk_box_append (GTK_BOX (bar), self->stop_button);
  self->file_label = GTK_LABEL (gtk_label_new (NULL));
  gtk_label_set_ellipsize (self->file_label, PANGO_ELLIPSIZE_MIDDLE);
  gtk_label_set_xalign (self->file_label, 1);
  gtk_widget_set_hexpand (GTK_WIDGET (self->file_label), TRUE);
  gtk_widget_set_margin_end (GTK_WIDGET (self->file_label), 8);
  gtk_widget_add_css_class (GTK_WIDGET (self->file_label), "dim-label");
  gtk_box_append (GTK_BOX (bar), GTK_WIDGET (self->file_label));
  gtk_box_append (GTK_BOX (box), bar);

  /* the editor (left) and the console (right) */
  GtkWidget *paned = gtk_paned_new (GTK_ORIENTATION_HORIZONTAL);
  gtk_widget_set_vexpand (paned, TRUE);
  gtk_paned_set_position (GTK_PANED (paned), 560);
  gtk_box_append (GTK_BOX (box), paned);

  GtkSourceLanguageManager *lm = gtk_source_language_manager_get_default ();
  self->buffer = gtk_source_buffer_new (NULL);
  gtk_source_buffer_set_language (self->buffer, gtk_source_language_manager_get_language (lm, "lua"));
  GtkSourceStyleSchemeManager *sm = gtk_source_style_scheme_manager_get_default ();
  GtkSourceStyleScheme *scheme = gtk_source_style_scheme_manager_get_scheme (sm, "Adwaita");
  if (!scheme)
    scheme = gtk_source_style_scheme_manager_get_scheme (sm, "classic");
  if (scheme)
    gtk_source_buffer_set_style_scheme (self->buffer, scheme);
  self->error_line_tag = gtk_text_buffer_create_tag (GTK_TEXT_BUFFER (self->buffer), "error-line",
                                                     "paragraph-background", "#f8d0d0", NULL);
  self->view = GTK_SOURCE_VIEW (gtk_source_view_new_with_buffer (self->buffer));
  g_object_unref (self->buffer);  /* the view holds it */
  gtk_source_view_set_show_line_numbers (self->view, TRUE);
  gtk_source_view_set_highlight_current_line (self->view, TRUE);
  gtk_source_view_set_auto_indent (self->view, TRUE);
  gtk_source_view_set_insert_spaces_instead_of_tabs (self->view, TRUE);
  gtk_source_view_set_tab_width (self->view, 2);
  gtk_text_view_set_monospace (GTK_TEXT_VIEW (self->view), TRUE);
  GtkWidget *scroll = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroll), GTK_WIDGET (self->view));
  gtk_paned_set_start_child (GTK_PANED (paned), scroll);
  gtk_paned_set_shrink_start_child (GTK_PANED (paned), FALSE);

  self->console_view = GTK_TEXT_VIEW (gtk_text_view_new ());
  self->console = gtk_text_view_get_buffer (self->console_view);
  gtk_text_view_set_editable (self->console_view, FALSE);
  gtk_text_view_set_cursor_visible (self->console_view, FALSE);
  gtk_text_view_set_monospace (self->console_view, TRUE);
  gtk_text_view_set_wrap_mode (self->console_view, GTK_WRAP_WORD_CHAR);
  gtk_text_view_set_left_margin (self->console_view, 6);
  gtk_text_buffer_create_tag (self->console, "output", NULL);
  gtk_text_buffer_create_tag (self->console, "error", "foreground", "#c01c28", NULL);
  gtk_text_buffer_create_tag (self->console, "info", "foreground", "#77767b", "style", PANGO_STYLE_ITALIC, NULL);
  GtkTextIter end;
  gtk_text_buffer_get_end_iter (self->console, &end);
  gtk_text_buffer_create_mark (self->console, "end", &end, FALSE);
  scroll = gtk_scrolled_window_new ();
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroll), GTK_WIDGET (self->console_view));
  gtk_paned_set_end_child (GTK_PANED (paned), scroll);
  gtk_paned_set_shrink_end_child (GTK_PANED (paned), FALSE);
}

/* --- GObject ---------------------------------------------------------------------------------- */

static void
pl_script_panel_dispose (GObject *object)
{
  PlScriptPanel *self = PL_SCRIPT_PANEL (object);
  if (!self->disposed)
    {
      /* Unsaved edits are never lost: the scratch copy is written on close. */
      if (self->buffer)
        pl_script_panel_autosave (self);
      pl_script_panel_stop (self);
      self->disposed = TRUE;
      self->window = NULL;
    }
  g_clear_handle_id (&self->autosave_id, g_source_remove);
  GtkWidget *child;
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self))))
    gtk_widget_unparent (child);
  self->buffer = NULL;
  G_OBJECT_CLASS (pl_script_panel_parent_class)->dispose (object);
}

static void
pl_script_panel_finalize (GObject *object)
{
  PlScriptPanel *self = PL_SCRIPT_PANEL (object);
  g_clear_object (&self->file);
  G_OBJECT_CLASS (pl_script_panel_parent_class)->finalize (object);
}

static void
pl_script_panel_class_init (PlScriptPanelClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);
  object_class->dispose = pl_script_panel_dispose;
  object_class->finalize = pl_script_panel_finalize;
  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);

  signals[SIGNAL_FINISHED] = g_signal_new ("finished", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                           NULL, G_TYPE_NONE, 1, G_TYPE_BOOLEAN);
}

static void
pl_script_panel_init (PlScriptPanel *self)
{
  gtk_source_init ();
  self->error_line = -1;
  build (self);

  /* The last session's script, else an example. */
  g_autofree char *scratch = pl_script_panel_get_scratch_path ();
  g_autofree char *text = NULL;
  if (!g_file_get_contents (scratch, &text, NULL, NULL) || !g_utf8_validate (text, -1, NULL))
    g_clear_pointer (&text, g_free);
  pl_script_panel_set_text (self, text ? text : default_script);
  self->modified = text != NULL;  /* saved in no file of its own */
  g_signal_connect (self->buffer, "changed", G_CALLBACK (on_buffer_changed), self);
  update_file_label (self);
  set_running (self, FALSE);

  /* Ctrl+Enter must reach the panel before the text view takes Return. */
  GtkEventController *keys = gtk_shortcut_controller_new ();
  gtk_event_controller_set_propagation_phase (keys, GTK_PHASE_CAPTURE);
  gtk_shortcut_controller_add_shortcut (GTK_SHORTCUT_CONTROLLER (keys),
    gtk_shortcut_new (gtk_shortcut_trigger_parse_string ("<Control>Return|<Control>KP_Enter"),
                      gtk_callback_action_new (on_run_shortcut, NULL, NULL)));
  gtk_widget_add_controller (GTK_WIDGET (self), keys);
}

GtkWidget *
pl_script_panel_new (PlWindow *window)
{
  PlScriptPanel *self = g_object_new (PL_TYPE_SCRIPT_PANEL, NULL);
  self->window = window;
  return GTK_WIDGET (self);
}
