/* cli-lua.c — `passlab-cli lua`: runs a Lua script with the passlab module
 * (require "passlab"), as the `lua` interpreter runs one: arg[0] is the
 * script, arg[1..] its arguments. Scripts in data/pipelines/ show the API. */
#define G_LOG_DOMAIN "passlab"

#include "cli.h"

#include <stdio.h>

#include "pl-lua.h"



int
pl_cli_lua (int argc, char **argv)
{
  double timeout = 0;
  gint64 memory_mb = 0;
  const GOptionEntry entries[] = {
    { "timeout", 't', 0, G_OPTION_ARG_DOUBLE, &timeout, "Stop the script after SECONDS (default: no limit)", "SECONDS" },
    { "memory-limit", 'm', 0, G_OPTION_ARG_INT64, &memory_mb, "Memory the script's Lua heap may use (default: no limit)", "MB" },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx = pl_cli_context ("SCRIPT [ARGS...]",
                                                   "Run a Lua script with the passlab module (see data/pipelines/).",
                                                   entries);
  /* Options after SCRIPT belong to the script. */
  g_option_context_set_strict_posix (ctx, TRUE);
  if (!pl_cli_parse (ctx, &argc, &argv))
    return 1;
  if (argc < 2)
    return pl_cli_fail ("lua: expected a SCRIPT (see 'passlab-cli lua --help')");
  if (!(timeout >= 0))   /* NaN too */
    return pl_cli_fail ("lua: --timeout must be a number of seconds, 0 or more");
  if (memory_mb < 0 || memory_mb > ((gint64) 1 << 40))
    return pl_cli_fail ("lua: --memory-limit must be from 0 to %" G_GINT64_FORMAT " MB", (gint64) 1 << 40);
  if (!g_file_test (argv[1], G_FILE_TEST_IS_REGULAR))
    return pl_cli_fail ("%s: no such file", argv[1]);

  pl_passes_init ();
  PlLuaOptions options;
  pl_lua_options_init (&options);
  options.timeout_s = timeout;
  options.memory_limit = (size_t) memory_mb << 20;
  options.allow_exit = true;
  g_autoptr (PlLua) lua = pl_lua_new (&options);
  g_autoptr (GError) error = NULL;
  bool ok = pl_lua_run_file (lua, argv[1], argv + 2, argc - 2, &error);
  fflush (stdout);
  return ok ? 0 : pl_cli_fail_error (error);
}
