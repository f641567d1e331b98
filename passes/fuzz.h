/* fuzz.h — the pass fuzzer: random graphs through a pipeline with the
 * numerical check, and the smallest failing graph for each failure.
 *
 * For each seed, pl_random_graph() makes a graph; the pipeline runs on it
 * through the pass manager with the check after every step; a check beyond
 * the tolerance, a graph that does not verify after a pass, a pass that
 * returns an error, a crash or a hang is a failure of that seed, naming the
 * pass. Each run happens in a forked child, so a crash in a pass ends only
 * that run. A failing graph is shrunk (outputs dropped, node outputs
 * replaced by new graph inputs or by one of the node's own inputs, dead code
 * removed) for as long as the same pass still fails the same way, and the
 * result is written as text. A check failure that disappears when both
 * versions run in f64 is f32 rounding (a rewrite that stores intermediates
 * the reference computes in double), not a failure. With a backend stage
 * (the CLI's --backend), the pipeline's last graph is then compiled for a
 * backend and run on the seed's inputs, against the reference interpreter
 * on the generated graph; a difference is a failure of that stage, shrunk
 * the same way.
 */
#pragma once

#include "pass-manager.h"
#include "random-graph.h"

G_BEGIN_DECLS

typedef enum {
  PL_FUZZ_OK,
  PL_FUZZ_BAD_GRAPH,   /* the generated graph itself does not verify, run, or give finite outputs */
  PL_FUZZ_PASS_ERROR,  /* a pass returned an error */
  PL_FUZZ_VERIFY,      /* the graph does not verify after a pass */
  PL_FUZZ_CHECK,       /* the numerical check failed after a pass, also in f64 (or could not run) */
  PL_FUZZ_CRASH,       /* the run died: a signal, or an exit without a result */
  PL_FUZZ_TIMEOUT,     /* the run took longer than timeout_s */
  PL_FUZZ_BACKEND,     /* the backend stage: its outputs differ from the reference's, or it failed */
} PlFuzzKind;

/* "ok", "bad graph", "pass error", "verifier", "check", "crash", "timeout", "backend" */
const char *pl_fuzz_kind_name (PlFuzzKind kind);

typedef struct {
  guint32     seed;
  PlFuzzKind  kind;
  char       *pass;          /* the pass that failed ("backend <name>": the backend stage); NULL if it failed
                              * before any pass ran */
  char       *message;       /* what went wrong, on the generated graph */
  int         n_nodes;       /* nodes of the generated graph */
  int         shrunk_nodes;  /* nodes of the smallest failing graph found (n_nodes if not shrunk) */
  char       *path;          /* where that graph was written; NULL if not written */
} PlFuzzFailure;

typedef void (*PlFuzzFailureFunc) (const PlFuzzFailure *failure, gpointer user_data);
/* The backend stage: runs `final` (the pipeline's result) on the seed's
 * random inputs and compares with the reference interpreter's outputs of
 * `generated` within tolerance. NULL when they agree, else what differs
 * (g_free'd). */
typedef char *(*PlFuzzBackendFunc) (const PlGraph *generated, const PlGraph *final, guint32 seed, double tolerance,
                                    gpointer data);

typedef struct {
  guint32              seed;          /* the first graph's seed; default 1 */
  int                  n_graphs;      /* default 100 */
  PlRandomGraphOptions graph;         /* size and op mix (its seed is set per graph) */
  const char          *passes;        /* pipeline spec "a,b,c"; NULL: every built-in pass, in registration order */
  double               tolerance;     /* relative, as the pass manager's check; default 1e-4 */
  const char          *out_dir;       /* fuzz-fail-<seed>.graph goes here; NULL: nothing is written */
  bool                 shrink;        /* default true */
  bool                 isolate;       /* run each pipeline in a forked child; default true */
  unsigned             timeout_s;     /* per run in a child; default 60 */
  int                  max_trials;    /* pipeline runs one shrink may spend; default 500 */
  PlFuzzFailureFunc    on_failure;    /* called for each failure as it is found; may be NULL */
  gpointer             user_data;
  PlFuzzBackendFunc    backend;       /* the backend stage after the pipeline; NULL: none */
  const char          *backend_name;  /* "cpu", "cuda": names the stage in failures */
  gpointer             backend_data;
} PlFuzzOptions;

typedef struct {
  int        n_graphs;
  int        n_passed;
  int        n_failed;
  int        n_rounding;  /* graphs where a check failed in f32 but f64 showed only rounding (not failures) */
  GPtrArray *failures;  /* PlFuzzFailure*, in seed order */
} PlFuzzResult;

void pl_fuzz_options_init (PlFuzzOptions *o);
/* Fuzzes o->n_graphs graphs from o->seed on. False with an error only when
 * fuzzing cannot go on (an unknown pass, an unwritable out_dir, fork
 * failing); failures of seeds are in r. Clear r with pl_fuzz_result_clear. */
bool pl_fuzz_run          (const PlFuzzOptions *o, PlFuzzResult *r, GError **error);
void pl_fuzz_result_clear (PlFuzzResult *r);

G_END_DECLS
