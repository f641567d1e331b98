/* pl-graph-canvas-scene.c — what the canvas shows: its PlGraphLayout
 * (geometry of one version or of the union of a history) and the
 * PlGraphScene over it (which boxes the shown version has, diff states,
 * texts, selection, annotations), and search through it.
 *
 * Which layout boxes the shown version has is found through sketches
 * (pl-graph-layout.h): the version's sketch, mapped through the layout's
 * collapse set, names the keys it owns; the previous version's sketch names
 * the removed ones, drawn as ghosts at their union-layout place. A new
 * layout gets a new scene, and the selection, states and annotations are
 * applied to it again. */
#define G_LOG_DOMAIN "passlab"

#include "pl-graph-canvas-private.h"

#include <string.h>

bool
canvas_key_center (PlGraphCanvas *self, const char *key, double *x, double *y)
{
  if (self->layout == NULL || key == NULL)
    return false;
  int i = pl_graph_layout_find (self->layout, key);
  if (i >= 0)
    {
      *x = self->layout->nodes[i].x;
      *y = self->layout->nodes[i].y;
      return true;
    }
  int c = pl_graph_scene_find_cluster (self->scene, key);
  if (c < 0)
    return false;
  const PlLayoutCluster *cl = &self->layout->clusters[c];
  *x = cl->x + cl->width / 2;
  *y = cl->y + cl->height / 2;
  return true;
}

/* --- applying what is kept across layouts to the scene ----------------------------- */

static void
apply_states (PlGraphCanvas *self)
{
  if (self->scene != NULL)
    pl_graph_scene_show (self->scene, self->shown, self->prev, self->changed_ids);
}

static void
apply_selection (PlGraphCanvas *self)
{
  if (self->scene == NULL)
    return;
  self->scene->selected = self->selected_key != NULL ? pl_graph_layout_find (self->layout, self->selected_key) : -1;
  self->scene->selected_cluster = self->selected_key != NULL
    ? pl_graph_scene_find_cluster (self->scene, self->selected_key) : -1;
}

/* Puts text (NULL: none) on the scene's box for key; false when the layout
 * has no such box. */
static bool
annotate (PlGraphCanvas *self, const char *key, const char *text)
{
  int i = self->layout != NULL ? pl_graph_layout_find (self->layout, key) : -1;
  if (i < 0)
    return false;
  g_free (self->scene->annotation[i]);
  self->scene->annotation[i] = g_strdup (text);
  return true;
}

static void
apply_annotations (PlGraphCanvas *self)
{
  if (self->scene == NULL)
    return;
  GHashTableIter it;
  gpointer key, text;
  g_hash_table_iter_init (&it, self->annotations);
  while (g_hash_table_iter_next (&it, &key, &text))
    annotate (self, key, text);
}

/* --- the layout ---------------------------------------------------------------------- */

/* Where the view is anchored across a change of layout: a key both layouts
 * have (the selection, else the box of the old layout nearest the view's
 * centre that the new one has too, else a toggled fusion's cluster), and
 * its centre in the old layout. NULL when there is none. */
static char *
view_anchor (PlGraphCanvas *self, PlGraphLayout *layout, double *ax, double *ay)
{
  if (self->layout == NULL || layout == NULL || !self->view_set)
    return NULL;
  if (self->selected_key != NULL && canvas_key_center (self, self->selected_key, ax, ay)
      && (pl_graph_layout_find (layout, self->selected_key) >= 0))
    return g_strdup (self->selected_key);
  const double cx = self->ox + gtk_widget_get_width (GTK_WIDGET (self)) / 2.0 / self->zoom;
  const double cy = self->oy + gtk_widget_get_height (GTK_WIDGET (self)) / 2.0 / self->zoom;
  const PlLayoutNode *best = NULL;
  double best_d = G_MAXDOUBLE;
  for (int i = 0; i < self->layout->n_nodes; i++)
    {
      const PlLayoutNode *n = &self->layout->nodes[i];
      const double d = (n->x - cx) * (n->x - cx) + (n->y - cy) * (n->y - cy);
      if (d < best_d && pl_graph_layout_find (layout, n->key) >= 0)
        {
          best = n;
          best_d = d;
        }
    }
  if (best)
    {
      *ax = best->x;
      *ay = best->y;
      return g_strdup (best->key);
    }
  /* A toggled fusion: the box became a cluster or the other way. */
  for (int i = 0; i < layout->n_clusters; i++)
    if (canvas_key_center (self, layout->clusters[i].key, ax, ay))
      return g_strdup (layout->clusters[i].key);
  return NULL;
}

void
canvas_install_layout (PlGraphCanvas *self, PlGraphLayout *layout)
{
  /* Keep the view: the anchor stays at the same place on screen. */
  double ax = 0, ay = 0;
  g_autofree char *anchor = view_anchor (self, layout, &ax, &ay);

  if (layout != NULL)
    pl_graph_layout_ref (layout);
  g_clear_pointer (&self->scene, pl_graph_scene_free);
  g_clear_pointer (&self->layout, pl_graph_layout_unref);
  self->layout = layout;
  if (layout != NULL)
    {
      self->scene = pl_graph_scene_new (layout);
      g_clear_pointer (&self->message, g_free);
    }
  apply_states (self);
  apply_selection (self);
  apply_annotations (self);

  double nx, ny;
  if (anchor != NULL && canvas_key_center (self, anchor, &nx, &ny))
    {
      self->ox += nx - ax;
      self->oy += ny - ay;
    }
  else if (layout != NULL)
    canvas_initial_view (self);
  canvas_scene_changed (self);
}

void
pl_graph_canvas_set_layout (PlGraphCanvas *self, PlGraphLayout *layout)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self));
  /* A layout from elsewhere: fusions can no longer be re-laid out here. */
  g_clear_pointer (&self->source, pl_graph_sketch_unref);
  canvas_install_layout (self, layout);
}

PlGraphLayout *
pl_graph_canvas_get_layout (PlGraphCanvas *self)
{
  g_return_val_if_fail (PL_IS_GRAPH_CANVAS (self), NULL);
  return self->layout;
}

/* --- the version shown, selection, annotations ---------------------------------------- */

static PlGraphSketch *
sketch_of (PlGraphCanvas *self, const PlGraph *g)
{
  if (g == NULL)
    return NULL;
  bool show_constants = self->layout != NULL ? self->layout->show_constants : self->options.show_constants;
  return pl_graph_sketch_new (&g, 1, show_constants);
}

void
pl_graph_canvas_set_graph (PlGraphCanvas *self, const PlGraph *graph, const PlGraph *prev,
                           const PlGraphDiff *diff)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self));
  g_clear_pointer (&self->shown, pl_graph_sketch_unref);
  g_clear_pointer (&self->prev, pl_graph_sketch_unref);
  g_clear_pointer (&self->changed_ids, g_hash_table_unref);
  self->shown = sketch_of (self, graph);
  self->prev = sketch_of (self, prev);
  if (diff != NULL && diff->changed != NULL)
    {
      self->changed_ids = g_hash_table_new (g_direct_hash, g_direct_equal);
      for (guint i = 0; i < diff->changed->len; i++)
        g_hash_table_add (self->changed_ids, GUINT_TO_POINTER (g_array_index (diff->changed, guint32, i)));
    }
  apply_states (self);
  if (self->scene != NULL)
    pl_graph_scene_set_hover (self->scene, -1);
  canvas_scene_changed (self);
}

void
pl_graph_canvas_select (PlGraphCanvas *self, const char *key)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self));
  if (g_strcmp0 (key, self->selected_key) == 0)
    return;
  g_free (self->selected_key);
  self->selected_key = g_strdup (key);
  apply_selection (self);
  canvas_scene_changed (self);
  g_signal_emit (self, canvas_signals[SIGNAL_SELECTION_CHANGED], 0, self->selected_key);
}

const char *
pl_graph_canvas_get_selected (PlGraphCanvas *self)
{
  g_return_val_if_fail (PL_IS_GRAPH_CANVAS (self), NULL);
  return self->selected_key;
}

void
pl_graph_canvas_set_annotation (PlGraphCanvas *self, const char *key, const char *text)
{
  g_return_if_fail (PL_IS_GRAPH_CANVAS (self) && key != NULL);
  if (text != NULL)
    g_hash_table_replace (self->annotations, g_strdup (key), g_strdup (text));
  else
    g_hash_table_remove (self->annotations, key);
  if (annotate (self, key, text))
    canvas_scene_changed (self);
}

/* --- search ------------------------------------------------------------------------------ */

static bool
matches (const char *hay, const char *needle)
{
  if (hay == NULL)
    return false;
  g_autofree char *folded = g_utf8_casefold (hay, -1);
  return strstr (folded, needle) != NULL;
}

bool
pl_graph_canvas_search_next (PlGraphCanvas *self, const char *text)
{
  g_return_val_if_fail (PL_IS_GRAPH_CANVAS (self), false);
  if (self->scene == NULL || text == NULL || text[0] == '\0')
    return false;
  g_autofree char *needle = g_utf8_casefold (text, -1);
  const PlGraphLayout *l = self->layout;
  const PlGraphScene *sc = self->scene;
  /* Boxes first, then clusters, in one cycle starting after the selection. */
  int total = l->n_nodes + l->n_clusters;
  int start = sc->selected >= 0 ? sc->selected + 1
              : sc->selected_cluster >= 0 ? l->n_nodes + sc->selected_cluster + 1 : 0;
  for (int k = 0; k < total; k++)
    {
      int i = (start + k) % total;
      const char *key = NULL;
      if (i < l->n_nodes)
        {
          if (sc->node_state[i] == PL_DRAW_HIDDEN)
            continue;
          /* the op (or fusion) name under the title is searched too; a pill's is not */
          bool box = l->nodes[i].kind == PL_LAYOUT_NODE_OP || l->nodes[i].kind == PL_LAYOUT_NODE_FUSION;
          if (matches (pl_graph_scene_node_title (sc, i), needle)
              || (box && matches (pl_graph_scene_node_subtitle (sc, i), needle)))
            key = l->nodes[i].key;
        }
      else
        {
          int c = i - l->n_nodes;
          if (sc->cluster_state[c] != PL_DRAW_HIDDEN && matches (l->clusters[c].title, needle))
            key = l->clusters[c].key;
        }
      if (key != NULL)
        {
          pl_graph_canvas_select (self, key);
          pl_graph_canvas_center_on (self, key);
          return true;
        }
    }
  return false;
}
