/* pl-lua.h — embedding Lua 5.4: one PlLua is one Lua state with the
 * `passlab` module (require "passlab"), a memory limit, a time limit and a
 * cancel flag, and a print callback, so the workbench can run user scripts
 * without letting them crash or hang it, and the CLI can run them as the
 * `lua` interpreter does.
 *
 * Every call from C into Lua is protected: errors come back as a GError in
 * the PL_LUA_ERROR domain whose message reads
 *     script.lua:12: message
 *     stack traceback:
 *         ...
 * pl_lua_error_line() reads the line (12) back for an editor to highlight.
 *
 * A PlLua is used from one thread at a time (calls lock it); only
 * pl_lua_cancel() may be called from any thread while a script runs. Passes
 * registered by a script (passlab.register_pass) call back into the state
 * that registered them, and are unregistered by pl_lua_free().
 *
 * The Lua API itself (graphs, nodes, values, passlab.run, ...) is described
 * at the top of lua-graph.c and lua-passlab.c; data/pipelines/ has examples.
 */
#pragma once

#include "pass-manager.h"

G_BEGIN_DECLS

typedef struct _PlLua PlLua;

/* Receives everything the script prints (print, and io.write when a
 * callback is set); text is one print's line with its "\n". */
typedef void (*PlLuaPrintFunc) (const char *text, gpointer user_data);

typedef struct {
  PlLuaPrintFunc print;         /* NULL: write to stdout */
  gpointer       print_data;
  size_t         memory_limit;  /* bytes the Lua heap may use; 0: no limit */
  double         timeout_s;     /* seconds one call from C into Lua may run; 0: no limit */
  bool           allow_exit;    /* os.exit ends the process (the CLI); otherwise it raises an error */
} PlLuaOptions;

#define PL_LUA_ERROR (pl_lua_error_quark ())
GQuark pl_lua_error_quark (void);

typedef enum {
  PL_LUA_ERROR_SYNTAX,      /* the script does not compile */
  PL_LUA_ERROR_RUNTIME,     /* an error raised while it ran */
  PL_LUA_ERROR_MEMORY,      /* it passed the memory limit */
  PL_LUA_ERROR_INTERRUPTED, /* pl_lua_cancel() */
  PL_LUA_ERROR_TIMEOUT,     /* it passed the time limit */
  PL_LUA_ERROR_IO,          /* the script file cannot be read */
} PlLuaErrorCode;

void        pl_lua_options_init       (PlLuaOptions *o);
/* A new state with the standard libraries and `passlab`; o may be NULL. */
PlLua      *pl_lua_new                (const PlLuaOptions *o);
/* Closes the state and unregisters the passes it registered. No pipeline
 * using those passes may be running then (in another thread). */
void        pl_lua_free               (PlLua *L);

/* Runs a script file as `lua path args...` does: the global `arg` holds
 * arg[0] = path, arg[1..argc] = argv, and the chunk receives argv as `...`. */
bool        pl_lua_run_file           (PlLua *L, const char *path, char **argv, int argc, GError **error);
/* Runs code (the global `arg` is nil). chunkname names it in messages
 * ("pipeline.lua"); NULL: "script". */
bool        pl_lua_run_string         (PlLua *L, const char *code, const char *chunkname, GError **error);

/* Makes the running script (or Lua pass) fail with "interrupted" at its next
 * Lua instruction; callable from any thread. Each run from C resets it. */
void        pl_lua_cancel             (PlLua *L);
/* Limits for the next runs (see PlLuaOptions). */
void        pl_lua_set_limits         (PlLua *L, size_t memory_limit, double timeout_s);
/* Bytes the Lua heap uses now. */
size_t      pl_lua_memory_used        (PlLua *L);

/* The line of the script an error points at (the first "name:LINE:" of
 * its message), or -1. */
int         pl_lua_error_line         (const GError *error);

/* The history of the last passlab.run the scripts of this state made, or
 * NULL; the caller owns it (pl_history_free). Its graphs are no longer
 * reachable from Lua: handles to them read "invalid graph reference". */
PlHistory  *pl_lua_take_last_history  (PlLua *L);

/* Runs a pipeline script on input: a script that returns either a pipeline
 * table as passlab.run takes it ({"simplify", {"fuse-loops", max_ops=16}})
 * — applied here with options, like pl_pipeline_run — or a function(g,
 * options) that returns the history of its own passlab.run calls (g is a
 * copy of input; options as a table {check=, seed=, tolerance=, sym_size=}).
 * The global `arg` is nil, so a script can tell it is not run on its own.
 * Returns NULL with an error if the script fails; otherwise the history,
 * with error set as well when a step failed (see pl_pipeline_run). */
PlHistory  *pl_lua_run_pipeline_file  (PlLua *L, const char *path, const PlGraph *input,
                                       const PlRunOptions *options, GError **error);
PlHistory  *pl_lua_run_pipeline_string (PlLua *L, const char *code, const char *chunkname,
                                        const PlGraph *input, const PlRunOptions *options, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PlLua, pl_lua_free)

G_END_DECLS
