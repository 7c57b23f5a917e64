"""A loopback TCP server for the load-test tests: it reads one request head and answers with whatever bytes
`answer(sock)` sends — well-formed or malformed HTTP, a redirect, a trickle — then closes."""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Callable


class _Handler(socketserver.BaseRequestHandler):
    answer: Callable[[socket.socket], None]

    def handle(self) -> None:
        self.request.settimeout(5)
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = self.request.recv(65536)
                if not chunk:
                    return
                data += chunk
            type(self).answer(self.request)
        except OSError:
            pass


def serve(answer: Callable[[socket.socket], None] | bytes) -> socketserver.ThreadingTCPServer:
    """A started server on 127.0.0.1 (port in `server.server_address[1]`); `answer` is the bytes to send, or a
    function that writes to the socket. Call `shutdown()` and `server_close()` when done."""
    send = answer if callable(answer) else (lambda sock: sock.sendall(answer))
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), type("Handler", (_Handler,),
                                                                   {"answer": staticmethod(send)}))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
