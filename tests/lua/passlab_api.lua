-- passlab_api.lua — the passlab module (lua-passlab.c): passes, pipelines
-- and their histories, Lua passes (including ones that fail or try to break
-- the IR), exec, check and diff. Driven by test-lua.c (arg[1] = the source
-- directory); every check raises on failure.
local passlab = require "passlab"

local function eq (got, want, what)
  if got ~= want then
    error (string.format ("%s: got %s, want %s", what, tostring (got), tostring (want)), 2)
  end
end

local function has (s, part, what)
  if not tostring (s):find (part, 1, true) then
    error (string.format ("%s: '%s' does not contain '%s'", what, tostring (s), part), 2)
  end
end

local function raises (pattern, f, ...)
  local ok, msg = pcall (f, ...)
  if ok then error ("expected an error matching '" .. pattern .. "'", 2) end
  has (msg, pattern, "error message")
end

local function near (got, want, what)
  if math.abs (got - want) > 1e-6 * math.max (1, math.abs (want)) then
    error (string.format ("%s: got %.9g, want %.9g", what, got, want), 2)
  end
end

local g = passlab.parse [[
graph small opset 17 {
  input x: f32[2, 3]
  input y: f32[3]
  const one: f32[] = 1.0
  const axes: i64[1] = [1]
  a = Mul(x, one)
  b = Add(a, y)
  c = Relu(b)
  s = ReduceSum(c, axes) {keepdims=0}
  output s
}
]]

-- passes (): the built-in ones with typed defaults
local by_name = {}
for _, p in ipairs (passlab.passes ()) do by_name[p.name] = p end
for _, name in ipairs { "simplify", "decompose", "reshape-sink", "fuse-library", "fuse-loops" } do
  assert (by_name[name] and by_name[name].builtin, name .. " is listed as built-in")
end
local fl = by_name["fuse-loops"]
eq (fl.params[1].name, "max_ops", "fuse-loops param 1")
eq (fl.params[1].type, "int", "max_ops type")
eq (fl.params[1].default, 32, "max_ops default")
eq (fl.params[2].default, true, "input_fusion default")
eq (by_name["decompose"].params[1].default, "all", "decompose.ops default")
assert (#fl.description > 0, "a description")

-- run: history[0] is the input, one step per pass
local h = passlab.run (g, { "simplify", { "fuse-loops", max_ops = 16 } }, { check = true, seed = 1 })
eq (#h, 2, "#h")
eq (h.error, nil, "h.error")
eq (h[0].index, 0, "h[0].index")
eq (h[0].pass, nil, "h[0].pass")
eq (h[0].stats.nodes, 4, "input nodes")
eq (h[0].stats.kernels, 4, "input kernels")
eq (h[0].diff, nil, "no diff for the input")
eq (h[1].pass, "simplify", "h[1].pass")
eq (h[1].params, "", "default params")
eq (h[1].changed, true, "simplify changed")
eq (h[1].stats.nodes, 3, "nodes after simplify")
eq (#h[1].diff.removed, 1, "simplify removed one node")
has (h[1].report, "algebraic identit", "simplify report")
eq (h[1].checked, true, "checked")
assert (h[1].max_rel_error <= 1e-6, "simplify keeps the values")
eq (#h[1].output_errors, 1, "one error per output")
eq (h[1].check_failed, false, "check passed")
assert (h[1].stats.time_ms >= 0, "time_ms")
eq (h[2].pass, "fuse-loops", "h[2].pass")
eq (h[2].params, "max_ops=16", "h[2].params")
eq (h[2].stats.kernels, 1, "one kernel after fusion")
eq (#h[2].graph, 1, "one fusion node")

-- step graphs are read-only and keep their history alive
local step1 = h[1].graph
raises ("read-only", step1.add_node, step1, { op = "Neg", inputs = { step1:value ("x") } })
raises ("read-only", function () step1:node ("b"):set_attr ("x", 1) end)
local editable = step1:copy ()
editable:add_node { op = "Neg", inputs = { editable:value ("x") } }
eq (#editable, 4, "a copy of a step is editable")
h = nil
collectgarbage ()
collectgarbage ()
eq (#step1, 3, "a step graph outlives its history table")
eq (step1:verify (), true, "and verifies")

-- exec: given inputs, computed by hand: s = rowsum (relu (x + y))
local out = passlab.exec (g, { inputs = { x = { shape = { 2, 3 }, data = { 1, -2, 3, -4, 5, -6 } },
                                          y = { 0.5, 0.5, 0.5 } } })
eq (out.s.dtype, "f32", "s.dtype")
eq (#out.s.shape, 1, "s rank")
eq (out.s.shape[1], 2, "s.shape")
near (out.s.data[1], 5.0, "s[1]")
near (out.s.data[2], 5.5, "s[2]")
-- random inputs: same seed, same values; the fused graph agrees
local r1 = passlab.exec (g, { random_seed = 3 })
local r2 = passlab.exec (g, { random_seed = 3 })
local h2 = passlab.run (g, { "simplify", "fuse-loops" })
local r3 = passlab.exec (h2[2].graph, { random_seed = 3 })
for i = 1, 2 do
  eq (r1.s.data[i], r2.s.data[i], "same seed")
  near (r3.s.data[i], r1.s.data[i], "the fused graph computes the same")
end
-- one input given, the other random
local mixed = passlab.exec (g, { inputs = { y = { 0, 0, 0 } }, random_seed = 3 })
assert (mixed.s.data[1] ~= r1.s.data[1] or mixed.s.data[2] ~= r1.s.data[2], "y = 0 changes the result")
raises ("has no input 'z'", passlab.exec, g, { inputs = { z = { 1 } } })
raises ("unknown backend 'tpu'", passlab.exec, g, { backend = "tpu" })
raises ("'runs' takes 1 to 100000", passlab.exec, g, { backend = "cpu", runs = 0 })
-- the generated kernels on the cpu compute what the reference does, and say what ran
local rc, info = passlab.exec (g, { backend = "cpu", random_seed = 3, runs = 2 })
eq (info.backend, "cpu", "info.backend")
assert (info.kernels >= 1 and info.ms >= 0, "info.kernels and info.ms")
for i = 1, 2 do near (rc.s.data[i], r1.s.data[i], "cpu agrees with the reference") end
local _, rinfo = passlab.exec (g, { random_seed = 3 })
eq (rinfo.backend, "reference", "the default backend")
raises ("data has 2 elements but the shape holds 6", passlab.exec, g, { inputs = { x = { 1, 2 } } })

-- check and diff
local errs = passlab.check (g, h2[2].graph, { seed = 2 })
eq (#errs, 1, "#errs")
assert (errs[1] < 1e-5, "check: " .. errs[1])
local d = passlab.diff (g, h2[1].graph)
eq (#d.removed, 1, "diff.removed")
eq (#d.added, 0, "diff.added")

-- pipeline and option errors
raises ("unknown pass 'nope'", passlab.run, g, { "nope" })
raises ("'x' is not an int", passlab.run, g, { { "fuse-loops", max_ops = "x" } })
raises ("fuse-loops has no parameter 'bogus'", passlab.run, g, { { "fuse-loops", bogus = 1 } })
raises ("unknown option 'bogus'", passlab.run, g, {}, { bogus = 1 })
raises ("bad argument #1 to 'run' (passlab.graph expected, got number)", function () return passlab.run (5, {}) end)
raises ("bad argument #2 to 'run' (table expected, got string)", function () return passlab.run (g, "simplify") end)
eq (#passlab.run (g, {}), 0, "an empty pipeline")

-- a Lua pass: fold x * 1, with a parameter, a report and counters
local calls = {}
passlab.register_pass {
  name = "test-fold-mul-one",
  description = "folds x * 1",
  params = { { name = "max", type = "int", default = 4, description = "most folds" },
             { name = "tag", type = "string", default = "t" } },
  run = function (g, params)
    calls[#calls + 1] = params.max .. params.tag
    local folded = 0
    for n in g:nodes () do
      local k = n.op == "Mul" and n.inputs[2]
      if k and k.is_constant and folded < params.max and #k.shape == 0 and k.data[1] == 1 then
        g:replace_uses (n.outputs[1], n.inputs[1])
        g:remove_node (n)
        folded = folded + 1
      end
    end
    return folded > 0, { "folded " .. folded .. " multiplications by one" }, { folded = folded }
  end,
}
local lp = nil
for _, p in ipairs (passlab.passes ()) do if p.name == "test-fold-mul-one" then lp = p end end
assert (lp and not lp.builtin, "the Lua pass is listed")
eq (lp.description, "folds x * 1", "description")
eq (lp.params[1].default, 4, "its default")
local hf = passlab.run (g, { { "test-fold-mul-one", max = 2 } }, { check = true })
eq (hf.error, nil, "the Lua pass ran")
eq (calls[1], "2t", "the pass got its params")
eq (hf[1].changed, true, "the Lua pass changed the graph")
eq (hf[1].params, "max=2", "params text")
eq (hf[1].stats.nodes, 3, "one node folded")
has (hf[1].report, "folded 1 multiplications by one", "report")
eq (hf[1].counters.folded, 1, "counters")
assert (hf[1].max_rel_error <= 1e-6, "folding keeps the values")
eq (hf[1].graph:node ("a"), nil, "a is gone")

-- register_pass errors
raises ("built-in pass", passlab.register_pass, { name = "simplify", run = print })
raises ("'run' must be a function", passlab.register_pass, { name = "t-x" })
raises ("needs a type", passlab.register_pass, { name = "t-x", run = print, params = { { name = "p", type = "real" } } })
raises ("'z' is not an int", passlab.register_pass,
        { name = "t-x", run = print, params = { { name = "p", type = "int", default = "z" } } })
raises ("declared twice", passlab.register_pass,
        { name = "t-x", run = print, params = { { name = "p", type = "int" }, { name = "p", type = "int" } } })

-- a Lua pass that raises inside a pipeline: the history keeps the steps before it
passlab.register_pass { name = "test-boom", run = function (g) error ("boom in a pass") end }
local hb = passlab.run (g, { "simplify", "test-boom", "fuse-loops" })
eq (#hb, 1, "the history stops before the failing pass")
has (hb.error, "pass test-boom failed", "history error")
has (hb.error, "boom in a pass", "history error message")
has (hb.error, "stack traceback:", "history error traceback")
eq (#hb[1].graph, 3, "the step before is intact")

-- Lua passes that try to break the IR are refused
passlab.register_pass { name = "test-remove-used", run = function (g) g:remove_node (g:node ("b")) return true end }
local hr = passlab.run (g, { "test-remove-used" })
eq (#hr, 0, "no step")
has (hr.error, "'b' is still used by node 'c' (Relu)", "remove_node refused")
passlab.register_pass {
  name = "test-cycle",
  run = function (g)
    local a = g:node ("a").outputs[1]
    local r = g:add_node { op = "Relu", inputs = { a } }
    local n = g:add_node { op = "Neg", inputs = { r.outputs[1] } }
    g:replace_uses (a, n.outputs[1])  -- r now reads n, which reads r
    return true
  end,
}
local hc = passlab.run (g, { "test-cycle" })
has (hc.error, "does not verify after pass test-cycle", "a cycle is caught by the verifier")
eq (#g, 4, "the input graph is untouched")

-- the graph a pass borrows is invalid once it returns
local stash, stash_node
passlab.register_pass { name = "test-stash", run = function (g) stash, stash_node = g, g:node ("a") return false end }
passlab.run (g, { "test-stash" })
raises ("invalid graph reference", function () return #stash end)
raises ("invalid graph reference", function () return stash_node.op end)

-- registering while a pipeline runs is refused (the pass fails)
passlab.register_pass { name = "test-reg", run = function (g) passlab.register_pass { name = "t-y", run = print } end }
has (passlab.run (g, { "test-reg" }).error, "while a pipeline runs", "no registration inside a pipeline")

-- re-registering replaces the pass
passlab.register_pass { name = "test-boom", run = function (g) return false end }
eq (passlab.run (g, { "test-boom" }).error, nil, "the replaced pass runs")
print ("passlab_api ok")
