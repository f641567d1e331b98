/* pl-panel-util.c — what the window's panels share: tying a panel to its
 * window (a weak pointer and a key to find it by), the bottom panels'
 * layout, table cells and status line, and the side panels' text and the
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

void
pl_panel_init_box (GtkBox *panel)
{
  g_return_if_fail (GTK_IS_BOX (panel));
  gtk_orientable_set_orientation (GTK_ORIENTABLE (panel), GTK_ORIENTATION_VERTICAL);
  gtk_box_set_spacing (panel, 6);
  gtk_widget_set_margin_start (GTK_WIDGET (panel), 6);
  gtk_widget_set_margin_end (GTK_WIDGET (panel), 6);
  gtk_widget_set_margin_top (GTK_WIDGET (panel), 6);
  gtk_widget_set_margin_bottom (GTK_WIDGET (panel), 6);
}

GtkWidget *
pl_panel_paned (GtkOrientation orientation, GtkWidget *start, GtkWidget *end, int position)
{
  GtkWidget *p = gtk_paned_new (orientation);
  gtk_paned_set_start_child (GTK_PANED (p), start);
  gtk_paned_set_end_child (GTK_PANED (p), end);
  gtk_paned_set_shrink_start_child (GTK_PANED (p), FALSE);
  gtk_paned_set_shrink_end_child (GTK_PANED (p), FALSE);
  if (position >= 0)
    gtk_paned_set_position (GTK_PANED (p), position);
  return p;
}

GtkLabel *
pl_panel_status_label (const char *text)
{
  GtkLabel *label = GTK_LABEL (gtk_label_new (text));
  gtk_label_set_xalign (label, 0);
  gtk_label_set_ellipsize (label, PANGO_ELLIPSIZE_END);
  gtk_widget_set_hexpand (GTK_WIDGET (label), TRUE);
  return label;
}

GtkWidget *
pl_panel_cell (const char *text, int chars, float xalign, gboolean dim)
{
  GtkWidget *l = gtk_label_new (text);
  gtk_label_set_xalign (GTK_LABEL (l), xalign);
  gtk_label_set_width_chars (GTK_LABEL (l), chars);
  gtk_label_set_max_width_chars (GTK_LABEL (l), chars);
  gtk_label_set_ellipsize (GTK_LABEL (l), PANGO_ELLIPSIZE_MIDDLE);
  if (dim)
    gtk_widget_add_css_class (l, "dim-label");
  return l;
}

GtkWidget *
pl_panel_text_label (const char *text, const char *css_class)
{
  GtkWidget *l = gtk_label_new (text);
  gtk_label_set_xalign (GTK_LABEL (l), 0);
  gtk_label_set_wrap (GTK_LABEL (l), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (l), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_selectable (GTK_LABEL (l), TRUE);
  gtk_widget_set_focusable (l, FALSE);
  if (css_class)
    gtk_widget_add_css_class (l, css_class);
  return l;
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
