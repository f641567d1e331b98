/* test-lua.c — the Lua embedding (scripting/): the API scripts in
 * tests/lua/<name>.lua (each checks itself and raises on a mismatch), errors
 * with their line and traceback, wrong argument types, interruption by time
 * limit and by pl_lua_cancel() from another thread, the memory limit, Lua
 * passes that fail or try to break the IR inside a pipeline, handing
 * histories to C, pipeline scripts, and every sample in data/pipelines/. */
#define G_LOG_DOMAIN "passlab"

#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "pass-manager.h"
#include "pl-lua.h"
#include "text-format.h"

static const char *
source_dir (void)
{
  const char *d = g_getenv ("PASSLAB_SOURCE_DIR");
  return d ? d : ".";
}

/* Collects what scripts print. */
static void
capture (const char *text, gpointer user_data)
{
  g_string_append (user_data, text);
}

static PlLua *
new_lua (GString *out, size_t memory_limit, double timeout_s)
{
  PlLuaOptions o;
  pl_lua_options_init (&o);
  o.print = capture;
  o.print_data = out;
  o.memory_limit = memory_limit;
  o.timeout_s = timeout_s;
  return pl_lua_new (&o);
}

/* Runs tests/lua/<name> with arg[1] = the source dir, arg[2] = a scratch dir. */
static void
run_api_script (gconstpointer data)
{
  const char *name = data;
  g_autofree char *path = g_build_filename (source_dir (), "tests", "lua", name, NULL);
  g_autofree char *tmp = g_dir_make_tmp ("passlab-lua-XXXXXX", NULL);
  g_autoptr (GString) out = g_string_new (NULL);
  g_autoptr (PlLua) L = new_lua (out, 0, 60);
  char *argv[] = { (char *) source_dir (), tmp };
  g_autoptr (GError) error = NULL;
  bool ok = pl_lua_run_file (L, path, argv, 2, &error);
  if (g_test_verbose ())
    g_printerr ("%s", out->str);
  g_assert_no_error (error);
  g_assert_true (ok);
  g_autofree char *want = g_strdup_printf ("%.*s ok\n", (int) (strlen (name) - 4), name);
  g_assert_true (g_str_has_suffix (out->str, want));
  g_autoptr (GDir) dir = g_dir_open (tmp, 0, NULL);
  for (const char *f; dir && (f = g_dir_read_name (dir));)
    {
      g_autofree char *p = g_build_filename (tmp, f, NULL);
      g_unlink (p);
    }
  g_rmdir (tmp);
}

/* Runs code on a fresh state; returns the error (NULL on success) and what it printed. */
static GError *
run_code (const char *code, size_t memory_limit, double timeout_s, GString *out)
{
  PlLua *L = new_lua (out, memory_limit, timeout_s);
  GError *error = NULL;
  pl_lua_run_string (L, code, "t.lua", &error);
  pl_lua_free (L);
  return error;
}

static void
assert_error (GError *error, int code, const char *prefix, int line)
{
  g_assert_nonnull (error);
  if (!g_str_has_prefix (error->message, prefix))
    g_error ("message '%s' does not start with '%s'", error->message, prefix);
  g_assert_error (error, PL_LUA_ERROR, code);
  g_assert_cmpint (pl_lua_error_line (error), ==, line);
}

static void
test_error_line_traceback (void)
{
  g_autoptr (GString) out = g_string_new (NULL);
  g_autoptr (GError) e1 = run_code ("local x = 1\n\nerror ('boom')\n", 0, 0, out);
  assert_error (e1, PL_LUA_ERROR_RUNTIME, "t.lua:3: boom\nstack traceback:\n", 3);
  g_assert_nonnull (strstr (e1->message, "t.lua:3: in main chunk"));

  /* An error inside a function points at the line that raised it. */
  g_autoptr (GError) e2 = run_code ("local function f ()\n  return nil + 1\nend\n\nf ()\n", 0, 0, out);
  assert_error (e2, PL_LUA_ERROR_RUNTIME, "t.lua:2: attempt to perform arithmetic on a nil value", 2);
  g_assert_nonnull (strstr (e2->message, "t.lua:5: in main chunk"));

  /* Errors without a position get the script's line. */
  g_autoptr (GError) e3 = run_code ("local a = 1\nerror ({})\n", 0, 0, out);
  assert_error (e3, PL_LUA_ERROR_RUNTIME, "t.lua:2: (error object is a table value)", 2);
  g_autoptr (GError) e4 = run_code ("\n\n\nerror ('plain', 0)\n", 0, 0, out);
  assert_error (e4, PL_LUA_ERROR_RUNTIME, "t.lua:4: plain", 4);

  /* Syntax errors. */
  g_autoptr (GError) e5 = run_code ("x = = 1\n", 0, 0, out);
  assert_error (e5, PL_LUA_ERROR_SYNTAX, "t.lua:1: unexpected symbol near '='", 1);
  g_autoptr (GError) e6 = run_code ("local a\nlocal b = (\n", 0, 0, out);
  assert_error (e6, PL_LUA_ERROR_SYNTAX, "t.lua:3: unexpected symbol near <eof>", 3);

  /* A missing file. */
  g_autoptr (PlLua) L = new_lua (out, 0, 0);
  g_autoptr (GError) e7 = NULL;
  g_assert_false (pl_lua_run_file (L, "/nonexistent/x.lua", NULL, 0, &e7));
  g_assert_error (e7, PL_LUA_ERROR, PL_LUA_ERROR_IO);
  g_assert_nonnull (strstr (e7->message, "cannot open /nonexistent/x.lua"));
}

static void
test_wrong_argument (void)
{
  g_autoptr (GString) out = g_string_new (NULL);
  g_autoptr (GError) e1 = run_code ("local passlab = require 'passlab'\n\nlocal h = passlab.run (5, {})\n", 0, 0, out);
  assert_error (e1, PL_LUA_ERROR_RUNTIME,
                "t.lua:3: bad argument #1 to 'run' (passlab.graph expected, got number)", 3);
  g_autoptr (GError) e2 = run_code ("local passlab = require 'passlab'\nlocal g = passlab.parse "
                                    "('graph t { input x: f32[2]\\n y = Relu(x)\\n output y }')\n"
                                    "print (g:node ('y').op)\ng:node ({})\n", 0, 0, out);
  assert_error (e2, PL_LUA_ERROR_RUNTIME, "t.lua:4: bad argument #1 to 'node' (string expected, got table)", 4);
  g_assert_cmpstr (out->str, ==, "Relu\n");
}

static void
test_invalid_node_reference (void)
{
  g_autoptr (GString) out = g_string_new (NULL);
  g_autoptr (GError) e = run_code ("local passlab = require 'passlab'\n"
                                   "local g = passlab.parse ('graph t { input x: f32[2]\\n y = Relu(x)\\n"
                                   " z = Neg(x)\\n output y }')\n"
                                   "local z = g:node ('z')\n"
                                   "g:remove_node (z)\n"
                                   "print (z.op)\n", 0, 0, out);
  assert_error (e, PL_LUA_ERROR_RUNTIME, "t.lua:5: invalid node reference", 5);
}

static void
test_timeout (void)
{
  g_autoptr (GString) out = g_string_new (NULL);
  PlLua *L = new_lua (out, 0, 0.2);
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (GError) e = NULL;
  g_assert_false (pl_lua_run_string (L, "local n = 0\nwhile true do\n  n = n + 1\nend\n", "t.lua", &e));
  double s = (g_get_monotonic_time () - t0) / 1e6;
  assert_error (e, PL_LUA_ERROR_TIMEOUT, "t.lua:", 3);
  g_assert_nonnull (strstr (e->message, "interrupted: the time limit of 0.2 s was reached"));
  g_assert_cmpfloat (s, >=, 0.19);
  g_assert_cmpfloat (s, <, 5);
  /* The limit applies per run: the next script starts a fresh one. */
  g_autoptr (GError) e2 = NULL;
  g_assert_true (pl_lua_run_string (L, "print (1 + 1)", "t.lua", &e2));
  g_assert_no_error (e2);
  g_assert_cmpstr (out->str, ==, "2\n");
  pl_lua_free (L);

  /* A limit past gint64 microseconds is no limit, not one already passed. */
  const double huge[] = { 1e300, INFINITY, NAN };
  for (guint i = 0; i < G_N_ELEMENTS (huge); i++)
    {
      g_string_truncate (out, 0);
      g_autoptr (GError) e3 = run_code ("local n = 0\nfor i = 1, 100000 do n = n + i end\nprint (n)\n", 0, huge[i], out);
      g_assert_no_error (e3);
      g_assert_cmpstr (out->str, ==, "5000050000\n");
    }
}

static gpointer
cancel_later (gpointer data)
{
  g_usleep (100 * 1000);
  pl_lua_cancel (data);
  return NULL;
}

static void
test_cancel_from_thread (void)
{
  g_autoptr (GString) out = g_string_new (NULL);
  PlLua *L = new_lua (out, 0, 0);
  GThread *t = g_thread_new ("cancel", cancel_later, L);
  g_autoptr (GError) e = NULL;
  /* A script that swallows errors is still stopped: the flag stays set. */
  g_assert_false (pl_lua_run_string (L, "while true do\n  pcall (function () while true do end end)\nend\n",
                                     "t.lua", &e));
  g_thread_join (t);
  g_assert_error (e, PL_LUA_ERROR, PL_LUA_ERROR_INTERRUPTED);
  g_assert_nonnull (strstr (e->message, "interrupted"));
  g_assert_cmpint (pl_lua_error_line (e), >=, 1);
  g_autoptr (GError) e2 = NULL;
  g_assert_true (pl_lua_run_string (L, "print ('after')", "t.lua", &e2));
  g_assert_cmpstr (out->str, ==, "after\n");
  pl_lua_free (L);
}

static void
test_memory_limit (void)
{
  g_autoptr (GString) out = g_string_new (NULL);
  size_t limit = 32u << 20;
  PlLua *L = new_lua (out, limit, 0);
  g_autoptr (GError) e = NULL;
  g_assert_false (pl_lua_run_string (L, "local t = {}\nfor i = 1, 1e9 do t[i] = ('x'):rep (100) .. i end\n",
                                     "t.lua", &e));
  g_assert_error (e, PL_LUA_ERROR, PL_LUA_ERROR_MEMORY);
  g_assert_cmpstr (e->message, ==, "not enough memory (the script may use 32 MiB)");
  g_assert_cmpuint (pl_lua_memory_used (L), <, 4u << 20);  /* the bomb was collected */
  g_autoptr (GError) e2 = NULL;
  g_assert_false (pl_lua_run_string (L, "local s = ('y'):rep (1 << 30)", "t.lua", &e2));
  g_assert_error (e2, PL_LUA_ERROR, PL_LUA_ERROR_MEMORY);
  /* The state still works, with room for ordinary scripts. */
  g_autoptr (GError) e3 = NULL;
  g_assert_true (pl_lua_run_string (L, "local t = {}\nfor i = 1, 1000 do t[i] = ('z'):rep (1000) .. i end\n"
                                       "print (#t)", "t.lua", &e3));
  g_assert_no_error (e3);
  g_assert_cmpstr (out->str, ==, "1000\n");
  pl_lua_free (L);
}

static void
test_output_and_sandbox (void)
{
  g_autoptr (GString) out = g_string_new (NULL);
  g_autoptr (GError) e1 = run_code ("print (1, 'a', nil, 2.5)\nio.write ('x', 2, '\\n')\n", 0, 0, out);
  g_assert_no_error (e1);
  g_assert_cmpstr (out->str, ==, "1\ta\tnil\t2.5\nx2\n");
  g_autoptr (GError) e2 = run_code ("os.exit (3)", 0, 0, out);
  g_assert_nonnull (e2);
  g_assert_nonnull (strstr (e2->message, "os.exit is not available here"));
  g_string_truncate (out, 0);
  g_autoptr (GError) e3 = run_code ("print (load (string.dump (function () end)))", 0, 0, out);
  g_assert_no_error (e3);
  g_assert_nonnull (strstr (out->str, "attempt to load a binary chunk"));
}

static const char history_script[] =
  "local passlab = require 'passlab'\n"
  "local g = passlab.load (arg and arg[1] or PATH)\n"
  "h = passlab.run (g, { 'simplify', 'fuse-loops' }, { check = true })\n"
  "step = h[2].graph\n"
  "print (#step)\n";

static char *
data_path (const char *dir, const char *name)
{
  return g_build_filename (source_dir (), "data", dir, name, NULL);
}

static void
test_take_last_history (void)
{
  g_autoptr (GString) out = g_string_new (NULL);
  g_autoptr (PlLua) L = new_lua (out, 0, 0);
  g_autofree char *path = data_path ("graphs", "layer_norm.graph");
  g_autofree char *code = g_strdup_printf ("PATH = '%s'\n%s", path, history_script);
  g_autoptr (GError) e = NULL;
  g_assert_null (pl_lua_take_last_history (L));
  g_assert_true (pl_lua_run_string (L, code, "t.lua", &e));
  g_assert_no_error (e);
  g_autoptr (PlHistory) h = pl_lua_take_last_history (L);
  g_assert_nonnull (h);
  g_assert_null (pl_lua_take_last_history (L));
  g_assert_cmpint (pl_history_n_steps (h), ==, 3);
  g_assert_cmpstr (pl_history_step (h, 1)->pass_name, ==, "simplify");
  g_assert_true (pl_history_step (h, 2)->checked);
  g_autofree char *printed = g_strdup_printf ("%d\n", pl_history_step (h, 2)->graph->nodes->len);
  g_assert_cmpstr (out->str, ==, printed);
  /* The script's handles into the history are now invalid. */
  g_autoptr (GError) e2 = NULL;
  g_assert_false (pl_lua_run_string (L, "return #step", "u.lua", &e2));
  g_assert_nonnull (strstr (e2->message, "u.lua:1: invalid graph reference"));
  g_autoptr (GError) e3 = NULL;
  g_assert_false (pl_lua_run_string (L, "return h[0].graph:text ()", "u.lua", &e3));
  g_assert_nonnull (strstr (e3->message, "invalid graph reference"));
}

static PlGraph *
load_graph (const char *name)
{
  g_autofree char *path = data_path ("graphs", name);
  g_autoptr (GError) error = NULL;
  PlGraph *g = pl_text_load (path, &error);
  g_assert_no_error (error);
  return g;
}

static void
test_pipeline_scripts (void)
{
  g_autoptr (GString) out = g_string_new (NULL);
  g_autoptr (PlLua) L = new_lua (out, 0, 0);
  g_autoptr (PlGraph) g = load_graph ("layer_norm.graph");
  PlRunOptions options;
  pl_run_options_init (&options);
  options.check = true;

  /* A pipeline table, run with the caller's options. */
  g_autoptr (GError) e1 = NULL;
  g_autoptr (PlHistory) h1 = pl_lua_run_pipeline_string (L, "return { 'simplify', { 'fuse-loops', max_ops = 2 } }",
                                                         "p.lua", g, &options, &e1);
  g_assert_no_error (e1);
  g_assert_cmpint (pl_history_n_steps (h1), ==, 3);
  g_assert_cmpstr (pl_history_step (h1, 2)->args_text, ==, "max_ops=2");
  g_assert_true (pl_history_step (h1, 2)->checked);  /* fuse-loops changed the graph */

  /* A function (g, options) that runs its own pipeline. */
  g_autoptr (GError) e2 = NULL;
  g_autoptr (PlHistory) h2 = pl_lua_run_pipeline_string (
      L, "return function (g, o)\n  assert (o.check == true)\n"
         "  return require ('passlab').run (g, { 'decompose', 'fuse-loops' }, o)\nend", "p.lua", g, &options, &e2);
  g_assert_no_error (e2);
  g_assert_cmpint (pl_history_n_steps (h2), ==, 3);
  g_assert_cmpstr (pl_history_step (h2, 1)->pass_name, ==, "decompose");

  /* Wrong results. */
  g_autoptr (GError) e3 = NULL;
  g_assert_null (pl_lua_run_pipeline_string (L, "return 5", "p.lua", g, &options, &e3));
  g_assert_nonnull (strstr (e3->message, "returns a pipeline table or a function (g, options), not a number"));
  g_autoptr (GError) e4 = NULL;
  g_assert_null (pl_lua_run_pipeline_string (L, "return function (g) end", "p.lua", g, &options, &e4));
  g_assert_nonnull (strstr (e4->message, "returned a nil, not the history passlab.run returns"));
  g_autoptr (GError) e5 = NULL;
  g_assert_null (pl_lua_run_pipeline_string (L, "return { 'simplify', 'nope' }", "p.lua", g, &options, &e5));
  g_assert_nonnull (strstr (e5->message, "pipeline entry 2: unknown pass 'nope'"));

  /* A table naming a Lua pass the script registered: C runs it after the script ended. */
  g_autoptr (GError) e6 = NULL;
  g_autoptr (PlHistory) h6 = pl_lua_run_pipeline_string (
      L, "local passlab = require 'passlab'\n"
         "passlab.register_pass { name = 'test-count', run = function (g, p)\n"
         "  local n = 0 for _ in g:nodes () do n = n + 1 end\n"
         "  return false, 'saw ' .. n .. ' nodes'\nend }\n"
         "return { 'test-count', 'simplify' }", "p.lua", g, &options, &e6);
  g_assert_no_error (e6);
  g_assert_cmpint (pl_history_n_steps (h6), ==, 3);
  g_autofree char *want = g_strdup_printf ("saw %u nodes\n", g->nodes->len);
  g_assert_cmpstr (pl_history_step (h6, 1)->report, ==, want);
  g_assert_false (pl_history_step (h6, 1)->changed);
}

/* A Lua pass run by a C pipeline: errors carry the pass's line; the time
 * limit stops it; pl_lua_free unregisters it. */
static void
test_lua_pass_from_c (void)
{
  g_autoptr (GString) out = g_string_new (NULL);
  PlLua *L = new_lua (out, 0, 0.3);
  g_autoptr (GError) e = NULL;
  g_assert_true (pl_lua_run_string (L,
                                    "local passlab = require 'passlab'\n"
                                    "passlab.register_pass { name = 'test-c-fail', run = function (g)\n"
                                    "  error ('failed on purpose')\nend }\n"
                                    "passlab.register_pass { name = 'test-c-loop', run = function (g)\n"
                                    "  while true do end\nend }\n",
                                    "passes.lua", &e));
  g_assert_no_error (e);
  g_assert_nonnull (pl_pass_find ("test-c-fail"));
  g_autoptr (PlGraph) g = load_graph ("softmax.graph");

  g_autoptr (GError) e1 = NULL;
  PlPipeline *p1 = pl_pipeline_parse ("simplify,test-c-fail", &e1);
  g_assert_no_error (e1);
  g_autoptr (PlHistory) h1 = pl_pipeline_run (g, p1, NULL, &e1);
  g_assert_nonnull (e1);
  g_assert_cmpint (pl_history_n_steps (h1), ==, 2);
  g_assert_true (g_str_has_prefix (h1->error, "pass test-c-fail failed: passes.lua:3: failed on purpose\nstack traceback:"));

  g_autoptr (GError) e2 = NULL;
  PlPipeline *p2 = pl_pipeline_parse ("test-c-loop", &e2);
  gint64 t0 = g_get_monotonic_time ();
  g_autoptr (PlHistory) h2 = pl_pipeline_run (g, p2, NULL, &e2);
  g_assert_cmpfloat ((g_get_monotonic_time () - t0) / 1e6, <, 5);
  g_assert_nonnull (strstr (h2->error, "passes.lua:6: interrupted: the time limit of 0.3 s was reached"));

  /* Pipelines point at their passes: free them before the passes go. */
  pl_pipeline_free (p1);
  pl_pipeline_free (p2);
  pl_lua_free (L);
  g_assert_null (pl_pass_find ("test-c-fail"));
  g_assert_null (pl_pass_find ("test-c-loop"));
}

/* pl_lua_cancel reaches a Lua pass running inside passlab.run. */
static void
test_cancel_inside_pass (void)
{
  g_autoptr (GString) out = g_string_new (NULL);
  PlLua *L = new_lua (out, 0, 0);
  GThread *t = g_thread_new ("cancel", cancel_later, L);
  g_autoptr (GError) e = NULL;
  g_assert_false (pl_lua_run_string (L,
                                     "local passlab = require 'passlab'\n"
                                     "passlab.register_pass { name = 'test-spin', run = function (g)\n"
                                     "  while true do end\nend }\n"
                                     "local h = passlab.run (passlab.parse ('graph t { input x: f32[2]\\n"
                                     " y = Relu(x)\\n output y }'), { 'test-spin' })\n"
                                     "print ('not reached')\n",
                                     "t.lua", &e));
  g_thread_join (t);
  g_assert_error (e, PL_LUA_ERROR, PL_LUA_ERROR_INTERRUPTED);
  g_assert_cmpint (pl_lua_error_line (e), ==, 5);
  g_assert_cmpstr (out->str, ==, "");
  pl_lua_free (L);
}

/* Every sample in data/pipelines/ runs to the end. */
static void
test_samples (void)
{
  g_autofree char *dir = g_build_filename (source_dir (), "data", "pipelines", NULL);
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  g_assert_nonnull (d);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  for (const char *f; (f = g_dir_read_name (d));)
    if (g_str_has_suffix (f, ".lua"))
      g_ptr_array_add (names, g_strdup (f));
  g_assert_cmpuint (names->len, >=, 7);
  for (guint i = 0; i < names->len; i++)
    {
      g_autofree char *path = g_build_filename (dir, names->pdata[i], NULL);
      g_autoptr (GString) out = g_string_new (NULL);
      g_autoptr (PlLua) L = new_lua (out, 512u << 20, 120);
      g_autoptr (GError) e = NULL;
      bool ok = pl_lua_run_file (L, path, NULL, 0, &e);
      if (g_test_verbose ())
        g_printerr ("--- %s\n%s", (char *) names->pdata[i], out->str);
      if (!ok)
        g_error ("%s: %s", (char *) names->pdata[i], e->message);
      g_assert_cmpuint (out->len, >, 0);
    }
}

int
main (int argc, char **argv)
{
  pl_passes_init ();
  g_test_init (&argc, &argv, NULL);
  g_test_add_data_func ("/Passlab/Lua/api/graph", "graph_api.lua", run_api_script);
  g_test_add_data_func ("/Passlab/Lua/api/passlab", "passlab_api.lua", run_api_script);
  g_test_add_data_func ("/Passlab/Lua/api/robustness", "robustness.lua", run_api_script);
  g_test_add_func ("/Passlab/Lua/error/line-and-traceback", test_error_line_traceback);
  g_test_add_func ("/Passlab/Lua/error/wrong-argument", test_wrong_argument);
  g_test_add_func ("/Passlab/Lua/error/invalid-node-reference", test_invalid_node_reference);
  g_test_add_func ("/Passlab/Lua/limits/timeout", test_timeout);
  g_test_add_func ("/Passlab/Lua/limits/cancel-from-thread", test_cancel_from_thread);
  g_test_add_func ("/Passlab/Lua/limits/cancel-inside-pass", test_cancel_inside_pass);
  g_test_add_func ("/Passlab/Lua/limits/memory", test_memory_limit);
  g_test_add_func ("/Passlab/Lua/state/output-and-sandbox", test_output_and_sandbox);
  g_test_add_func ("/Passlab/Lua/history/take-last", test_take_last_history);
  g_test_add_func ("/Passlab/Lua/pipeline/scripts", test_pipeline_scripts);
  g_test_add_func ("/Passlab/Lua/pipeline/lua-pass-from-c", test_lua_pass_from_c);
  g_test_add_func ("/Passlab/Lua/samples", test_samples);
  return g_test_run ();
}
