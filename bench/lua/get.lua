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

function init(args)
  math.randomseed(os.time() + (thread_number or 0) * 7919)
  headers = common.headers()
  if ids_file ~= nil and ids_file ~= "" then ids = common.lines(ids_file) end
end

function request()
  local path = template
  if ids ~= nil then
    path = string.gsub(template, "{id}", ids[math.random(#ids)])
  end
  return wrk.format("GET", path, headers)
end
