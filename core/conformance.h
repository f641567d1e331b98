/* conformance.h — runs one ONNX backend test folder (model.onnx,
 * test_data_set_N/input_K.pb, output_K.pb) with the reference interpreter. */
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
} PlConformanceResult;

/* Tolerances of ONNX's own backend tests: rtol 1e-3, atol 1e-7. */
#define PL_CONFORMANCE_RTOL 1e-3
#define PL_CONFORMANCE_ATOL 1e-7

/* Runs every test_data_set_* of the folder. Never crashes on bad data. */
void pl_conformance_run_dir     (const char *dir, PlConformanceResult *result);
void pl_conformance_result_clear (PlConformanceResult *result);

G_END_DECLS
