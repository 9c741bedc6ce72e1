-- wrk script: POST /v1/sessions/{id}/tool-results, each naming a fresh
-- execution in one of the sessions ingest.sh approved beforehand, so every
-- request links something (an unapproved session would link too, but a real
-- runtime reports tool results while the operator's window is open). The
-- execution ids are drawn as status.lua draws them (ids.lua), so its run
-- then reports on these very executions.
--
-- Environment (set by ingest.sh):
--   BENCH_SESSIONS_FILE  one approved session id a line
--   BENCH_SEED           base seed; thread i uses BENCH_SEED + i
--   BENCH_TOKEN          bearer token, when serve was given one

local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
local ids = dofile(here .. "ids.lua")
setup = ids.setup

local sessions = {}
local next_session = 1
local headers

-- Runs in each thread's own Lua state.
function init(args)
  ids.seed()
  headers = ids.headers()
  local path = assert(os.getenv("BENCH_SESSIONS_FILE"), "BENCH_SESSIONS_FILE is not set")
  for line in io.lines(path) do
    if line:match("%S") then sessions[#sessions + 1] = line end
  end
  assert(#sessions > 0, "no session ids in " .. path)
  -- Threads start at different sessions so they do not walk in step.
  next_session = (thread_index * 7919) % #sessions + 1
end

function request()
  local session = sessions[next_session]
  next_session = next_session % #sessions + 1
  -- The wording a long-running tool answers with; the default policy finds
  -- the id after "execution".
  local body = '{"text":"running, execution ' .. ids.uuid4() .. '"}'
  return wrk.format("POST", "/v1/sessions/" .. session .. "/tool-results", headers, body)
end
