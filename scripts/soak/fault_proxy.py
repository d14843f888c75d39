"""A TCP proxy in front of the soak's upstream: pass, refuse (outage: nothing listens) or drop
the response to the next request(s) after the upstream got them (unknown outcome for the
client)."""
import select
import socket
import threading
import time
from common import LoopbackListener


class FaultProxy(LoopbackListener):
    def __init__(self, upstream_port, trigger):
        self.upstream_port = upstream_port
        self.trigger = trigger  # bytes in a client message whose response may be dropped
        self.lock = threading.Lock()
        self.pairs = []
        self.drops_pending = 0
        self.drops_done = 0
        self.start_listening(backlog=16)

    def accepted(self, client):
        try:
            server = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
        except OSError:
            client.close()
            return
        pair = (client, server)
        with self.lock:
            self.pairs.append(pair)
        threading.Thread(target=self.pump, args=(pair,), daemon=True).start()

    def pump(self, pair):
        client, server = pair
        armed_at = None  # a triggering request went through while a drop was pending
        try:
            while not self.stopped:
                readable, _, _ = select.select([client, server], [], [], 0.2)
                if armed_at is not None and time.monotonic() - armed_at > 0.5:
                    break  # the upstream had time to commit; the client never hears back
                for s in readable:
                    data = s.recv(65536)
                    if not data:
                        raise OSError("closed")
                    if s is client:
                        server.sendall(data)
                        if armed_at is None and self.trigger in data:
                            with self.lock:
                                if self.drops_pending > 0:
                                    self.drops_pending -= 1
                                    self.drops_done += 1
                                    armed_at = time.monotonic()
                    elif armed_at is None:
                        client.sendall(data)
        except OSError:
            pass
        finally:
            for s in pair:
                try:
                    s.close()
                except OSError:
                    pass
            with self.lock:
                if pair in self.pairs:
                    self.pairs.remove(pair)

    def outage(self):
        with self.lock:
            self.close_listener()
            for pair in self.pairs:
                for s in pair:
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

    def restore(self):
        with self.lock:
            if self.listener is None:
                self.listen()

    def drop_responses(self, count):
        with self.lock:
            self.drops_pending += count

    def stop(self):
        self.stopped = True
        self.outage()
