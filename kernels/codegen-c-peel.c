/* codegen-c-peel.c — edge peeling of a pointwise loop's innermost dim.
 *
 * A clamp or a mirror on the innermost coordinate (linear Resize's
 * neighbours, Pad's edge and reflect modes) makes every load a select of
 * two addresses, which the vectorizer turns into gathers: a 2x linear
 * upsampling of 1x256x56x56 took 3.9 ms (4 GB/s; 0.43 ms peeled and in
 * phases, below). Such an index is
 * plain arithmetic everywhere but near the edges. So the loop is split in
 * three: the first lo and the last n - hi elements run the plan as it is,
 * and the interior [lo, hi) runs a copy of the plan whose innermost
 * coordinate is renumbered from lo (c -> c' + lo, c' < hi - lo) and whose
 * index functions are rebuilt for that range (pl_idx_substitute): there
 * the index arithmetic proves each clamp never binds and drops it, and
 * pulls the constant out of a division ((c' + 3) / 2 -> (c' + 1) / 2 + 1).
 * The split is the smallest (lo + n - hi, up to MAX_PEEL a side) whose
 * interior keeps no clamp or mirror on the coordinate; correct by
 * construction, since the simplifier only drops what it proves inactive
 * over the interior.
 *
 * Phases: an interior still dividing the coordinate by q (2 to MAX_PHASES;
 * an upsampling's c' / 2 and c' % 2), or a row with no edges that does (a
 * nearest upsampling, DepthToSpace), still gathers, each element from its
 * own address. Its loop then takes q elements an iteration, c' = q j + r,
 * one copy of the body per phase r with the index functions rebuilt for
 * it: (q j + r) / q is j and (q j + r) % q is r, so each copy loads
 * contiguous elements and the q copies' stores interleave (the interior
 * shortened to a multiple of q, the rest going to the last edge).
 * Internal to kernels/.
 */
#define G_LOG_DOMAIN "passlab"
#include "codegen-c-private.h"

#include "index-expr.h"

/* Elements peeled at most at either end, and the least interior worth it. */
#define MAX_PEEL     8
#define MIN_INTERIOR 16

/* What the atoms on coordinate k are: whether a clamp or a mirror reads
 * it (edge), whether a division or a modulo does and by what (divisor: the
 * one divisor, -1 when they differ). */
typedef struct {
  bool    edge;
  int64_t divisor;
} OnCoord;

static void
scan_idx (const PlIdx *x, int k, OnCoord *on)
{
  for (int i = 0; i < x->n_terms; i++)
    {
      const PlIdxAtom *at = x->terms[i].atom;
      if (at->kind == PL_IDX_COORD || !pl_idx_uses_coord (at->arg, k))
        continue;
      if (at->kind == PL_IDX_CLAMP || at->kind == PL_IDX_REFLECT)
        on->edge = true;
      else
        on->divisor = on->divisor == 0 || on->divisor == at->divisor ? at->divisor : -1;
      scan_idx (at->arg, k, on);
    }
}

static OnCoord
scan_plan (const PlLoopPlan *lp, int k)
{
  OnCoord on = { false, 0 };
  for (guint i = 0; i < lp->instrs->len; i++)
    {
      const PlInstr *x = pl_loop_instr (lp, (int) i);
      if (x->used && x->op == PL_SOP_LOAD && x->index)
        scan_idx (x->index, k, &on);
    }
  for (guint s = 0; s < lp->stores->len; s++)
    scan_idx (g_array_index (lp->stores, PlStore, s).index, k, &on);
  return on;
}

static void
plan_free (PlLoopPlan *lp)
{
  if (!lp)
    return;
  g_array_unref (lp->instrs);
  g_array_unref (lp->stores);
  pl_idx_arena_free (lp->arena);
  g_free (lp);
}

void
pl_cgc_peel_clear (PlCgcPeel *peel)
{
  plan_free (peel->mid);
  for (int r = 0; r < peel->q; r++)
    plan_free (peel->phase[r]);
  memset (peel, 0, sizeof *peel);
}

/* lp with coordinate k replaced by scale * c + offset, c < size, its index
 * functions rebuilt for that (see the top). The copy shares lp's
 * reductions and checks. */
static PlLoopPlan *
substituted (const PlLoopPlan *lp, int k, int64_t scale, int64_t offset, int64_t size)
{
  PlLoopPlan *c = g_new (PlLoopPlan, 1);
  *c = *lp;
  c->dims[k] = size;
  c->arena = pl_idx_arena_new (lp->rank, c->dims);
  const PlIdx *repl[PL_MAX_RANK];
  for (int d = 0; d < lp->rank; d++)
    repl[d] = pl_idx_coord (c->arena, d);
  repl[k] = pl_idx_add (c->arena, pl_idx_mul (c->arena, repl[k], scale), pl_idx_const (c->arena, offset));
  c->instrs = g_array_copy (lp->instrs);
  for (guint i = 0; i < c->instrs->len; i++)
    {
      PlInstr *x = &g_array_index (c->instrs, PlInstr, i);
      if (x->op == PL_SOP_LOAD && x->index)
        x->index = pl_idx_substitute (c->arena, x->index, repl);
    }
  c->stores = g_array_copy (lp->stores);
  for (guint s = 0; s < c->stores->len; s++)
    {
      PlStore *st = &g_array_index (c->stores, PlStore, s);
      st->index = pl_idx_substitute (c->arena, st->index, repl);
    }
  return c;
}

/* The interior's phases, when it divides the coordinate by one q in
 * [2, MAX_PHASES] and each phase's copy divides it no more. */
static void
split_phases (const PlLoopPlan *lp, int k, PlCgcPeel *peel)
{
  const OnCoord on = scan_plan (peel->mid, k);
  const int64_t q = on.divisor;
  if (q < 2 || q > MAX_PHASES || (peel->hi - peel->lo) / q < MIN_INTERIOR / q)
    return;
  if ((peel->hi - peel->lo) % q)
    {
      /* a shorter interior: its clamps stay proven inactive */
      PlLoopPlan *mid = substituted (lp, k, 1, peel->lo, peel->hi - (peel->hi - peel->lo) % q - peel->lo);
      if (scan_plan (mid, k).edge)
        {
          plan_free (mid);
          return;
        }
      plan_free (peel->mid);
      peel->mid = mid;
      peel->hi -= (peel->hi - peel->lo) % q;
    }
  PlLoopPlan *phase[MAX_PHASES] = { NULL };
  bool ok = true;
  for (int r = 0; r < q; r++)
    {
      phase[r] = substituted (peel->mid, k, q, r, (peel->hi - peel->lo) / q);
      const OnCoord p = scan_plan (phase[r], k);
      ok = ok && !p.edge && p.divisor == 0;
    }
  if (!ok)
    {
      for (int r = 0; r < q; r++)
        plan_free (phase[r]);
      return;
    }
  peel->q = (int) q;
  memcpy (peel->phase, phase, sizeof phase);
}

bool
pl_cgc_peel_inner (const PlLoopPlan *lp, PlCgcPeel *peel)
{
  memset (peel, 0, sizeof *peel);
  const int k = lp->rank - 1;
  if (k < 0 || pl_idx_arena_n_coords (lp->arena) != lp->rank)
    return false;
  const OnCoord on = scan_plan (lp, k);
  const int64_t n = lp->dims[k];
  if (!on.edge)
    {
      /* no edges: phases alone, where the dim is divided (a nearest upsampling) */
      if (on.divisor < 2 || on.divisor > MAX_PHASES)
        return false;
      peel->mid = substituted (lp, k, 1, 0, n);
      peel->hi = n;
      split_phases (lp, k, peel);
      if (peel->q < 2)
        pl_cgc_peel_clear (peel);
      return peel->q > 1;
    }
  for (int64_t cut = 1; cut <= 2 * MAX_PEEL; cut++)
    for (int64_t lo = MAX (0, cut - MAX_PEEL); lo <= MIN (cut, MAX_PEEL); lo++)
      {
        const int64_t hi = n - (cut - lo);
        if (hi - lo < MIN_INTERIOR)
          return false;
        PlLoopPlan *c = substituted (lp, k, 1, lo, hi - lo);
        if (!scan_plan (c, k).edge)
          {
            peel->mid = c;
            peel->lo = lo;
            peel->hi = hi;
            split_phases (lp, k, peel);
            return true;
          }
        plan_free (c);
      }
  return false;
}
