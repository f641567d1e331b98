/* kernel-plan-loop.c — the shape of a loop plan, once its instructions are
 * lowered (kernel-plan.c's design notes): each instruction's level (const,
 * row, element), the passes over a row and what must be kept in a per-row
 * scratch between them; then the loop itself — dims split where an index
 * divides a coordinate, looped in the order that writes contiguously, and
 * neighbours coalesced wherever every index reads them as one. */
#define G_LOG_DOMAIN "passlab"
#include "kernel-plan-private.h"

#include <string.h>

/* --- analysis: levels, passes, scratch ------------------------------------------- */

static bool
uses_reduced_coord (PlLower *L, const PlIdx *x, bool *any)
{
  bool red = false;
  *any = false;
  for (int k = 0; k < L->rank; k++)
    if (pl_idx_uses_coord (x, k))
      {
        *any = true;
        red |= L->reduced[k];
      }
  return red;
}

bool
pl_lower_analyze (PlLower *L)
{
  PlLoopPlan *lp = L->loop;
  int n = (int) lp->instrs->len;
  for (int i = 0; i < n; i++)
    {
      PlInstr *x = pl_lower_instr (L, i);
      x->phase = 0;
      switch (x->op)
        {
        case PL_SOP_LOAD:
          {
            bool any, red = uses_reduced_coord (L, x->index, &any);
            x->level = red ? PL_LEVEL_ELEM : any ? (L->rows ? PL_LEVEL_ROW : PL_LEVEL_ELEM) : PL_LEVEL_CONST;
            if (PL_INSTR_IS_GATHER (x))   /* and the offset it adds */
              {
                x->level = MAX (x->level, pl_lower_instr (L, x->a[0])->level);
                x->phase = pl_lower_instr (L, x->a[0])->phase;
              }
            break;
          }
        case PL_SOP_CONST:
          x->level = PL_LEVEL_CONST;
          break;
        case PL_SOP_RINDEX:
          x->level = PL_LEVEL_ELEM;
          break;
        case PL_SOP_REDUCED:
          {
            PlReduction *r = &g_array_index (lp->reductions, PlReduction, x->reduction);
            r->pass = pl_lower_instr (L, r->arg)->phase;
            x->level = PL_LEVEL_ROW;
            x->phase = r->pass + 1;
            break;
          }
        default:
          x->level = PL_LEVEL_CONST;
          for (int k = 0; k < x->n_args; k++)
            {
              x->level = MAX (x->level, pl_lower_instr (L, x->a[k])->level);
              x->phase = MAX (x->phase, pl_lower_instr (L, x->a[k])->phase);
            }
        }
    }
  int passes = 1;
  for (guint s = 0; s < lp->stores->len; s++)
    {
      PlStore *st = &g_array_index (lp->stores, PlStore, s);
      PlInstr *v = pl_lower_instr (L, st->value);
      if (st->level == PL_LEVEL_ROW && v->level == PL_LEVEL_ELEM)
        return pl_lower_fail (L, "a row output depends on the element") >= 0;
      st->pass = v->phase;
      if (st->level == PL_LEVEL_ELEM)
        passes = MAX (passes, st->pass + 1);
    }
  for (guint r = 0; r < lp->reductions->len; r++)
    passes = MAX (passes, g_array_index (lp->reductions, PlReduction, r).pass + 1);
  if (passes > 30)
    return pl_lower_fail (L, "too many dependent reductions (%d passes)", passes) >= 0;
  lp->n_passes = passes;

  /* which passes need each element value; materialize the ones needed twice */
  for (guint s = 0; s < lp->stores->len; s++)
    {
      PlStore *st = &g_array_index (lp->stores, PlStore, s);
      pl_lower_instr (L, st->value)->used = true;
      if (st->level == PL_LEVEL_ELEM)
        pl_lower_instr (L, st->value)->passes |= 1u << st->pass;
    }
  for (guint r = 0; r < lp->reductions->len; r++)
    {
      PlReduction *red = &g_array_index (lp->reductions, PlReduction, r);
      pl_lower_instr (L, red->arg)->passes |= 1u << red->pass;
      pl_lower_instr (L, red->arg)->used = true;
    }
  lp->scratch_dtype = PL_DTYPE_F32;
  for (int i = n - 1; i >= 0; i--)
    {
      PlInstr *x = pl_lower_instr (L, i);
      if (x->passes)
        x->used = true;
      if (!x->used)
        continue;
      guint32 need = x->passes;
      if (x->level == PL_LEVEL_ELEM && x->op != PL_SOP_LOAD && x->op != PL_SOP_CONST && x->op != PL_SOP_RINDEX &&
          (need & (need - 1)) != 0)
        {
          x->scratch = lp->n_scratch++;
          need &= ~(need - 1);   /* computed once, in its first pass */
        }
      if (x->op == PL_SOP_REDUCED)
        {
          PlReduction *red = &g_array_index (lp->reductions, PlReduction, x->reduction);
          pl_lower_instr (L, red->arg)->used = true;
        }
      for (int k = 0; k < x->n_args; k++)
        {
          PlInstr *a = pl_lower_instr (L, x->a[k]);
          a->used = true;
          if (a->level == PL_LEVEL_ELEM)
            a->passes |= need;
        }
    }
  return true;
}

/* --- coalescing loop dims ---------------------------------------------------------- */

typedef struct {
  int     rep;      /* the innermost D coordinate merged into this loop dim */
  int64_t size;
  bool    reduced;
} LoopDim;

static GPtrArray *
all_indices (PlLower *L)
{
  GPtrArray *xs = g_ptr_array_new ();
  for (guint i = 0; i < L->loop->instrs->len; i++)
    if (pl_lower_instr (L, (int) i)->op == PL_SOP_LOAD)
      g_ptr_array_add (xs, (gpointer) pl_lower_instr (L, (int) i)->index);
  for (guint s = 0; s < L->loop->stores->len; s++)
    g_ptr_array_add (xs, (gpointer) g_array_index (L->loop->stores, PlStore, s).index);
  return xs;
}

/* Whether loop dims a (outer) and b (inner) may become one: every index
 * reads them as a * size(b) + b. */
static bool
mergeable (GPtrArray *xs, const LoopDim *a, const LoopDim *b)
{
  for (guint i = 0; i < xs->len; i++)
    {
      bool na, nb;
      int64_t ca = pl_idx_coord_coef (xs->pdata[i], a->rep, &na);
      int64_t cb = pl_idx_coord_coef (xs->pdata[i], b->rep, &nb);
      if (na || nb || ca != b->size * cb)
        return false;
    }
  return true;
}

/* Where an index reads coordinate k divided by (or modulo) d, d a proper
 * divisor of its size: cut[k] = d (the first such d found). */
static void
find_cuts (const PlLower *L, const PlIdx *x, int64_t *cut)
{
  for (int i = 0; i < x->n_terms; i++)
    {
      const PlIdxAtom *at = x->terms[i].atom;
      if (at->kind == PL_IDX_COORD)
        continue;
      const PlIdx *a = at->arg;
      const int k = a->n_terms == 1 && a->constant == 0 && a->terms[0].coef == 1 &&
                    a->terms[0].atom->kind == PL_IDX_COORD ? a->terms[0].atom->coord : -1;
      if (k >= 0 && cut[k] == 0 && at->divisor > 1 && at->divisor < L->dims[k] && L->dims[k] % at->divisor == 0)
        cut[k] = at->divisor;
      find_cuts (L, a, cut);
    }
}

/* Splits the loop of a rows kernel where an index divides a coordinate:
 * c = d * c_hi + c_lo, so c / d becomes c_hi and c % d becomes c_lo. A
 * group norm's rows [N, G, C/G*H*W] read gamma at (c / (H*W)) + C/G * g;
 * split, that load is invariant in the inner H*W loop, which vectorizes
 * again (coalesce merges back whatever every index reads as one). Rows
 * kernels only: a pointwise kernel's loop order follows its stores' layout
 * by D's rank. */
void
pl_lower_split_dims (PlLower *L)
{
  if (!L->rows)
    return;
  int64_t cut[PL_MAX_RANK] = { 0 };
  g_autoptr (GPtrArray) xs = all_indices (L);
  for (guint i = 0; i < xs->len; i++)
    find_cuts (L, xs->pdata[i], cut);
  int rank = 0;
  int64_t dims[PL_MAX_RANK];
  bool reduced[PL_MAX_RANK];
  for (int k = 0; k < L->rank; k++)
    {
      if (cut[k] > 0 && rank + (L->rank - k) + 1 > PL_MAX_RANK)
        cut[k] = 0;            /* no room for another dim */
      if (cut[k] > 0)
        {
          dims[rank] = L->dims[k] / cut[k];
          reduced[rank++] = L->reduced[k];
        }
      dims[rank] = cut[k] > 0 ? cut[k] : L->dims[k];
      reduced[rank++] = L->reduced[k];
    }
  if (rank == L->rank)
    return;
  PlIdxArena *arena = pl_idx_arena_new (rank, dims);
  const PlIdx *repl[PL_MAX_RANK];
  for (int k = 0, j = 0; k < L->rank; k++, j++)
    {
      repl[k] = pl_idx_coord (arena, j);
      if (cut[k] > 0)
        {
          repl[k] = pl_idx_add (arena, pl_idx_mul (arena, repl[k], cut[k]), pl_idx_coord (arena, j + 1));
          j++;
        }
    }
  for (guint i = 0; i < L->loop->instrs->len; i++)
    {
      PlInstr *x = pl_lower_instr (L, (int) i);
      if (x->op == PL_SOP_LOAD)
        x->index = pl_idx_substitute (arena, x->index, repl);
    }
  for (guint s = 0; s < L->loop->stores->len; s++)
    {
      PlStore *st = &g_array_index (L->loop->stores, PlStore, s);
      st->index = pl_idx_substitute (arena, st->index, repl);
    }
  pl_idx_arena_free (L->arena);
  L->arena = arena;
  L->rank = rank;
  memcpy (L->dims, dims, sizeof dims);
  memcpy (L->reduced, reduced, sizeof reduced);
  for (int k = 0; k < rank; k++)
    L->coords[k] = pl_idx_coord (arena, k);
}

/* The order in which D's coordinates are looped, outermost first: D's own,
 * except for a pointwise kernel whose stores are all in one other layout,
 * which loops in that layout's order so the innermost loop writes
 * contiguously (a LayoutTransform's loop then follows its destination). */
void
pl_lower_loop_order (PlLower *L, int *order)
{
  for (int k = 0; k < L->rank; k++)
    order[k] = k;
  PlLoopPlan *lp = L->loop;
  if (L->rows || lp->stores->len == 0)
    return;
  PlLayout layout = ((PlValue *) L->plan->outputs->pdata[0])->layout;
  for (guint s = 0; s < lp->stores->len; s++)
    {
      PlValue *v = L->plan->outputs->pdata[g_array_index (lp->stores, PlStore, s).slot];
      if (v->layout != layout || v->shape.rank != L->rank)
        return;
    }
  if (layout != PL_LAYOUT_NCHW)
    pl_layout_perm (layout, L->rank, order);
}

/* Loops D's coordinates in `order` (loop_order), merging neighbours. */
void
pl_lower_coalesce (PlLower *L, const int *order)
{
  PlLoopPlan *lp = L->loop;
  LoopDim ld[PL_MAX_RANK];
  int n = 0;
  int map[PL_MAX_RANK];
  for (int pass = 0; pass < 2; pass++)       /* rows first, then the reduced dims */
    for (int i = 0; i < L->rank; i++)
      {
        int k = order[i];
        if (L->dims[k] > 1 && L->reduced[k] == (pass == 1))
          ld[n++] = (LoopDim) { k, L->dims[k], L->reduced[k] };
      }
  for (int k = 0; k < L->rank; k++)
    map[k] = -1;

  g_autoptr (GPtrArray) xs = all_indices (L);
  LoopDim out[PL_MAX_RANK];
  int m = 0;
  for (int i = 0; i < n; i++)
    {
      if (m > 0 && out[m - 1].reduced == ld[i].reduced && mergeable (xs, &out[m - 1], &ld[i]))
        {
          out[m - 1].rep = ld[i].rep;
          out[m - 1].size *= ld[i].size;
          continue;
        }
      out[m++] = ld[i];
    }
  lp->rank = m;
  lp->n_kept = 0;
  lp->n_rows = lp->row_len = 1;
  for (int i = 0; i < m; i++)
    {
      lp->dims[i] = out[i].size;
      map[out[i].rep] = i;
      if (out[i].reduced)
        lp->row_len *= out[i].size;
      else
        {
          lp->n_kept++;
          lp->n_rows *= out[i].size;
        }
    }
  lp->total = lp->n_rows * lp->row_len;
  lp->arena = pl_idx_arena_new (m, lp->dims);
  for (guint i = 0; i < lp->instrs->len; i++)
    {
      PlInstr *x = pl_lower_instr (L, (int) i);
      if (x->op == PL_SOP_LOAD)
        x->index = pl_idx_translate (lp->arena, x->index, map);
    }
  for (guint s = 0; s < lp->stores->len; s++)
    {
      PlStore *st = &g_array_index (lp->stores, PlStore, s);
      st->index = pl_idx_translate (lp->arena, st->index, map);
    }
}

