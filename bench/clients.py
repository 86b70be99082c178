"""The client leaderboard's measuring half (bench/clients.sh installs the tools, then runs this).

Every run gets a fresh `wsbench serve` pinned to SERVER_CPU and one client pinned to
CLIENT_CPU. The bench, not the tool, takes the figures that are compared, the same way for
every tool: it waits (up to START_WAIT seconds) until the server holds every connection
(asking `wsbench serve` for its counts with SIGUSR1), lets WARMUP seconds pass, then reads the server's echo count and the
client process tree's CPU time (utime + stime + cutime + cstime of the client and its
descendants, /proc/PID/stat) at the start and the end of a DURATION-second window:

    round trips/s        = server echoes in the window / window length
    client CPU per trip  = client CPU in the window / server echoes in the window

Beside them stand the tool's own figures (its rate, its count of echoes over the whole run,
its latency percentiles) and the server's count over the whole run, so a tool that miscounts
shows. Tools run in a rotating order each repeat; the table gives medians over the repeats.
"""

import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
PEERS = BENCH / "peers" / "clients"
# Set by bench/clients.sh (not needed to re-render a table: `clients.py --table RUNS.jsonl`).
WSBENCH = os.environ.get("WSBENCH_BIN", "wsbench")
NODE_DIR = Path(os.environ.get("NODE_DIR", "."))
VENV_PYTHON = os.environ.get("VENV_PYTHON", "python3")

REPEATS = int(os.environ.get("REPEATS", 3))
WARMUP = float(os.environ.get("WARMUP", 2))
DURATION = float(os.environ.get("DURATION", 5))
START_WAIT = float(os.environ.get("START_WAIT", 30))
RATE = int(os.environ.get("RATE", 10000))
SERVER_CPU = os.environ.get("SERVER_CPU", "0")
CLIENT_CPU = os.environ.get("CLIENT_CPU", "1")
ALL_TOOLS = ["wsbench-uring", "wsbench-epoll", "artillery", "node-ws", "python-websockets"]
TOOLS = os.environ.get("TOOLS", " ".join(ALL_TOOLS)).split()
# (name, connections, open-loop rate or 0 for a closed loop)
SCENARIOS = [("closed", 100, 0), ("closed", 1000, 0), ("open", 100, RATE)]
# How long every client runs once its connections are open: the window must fit in it.
CLIENT_SECONDS = WARMUP + DURATION + 2
# Artillery has no such moment: its users stop when the bench creates a file after the window
# (or, failing that, this long after its processor is loaded).
ARTILLERY_SECONDS = START_WAIT + CLIENT_SECONDS + 10
TICK = os.sysconf("SC_CLK_TCK")
PAYLOAD = "a" * 20


def tree_cpu_seconds(root):
    """CPU seconds of `root` and every descendant (each with its reaped children)."""
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                text = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = text[text.rindex(")") + 2:].split()
            stats[int(entry)] = (int(fields[1]), sum(int(f) for f in fields[11:15]))
    tree, total, grew = {root}, 0, True
    while grew:
        grew = False
        for pid, (ppid, _) in stats.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    for pid in tree:
        total += stats.get(pid, (0, 0))[1]
    return total / TICK


def machine_busy_seconds():
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    return sum(int(f) for f in fields[:3] + fields[5:8]) / TICK


class Server:
    """A pinned `wsbench serve` on a free port, asked for its counts with SIGUSR1."""

    def __init__(self, log):
        self.log = log
        self.proc = subprocess.Popen(["taskset", "-c", SERVER_CPU, WSBENCH, "serve", "--port", "0"],
                                     stdout=open(log, "w"), stderr=subprocess.STDOUT)
        self.port = None
        for _ in range(100):
            lines = self.lines()
            if lines and lines[0].startswith("listening on"):
                self.port = int(lines[0].split()[2].rsplit(":", 1)[1])
                return
            time.sleep(0.05)
        raise SystemExit(f"clients.py: wsbench serve did not start: {Path(log).read_text()}")

    def lines(self):
        return Path(self.log).read_text().splitlines()

    def counts(self):
        """(echoed messages, open connections) now."""
        before = len(self.lines())
        self.proc.send_signal(signal.SIGUSR1)
        for _ in range(200):
            lines = self.lines()
            if len(lines) > before and lines[-1].startswith("echoed "):
                words = lines[-1].split()
                return int(words[1]), int(words[3])
            time.sleep(0.005)
        raise SystemExit("clients.py: wsbench serve did not answer SIGUSR1")

    def stop(self):
        """Stops it; returns its count over the whole run."""
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=10)
        return int(self.lines()[-1].split()[1])


def wsbench_client(io):
    def command(url, conns, rate, out):
        argv = [WSBENCH, "run", "echo", url, "--connections", str(conns), "--warmup", f"{WARMUP}s",
                "--duration", f"{CLIENT_SECONDS - WARMUP}s", "--payload", "bytes:20", "--binary",
                "--client-cpus", CLIENT_CPU, "--io", io, "--quiet", "--json", str(out / "result.json")]
        return argv + (["--rate", f"{rate}/s"] if rate else []), {}

    def parse(stdout, out):
        s = json.loads((out / "result.json").read_text())["summary"]
        lat = s["latency_us"]
        return {"own_rate": s["echoes_per_sec"], "own_total": s["messages"]["received"],
                "p50_us": lat["p50"], "p99_us": lat["p99"], "p999_us": lat["p999"]}
    return command, parse


def artillery_command(url, conns, rate, out):
    if rate:
        steps = [{"send": PAYLOAD}, {"think": f"{conns * 1000 // rate}ms"}]
    else:
        steps = [{"send": {"payload": PAYLOAD, "capture": {"regexp": "a+", "as": "echo"}}}]
    loop = "\n".join("          " + line for line in json.dumps(steps, indent=2).splitlines())
    config = (PEERS / "artillery-echo.yml").read_text().replace("@PORT@", url.rsplit(":", 1)[1].rstrip("/"))
    config = config.replace("@CONNECTIONS@", str(conns)).replace("@STEPS@", loop)
    (out / "artillery.yml").write_text(config)
    (out / "artillery-echo.js").write_text((PEERS / "artillery-echo.js").read_text())
    env = {"WSBENCH_SECONDS": str(ARTILLERY_SECONDS), "WSBENCH_STOP_FILE": str(out / "stop"),
           "ARTILLERY_DISABLE_TELEMETRY": "true"}
    return [str(NODE_DIR / "node_modules" / ".bin" / "artillery"), "run", "--output",
            str(out / "report.json"), str(out / "artillery.yml")], env


def artillery_parse(stdout, out):
    aggregate = json.loads((out / "report.json").read_text())["aggregate"]
    counters, rates = aggregate["counters"], aggregate.get("rates", {})
    # Its receive_rate is counted only when a step waits for the echo (the closed loop).
    return {"own_rate": rates.get("websocket.receive_rate"), "own_total": counters.get("websocket.messages_received"), "own_sent": counters.get("websocket.messages_sent"),
            "p50_us": None, "p99_us": None, "p999_us": None}


def script_client(argv0):
    def command(url, conns, rate, out):
        argv = argv0 + [url, str(conns), str(CLIENT_SECONDS), "--warmup", str(WARMUP)]
        return argv + (["--rate", str(rate)] if rate else []), {"NODE_PATH": str(NODE_DIR / "node_modules")}

    def parse(stdout, out):
        return json.loads(stdout.strip().splitlines()[-1])
    return command, parse


CLIENTS = {
    "wsbench-uring": wsbench_client("uring"),
    "wsbench-epoll": wsbench_client("epoll"),
    "artillery": (artillery_command, artillery_parse),
    "node-ws": script_client(["node", str(PEERS / "node-ws-echo.js")]),
    "python-websockets": script_client([VENV_PYTHON, str(PEERS / "python-websockets-echo.py")]),
}


def measure(tool, conns, rate, out):
    """One run: returns its row (or one with `failed`, saying why)."""
    out.mkdir(parents=True, exist_ok=True)
    server = Server(out / "server.log")
    url = f"ws://127.0.0.1:{server.port}/"
    command, parse = CLIENTS[tool]
    argv, env = command(url, conns, rate, out)
    client = subprocess.Popen(["taskset", "-c", CLIENT_CPU] + argv, env={**os.environ, **env},
                              stdout=subprocess.PIPE, stderr=open(out / "client.err", "w"), text=True, cwd=out)
    started = time.monotonic()
    row = {"tool": tool, "connections": conns, "rate": rate}
    while time.monotonic() - started < START_WAIT and server.counts()[1] < conns:
        time.sleep(0.25)
    time.sleep(WARMUP)
    (e0, open0), cpu0, busy0, s0, t0 = server.counts(), tree_cpu_seconds(client.pid), machine_busy_seconds(), \
        tree_cpu_seconds(server.proc.pid), time.monotonic()
    time.sleep(DURATION)
    (e1, _), cpu1, busy1, s1, t1 = server.counts(), tree_cpu_seconds(client.pid), machine_busy_seconds(), \
        tree_cpu_seconds(server.proc.pid), time.monotonic()
    (out / "stop").touch()
    try:
        stdout, _ = client.communicate(timeout=START_WAIT + ARTILLERY_SECONDS + 30)
    except subprocess.TimeoutExpired:
        client.kill()
        stdout, _ = client.communicate()
        row["failed"] = "did not stop"
    row["server_total"] = server.stop()
    (out / "client.out").write_text(stdout)
    echoes = e1 - e0
    row.update(connected=open0, window_s=t1 - t0, rate_server=echoes / (t1 - t0),
               cpu_us_per_rt=(cpu1 - cpu0) / echoes * 1e6 if echoes else None,
               client_cpu_share=(cpu1 - cpu0) / (t1 - t0),
               others_share=max(0.0, (busy1 - busy0) - (cpu1 - cpu0) - (s1 - s0)) / (t1 - t0))
    try:
        row.update(parse(stdout, out))
    except (OSError, ValueError, KeyError, IndexError) as error:
        row["failed"] = f"no result from the tool ({error!r}); see {out}/client.err"
    if open0 < conns:
        row["failed"] = f"only {open0} of {conns} connections open when the window began"
    return row


def median(rows, key):
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


def fmt(value, spec=",.0f", none="—"):
    return none if value is None else format(value, spec)


def paired(runs, base_runs, key):
    """Median and range of run ÷ the wsbench-uring run of the same repeat (interleaved)."""
    base = {r["repeat"]: r[key] for r in base_runs if r.get(key)}
    ratios = sorted(r[key] / base[r["repeat"]] for r in runs if r.get(key) and r["repeat"] in base)
    if not ratios:
        return "—"
    if len(ratios) == 1:
        return f"{ratios[0]:.2f}"
    return f"{statistics.median(ratios):.2f} ({ratios[0]:.2f}–{ratios[-1]:.2f})"


def table(rows):
    lines = []
    for name, conns, rate in SCENARIOS:
        ok = [r for r in rows if r["connections"] == conns and r["rate"] == rate and "failed" not in r]
        base = [r for r in ok if r["tool"] == "wsbench-uring"]
        loop = f"open loop, {rate:,} msg/s asked over {conns:,} connections" if rate else \
            f"closed loop, {conns:,} connections, one message in flight each"
        lines += ["", f"**{loop}**", ""]
        head = "| tool | round trips/s (server) | ÷ wsbench uring | client CPU µs/round trip | ÷ wsbench uring | "
        head += "client CPU | "
        head += "achieved ÷ asked | " if rate else ""
        head += "own rate | own count ÷ server count | latency p50 / p99 (own, µs) | others' CPU | runs |"
        lines += [head, "|" + "---|" * (head.count(" | ") + 1)]
        for tool in TOOLS:
            runs = [r for r in rows if r["tool"] == tool and r["connections"] == conns and r["rate"] == rate]
            good = [r for r in runs if "failed" not in r]
            if not good:
                lines.append(f"| {tool} | failed: {runs[0]['failed'] if runs else 'not run'} |")
                continue
            for r in good:
                r["count_ratio"] = r["own_total"] / r["server_total"] if r.get("own_total") is not None \
                    and r["server_total"] else None
            rate_s = median(good, "rate_server")
            p50, p99 = median(good, "p50_us"), median(good, "p99_us")
            cells = [tool, fmt(rate_s), paired(good, base, "rate_server"), fmt(median(good, "cpu_us_per_rt"), ".1f"),
                     paired(good, base, "cpu_us_per_rt"), fmt(median(good, "client_cpu_share"), ".0%")]
            if rate:
                cells.append(fmt(rate_s / rate, ".2f"))
            cells += [fmt(median(good, "own_rate"), ",.0f", "does not report"),
                      fmt(median(good, "count_ratio"), ".4f", "does not count echoes"),
                      "does not time messages" if p50 is None else f"{fmt(p50)} / {fmt(p99)}",
                      fmt(median(good, "others_share"), ".0%"), f"{len(good)}/{len(runs)}"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    if sys.argv[1:2] == ["--table"]:
        path = Path(sys.argv[2])
        header = (path.parent / "header.txt").read_text() if (path.parent / "header.txt").exists() else ""
        print(header + table([json.loads(line) for line in path.read_text().splitlines()]))
        return
    unknown = set(TOOLS) - set(CLIENTS)
    if unknown:
        raise SystemExit(f"clients.py: unknown tools {sorted(unknown)}; known: {' '.join(ALL_TOOLS)}")
    stamp = time.strftime("%Y-%m-%d-%H%M%S")
    out = Path(os.environ.get("OUT", BENCH / ".build" / "clients" / "runs" / stamp))
    rev = subprocess.run(["git", "-C", str(BENCH), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    if subprocess.run(["git", "-C", str(BENCH), "diff", "--quiet", "HEAD"]).returncode:
        rev += "+changes"

    cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    header = [f"bench/clients.sh at {rev}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
              f"machine: {os.cpu_count()} CPUs, {cpu}, Linux {os.uname().release}, "
              f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB",
              f"command: REPEATS={REPEATS} WARMUP={WARMUP:g} DURATION={DURATION:g} RATE={RATE} bench/clients.sh",
              f"server `wsbench serve` on CPU {SERVER_CPU}, client on CPU {CLIENT_CPU}; 20-byte messages; "
              f"load average at the start: {' '.join(open('/proc/loadavg').read().split()[:3])}"]
    print("\n".join(header), flush=True)
    rows = []
    out.mkdir(parents=True, exist_ok=True)
    (out / "header.txt").write_text("\n".join(header) + "\n")
    with open(out / "runs.jsonl", "w") as log:
        for repeat in range(REPEATS):
            for name, conns, rate in SCENARIOS:
                for k in range(len(TOOLS)):
                    tool = TOOLS[(k + repeat) % len(TOOLS)]
                    row = measure(tool, conns, rate, out / f"{repeat}-{name}-{conns}-{tool}")
                    row["repeat"] = repeat
                    rows.append(row)
                    log.write(json.dumps(row) + "\n")
                    log.flush()
                    print(f"  repeat {repeat + 1} {name} {conns} {tool}: {fmt(row['rate_server'])}/s, "
                          f"{fmt(row.get('cpu_us_per_rt'), '.1f')} µs CPU/rt, own {row.get('own_total')} "
                          f"of server {row['server_total']}, others {fmt(row['others_share'], '.0%')}"
                          + (f", FAILED: {row['failed']}" if "failed" in row else ""), file=sys.stderr, flush=True)
    header.append(f"load average at the end: {' '.join(open('/proc/loadavg').read().split()[:3])}")
    text = "\n".join(header) + "\n" + table(rows) + "\n"
    (out / "table.md").write_text(text)
    print(text)
    print(f"runs and logs: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
