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

    def cycle_times(self):
        """Each cycle's time in the capture (seconds from the first), and the capture's span
        including one period: a capture at 5 Hz (the L76K's) is replayed at 5 Hz, and a
        replay in a loop moves the times forward by the span, so GNSS time runs with the wall
        clock (one cycle a second would make it run at a fifth of the speed and jump at every
        loop)."""
        def of_day(cycle):
            for line in cycle:
                fields = line.split(b",")
                if fields[0][3:6] in (b"RMC", b"GGA") and len(fields) > 1 and len(fields[1]) >= 6:
                    try:
                        text = fields[1].decode()
                        return int(text[0:2]) * 3600 + int(text[2:4]) * 60 + float(text[4:])
                    except ValueError:
                        return None
            return None
        times, previous = [], None
        for cycle in self.cycles:
            t = of_day(cycle)
            if t is None:
                t = 0.0 if previous is None else previous + 1.0
            elif previous is not None and t <= previous:
                t += 86400 if previous - t > 43200 else 0
                t = max(t, previous + 0.001)
            times.append(t)
            previous = t
        steps = sorted(b - a for a, b in zip(times, times[1:])) or [1.0]
        period = steps[len(steps) // 2]
        return [t - times[0] for t in times], round(times[-1] - times[0] + period, 3)

    def feed_loop(self):
        offsets, span = self.cycle_times()
        i = 0
        started = time.monotonic()
        while not self.stopped:
            loop, k = divmod(i, len(self.cycles))
            cycle = self.cycles[k]
            shift = round(loop * span, 3)
            i += 1
            payload = b"".join(self.shifted(line, shift) for line in cycle)
            with self.lock:
                for c in list(self.clients):
                    try:
                        c.sendall(payload)
                    except OSError:
                        self.clients.remove(c)
                        c.close()
            next_loop, next_k = divmod(i, len(self.cycles))
            due = started + next_loop * span + offsets[next_k]
            time.sleep(max(0.0, due - time.monotonic()))

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
