/* cli-exec.h — what `passlab-cli exec` (cli-exec.c) shares with
 * `passlab-cli bench` (cli-bench.c): applying a pipeline before running,
 * and the per-kernel table. */
#pragma once

#include "cli.h"
#include "runtime.h"

G_BEGIN_DECLS

/* cli-bench.c (the lead lists it in cli.h's command table too) */
int      pl_cli_bench             (int argc, char **argv);

/* A copy of g after the pipeline spec ("simplify,fuse-loops"; NULL or ""
 * for none) with params ("pass.key=value", NULL-terminated, may be NULL). */
PlGraph *pl_cli_apply_passes      (const PlGraph *g, const char *spec, char *const *params, GError **error);
/* g compiled for backend (kernels cached in cache_dir, NULL: the default;
 * one thread on the cpu: for callers that run many graphs side by side) and
 * run once on inputs: its outputs (pl_interp_free_outputs), or NULL with
 * the error prefixed "does not compile: " or "does not run: ". report may be NULL. */
PlTensor **pl_cli_run_once        (const PlGraph *g, PlBackend backend, const char *cache_dir, PlTensor **inputs,
                                   PlRunReport **report, GError **error);
/* "12.3 MiB" */
char    *pl_cli_human_bytes       (int64_t b);
/* The per-kernel table (kernel, ops fused, time median, bytes, achieved
 * GB/s) and the totals line. */
void     pl_cli_print_kernel_table (const PlRunReport *r);
/* Per conv / layout-transform kernel of g's run: the layout pass's predicted
 * time (calibration cache, else analytic) against the measured one. */
void     pl_cli_print_predicted    (const PlGraph *g, const PlRunReport *r);
/* Bytes every kernel moves, summed (inputs read once + outputs written once). */
int64_t  pl_cli_report_bytes      (const PlRunReport *r);

G_END_DECLS
