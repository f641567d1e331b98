/* pass-manager.h — pipelines, and the history of applying one.
 *
 * Applying a pipeline never touches the input graph: each step runs on a
 * copy of the previous version, so every version is kept (step 0 is the
 * input). After each pass the verifier runs; each step records statistics,
 * the structural diff against the previous version, and — when asked — the
 * numerical check: the versions before and after run on the same random
 * inputs through the reference interpreter and the worst relative error per
 * output is recorded; a step beyond the tolerance is flagged, naming the pass.
 */
#pragma once

#include "cost.h"
#include "graph-diff.h"
#include "pass.h"

G_BEGIN_DECLS

typedef struct {
  char         *pass_name;      /* NULL for step 0 (the input) */
  char         *args_text;      /* parameters that differ from the defaults */
  PlGraph      *graph;          /* the version after this step (owned) */
  bool          changed;
  double        time_ms;        /* wall time of the pass itself */
  PlGraphStats  stats;
  PlGraphDiff  *diff;           /* against the previous step; NULL for step 0 */
  char         *report;         /* the pass's report text */
  PlPassReport *counters;       /* the pass's report (counters) */
  bool          checked;        /* the numerical check ran */
  double        max_rel_error;  /* worst over outputs; 0 when unchanged or not checked */
  double       *output_errors;  /* per output of the previous version (matched by name), when checked */
  int           n_outputs;
  bool          check_failed;   /* error beyond tolerance, or the run failed */
  char         *check_message;  /* why the check failed */
} PlStep;

typedef struct {
  GPtrArray *steps;     /* PlStep*; steps[0] is the input */
  char      *error;     /* set when the pipeline stopped early (a pass failed, or verification) */
} PlHistory;

typedef struct {
  GPtrArray *entries;   /* PlPassArgs* (each knows its pass) */
} PlPipeline;

typedef struct {
  bool     check;       /* run the numerical check after every step that changed the graph */
  guint32  seed;        /* random inputs of the check */
  double   tolerance;   /* relative; default 1e-4 */
  int64_t  sym_size;    /* size for symbolic dims in checks and memory estimates; default 1 */
  bool     stop_on_check_failure;
} PlRunOptions;

void          pl_run_options_init     (PlRunOptions *options);

/* "simplify,reshape-sink,fuse-loops" (spaces allowed); unknown names fail.
 * An entry may set its pass's parameters: "layout{tune=8 refine=1}" (keys
 * separated by spaces or ';'), as pl_pipeline_set_param would for it alone. */
PlPipeline   *pl_pipeline_parse       (const char *spec, GError **error);
PlPipeline   *pl_pipeline_new         (void);
void          pl_pipeline_append      (PlPipeline *p, PlPassArgs *args);  /* takes ownership */
/* "pass.key=value": sets key on every entry of that pass; fails if the pass
 * is not in the pipeline or the key/value is wrong. */
bool          pl_pipeline_set_param   (PlPipeline *p, const char *assignment, GError **error);
void          pl_pipeline_free        (PlPipeline *p);

/* Applies the pipeline to a copy of input. Always returns a history; when a
 * pass fails or a version does not verify, the history ends there and
 * history->error says why (the error is also set). */
PlHistory    *pl_pipeline_run         (const PlGraph *input, const PlPipeline *p,
                                       const PlRunOptions *options, GError **error);
/* Runs one more pass on the last version (the workbench's "step"). */
bool          pl_history_apply        (PlHistory *h, const PlPassArgs *args,
                                       const PlRunOptions *options, GError **error);
/* A history holding only the input (step 0). */
PlHistory    *pl_history_new          (const PlGraph *input, const PlRunOptions *options);
void          pl_history_free         (PlHistory *h);
PlStep       *pl_history_step         (const PlHistory *h, int i);
int           pl_history_n_steps      (const PlHistory *h);

/* The numerical check on its own: worst error per output between two graphs
 * with the same inputs and outputs, relative to the output's scale
 * (max |a - b| / max |b|). False with an error when
 * either fails to run. */
bool          pl_check_graphs         (const PlGraph *before, const PlGraph *after, guint32 seed,
                                       int64_t sym_size, double *errors, GError **error);

/* The history as JSON: {"steps":[{"pass":..., "changed":..., "nodes":..., ...}]}. */
char         *pl_history_to_json      (const PlHistory *h);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PlHistory, pl_history_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (PlPipeline, pl_pipeline_free)

G_END_DECLS
