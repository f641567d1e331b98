/* pl-panel-util.h — what the window's bottom panels (run, tune, memory)
 * share: being tied to their window, and a status line. */
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
