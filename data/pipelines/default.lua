-- default.lua — the default pipeline, the one the workbench starts with:
-- clean up, expand composite ops, sink reshapes, hand GEMMs (and their
-- epilogues) to the library, then fuse the remaining loops.
--
-- As a pipeline script it just returns the pipeline table:
--   passlab-cli run data/graphs/transformer_block.graph --script data/pipelines/default.lua --check
-- Run on its own it applies the pipeline to a graph and prints every step:
--   passlab-cli lua data/pipelines/default.lua [GRAPH]
local pipeline = { "simplify", "decompose", "reshape-sink", "fuse-library", "fuse-loops" }

if arg then
  package.path = (arg[0]:match ("^(.*)/[^/]*$") or ".") .. "/lib/?.lua;" .. package.path
  local passlab = require "passlab"
  local report = require "report"
  local path = arg[1] or report.graph ("transformer_block.graph")
  local g = passlab.load (path)
  print (string.format ("%s: %d nodes; pipeline: %s\n", path, #g, table.concat (pipeline, ", ")))
  local h = passlab.run (g, pipeline, { check = true })
  report.history (h)
  for i = 1, #h do
    print (string.format ("\n[%d] %s", i, h[i].pass))
    report.indent (h[i].report)
  end
end

return pipeline
