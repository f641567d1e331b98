-- teach_layout.lua — data-layout planning (seed 003, MACO) shown on a ResNet
-- block.
--
-- A convolution reads its input and weights in some order in memory: NCHW
-- (each channel a contiguous image), NHWC (the channels of a pixel together)
-- or CHWN (the batch innermost). Which is fastest depends on the layer's
-- shape and on the kernel that computes it (im2col + GEMM, or a generated
-- direct convolution), and converting between layouts costs a pass over the
-- tensor. So the choice is global: the `layout` pass gives every conv (and
-- the pointwise ops around it) one layout, minimizing the layers' costs plus
-- the transforms on the edges between them — exactly by dynamic programming
-- on chains, with a frontier DP or branch and bound on DAGs such as residual
-- blocks — then inserts the LayoutTransform nodes. Shapes stay logical: a
-- layout only orders the elements in memory, so the reference interpreter
-- computes the same values and the numerical check of every step holds.
--   passlab-cli lua data/pipelines/teach_layout.lua            (what-if costs, fast)
--   passlab-cli lua data/pipelines/teach_layout.lua --measure  (this machine's costs:
--       calibrates every conv in every layout on the cpu backend once, then cached)
package.path = (arg and arg[0]:match ("^(.*)/[^/]*$") or ".") .. "/lib/?.lua;" .. package.path
local passlab = require "passlab"
local report = require "report"

local g = passlab.load (report.graph ("resnet_block.graph"))
print ("resnet_block: conv3x3 - BN - ReLU - conv3x3 - BN - (+ x) - ReLU on [1, 64, 56, 56]\n")

-- Costs come from a calibration of this machine; to see the planner's
-- reasoning without measuring, give it a what-if table (key<TAB>ms) instead.
local conv = "conv 1x64x56x56 k64x3x3 s1,1 p1,1,1,1 d1,1 g1 f32"
local t = "transform 1x64x56x56 f32"
local function table_file (convs, transform_ms)
  local path = os.tmpname ()
  local f = assert (io.open (path, "w"))
  f:write ("ceiling memcpy 256MiB\t50\nceiling sgemm 1024^3\t20\n")
  for layout, ms in pairs (convs) do f:write (string.format ("%s %s gemm\t%g\n", conv, layout, ms)) end
  for _, pair in ipairs ({ "NCHW>NHWC", "NHWC>NCHW", "NCHW>CHWN", "CHWN>NCHW", "NHWC>CHWN", "CHWN>NHWC" }) do
    f:write (string.format ("%s %s\t%g\n", t, pair, transform_ms))
  end
  f:close ()
  return path
end

local function plan (title, params)
  params[1] = "layout"
  params.impls = params.impls or "gemm"
  local h = passlab.run (g, { params }, { check = true })
  assert (not h.error, h.error)
  print (title)
  report.indent (h[1].report)
  print ()
  return h[1].graph
end

-- 1. Transforms are cheap next to what NHWC saves: both convs go NHWC, and the
--    transforms sit at the block's edges (the input and the output stay NCHW).
local cheap = table_file ({ NCHW = 10, NHWC = 4, CHWN = 9 }, 0.5)
plan ("1. NHWC saves 6 ms per conv, a transform costs 0.5 ms:", { cost = "analytic", table = cheap })

-- 2. The same layer costs, but transforms as dear as the saving: staying in
--    NCHW everywhere is now the optimum — a per-layer choice would be wrong.
local dear = table_file ({ NCHW = 10, NHWC = 4, CHWN = 9 }, 7)
plan ("2. the same convs, a transform costs 7 ms:", { cost = "analytic", table = dear })
os.remove (cheap)
os.remove (dear)

-- 3. What this machine measures (with --measure), else the analytic model:
--    bytes and FLOPs against measured ceilings, which barely tells layouts
--    apart — that is why the pass calibrates.
local measure = arg and arg[1] == "--measure"
local planned = plan (measure and "3. measured on this machine (cpu backend):" or
                      "3. the analytic model (run with --measure for this machine's timings):",
                      { cost = measure and "measured" or "analytic", impls = "gemm,direct" })

-- The layouts the plan chose, as the values carry them.
print ("values by layout after the plan:")
local moved = 0
for n in planned:nodes () do
  local v = n.outputs[1]
  if v and v.layout ~= "NCHW" then
    print (string.format ("    %-14s %-16s %s", v.name, n.op, v.layout))
    moved = moved + 1
  end
end
if moved == 0 then print ("    (none: every value stays NCHW)") end

-- Layouts are physical: the generated kernels read and write each value in
-- its layout, and compute what the reference computes.
local want = passlab.exec (g, { random_seed = 7 })
local got, info = passlab.exec (planned, { backend = "cpu", random_seed = 7 })
local worst = 0
for i, x in ipairs (want.out.data) do worst = math.max (worst, math.abs (x - got.out.data[i])) end
print (string.format ("\nthe planned graph on the cpu backend: %d kernels, %.2f ms, max |error| vs reference %.2g",
                      info.kernels, info.ms, worst))
assert (worst < 1e-3, "the cpu backend disagrees with the reference")
print ("\nnext: passlab-cli tune data/graphs/resnet_block.graph --node conv1 --layout NHWC  (the pebble-rule tiling)")
