/* reshape-map.c — the dim mapping of a reshape, for the reshape-sink pass.
 *
 * A reshape from P to S keeps the elements in order, so both shapes cut the
 * same row-major sequence; the running products of their dims are the cuts.
 * The units are the common refinement of both: cut wherever the running
 * product of either shape changes, except that between two cuts both shapes
 * share, the inner cuts stay only if each divides the next (a stretch like
 * [6,4] ↔ [4,6] stays one unit). Every dim of P and of S is then a run of
 * consecutive units, and a unit records which dims of each it overlaps.
 */
#define G_LOG_DOMAIN "passlab"
#include "reshape-map.h"

/* Running products: cp[0] = 1, cp[i + 1] = cp[i] * dims[i]. */
static void
running_products (int rank, const int64_t *dims, int64_t *cp)
{
  cp[0] = 1;
  for (int i = 0; i < rank; i++)
    cp[i + 1] = cp[i] * dims[i];
}

/* Dims [lo, hi) of a shape with running products cp that overlap (a, b). */
static void
overlapping_dims (int rank, const int64_t *cp, int64_t a, int64_t b, int *lo, int *hi)
{
  *lo = rank;
  *hi = 0;
  for (int i = 0; i < rank; i++)
    if (cp[i] < b && cp[i + 1] > a)
      {
        *lo = MIN (*lo, i);
        *hi = i + 1;
      }
}

bool
pl_dim_map_init (DimMap *m, const PlShape *in, const PlShape *out)
{
  memset (m, 0, sizeof *m);
  if (!pl_shape_get_dims (in, m->p) || !pl_shape_get_dims (out, m->s))
    return false;
  m->rp = in->rank;
  m->rs = out->rank;
  int64_t np = pl_shape_numel (in), ns = pl_shape_numel (out);
  if (np <= 0 || np != ns)
    return false;

  int64_t cpp[PL_MAX_RANK + 1], cps[PL_MAX_RANK + 1];
  running_products (m->rp, m->p, cpp);
  running_products (m->rs, m->s, cps);

  /* Merge the two running products into sorted unique cuts; a cut is common
   * when both shapes have it. */
  int64_t cut[2 * PL_MAX_RANK + 2];
  bool common[2 * PL_MAX_RANK + 2], keep[2 * PL_MAX_RANK + 2];
  int n = 0, i = 0, j = 0;
  while (i <= m->rp || j <= m->rs)
    {
      int64_t a = i <= m->rp ? cpp[i] : INT64_MAX, b = j <= m->rs ? cps[j] : INT64_MAX;
      int64_t c = MIN (a, b);
      if (n == 0 || cut[n - 1] != c)
        {
          cut[n] = c;
          common[n] = false;
          keep[n] = true;
          n++;
        }
      if (a == c && b == c)
        common[n - 1] = true;
      if (a == c)
        i++;
      if (b == c)
        j++;
    }

  /* Between two common cuts, keep the inner cuts only if each divides the
   * next: then every dim is a product of consecutive units. */
  for (int k0 = 0, k = 1; k < n; k++)
    if (common[k])
      {
        bool ok = true;
        for (int t = k0; t < k; t++)
          ok = ok && cut[t + 1] % cut[t] == 0;
        for (int t = k0 + 1; !ok && t < k; t++)
          keep[t] = false;
        k0 = k;
      }

  for (int k = 1, prev = 0; k < n; k++)
    if (keep[k])
      {
        Unit *u = &m->units[m->n_units++];
        u->size = cut[k] / cut[prev];
        overlapping_dims (m->rp, cpp, cut[prev], cut[k], &u->p_lo, &u->p_hi);
        overlapping_dims (m->rs, cps, cut[prev], cut[k], &u->s_lo, &u->s_hi);
        prev = k;
      }
  return true;
}

void
pl_dim_map_spread (const DimMap *m, bool *s_live)
{
  for (int k = 0; k < m->n_units; k++)
    {
      const Unit *u = &m->units[k];
      bool any = false;
      for (int j = u->s_lo; j < u->s_hi; j++)
        any |= s_live[j];
      for (int j = u->s_lo; any && j < u->s_hi; j++)
        s_live[j] = true;
    }
}
