-- wrk script: POST /v1/sessions/{id}/tool-results, each naming a fresh
-- execution in one of the sessions ingest.sh approved beforehand, so every
-- request links something (an unapproved session would link too, but a real
-- runtime reports tool results while the operator's window is open).
--
-- Environment (set by ingest.sh):
--   BENCH_SESSIONS_FILE  one approved session id a line
--   BENCH_SEED           base seed; thread i uses BENCH_SEED + i
--   BENCH_TOKEN          bearer token, when serve was given one
--
-- The execution ids come from the same generator, seeded the same way, as
-- status.lua's: run with the same BENCH_SEED and thread count, status.lua
-- then reports on these very executions, so the worker has continuations to
-- send, as in production, instead of only ever finding unlinked reports.
-- Keep uuid4() and the seeding identical in both files.

local thread_count = 0

-- Runs in wrk's main Lua state, once per thread before it starts.
function setup(thread)
  thread_count = thread_count + 1
  thread:set("thread_index", thread_count)
end

local function uuid4()
  -- Version 4 layout; LuaJIT's generator is plenty for ids that only have to
  -- differ from each other within one benchmark database.
  return string.format("%04x%04x-%04x-4%03x-%04x-%04x%04x%04x",
    math.random(0, 0xffff), math.random(0, 0xffff),
    math.random(0, 0xffff),
    math.random(0, 0x0fff),
    0x8000 + math.random(0, 0x3fff),
    math.random(0, 0xffff), math.random(0, 0xffff), math.random(0, 0xffff))
end

local sessions = {}
local next_session = 1
local headers = { ["Content-Type"] = "application/json" }

-- Runs in each thread's own Lua state.
function init(args)
  math.randomseed(tonumber(os.getenv("BENCH_SEED") or "1") + thread_index)

  local path = assert(os.getenv("BENCH_SESSIONS_FILE"), "BENCH_SESSIONS_FILE is not set")
  for line in io.lines(path) do
    if line:match("%S") then sessions[#sessions + 1] = line end
  end
  assert(#sessions > 0, "no session ids in " .. path)
  -- Threads start at different sessions so they do not walk in step.
  next_session = (thread_index * 7919) % #sessions + 1

  local token = os.getenv("BENCH_TOKEN")
  if token and token ~= "" then headers["Authorization"] = "Bearer " .. token end
end

function request()
  local session = sessions[next_session]
  next_session = next_session % #sessions + 1
  -- The wording a long-running tool answers with; the default policy finds
  -- the id after "execution".
  local body = '{"text":"running, execution ' .. uuid4() .. '"}'
  return wrk.format("POST", "/v1/sessions/" .. session .. "/tool-results", headers, body)
end
