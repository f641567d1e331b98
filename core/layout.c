/* layout.c — layout names, permutations and strides (see layout.h). */
#define G_LOG_DOMAIN "passlab"
#include "layout.h"

#include "shape.h"

#include <string.h>

static const char *const names[PL_LAYOUT_COUNT] = { "NCHW", "NHWC", "CHWN" };
static const int perms[PL_LAYOUT_COUNT][4] = { { 0, 1, 2, 3 }, { 0, 2, 3, 1 }, { 1, 2, 3, 0 } };

const char *
pl_layout_name (PlLayout layout)
{
  return layout < PL_LAYOUT_COUNT ? names[layout] : "?";
}

bool
pl_layout_parse (const char *name, PlLayout *layout)
{
  for (int i = 0; i < PL_LAYOUT_COUNT && name; i++)
    if (strcmp (name, names[i]) == 0)
      {
        *layout = (PlLayout) i;
        return true;
      }
  return false;
}

bool
pl_layout_valid_for_rank (PlLayout layout, int rank)
{
  return layout == PL_LAYOUT_NCHW || (layout < PL_LAYOUT_COUNT && rank == 4);
}

void
pl_layout_perm (PlLayout layout, int rank, int *perm)
{
  g_assert (pl_layout_valid_for_rank (layout, rank));
  for (int i = 0; i < rank; i++)
    perm[i] = layout == PL_LAYOUT_NCHW ? i : perms[layout][i];
}

void
pl_layout_strides (PlLayout layout, int rank, const int64_t *dims, int64_t *strides)
{
  int perm[PL_MAX_RANK];
  pl_layout_perm (layout, rank, perm);
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--)
    {
      strides[perm[i]] = s;
      s *= dims[perm[i]];
    }
}
