/* stitch-plan.c — planning one region of the stitch pass (stitch.c finds
 * the regions and writes the plans; the plan attributes are listed there).
 *
 * 2. Backbones and groups. Reductions and composites are backbones. A
 *    backbone's row space is its input's dims without unit dims, each
 *    reduced or kept: R rows (kept dims) × L (reduced dims, moved innermost).
 *    A value is row-aligned when its shape without unit dims is the row
 *    space or one value per row. Index information flows forward through ops
 *    that keep the row index (elementwise, Expand, reshapes that only add or
 *    drop unit dims); a later reduction over the same rows so reached is a
 *    sub-backbone in the same group (layer norm: mean → sub → square → var).
 *    Aligned producers of a backbone join its group (the index propagates
 *    back); other ops join a consumer's group, else a neighbour's. Groups
 *    over the same row space share one mapping and are merged. A region may
 *    keep several groups: global memory and grid barriers connect them.
 * 3. Thread mapping per group, from R, L and the device. Few long rows
 *    (R < SMs, L >= 512) are split: blocks_per_row = min(SMs / R, L / 256)
 *    (the seed's [4×2048] on 16 SMs: 4), combined through global memory and
 *    a grid barrier. Short rows (under 256 threads) are packed several to a
 *    block while every SM still gets a block. Otherwise a row per block.
 *    Threads: the row (piece) rounded up to a warp, capped at
 *    max_threads_per_block (and by regs_per_thread). On the cpu a "block" is
 *    one thread's chunk of rows over `cores`.
 * 4. Phases and reuse. A reduction's readers wait for a block barrier (a
 *    composite has 1–2 inside). Per edge: into another group → global; a
 *    reduction's result read by its row → shared (global for a split row);
 *    an aligned value read after a barrier of its own group, or re-read by a
 *    composite → shared (a block keeps its rows); other values crossing a
 *    barrier → global; anything else stays in the thread → register. Views
 *    of region inputs are re-read, and an input read in several phases is
 *    cached in shared memory.
 * 5. Shared memory. A shared value takes its block's piece. Offsets follow
 *    the body's topological order: a value reuses a buffer whose value is
 *    dead, or its elementwise producer's input buffer in place. Over
 *    shared_mem_per_block the largest values fall back to global memory.
 *    With a grid barrier the grid is capped at one wave (SMs × resident
 *    blocks); a group with more rows than that loops over them and keeps
 *    nothing in shared memory across a grid barrier.
 */
#define G_LOG_DOMAIN "passlab"
#include "rewrite.h"
#include "stitch-private.h"

#include <string.h>

#define GOOD_BLOCK   256    /* threads a block of packed short rows aims at (8 warps) */
#define SPLIT_PIECE  256    /* fewest row elements one block of a split row takes */
#define ALIGN        16     /* shared buffers start 16-byte aligned (vector loads) */
#define MAX_BLOCKS_PER_SM 32

/* The member producing x's input k, or -1. */
static int
producer_of (const Ctx *c, const PlNode *x, int k)
{
  return x->inputs[k] ? member (c, x->inputs[k]->producer) : -1;
}

/* --- row alignment ----------------------------------------------------------- */

static int
squeezed (const PlShape *s, int64_t *out)
{
  int k = 0;
  for (int i = 0; i < s->rank; i++)
    if (s->dims[i].size != 1)
      out[k++] = s->dims[i].size;
  return k;
}

/* v spans the whole row space (full), or holds one value per row (per_row). */
static bool
fits_space (const PlValue *v, const RowSpace *sp, bool per_row)
{
  int64_t d[PL_MAX_RANK];
  int k = squeezed (&v->shape, d), j = 0;
  for (int i = 0; i < sp->n; i++)
    if ((!per_row || !sp->reduced[i]) && (j >= k || d[j++] != sp->dims[i]))
      return false;
  return j == k;
}

static bool
fits (const PlValue *v, const RowSpace *sp)
{
  return fits_space (v, sp, false) || fits_space (v, sp, true);
}

static bool
same_space (const RowSpace *a, const RowSpace *b)
{
  if (a->n != b->n)
    return false;
  for (int i = 0; i < a->n; i++)
    if (a->dims[i] != b->dims[i] || a->reduced[i] != b->reduced[i])
      return false;
  return true;
}

/* Ops through which the row index flows unchanged. */
static bool
keeps_rows (const Ctx *c, const PlNode *x)
{
  int64_t a[PL_MAX_RANK], b[PL_MAX_RANK];
  switch (kind_of (c, x))
    {
    case K_ELEM:
    case K_EXPAND:
      return true;
    case K_VIEW:
      {
        int na = squeezed (&x->inputs[0]->shape, a), nb = squeezed (&x->outputs[0]->shape, b);
        return na == nb && memcmp (a, b, sizeof (int64_t) * na) == 0;
      }
    default:
      return false;
    }
}


/* --- groups -------------------------------------------------------------------- */

void
pl_stitch_region_clear (Region *r)
{
  g_free (r->grp);
  g_free (r->aligned);
  g_free (r->input_view);
  g_free (r->phase);
  g_free (r->phase_out);
  g_free (r->grid_before);
  g_free (r->by_order);
  g_array_unref (r->groups);
  g_array_unref (r->vals);
  g_array_unref (r->edges);
}

static int
group_find (Region *r, int i)
{
  while (group_at (r, i)->parent != i)
    {
      int p = group_at (r, i)->parent;
      group_at (r, i)->parent = group_at (r, p)->parent;
      i = p;
    }
  return i;
}

static int
group_new (Region *r, int primary, const RowSpace *sp)
{
  Group gr = { .parent = (int) r->groups->len, .primary = primary };
  if (sp)
    gr.space = *sp;
  g_array_append_val (r->groups, gr);
  return gr.parent;
}

/* The group whose backbone comes first stays the root. */
static int
group_union (Region *r, int a, int b)
{
  a = group_find (r, a);
  b = group_find (r, b);
  if (a != b)
    {
      int root = group_at (r, b)->primary < group_at (r, a)->primary ? b : a;
      group_at (r, root == a ? b : a)->parent = root;
      a = root;
    }
  return a;
}

static void
set_group (Region *r, int i, int gi)
{
  r->grp[i] = gi;
  r->aligned[i] = true;
}

/* x keeps the row index: it joins the group of an aligned input whose row
 * space its result fits; with merge, groups over the same rows meeting here
 * become one. */
static void
tag_from_inputs (Ctx *c, Region *r, int i, bool merge)
{
  PlNode *x = r->m[i];
  int gi = -1;
  for (int k = 0; k < x->n_inputs; k++)
    {
      int p = producer_of (c, x, k);
      if (p < 0 || !r->aligned[p])
        continue;
      int G = group_find (r, r->grp[p]);
      if (!fits (x->outputs[0], &group_at (r, G)->space))
        continue;
      if (gi < 0)
        gi = G;
      else if (merge && G != gi && same_space (&group_at (r, G)->space, &group_at (r, gi)->space))
        gi = group_union (r, gi, G);
    }
  if (gi >= 0)
    set_group (r, i, gi);
}

/* A backbone starts a group, or is a sub-backbone of the group whose aligned
 * values over the same rows reach it; its aligned producers join the group
 * (the index propagates back to them). */
static void
place_backbone (Ctx *c, Region *r, int i)
{
  const RowSpace *sp = &g_array_index (c->spaces, RowSpace, c->space[r->m[i]->id]);
  int p = producer_of (c, r->m[i], 0), gi = -1;
  if (p >= 0 && r->aligned[p] && same_space (&group_at (r, group_find (r, r->grp[p]))->space, sp))
    gi = group_find (r, r->grp[p]);
  if (gi < 0)
    gi = group_new (r, i, sp);
  set_group (r, i, gi);
  g_autoptr (GArray) stack = g_array_new (FALSE, FALSE, sizeof (int));
  g_array_append_val (stack, i);
  for (bool backbone = true; stack->len > 0; backbone = false)
    {
      PlNode *x = r->m[g_array_index (stack, int, stack->len - 1)];
      g_array_set_size (stack, stack->len - 1);
      /* of the backbone, its data operand only: layer norm's scale and bias are per column */
      for (int k = 0; k < (backbone ? 1 : x->n_inputs); k++)
        {
          int q = producer_of (c, x, k);
          if (q >= 0 && r->grp[q] < 0 && keeps_rows (c, r->m[q]) && fits (r->m[q]->outputs[0], sp))
            {
              set_group (r, q, gi);
              g_array_append_val (stack, q);
            }
        }
    }
}

/* Every member not aligned joins a consumer's group (it produces for that
 * group), else a neighbour's, breadth first (tails take their producer's);
 * a region without backbones is one group of its own. */
static void
assign_rest (Ctx *c, Region *r)
{
  g_autoptr (GArray) queue = g_array_new (FALSE, FALSE, sizeof (int));
  for (int i = r->n - 1; i >= 0; i--)
    {
      PlNode *x = r->m[i];
      for (int o = 0; o < x->n_outputs && r->grp[i] < 0; o++)
        for (int u = 0; x->outputs[o] && u < x->outputs[o]->n_uses && r->grp[i] < 0; u++)
          {
            int j = member (c, x->outputs[o]->uses[u].node);
            if (j >= 0 && r->grp[j] >= 0)
              r->grp[i] = group_find (r, r->grp[j]);
          }
      if (r->grp[i] >= 0)
        g_array_append_val (queue, i);
    }
  if (queue->len == 0)
    {
      int gi = group_new (r, -1, NULL);
      for (int i = 0; i < r->n; i++)
        r->grp[i] = gi;
    }
  for (guint q = 0; q < queue->len; q++)
    {
      int i = g_array_index (queue, int, q);
      PlNode *x = r->m[i];
      for (int o = 0; o < x->n_outputs; o++)
        for (int u = 0; x->outputs[o] && u < x->outputs[o]->n_uses; u++)
          {
            int j = member (c, x->outputs[o]->uses[u].node);
            if (j >= 0 && r->grp[j] < 0)
              {
                r->grp[j] = r->grp[i];
                g_array_append_val (queue, j);
              }
          }
      for (int k = 0; k < x->n_inputs; k++)
        {
          int p = producer_of (c, x, k);
          if (p >= 0 && r->grp[p] < 0)
            {
              r->grp[p] = r->grp[i];
              g_array_append_val (queue, p);
            }
        }
    }
}

/* Groups over the same row space share one mapping: one group. */
static void
merge_same_spaces (Region *r)
{
  g_autoptr (GHashTable) by_space = g_hash_table_new_full (g_bytes_hash, g_bytes_equal,
                                                           (GDestroyNotify) g_bytes_unref, NULL);
  for (guint k = 0; k < r->groups->len; k++)
    {
      const RowSpace *sp = &group_at (r, k)->space;
      int64_t words[PL_MAX_RANK + 2] = { sp->n, 0 };
      for (int d = 0; d < sp->n; d++)
        {
          words[2 + d] = sp->dims[d];
          words[1] |= (int64_t) sp->reduced[d] << d;
        }
      GBytes *key = g_bytes_new (words, sizeof (int64_t) * (2 + sp->n));
      gpointer first;
      if (group_at (r, k)->primary < 0)
        g_bytes_unref (key);
      else if (g_hash_table_lookup_extended (by_space, key, NULL, &first))
        {
          group_union (r, GPOINTER_TO_INT (first), (int) k);
          g_bytes_unref (key);
        }
      else
        g_hash_table_insert (by_space, key, GINT_TO_POINTER (k));
    }
}

static void
assign_groups (Ctx *c, Region *r)
{
  for (int i = 0; i < r->n; i++)
    {
      if (is_backbone (c, r->m[i]))
        place_backbone (c, r, i);
      else if (r->grp[i] < 0 && keeps_rows (c, r->m[i]))
        tag_from_inputs (c, r, i, true);
    }
  /* producers aligned late (by a backbone after them) align their readers */
  for (int i = 0; i < r->n; i++)
    if (r->grp[i] < 0 && keeps_rows (c, r->m[i]))
      tag_from_inputs (c, r, i, false);
  assign_rest (c, r);
  merge_same_spaces (r);
  for (int i = 0; i < r->n; i++)
    r->grp[i] = group_find (r, r->grp[i]);
}

/* --- thread mapping ------------------------------------------------------------- */

static int64_t
ceil_div (int64_t a, int64_t b)
{
  return (a + b - 1) / b;
}

static int64_t
round_up (int64_t a, int64_t m)
{
  return ceil_div (a, m) * m;
}

/* Threads for a row (piece) of len elements: a power of two below a warp
 * (rows share the warp), else whole warps. */
static int64_t
threads_per_row (const Device *d, int64_t len)
{
  int64_t t = 1;
  while (t < len && t < WARP)
    t *= 2;
  return len <= WARP ? t : MIN (d->max_threads, round_up (len, WARP));
}

/* The mapping of rows × len on the device; block > 0 fixes the block size
 * (a second group of a kernel runs on the kernel's blocks). */
static Mapping
map_rows (const Device *d, int64_t rows, int64_t len, int64_t block)
{
  Mapping m = { rows, len, d->cuda ? 0 : 1, 1, 1, rows };
  /* few long rows: split each across blocks (seed: [4×2048] on 16 SMs → 4 per row) */
  int64_t bpr = rows < d->units && len >= 2 * SPLIT_PIECE ? MIN (d->units / rows, len / SPLIT_PIECE) : 1;
  if (bpr >= 2)
    {
      m.blocks_per_row = bpr;
      m.grid = rows * bpr;
      if (d->cuda)
        m.block = block > 0 ? block : threads_per_row (d, ceil_div (len, bpr));
      return m;
    }
  if (!d->cuda)
    {
      m.rows_per_block = ceil_div (rows, d->units);
      m.grid = ceil_div (rows, m.rows_per_block);
      return m;
    }
  int64_t tpr = threads_per_row (d, len);
  if (block > 0)
    m.rows_per_block = CLAMP (block / tpr, 1, rows);
  else if (tpr < GOOD_BLOCK)
    {
      /* short rows: pack, but keep a block per SM while the rows allow, and a warp per block */
      int64_t rpb = GOOD_BLOCK / tpr;
      while (rpb > 1 && ceil_div (rows, rpb) < d->units && tpr * (rpb / 2) >= WARP)
        rpb /= 2;
      m.rows_per_block = CLAMP (rpb, 1, rows);
    }
  m.block = block > 0 ? block : MIN (d->max_threads, round_up (tpr * m.rows_per_block, WARP));
  m.grid = ceil_div (rows, m.rows_per_block);
  return m;
}

/* Group order (the largest group first: it maps the kernel; then by first
 * member) and each group's mapping. */
static void
map_groups (Ctx *c, Region *r)
{
  for (guint k = 0; k < r->groups->len; k++)
    group_at (r, k)->order = -1;
  r->by_order = g_new (int, r->groups->len);
  for (int i = 0; i < r->n; i++)
    {
      Group *G = group_at (r, r->grp[i]);
      /* no backbone: every element is a row of length 1 */
      for (int o = 0; G->primary < 0 && o < r->m[i]->n_outputs; o++)
        if (r->m[i]->outputs[o])
          G->space.rows = MAX (G->space.rows, pl_shape_numel (&r->m[i]->outputs[o]->shape));
      if (G->primary < 0)
        G->space.row_len = 1;
      if (G->order < 0)
        {
          G->order = r->n_groups;
          r->by_order[r->n_groups++] = r->grp[i];
        }
    }
  int top = 0;
  for (int k = 1; k < r->n_groups; k++)
    {
      const RowSpace *a = &group_at (r, r->by_order[k])->space, *b = &group_at (r, r->by_order[top])->space;
      if (a->rows * a->row_len > b->rows * b->row_len)
        top = k;
    }
  int d = r->by_order[top];
  memmove (r->by_order + 1, r->by_order, sizeof (int) * top);
  r->by_order[0] = d;
  for (int k = 0; k < r->n_groups; k++)
    {
      Group *G = group_at (r, r->by_order[k]);
      G->order = k;
      G->map = map_rows (c->dev, MAX (G->space.rows, 1), MAX (G->space.row_len, 1),
                         k ? group_at (r, r->by_order[0])->map.block : 0);
    }
}

/* --- phases and reuse ------------------------------------------------------------- */

/* A member's phase: barriers before it. A reduction's readers wait for it,
 * readers in another group for a grid barrier; a composite's result comes
 * after its own barriers. Views of region inputs cost nothing. */
static void
compute_phases (Ctx *c, Region *r)
{
  int last = 0;
  for (int i = 0; i < r->n; i++)
    {
      PlNode *x = r->m[i];
      Kind kx = kind_of (c, x);
      int ph = 0;
      r->input_view[i] = kx == K_VIEW || kx == K_EXPAND || kx == K_TRANSPOSE;
      for (int k = 0; k < x->n_inputs; k++)
        {
          int p = producer_of (c, x, k);
          r->input_view[i] &= p < 0 || r->input_view[p];
          if (p >= 0 && !r->input_view[p])
            ph = MAX (ph, r->phase_out[p] + (r->grp[p] != r->grp[i] || kind_of (c, r->m[p]) == K_REDUCE));
        }
      r->phase[i] = ph;
      r->phase_out[i] = ph + (kx == K_COMPOSITE ? c->barriers[x->id] : 0);
      last = MAX (last, r->phase_out[i]);
    }
  /* which phases start behind a grid barrier: a read from another group or
   * of a split row's result (a split composite has them inside) */
  r->grid_before = g_new0 (int, last + 2);
  for (int i = 0; i < r->n; i++)
    {
      PlNode *x = r->m[i];
      bool split = group_at (r, r->grp[i])->map.blocks_per_row > 1;
      for (int k = 0; k < x->n_inputs; k++)
        {
          int p = producer_of (c, x, k);
          if (p >= 0 && !r->input_view[p] &&
              (r->grp[p] != r->grp[i] || (split && kind_of (c, r->m[p]) == K_REDUCE)))
            r->grid_before[r->phase[i]] = 1;
        }
      for (int ph = r->phase[i] + 1; split && ph <= r->phase_out[i]; ph++)
        r->grid_before[ph] = 1;
    }
  for (int ph = 1; ph <= last; ph++)
    r->grid_before[ph] += r->grid_before[ph - 1];
}

/* Where the value member p makes for member i (reading it at slot) lives. */
static Level
edge_level (Ctx *c, Region *r, int p, int i, int slot)
{
  if (r->input_view[p])
    return L_REGISTER;   /* an index function over region inputs: re-read where needed */
  if (r->grp[p] != r->grp[i])
    return L_GLOBAL;
  const Group *G = group_at (r, r->grp[p]);
  bool reduce = kind_of (c, r->m[p]) == K_REDUCE;
  if (reduce && G->map.blocks_per_row > 1)
    return L_GLOBAL;   /* partial results combine across blocks */
  if (!reduce && !(kind_of (c, r->m[i]) == K_COMPOSITE && slot == 0) && r->phase[i] <= r->phase_out[p])
    return L_REGISTER;
  /* kept across a barrier: in shared memory when the block that made it
   * reads it back (not when its blocks loop over rows past a grid barrier) */
  bool across_grid = r->grid_before[r->phase[i]] > r->grid_before[r->phase_out[p]];
  return r->aligned[p] && r->aligned[i] && !(G->capped && across_grid) ? L_SHARED : L_GLOBAL;
}

/* Shared bytes one block needs for v: its rows' pieces, one value per row,
 * or (neither) all of it. On the cpu a thread holds one row at a time. */
static int64_t
footprint (const Ctx *c, const Group *G, const PlValue *v)
{
  int64_t numel = pl_shape_numel (&v->shape), elem = (int64_t) pl_dtype_size (v->dtype);
  int64_t rpb = c->dev->cuda ? G->map.rows_per_block : 1;
  if (numel == G->map.rows * G->map.row_len)
    return ceil_div (G->map.row_len, G->map.blocks_per_row) * rpb * elem;
  return numel == G->map.rows ? rpb * elem : numel * elem;
}

/* How a region input is read: by one group's aligned members only, in
 * which phases, and whether a composite re-reads it. */
typedef struct {
  PlValue *v;
  int      group, first, last, min_phase, max_phase;
  bool     ok, reread;
} InputReads;

static int
cmp_val (const void *a, const void *b)
{
  const Val *x = a, *y = b;
  if (x->def != y->def)
    return (x->def > y->def) - (x->def < y->def);
  return (x->offset > y->offset) - (x->offset < y->offset);   /* offset holds the sequence here */
}

static void
add_val (Region *r, PlValue *v, Level level, int def, int end, int producer, int64_t bytes)
{
  Val val = { v, level, def, end, producer, bytes, (int64_t) r->vals->len, false };
  g_array_append_val (r->vals, val);
}

static void
note_input (Ctx *c, Region *r, int i, int k, GHashTable *index, GArray *inputs)
{
  PlValue *v = r->m[i]->inputs[k];
  if (!v || member (c, v->producer) >= 0 || pl_rw_constant (v))
    return;
  int at = GPOINTER_TO_INT (g_hash_table_lookup (index, v)) - 1;
  if (at < 0)
    {
      InputReads in = { v, r->grp[i], i, i, r->phase[i], r->phase[i], true, false };
      g_array_append_val (inputs, in);
      at = (int) inputs->len - 1;
      g_hash_table_insert (index, v, GINT_TO_POINTER (at + 1));
    }
  InputReads *in = &g_array_index (inputs, InputReads, at);
  Group *G = group_at (r, r->grp[i]);
  in->ok &= r->aligned[i] && r->grp[i] == in->group && !G->capped && fits_space (v, &G->space, false);
  in->last = i;
  in->min_phase = MIN (in->min_phase, r->phase[i]);
  in->max_phase = MAX (in->max_phase, r->phase[i]);
  in->reread |= kind_of (c, r->m[i]) == K_COMPOSITE && k == 0;
}

/* Every value read inside the region with its level (the deepest over its
 * readers), the region inputs worth caching, and the first edges. */
static void
collect_values (Ctx *c, Region *r)
{
  g_array_set_size (r->vals, 0);
  g_array_set_size (r->edges, 0);
  memset (r->edge_count, 0, sizeof r->edge_count);
  g_autoptr (GHashTable) index = g_hash_table_new (NULL, NULL);
  g_autoptr (GArray) inputs = g_array_new (FALSE, FALSE, sizeof (InputReads));
  for (int i = 0; i < r->n; i++)
    {
      PlNode *x = r->m[i];
      Group *G = group_at (r, r->grp[i]);
      for (int k = 0; k < x->n_inputs; k++)
        note_input (c, r, i, k, index, inputs);
      for (int o = 0; o < x->n_outputs; o++)
        {
          PlValue *v = x->outputs[o];
          Level level = L_NONE;
          int end = i;
          for (int u = 0; v && u < v->n_uses; u++)
            {
              int j = member (c, v->uses[u].node);
              Level e = edge_level (c, r, i, j, v->uses[u].index);
              level = MAX (level, e);
              end = MAX (end, j);
              r->edge_count[e]++;
              bool listed = false;
              for (guint k = 0; k < r->edges->len; k++)
                listed |= g_array_index (r->edges, Edge, k).from == i && g_array_index (r->edges, Edge, k).to == j;
              if (!listed && r->edges->len < MAX_LISTED)
                g_array_append_val (r->edges, ((Edge) { i, j, e }));
            }
          /* a split row's partial results combine in global memory */
          if (v && kind_of (c, x) == K_REDUCE && G->map.blocks_per_row > 1)
            level = L_GLOBAL;
          if (level != L_NONE)
            add_val (r, v, level, i, end, i, level == L_SHARED ? footprint (c, G, v) : 0);
        }
    }
  for (guint k = 0; k < inputs->len; k++)
    {
      InputReads *in = &g_array_index (inputs, InputReads, k);
      if (in->ok && (in->max_phase > in->min_phase || in->reread))
        add_val (r, in->v, L_SHARED, in->first, in->last, -1, footprint (c, group_at (r, in->group), in->v));
    }
  g_array_sort (r->vals, cmp_val);
  for (guint a = 0; a < r->vals->len; a++)
    g_array_index (r->vals, Val, a).offset = -1;
}

/* --- shared memory ---------------------------------------------------------------- */

typedef struct {
  int64_t offset, size;
  int     end;      /* last reader of the value holding it */
} Slot;

/* Offsets for the shared values (not demoted), in order of definition: a
 * value takes its elementwise producer's input buffer in place (the op reads
 * each element before writing it), else the smallest free buffer that fits,
 * else a new one on top. Returns the bytes per block. */
static int64_t
assign_offsets (Ctx *c, Region *r)
{
  g_autoptr (GArray) slots = g_array_new (FALSE, FALSE, sizeof (Slot));
  g_autoptr (GArray) free_slots = g_array_new (FALSE, FALSE, sizeof (int));
  g_autoptr (GArray) release = g_array_new (FALSE, FALSE, sizeof (int) * 2);  /* (slot, next) lists by end */
  g_autofree int *release_at = g_new (int, r->n + 1);
  g_autoptr (GHashTable) val_of = g_hash_table_new (NULL, NULL);   /* PlValue* -> slot + 1 */
  memset (release_at, 0xff, sizeof (int) * (r->n + 1));
  int64_t top = 0;
  int released = 0;
  for (guint a = 0; a < r->vals->len; a++)
    {
      Val *v = &g_array_index (r->vals, Val, a);
      if (v->level != L_SHARED || v->demoted)
        continue;
      for (; released < v->def; released++)
        for (int e = release_at[released]; e >= 0; e = ((int *) release->data)[2 * e + 1])
          {
            int s = ((int *) release->data)[2 * e];
            if (g_array_index (slots, Slot, s).end == released)
              g_array_append_val (free_slots, s);
          }
      int s = -1;
      PlNode *p = v->producer >= 0 ? r->m[v->producer] : NULL;
      Kind kp = p ? kind_of (c, p) : K_OUT;
      for (int k = 0; (kp == K_ELEM || kp == K_EXPAND || kp == K_VIEW) && k < p->n_inputs && s < 0; k++)
        {
          int su = p->inputs[k] ? GPOINTER_TO_INT (g_hash_table_lookup (val_of, p->inputs[k])) - 1 : -1;
          if (su >= 0 && g_array_index (slots, Slot, su).end == v->def &&
              g_array_index (slots, Slot, su).size == round_up (MAX (v->bytes, 1), ALIGN) &&
              pl_shape_equal (&p->inputs[k]->shape, &v->v->shape))
            s = su;
        }
      int best = -1;
      for (guint f = 0; s < 0 && f < free_slots->len; f++)
        {
          int64_t size = g_array_index (slots, Slot, g_array_index (free_slots, int, f)).size;
          if (size >= v->bytes &&
              (best < 0 || size < g_array_index (slots, Slot, g_array_index (free_slots, int, best)).size))
            best = (int) f;
        }
      if (s < 0 && best >= 0)
        {
          s = g_array_index (free_slots, int, best);
          g_array_remove_index_fast (free_slots, best);
        }
      if (s < 0)
        {
          Slot sl = { top, round_up (MAX (v->bytes, 1), ALIGN), 0 };
          top += sl.size;
          g_array_append_val (slots, sl);
          s = (int) slots->len - 1;
        }
      g_array_index (slots, Slot, s).end = v->end;
      int entry[2] = { s, release_at[v->end] };
      g_array_append_val (release, entry);
      release_at[v->end] = (int) release->len - 1;
      v->offset = g_array_index (slots, Slot, s).offset;
      g_hash_table_insert (val_of, v->v, GINT_TO_POINTER (s + 1));
    }
  r->n_buffers = (int) slots->len;
  return top;
}

static int
cmp_bytes_desc (const void *a, const void *b)
{
  const Val *x = *(Val *const *) a, *y = *(Val *const *) b;
  return (x->bytes < y->bytes) - (x->bytes > y->bytes);
}

/* Offsets within the limit: when the buffers do not fit, the fewest largest
 * values fall back to global memory (binary search over how many). */
static void
plan_shared (Ctx *c, Region *r)
{
  r->shared_bytes = assign_offsets (c, r);
  r->n_demoted = 0;
  if (r->shared_bytes <= c->dev->shared_limit)
    return;
  g_autoptr (GPtrArray) shared = g_ptr_array_new ();
  for (guint a = 0; a < r->vals->len; a++)
    if (g_array_index (r->vals, Val, a).level == L_SHARED)
      g_ptr_array_add (shared, &g_array_index (r->vals, Val, a));
  qsort (shared->pdata, shared->len, sizeof (gpointer), cmp_bytes_desc);
  int lo = 1, hi = (int) shared->len;   /* demoting them all fits */
  while (lo <= hi)
    {
      int mid = lo < hi ? lo + (hi - lo) / 2 : lo;
      for (guint k = 0; k < shared->len; k++)
        ((Val *) shared->pdata[k])->demoted = (int) k < mid;
      if (lo == hi)
        break;
      if (assign_offsets (c, r) <= c->dev->shared_limit)
        hi = mid;
      else
        lo = mid + 1;
    }
  r->n_demoted = lo;
  r->shared_bytes = assign_offsets (c, r);
}

/* The grid: with a grid barrier every block must be resident at once (one
 * wave), so a group with more rows than that loops. Returns whether a group
 * became capped (its levels must be redone). */
static bool
plan_grid (Ctx *c, Region *r)
{
  const Device *d = c->dev;
  r->barrier = false;
  for (guint a = 0; a < r->vals->len; a++)
    r->barrier |= g_array_index (r->vals, Val, a).level == L_GLOBAL;
  r->grid = 0;
  for (int k = 0; k < r->n_groups; k++)
    {
      Group *G = group_at (r, r->by_order[k]);
      r->barrier |= G->map.blocks_per_row > 1;
      r->grid = MAX (r->grid, G->map.grid);
    }
  if (!r->barrier)
    return false;
  int64_t block = MAX (group_at (r, r->by_order[0])->map.block, 1), per_unit = 1;
  if (d->cuda)
    {
      per_unit = CLAMP (d->threads_per_sm / block, 1, MAX_BLOCKS_PER_SM);
      if (d->regs > 0)
        per_unit = MIN (per_unit, MAX (1, REGS_PER_SM / (d->regs * block)));
      if (r->shared_bytes > 0)
        per_unit = MIN (per_unit, MAX (1, d->shared_limit / r->shared_bytes));
    }
  r->grid = MIN (r->grid, d->units * per_unit);
  bool changed = false;
  for (int k = 0; k < r->n_groups; k++)
    {
      Group *G = group_at (r, r->by_order[k]);
      if (G->map.grid > r->grid && !G->capped)
        changed = G->capped = true;
    }
  return changed;
}

void
pl_stitch_plan_region (Ctx *c, Region *r)
{
  pl_stitch_stamp_members (c, r->m, r->n);
  r->grp = g_new (int, r->n);
  memset (r->grp, 0xff, sizeof (int) * r->n);
  r->aligned = g_new0 (bool, r->n);
  r->input_view = g_new0 (bool, r->n);
  r->phase = g_new0 (int, r->n);
  r->phase_out = g_new0 (int, r->n);
  r->groups = g_array_new (FALSE, FALSE, sizeof (Group));
  r->vals = g_array_new (FALSE, FALSE, sizeof (Val));
  r->edges = g_array_new (FALSE, FALSE, sizeof (Edge));
  assign_groups (c, r);
  map_groups (c, r);
  compute_phases (c, r);
  for (int round = 0; round < 2; round++)
    {
      collect_values (c, r);
      plan_shared (c, r);
      if (!plan_grid (c, r))
        break;
    }
}
