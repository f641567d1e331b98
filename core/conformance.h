/* conformance.h — runs one ONNX backend test folder (model.onnx,
 * test_data_set_N/input_K.pb, output_K.pb) with the reference interpreter,
 * or with a runner the caller gives (a backend's compiled kernels). */
#pragma once

#include "graph.h"

G_BEGIN_DECLS

typedef enum {
  PL_CONFORMANCE_PASS,
  PL_CONFORMANCE_FAIL,  /* wrong result, or an error while loading/running */
  PL_CONFORMANCE_SKIP,  /* uses an op or dtype we do not implement */
} PlConformanceStatus;

typedef struct {
  PlConformanceStatus status;
  double              worst;    /* worst error as a multiple of the tolerance (FAIL: > 1) */
  char               *message;  /* FAIL: what went wrong; SKIP: the unsupported op/dtype */
  double              seconds;
  int                 kernels;    /* a runner's: kernels run (last data set) */
  int                 fallbacks;  /* of which ran the reference implementation */
} PlConformanceResult;

/* Runs g on inputs: its outputs (pl_interp_free_outputs), or NULL with
 * error set (PL_ERROR_UNSUPPORTED: the test skips). May count kernels and
 * fallbacks into result. */
typedef PlTensor **(*PlConformanceRunner) (const PlGraph *g, PlTensor **inputs, gpointer data,
                                           PlConformanceResult *result, GError **error);

/* Tolerances of ONNX's own backend tests: rtol 1e-3, atol 1e-7. */
#define PL_CONFORMANCE_RTOL 1e-3
#define PL_CONFORMANCE_ATOL 1e-7

/* Runs every test_data_set_* of the folder. Never crashes on bad data. */
void pl_conformance_run_dir     (const char *dir, PlConformanceResult *result);
/* The same with run in the interpreter's place (NULL: the interpreter). */
void pl_conformance_run_dir_with (const char *dir, PlConformanceRunner run, gpointer data,
                                  PlConformanceResult *result);
void pl_conformance_result_clear (PlConformanceResult *result);

G_END_DECLS
