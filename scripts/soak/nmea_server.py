"""The soak's GNSS receiver: an NMEA replay served over TCP, with unplug (listener closed,
clients cut) and return."""
import threading
import time
from common import Failure, LoopbackListener


class NMEAServer(LoopbackListener):
    def __init__(self, path):
        with open(path, "rb") as f:
            lines = [l.rstrip(b"\r\n") + b"\r\n" for l in f if l.startswith(b"$")]
        # Cycles by the UTC time of RMC/GGA: one cycle per second of replay.
        self.cycles, current, key = [], [], None
        for line in lines:
            fields = line.split(b",")
            if fields[0][3:6] in (b"RMC", b"GGA") and len(fields) > 1:
                if key is not None and fields[1] != key and current:
                    self.cycles.append(current)
                    current = []
                key = fields[1]
            current.append(line)
        if current:
            self.cycles.append(current)
        if not self.cycles:
            raise Failure(f"no NMEA sentences in {path}")
        self.lock = threading.Lock()
        self.clients = []
        self.plugged = True
        self.start_listening(backlog=4)
        threading.Thread(target=self.feed_loop, daemon=True).start()

    def accepting(self):
        return self.plugged

    def accepted(self, conn):
        with self.lock:
            if self.plugged:
                self.clients.append(conn)
            else:
                conn.close()

    @staticmethod
    def shifted(line, seconds):
        """The sentence with its UTC time (and RMC's date) moved forward, checksum redone, so
        a capture replayed in a loop keeps GNSS time going forward."""
        if seconds == 0:
            return line
        body = line.strip()[1:].split(b"*")[0]
        fields = body.split(b",")
        kind = fields[0][2:5]
        position = {b"RMC": 1, b"GGA": 1, b"GNS": 1, b"GST": 1, b"ZDA": 1, b"GLL": 5}.get(kind)
        if position is None or len(fields) <= position or len(fields[position]) < 6:
            return line
        try:
            text = fields[position].decode()
            of_day = int(text[0:2]) * 3600 + int(text[2:4]) * 60 + float(text[4:])
        except ValueError:
            return line
        total = of_day + seconds
        days, of_day = divmod(total, 86400)
        h, rest = divmod(of_day, 3600)
        m, sec = divmod(rest, 60)
        decimals = len(text.split(".")[1]) if "." in text else 0
        width = 3 + decimals if decimals else 2
        fields[position] = f"{int(h):02d}{int(m):02d}{sec:0{width}.{decimals}f}".encode()
        if days and kind == b"RMC" and len(fields) > 9 and len(fields[9]) == 6:
            import datetime
            try:
                d = datetime.date(2000 + int(fields[9][4:6]), int(fields[9][2:4]), int(fields[9][0:2]))
                d += datetime.timedelta(days=int(days))
                fields[9] = d.strftime("%d%m%y").encode()
            except ValueError:
                pass
        body = b",".join(fields)
        checksum = 0
        for byte in body:
            checksum ^= byte
        return b"$" + body + b"*%02X\r\n" % checksum

    def feed_loop(self):
        i = 0
        # Paced by the wall clock, not a second's sleep after each cycle's work: on a loaded
        # machine the work and the late wake-ups made the replay's GNSS time run 2-3 % slow,
        # 1-2 s a minute, which the daemon's GNSS correction of the clock then had to follow.
        started = time.monotonic()
        while not self.stopped:
            cycle = self.cycles[i % len(self.cycles)]
            shift = (i // len(self.cycles)) * len(self.cycles)
            i += 1
            payload = b"".join(self.shifted(line, shift) for line in cycle)
            with self.lock:
                for c in list(self.clients):
                    try:
                        c.sendall(payload)
                    except OSError:
                        self.clients.remove(c)
                        c.close()
            time.sleep(max(0.0, started + i - time.monotonic()))

    def unplug(self):
        with self.lock:
            self.plugged = False
            for c in self.clients:
                c.close()
            self.clients = []
            self.close_listener()

    def replug(self):
        with self.lock:
            if self.plugged:
                return
            self.listen()
            self.plugged = True

    def stop(self):
        self.stopped = True
        self.unplug()
