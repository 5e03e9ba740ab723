"""The load generators' own network (--netns): one network namespace per k6 instance, each a
separate load host, connected to the server by a veth pair whose root end is a port of a
bridge. The server stays in the root namespace, bound to the bridge's address (a private /24
that no route or address of the host uses), so the upstream service and the database stay on
its loopback. --rtt-ms puts a `tc netem` delay on the root end of each veth: every round trip
from a namespace grows by it (and the probe here measures by how much).

Every name carries the lab's prefix and the runner's PID (labn<pid>b the bridge, labn<pid>h<i>
a veth's root end, labn<pid>n<i> its end inside namespace labn<pid>-<i>): what the lab made is
told from what it did not by its name, and what a killed run left (its PID gone) is removed
by the next run (leftovers, remove_leftovers). Interfaces of any other name are never touched.
Root only: `ip` and `tc` change the host's network."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psutil

from lab.errors import UsageError

PREFIX = "labn"
# Candidates for the bridge's /24, the first one that nothing of the host overlaps.
SUBNETS = tuple(ipaddress.IPv4Network(f"10.213.{k}.0/24") for k in range(256))
COMMAND_TIMEOUT_S = 10.0
PROBE_CONNECTS = 20  # TCP connects per probe: each is one round trip (SYN, SYN-ACK)
PROBE_TIMEOUT_S = 30.0
PROBE_INDEX = 999  # the namespace netem_available makes (labn<pid>-999)
_LINK = re.compile(rf"^{PREFIX}(\d+)[bhn]\d*$")
_NAMESPACE = re.compile(rf"^{PREFIX}(\d+)-\d+$")


class NetworkUnavailable(UsageError):
    """The namespaces cannot be made here (not root, no `ip`, no netem): one line, exit 2."""


def is_root() -> bool:
    """Whether this process may change the host's network (tests replace it)."""
    return os.geteuid() == 0


def check(rtt_ms: float | None) -> None:
    """Before anything starts: root, and the tools the network needs (NetworkUnavailable)."""
    if not is_root():
        raise NetworkUnavailable(
            "--netns needs root: it creates network namespaces, veth pairs and a bridge "
            "(run as root, or drop --netns)"
        )
    for tool in ("ip", *(["tc"] if rtt_ms else [])):
        if not shutil.which(tool):
            raise NetworkUnavailable(f"--netns needs `{tool}` (iproute2), which is not installed")
    if rtt_ms and not netem_available():
        raise NetworkUnavailable(
            "--rtt-ms needs tc's netem qdisc, which this kernel lacks (CONFIG_NET_SCH_NETEM)"
        )


def netem_available() -> bool:
    """Whether the kernel has netem: tried on a veth pair inside a namespace of the lab's
    own, made and removed for it (the host's interfaces are not touched)."""
    ns = f"{PREFIX}{os.getpid()}-{PROBE_INDEX}"
    inside = ["ip", "-n", ns]
    try:
        steps = [
            ["ip", "netns", "add", ns],
            [*inside, "link", "add", "probe", "type", "veth", "peer", "name", "probe1"],
            ["tc", "-n", ns, "qdisc", "add", "dev", "probe", "root", "netem", "delay", "1ms"],
        ]
        return all(_run(step).returncode == 0 for step in steps)
    finally:
        _run(["ip", "netns", "del", ns])  # its veth pair goes with it


@dataclass(frozen=True)
class Network:
    """The namespaces of one run: count load hosts on subnet, named after the runner's pid."""

    pid: int
    subnet: ipaddress.IPv4Network
    count: int
    delay_ms: float | None = None  # netem's delay on each link (--rtt-ms)
    rtt_ms: float | None = None  # the round trip the probe measured beyond the root's own

    @property
    def bridge(self) -> str:
        return f"{PREFIX}{self.pid}b"

    def namespace(self, i: int) -> str:
        return f"{PREFIX}{self.pid}-{i}"

    def host_veth(self, i: int) -> str:
        return f"{PREFIX}{self.pid}h{i}"

    def inner_veth(self, i: int) -> str:
        return f"{PREFIX}{self.pid}n{i}"

    @property
    def server_address(self) -> str:
        """Where the server listens: the bridge's address."""
        return str(self.subnet[1])

    def address(self, i: int) -> str:
        """Load host i's address."""
        return str(self.subnet[i + 2])

    def exec_prefix(self, i: int) -> list[str]:
        """The command prefix that runs a program inside load host i."""
        return ["ip", "netns", "exec", self.namespace(i)]

    def owns(self, host: str) -> bool:
        """Whether host is this network's server address (the only one the lab loads)."""
        return host == self.server_address

    def to_json(self) -> dict[str, Any]:
        return {
            "bridge": self.bridge,
            "subnet": str(self.subnet),
            "server": self.server_address,
            "namespaces": [self.namespace(i) for i in range(self.count)],
            "delay_ms": self.delay_ms,
            "rtt_ms": self.rtt_ms,
        }


def up_commands(net: Network) -> list[list[str]]:
    """The `ip` and `tc` commands that make the network, in order."""
    prefix = net.subnet.prefixlen
    commands = [
        ["ip", "link", "add", net.bridge, "type", "bridge"],
        ["ip", "addr", "add", f"{net.server_address}/{prefix}", "dev", net.bridge],
        ["ip", "link", "set", net.bridge, "up"],
    ]
    for i in range(net.count):
        ns, host, inner = net.namespace(i), net.host_veth(i), net.inner_veth(i)
        inside = ["ip", "-n", ns]
        commands += [
            ["ip", "netns", "add", ns],
            ["ip", "link", "add", host, "type", "veth", "peer", "name", inner, "netns", ns],
            ["ip", "link", "set", host, "master", net.bridge, "up"],
            [*inside, "addr", "add", f"{net.address(i)}/{prefix}", "dev", inner],
            [*inside, "link", "set", inner, "up"],
            [*inside, "link", "set", "lo", "up"],
        ]
        if net.delay_ms:
            # on the way to the load host: each round trip (and a connect's SYN-ACK) waits it
            delay = f"{net.delay_ms:g}ms"
            commands.append(["tc", "qdisc", "add", "dev", host, "root", "netem", "delay", delay])
    return commands


def down_commands(net: Network) -> list[list[str]]:
    """The commands that remove it: each veth (both ends go), each namespace, the bridge.
    Each may fail (already gone): the removal tries them all."""
    commands = [["ip", "link", "del", net.host_veth(i)] for i in range(net.count)]
    commands += [["ip", "netns", "del", net.namespace(i)] for i in range(net.count)]
    return [*commands, ["ip", "link", "del", net.bridge]]


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
    )


def _json(command: list[str]) -> list[dict[str, Any]]:
    done = _run(command)
    if done.returncode != 0:
        return []
    with contextlib.suppress(ValueError):
        data = json.loads(done.stdout or "[]")
        return data if isinstance(data, list) else []
    return []


def link_names() -> list[str]:
    return [str(link.get("ifname", "")) for link in _json(["ip", "-j", "link", "show"])]


def namespace_names() -> list[str]:
    return [str(ns.get("name", "")) for ns in _json(["ip", "-j", "netns", "list"])]


def ours(names: list[str], pid: int | None = None) -> list[str]:
    """The names among these that the lab made (of the runner `pid`, or of any)."""
    found = []
    for name in names:
        match = _LINK.match(name) or _NAMESPACE.match(name)
        if match and (pid is None or int(match.group(1)) == pid):
            found.append(name)
    return found


def leftovers(
    links: list[str], namespaces: list[str], alive: Callable[[int], bool] = psutil.pid_exists
) -> dict[str, list[str]]:
    """What runs that are gone left: the lab's links and namespaces whose PID is not alive."""

    def dead(name: str) -> bool:
        match = _LINK.match(name) or _NAMESPACE.match(name)
        return bool(match) and not alive(int(match.group(1)))

    return {
        "links": [n for n in links if _LINK.match(n) and dead(n)],
        "namespaces": [n for n in namespaces if _NAMESPACE.match(n) and dead(n)],
    }


def remove_leftovers() -> list[str]:
    """Remove what killed runs left (the next run's first step, as root); returns the names."""
    if not is_root() or not shutil.which("ip"):
        return []
    left = leftovers(link_names(), namespace_names())
    removed = []
    for name in left["links"]:
        if _run(["ip", "link", "del", name]).returncode == 0:
            removed.append(name)
    for name in left["namespaces"]:
        if _run(["ip", "netns", "del", name]).returncode == 0:
            removed.append(name)
    return removed


def used_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 network the host's addresses and routes cover."""
    nets = []
    for link in _json(["ip", "-j", "-4", "addr", "show"]):
        for a in link.get("addr_info", []):
            with contextlib.suppress(ValueError, KeyError):
                nets.append(ipaddress.IPv4Network(f"{a['local']}/{a['prefixlen']}", strict=False))
    for route in _json(["ip", "-j", "-4", "route", "show", "table", "all"]):
        dst = str(route.get("dst", ""))
        if dst and dst != "default":
            with contextlib.suppress(ValueError):
                nets.append(ipaddress.IPv4Network(dst, strict=False))
    return nets


def free_subnet(used: list[ipaddress.IPv4Network], start: int = 0) -> ipaddress.IPv4Network:
    """The first candidate from `start` on that nothing used overlaps (runs at once, with
    --allow-concurrent, start at their PIDs': they do not race for the same one)."""
    for k in range(len(SUBNETS)):
        candidate = SUBNETS[(start + k) % len(SUBNETS)]
        if not any(candidate.overlaps(u) for u in used):
            return candidate
    raise NetworkUnavailable(f"no free /24 among {SUBNETS[0]}-{SUBNETS[-1]} for the lab's bridge")


def create(count: int, delay_ms: float | None = None, pid: int | None = None) -> Network:
    """The network of count load hosts; on any failure what was made is removed and
    NetworkUnavailable says why in one line."""
    pid = pid or os.getpid()
    net = Network(pid, free_subnet(used_networks(), pid % len(SUBNETS)), count, delay_ms)
    try:
        for command in up_commands(net):
            done = _run(command)
            if done.returncode != 0:
                why = " ".join(done.stderr.split()) or f"exit status {done.returncode}"
                if command[0] == "tc" and "unknown" in why.lower():
                    why += " (--rtt-ms needs the kernel's netem qdisc, sch_netem)"
                raise NetworkUnavailable(f"--netns: `{' '.join(command)}` failed: {why}")
    except BaseException:
        remove(net)
        raise
    return net


def remove(net: Network) -> list[str]:
    """Remove the network (every command tried, each bounded); returns what is still there."""
    for command in down_commands(net):
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            _run(command)
    return ours(link_names(), net.pid) + ours(namespace_names(), net.pid)


# Run inside a namespace by `probe_rtt_ms`: TCP connects to host:port, the median in ms.
_CONNECTS = """
import socket, statistics, sys, time
host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
times = []
for _ in range(count):
    s = socket.socket()
    s.settimeout(5)
    t = time.perf_counter()
    s.connect((host, port))
    times.append((time.perf_counter() - t) * 1000)
    s.close()
print(statistics.median(times))
"""


def connect_ms(host: str, port: int, count: int, prefix: list[str] | None = None) -> float:
    """The median time of count TCP connects to host:port (one round trip each), from the
    root namespace or, with prefix (Network.exec_prefix), from inside a load host."""
    command = [*(prefix or []), sys.executable, "-c", _CONNECTS, host, str(port), str(count)]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        raise NetworkUnavailable(f"--netns: the round-trip probe failed: {done.stderr.strip()}")
    return float(done.stdout.strip())


def probe_rtt_ms(net: Network, count: int = PROBE_CONNECTS) -> float:
    """How much longer a round trip to the server's address is from the load hosts than from
    the root namespace (where the calibration runs): the median of each host's connects less
    the root's, averaged over the hosts. A listening socket of our own answers (the kernel
    completes the handshake: no server is needed)."""
    with socket.socket() as listener:
        listener.bind((net.server_address, 0))
        listener.listen(count * (net.count + 1))
        port = listener.getsockname()[1]
        root = connect_ms(net.server_address, port, count)
        hosts = [
            connect_ms(net.server_address, port, count, net.exec_prefix(i))
            for i in range(net.count)
        ]
    return max(0.0, statistics.fmean(hosts) - root)
