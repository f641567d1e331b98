/* fusion-plan.c — whether fusing a set of nodes would make a cycle, and
 * PlFusionPlan, the planner fusion passes grow groups on before anything in
 * the graph changes.
 *
 * The planner is a union-find over the nodes plus a topological order of the
 * groups that is kept valid as groups merge (Pearce & Kelly, "A dynamic
 * topological sort algorithm for directed acyclic graphs", JEA 2006; XLA's
 * GraphCycles does the same for its fusion passes). With a valid order,
 * "would merging these groups make a cycle" is a forward search from the
 * groups that only visits groups ordered before the last of them: a path
 * that leaves the set and comes back must stay below that bound. When the
 * merge goes ahead, the groups that search found (δF) and the groups that
 * reach the set from above the lowest of them (δB) swap their topological
 * slots so δB, the merged group, δF follow each other; everything else keeps
 * its slot. Without a plan, pl_fusion_would_cycle searches the graph from
 * the set in both directions at once.
 */
#define G_LOG_DOMAIN "passlab"
#include "fusion.h"

#include <string.h>

/* Groups one planner check may visit before it refuses the merge. */
#define SEARCH_BUDGET 4096
/* --- the cycle check without a plan --------------------------------------------- */

typedef struct {
  GHashTable *set;
  GHashTable *seen;
  GPtrArray  *stack;
  bool        forward;
  bool        seeding;  /* expanding the set itself: edges among members are no way back */
  bool        hit;      /* came back into the set */
} Search;

static void
search_push (Search *s, PlNode *x)
{
  if (g_hash_table_contains (s->set, x))
    s->hit |= !s->seeding;
  else if (g_hash_table_add (s->seen, x))
    g_ptr_array_add (s->stack, x);
}

/* Pushes the neighbours of x in the search's direction. Forward searches
 * follow data edges only; they run only when the graph has no control edges. */
static void
search_expand (Search *s, PlNode *x)
{
  if (s->forward)
    {
      for (int o = 0; o < x->n_outputs; o++)
        for (int u = 0; x->outputs[o] && u < x->outputs[o]->n_uses; u++)
          search_push (s, x->outputs[o]->uses[u].node);
    }
  else
    {
      for (int i = 0; i < x->n_inputs; i++)
        if (x->inputs[i] && x->inputs[i]->producer)
          search_push (s, x->inputs[i]->producer);
      for (int c = 0; c < x->n_controls; c++)
        search_push (s, x->controls[c].node);
    }
}

bool
pl_fusion_would_cycle (const PlGraph *g, PlNode *const *nodes, int n)
{
  g_return_val_if_fail (g != NULL, false);
  if (n <= 1)
    return false;
  g_autoptr (GHashTable) set = g_hash_table_new (NULL, NULL);
  for (int i = 0; i < n; i++)
    g_hash_table_add (set, nodes[i]);

  /* Without control edges both directions see every edge: step them in turn
   * and stop when either comes back into the set or runs out. With control
   * edges only the backward side sees them all, so it runs alone. */
  int first = g->n_control_edges == 0 ? 0 : 1;
  Search side[2];
  for (int d = first; d < 2; d++)
    {
      side[d] = (Search) { set, g_hash_table_new (NULL, NULL), g_ptr_array_new (), d == 0, true, false };
      for (int i = 0; i < n; i++)
        search_expand (&side[d], nodes[i]);
      side[d].seeding = false;
    }
  bool result = false, done = false;
  while (!done)
    for (int d = first; d < 2 && !done; d++)
      {
        Search *s = &side[d];
        if (s->stack->len == 0)
          done = true;
        else
          {
            search_expand (s, g_ptr_array_steal_index_fast (s->stack, s->stack->len - 1));
            done = result = s->hit;
          }
      }
  for (int d = first; d < 2; d++)
    {
      g_hash_table_unref (side[d].seen);
      g_ptr_array_unref (side[d].stack);
    }
  return result;
}

/* --- the planner -------------------------------------------------------------- */

struct _PlFusionPlan {
  const PlGraph *g;
  int       n;
  PlNode  **node;          /* by index: the topological order at creation */
  int      *index_of_id;   /* node id -> index */
  guint32   n_ids;
  int      *parent;        /* union-find */
  int      *ord;           /* a group's topological slot (at roots) */
  int      *size;          /* members (at roots) */
  int      *head, *last;   /* member list (at roots), linked through next */
  int      *next;
  int      *csucc_start;   /* nodes waiting on node i: csucc[csucc_start[i] .. csucc_start[i+1]) */
  int      *csucc;
  guint    *in_set, *seen_f, *seen_b;   /* stamps per root */
  guint     stamp;
  bool      seeding;    /* expanding the set itself: edges among its groups are no way back */
  GArray   *stack, *delta_f, *delta_b;  /* int */
};

static int
plan_find (PlFusionPlan *p, int i)
{
  while (p->parent[i] != i)
    {
      p->parent[i] = p->parent[p->parent[i]];
      i = p->parent[i];
    }
  return i;
}

static int
plan_index (const PlFusionPlan *p, const PlNode *node)
{
  g_return_val_if_fail (node && node->graph == p->g && node->id < p->n_ids, -1);
  return p->index_of_id[node->id];
}

PlFusionPlan *
pl_fusion_plan_new (const PlGraph *g, GError **error)
{
  int n;
  PlNode **order = pl_graph_topo_order (g, &n, error);
  if (!order)
    return NULL;
  PlFusionPlan *p = g_new0 (PlFusionPlan, 1);
  p->g = g;
  p->n = n;
  p->node = order;
  p->n_ids = 1;
  for (int i = 0; i < n; i++)
    p->n_ids = MAX (p->n_ids, order[i]->id + 1);
  p->index_of_id = g_new (int, p->n_ids);
  memset (p->index_of_id, 0xff, sizeof (int) * p->n_ids);
  int m = MAX (n, 1);
  p->parent = g_new (int, m);
  p->ord = g_new (int, m);
  p->size = g_new (int, m);
  p->head = g_new (int, m);
  p->last = g_new (int, m);
  p->next = g_new (int, m);
  p->in_set = g_new0 (guint, m);
  p->seen_f = g_new0 (guint, m);
  p->seen_b = g_new0 (guint, m);
  for (int i = 0; i < n; i++)
    {
      p->index_of_id[order[i]->id] = i;
      p->parent[i] = p->ord[i] = p->head[i] = p->last[i] = i;
      p->size[i] = 1;
      p->next[i] = -1;
    }
  /* Reverse control edges as compressed rows, for forward searches. */
  p->csucc_start = g_new0 (int, n + 1);
  for (int i = 0; i < n; i++)
    for (int c = 0; c < order[i]->n_controls; c++)
      p->csucc_start[p->index_of_id[order[i]->controls[c].node->id] + 1]++;
  for (int i = 0; i < n; i++)
    p->csucc_start[i + 1] += p->csucc_start[i];
  p->csucc = g_new (int, MAX (p->csucc_start[n], 1));
  g_autofree int *fill = g_memdup2 (p->csucc_start, sizeof (int) * (n + 1));
  for (int i = 0; i < n; i++)
    for (int c = 0; c < order[i]->n_controls; c++)
      p->csucc[fill[p->index_of_id[order[i]->controls[c].node->id]]++] = i;
  p->stack = g_array_new (FALSE, FALSE, sizeof (int));
  p->delta_f = g_array_new (FALSE, FALSE, sizeof (int));
  p->delta_b = g_array_new (FALSE, FALSE, sizeof (int));
  return p;
}

void
pl_fusion_plan_free (PlFusionPlan *p)
{
  if (!p)
    return;
  g_free (p->node);
  g_free (p->index_of_id);
  g_free (p->parent);
  g_free (p->ord);
  g_free (p->size);
  g_free (p->head);
  g_free (p->last);
  g_free (p->next);
  g_free (p->csucc_start);
  g_free (p->csucc);
  g_free (p->in_set);
  g_free (p->seen_f);
  g_free (p->seen_b);
  g_array_unref (p->stack);
  g_array_unref (p->delta_f);
  g_array_unref (p->delta_b);
  g_free (p);
}

/* Calls visit(p, root of each neighbour group) over the members of group r:
 * successors (data readers, nodes waiting on a member) or predecessors. */
typedef bool (*Visit) (PlFusionPlan *p, int root, int bound);

static bool
for_neighbours (PlFusionPlan *p, int r, bool forward, Visit visit, int bound)
{
  for (int i = p->head[r]; i >= 0; i = p->next[i])
    {
      PlNode *x = p->node[i];
      if (forward)
        {
          for (int o = 0; o < x->n_outputs; o++)
            for (int u = 0; x->outputs[o] && u < x->outputs[o]->n_uses; u++)
              if (!visit (p, plan_find (p, plan_index (p, x->outputs[o]->uses[u].node)), bound))
                return false;
          for (int c = p->csucc_start[i]; c < p->csucc_start[i + 1]; c++)
            if (!visit (p, plan_find (p, p->csucc[c]), bound))
              return false;
        }
      else
        {
          for (int k = 0; k < x->n_inputs; k++)
            if (x->inputs[k] && x->inputs[k]->producer)
              if (!visit (p, plan_find (p, plan_index (p, x->inputs[k]->producer)), bound))
                return false;
          for (int c = 0; c < x->n_controls; c++)
            if (!visit (p, plan_find (p, plan_index (p, x->controls[c].node)), bound))
              return false;
        }
    }
  return true;
}

/* Forward step: false stops the search (came back into the set, or over budget). */
static bool
visit_forward (PlFusionPlan *p, int r, int max_ord)
{
  if (p->in_set[r] == p->stamp)
    return p->seeding;
  if (p->ord[r] > max_ord || p->seen_f[r] == p->stamp)
    return true;
  p->seen_f[r] = p->stamp;
  g_array_append_val (p->stack, r);
  g_array_append_val (p->delta_f, r);
  return p->delta_f->len <= SEARCH_BUDGET;
}

static bool
visit_backward (PlFusionPlan *p, int r, int min_ord)
{
  if (p->in_set[r] == p->stamp || p->ord[r] < min_ord || p->seen_b[r] == p->stamp)
    return true;
  p->seen_b[r] = p->stamp;
  g_array_append_val (p->stack, r);
  g_array_append_val (p->delta_b, r);
  return p->delta_b->len <= SEARCH_BUDGET;
}

/* A fresh stamp: every mark made with an older one reads as unset. */
static void
next_stamp (PlFusionPlan *p)
{
  if (++p->stamp == 0)   /* wrapped: clear the marks once */
    {
      memset (p->in_set, 0, sizeof (guint) * MAX (p->n, 1));
      memset (p->seen_f, 0, sizeof (guint) * MAX (p->n, 1));
      memset (p->seen_b, 0, sizeof (guint) * MAX (p->n, 1));
      p->stamp = 1;
    }
}

/* Marks the groups of the nodes as the set (a new stamp) and returns how
 * many distinct groups there are; roots[] gets them, *max_ord the highest slot. */
static int
mark_set (PlFusionPlan *p, PlNode *const *nodes, int n, int *roots, int *max_ord)
{
  next_stamp (p);
  int k = 0;
  *max_ord = -1;
  for (int i = 0; i < n; i++)
    {
      int idx = plan_index (p, nodes[i]);
      if (idx < 0)
        continue;
      int r = plan_find (p, idx);
      if (p->in_set[r] == p->stamp)
        continue;
      p->in_set[r] = p->stamp;
      roots[k++] = r;
      *max_ord = MAX (*max_ord, p->ord[r]);
    }
  return k;
}

/* The bounded forward search from the marked set; fills delta_f. True when
 * it found a way back into the set (or ran over budget). */
static bool
search_cycle (PlFusionPlan *p, const int *roots, int k, int max_ord)
{
  g_array_set_size (p->stack, 0);
  g_array_set_size (p->delta_f, 0);
  p->seeding = true;
  for (int i = 0; i < k; i++)
    if (!for_neighbours (p, roots[i], true, visit_forward, max_ord))
      {
        p->seeding = false;
        return true;
      }
  p->seeding = false;
  while (p->stack->len > 0)
    {
      int r = g_array_index (p->stack, int, p->stack->len - 1);
      g_array_set_size (p->stack, p->stack->len - 1);
      if (!for_neighbours (p, r, true, visit_forward, max_ord))
        return true;
    }
  return false;
}

bool
pl_fusion_plan_would_cycle (PlFusionPlan *p, PlNode *const *nodes, int n)
{
  g_return_val_if_fail (p != NULL, true);
  g_autofree int *roots = g_new (int, MAX (n, 1));
  int max_ord;
  int k = mark_set (p, nodes, n, roots, &max_ord);
  return k > 1 && search_cycle (p, roots, k, max_ord);
}

static int
cmp_int (const void *a, const void *b)
{
  int x = *(const int *) a, y = *(const int *) b;
  return (x > y) - (x < y);
}

static int
cmp_i64 (const void *a, const void *b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;
  return (x > y) - (x < y);
}

/* Sorts the groups in roots[n] by their topological slot. */
static void
sort_by_ord (PlFusionPlan *p, int *roots, int n)
{
  g_autofree gint64 *keys = g_new (gint64, MAX (n, 1));
  for (int i = 0; i < n; i++)
    keys[i] = ((gint64) p->ord[roots[i]] << 32) | (guint32) roots[i];
  qsort (keys, n, sizeof (gint64), cmp_i64);
  for (int i = 0; i < n; i++)
    roots[i] = (int) (keys[i] & 0xffffffff);
}

bool
pl_fusion_plan_merge (PlFusionPlan *p, PlNode *const *nodes, int n)
{
  g_return_val_if_fail (p != NULL, false);
  g_autofree int *roots = g_new (int, MAX (n, 1));
  int max_ord;
  int k = mark_set (p, nodes, n, roots, &max_ord);
  if (k <= 1)
    return true;
  if (search_cycle (p, roots, k, max_ord))
    return false;

  /* δF holds the groups reachable from the set that sit below its top slot;
   * they must move above the merged group, and the groups that reach the set
   * from above the lowest of them (δB) must move below it. */
  int n_f = (int) p->delta_f->len;
  g_array_set_size (p->delta_b, 0);
  if (n_f > 0)
    {
      int lb = G_MAXINT;
      for (int i = 0; i < n_f; i++)
        lb = MIN (lb, p->ord[g_array_index (p->delta_f, int, i)]);
      g_array_set_size (p->stack, 0);
      for (int i = 0; i < k; i++)
        if (!for_neighbours (p, roots[i], false, visit_backward, lb))
          return false;
      while (p->stack->len > 0)
        {
          int r = g_array_index (p->stack, int, p->stack->len - 1);
          g_array_set_size (p->stack, p->stack->len - 1);
          if (!for_neighbours (p, r, false, visit_backward, lb))
            return false;
        }
    }

  /* Union: the largest group becomes the root. */
  int root = roots[0];
  for (int i = 1; i < k; i++)
    if (p->size[roots[i]] > p->size[root])
      root = roots[i];
  for (int i = 0; i < k; i++)
    {
      int r = roots[i];
      if (r == root)
        continue;
      p->parent[r] = root;
      p->next[p->last[root]] = p->head[r];
      p->last[root] = p->last[r];
      p->size[root] += p->size[r];
    }
  p->ord[root] = max_ord;

  if (n_f > 0)
    {
      int n_b = (int) p->delta_b->len;
      g_autofree int *slots = g_new (int, n_b + n_f + 1);
      int *db = (int *) p->delta_b->data, *df = (int *) p->delta_f->data;
      for (int i = 0; i < n_b; i++)
        slots[i] = p->ord[db[i]];
      for (int i = 0; i < n_f; i++)
        slots[n_b + i] = p->ord[df[i]];
      slots[n_b + n_f] = max_ord;
      qsort (slots, n_b + n_f + 1, sizeof (int), cmp_int);
      sort_by_ord (p, db, n_b);
      sort_by_ord (p, df, n_f);
      for (int i = 0; i < n_b; i++)
        p->ord[db[i]] = slots[i];
      p->ord[root] = slots[n_b];
      for (int i = 0; i < n_f; i++)
        p->ord[df[i]] = slots[n_b + 1 + i];
    }
  return true;
}

bool
pl_fusion_plan_same_group (PlFusionPlan *p, const PlNode *a, const PlNode *b)
{
  int ia = plan_index (p, a), ib = plan_index (p, b);
  return ia >= 0 && ib >= 0 && plan_find (p, ia) == plan_find (p, ib);
}

int
pl_fusion_plan_group_size (PlFusionPlan *p, const PlNode *node)
{
  int i = plan_index (p, node);
  return i >= 0 ? p->size[plan_find (p, i)] : 0;
}

/* Members of root r sorted by their index (the creation-time topological
 * order, which every edge inside a group still respects). */
static GPtrArray *
root_members (PlFusionPlan *p, int r)
{
  g_autofree int *idx = g_new (int, p->size[r]);
  int k = 0;
  for (int i = p->head[r]; i >= 0; i = p->next[i])
    idx[k++] = i;
  qsort (idx, k, sizeof (int), cmp_int);
  GPtrArray *out = g_ptr_array_sized_new (k);
  for (int i = 0; i < k; i++)
    g_ptr_array_add (out, p->node[idx[i]]);
  return out;
}

GPtrArray *
pl_fusion_plan_members (PlFusionPlan *p, const PlNode *node)
{
  int i = plan_index (p, node);
  if (i < 0)
    return g_ptr_array_new ();
  return root_members (p, plan_find (p, i));
}

GPtrArray *
pl_fusion_plan_groups (PlFusionPlan *p, int min_size)
{
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);
  next_stamp (p);
  for (int i = 0; i < p->n; i++)
    {
      int r = plan_find (p, i);
      if (p->size[r] < min_size || p->seen_b[r] == p->stamp)
        continue;
      p->seen_b[r] = p->stamp;
      g_ptr_array_add (out, root_members (p, r));
    }
  return out;
}
