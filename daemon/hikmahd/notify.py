"""Desktop notifications through org.freedesktop.Notifications on the session D-Bus.

Best effort and never blocking: each notification is one short-lived D-Bus
connection with a timeout, run in its own task. Without a session bus or a
notification service the failure is logged once (until one succeeds again)
and the daemon carries on; reminders still reach event subscribers.
"""

from __future__ import annotations

import logging

import trio
from jeepney import DBusAddress, new_method_call
from jeepney.io.trio import open_dbus_router

log = logging.getLogger(__name__)

NOTIFICATIONS = DBusAddress(
    "/org/freedesktop/Notifications",
    bus_name="org.freedesktop.Notifications",
    interface="org.freedesktop.Notifications",
)
TIMEOUT_S = 5.0
URGENCY_NORMAL, URGENCY_CRITICAL = 1, 2


class DesktopNotifier:
    def __init__(self) -> None:
        self._failing = False

    async def notify(self, summary: str, body: str, *, critical: bool) -> bool:
        """Show one notification; False when it could not be delivered."""
        message = new_method_call(
            NOTIFICATIONS,
            "Notify",
            "susssasa{sv}i",
            (
                "Hikmah",
                0,
                "",
                summary,
                body,
                [],
                {"urgency": ("y", URGENCY_CRITICAL if critical else URGENCY_NORMAL)},
                -1,
            ),
        )
        try:
            with trio.fail_after(TIMEOUT_S):
                async with open_dbus_router(bus="SESSION") as router:
                    await router.send_and_get_reply(message)
        except Exception as exc:  # no bus, no service, a refusal: all the same to us
            if not self._failing:
                log.warning(
                    "desktop notifications are unavailable (%s); reminders still"
                    " reach event subscribers",
                    exc,
                )
            self._failing = True
            return False
        if self._failing:
            log.info("desktop notifications work again")
        self._failing = False
        return True
