%% Why this exists: the WebSocket side of the Yaws echo server for `wsbench compare` (the
%% seed's Erlang row). Yaws' "basic" callback mode joins fragments and checks UTF-8; every text
%% or binary message goes back with its own opcode. Yaws answers pings itself; a close frame is
%% answered with the same status, which completes the close handshake.
-module(echo_ws).
-export([handle_message/1]).

handle_message({text, Data}) -> {reply, {text, Data}};
handle_message({binary, Data}) -> {reply, {binary, Data}};
handle_message({close, Status, _Reason}) -> {close, Status};
handle_message(_Other) -> noreply.
