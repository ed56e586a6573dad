"""systemd's notification protocol (sd_notify): READY, WATCHDOG, STOPPING, STATUS.

A datagram to $NOTIFY_SOCKET; without that variable every call is a no-op, so the
daemon runs the same way outside systemd.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping


class Notifier:
    """Sends sd_notify messages; rate-limits watchdog pings to half of WATCHDOG_USEC."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET", "")
        # A leading "@" names a socket in the abstract namespace.
        self._address = "\0" + address[1:] if address.startswith("@") else address
        usec = env.get("WATCHDOG_USEC", "")
        self.watchdog_interval = int(usec) / 2e6 if usec.isdigit() else 5.0
        self._last_ping = 0.0

    @property
    def enabled(self) -> bool:
        """True when running under a service manager that listens."""
        return bool(self._address)

    def notify(self, message: str) -> None:
        """Send one message; failures are ignored (the service manager may be gone)."""
        if not self._address:
            return
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.sendto(message.encode(), self._address)
        except OSError:
            pass

    def ready(self) -> None:
        """Start-up is complete."""
        self.notify("READY=1")

    def stopping(self) -> None:
        """Shutdown has begun."""
        self.notify("STOPPING=1")

    def status(self, text: str) -> None:
        """A one-line status shown by `systemctl status`."""
        self.notify(f"STATUS={text}")

    def watchdog(self) -> None:
        """Tell the watchdog the main loop is alive (at most every half interval)."""
        now = time.monotonic()
        if now - self._last_ping >= min(self.watchdog_interval, 5.0):
            self._last_ping = now
            self.notify("WATCHDOG=1")
