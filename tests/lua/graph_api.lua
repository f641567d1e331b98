-- graph_api.lua — the graph, node and value handles (lua-graph.c), driven
-- by test-lua.c with arg[1] = the source directory and arg[2] = a scratch
-- directory. Every check raises on failure, naming what differed.
local passlab = require "passlab"
local src, tmp = arg[1], arg[2]

local function eq (got, want, what)
  if got ~= want then
    error (string.format ("%s: got %s, want %s", what, tostring (got), tostring (want)), 2)
  end
end

local function list (t)
  local parts = {}
  for i = 1, #t do parts[i] = tostring (t[i]) end
  return table.concat (parts, ",")
end

local function raises (pattern, f, ...)
  local ok, msg = pcall (f, ...)
  if ok then error ("expected an error matching '" .. pattern .. "'", 2) end
  if not tostring (msg):find (pattern, 1, true) then
    error ("error '" .. tostring (msg) .. "' does not contain '" .. pattern .. "'", 2)
  end
end

local text = [[
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

-- parse, name, length, fields
local g = passlab.parse (text, "small.graph")
eq (g.name, "small", "g.name")
eq (g.opset, 17, "g.opset")
eq (#g, 4, "#g")
eq (tostring (g), "passlab.graph 'small' (4 nodes)", "tostring (g)")

-- nodes() in topological order, with ids, names and ops
local ops, names = {}, {}
for n in g:nodes () do
  ops[#ops + 1] = n.op
  names[#names + 1] = n.name
  assert (math.type (n.id) == "integer")
end
eq (list (ops), "Mul,Add,Relu,ReduceSum", "ops in order")
eq (list (names), "a,b,c,s", "names in order")

-- lookups by name and by id; the same node is the same object
local a = g:node ("a")
eq (a.op, "Mul", "a.op")
eq (g:node (a.id), a, "g:node (id)")
assert (rawequal (g:node ("a"), a), "handles are cached")
eq (g:node ("nope"), nil, "a missing node")
eq (tostring (a), "node 'a' (Mul)", "tostring (node)")
eq (a.domain, "", "a.domain")
eq (a.graph, g, "a.graph")

-- attrs
local s = g:node ("s")
eq (s.attrs.keepdims, 0, "keepdims")
eq (math.type (s.attrs.keepdims), "integer", "keepdims is an integer")

-- inputs, outputs and values
local ins = g:inputs ()
eq (#ins, 2, "#inputs")
eq (ins[1].name, "x", "input 1")
eq (ins[1].dtype, "f32", "x.dtype")
eq (list (ins[1].shape), "2,3", "x.shape")
assert (ins[1].is_input and not ins[1].is_constant, "x is an input")
local outs = g:outputs ()
eq (#outs, 1, "#outputs")
eq (outs[1].name, "s", "output")
assert (outs[1].is_output, "s is an output")
eq (list (outs[1].shape), "2", "s.shape")
eq (outs[1].producer, s, "s.producer")
eq (tostring (outs[1]), "value 's' f32[2]", "tostring (value)")

local one = g:value ("one")
assert (one.is_constant and not one.is_input, "one is a constant")
eq (one.producer, nil, "a constant has no producer")
eq (list (one.data), "1.0", "one.data")
eq (list (g:value ("axes").data), "1", "axes.data")
eq (math.type (g:value ("axes").data[1]), "integer", "i64 data are integers")
eq (#one.shape, 0, "a scalar's shape")
eq (g:value ("x").data, nil, "an input has no data")

local x = g:value ("x")
eq (#x.users, 1, "#x.users")
eq (x.users[1], a, "x.users[1]")
eq (a.inputs[1], x, "a.inputs[1]")
eq (a.inputs[2], one, "a.inputs[2]")
eq (a.outputs[1], g:value ("a"), "a.outputs[1]")
eq (g:value (x.id), x, "g:value (id)")

-- symbolic shapes
local sg = passlab.parse ("graph sym { input x: f32[N, ?, 4]\n r = Relu(x)\n output r }")
eq (list (sg:value ("r").shape), "N,?,4", "symbolic shape")

-- text round trip, save and load
local printed = g:text ()
eq (passlab.parse (printed):text (), printed, "text round trip")
g:save (tmp .. "/small.graph")
eq (passlab.load (tmp .. "/small.graph"):text (), printed, "save + load (.graph)")
g:save (tmp .. "/small.onnx")
eq (#passlab.load (tmp .. "/small.onnx"), 4, "save + load (.onnx)")
raises ("no such file", passlab.load, tmp .. "/missing.graph")
raises ("small.graph:1:", passlab.parse, "graph {", "small.graph")

-- verify, stats
eq (g:verify (), true, "verify")
local st = g:stats ()
eq (st.nodes, 4, "stats.nodes")
eq (st.kernels, 4, "stats.kernels")

-- copy: independent of the original
local c = g:copy ()
raises ("is a graph output", c.remove_node, c, c:node ("s"))
raises ("'a' is still used by node 'b' (Add)", c.remove_node, c, c:node ("a"))
local ca = c:node ("a")
c:replace_uses (ca.outputs[1], c:value ("x"))
eq (#ca.outputs[1].users, 0, "a has no users after replace_uses")
c:remove_node (ca)
eq (#c, 3, "#c after removing a")
eq (#g, 4, "#g is unchanged")
raises ("invalid node reference", function () return ca.op end)
raises ("invalid node reference", c.remove_node, c, ca)
eq (c:node ("b").inputs[1], c:value ("x"), "b reads x")
eq (c:verify (), true, "c verifies")
raises ("belongs to another graph", c.replace_uses, c, c:value ("y"), g:value ("y"))

-- add_node: shape inference, names made unique, attributes
local cx = c:value ("x")
local neg = c:add_node { op = "Neg", inputs = { cx }, name = "neg" }
eq (neg.name, "neg", "neg.name")
eq (list (neg.outputs[1].shape), "2,3", "neg shape")
local neg2 = c:add_node { op = "Neg", inputs = { cx }, name = "neg" }
assert (neg2.name ~= "neg", "a taken name is made unique")
local t = c:add_node { op = "Transpose", inputs = { cx }, attrs = { perm = { 1, 0 } } }
eq (list (t.outputs[1].shape), "3,2", "Transpose shape")
eq (list (t.attrs.perm), "1,0", "perm")
local lr = c:add_node { op = "LeakyRelu", inputs = { cx }, attrs = { alpha = 0.5 } }
eq (lr.attrs.alpha, 0.5, "alpha")
eq (math.type (lr.attrs.alpha), "float", "alpha is a float")
local n_before = #c
raises ("Add", c.add_node, c, { op = "Add", inputs = { cx, c:value ("axes") } })
eq (#c, n_before, "a node that does not infer is not added")
raises ("'op'", c.add_node, c, { inputs = { cx } })
raises ("input 1 is a number", c.add_node, c, { op = "Neg", inputs = { 5 } })
raises ("attribute 'bad'", c.add_node, c, { op = "Neg", inputs = { cx }, attrs = { bad = { 1, "a" } } })
eq (#c, n_before, "rejected add_node calls add nothing")

-- set_attr: typed from the Lua value, shapes re-inferred downstream
local rs = c:add_node { op = "ReduceSum", inputs = { cx, c:value ("axes") }, attrs = { keepdims = 1 } }
local after = c:add_node { op = "Relu", inputs = { rs.outputs[1] } }
eq (list (after.outputs[1].shape), "2,1", "keepdims=1")
rs:set_attr ("keepdims", 0)
eq (list (rs.outputs[1].shape), "2", "set_attr re-infers the node")
eq (list (after.outputs[1].shape), "2", "and its readers")
raises ("Transpose", t.set_attr, t, "perm", { 0, 5 })
eq (list (t.attrs.perm), "1,0", "a rejected set_attr is undone")
t:set_attr ("tags", { "p", "q" })
eq (list (t.attrs.tags), "p,q", "strings attribute")
t:set_attr ("scale", 2.5)
eq (t.attrs.scale, 2.5, "float attribute")
t:set_attr ("label", "hi")
eq (t.attrs.label, "hi", "string attribute")
t:set_attr ("label", nil)
eq (t.attrs.label, nil, "set_attr (name, nil) removes")
raises ("attribute 'bad'", t.set_attr, t, "bad", print)
eq (c:verify (), true, "c verifies after set_attr")

-- add_const
local w = c:add_const ("w", "f32", { 3 }, { 1, 2, 3 })
eq (list (w.data), "1.0,2.0,3.0", "w.data")
eq (list (w.shape), "3", "w.shape")
local w2 = c:add_const ("w", "i64", { 2, 2 }, 7)
eq (list (w2.data), "7,7,7,7", "a single number fills")
assert (w2.name ~= "w", "constant names are made unique")
raises ("data has 2 elements but the shape holds 3", c.add_const, c, "v", "f32", { 3 }, { 1, 2 })
raises ("bad argument #2 to 'add_const' (unknown dtype", function () return c:add_const ("v", "f99", { 3 }, 1) end)
raises ("element 2 is not an integer", c.add_const, c, "v", "i32", { 2 }, { 1, 1.5 })
local added = c:add_node { op = "Add", inputs = { cx, w } }
eq (list (added.outputs[1].shape), "2,3", "broadcast with a new constant")

-- replace_uses: types must match; uses by new's producer stay
raises ("replace_uses: 'x' is f32[2, 3] but 'w' is f32[3]", c.replace_uses, c, cx, w)
local y = c:value ("y")
local ry = c:add_node { op = "Relu", inputs = { y } }
c:replace_uses (y, ry.outputs[1])
eq (ry.inputs[1], y, "the inserted node still reads y")
eq (c:node ("b").inputs[2], ry.outputs[1], "b reads relu (y)")
eq (c:verify (), true, "c verifies after an insertion")

-- set_output, dce
c:set_output (1, c:node ("c").outputs[1])
eq (c:outputs ()[1].name, "c", "set_output replaces")
c:set_output (2, neg.outputs[1])
eq (#c:outputs (), 2, "set_output (#outputs + 1) appends")
raises ("output index out of range", c.set_output, c, 5, cx)
local removed = c:dce ()
assert (removed >= 5, "dce removed the dead nodes (" .. removed .. ")")
eq (c:node ("s"), nil, "s is gone")
eq (c:verify (), true, "c verifies after dce")

-- wrong argument types
raises ("bad argument #1 to 'node' (passlab.graph expected, got number)", function () return g.node (5, "a") end)
raises ("bad argument #1 to 'remove_node' (passlab.node expected, got passlab.value)",
        function () return c:remove_node (cx) end)
raises ("calling 'nodes' on bad self (passlab.graph expected, got table)", function () local t = { nodes = g.nodes } return t:nodes () end)

-- <close> frees an owned graph at once
local kept
do
  local cg <close> = g:copy ()
  kept = cg
  eq (#cg, 4, "a closable copy")
end
raises ("invalid graph reference", function () return #kept end)
raises ("invalid graph reference", kept.nodes, kept)
eq (tostring (kept), "passlab.graph (invalid)", "tostring of a closed graph")

-- nodes () skips nodes removed while iterating
local d = g:copy ()
d:set_output (1, d:value ("c"))
local seen = {}
for n in d:nodes () do
  seen[#seen + 1] = n.name
  if n.name == "a" then d:remove_node (d:node ("s")) end
end
eq (list (seen), "a,b,c", "nodes () skips a node removed meanwhile")

-- layouts: v.layout (read-only), g:set_layout, LayoutTransform through add_node
local lg = passlab.parse ([[
graph lay opset 17 {
  input x: f32[1, 3, 4, 4]
  const k: f32[3] = [1.0, 2.0, 3.0]
  r = Relu(x)
  f = Flatten(r)
  y = Relu(f)
  output y
}
]])
local x4 = lg:value ("x")
eq (x4.layout, "NCHW", "the default layout")
local lt = lg:add_node { op = "LayoutTransform", inputs = { x4 }, attrs = { to = "NHWC" } }
eq (lt.outputs[1].layout, "NHWC", "a LayoutTransform's output takes its 'to'")
eq (lt.attrs.to, "NHWC", "the 'to' attribute")
lg:set_layout (lg:value ("r"), "CHWN")
eq (lg:value ("r").layout, "CHWN", "set_layout sets")
eq (lg:verify (), true, "a graph with layouts verifies")
raises ("has layout NHWC but rank 2", lg.set_layout, lg, lg:value ("f"), "NHWC")
raises ("is a graph input", lg.set_layout, lg, x4, "NHWC")
raises ("is a graph output", lg.set_layout, lg, lg:value ("y"), "CHWN")
raises ("is a constant", lg.set_layout, lg, lg:value ("k"), "NHWC")
raises ("is a LayoutTransform to NHWC", lg.set_layout, lg, lt.outputs[1], "NCHW")
raises ("unknown layout 'nhwc'", lg.set_layout, lg, lg:value ("r"), "nhwc")
raises ("attribute 'to' must be one of NCHW, NHWC, CHWN", lg.add_node, lg,
        { op = "LayoutTransform", inputs = { x4 }, attrs = { to = "HWCN" } })
eq (lg:value ("f").layout, "NCHW", "a refused set_layout changes nothing")
raises ("attempt to index", function () lg:value ("r").layout = "NCHW" end)  -- read-only
eq (lg:value ("r").layout, "CHWN", "set_layout survives")
assert (lg:text ():find ("r: f32[1, 3, 4, 4] @CHWN = Relu(x)", 1, true), "the text shows the layout")
print ("graph_api ok")
