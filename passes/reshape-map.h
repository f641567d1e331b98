/* reshape-map.h — the dim mapping of a reshape (reshape-map.c), the
 * analysis under the reshape-sink pass (reshape-sink.c explains how it uses
 * it). Not part of the public API. */
#pragma once

#include "graph.h"

#include <string.h>

G_BEGIN_DECLS

#define MAX_UNITS (2 * PL_MAX_RANK)

/* A stretch of the elements that both shapes cut the same way: the common
 * refinement of P's and S's dims. */
typedef struct {
  int64_t size;
  int     p_lo, p_hi;  /* dims of P that the unit overlaps: [p_lo, p_hi) */
  int     s_lo, s_hi;  /* dims of S that the unit overlaps */
} Unit;

typedef struct {
  int     rp, rs;
  int64_t p[PL_MAX_RANK], s[PL_MAX_RANK];
  int     n_units;
  Unit    units[MAX_UNITS];
} DimMap;

/* A unit inside one dim of P and one of S. */
static inline bool
unit_is_simple (const Unit *u)
{
  return u->p_hi - u->p_lo == 1 && u->s_hi - u->s_lo == 1;
}

static inline bool
dims_equal (int ra, const int64_t *a, int rb, const int64_t *b)
{
  return ra == rb && memcmp (a, b, sizeof (int64_t) * ra) == 0;
}

/* Drops leading 1s (numpy broadcasting adds them back); returns the rank left. */
static inline int
strip_leading_ones (int rank, const int64_t *dims, int64_t *out)
{
  int k = 0;
  while (k < rank && dims[k] == 1)
    k++;
  /* a loop, not memcpy: GCC -O3 (release builds) cannot see rank <= PL_MAX_RANK and warns */
  for (int i = k; i < rank; i++)
    out[i - k] = dims[i];
  return rank - k;
}

/* Builds the units of a reshape from static shape in (P) to static shape out
 * (S). False when a shape is not static, holds a zero dim, or sizes differ. */
bool pl_dim_map_init   (DimMap *m, const PlShape *in, const PlShape *out);
/* A unit that spans several dims of S (a stretch the reshape mixes whole)
 * is live in all of them once it is live in one: s_live[rs] grows so. */
void pl_dim_map_spread (const DimMap *m, bool *s_live);

G_END_DECLS
