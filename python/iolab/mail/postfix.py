"""A private Postfix 3.7 instance for the benchmark: its own configuration,
queue and data directories under a work directory, relaying everything
from loopback to one next hop (the same smtp-sink as the other systems),
with Postfix's default durability (each queue file is fsync'ed before the
250). The host's own mail configuration is neither read nor changed.
The settings are those of reference/MAIL.md measured on these machines."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time

from iolab.cli.errors import UserError


def _master_cf(port: int) -> str:
    """Debian's master.cf.dist with the SMTP listener moved to ``port`` and
    no chroot (a chroot needs copies of system files in the queue)."""
    with open("/usr/share/postfix/master.cf.dist") as f:
        lines = f.read().splitlines()
    out = []
    for line in lines:
        fields = line.split()
        if len(fields) >= 8 and not line[0].isspace() and not line.startswith("#"):
            if fields[0] == "smtp" and fields[1] == "inet":
                fields[0] = f"127.0.0.1:{port}"
            fields[4] = "n"
            line = "  ".join(fields[:8]) + ("  " + " ".join(fields[8:]) if len(fields) > 8 else "")
        out.append(line)
    return "\n".join(out) + "\n"


class PrivatePostfix:
    def __init__(self, workdir: str, port: int, relay_port: int, postfix: str, log: str = ""):
        self.base = os.path.abspath(workdir)
        self.conf = os.path.join(self.base, "etc")
        self.queue = os.path.join(self.base, "spool")
        self.data = os.path.join(self.base, "lib")
        # Off the measured disk when given elsewhere (syslog's place).
        self.log = os.path.abspath(log) if log else os.path.join(self.base, "postfix.log")
        self.port = port
        self.postfix = postfix
        if os.geteuid() != 0:
            raise UserError("Postfix as a system under test needs root (it switches to its postfix user)")
        for d in (self.conf, self.queue, self.data):
            os.makedirs(d, exist_ok=True)
        shutil.chown(self.data, "postfix")  # master.lock and caches live here
        main = {
            "compatibility_level": "3.6",
            "queue_directory": self.queue,
            "data_directory": self.data,
            "myhostname": "bench.localdomain",
            "mydestination": "",
            "inet_interfaces": "loopback-only",
            "inet_protocols": "ipv4",
            "mynetworks": "127.0.0.0/8",
            "relayhost": f"[127.0.0.1]:{relay_port}",
            "smtpd_relay_restrictions": "permit_mynetworks, reject",
            "default_process_limit": "200",
            "smtp_destination_concurrency_limit": "50",
            "default_destination_concurrency_limit": "50",
            "maillog_file": self.log,
            "maillog_file_prefixes": os.path.dirname(self.log),
            "alias_maps": "",
            "alias_database": "",
            "smtputf8_enable": "no",
        }
        with open(os.path.join(self.conf, "main.cf"), "w") as f:
            f.writelines(f"{k} = {v}\n" for k, v in main.items())
        with open(os.path.join(self.conf, "master.cf"), "w") as f:
            f.write(_master_cf(port))

    def _run(self, *args: str) -> str:
        r = subprocess.run([self.postfix, "-c", self.conf, *args], check=False, capture_output=True, text=True)
        if r.returncode != 0:
            # Postfix reports to syslog or its maillog_file, not to a pipe.
            why = r.stderr.strip() or r.stdout.strip() or self._log_tail()
            raise UserError(f"postfix -c {self.conf} {' '.join(args)} failed: {why}")
        return r.stdout

    def _log_tail(self) -> str:
        try:
            with open(self.log, errors="replace") as f:
                return " | ".join(f.read().splitlines()[-3:]) or "(no log)"
        except OSError:
            return f"(no log; run `postfix -c {self.conf} check` on a terminal to see why)"

    def start(self) -> None:
        self._run("check")  # creates the queue directories with their owners
        self._run("start")

    def master_pid(self) -> int:
        deadline = time.monotonic() + 10
        pidfile = os.path.join(self.queue, "pid", "master.pid")
        while time.monotonic() < deadline:
            try:
                with open(pidfile) as f:
                    return int(f.read().strip())
            except (OSError, ValueError):
                time.sleep(0.05)
        raise UserError(f"Postfix did not write {pidfile}")

    def sent(self) -> int:
        try:
            with open(self.log, errors="replace") as f:
                return len(re.findall(r"status=sent", f.read()))
        except OSError:
            return 0

    def stop(self) -> None:
        """Stops the instance and waits until its master has exited."""
        try:
            pid = self.master_pid()
        except UserError:
            pid = 0
        subprocess.run([self.postfix, "-c", self.conf, "stop"], check=False, capture_output=True)
        deadline = time.monotonic() + 20
        while pid and time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except OSError:
                break
            time.sleep(0.1)
