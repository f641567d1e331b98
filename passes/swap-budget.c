/* swap-budget.c — the swap pass's memory budget (swap.c, step 6): the fewest
 * tensors, the largest first, whose planned device peak fits; failing
 * that, restorations split at the steps where the plan peaks (tight
 * steps), then thresholds relaxed and prefetch given up level by level,
 * and last the plan with the lowest peak. Peaks are measured by applying a
 * plan to a copy of the graph (swap-peak.c).
 */
#define G_LOG_DOMAIN "passlab"
#include "swap-private.h"

#define MAX_TIGHT 64   /* tight steps one level may add */

static void
insert_sorted (GArray *steps, int s)
{
  guint i = 0;
  while (i < steps->len && g_array_index (steps, int, i) < s)
    i++;
  g_array_insert_val (steps, i, s);
}

static bool
contains (const GArray *steps, int s)
{
  for (guint i = 0; i < steps->len; i++)
    if (g_array_index (steps, int, i) == s)
      return true;
  return false;
}

static void
remove_step (GArray *steps, int s)
{
  for (guint i = 0; i < steps->len; i++)
    if (g_array_index (steps, int, i) == s)
      {
        g_array_remove_index (steps, i);
        return;
      }
}

/* Replaces *cands by the full plan with `tight`, if its peak is at most
 * `limit`; *ok false on error. */
static bool
try_tight (const PlGraph *g, const PlTimingAnalysis *t, const Params *lp, double th_tts, int64_t th_s,
           const GArray *tight, int64_t limit, GPtrArray **cands, int64_t *peak, int *at, bool *ok, GError **error)
{
  g_autoptr (GPtrArray) plan = pl_swap_plan_candidates (t, lp, th_tts, th_s, tight);
  int64_t p;
  int a;
  *ok = pl_swap_peak_with (g, t, lp, plan, plan->len, &p, &a, error);
  if (!*ok || p > limit)
    return false;
  g_ptr_array_unref (*cands);
  *cands = g_steal_pointer (&plan);
  *peak = p, *at = a;
  return true;
}

/* One level's full plan (every candidate), made tighter where it peaks: as
 * long as the peak is over the budget and above the floor, its step
 * becomes tight, i.e. the restored copies that wait across it without
 * being read there are restored again after it (seed fig. 9: several
 * restorations; near the peak a restoration goes right after it instead
 * of hiding its copy earlier). Stops when the peak step is tight already
 * (what is left there is the step's own inputs and outputs, or values
 * nothing moves), when a split raises the peak, or after MAX_TIGHT steps;
 * then drops the tight steps the final peak does not need (each costs
 * copies). Returns the candidates (NULL on error), their peak, and the
 * tight steps in `tight`. */
static GPtrArray *
tighten (const PlGraph *g, const PlTimingAnalysis *t, const Params *lp, double th_tts, int64_t th_s, int64_t budget,
         int64_t floor_bytes, GArray *tight, int64_t *peak, GError **error)
{
  GPtrArray *cands = pl_swap_plan_candidates (t, lp, th_tts, th_s, tight);
  int at;
  bool ok = true;
  *peak = G_MAXINT64;
  if (cands->len == 0)
    return cands;
  if (!pl_swap_peak_with (g, t, lp, cands, cands->len, peak, &at, error))
    goto fail;
  for (int r = 0; *peak > MAX (budget, floor_bytes) && r < MAX_TIGHT && !contains (tight, at); r++)
    {
      int s = at;
      insert_sorted (tight, s);
      if (!try_tight (g, t, lp, th_tts, th_s, tight, *peak, &cands, peak, &at, &ok, error))
        {
          remove_step (tight, s);
          if (!ok)
            goto fail;
          break;
        }
    }
  for (int i = (int) tight->len - 1; i >= 0; i--)
    {
      int s = g_array_index (tight, int, i);
      g_array_remove_index (tight, i);
      if (!try_tight (g, t, lp, th_tts, th_s, tight, *peak, &cands, peak, &at, &ok, error))
        {
          if (!ok)
            goto fail;
          insert_sorted (tight, s);
        }
    }
  return cands;
fail:
  g_ptr_array_unref (cands);
  return NULL;
}

/* The fewest of cands (largest first) whose planned peak is at most
 * `limit`, given that all of them reach it: binary search, assuming more
 * moved tensors never raise the peak. */
static bool
fewest (const PlGraph *g, const PlTimingAnalysis *t, const Params *params, GPtrArray *cands, int64_t limit, guint *k,
        int64_t *peak, GError **error)
{
  guint lo = 0, hi = cands->len;   /* lo does not reach it (the caller knows), hi does */
  while (hi - lo > 1)
    {
      guint mid = lo + (hi - lo) / 2;
      int64_t p;
      if (!pl_swap_peak_with (g, t, params, cands, mid, &p, NULL, error))
        return false;
      if (p <= limit)
        hi = mid, *peak = p;
      else
        lo = mid;
    }
  *k = hi;
  return true;
}

/* Fewest candidates (largest first) whose planned peak fits the budget.
 * When every candidate of a level is not enough, even with its
 * restorations split at the steps where it peaks (tighten), the next level
 * relaxes th_tts to 0, then th_s to 0, then restores every tensor right
 * before its consumer (prefetch_distance 1: least memory, copies no longer
 * hidden). If no level fits, the plan with the lowest peak, with the fewest
 * tensors that reach it. */
bool
pl_swap_fit_budget (const PlGraph *g, const PlTimingAnalysis *t, const Params *p, int64_t budget, int64_t baseline,
            Choice *best, GError **error)
{
  int floor_step;
  int64_t floor_bytes = pl_swap_schedule_floor (t, p->workspace, &floor_step);
  const struct { double th_tts; int64_t th_s; int distance; } levels[] = {
    { p->th_tts, p->th_s, p->prefetch_distance }, { 0, p->th_s, p->prefetch_distance },
    { 0, 0, p->prefetch_distance }, { 0, 0, 1 },
  };
  *best = (Choice) { .peak = baseline, .th_tts = p->th_tts, .th_s = p->th_s,
                     .prefetch_distance = p->prefetch_distance };
  if (baseline <= budget)
    {
      best->met = true;
      best->cands = g_ptr_array_new ();
      return true;
    }
  for (size_t l = 0; l < G_N_ELEMENTS (levels); l++)
    {
      if (l > 0 && levels[l].th_tts == levels[l - 1].th_tts && levels[l].th_s == levels[l - 1].th_s
          && levels[l].distance == levels[l - 1].distance)
        continue;
      Params lp = *p;
      lp.prefetch_distance = levels[l].distance;
      g_autoptr (GArray) tight = g_array_new (FALSE, FALSE, sizeof (int));
      int64_t peak;
      g_autoptr (GPtrArray) cands = tighten (g, t, &lp, levels[l].th_tts, levels[l].th_s, budget, floor_bytes, tight,
                                             &peak, error);
      if (!cands)
        return false;
      if (cands->len == 0)
        continue;
      if (peak < best->peak || !best->cands)
        {
          g_clear_pointer (&best->cands, g_ptr_array_unref);
          *best = (Choice) { g_ptr_array_ref (cands), cands->len, levels[l].th_tts, levels[l].th_s,
                             levels[l].distance, (int) tight->len, peak, false };
        }
      if (peak > budget)
        continue;
      /* 0 candidates do not fit (baseline > budget), all of them do */
      g_clear_pointer (&best->cands, g_ptr_array_unref);
      *best = (Choice) { g_ptr_array_ref (cands), cands->len, levels[l].th_tts, levels[l].th_s,
                         levels[l].distance, (int) tight->len, peak, true };
      return fewest (g, t, &lp, cands, budget, &best->k, &best->peak, error);
    }
  if (!best->cands)
    best->cands = g_ptr_array_new ();
  if (best->peak >= baseline)
    best->k = 0, best->peak = baseline;   /* nothing helps: move nothing */
  else if (!fewest (g, t, p, best->cands, best->peak, &best->k, &best->peak, error))
    return false;   /* missed, but no tensor moves for nothing */
  return true;
}
