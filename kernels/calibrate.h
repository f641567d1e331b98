/* calibrate.h — the cost of a convolution in each layout and of the
 * transforms between layouts, for the `layout` pass (seed 003).
 *
 * Measured: a calibration run times, on the chosen backend, the generated
 * and library kernels of each conv shape in each layout (and each transform),
 * and caches the medians per machine in $XDG_CACHE_HOME/passlab/calibration.txt
 * (PASSLAB_CACHE_DIR overrides the directory). Analytic fallback, when
 * nothing is measured: bytes and FLOPs of the kernel against this machine's
 * measured ceilings (memcpy bandwidth, GEMM FLOP/s; measured once, cached).
 */
#pragma once

#include "graph.h"
#include "kernel-plan.h"
#include "runtime.h"

G_BEGIN_DECLS

typedef enum {
  PL_COST_MEASURED,   /* from a calibration run (this run or the cache) */
  PL_COST_ANALYTIC,   /* from bytes / FLOPs and the ceilings */
} PlCostSource;

typedef struct {
  double       ms;
  PlCostSource source;
} PlCost;

typedef struct _PlCalibration PlCalibration;

/* measure: run calibrations for what the cache lacks (else analytic).
 * backend: PL_BACKEND_CPU or PL_BACKEND_CUDA (cuda without a GPU: error). */
PlCalibration *pl_calibration_new     (PlBackend backend, bool measure, GError **error);
void           pl_calibration_free    (PlCalibration *cal);
/* Measures, in one batch, every (conv, layout, impl) of the graph's convs and
 * every transform their values may need that the cache lacks; saves the cache. */
bool           pl_calibration_prepare (PlCalibration *cal, const PlGraph *g, GError **error);
/* Cost of the Conv node in layout (X and Y) with impl (tile: the best known). */
PlCost         pl_calibration_conv    (PlCalibration *cal, const PlNode *conv, PlLayout layout, PlConvImpl impl);
/* Cost of transforming value v (rank 4) from one layout to another (0 when equal). */
PlCost         pl_calibration_transform (PlCalibration *cal, const PlValue *v, PlLayout from, PlLayout to);
/* "cpu <model>, <n> threads" — what the cache is keyed by. */
const char    *pl_calibration_machine (const PlCalibration *cal);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PlCalibration, pl_calibration_free)

G_END_DECLS
