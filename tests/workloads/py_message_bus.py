"""py_message_bus: an in-process message bus whose handlers exchange small
JSON messages, the way services built around a broker are often tested
locally: every request is encoded, decoded, handled, and its reply encoded
and decoded again, a few microseconds each. The thread moves between
json.dumps and json.loads (and their frames, at the same places of
CPython's frame stack) many times per sampling period.

    python3 py_message_bus.py [CPU_SECONDS]

Runs requests for about CPU_SECONDS of CPU time (default 2) and prints how
many it made."""
import json
import sys
import time


class Bus:
    def __init__(self):
        self.handlers = {}

    def subscribe(self, topic, handler):
        self.handlers[topic] = handler

    def request(self, topic, payload):
        wire = json.dumps({"topic": topic, "payload": payload})
        message = json.loads(wire)
        reply = self.handlers[message["topic"]](message["payload"])
        return json.loads(json.dumps(reply))


def quote(payload):
    cents = sum(ord(c) for c in payload["sku"]) * payload["qty"]
    return {"sku": payload["sku"], "qty": payload["qty"], "cents": cents,
            "tiers": [[n, cents * n - n * n] for n in payload["tiers"]]}


def stock(payload):
    return {"sku": payload["sku"], "available": len(payload["sku"]) % 7}


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    bus = Bus()
    bus.subscribe("quote", quote)
    bus.subscribe("stock", stock)
    skus = ["SKU-%04d" % i for i in range(50)]
    requests = 0
    end = time.process_time() + seconds
    while time.process_time() < end:
        for sku in skus:
            bus.request("quote", {"sku": sku, "qty": 2, "tiers": list(range(1, 21))})
            bus.request("stock", {"sku": sku})
            requests += 2
    print(f"{requests} requests")


if __name__ == "__main__":
    main()
