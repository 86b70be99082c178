/*
 * Why this exists: the C10K seed's Java server, Webbit 0.4.15 (Netty 3.5 inside), as a
 * WebSocket echo server for `wsbench compare`. Text comes back as text, binary as binary;
 * Webbit answers pings and completes the close handshake itself. A GET without an Upgrade
 * header gets 200 (for the rtt scenario's HTTP row).
 *
 * Webbit runs one Netty I/O worker plus one handler thread (its defaults, as in the seed).
 * It has no frame size limit to raise. It never sets a listen backlog (the JDK then uses 50),
 * so after start the listening socket is re-listened with 4096 (Linux updates the backlog of a
 * listening socket); that needs the Add-Opens entry in the jar's manifest (see pom.xml).
 *
 * Usage: java -jar target/echo.jar PORT   (0 picks a free port)
 * Prints `listening on ws://127.0.0.1:PORT` once it accepts connections.
 */
package echo;

import java.io.FileDescriptor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.concurrent.Executors;

import org.webbitserver.BaseWebSocketHandler;
import org.webbitserver.HttpControl;
import org.webbitserver.HttpHandler;
import org.webbitserver.HttpRequest;
import org.webbitserver.HttpResponse;
import org.webbitserver.WebSocketConnection;
import org.webbitserver.handler.HttpToWebSocketHandler;
import org.webbitserver.netty.NettyWebServer;

public final class EchoServer {
    private static final int LISTEN_BACKLOG = 4096;

    /** Echoes every message with its own opcode; pings are answered by pong. */
    static final class Echo extends BaseWebSocketHandler {
        @Override
        public void onMessage(WebSocketConnection connection, String text) {
            connection.send(text);
        }

        @Override
        public void onMessage(WebSocketConnection connection, byte[] binary) {
            connection.send(binary);
        }

        @Override
        public void onPing(WebSocketConnection connection, byte[] payload) {
            connection.pong(payload);
        }
    }

    /** Upgrade requests go to the echo handler on any path; plain requests get 200. */
    static final class Route implements HttpHandler {
        private final HttpHandler websocket = new HttpToWebSocketHandler(new Echo());

        @Override
        public void handleHttpRequest(HttpRequest request, HttpResponse response, HttpControl control)
                throws Exception {
            String upgrade = request.header("Upgrade");
            if (upgrade != null && upgrade.equalsIgnoreCase("websocket")) {
                websocket.handleHttpRequest(request, response, control);
            } else {
                response.status(200).header("Content-Type", "text/plain").content("ok\n").end();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        int port;
        try {
            port = Integer.parseInt(args[0]);
        } catch (RuntimeException e) {
            System.err.println("usage: java -jar target/echo.jar PORT   (0 picks a free port)");
            System.exit(2);
            return;
        }
        InetSocketAddress address = new InetSocketAddress("127.0.0.1", port);
        NettyWebServer server = new NettyWebServer(
                Executors.newSingleThreadExecutor(), address, URI.create("http://127.0.0.1:" + port + "/"));
        server.add(new Route());
        try {
            server.start().get();
        } catch (Exception e) {
            System.err.println("java-webbit: cannot listen on 127.0.0.1:" + port + ": " + e.getCause());
            System.exit(1);
        }
        Object nettyChannel = field(server, NettyWebServer.class, "channel");
        java.nio.channels.ServerSocketChannel socket =
                (java.nio.channels.ServerSocketChannel) field(nettyChannel, nettyChannel.getClass(), "socket");
        raiseBacklog(socket);
        int bound = ((InetSocketAddress) socket.getLocalAddress()).getPort();
        System.out.println("listening on ws://127.0.0.1:" + bound);
        System.out.flush();
    }

    /** listen(2) again on the bound socket: Linux keeps the socket and takes the new backlog. */
    private static void raiseBacklog(java.nio.channels.ServerSocketChannel socket) {
        try {
            FileDescriptor fd = (FileDescriptor) field(socket, socket.getClass(), "fd");
            Method listen = Class.forName("sun.nio.ch.Net").getDeclaredMethod("listen", FileDescriptor.class, int.class);
            listen.setAccessible(true);
            listen.invoke(null, fd, LISTEN_BACKLOG);
        } catch (ReflectiveOperationException | RuntimeException e) {
            System.err.println("java-webbit: listen backlog stays at the JDK default (50): " + e);
        }
    }

    private static Object field(Object target, Class<?> type, String name) throws ReflectiveOperationException {
        Field f = type.getDeclaredField(name);
        f.setAccessible(true);
        return f.get(target);
    }
}
