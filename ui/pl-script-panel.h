/* pl-script-panel.h — the workbench's script panel: a Lua editor
 * (GtkSourceView), Open / Save / Save As / Run (Ctrl+Enter) / Stop, and an
 * output console. The script runs in a worker thread with a global `graph`
 * (a copy of the window's current step, nil when none is open) and
 * `graph_path`; the history of its last passlab.run goes to the window's
 * timeline. Edits are autosaved to g_get_user_data_dir()/passlab/scratch.lua
 * (after two idle seconds and on close) and reloaded at start. */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

typedef struct _PlWindow PlWindow;

#define PL_TYPE_SCRIPT_PANEL (pl_script_panel_get_type ())
G_DECLARE_FINAL_TYPE (PlScriptPanel, pl_script_panel, PL, SCRIPT_PANEL, GtkWidget)

GtkWidget *pl_script_panel_new              (PlWindow *window);

/* The editor's text (owned by the caller), and replacing it. */
char      *pl_script_panel_get_text         (PlScriptPanel *self);
void       pl_script_panel_set_text         (PlScriptPanel *self, const char *text);
/* Opening a script file into the editor, and saving the editor to one. */
gboolean   pl_script_panel_load_file        (PlScriptPanel *self, GFile *file, GError **error);
gboolean   pl_script_panel_save_file        (PlScriptPanel *self, GFile *file, GError **error);
/* The file the editor's script was opened from / saved to, or NULL. */
GFile     *pl_script_panel_get_file         (PlScriptPanel *self);
/* Writes the editor to the scratch file now; its path (owned by the caller). */
gboolean   pl_script_panel_autosave         (PlScriptPanel *self);
char      *pl_script_panel_get_scratch_path (void);
/* FALSE: never write the scratch file (screenshots); default TRUE. */
void       pl_script_panel_set_autosave     (PlScriptPanel *self, gboolean autosave);

/* Starts the script (false when one is running already). When it ends the
 * panel emits "finished" (gboolean ok). */
gboolean   pl_script_panel_run              (PlScriptPanel *self);
/* Interrupts the running script at its next Lua instruction. */
void       pl_script_panel_stop             (PlScriptPanel *self);
gboolean   pl_script_panel_is_running       (PlScriptPanel *self);

/* What the console shows (owned by the caller). */
char      *pl_script_panel_get_output       (PlScriptPanel *self);
/* The editor line (1-based) highlighted for the last error, or -1. */
int        pl_script_panel_get_error_line   (PlScriptPanel *self);

G_END_DECLS
