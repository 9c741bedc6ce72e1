-- wrk script: PUT /v1/executions/{id} with a terminal status, a fresh id a
-- request. With the BENCH_SEED and thread count of the tool-results run,
-- the first reports of each thread land on the executions it linked into
-- approved sessions, so they become ready and the worker continues them
-- while this runs; the reports beyond that many are for executions nobody
-- linked. A different BENCH_SEED makes every report unlinked.
--
-- Environment (set by ingest.sh):
--   BENCH_SEED   base seed; thread i uses BENCH_SEED + i
--   BENCH_TOKEN  bearer token, when serve was given one

local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
local ids = dofile(here .. "ids.lua")
setup = ids.setup

local headers
local body = '{"status":"completed","result":"ok"}'

-- Runs in each thread's own Lua state.
function init(args)
  ids.seed()
  headers = ids.headers()
end

function request()
  return wrk.format("PUT", "/v1/executions/" .. ids.uuid4(), headers, body)
end
