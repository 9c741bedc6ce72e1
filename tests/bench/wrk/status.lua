-- wrk script: PUT /v1/executions/{random uuid v4} with a terminal status,
-- as the agent runtime reports an execution that finished.
--
-- Environment (set by ingest.sh):
--   BENCH_SEED   base seed; thread i uses BENCH_SEED + i
--   BENCH_TOKEN  bearer token, when serve was given one
--
-- Ids come from the same generator, seeded the same way, as
-- tool_results.lua's. After a tool-results run with the same BENCH_SEED and
-- thread count, the first reports of each thread land on executions that run
-- linked into approved sessions, so they become ready and the worker
-- continues them while this runs; the reports beyond that many are for
-- executions nobody linked. A different BENCH_SEED makes every report
-- unlinked. Keep uuid4() and the seeding identical in both files.

local thread_count = 0

-- Runs in wrk's main Lua state, once per thread before it starts.
function setup(thread)
  thread_count = thread_count + 1
  thread:set("thread_index", thread_count)
end

local function uuid4()
  return string.format("%04x%04x-%04x-4%03x-%04x-%04x%04x%04x",
    math.random(0, 0xffff), math.random(0, 0xffff),
    math.random(0, 0xffff),
    math.random(0, 0x0fff),
    0x8000 + math.random(0, 0x3fff),
    math.random(0, 0xffff), math.random(0, 0xffff), math.random(0, 0xffff))
end

local headers = { ["Content-Type"] = "application/json" }
local body = '{"status":"completed","result":"ok"}'

-- Runs in each thread's own Lua state.
function init(args)
  math.randomseed(tonumber(os.getenv("BENCH_SEED") or "1") + thread_index)
  local token = os.getenv("BENCH_TOKEN")
  if token and token ~= "" then headers["Authorization"] = "Bearer " .. token end
end

function request()
  return wrk.format("PUT", "/v1/executions/" .. uuid4(), headers, body)
end
