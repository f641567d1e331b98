/* pl-panel-util.c — what the window's panels share: tying a panel to its
 * window (a weak pointer and a key to find it by), the status line, and the
 * buttons that link to a node. */
#define G_LOG_DOMAIN "passlab"

#include "pl-panel-util.h"

void
pl_panel_attach (gpointer panel, PlWindow *window, PlWindow **slot, const char *key)
{
  g_return_if_fail (G_IS_OBJECT (panel) && PL_IS_WINDOW (window) && slot != NULL && key != NULL);
  *slot = window;
  g_object_set_data (G_OBJECT (window), key, panel);
  g_object_add_weak_pointer (G_OBJECT (window), (gpointer *) slot);
}

void
pl_panel_detach (PlWindow **slot)
{
  g_return_if_fail (slot != NULL);
  if (*slot)
    {
      g_object_remove_weak_pointer (G_OBJECT (*slot), (gpointer *) slot);
      *slot = NULL;
    }
}

void
pl_panel_set_status (GtkLabel *label, const char *text, gboolean is_error)
{
  g_return_if_fail (GTK_IS_LABEL (label));
  gtk_label_set_text (label, text);
  gtk_widget_set_tooltip_text (GTK_WIDGET (label), text);
  if (is_error)
    gtk_widget_add_css_class (GTK_WIDGET (label), "error");
  else
    gtk_widget_remove_css_class (GTK_WIDGET (label), "error");
}

GtkWidget *
pl_panel_link_button (const char *text, const char *key, gboolean ellipsize, GCallback clicked, gpointer data)
{
  GtkWidget *b;
  if (ellipsize)
    {
      GtkWidget *label = gtk_label_new (text);
      gtk_label_set_xalign (GTK_LABEL (label), 0);
      gtk_label_set_ellipsize (GTK_LABEL (label), PANGO_ELLIPSIZE_MIDDLE);
      b = gtk_button_new ();
      gtk_button_set_child (GTK_BUTTON (b), label);
    }
  else
    b = gtk_button_new_with_label (text);
  gtk_button_set_has_frame (GTK_BUTTON (b), FALSE);
  gtk_widget_add_css_class (b, "inspector-link");
  gtk_widget_set_halign (b, GTK_ALIGN_START);
  gtk_widget_set_tooltip_text (b, "Select and centre it on the canvas");
  g_object_set_data_full (G_OBJECT (b), "pl-key", g_strdup (key), g_free);
  g_signal_connect (b, "clicked", clicked, data);
  return b;
}
