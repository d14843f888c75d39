"""The soak's upstreams, read back at the end: Google's Firestore emulator and PostgreSQL 15."""
import json
import os
import signal
import subprocess
import time
import urllib.request
from common import FIRESTORE, PGBIN, free_port, Failure


class Firestore:
    kind = "firestore"
    trigger = b":commit"

    def __init__(self, work):
        self.port = free_port()
        self.project = "demo-mwgate-soak"
        self.proc = subprocess.Popen([FIRESTORE, "start", "--host=127.0.0.1", f"--port={self.port}",
                                      f"--project_id={self.project}"],
                                     stdout=open(f"{work}/firestore.log", "wb"), stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=2)
                return
            except Exception:
                time.sleep(0.5)
        self.stop()
        raise Failure("the Firestore emulator did not answer within 120 s")

    def sink_config(self, proxy_port):
        return f'[sink]\ntype = "firestore"\nmax_requests_per_second = 20\n\n[sink.firestore]\n' \
               f'project_id = "{self.project}"\nemulator_host = "127.0.0.1:{proxy_port}"\n'

    def documents(self):
        base = f"http://127.0.0.1:{self.port}/v1/projects/{self.project}/databases/(default)/documents/realtime_data"
        docs, token = [], None
        while True:
            url = base + "?pageSize=100" + (f"&pageToken={token}" if token else "")
            req = urllib.request.Request(url, headers={"Authorization": "Bearer owner"})
            body = json.load(urllib.request.urlopen(req, timeout=120))
            for d in body.get("documents", []):
                f = plain({"mapValue": {"fields": d.get("fields", {})}})
                docs.append({"name": d["name"].rsplit("/", 1)[-1], "session": f["session_id"], "board": f["board"],
                             "seq": f["seq"], "data": f["data"]})
            token = body.get("nextPageToken")
            if not token:
                return docs

    def stop(self):
        # The whole process group: the launcher script may exit before its java child does.
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            for _ in range(100):
                os.killpg(self.proc.pid, 0)
                time.sleep(0.1)
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def plain(value):
    """Firestore's typed JSON to plain Python values."""
    if "mapValue" in value:
        return {k: plain(v) for k, v in value["mapValue"].get("fields", {}).items()}
    if "arrayValue" in value:
        return [plain(v) for v in value["arrayValue"].get("values", [])]
    if "integerValue" in value:
        return int(value["integerValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "stringValue" in value:
        return value["stringValue"]
    if "booleanValue" in value:
        return value["booleanValue"]
    if "nullValue" in value:
        return None
    if "timestampValue" in value:
        return value["timestampValue"]
    return value


class Postgres:
    kind = "postgres"
    trigger = b"COMMIT"

    def __init__(self, work):
        self.dir = f"{work}/pg"
        os.makedirs(self.dir)
        self.as_user = []
        if os.getuid() == 0:
            os.chown(self.dir, 65534, 65534)
            os.chmod(self.dir, 0o700)
            self.as_user = ["/usr/sbin/runuser", "-u", "nobody", "--"]
        self.port = free_port()
        r = subprocess.run(self.as_user + [f"{PGBIN}/initdb", "-D", f"{self.dir}/data", "-A", "trust", "-U", "postgres",
                                           "--no-sync", "-E", "UTF8"], capture_output=True, text=True)
        if r.returncode != 0:
            raise Failure(f"initdb failed: {r.stdout}{r.stderr}")
        self.proc = subprocess.Popen(self.as_user + [f"{PGBIN}/postgres", "-D", f"{self.dir}/data", "-c",
                                                     "listen_addresses=127.0.0.1", "-p", str(self.port), "-k", self.dir,
                                                     "-c", "fsync=off"],
                                     stdout=open(f"{work}/postgres.log", "wb"), stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if subprocess.run([f"{PGBIN}/pg_isready", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres"],
                              capture_output=True).returncode == 0:
                return
            time.sleep(0.3)
        raise Failure("PostgreSQL did not start within 60 s")

    def sink_config(self, proxy_port):
        return f'[sink]\ntype = "postgres"\nmax_requests_per_second = 20\n\n[sink.postgres]\n' \
               f'host = "127.0.0.1"\nport = {proxy_port}\nuser = "postgres"\ndatabase = "postgres"\nsslmode = "disable"\n'

    def psql(self, sql):
        r = subprocess.run([f"{PGBIN}/psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", "postgres",
                            "-At", "-v", "ON_ERROR_STOP=1", "-c", sql], capture_output=True, text=True)
        if r.returncode != 0:
            raise Failure(f"psql failed: {r.stderr}")
        return r.stdout

    def documents(self):
        out = self.psql("SELECT json_build_object('name', name, 'session', session_id, 'board', board, 'seq', seq, "
                        "'data', data) FROM realtime_data")
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def stop(self):
        # Signal the postmaster itself: runuser does not pass signals on.
        try:
            with open(f"{self.dir}/data/postmaster.pid") as f:
                pid = int(f.readline())
            os.kill(pid, signal.SIGINT)
            for _ in range(200):
                os.kill(pid, 0)
                time.sleep(0.1)
            os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass
        try:
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
