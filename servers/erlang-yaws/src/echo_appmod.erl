%% Why this exists: the appmod mounted on "/" of the Yaws echo server. An upgrade request is
%% handed to Yaws' WebSocket support with echo_ws as the callback and the message and frame
%% limits raised to 128 MiB (Yaws' defaults are 16 MiB); any other request gets 200 (for the
%% rtt scenario's HTTP row).
-module(echo_appmod).
-export([out/1]).

-define(MAX_MESSAGE_BYTES, 134217728).

out(Arg) ->
    Upgrade = yaws_api:get_header(yaws_api:arg_headers(Arg), "Upgrade"),
    case is_list(Upgrade) andalso string:lowercase(Upgrade) =:= "websocket" of
        true ->
            {websocket, echo_ws, [{callback, basic},
                                  {max_frame_size, ?MAX_MESSAGE_BYTES},
                                  {max_message_size, ?MAX_MESSAGE_BYTES}]};
        false ->
            {content, "text/plain", <<"ok\n">>}
    end.
