"""A minimal org.freedesktop.Notifications service for tests, on a real D-Bus.

Run as ``python notification_service.py``; it owns the name on the session bus
named by DBUS_SESSION_BUS_ADDRESS, prints ``ready`` once it does, then prints
each Notify call's (summary, body, urgency) as a JSON line and replies with
an id, as a desktop's notification daemon would.
"""

from __future__ import annotations

import itertools
import json
import sys

from jeepney import HeaderFields, MessageType, new_error, new_method_return
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection

NAME = "org.freedesktop.Notifications"


def main() -> None:
    connection = open_dbus_connection(bus="SESSION")
    reply = connection.send_and_get_reply(message_bus.RequestName(NAME))
    if reply.body[0] != 1:  # DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER
        sys.exit(f"could not own {NAME}: {reply.body}")
    print("ready", flush=True)
    ids = itertools.count(1)
    while True:
        message = connection.receive()
        if message.header.message_type != MessageType.method_call:
            continue
        member = message.header.fields.get(HeaderFields.member)
        if member == "Notify":
            _app, _replaces, _icon, summary, body, _actions, hints, _timeout = message.body
            urgency = hints.get("urgency", ("y", 1))[1]
            print(json.dumps({"summary": summary, "body": body, "urgency": urgency}), flush=True)
            connection.send(new_method_return(message, "u", (next(ids),)))
        else:
            connection.send(new_error(message, "org.freedesktop.DBus.Error.UnknownMethod"))


if __name__ == "__main__":
    main()
