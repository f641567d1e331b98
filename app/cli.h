/* cli.h — what the passlab-cli command files share: one entry point per
 * command (argv[0] is the command's name) and the error/option helpers. */
#pragma once

#include <glib.h>
#include <stdbool.h>

#include "graph.h"

G_BEGIN_DECLS

/* The most OpenMP threads --threads takes: libgomp starts a team with
 * per-thread data on the stack (alloca), which 100000 threads overflow. */
#define PL_CLI_MAX_THREADS 1024

/* Every command returns the process exit status. */
typedef int (*PlCliCommand) (int argc, char **argv);

int pl_cli_info        (int argc, char **argv);   /* cli-info.c */
int pl_cli_print       (int argc, char **argv);   /* cli-info.c */
int pl_cli_convert     (int argc, char **argv);   /* cli-info.c */
int pl_cli_exec        (int argc, char **argv);   /* cli-exec.c */
int pl_cli_conformance (int argc, char **argv);   /* cli-conformance.c */
int pl_cli_run         (int argc, char **argv);   /* cli-run.c */
int pl_cli_passes      (int argc, char **argv);   /* cli-run.c */
int pl_cli_fuzz        (int argc, char **argv);   /* cli-fuzz.c */
int pl_cli_lua         (int argc, char **argv);   /* cli-lua.c */
int pl_cli_timing      (int argc, char **argv);   /* cli-timing.c */
int pl_cli_bench       (int argc, char **argv);   /* cli-bench.c */
int pl_cli_tune        (int argc, char **argv);   /* cli-tune.c */

/* Prints "passlab-cli: <message>" on stderr; returns 1 for `return pl_cli_fail (...)`. */
int  pl_cli_fail       (const char *format, ...) G_GNUC_PRINTF (1, 2);
/* Same, with the message of error. */
int  pl_cli_fail_error (const GError *error);

/* A GOptionContext for a command: "passlab-cli <command> <parameter>". */
GOptionContext *pl_cli_context (const char *parameter, const char *summary,
                                const GOptionEntry *entries);
/* Parses argv with ctx. --help prints and exits 0; a bad option prints an
 * error (exit status 1 from the caller). Leaves the positional arguments in
 * argc and argv (argv[0] is the command). */
bool pl_cli_parse      (GOptionContext *ctx, int *argc, char ***argv);

/* Loads a .graph/.onnx file (pl_graph_load), failing on a missing file with
 * a plain message. */
PlGraph *pl_cli_load   (const char *path, GError **error);

G_END_DECLS
