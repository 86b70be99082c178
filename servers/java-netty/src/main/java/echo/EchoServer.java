/*
 * Why this exists: Netty 4.1 (native epoll transport) as a WebSocket echo server for
 * `wsbench compare`. One EpollEventLoopGroup(1) accepts and serves every connection, so the
 * whole server is one event loop, like the seeds' single-threaded servers.
 *
 * The pipeline is Netty's own: HttpServerCodec + HttpObjectAggregator for the upgrade request,
 * WebSocketServerProtocolHandler for the handshake, pings (it answers with pong), the close
 * handshake and UTF-8 checks, WebSocketFrameAggregator to join fragmented messages, then Echo,
 * which writes each text or binary message back as the same frame type. A GET without an
 * Upgrade header gets 200 (for the rtt scenario's HTTP row).
 *
 * maxFramePayloadLength is raised to 128 MiB: Netty's default (65,536) closes 1 MiB messages
 * with 1009. A protocol error closes only its own connection (Netty sends 1002 or 1007).
 *
 * Usage: java -jar target/echo.jar PORT   (0 picks a free port)
 * Prints `listening on ws://127.0.0.1:PORT` once it accepts connections.
 */
package echo;

import java.net.InetSocketAddress;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler.Sharable;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.epoll.EpollEventLoopGroup;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.TextWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketDecoderConfig;
import io.netty.handler.codec.http.websocketx.WebSocketFrameAggregator;
import io.netty.handler.codec.http.websocketx.WebSocketServerProtocolConfig;
import io.netty.handler.codec.http.websocketx.WebSocketServerProtocolHandler;
import io.netty.util.CharsetUtil;
import io.netty.util.ReferenceCountUtil;

public final class EchoServer {
    private static final int MAX_MESSAGE_BYTES = 128 << 20;
    private static final int LISTEN_BACKLOG = 4096;

    /** Writes every text or binary message back unchanged (same frame, same opcode). */
    @Sharable
    static final class Echo extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof TextWebSocketFrame || msg instanceof BinaryWebSocketFrame) {
                ctx.writeAndFlush(msg);
            } else {
                ReferenceCountUtil.release(msg);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close(); // resets from departing benchmark clients are expected: stay quiet
        }
    }

    /** Answers plain HTTP requests with 200; passes upgrade requests on to the handshake. */
    @Sharable
    static final class PlainHttp extends ChannelInboundHandlerAdapter {
        private static final byte[] BODY = "ok\n".getBytes(CharsetUtil.US_ASCII);

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (!(msg instanceof FullHttpRequest)) {
                ctx.fireChannelRead(msg);
                return;
            }
            FullHttpRequest request = (FullHttpRequest) msg;
            if (request.headers().containsValue(HttpHeaderNames.UPGRADE, HttpHeaderValues.WEBSOCKET, true)) {
                ctx.fireChannelRead(msg);
                return;
            }
            boolean keepAlive = HttpUtil.isKeepAlive(request);
            request.release();
            ByteBuf body = Unpooled.wrappedBuffer(BODY);
            FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK, body);
            response.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/plain");
            response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.readableBytes());
            if (keepAlive) {
                ctx.writeAndFlush(response);
            } else {
                ctx.writeAndFlush(response).addListener(ChannelFutureListener.CLOSE);
            }
        }
    }

    public static void main(String[] args) throws InterruptedException {
        int port;
        try {
            port = Integer.parseInt(args[0]);
        } catch (RuntimeException e) {
            System.err.println("usage: java -jar target/echo.jar PORT   (0 picks a free port)");
            System.exit(2);
            return;
        }
        WebSocketServerProtocolConfig websocket = WebSocketServerProtocolConfig.newBuilder()
                .websocketPath("/")
                .checkStartsWith(true)
                .decoderConfig(WebSocketDecoderConfig.newBuilder().maxFramePayloadLength(MAX_MESSAGE_BYTES).build())
                .build();
        PlainHttp plainHttp = new PlainHttp();
        Echo echo = new Echo();
        EpollEventLoopGroup loop = new EpollEventLoopGroup(1);
        ServerBootstrap bootstrap = new ServerBootstrap()
                .group(loop)
                .channel(EpollServerSocketChannel.class)
                .option(ChannelOption.SO_BACKLOG, LISTEN_BACKLOG)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ChannelPipeline p = ch.pipeline();
                        p.addLast(new HttpServerCodec());
                        p.addLast(new HttpObjectAggregator(65536));
                        p.addLast(plainHttp);
                        p.addLast(new WebSocketServerProtocolHandler(websocket));
                        p.addLast(new WebSocketFrameAggregator(MAX_MESSAGE_BYTES));
                        p.addLast(echo);
                    }
                });
        Channel server;
        try {
            server = bootstrap.bind(new InetSocketAddress("127.0.0.1", port)).sync().channel();
        } catch (Exception e) {
            System.err.println("java-netty: cannot listen on 127.0.0.1:" + port + ": " + e);
            System.exit(1);
            return;
        }
        System.out.println("listening on ws://127.0.0.1:" + ((InetSocketAddress) server.localAddress()).getPort());
        System.out.flush();
        server.closeFuture().sync();
    }
}
