/* pl-lua.c — the Lua state behind a PlLua: creation with a memory-limited
 * allocator and an instruction-count hook (cancel flag and time limit), the
 * protected call every entry from C goes through (message handler with a
 * traceback, errors as GError), running script files and strings, and
 * pipeline scripts for `passlab-cli run --script` and the workbench.
 *
 * Why each piece:
 * - The allocator refuses past the limit, so a runaway script gets Lua's
 *   "not enough memory" error (after an emergency collection) instead of
 *   taking the process down; the state stays usable.
 * - The count hook runs every HOOK_COUNT instructions: cheap enough to leave
 *   on, frequent enough that "while true do end" stops within microseconds.
 * - Lua raises errors with longjmp: everything that may raise runs inside
 *   lua_pcall, started by pl_lua_pcall() with only non-allocating pushes
 *   before it.
 */
#define G_LOG_DOMAIN "passlab"

#include "lua-private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOOK_COUNT 1000

G_DEFINE_QUARK (pl-lua-error-quark, pl_lua_error)

void
pl_lua_options_init (PlLuaOptions *o)
{
  memset (o, 0, sizeof *o);
}

PlLua *
pl_lua_get (lua_State *L)
{
  return *(PlLua **) lua_getextraspace (L);
}

/* --- limits ------------------------------------------------------------------------ */

static void *
limited_alloc (void *ud, void *ptr, size_t osize, size_t nsize)
{
  PlLua *pl = ud;
  size_t old = ptr ? osize : 0;
  if (nsize == 0)
    {
      free (ptr);
      pl->mem_used -= old;
      return NULL;
    }
  if (pl->mem_limit && nsize > old && pl->mem_used - old + nsize > pl->mem_limit)
    return NULL;
  void *p = realloc (ptr, nsize);
  if (p)
    pl->mem_used = pl->mem_used - old + nsize;
  return p;
}

static void
count_hook (lua_State *L, lua_Debug *ar)
{
  PlLua *pl = pl_lua_get (L);
  if (g_atomic_int_get (&pl->cancel))
    pl->interrupt = PL_LUA_ERROR_INTERRUPTED;
  else if (pl->deadline && g_get_monotonic_time () > pl->deadline)
    pl->interrupt = PL_LUA_ERROR_TIMEOUT;
  else
    return;
  /* From now on every instruction raises, so a script that catches the
   * error (pcall in a loop) cannot keep running; the next run resets it. */
  lua_sethook (L, count_hook, LUA_MASKCOUNT, 1);
  /* Level 0 is the running function: the message points at the loop. */
  luaL_where (L, 0);
  if (pl->interrupt == PL_LUA_ERROR_TIMEOUT)
    lua_pushfstring (L, "interrupted: the time limit of %f s was reached", pl->options.timeout_s);
  else
    lua_pushstring (L, "interrupted");
  lua_concat (L, 2);
  lua_error (L);
}

/* The monotonic time timeout_s from now, 0 for no limit. A limit of more
 * than a billion seconds (inf, 1e300) is none: converting it to
 * microseconds would overflow gint64, and the cast is undefined. */
static gint64
deadline_after (double timeout_s)
{
  if (!(timeout_s > 0) || timeout_s > 1e9)
    return 0;
  return g_get_monotonic_time () + (gint64) (timeout_s * G_USEC_PER_SEC);
}

void
pl_lua_cancel (PlLua *pl)
{
  g_return_if_fail (pl != NULL);
  g_atomic_int_set (&pl->cancel, 1);
}

void
pl_lua_set_limits (PlLua *pl, size_t memory_limit, double timeout_s)
{
  g_return_if_fail (pl != NULL);
  g_rec_mutex_lock (&pl->lock);
  pl->options.memory_limit = pl->mem_limit = memory_limit;
  pl->options.timeout_s = timeout_s;
  g_rec_mutex_unlock (&pl->lock);
}

size_t
pl_lua_memory_used (PlLua *pl)
{
  return pl->mem_used;
}

/* --- protected calls ------------------------------------------------------------------ */

/* Adds the traceback to an error, and makes its first line start with the
 * position in the script being run (pl->top_source) when the error was
 * raised elsewhere (a module, a C function called with a bad argument). */
static int
message_handler (lua_State *L)
{
  PlLua *pl = pl_lua_get (L);
  const char *msg = lua_tostring (L, 1);
  if (msg == NULL)
    {
      if (luaL_callmeta (L, 1, "__tostring") && lua_type (L, -1) == LUA_TSTRING)
        msg = lua_tostring (L, -1);
      else
        msg = lua_pushfstring (L, "(error object is a %s value)", luaL_typename (L, 1));
    }
  lua_Debug ar;
  for (int level = 1; pl->top_source && lua_getstack (L, level, &ar); level++)
    {
      lua_getinfo (L, "Sl", &ar);
      if (ar.currentline <= 0 || strcmp (ar.source, pl->top_source) != 0)
        continue;
      size_t n = strlen (ar.short_src);
      if (strncmp (msg, ar.short_src, n) != 0 || msg[n] != ':')
        msg = lua_pushfstring (L, "%s:%d: %s", ar.short_src, ar.currentline, msg);
      break;
    }
  luaL_traceback (L, L, msg, 1);
  return 1;
}

static void
set_error (PlLua *pl, int status, GError **error)
{
  lua_State *L = pl->L;
  const char *msg = lua_type (L, -1) == LUA_TSTRING ? lua_tostring (L, -1) : "(error object is not a string)";
  if (status == LUA_ERRMEM)
    {
      if (pl->mem_limit)
        g_set_error (error, PL_LUA_ERROR, PL_LUA_ERROR_MEMORY, "not enough memory (the script may use %zu MiB)",
                     pl->mem_limit >> 20);
      else
        g_set_error_literal (error, PL_LUA_ERROR, PL_LUA_ERROR_MEMORY, "not enough memory");
    }
  else if (pl->interrupt >= 0)
    g_set_error_literal (error, PL_LUA_ERROR, pl->interrupt, msg);
  else
    g_set_error_literal (error, PL_LUA_ERROR, PL_LUA_ERROR_RUNTIME, msg);
}

bool
pl_lua_pcall (PlLua *pl, lua_CFunction func, void *ud, const char *source, GError **error)
{
  lua_State *L = pl->L;
  g_rec_mutex_lock (&pl->lock);
  bool outer = pl->depth == 0;
  if (outer)
    {
      g_atomic_int_set (&pl->cancel, 0);
      pl->interrupt = -1;
      lua_sethook (L, count_hook, LUA_MASKCOUNT, HOOK_COUNT);
      pl->deadline = deadline_after (pl->options.timeout_s);
    }
  char *saved_source = pl->top_source;
  if (source)
    pl->top_source = g_strdup (source);
  pl->depth++;

  int base = lua_gettop (L);
  int status = LUA_ERRMEM;
  if (lua_checkstack (L, 3))
    {
      lua_pushcfunction (L, message_handler);
      lua_pushcfunction (L, func);
      lua_pushlightuserdata (L, ud);
      status = lua_pcall (L, 1, 0, base + 1);
    }
  if (status != LUA_OK)
    set_error (pl, status, error);
  lua_settop (L, base);

  pl->depth--;
  if (source)
    {
      g_free (pl->top_source);
      pl->top_source = saved_source;
    }
  if (outer)
    {
      pl->deadline = 0;
      /* Give back what a failed script held (a memory bomb's tables). */
      if (status != LUA_OK)
        lua_gc (L, LUA_GCCOLLECT);
    }
  g_rec_mutex_unlock (&pl->lock);
  return status == LUA_OK;
}

/* --- creating and freeing -------------------------------------------------------------- */

static void
emit (PlLua *pl, const char *text, size_t len)
{
  if (pl->options.print)
    pl->options.print (text, pl->options.print_data);
  else
    fwrite (text, 1, len, stdout);
}

/* print(...): as Lua's, through the print callback. */
static int
l_print (lua_State *L)
{
  int n = lua_gettop (L);
  luaL_Buffer b;
  luaL_buffinit (L, &b);
  for (int i = 1; i <= n; i++)
    {
      if (i > 1)
        luaL_addchar (&b, '\t');
      luaL_tolstring (L, i, NULL);
      luaL_addvalue (&b);
    }
  luaL_addchar (&b, '\n');
  luaL_pushresult (&b);
  size_t len;
  const char *text = lua_tolstring (L, -1, &len);
  emit (pl_lua_get (L), text, len);
  return 0;
}

/* io.write(...) when output goes to a callback: the same text, no newline. */
static int
l_io_write (lua_State *L)
{
  int n = lua_gettop (L);
  for (int i = 1; i <= n; i++)
    {
      size_t len;
      const char *s = luaL_checklstring (L, i, &len);
      emit (pl_lua_get (L), s, len);
    }
  lua_getglobal (L, "io");
  lua_getfield (L, -1, "stdout");
  return 1;
}

static int
l_no_exit (lua_State *L)
{
  return luaL_error (L, "os.exit is not available here (return from the script instead)");
}

/* Binary chunks are not verified by Lua and can crash it: scripts load text only. */
static const char text_only_loaders[] =
  "local load, loadfile = load, loadfile\n"
  "_G.load = function (chunk, name, mode, env) return load (chunk, name, 't', env) end\n"
  "_G.loadfile = function (name, mode, env) return loadfile (name, 't', env) end\n"
  "_G.dofile = function (name) local f = assert (loadfile (name, 't')) return f () end\n";

static int
init_state (lua_State *L)
{
  PlLua *pl = lua_touserdata (L, 1);
  luaL_openlibs (L);
  lua_register (L, "print", l_print);
  if (pl->options.print)
    {
      lua_getglobal (L, "io");
      lua_pushcfunction (L, l_io_write);
      lua_setfield (L, -2, "write");
      lua_pop (L, 1);
    }
  if (!pl->options.allow_exit)
    {
      lua_getglobal (L, "os");
      lua_pushcfunction (L, l_no_exit);
      lua_setfield (L, -2, "exit");
      lua_pop (L, 1);
    }
  if (luaL_loadstring (L, text_only_loaders) != LUA_OK)
    return lua_error (L);
  lua_call (L, 0, 0);
  pl_lua_graph_open (L);
  pl_lua_passlab_init (L);
  luaL_getsubtable (L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction (L, pl_lua_open_passlab);
  lua_setfield (L, -2, "passlab");
  return 0;
}

static int
panic (lua_State *L)
{
  g_error ("unprotected Lua error: %s", lua_tostring (L, -1));
  return 0;
}

PlLua *
pl_lua_new (const PlLuaOptions *o)
{
  PlLua *pl = g_new0 (PlLua, 1);
  if (o)
    pl->options = *o;
  pl->interrupt = -1;
  pl->last_history_ref = LUA_NOREF;
  pl->passes = g_ptr_array_new ();
  g_rec_mutex_init (&pl->lock);
  pl->L = lua_newstate (limited_alloc, pl);
  if (!pl->L)
    g_error ("cannot create a Lua state: out of memory");
  *(PlLua **) lua_getextraspace (pl->L) = pl;
  lua_atpanic (pl->L, panic);
  g_autoptr (GError) error = NULL;
  if (!pl_lua_pcall (pl, init_state, pl, NULL, &error))
    g_error ("cannot initialize Lua: %s", error->message);
  lua_sethook (pl->L, count_hook, LUA_MASKCOUNT, HOOK_COUNT);
  /* The limit applies to scripts, not to the standard libraries. */
  pl->mem_limit = pl->options.memory_limit;
  return pl;
}

void
pl_lua_free (PlLua *pl)
{
  if (!pl)
    return;
  g_rec_mutex_lock (&pl->lock);
  /* Close first: what Lua still holds (boxed pipelines) may point at our
   * passes; then unregister them. */
  pl->closing = true;
  pl->mem_limit = 0;
  lua_close (pl->L);
  pl_lua_passes_free (pl);
  g_free (pl->top_source);
  g_rec_mutex_unlock (&pl->lock);
  g_rec_mutex_clear (&pl->lock);
  g_free (pl);
}

/* --- running scripts ---------------------------------------------------------------------- */

typedef struct RunChunk RunChunk;
struct RunChunk {
  const char *path;        /* a file, or NULL for code */
  const char *code;
  const char *chunkname;   /* "=name" or "@path" */
  char      **argv;
  int         argc;
  /* Called with the chunk's first result on the stack, when set. */
  void      (*on_result) (lua_State *L, RunChunk *c);
  int         load_status; /* LUA_OK, or why loading failed (message in load_error) */
  char       *load_error;
};

static int
run_chunk (lua_State *L)
{
  RunChunk *c = lua_touserdata (L, 1);
  c->load_status = c->path ? luaL_loadfilex (L, c->path, "t")
                           : luaL_loadbufferx (L, c->code, strlen (c->code), c->chunkname, "t");
  if (c->load_status != LUA_OK)
    {
      c->load_error = g_strdup (lua_tostring (L, -1));
      return 0;
    }
  /* `arg` as the lua interpreter sets it for a script file; nil for code
   * and pipeline scripts (which can tell that they are not run on their own). */
  if (c->path && !c->on_result)
    {
      lua_createtable (L, c->argc, 1);
      lua_pushstring (L, c->path);
      lua_rawseti (L, -2, 0);
      for (int i = 0; i < c->argc; i++)
        lua_pushstring (L, c->argv[i]), lua_rawseti (L, -2, i + 1);
    }
  else
    lua_pushnil (L);
  lua_setglobal (L, "arg");
  luaL_checkstack (L, c->argc + 1, "too many arguments to the script");
  for (int i = 0; i < c->argc; i++)
    lua_pushstring (L, c->argv[i]);
  lua_call (L, c->argc, c->on_result ? 1 : 0);
  if (c->on_result)
    c->on_result (L, c);
  return 0;
}

/* "=name" for a chunk name given as "name" (Lua then prints it as is). */
static char *
chunk_source (const char *chunkname)
{
  if (!chunkname)
    return g_strdup ("=script");
  if (chunkname[0] == '=' || chunkname[0] == '@')
    return g_strdup (chunkname);
  return g_strconcat ("=", chunkname, NULL);
}

static bool
run (PlLua *pl, RunChunk *c, GError **error)
{
  bool ok = pl_lua_pcall (pl, run_chunk, c, c->chunkname, error);
  if (ok && c->load_status != LUA_OK)
    {
      int code = c->load_status == LUA_ERRSYNTAX ? PL_LUA_ERROR_SYNTAX
                 : c->load_status == LUA_ERRMEM  ? PL_LUA_ERROR_MEMORY
                                                 : PL_LUA_ERROR_IO;
      g_set_error_literal (error, PL_LUA_ERROR, code, c->load_error ? c->load_error : "cannot load the script");
      ok = false;
    }
  g_free (c->load_error);
  c->load_error = NULL;
  return ok;
}

bool
pl_lua_run_file (PlLua *pl, const char *path, char **argv, int argc, GError **error)
{
  g_return_val_if_fail (pl != NULL && path != NULL, false);
  g_autofree char *source = g_strconcat ("@", path, NULL);
  RunChunk c = { .path = path, .chunkname = source, .argv = argv, .argc = argc };
  return run (pl, &c, error);
}

bool
pl_lua_run_string (PlLua *pl, const char *code, const char *chunkname, GError **error)
{
  g_return_val_if_fail (pl != NULL && code != NULL, false);
  g_autofree char *source = chunk_source (chunkname);
  RunChunk c = { .code = code, .chunkname = source };
  return run (pl, &c, error);
}

int
pl_lua_error_line (const GError *error)
{
  if (!error || !error->message)
    return -1;
  const char *msg = error->message;
  const char *eol = strchr (msg, '\n');
  if (!eol)
    eol = msg + strlen (msg);
  for (const char *p = strchr (msg, ':'); p && p < eol; p = strchr (p + 1, ':'))
    {
      const char *d = p + 1;
      int line = 0;
      while (d < eol && g_ascii_isdigit (*d) && line < 100000000)
        line = line * 10 + (*d++ - '0');
      if (d > p + 1 && d < eol && *d == ':')
        return line;
    }
  return -1;
}

/* --- histories ------------------------------------------------------------------------------- */

static int
take_last (lua_State *L)
{
  PlLua *pl = pl_lua_get (L);
  PlHistory **out = lua_touserdata (L, 1);
  if (pl->last_history_ref == LUA_NOREF)
    return 0;
  lua_rawgeti (L, LUA_REGISTRYINDEX, pl->last_history_ref);
  PlLuaHistory *hb = luaL_checkudata (L, -1, PL_LUA_HISTORY_MT);
  *out = hb->history;
  hb->history = NULL;
  luaL_unref (L, LUA_REGISTRYINDEX, pl->last_history_ref);
  pl->last_history_ref = LUA_NOREF;
  return 0;
}

PlHistory *
pl_lua_take_last_history (PlLua *pl)
{
  g_return_val_if_fail (pl != NULL, NULL);
  PlHistory *h = NULL;
  pl_lua_pcall (pl, take_last, &h, NULL, NULL);
  return h;
}

/* --- pipeline scripts ------------------------------------------------------------------------- */

typedef struct {
  RunChunk            chunk;
  const PlGraph      *input;
  const PlRunOptions *options;
  PlPipeline         *pipeline;  /* the script returned a pipeline table */
  PlHistory          *history;   /* the script returned a function, which returned this */
} PipelineScript;

static void
push_run_options (lua_State *L, const PlRunOptions *o)
{
  lua_createtable (L, 0, 5);
  lua_pushboolean (L, o->check);
  lua_setfield (L, -2, "check");
  lua_pushinteger (L, o->seed);
  lua_setfield (L, -2, "seed");
  lua_pushnumber (L, o->tolerance);
  lua_setfield (L, -2, "tolerance");
  lua_pushinteger (L, o->sym_size);
  lua_setfield (L, -2, "sym_size");
  lua_pushboolean (L, o->stop_on_check_failure);
  lua_setfield (L, -2, "stop_on_check_failure");
}

static int
check_pipeline (lua_State *L)
{
  pl_lua_check_pipeline (L, 1);
  return 1;
}

static void
pipeline_result (lua_State *L, RunChunk *c)
{
  PipelineScript *ps = (PipelineScript *) c;
  int r = lua_gettop (L);
  if (lua_istable (L, r))
    {
      /* The chunk has returned: name the script in a bad entry's message. */
      lua_pushcfunction (L, check_pipeline);
      lua_pushvalue (L, r);
      if (lua_pcall (L, 1, 1, 0) != LUA_OK)
        luaL_error (L, "%s: %s", c->path ? c->path : c->chunkname + 1, lua_tostring (L, -1));
      ps->pipeline = pl_lua_box_steal (L, -1);
      return;
    }
  if (!lua_isfunction (L, r))
    luaL_error (L, "a pipeline script returns a pipeline table or a function (g, options), not a %s",
                luaL_typename (L, r));
  PlLuaGraph *lg = pl_lua_push_graph (L, PL_LUA_GRAPH_OWNED, NULL);
  lg->graph = pl_graph_copy (ps->input);
  push_run_options (L, ps->options);
  lua_call (L, 2, 1);
  ps->history = pl_lua_steal_history (L, -1);
  if (!ps->history)
    luaL_error (L, "the pipeline function returned a %s, not the history passlab.run returns",
                luaL_typename (L, -1));
}

static PlHistory *
run_pipeline_script (PlLua *pl, PipelineScript *ps, GError **error)
{
  PlRunOptions defaults;
  if (!ps->options)
    pl_run_options_init (&defaults), ps->options = &defaults;
  ps->chunk.on_result = pipeline_result;
  if (!run (pl, &ps->chunk, error))
    {
      pl_pipeline_free (ps->pipeline);
      pl_history_free (ps->history);
      return NULL;
    }
  if (ps->history)
    {
      if (ps->history->error)
        g_set_error_literal (error, PL_ERROR, PL_ERROR_FAILED, ps->history->error);
      return ps->history;
    }
  PlHistory *h = pl_pipeline_run (ps->input, ps->pipeline, ps->options, error);
  pl_pipeline_free (ps->pipeline);
  return h;
}

PlHistory *
pl_lua_run_pipeline_file (PlLua *pl, const char *path, const PlGraph *input, const PlRunOptions *options,
                          GError **error)
{
  g_return_val_if_fail (pl != NULL && path != NULL && input != NULL, NULL);
  g_autofree char *source = g_strconcat ("@", path, NULL);
  PipelineScript ps = { .chunk = { .path = path, .chunkname = source }, .input = input, .options = options };
  return run_pipeline_script (pl, &ps, error);
}

PlHistory *
pl_lua_run_pipeline_string (PlLua *pl, const char *code, const char *chunkname, const PlGraph *input,
                            const PlRunOptions *options, GError **error)
{
  g_return_val_if_fail (pl != NULL && code != NULL && input != NULL, NULL);
  g_autofree char *source = chunk_source (chunkname);
  PipelineScript ps = { .chunk = { .code = code, .chunkname = source }, .input = input, .options = options };
  return run_pipeline_script (pl, &ps, error);
}
