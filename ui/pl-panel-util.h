/* pl-panel-util.h — what the window's panels share: the bottom panels (run,
 * tune, memory) being tied to their window, their layout, table cells and
 * status line; the side panels (inspector, report view) their links to
 * nodes and their text. */
#pragma once

#include <gtk/gtk.h>

#include "pl-window.h"

/* Ties panel to window: *slot points at window while it lives (a weak
 * pointer, NULL once it is gone), and window finds panel under key
 * (g_object_get_data). */
void pl_panel_attach     (gpointer panel, PlWindow *window, PlWindow **slot, const char *key);
/* Undoes pl_panel_attach's weak pointer, for dispose; *slot becomes NULL.
 * Does nothing when the window is gone already. */
void pl_panel_detach     (PlWindow **slot);
/* Shows text in a panel's status label (also as its tooltip, for when it
 * is ellipsized), in the error style when is_error. */
void pl_panel_set_status (GtkLabel *label, const char *text, gboolean is_error);
/* Lays a bottom panel out: its children in a column, 6 px between them and
 * around. */
void pl_panel_init_box (GtkBox *panel);
/* A split of start and end at position (px; negative: GTK's default) where
 * neither side shrinks below its size. */
GtkWidget *pl_panel_paned (GtkOrientation orientation, GtkWidget *start, GtkWidget *end, int position);
/* A bottom panel's status line: left-aligned, ellipsized at the end, taking
 * the free width of its row. */
GtkLabel *pl_panel_status_label (const char *text);
/* A cell of a bottom panel's table (the run panel's kernels, the memory
 * view's live tensors): chars wide, ellipsized in the middle past that,
 * aligned by xalign; dim: in the "dim-label" style. */
GtkWidget *pl_panel_cell (const char *text, int chars, float xalign, gboolean dim);
/* Left-aligned text that wraps anywhere it must and can be selected (but
 * takes no focus), with css_class (may be NULL): the side panels' values
 * and reports. */
GtkWidget *pl_panel_text_label (const char *text, const char *css_class);
/* A flat button in the "inspector-link" style that names a node: key is
 * kept on it as "pl-key" for clicked (a GtkButton "clicked" handler, given
 * data). ellipsize: the text is left-aligned and ellipsized in the middle
 * where the button gets narrow. */
GtkWidget *pl_panel_link_button (const char *text, const char *key, gboolean ellipsize, GCallback clicked,
                                 gpointer data);
