/* pl-window-private.h — what the window's files share: pl-window.c (the
 * document, the widget and its template), pl-window-view.c (what is shown of
 * the document), pl-window-worker.c (loading, running and laying out off the
 * main thread) and pl-window-actions.c (actions, dialogs, drag and drop,
 * recent files, saved window state). */
#pragma once

#include "pl-window.h"

G_BEGIN_DECLS

/* One open document: the file and the history of the pipeline last run on
 * the graph loaded from it (step 0). Refcounted (g_rc_box) so that a worker
 * still reading it survives a newer document replacing it. */
typedef struct {
  GFile     *file;
  PlHistory *history;
} PlDocument;

PlDocument *pl_document_ref   (PlDocument *doc);
void        pl_document_unref (PlDocument *doc);

struct _PlWindow
{
  GtkApplicationWindow parent_instance;

  /* template children */
  GtkLabel         *title_label;
  GtkLabel         *subtitle_label;
  GtkMenuButton    *recent_button;
  GtkDropDown      *pipeline_dropdown;
  GtkStringList    *preset_list;
  GtkEntry         *pipeline_entry;
  GtkRevealer      *banner_revealer;
  GtkWidget        *banner_box;
  GtkImage         *banner_icon;
  GtkLabel         *banner_label;
  GtkSearchBar     *search_bar;
  GtkSearchEntry   *search_entry;
  GtkLabel         *search_status;
  GtkPaned         *outer_paned;
  GtkPaned         *inner_paned;
  GtkStack         *view_stack;
  GtkWidget        *canvas_overlay;
  PlGraphCanvas    *canvas;
  GtkLabel         *legend_label;
  PlTimeline       *timeline;
  GtkStack         *bottom_stack;    /* Timeline | Script | ... */
  GtkWidget        *script_panel;
  PlInspector      *inspector;
  GtkRevealer      *progress_revealer;
  GtkLabel         *progress_label;
  GtkProgressBar   *progress_bar;

  /* the document and what is shown of it */
  PlDocument       *doc;
  int               step;
  char             *subtitle;
  char             *banner_text;     /* NULL when no banner */

  /* the job in flight (load / run, then the canvas's layout), and what to
   * do after it */
  GCancellable     *cancellable;
  gboolean          busy;
  gboolean          awaiting_layout; /* the canvas lays out the new document */
  gboolean          fit_after_layout;
  guint             settle_tick;     /* waiting for the canvas's first frame */
  int               pending_step;    /* -2: keep the current one, -1: the last */
  char             *pending_select;

  GMenu            *recent_menu;
  gboolean          state_loaded;    /* pl_window_load_state ran: save on close */
  guint             ignore_preset;   /* the entry is being set from the preset list */
};

/* pl-window.c */
void  pl_window_set_banner       (PlWindow *self, const char *message, gboolean is_error);
/* Notifies the read-only state properties (busy, has-graph, can-run, ...). */
void  pl_window_notify_state     (PlWindow *self);
/* The step shown, or NULL when nothing is open. */
const PlStep *pl_window_current_step (PlWindow *self);
/* Adds a page under the canvas, next to the timeline ("Timeline | Script |
 * title"); name identifies it for pl_window_show_bottom_page. */
void  pl_window_add_bottom_page  (PlWindow *self, GtkWidget *page, const char *name, const char *title);
void  pl_window_show_bottom_page (PlWindow *self, const char *name);
/* The script panel (a PlScriptPanel). */
GtkWidget *pl_window_get_script_panel (PlWindow *self);

/* pl-window-view.c */
/* Shows step i (clamped) of the document on the canvas, timeline, titles,
 * legend and inspector. */
void  pl_window_show_step        (PlWindow *self, int i);
void  pl_window_update_titles    (PlWindow *self);
void  pl_window_refresh_inspector (PlWindow *self);
/* Selects key (NULL: nothing) on the canvas and centres on it. */
void  pl_window_select_key       (PlWindow *self, const char *key);
void  pl_window_zoom             (PlWindow *self, int direction);  /* -1 out, 0 fit, +1 in */

/* pl-window-worker.c */
void  pl_window_cancel           (PlWindow *self);
/* Shows history (taken) as the document's, at its last step, as a run of
 * the pipeline would; its file stays the current one, or is file when
 * nothing is open. */
void  pl_window_show_history     (PlWindow *self, PlHistory *history, GFile *file);
/* The canvas's "layout-finished": ends the wait of a job. */
void  pl_window_on_layout_finished (PlGraphCanvas *canvas, const char *error, PlWindow *self);

/* pl-window-actions.c */
void  pl_window_actions_init     (PlWindow *self);
void  pl_window_update_recent    (PlWindow *self);
void  pl_window_add_recent       (PlWindow *self, GFile *file);

G_END_DECLS
