/* pl-panel-util.h — what the window's panels share: the bottom panels (run,
 * tune, memory) being tied to their window and a status line; the side
 * panels (inspector, report view) their links to nodes. */
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
/* A flat button in the "inspector-link" style that names a node: key is
 * kept on it as "pl-key" for clicked (a GtkButton "clicked" handler, given
 * data). ellipsize: the text is left-aligned and ellipsized in the middle
 * where the button gets narrow. */
GtkWidget *pl_panel_link_button (const char *text, const char *key, gboolean ellipsize, GCallback clicked,
                                 gpointer data);
