-- GET BENCH_PATH; "{id}" in it is replaced, request by request, by a random line of
-- the BENCH_IDS file (a team or discipline id).
package.path = os.getenv("BENCH_LUA_DIR") .. "/?.lua;" .. package.path
local common = require("common")

local template = common.env("BENCH_PATH")
local ids_file = os.getenv("BENCH_IDS")
local ids = nil
local headers = nil

setup = common.setup
done = common.done

local if_none_match = os.getenv("BENCH_IF_NONE_MATCH")
local sequential = os.getenv("BENCH_SEQUENTIAL") == "1"
local next_id = 0

function init(args)
  math.randomseed(os.time() + (thread_number or 0) * 7919)
  headers = common.headers()
  if if_none_match ~= nil and if_none_match ~= "" then
    headers["If-None-Match"] = if_none_match
  end
  if ids_file ~= nil and ids_file ~= "" then ids = common.lines(ids_file) end
end

function request()
  local path = template
  if ids ~= nil then
    local pick = math.random(#ids)
    if sequential then
      next_id = next_id + 1
      pick = (next_id % #ids) + 1
    end
    path = string.gsub(template, "{id}", ids[pick])
  end
  return wrk.format("GET", path, headers)
end
