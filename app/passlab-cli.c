/* passlab-cli.c — the command-line tool's entry point: global options, the
 * command table, and the helpers every command shares (errors, option
 * parsing, loading a graph). Each command lives in a cli-*.c file. */
#define G_LOG_DOMAIN "passlab"

#include "cli.h"

#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "onnx-io.h"
#include "runtime.h"

#ifndef PASSLAB_VERSION
#define PASSLAB_VERSION "unknown"
#endif

typedef struct {
  const char   *name;
  PlCliCommand  run;
  const char   *usage;
  const char   *summary;
} CommandInfo;

static const CommandInfo commands[] = {
  { "info",        pl_cli_info,        "info FILE",
    "summary: ops, inputs/outputs, parameters, peak memory" },
  { "print",       pl_cli_print,       "print FILE",
    "print the graph in the .graph text format" },
  { "convert",     pl_cli_convert,     "convert FILE -o OUT.{graph,onnx,dot}",
    "convert between formats (by OUT's extension)" },
  { "exec",        pl_cli_exec,        "exec FILE [--backend reference|cpu|cuda] [--inputs F.pb ...]",
    "run the graph on a backend; per-kernel timings" },
  { "conformance", pl_cli_conformance, "conformance [--expect LIST] DIR...",
    "run ONNX backend test folders" },
  { "run",         pl_cli_run,         "run FILE --passes A,B,C | --script P.lua",
    "apply a pass pipeline, show what each step changed" },
  { "passes",      pl_cli_passes,      "passes",
    "list the passes and their parameters" },
  { "fuzz",        pl_cli_fuzz,        "fuzz [--graphs N] [--seed S] [--passes A,B]",
    "fuzz passes with random graphs; writes the smallest failing graph" },
  { "lua",         pl_cli_lua,         "lua [--timeout S] [--memory-limit MB] SCRIPT [ARGS...]",
    "run a Lua script with the passlab module" },
  { "timing",      pl_cli_timing,      "timing FILE [--passes A,B] [--top N]",
    "timing analysis: tensor arrival/required times and slack per edge" },
  { "bench",       pl_cli_bench,       "bench FILE [--backend B] [--variants none,loops,stitch]",
    "time a graph unfused, loop-fused and stitched" },
  { "tune",        pl_cli_tune,        "tune FILE [--node N|--all] [--layout L] [--trials N]",
    "tune the direct conv's tile: full vs pebble-pruned search" },
};

static void
print_usage (FILE *out)
{
  fprintf (out,
           "Usage: passlab-cli COMMAND [OPTION...] [ARGUMENT...]\n"
           "\n"
           "Commands:\n");
  for (size_t i = 0; i < G_N_ELEMENTS (commands); i++)
    fprintf (out, "  %-40s %s\n", commands[i].usage, commands[i].summary);
  fprintf (out,
           "  %-40s %s\n"
           "\n"
           "Options:\n"
           "  -h, --help       show this help\n"
           "  -V, --version    show the version\n"
           "\n"
           "FILE is a .onnx model or a .graph text file. 'passlab-cli COMMAND --help'\n"
           "describes a command's options.\n",
           "help [COMMAND]", "show this help, or a command's");
}

static const CommandInfo *
find_command (const char *name)
{
  for (size_t i = 0; i < G_N_ELEMENTS (commands); i++)
    if (strcmp (commands[i].name, name) == 0)
      return &commands[i];
  return NULL;
}

/* Runs cmd with argv[0] "passlab-cli <cmd>", which GOption uses as the
 * program name in --help and error messages. */
static int
run_command (const CommandInfo *cmd, int argc, char **argv)
{
  g_autofree char *prg = g_strdup_printf ("passlab-cli %s", cmd->name);
  g_autofree char **args = g_new0 (char *, argc + 1);
  args[0] = prg;
  for (int i = 1; i < argc; i++)
    args[i] = argv[i];
  return cmd->run (argc, args);
}

/* The user's locale for messages, but C numbers ("0.5", as files and
 * scripts expect), and UTF-8 where the locale is plain C, so --help's
 * "[OPTION…]" does not print as "[OPTION?]". */
static void
init_locale (void)
{
  setlocale (LC_ALL, "");
  setlocale (LC_NUMERIC, "C");
  if (!g_get_charset (NULL))
    setlocale (LC_CTYPE, "C.UTF-8");
}

int
main (int argc, char **argv)
{
  pl_runtime_init_process (argv);
  init_locale ();
  if (argc < 2)
    {
      print_usage (stderr);
      return 1;
    }
  const char *first = argv[1];

  if (strcmp (first, "--version") == 0 || strcmp (first, "-V") == 0
      || strcmp (first, "version") == 0)
    {
      printf ("passlab-cli %s\n", PASSLAB_VERSION);
      return 0;
    }
  if (strcmp (first, "--help") == 0 || strcmp (first, "-h") == 0
      || (strcmp (first, "help") == 0 && argc == 2))
    {
      print_usage (stdout);
      return 0;
    }
  if (strcmp (first, "help") == 0)
    {
      const CommandInfo *cmd = find_command (argv[2]);
      if (cmd == NULL)
        return pl_cli_fail ("unknown command '%s' (see passlab-cli --help)", argv[2]);
      pl_ops_init ();
      char *help_argv[] = { argv[2], (char *) "--help", NULL };
      return run_command (cmd, 2, help_argv);
    }

  const CommandInfo *cmd = find_command (first);
  if (cmd == NULL)
    return pl_cli_fail ("unknown command '%s' (see passlab-cli --help)", first);
  pl_ops_init ();
  return run_command (cmd, argc - 1, argv + 1);
}

/* --- shared helpers ------------------------------------------------------- */

int
pl_cli_fail (const char *format, ...)
{
  va_list args;
  va_start (args, format);
  g_autofree char *message = g_strdup_vprintf (format, args);
  va_end (args);
  fflush (stdout);
  fprintf (stderr, "passlab-cli: %s\n", message);
  return 1;
}

int
pl_cli_fail_error (const GError *error)
{
  return pl_cli_fail ("%s", error != NULL ? error->message : "unknown error");
}

GOptionContext *
pl_cli_context (const char *parameter, const char *summary, const GOptionEntry *entries)
{
  GOptionContext *ctx = g_option_context_new (parameter);
  g_option_context_set_summary (ctx, summary);
  if (entries != NULL)
    g_option_context_add_main_entries (ctx, entries, NULL);
  return ctx;
}

bool
pl_cli_parse (GOptionContext *ctx, int *argc, char ***argv)
{
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, argc, argv, &error))
    {
      pl_cli_fail ("%s (see '%s --help')", error->message, (*argv)[0]);
      return false;
    }
  return true;
}

PlGraph *
pl_cli_load (const char *path, GError **error)
{
  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "%s: no such file", path);
      return NULL;
    }
  if (g_file_test (path, G_FILE_TEST_IS_DIR))
    {
      g_set_error (error, PL_ERROR, PL_ERROR_IO, "%s: is a directory", path);
      return NULL;
    }
  return pl_graph_load (path, error);
}
