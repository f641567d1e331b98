/* stats.c — see stats.h. */
#include "stats.h"

#include <stdlib.h>

int
pl_compare_doubles (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

double
pl_median_sort (double *v, int n)
{
  qsort (v, (size_t) n, sizeof *v, pl_compare_doubles);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
