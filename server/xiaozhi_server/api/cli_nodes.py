"""`xiaozhi-server node ...`: the nodes sharing a control store, through a
running server's API (docs/deploy.md).

    xiaozhi-server node list
    xiaozhi-server node drain [NODE_ID] [--wait S]   (default: the node at --server)
"""
import time
import urllib.parse


def add_parsers(sub, common):
    n = sub.add_parser("node", help="the nodes sharing this server's store").add_subparsers(dest="action",
                                                                                          required=True)
    p = n.add_parser("list", help="every node: id, URL, state, sessions, live")
    common(p)
    p = n.add_parser("drain", help="no new devices, replies finish, sessions closed, the node stops")
    p.add_argument("node_id", nargs="?", default="self", help="a node id from `node list` (default: the one at --server)")
    p.add_argument("--wait", type=float, default=30.0, help="seconds to wait until the node has left (0 = don't)")
    common(p)


def _line(n, this):
    return "%s %-28s %-9s %-5s %4d sessions  %s" % ("*" if n["node_id"] == this else " ", n["node_id"], n["state"],
                                                  "live" if n["live"] else "DEAD", n["sessions"], n["ws_url"] or "-")


def node_list(args, call, ok):
    answer = ok(*call(args, "GET", "/api/nodes"))
    if not answer["nodes"]:
        print("no nodes")
    for n in answer["nodes"]:
        print(_line(n, answer["this_node"]))
    return 0


def node_drain(args, call, ok):
    node = ok(*call(args, "POST", "/api/nodes/%s/drain" % urllib.parse.quote(args.node_id, safe="")))
    node_id = node["node_id"]
    print("node %s is draining: no new devices; its sessions close once their replies finish" % node_id)
    if not args.wait:
        return 0
    deadline = time.monotonic() + args.wait
    while time.monotonic() < deadline:
        time.sleep(0.5)
        try:
            status, answer = call(args, "GET", "/api/nodes")
        except Exception:
            status = 0     # the node asked was the one draining, and it has stopped
        if status != 200:
            print("node %s has stopped" % node_id)
            return 0
        if all(n["node_id"] != node_id or not n["live"] for n in answer["nodes"]):
            print("node %s has left" % node_id)
            return 0
    print("node %s still runs after %g s" % (node_id, args.wait))
    return 1
