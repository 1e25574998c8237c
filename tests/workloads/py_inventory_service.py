"""py_inventory_service: the inventory service py_nightly_report talks to, run
apart from it as a real one would be (another process, not its child). Each
request costs a fixed round trip (LATENCY_MS, as a database query behind the
service would), whatever it asks for:

    GET /items/<id>          one item
    GET /items?ids=1,2,3     several items in one answer

Listens on 127.0.0.1, an ephemeral port, and prints "PORT" once it serves.
Runs until killed.

usage: py_inventory_service.py [LATENCY_MS]"""
import http.server
import json
import sys
import time
import urllib.parse

LATENCY_S = (float(sys.argv[1]) if len(sys.argv) > 1 else 12.0) / 1000.0
CATEGORIES = ("garden", "kitchen", "tools", "toys", "books", "office")


def item(item_id):
    return {
        "id": item_id,
        "sku": "SKU-%06d" % (item_id % 900),  # some items share a SKU: duplicates
        "title": "Item %d of the %s range" % (item_id % 900, CATEGORIES[item_id % 6]),
        "category": CATEGORIES[item_id % 6],
        "price_cents": 199 + (item_id * 37) % 5000,
        "stock": (item_id * 13) % 71,
    }


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: one connection per client
    wbufsize = 65536               # the head and the body in one segment
    disable_nagle_algorithm = True

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path.startswith("/items/"):
            body = item(int(url.path[len("/items/"):]))
        elif url.path == "/items":
            ids = urllib.parse.parse_qs(url.query).get("ids", [""])[0]
            body = [item(int(i)) for i in ids.split(",") if i]
        else:
            self.send_error(404)
            return
        time.sleep(LATENCY_S)
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
