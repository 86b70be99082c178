# Action Cable without a Rails application, for `wsbench compare --protocol actioncable` and
# the `--protocol actioncable` tests: Debian's ruby-actioncable 6.1 served by puma, the
# `async` subscription adapter (in-process), request-forgery protection off.
#
# Routes:
#   /cable                     the Action Cable endpoint (subprotocol actioncable-v1-json)
#   /admin/disconnect?user=U   disconnects user U's connections through Action Cable's own
#                              remote connections API (its `disconnect` command); answers
#                              with how many connections the server had for U before it
#   /admin/connections         the number of open Action Cable connections
#
# A connection is identified by the `user` cookie (`--cookie 'user=u{conn}'`), else by a name
# of its own. With ACTIONCABLE_TOKEN set, the upgrade must carry `Authorization: Bearer
# TOKEN`: any other is rejected as unauthorized (Action Cable's disconnect message, reason
# `unauthorized`). Channels:
#   BenchChannel    params `room` (optional): subscribes to the stream `bench:ROOM`; action
#                   `echo` transmits its data back to the caller, `broadcast` broadcasts it
#                   to `bench:ROOM`
#   GuardedChannel  rejects every subscription but user `admin`'s
#   TickerChannel   the stream `ticker`: {"seq":N,"ts":UNIX_MS} every TICKER_MS ms when
#                   TICKER_MS is set
require "securerandom"
require "action_cable"

module Bench
  class Connection < ActionCable::Connection::Base
    identified_by :user

    def connect
      token = ENV["ACTIONCABLE_TOKEN"]
      if token && !token.empty? && request.headers["Authorization"] != "Bearer #{token}"
        reject_unauthorized_connection
      end
      self.user = request.cookies["user"] || "anonymous-#{SecureRandom.hex(6)}"
    end
  end

  class BenchChannel < ActionCable::Channel::Base
    def subscribed
      stream_from "bench:#{params[:room]}" if params[:room]
    end

    def echo(data)
      transmit(data)
    end

    def broadcast(data)
      ActionCable.server.broadcast("bench:#{params[:room]}", data)
    end
  end

  class GuardedChannel < ActionCable::Channel::Base
    def subscribed
      reject unless connection.user == "admin"
    end
  end

  class TickerChannel < ActionCable::Channel::Base
    def subscribed
      stream_from "ticker"
    end
  end
end

# Channels are found by their class name as the client gives it in `channel`.
BenchChannel = Bench::BenchChannel
GuardedChannel = Bench::GuardedChannel
TickerChannel = Bench::TickerChannel

ActionCable.server.config.cable = { "adapter" => "async" }
ActionCable.server.config.connection_class = -> { Bench::Connection }
ActionCable.server.config.disable_request_forgery_protection = true
ActionCable.server.config.logger = Logger.new(ENV["ACTIONCABLE_LOG"] ? $stderr : nil)
ActionCable.server.config.worker_pool_size = Integer(ENV.fetch("ACTIONCABLE_WORKERS", "4"))

ticker_ms = Integer(ENV.fetch("TICKER_MS", "0"))
ticker_ms.positive? && Thread.new do
  seq = 0
  loop do
    sleep(ticker_ms / 1000.0)
    seq += 1
    ts = Process.clock_gettime(Process::CLOCK_REALTIME, :millisecond)
    ActionCable.server.broadcast("ticker", { "seq" => seq, "ts" => ts })
  end
end

admin = lambda do |env|
  request = Rack::Request.new(env)
  case request.path_info
  when "/disconnect"
    user = request.params["user"].to_s
    before = ActionCable.server.connections.count { |c| c.user == user }
    ActionCable.server.remote_connections.where(user: user).disconnect
    [200, { "Content-Type" => "application/json" }, [%({"connections":#{before}})]]
  when "/connections"
    [200, { "Content-Type" => "application/json" }, [%({"connections":#{ActionCable.server.connections.size}})]]
  else
    [404, { "Content-Type" => "text/plain" }, ["no such admin route\n"]]
  end
end

map("/cable") { run ActionCable.server }
map("/admin") { run admin }
