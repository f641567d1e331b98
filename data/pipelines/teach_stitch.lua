-- teach_stitch.lua — stitching (seed 002, AStitch) shown on softmax and
-- layer normalization.
--
-- Loop fusion stops at a reduction whose result is broadcast back over the
-- rows it reduced (softmax's max and sum, layer norm's mean and variance):
-- in one loop nest, every element would need the finished row result. So
-- loop fusion leaves several kernels, and the intermediates between them go
-- through memory. Stitching puts the whole memory-intensive region into one
-- kernel anyway: the reductions become phases of the kernel, one block (or
-- a few) owns each row, and the row results a later phase needs stay in
-- registers or shared memory instead of global memory.
--   passlab-cli lua data/pipelines/teach_stitch.lua
package.path = (arg and arg[0]:match ("^(.*)/[^/]*$") or ".") .. "/lib/?.lua;" .. package.path
local passlab = require "passlab"
local report = require "report"

-- Prints the plan attributes of each stitch kernel in g.
local function show_plans (g)
  for n in g:nodes () do
    local a = n.attrs
    if a.rows and a.row_length then
      print (string.format ("    %s: %d rows x %d, %d threads per block, %d blocks, shared memory %s",
                            n.name, a.rows, a.row_length, a.block_size or 0, a.grid or 0,
                            report.bytes (a.shared_bytes or 0)))
      for _, r in ipairs (a.reuse or {}) do print ("      reuse " .. r) end
    end
  end
end

for _, name in ipairs { "softmax.graph", "layer_norm.graph" } do
  local g = passlab.load (report.graph (name))
  local fused = passlab.run (g, { "simplify", "fuse-loops" })
  local stitched = passlab.run (g, { "simplify", "stitch" }, { check = true })
  assert (not stitched.error, stitched.error)
  local s0, s1, s2 = fused[0].stats, fused[#fused].stats, stitched[#stitched].stats
  print (string.format ("%s\n  kernels:     %d unfused, %d with loop fusion, %d stitched", name, s0.kernels,
                        s1.kernels, s2.kernels))
  print (string.format ("  bytes moved: %s unfused, %s with loop fusion, %s stitched", report.bytes (s0.bytes_moved),
                        report.bytes (s1.bytes_moved), report.bytes (s2.bytes_moved)))
  print (string.format ("  numerical check of the stitched graph: worst relative error %.2g",
                        stitched[#stitched].max_rel_error or 0))
  print ("  the plan:")
  show_plans (stitched[#stitched].graph)
  print ("  the pass's report:")
  report.indent (stitched[#stitched].report, "    ")
  print ()
end
