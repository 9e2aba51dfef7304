"""``iolab mail``: the SMTP server whose queue is FastQueue (``serve``) and
its three-way benchmark against the file-per-message queue and Postfix
(``bench``). See docs/mail.md."""

from __future__ import annotations

import argparse
import json
import math
import re
import signal
import sys
from typing import Any

from iolab.cli.errors import UserError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mail", help="SMTP server over FastQueue: serve, queue, bench")
    ms = p.add_subparsers(dest="mail_command", metavar="ACTION")
    ms.required = True

    s = ms.add_parser("serve", help="run the SMTP server until SIGTERM or Ctrl-C")
    s.add_argument("--listen", default="127.0.0.1:2525", help="address:port (default 127.0.0.1:2525)")
    s.add_argument("--queue", choices=["fastqueue", "filedir"], default="fastqueue",
                   help="fastqueue, or filedir: the paper's one file per message in 10 hashed directories")
    s.add_argument("--queue-dir", required=True, help="queue directory (created if missing)")
    to = s.add_mutually_exclusive_group(required=True)
    to.add_argument("--maildir", help="deliver into Maildir folders under this directory (one per local part)")
    to.add_argument("--relay", help="deliver over SMTP to this next hop, host:port")
    s.add_argument("--hostname", help="name in the greeting and Received: header (a domain name)")
    s.add_argument("--mynetworks", action="append", metavar="NET",
                   help="clients that may relay to any domain, as Postfix's mynetworks (repeat or comma-separate; "
                        "default 127.0.0.0/8 and ::1/128)")
    s.add_argument("--relay-domain", action="append", metavar="DOMAIN", dest="relay_domains",
                   help="a domain any client may send to through --relay, as Postfix's relay_domains (repeat)")
    s.add_argument("--local-domain", action="append", metavar="DOMAIN", dest="local_domains",
                   help="a domain delivered into --maildir besides the hostname and localhost, "
                        "as Postfix's mydestination (repeat)")
    s.add_argument("--open-relay", action="store_true",
                   help="start even when --mynetworks lets every address relay (an open relay)")
    s.add_argument("--max-connections-per-client", type=int,
                   help="sessions per client address; more get 421 (default 50; --mynetworks exempt)")
    s.add_argument("--max-size", type=int, help="largest message in bytes, announced as SIZE (default 10240000)")
    s.add_argument("--max-recipients", type=int, help="recipients per message (default 100)")
    s.add_argument("--max-line", type=int, help="longest message line in bytes with CRLF (default 1000)")
    s.add_argument("--max-connections", type=int, help="open sessions; more get 421 (default 10000)")
    s.add_argument("--idle-timeout", type=float, help="seconds to wait for a command (default 300)")
    s.add_argument("--data-timeout", type=float, help="seconds to wait for message text (default 180)")
    s.add_argument("--drain-timeout", type=float, help="seconds sessions get to finish after SIGTERM (default 30)")
    s.add_argument("--delivery-concurrency", type=int, help="parallel deliveries (default 32)")
    s.add_argument("--max-in-flight", type=int, help="messages taken and not yet acknowledged (default 256)")
    s.add_argument("--retry-base", type=float, help="first retry delay in seconds, doubled each time (default 60)")
    s.add_argument("--retry-max", type=float, help="longest retry delay in seconds (default 4000)")
    s.add_argument("--max-attempts", type=int, help="attempts before the dead-letter queue (default 10)")
    s.add_argument("--visibility-timeout", type=float,
                   help="seconds a taken message may go unrenewed before it is handed out again (default 120)")
    s.add_argument("--delivery-timeout", type=float,
                   help="seconds one delivery may take before it is cut and retried (default 600)")
    s.add_argument("--stats", help="write the final counters to this JSON file")
    s.set_defaults(func=cmd_serve)

    from iolab.mail.bench import register_bench

    register_bench(ms)

    from iolab.cli.mail_queue import register as register_queue

    register_queue(ms)


# The server library's names of its settings, as `iolab mail serve` names them:
# its errors name the library's fields, a user knows the options (issue 27).
OPTION_OF_FIELD = {
    "max_message_bytes": "--max-size", "max_recipients": "--max-recipients", "max_line_bytes": "--max-line",
    "max_connections_per_client": "--max-connections-per-client", "max_connections": "--max-connections",
    "command_timeout": "--idle-timeout", "data_timeout": "--data-timeout", "drain_timeout": "--drain-timeout",
    "delivery_concurrency": "--delivery-concurrency", "max_in_flight": "--max-in-flight",
    "retry_base": "--retry-base", "retry_max": "--retry-max", "max_attempts": "--max-attempts",
    "visibility_timeout": "--visibility-timeout", "delivery_timeout": "--delivery-timeout",
    "hostname": "--hostname", "mynetworks": "--mynetworks", "relay_domains": "--relay-domain",
    "local_domains": "--local-domain", "queue_dir": "--queue-dir",
}


def in_option_names(message: str) -> str:
    """A server error with the library's field names replaced by the options'."""
    return re.sub(r"\b(" + "|".join(sorted(OPTION_OF_FIELD, key=len, reverse=True)) + r")\b",
                  lambda m: OPTION_OF_FIELD[m.group(1)], message)


def server_from_args(args: argparse.Namespace) -> Any:
    try:
        return _server_from_args(args)
    except ValueError as e:
        raise UserError(in_option_names(str(e))) from None


def _server_from_args(args: argparse.Namespace) -> Any:
    from iolab._iolab import MailServer

    return MailServer(
        args.listen, args.queue, args.queue_dir, maildir=args.maildir, relay=args.relay,
        hostname=args.hostname, max_message_bytes=args.max_size, max_recipients=args.max_recipients,
        max_line_bytes=args.max_line, max_connections=args.max_connections,
        command_timeout=args.idle_timeout, data_timeout=args.data_timeout,
        drain_timeout=args.drain_timeout, delivery_concurrency=args.delivery_concurrency,
        max_in_flight=args.max_in_flight, retry_base=args.retry_base, retry_max=args.retry_max,
        max_attempts=args.max_attempts, visibility_timeout=args.visibility_timeout,
        delivery_timeout=args.delivery_timeout, mynetworks=_split(args.mynetworks),
        relay_domains=_split(args.relay_domains), local_domains=_split(args.local_domains),
        open_relay=args.open_relay, max_connections_per_client=args.max_connections_per_client, log=True,
    )


def _split(values: list[str] | None) -> list[str] | None:
    """Repeated and comma-separated option values as one list."""
    if values is None:
        return None
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def cmd_serve(args: argparse.Namespace) -> int:
    for name in ("max_size", "max_recipients", "max_line", "max_connections", "delivery_concurrency",
                 "max_in_flight", "max_attempts", "max_connections_per_client"):
        v = getattr(args, name)
        if v is not None and not 0 < v < 2**32:
            raise UserError(f"--{name.replace('_', '-')}: expected 1 to {2**32 - 1}, got {v}")
    for name in ("idle_timeout", "data_timeout", "drain_timeout", "retry_base", "retry_max",
                 "visibility_timeout", "delivery_timeout"):
        v = getattr(args, name)
        if v is not None and not (math.isfinite(v) and 0 < v <= 1e6):
            raise UserError(f"--{name.replace('_', '-')} {v:g}: expected seconds above 0 and at most 1e6")
    server = server_from_args(args)
    stopped_by: list[int] = []

    def on_signal(signum: int, _frame: Any) -> None:
        if stopped_by:
            return
        stopped_by.append(signum)
        print(f"iolab mail: {signal.Signals(signum).name}: draining (no new connections; "
              "open transactions may finish)", file=sys.stderr, flush=True)
        server.shutdown()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        # The server's own log (stderr) says who may relay; this line is
        # what scripts wait for.
        target = f"Maildir {args.maildir}" if args.maildir else f"SMTP relay {args.relay}"
        print(f"iolab mail: listening on {server.local_addr()}, queue {args.queue} in {args.queue_dir}, "
              f"delivering to {target}", flush=True)
        # Short waits with the GIL released let Python run the handlers.
        while not server.wait(0.2):
            pass
        stats = json.loads(server.join_json())
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    print(f"iolab mail: stopped: {stats['accepted']} accepted, {stats['delivered']} delivered, "
          f"{stats['retried']} retried, {stats['dead']} with bounced recipients ({stats['bounces']} DSNs sent), "
          f"{stats['queued']} left in the queue", file=sys.stderr)
    if args.stats:
        with open(args.stats, "w") as f:
            json.dump(stats, f, indent=1)
    return 130 if stopped_by == [signal.SIGINT] else 0
