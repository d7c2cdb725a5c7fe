-- wrk script: each request() sends DEPTH (args[1], default 16) pipelined
-- GETs of PATH (args[2], default /health); wrk counts every response.
init = function(args)
  local depth = tonumber(args[1]) or 16
  local path = args[2] or "/health"
  local r = {}
  for i = 1, depth do
    r[i] = wrk.format("GET", path)
  end
  req = table.concat(r)
end

request = function()
  return req
end
