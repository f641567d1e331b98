-- teach_fusion.lua — loop fusion and library fusion (seed 001), shown on
-- layer normalization and on a transformer MLP.
--
-- Every kernel reads its inputs from memory and writes its output back.
-- Elementwise ops do almost no arithmetic per byte, so a chain of them is
-- bound by memory traffic; fusing the chain into one loop keeps the
-- intermediates in registers. fuse-loops groups elementwise chains (with
-- reshapes, transposes and broadcasts as index arithmetic) and "input
-- fusions" that end in a reduction over the same rows. fuse-library instead
-- hands a GEMM to the library together with what can ride along: transposes
-- as flags, a bias add and an activation as the GEMM's epilogue.
--   passlab-cli lua data/pipelines/teach_fusion.lua
package.path = (arg and arg[0]:match ("^(.*)/[^/]*$") or ".") .. "/lib/?.lua;" .. package.path
local passlab = require "passlab"
local report = require "report"

local function show (title, h)
  print (title)
  report.history (h)
  for i = 1, #h do
    if h[i].changed then
      print (string.format ("  [%d] %s:", i, h[i].pass))
      report.indent (h[i].report, "      ")
    end
  end
  print ()
end

-- 1. One LayerNormalization op: a library kernel as written; decomposed it
-- is a chain of primitive kernels; loop fusion brings the count back down
-- without needing a hand-written layer norm kernel.
local ln = passlab.parse ([[
graph layer_norm_op opset 17 {
  input x: f32[4, 128, 256]
  const weight: f32[256] = random(seed=11, lo=0.5, hi=1.5)
  const bias: f32[256] = random(seed=12, lo=-0.5, hi=0.5)
  y = LayerNormalization(x, weight, bias) {axis=-1, epsilon=1e-05}
  output y
}
]], "layer_norm_op.graph")
local h1 = passlab.run (ln, { "decompose", "fuse-loops" }, { check = true })
show ("1. LayerNormalization: decompose, then fuse-loops", h1)
print (string.format ("   kernels: %d as one op, %d decomposed, %d fused\n", h1[0].stats.kernels,
                      h1[1].stats.kernels, h1[2].stats.kernels))

-- 2. The same with input fusion off: each reduction ends a fusion, and the
-- elementwise ops around it form their own kernels.
local h2 = passlab.run (ln, { "decompose", { "fuse-loops", input_fusion = false } })
print (string.format ("2. without input fusion: %d kernels, %s moved (with: %d kernels, %s moved)\n",
                      h2[2].stats.kernels, report.bytes (h2[2].stats.bytes_moved), h1[2].stats.kernels,
                      report.bytes (h1[2].stats.bytes_moved)))

-- 3. The exporter's form of layer norm (primitive ops already).
local h3 = passlab.run (passlab.load (report.graph ("layer_norm.graph")), { "simplify", "fuse-loops" }, { check = true })
show ("3. layer_norm.graph as exported: simplify, fuse-loops", h3)

-- 4. A transformer MLP: the GEMMs go to the library with their bias and the
-- GELU chain around them is loop-fused.
local h4 = passlab.run (passlab.load (report.graph ("gelu_mlp.graph")), { "simplify", "fuse-library", "fuse-loops" },
                        { check = true })
show ("4. gelu_mlp.graph: fuse-library, then fuse-loops", h4)
print (string.format ("   kernels %d -> %d, bytes moved %s -> %s", h4[0].stats.kernels, h4[#h4].stats.kernels,
                      report.bytes (h4[0].stats.bytes_moved), report.bytes (h4[#h4].stats.bytes_moved)))
