"""lab/proc/netns.py, the load hosts' network namespaces (--netns), without root: the
checks before a run, the `ip` and `tc` commands that make and remove them, the names that
tell the lab's from the host's, and the clean-up after a failed command. The real thing
runs in tests/e2e/test_load_hosts.py."""

from __future__ import annotations

import ipaddress
import subprocess

import pytest

from lab.proc import netns

pytestmark = pytest.mark.unit  # the test's kind: just test-unit


def test_netns_checks_root_then_the_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(netns, "is_root", lambda: True)
    monkeypatch.setattr(netns.shutil, "which", lambda tool: None if tool == "tc" else "/x")
    netns.check(None)  # tc is needed for a delay only
    with pytest.raises(netns.NetworkUnavailable, match="needs `tc`"):
        netns.check(5.0)
    monkeypatch.setattr(netns.shutil, "which", lambda tool: "/x")
    monkeypatch.setattr(netns, "netem_available", lambda: False)
    netns.check(None)  # netem is needed for a delay only
    with pytest.raises(netns.NetworkUnavailable, match="this kernel lacks"):
        netns.check(5.0)
    monkeypatch.setattr(netns, "netem_available", lambda: True)
    netns.check(5.0)


# --- the namespaces' commands and their clean-up ------------------------------------------


NET = netns.Network(4194304, ipaddress.IPv4Network("10.213.7.0/24"), 2, delay_ms=2.5)


def test_the_network_is_named_after_the_runner_within_the_kernels_limit() -> None:
    names = [NET.bridge, *(f(i) for i in range(2) for f in (NET.host_veth, NET.inner_veth))]
    assert names == [
        "labn4194304b", "labn4194304h0", "labn4194304n0", "labn4194304h1", "labn4194304n1"
    ]  # fmt: skip
    assert all(len(n) <= 15 for n in names)  # IFNAMSIZ - 1: the largest pid Linux gives
    assert (NET.server_address, NET.address(0), NET.address(1)) == (
        "10.213.7.1", "10.213.7.2", "10.213.7.3"
    )  # fmt: skip
    assert NET.exec_prefix(1) == ["ip", "netns", "exec", "labn4194304-1"]
    assert NET.owns("10.213.7.1") and not NET.owns("10.213.7.2") and not NET.owns("127.0.0.1")


def test_up_commands_make_a_bridge_and_a_delayed_veth_per_load_host() -> None:
    up = [" ".join(c) for c in netns.up_commands(NET)]
    assert up[:3] == [
        "ip link add labn4194304b type bridge",
        "ip addr add 10.213.7.1/24 dev labn4194304b",
        "ip link set labn4194304b up",
    ]
    assert "ip netns add labn4194304-1" in up
    assert "ip link add labn4194304h1 type veth peer name labn4194304n1 netns labn4194304-1" in up
    assert "ip -n labn4194304-1 addr add 10.213.7.3/24 dev labn4194304n1" in up
    assert "ip link set labn4194304h0 master labn4194304b up" in up
    delays = [c for c in up if c.startswith("tc ")]
    assert delays == [
        "tc qdisc add dev labn4194304h0 root netem delay 2.5ms",
        "tc qdisc add dev labn4194304h1 root netem delay 2.5ms",
    ]
    undelayed = netns.Network(NET.pid, NET.subnet, 2)
    assert not [c for c in netns.up_commands(undelayed) if c[0] == "tc"]


def test_down_commands_remove_everything_up_made() -> None:
    down = [" ".join(c) for c in netns.down_commands(NET)]
    assert down == [
        "ip link del labn4194304h0",
        "ip link del labn4194304h1",
        "ip netns del labn4194304-0",
        "ip netns del labn4194304-1",
        "ip link del labn4194304b",
    ]
    made = {c[3] for c in netns.up_commands(NET) if c[:3] in (["ip", "link", "add"],)}
    made |= {c[3] for c in netns.up_commands(NET) if c[:3] == ["ip", "netns", "add"]}
    removed = {c[3] for c in netns.down_commands(NET)}
    assert made <= removed  # (the inner veths go with their pairs)


def test_leftovers_are_the_lab_names_of_dead_runs_only() -> None:
    links = ["lo", "eth0", "labn12b", "labn12h0", "labn99b", "labn99h3", "lab12b", "labnet0"]
    namespaces = ["labn12-0", "labn12-1", "labn99-0", "other", "labn12-x"]
    alive = {99}.__contains__
    assert netns.leftovers(links, namespaces, alive) == {
        "links": ["labn12b", "labn12h0"],
        "namespaces": ["labn12-0", "labn12-1"],
    }
    assert netns.ours(links + namespaces, 99) == ["labn99b", "labn99h3", "labn99-0"]


def test_the_bridge_takes_a_slash_24_nothing_of_the_host_uses() -> None:
    used = [ipaddress.IPv4Network(n) for n in ("10.213.0.0/24", "10.213.1.7/32", "0.0.0.0/32")]
    assert netns.free_subnet(used) == ipaddress.IPv4Network("10.213.2.0/24")
    assert netns.free_subnet(used, 255) == ipaddress.IPv4Network("10.213.255.0/24")
    assert netns.free_subnet(used, 256 + 1) == ipaddress.IPv4Network("10.213.2.0/24")
    with pytest.raises(netns.NetworkUnavailable, match="no free /24"):
        netns.free_subnet([ipaddress.IPv4Network("10.0.0.0/8")])


def test_a_failed_command_removes_what_was_made(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[list[str]] = []

    def fake(command: list[str]) -> subprocess.CompletedProcess[str]:
        ran.append(command)
        failed = command[0] == "tc"
        stderr = "Error: Specified qdisc kind is unknown." if failed else ""
        return subprocess.CompletedProcess(command, 2 if failed else 0, "", stderr)

    monkeypatch.setattr(netns, "_run", fake)
    monkeypatch.setattr(netns, "used_networks", list)
    with pytest.raises(netns.NetworkUnavailable) as raised:
        netns.create(2, 5.0, pid=4242)
    assert "netem" in str(raised.value) and "\n" not in str(raised.value)
    at = next(i for i, c in enumerate(ran) if c[0] == "tc")
    assert ran[at + 1 :] == [
        *netns.down_commands(netns.Network(4242, netns.SUBNETS[4242 % 256], 2, 5.0)),
        ["ip", "-j", "link", "show"],
        ["ip", "-j", "netns", "list"],
    ]
