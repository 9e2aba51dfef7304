"""``iolab mail queue``: the postmaster's queue commands, as Postfix's
``mailq`` (``list``), ``postcat -q`` (``show``), ``postqueue -f``
(``flush``), ``postsuper -d`` (``delete``) and ``postsuper -r``
(``requeue``). While ``iolab mail serve`` runs on the queue, the command
asks it through its control socket (``QUEUE_DIR/control``); when no server
runs, it opens the queue itself. It says which on stderr. docs/mail.md,
"Queue commands"."""

from __future__ import annotations

import argparse
import base64
import json
import sys
import time
from typing import Any

from iolab.cli.errors import UserError


def register(ms: argparse._SubParsersAction) -> None:
    q = ms.add_parser("queue", help="list, show, flush, delete or requeue queued mail (running server or not)")
    qs = q.add_subparsers(dest="queue_command", metavar="ACTION")
    qs.required = True

    def sub(name: str, help: str) -> argparse.ArgumentParser:
        p = qs.add_parser(name, help=help)
        p.add_argument("--queue-dir", required=True, help="the server's --queue-dir")
        p.add_argument("--json", action="store_true", help="print the answer as JSON")
        p.set_defaults(func=cmd_queue, queue_command=name)
        return p

    sub("list", "every queued message, as mailq: id, size, arrival, sender, recipients and their state")
    p = sub("show", "one message's envelope and headers (as postcat -q)")
    p.add_argument("id", help="queue id (as in the log and the Received: header)")
    p.add_argument("--body", action="store_true", help="also the message text after the headers")
    p = sub("flush", "deferred messages due now (as postqueue -f); with ids, only those")
    p.add_argument("ids", nargs="*", metavar="ID")
    p = sub("delete", "remove messages from the queue and the dead letters (as postsuper -d)")
    p.add_argument("ids", nargs="+", metavar="ID")
    p = sub("requeue", "dead letters back to the queue for another try (as postsuper -r)")
    p.add_argument("ids", nargs="*", metavar="ID")
    p.add_argument("--all", action="store_true", help="every dead letter")


def request_of(args: argparse.Namespace) -> dict[str, Any]:
    op = args.queue_command
    if op == "list":
        return {"op": "list"}
    if op == "show":
        return {"op": "show", "id": args.id, "body": args.body}
    if op == "requeue":
        if bool(args.ids) == bool(args.all):
            raise UserError("requeue: give queue ids or --all")
        return {"op": "requeue", "ids": args.ids, "all": args.all}
    return {"op": op, "ids": args.ids}


def cmd_queue(args: argparse.Namespace) -> int:
    from iolab._iolab import mail_queue

    via, texts = mail_queue(args.queue_dir, json.dumps(request_of(args)))
    lines = [json.loads(t) for t in texts]
    if via == "server":
        print(f"iolab mail queue: asked the running server ({args.queue_dir}/control)", file=sys.stderr)
    else:
        print(f"iolab mail queue: no server is running on {args.queue_dir}: opened the queue directly",
              file=sys.stderr)
    last = lines[-1] if lines else {"error": "no answer"}
    if "error" in last:
        raise UserError(f"mail queue {args.queue_command}: {last['error']}")
    done = last["done"]
    if args.json:
        out: dict[str, Any] = {"via": via, **done}
        if args.queue_command == "list":
            out["messages"] = [line["entry"] for line in lines[:-1]]
        elif args.queue_command == "show":
            out["records"] = [line["shown"] for line in lines[:-1]]
        print(json.dumps(out, indent=1))
    elif args.queue_command == "list":
        print(format_list([line["entry"] for line in lines[:-1]]), end="")
    elif args.queue_command == "show":
        for line in lines[:-1]:
            sys.stdout.write(format_shown(line["shown"]))
            sys.stdout.flush()
            body = line["shown"].get("body_base64")
            if body is not None:
                sys.stdout.buffer.write(base64.b64decode(body).replace(b"\r\n", b"\n"))
                sys.stdout.buffer.flush()
                sys.stdout.write("*** END OF MESSAGE ***\n")
    else:
        words = {"flush": "due now", "delete": "deleted", "requeue": "requeued"}[args.queue_command]
        ids = " ".join(done["ids"])
        print(f"{done['count']} message(s) {words}" + (f": {ids}" if ids else ""))
    missing = done.get("missing") or []
    for qid in missing:
        what = {"requeue": "no such dead letter",
                "flush": "not in the queue (a dead letter goes back with requeue)"}.get(args.queue_command,
                                                                                    "not in the queue")
        print(f"iolab mail queue: {qid}: {what}", file=sys.stderr)
    return 1 if missing else 0


def _when(ms: int) -> str:
    return time.strftime("%a %b %d %H:%M:%S", time.localtime(ms / 1000)) if ms else "(unknown)"


def format_list(entries: list[dict[str, Any]]) -> str:
    """The listing in mailq's layout: the queue id (``*``: being delivered
    now, ``#``: a dead letter), size, arrival, sender; under it what
    mailq does not show (attempts, next retry), each recipient's reason in
    parentheses and the recipient with its state."""
    if not entries:
        return "Mail queue is empty\n"
    width = max(10, max(len(e["qid"]) for e in entries)) + 1
    pad = " " * (width + 31)
    out = [f"{'-Queue ID-':<{width}} --Size-- ----Arrival Time---- -Sender/Recipient-------\n"]
    total = 0
    for e in entries:
        mark = {"active": "*", "dead": "#"}.get(e["state"], "")
        sender = e["sender"] or "MAILER-DAEMON"
        total += e["size"]
        out.append(f"{e['qid'] + mark:<{width}} {e['size']:>8} {_when(e['arrival_ms']):<20} {sender}\n")
        if e.get("problem"):
            out.append(f"{'':<{width}} ({e['problem']})\n")
        notes = []
        if e["queue"] == "dead":
            notes.append("dead letter (requeue brings it back)")
        if e["attempts"]:
            notes.append(f"{e['attempts']} attempt(s)")
        if e.get("next_retry_ms"):
            notes.append(f"next retry {_when(e['next_retry_ms'])}")
        elif e["state"] == "ready":
            notes.append("due now")
        if notes:
            out.append(f"{'':<{width}} [{', '.join(notes)}]\n")
        for r in e["recipients"]:
            if r.get("reason"):
                out.append(f"{'':<{width}} ({r['reason']})\n")
            out.append(f"{pad}{r['address']} ({r['state']})\n")
        out.append("\n")
    out.append(f"-- {(total + 1023) // 1024} Kbytes in {len(entries)} Request{'s' if len(entries) != 1 else ''}.\n")
    return "".join(out)


def format_shown(s: dict[str, Any]) -> str:
    """A record as postcat prints one: envelope, then headers."""
    e = s["entry"]
    out = [f"*** ENVELOPE RECORDS {e['qid']} ({e['queue']} queue, record {e['record']}, {e['state']}) ***\n",
           f"message_size: {e['size']}\n",
           f"message_arrival_time: {_when(e['arrival_ms'])}\n",
           f"sender: {e['sender']}\n"]
    for r in e["recipients"]:
        why = f": {r['reason']}" if r.get("reason") else ""
        out.append(f"recipient: {r['address']} ({r['state']}{why})\n")
    out.append(f"attempts: {e['attempts']}\n")
    if e.get("next_retry_ms"):
        out.append(f"next_retry: {_when(e['next_retry_ms'])}\n")
    if e.get("problem"):
        out.append(f"problem: {e['problem']}\n")
    out.append("*** MESSAGE CONTENTS ***\n")
    out.append(s["headers"].replace("\r\n", "\n"))
    if s.get("body_base64") is None:
        out.append("*** HEADER EXTRACTED ***\n")
    return "".join(out)
