/* stats.h — the small order statistics the runtime, the calibration, the
 * tuner and the benchmarks take of their timings. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* qsort comparison of doubles, ascending. */
int    pl_compare_doubles (const void *a, const void *b);
/* The median of v[0..n) (n >= 1); sorts v. */
double pl_median_sort     (double *v, int n);

G_END_DECLS
