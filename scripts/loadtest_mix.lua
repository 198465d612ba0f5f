-- wrk script for scripts/loadtest.sh MIX mode: each request asks a page drawn at random from the
-- file named by the PATHS environment variable (one path per line), with the session cookie of COOKIE.
local paths = {}

function init(args)
  for line in io.lines(os.getenv("PATHS")) do
    if #line > 0 then paths[#paths + 1] = line end
  end
  math.randomseed(os.time() + math.floor(os.clock() * 1e6))
end

function request()
  local p = paths[math.random(#paths)]
  return wrk.format("GET", p, { ["Cookie"] = os.getenv("COOKIE") })
end
