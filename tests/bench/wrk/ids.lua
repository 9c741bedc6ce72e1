-- What status.lua and tool_results.lua share, loaded by both: the thread
-- numbering, the seeding and the execution ids. Seeded alike, the two
-- scripts draw the same ids in the same order, so with the same BENCH_SEED
-- and thread count the status run reports on the executions the
-- tool-results run linked (see tests/bench/ingest.sh).

local ids = {}
local thread_count = 0

-- For wrk's `setup`, in its main Lua state, once per thread.
function ids.setup(thread)
  thread_count = thread_count + 1
  thread:set("thread_index", thread_count)
end

-- For each thread's `init`: its own seed, from BENCH_SEED and its index.
function ids.seed()
  math.randomseed(tonumber(os.getenv("BENCH_SEED") or "1") + thread_index)
end

-- A version 4 layout; LuaJIT's generator is plenty for ids that only have
-- to differ within one benchmark database.
function ids.uuid4()
  return string.format("%04x%04x-%04x-4%03x-%04x-%04x%04x%04x",
    math.random(0, 0xffff), math.random(0, 0xffff),
    math.random(0, 0xffff),
    math.random(0, 0x0fff),
    0x8000 + math.random(0, 0x3fff),
    math.random(0, 0xffff), math.random(0, 0xffff), math.random(0, 0xffff))
end

-- JSON headers, with the bearer token of BENCH_TOKEN when it is set.
function ids.headers()
  local headers = { ["Content-Type"] = "application/json" }
  local token = os.getenv("BENCH_TOKEN")
  if token and token ~= "" then headers["Authorization"] = "Bearer " .. token end
  return headers
end

return ids
